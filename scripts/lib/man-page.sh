#!/bin/sh
# man-page.sh SCRIPT: SCRIPT's man page (roff, section 1), made from its own --help and its
# summary line (the script's second line, "# NAME: what it does"), so that the page and the
# help never differ. `make install` runs it. The help's "usage:" line becomes the SYNOPSIS, each
# of its "heading:" lines (options:, environment:, exit status:, ...) a section.
set -eu
script=$1
name=${script##*/}
what=$(sed -n '2s/^# [^:]*: //p' "$script")
printf '.TH %s 1 "" "parallel-warmup" "User Commands"\n' "$(printf '%s' "$name" | tr '[:lower:]' '[:upper:]')"
printf '.SH NAME\n%s \\- %s\n' "$name" "$what"
"$script" --help | sed \
    -e 's/\\/\\e/g' \
    -e "s/^[.']/\\\\\\&&/" \
    -e 's/^usage: \(.*\)$/.SH SYNOPSIS\n.nf\n\1/' \
    -e 's/^\([a-z][a-z ]*\):$/.fi\n.SH \U\1\E\n.nf/' \
    -e 's/^\([a-z][a-z ]*\): \(.*\)$/.fi\n.SH \U\1\E\n.nf\n\2/' \
    -e '0,/^$/s/^$/.fi\n.SH DESCRIPTION\n.nf/'
printf '.fi\n'
