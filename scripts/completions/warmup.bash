# bash completion for warmup (parallel-warmup); `make install` installs it. Options before
# `--`, then the command's own completion.
_warmup() {
    local cur=${COMP_WORDS[COMP_CWORD]} i
    for ((i = 1; i < COMP_CWORD; i++)); do
        if [ "${COMP_WORDS[i]}" = -- ]; then
            _command_offset $((i + 1))
            return
        fi
    done
    case ${COMP_WORDS[COMP_CWORD - 1]} in
        --scratch | --costs) mapfile -t COMPREPLY < <(compgen -f -- "$cur"); return ;;
    esac
    mapfile -t COMPREPLY < <(compgen -W "--gpus --devices --backend --entry --scratch --keep --strategy --costs --cost-model --overhead --timeout --grace --max-log --cache-per-child --always --by-key --fresh --help --" -- "$cur")
}
complete -F _warmup warmup
