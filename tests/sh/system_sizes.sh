#!/usr/bin/env bash
# Cluster sizes per system (issue 12, step 3): `gpus` or `nodes` in a system entry; every row of
# a system has that system's size; the effective job keeps them; `clusterdse compare` prints each
# system's best side by side with ratios that match the store's rows; bad input gives file:line,
# the key and what is allowed, exit 1.
set -u
bin=${CLUSTERDSE:?} src=${CDSE_SRC:?}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
run() { echo "+ $*"; "$@" >"$tmp/out" 2>"$tmp/err"; rc=$?; }
job=$src/tests/jobs/good_system_sizes.cfg

run "$bin" eval "$job" --csv --all
[ "$rc" -eq 0 ] || fail "eval: exit $rc: $(cat "$tmp/err")"
# 2 systems x 2 tp x 2 pp x 2 microbatch = 16 rows: h100 at 4096 GPUs, b200 at 256 x 8 = 2048.
sizes=$(tail -n +2 "$tmp/out" | cut -d, -f3,4 | sort | uniq -c | awk '{print $1, $2}' | tr '\n' ' ')
[ "$sizes" = "8 b200,2048 8 h100,4096 " ] || fail "sizes per system: $sizes"
cp "$tmp/out" "$tmp/rows.csv"

run "$bin" eval "$job" --show-job
cp "$tmp/out" "$tmp/effective.cfg"
grep -q 'gpus = \[ 2048 \];' "$tmp/effective.cfg" || fail "effective job: no b200 size"
run "$bin" eval "$tmp/effective.cfg" --csv --all
cmp -s "$tmp/out" "$tmp/rows.csv" || fail "the effective job evaluates differently"

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
run mpirun -np 2 "$bin" sweep "$job" -o "$tmp/s.h5" --quiet
[ "$rc" -eq 0 ] || fail "sweep: $(cat "$tmp/err")"
run "$bin" compare "$tmp/s.h5" --by time_per_iteration
[ "$rc" -eq 0 ] || fail "compare: exit $rc: $(cat "$tmp/err")"
cp "$tmp/out" "$tmp/compare.txt"
# The best time per system from the rows, and their ratio, as compare must print them.
best() { awk -F, -v s="$1" '$3 == s && $21 == "ok" {print $22}' "$tmp/rows.csv" | sort -g | head -1; }
h=$(best h100) b=$(best b200)
want=$(awk -v h="$h" -v b="$b" 'BEGIN { printf "%.6g (1x) %.6g (%.3gx)", h, b, b / h }')
got=$(awk '$1 == "time_per_iteration_s" { $1 = ""; sub(/^ /, ""); print }' "$tmp/compare.txt")
[ "$got" = "$want" ] || fail "compare time_per_iteration_s: '$got', expected '$want'"
grep -q '^  gpus  *4096 (1x)  *2048 (0.5x)$' "$tmp/compare.txt" || fail "compare gpus row: $(grep gpus "$tmp/compare.txt")"
run "$bin" compare "$tmp/s.h5" --by no_such_metric
[ "$rc" -eq 1 ] || fail "compare --by no_such_metric: exit $rc"

bad() { # NAME SED-EXPRESSION EXPECTED-FRAGMENT
    sed -e "$2" "$job" >"$tmp/$1.cfg"
    run "$bin" eval "$tmp/$1.cfg" --csv
    [ "$rc" -eq 1 ] || fail "$1: exit $rc, expected 1"
    grep -qE "^$tmp/$1.cfg:[0-9]+: key '[^']+': .*allowed: " "$tmp/err" || fail "$1: message shape: $(cat "$tmp/err")"
    grep -qF "$3" "$tmp/err" || fail "$1: expected '$3' in: $(cat "$tmp/err")"
}
bad onlyone 's/ nodes = 256;//' "in every system entry"
bad both 's/space = {/space = { gpus = [ 64 ];/' "not both"
bad counts 's/gpus = 4096;/gpus = [ 4096, 8192 ];/' "same number of values"
bad zero 's/gpus = 4096;/gpus = 0;/' "systems[0].gpus"
[ "$failures" -eq 0 ] || { echo "system_sizes: $failures failures"; exit 1; }
echo "system_sizes: ok"
