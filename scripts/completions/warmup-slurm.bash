# bash completion for warmup-slurm (parallel-warmup); `make install` installs it. Options before
# `--`, then the command's own completion.
_warmup_slurm() {
    local cur=${COMP_WORDS[COMP_CWORD]} i
    for ((i = 1; i < COMP_CWORD; i++)); do
        if [ "${COMP_WORDS[i]}" = -- ]; then
            _command_offset $((i + 1))
            return
        fi
    done
    case ${COMP_WORDS[COMP_CWORD - 1]} in
        --scratch | --costs | --record-dir) mapfile -t COMPREPLY < <(compgen -f -- "$cur"); return ;;
    esac
    mapfile -t COMPREPLY < <(compgen -W "--scratch --shards --op --entry --strategy --costs --cost-model --overhead --partition --gpus-per-task --time --max-parallel --sbatch-arg --record-dir --backend --timeout --grace --max-log --cache-per-child --wait --rerun --finish --help --" -- "$cur")
}
complete -F _warmup_slurm warmup-slurm
