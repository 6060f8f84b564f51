#!/usr/bin/env bash
# The commands' option tables (src/cli/options.c, issue 28): one parser for every command, with
# one shape of message, and the --help option list printed from the same rows.
: "${CDSE_SRC:?}"
source "$CDSE_SRC/tests/sh/lib/expect.sh"
fail() { echo "cli_option_table: $*"; exit 1; }
job=$CDSE_SRC/tests/jobs/good_small.cfg

# An unknown option names every option the command takes, in its table's order, on one line.
expect 1 "^clusterdse top: unknown option '--bogus'; allowed: -n, --by, --where, --csv, --columns, --from, --all, --asc, --desc, -h, --help$" \
    "$CLUSTERDSE" top s.h5 --bogus
[ "$(wc -l <err.txt)" = 1 ] || fail "more than one line for an unknown option"
# Long names are taken whole: getopt_long's unique prefixes ("--cs" for --csv) are refused.
expect 1 "^clusterdse eval: unknown option '--cs'; allowed: " "$CLUSTERDSE" eval "$job" --cs
expect 1 "^clusterdse eval: unknown option '--help-k'; allowed: " "$CLUSTERDSE" eval --help-k
# A missing value names the value; a bad one says what is allowed.
expect 1 "^clusterdse verify: option '--where' needs a value \(EXPR\)$" "$CLUSTERDSE" verify s.h5 --where
expect 1 "^clusterdse fit: --ranks 1: allowed: a whole number from 2 to 1000000$" \
    "$CLUSTERDSE" fit --ranks 1 x.log -o p.cfg
expect 1 "^clusterdse compare: --gpus 12x: allowed: a positive integer$" "$CLUSTERDSE" compare s.h5 --gpus 12x
# --name=VALUE is --name VALUE; "--" ends the options.
"$CLUSTERDSE" eval "$job" -n 3 --by mfu --csv >a.csv
"$CLUSTERDSE" eval --by=mfu -n 3 --csv -- "$job" >b.csv
[ "$(wc -l <a.csv)" = 4 ] || fail "eval -n 3 --csv printed $(wc -l <a.csv) lines, expected 4"
cmp -s a.csv b.csv || fail "--by=mfu or -- changed eval's output"

# Every option an unknown-option message allows is listed by --help, and the other way round:
# both come from the command's table.
for cmd in eval sweep top export compare probe fit verify bench; do
    set +e
    "$CLUSTERDSE" "$cmd" --no-such-option >/dev/null 2>err.txt
    set -e
    allowed=$(sed -n 's/.*; allowed: //p' err.txt | tr -d ',' | tr ' ' '\n' | sort)
    [ -n "$allowed" ] || fail "$cmd: no allowed list: $(cat err.txt)"
    listed=$("$CLUSTERDSE" "$cmd" --help | awk '/^  -/ { sub(/^  /, ""); sub(/  .*/, ""); print }' |
        grep -oE -- '--?[a-zA-Z][a-zA-Z0-9-]*' | sort)
    [ "$allowed" = "$listed" ] ||
        fail "$cmd: parser allows '$(echo $allowed)', --help lists '$(echo $listed)'"
done

# sweep parses on every rank; only rank 0 speaks.
expect 1 "^clusterdse sweep: unknown option '--bogus'" mpirun -np 2 "$CLUSTERDSE" sweep "$job" --bogus
[ "$(grep -c 'unknown option' err.txt)" = 1 ] || fail "sweep -np 2: $(grep -c 'unknown option' err.txt) messages"
echo "cli_option_table: ok"
