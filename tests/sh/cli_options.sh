#!/usr/bin/env bash
# Options of bench, eval, top, export and sweep: a value that is not allowed, a missing value and
# options that exclude each other give one message naming what is allowed and exit 1, and so does
# a --where that compares a name column with a number, and sweep -o DIR. sweep --help and the
# exit code table of docs/sweep.md say what sweep does. A standard output that cannot be written
# (> /dev/full) is exit 2 with one message, for every command.
: "${CDSE_SRC:?}"
source "$CDSE_SRC/tests/sh/lib/expect.sh"
job=$CDSE_SRC/tests/jobs/good_small.cfg
echo "+ mpirun -np 1 $CLUSTERDSE sweep $CDSE_SRC/tests/jobs/report.cfg -o s.h5 --quiet"
mpirun -np 1 "$CLUSTERDSE" sweep "$CDSE_SRC/tests/jobs/report.cfg" -o s.h5 --quiet >/dev/null

# bench -n: a positive integer (strtoull took -3 as 2^64 - 3 and ran the whole space).
for n in -3 0 abc 12x ' 5' 99999999999999999999999; do
    expect 1 "^clusterdse bench: -n $n: allowed: a positive integer$" "$CLUSTERDSE" bench -n "$n"
done
expect 0 '' "$CLUSTERDSE" bench "$job" -n 5
grep -Eq '^  evaluated +5$' out.txt || { echo "cli_options: bench -n 5 did not evaluate 5"; exit 1; }

# A missing value is named as such (bench said "unknown argument '-n'").
expect 1 "^clusterdse bench: option '-n' needs a value" "$CLUSTERDSE" bench -n
expect 1 "^clusterdse eval: option '-n' needs a value" "$CLUSTERDSE" eval "$job" -n
expect 1 "^clusterdse eval: option '--by' needs a value" "$CLUSTERDSE" eval "$job" --by
expect 1 "^clusterdse top: option '-n' needs a value" "$CLUSTERDSE" top s.h5 -n
expect 1 "^clusterdse top: option '--where' needs a value" "$CLUSTERDSE" top s.h5 --where
expect 1 "^clusterdse export: option '-o' needs a value" "$CLUSTERDSE" export s.h5 -o
expect 1 "^clusterdse export: option '--from' needs a value" "$CLUSTERDSE" export s.h5 --from
for option in -o --output --ranks --chunk --flush; do
    expect 1 "^clusterdse sweep: option '$option' needs a value" "$CLUSTERDSE" sweep "$job" "$option"
done
expect 1 "^clusterdse sweep: --flush -1: allowed: a positive number of seconds$" \
    "$CLUSTERDSE" sweep "$job" --flush -1
expect 1 "^clusterdse sweep: --ranks 0: allowed: an integer from 1 to 1000000000$" \
    "$CLUSTERDSE" sweep "$job" --dry-run --ranks 0

# eval --all and --feasible are alternatives (the last one won).
expect 1 '^clusterdse eval: --all and --feasible exclude each other; allowed: one of them' \
    "$CLUSTERDSE" eval "$job" --all --feasible
expect 1 'exclude each other' "$CLUSTERDSE" eval "$job" --feasible --csv --all

# A name column compares with a string only: model == 0 compared the internal code (and matched
# every row of the store's first model).
expect 1 '^clusterdse top: --where position 1: model takes names: compare it with == or != and a string in quotes \(model == "NAME"\); values: llama3-8b, gpt3-13b$' \
    "$CLUSTERDSE" top s.h5 --where 'model == 0'
expect 1 'position 10: recompute takes names: .*; values: none, selective, full$' \
    "$CLUSTERDSE" export s.h5 --where 'tp==8 && recompute > 0'
expect 1 'position 2: system takes names' "$CLUSTERDSE" top s.h5 --where '!system'
expect 0 '' "$CLUSTERDSE" top s.h5 --where 'model == "llama3-8b" && sequence_parallel == 1'

# sweep -o DIR: a directory is bad input at once, with --force and --resume too ("DIR exists:
# add --resume" before; with --force, exit 2 from HDF5).
mkdir adir
for flag in "" --force --resume; do
    expect 1 '^clusterdse sweep: adir is a directory; allowed: a file name$' \
        mpirun -np 2 "$CLUSTERDSE" sweep "$job" -o adir $flag
done
[ -z "$(ls -A adir)" ] || { echo "cli_options: sweep wrote into adir"; exit 1; }

# Without -o nor `output`, the store is results/NAME.h5, as --help says.
grep -v '^output' "$job" >no_output.cfg
grep -q '^name = "test-small";' no_output.cfg
expect 0 '' mpirun -np 1 "$CLUSTERDSE" sweep no_output.cfg --quiet
[ -f results/test-small.h5 ] || { echo "cli_options: no results/test-small.h5"; exit 1; }
"$CLUSTERDSE" sweep --help | tr -s ' \n' ' ' | grep -q "(default: the job's \`output\`, results/NAME.h5)" ||
    { echo "cli_options: sweep --help does not say results/NAME.h5"; exit 1; }

# --resume of a damaged store (cut short) is exit 2, as docs/sweep.md's table says.
head -c 100000 s.h5 >cut.h5
expect 2 'cannot open cut.h5 as HDF5: the file is damaged' \
    mpirun -np 1 "$CLUSTERDSE" sweep "$CDSE_SRC/tests/jobs/report.cfg" -o cut.h5 --resume
grep -q '^| 2 | runtime failure: .*`--resume` of a damaged store' "$CDSE_SRC/docs/sweep.md" ||
    { echo "cli_options: docs/sweep.md's exit code table does not say 2 for a damaged store"; exit 1; }
if grep '^| 1 | bad input' "$CDSE_SRC/docs/sweep.md" | grep -q damaged; then
    echo "cli_options: docs/sweep.md's exit code table says 1 for a damaged store"
    exit 1
fi

# > /dev/full: every write, flush and close of the standard output is checked (main.c for every
# command; eval, top and export check themselves: one message, not two).
full() { # full CMD...: CMD > /dev/full exits 2 with one line naming the failure
    local name=clusterdse
    case $1 in -* | "") ;; *) name="clusterdse $1" ;; esac
    echo "+ $CLUSTERDSE $* >/dev/full"
    set +e
    "$CLUSTERDSE" "$@" >/dev/full 2>err.txt
    local rc=$?
    set -e
    sed 's/^/    /' err.txt | head -4
    [ "$rc" = 2 ] || { echo "cli_options: exit $rc, expected 2"; exit 1; }
    [ "$(cat err.txt)" = "$name: writing standard output: No space left on device" ] ||
        { echo "cli_options: not the one message expected"; exit 1; }
}
full eval "$job" --show-job
full eval "$job" --dry-run
full eval --help-keys
full eval --help-columns
full eval "$job" --csv
full eval "$job" -n 3
full bench "$job" -n 5
full top s.h5
full top s.h5 --csv
full export s.h5
full top --help
full sweep "$job" --dry-run
full --help
full --version

echo "cli_options: ok"
