#!/usr/bin/env bash
# Bash completion (scripts/clusterdse-completion.bash) offers every command, and for each command
# every option its --help lists and every option its parser accepts (read from the source: the
# strcmp/option-table literals of src/cli/cmd_*.c, add_argument of python/clusterdse/report.py),
# so an option added to a parser or a --help without completion fails here; and the values of
# --by, --from and --columns, stores after the commands that read one (issue 26 item 8).
: "${CDSE_SRC:?}"
source "$CDSE_SRC/tests/sh/lib/expect.sh"
fail() { echo "completion: $*"; exit 1; }
source "$CDSE_SRC/scripts/clusterdse-completion.bash"
bindir=$(dirname "$CLUSTERDSE")
# offered WORD...: what completion offers for the last word, one a line, sorted.
offered() {
    COMP_WORDS=("$CLUSTERDSE" "$@")
    COMP_CWORD=$#
    COMPREPLY=()
    _clusterdse
    printf '%s\n' "${COMPREPLY[@]}" | sed '/^$/d' | sort -u
}
# parser_options CMD: the option literals the command's parser compares its arguments with.
parser_options() {
    local f
    case $1 in
        top) sed '/---- export/,$d' "$CDSE_SRC/src/cli/cmd_top.c" ;;
        export) sed -n '/---- export/,$p' "$CDSE_SRC/src/cli/cmd_top.c" ;;
        report) grep -o 'add_argument("[^)]*' "$CDSE_SRC/python/clusterdse/report.py" |
                    grep -v SUPPRESS | grep -v 'version-string' ;;
        *) f="$CDSE_SRC/src/cli/cmd_$1.c"; [ -f "$f" ] || fail "no parser source for $1"; cat "$f" ;;
    esac | grep -oE '(strcmp\([a-z]+(\[i\])?, |[{(] *|, )"--?[a-zA-Z][a-zA-Z0-9-]*"' |
        grep -oE '"--?[a-zA-Z][a-zA-Z0-9-]*"' | tr -d '"' | sort -u
}
commands=$("$CLUSTERDSE" --help | awk '/^  [a-z]+ / {print $1}')
[ "$(offered "" | tr '\n' ' ')" = "$(printf '%s\n' $commands --help --version | sort -u | tr '\n' ' ')" ] ||
    fail "commands offered: $(offered "" | tr '\n' ' ')"
n=0
for cmd in $commands; do
    got=$(offered "$cmd" -)
    # The options --help lists: the first words of its option lines, and [bracketed] usage.
    listed=$("$CLUSTERDSE" "$cmd" --help | awk '
        /^usage:/ { u = 1 } u && /^$/ { u = 0 }
        u { while (match($0, /\[-[^]]*\]/)) { print substr($0, RSTART, RLENGTH); $0 = substr($0, RSTART + RLENGTH) } next }
        /^ +-/ { sub(/^ +/, ""); sub(/  .*/, ""); print }' | grep -oE -- '--?[a-zA-Z][a-zA-Z0-9-]*' | sort -u)
    for o in $listed $(parser_options "$cmd"); do
        [ "$o" = "--" ] && continue
        grep -qx -- "$o" <<<"$got" || fail "$cmd: '$o' (in its --help or parser) is not offered; offered: $(echo $got)"
        n=$((n + 1))
    done
    # Nothing offered that the command does not take.
    for o in $got; do
        grep -qx -- "$o" <<<"$listed" || fail "$cmd: offers '$o', which its --help does not list"
    done
done
echo "completion: $n command options offered"
[ "$n" -ge 60 ] || fail "only $n options checked"
# Values.
[ "$(offered compare s.h5 --by "" | tr '\n' ' ')" = "cost_to_train energy_to_train gpu_hours mfu time_per_iteration time_to_train tokens_per_kwh tokens_per_s " ] ||
    fail "compare --by: $(offered compare s.h5 --by "" | tr '\n' ' ')"
offered top s.h5 --by mem_t | grep -qx mem_total_gib || fail "top --by offers no column"
[ "$(offered top s.h5 --from "" | tr '\n' ' ')" = "pareto pareto_cost results top " ] || fail "--from"
[ "$(offered eval j.cfg --columns tp,mb,placem | tr '\n' ' ')" = "tp,mb,placement " ] ||
    fail "--columns: $(offered eval j.cfg --columns tp,mb,placem)"
# Stores after the commands that read one, job files after the others.
touch s.h5 j.cfg
for cmd in top export compare report verify; do
    [ "$(offered "$cmd" "" | tr '\n' ' ')" = "s.h5 " ] || fail "$cmd offers '$(offered "$cmd" "")'"
done
[ "$(offered eval "" | tr '\n' ' ')" = "j.cfg " ] || fail "eval offers '$(offered eval "")'"
echo "completion: ok"
