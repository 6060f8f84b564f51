#!/usr/bin/env bash
# Goodput (issue 29; docs/job-file.md, Failures and checkpoints) through the commands: the
# storage write bandwidth and the failure rates are hardware axes whose columns hold the values;
# more write bandwidth never lowers a synchronous run's goodput and raises its interval's
# optimum less than linearly (Daly: sqrt(stall)); a system without rates gives goodput 1 and
# time_to_train_effective_days equal to time_to_train_days in the CSV; the goodput metrics rank
# (top and eval --by); prune refuses them with the key and the reason, exit 1.
set -u
bin=${CLUSTERDSE:?} src=${CDSE_SRC:?}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
run() { echo "+ $*"; "$@" >"$tmp/out" 2>"$tmp/err"; rc=$?; }

cat >"$tmp/job.cfg" <<CFG
models = ( "llama3-70b" );
systems = ( { base = "h100-sxm-dgx"; name = "h100";
              storage = { write_bandwidth = [ 100.0, 400.0 ]; };
              reliability = { gpu_failures = [ 0.0, 0.3029 ]; node_failures = [ 0.0, 0.9856 ];
                              link_failures = 0.0; planned_per_day = 0.0; }; } );
space = { gpus = [ 1024 ]; tp = [ 8 ]; pp = [ 4 ]; vpp = [ 1 ]; microbatch = [ 1 ];
          global_batch = [ 1024 ]; recompute = [ "selective" ]; zero = [ 1 ]; };
objective = { metric = "goodput"; tokens = 1.5e12; memory_headroom = 0.0; };  # 76 of 79.6 GiB reserved
CFG
run "$bin" eval "$tmp/job.cfg" --csv
[ "$rc" -eq 0 ] || fail "eval: exit $rc: $(cat "$tmp/err")"
cp "$tmp/out" "$tmp/all.csv"
col() { head -1 "$tmp/all.csv" | tr , '\n' | grep -nx "$1" | cut -d: -f1; }
w=$(col storage_write_gbs) g=$(col gpu_failures) n=$(col node_failures) gp=$(col goodput)
d=$(col time_to_train_days) e=$(col time_to_train_effective_days) i=$(col checkpoint_interval_s)
s=$(col status)
[ -n "$w" ] && [ -n "$gp" ] && [ -n "$e" ] || fail "goodput columns missing"
rows=$(awk -F, -v s="$s" 'NR > 1 && $s == "ok"' "$tmp/all.csv" | wc -l)
[ "$rows" -eq 8 ] || fail "$rows ok rows, expected 2 bandwidths x 2 x 2 rates = 8"
# No failures: goodput 1 and the failure-free time, whatever the storage.
awk -F, -v g="$g" -v n="$n" -v gp="$gp" -v d="$d" -v e="$e" -v s="$s" \
    'NR > 1 && $s == "ok" && $g == 0 && $n == 0 && ($gp != 1 || $d != $e) { bad++ }
     END { exit bad > 0 }' "$tmp/all.csv" || fail "a row without failure rates is not the failure-free time"
# Both rates: goodput below 1, higher with 400 GB/s than with 100 GB/s; the interval shorter.
read -r g100 i100 <<<"$(awk -F, -v w="$w" -v g="$g" -v n="$n" -v gp="$gp" -v i="$i" \
    'NR > 1 && $w == 100 && $g > 0 && $n > 0 { print $gp, $i }' "$tmp/all.csv")"
read -r g400 i400 <<<"$(awk -F, -v w="$w" -v g="$g" -v n="$n" -v gp="$gp" -v i="$i" \
    'NR > 1 && $w == 400 && $g > 0 && $n > 0 { print $gp, $i }' "$tmp/all.csv")"
awk -v a="$g100" -v b="$g400" 'BEGIN { exit !(a < b && b < 1) }' ||
    fail "goodput at 100 GB/s $g100, at 400 GB/s $g400: expected g100 < g400 < 1"
# Daly's interval grows about as sqrt(stall): 4x the stall, about twice the interval.
awk -v a="$i100" -v b="$i400" 'BEGIN { r = a / b; exit !(r > 1.8 && r < 2.1) }' ||
    fail "interval at 100 GB/s $i100 s over 400 GB/s $i400 s: expected about 2"

# The metric ranks: eval --by goodput -n 1 gives the 400 GB/s row with failures or a row without.
run "$bin" eval "$tmp/job.cfg" --csv --by goodput -n 1
[ "$rc" -eq 0 ] && [ "$(awk -F, -v gp="$gp" 'NR == 2 { print $gp }' "$tmp/out")" = 1 ] ||
    fail "eval --by goodput -n 1: the best row is not a goodput-1 row: $(cat "$tmp/out" "$tmp/err")"

# prune refuses the goodput metrics: file:line, the key, the reason, exit 1.
for metric in time_to_train_effective goodput; do
    sed -e "s/metric = \"goodput\";/metric = \"$metric\"; prune = true; store = \"best\";/" \
        "$tmp/job.cfg" >"$tmp/prune.cfg"
    run "$bin" eval "$tmp/prune.cfg"
    [ "$rc" -eq 1 ] && grep -q "prune.cfg:[0-9]*: .*objective.prune.*cannot be pruned exactly" "$tmp/err" ||
        fail "prune with $metric: exit $rc, $(cat "$tmp/err")"
done

if [ "$failures" -gt 0 ]; then
    echo "goodput: $failures failure(s)"
    exit 1
fi
echo "goodput: all checks passed"
