#!/usr/bin/env bash
# Goodput (issue 29; docs/job-file.md, Failures and checkpoints) through the commands: the
# storage write bandwidth and the failure rates are hardware axes whose columns hold the values;
# more write bandwidth never lowers a synchronous run's goodput and raises its interval's
# optimum less than linearly (Daly: sqrt(stall)); a system without rates gives goodput 1 and
# time_to_train_effective_days equal to time_to_train_days in the CSV; the goodput metrics rank
# (top and eval --by); replace_time (spare nodes) is an axis beside the storage bandwidth, its
# effect e^(-replace_share x replace_time / MTTF) on goodput; an interval over the MTTF is
# flagged (checkpoint_flag 1); every shipped profile has a failure model (its MTTF at 1024 GPUs
# by hand); prune refuses the four goodput metrics with the key and the reason, exit 1.
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

# Faster storage against spare nodes in one grid: storage.write_bandwidth and
# reliability.replace_time are hardware axes (columns storage_write_gbs, replace_time_s). The
# replacement adds replace_share x replace_time = 0.69 x 3600 = 2484 s to every recovery R and
# nothing else (Daly eq. 20: tau, the stall and the planned share unchanged), so at each write
# bandwidth goodput(3600) / goodput(0) = e^(-2484 / M), M the MTTF.
sed -e 's/storage = { write_bandwidth = \[ 100.0, 400.0 \]; };/storage = { write_bandwidth = [ 250.0, 2000.0 ]; };/' \
    -e 's/reliability = { gpu_failures = \[ 0.0, 0.3029 \]; node_failures = \[ 0.0, 0.9856 \];/reliability = { replace_time = [ 0.0, 3600.0 ];/' \
    -e 's/link_failures = 0.0; planned_per_day = 0.0; };/};/' "$tmp/job.cfg" >"$tmp/spare.cfg"
run "$bin" eval "$tmp/spare.cfg" --csv
[ "$rc" -eq 0 ] || fail "spare nodes grid: exit $rc: $(cat "$tmp/err")"
awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
    $c["status"] == "ok" { g[$c["storage_write_gbs"] "/" $c["replace_time_s"]] = $c["goodput"]
                           m = $c["mttf_hours"] * 3600; n++ }
    END { if (n != 4) { print "rows " n; exit 1 }
          want = exp(-0.69 * 3600 / m)
          for (w = 250; w <= 2000; w += 1750) {
              r = g[w "/3600"] / g[w "/0"]
              if (r < want * (1 - 1e-5) || r > want * (1 + 1e-5)) { print w, r, want; exit 1 } }
          if (!(g["2000/0"] > g["250/0"] && g["250/0"] > g["250/3600"])) { print "order"; exit 1 } }' \
    "$tmp/out" >"$tmp/why" || fail "spare nodes grid: $(cat "$tmp/why")"

# An interval longer than the MTTF is reported, not silently used: gpu_failures 1e5 per 1000
# GPU-days on 1024 GPUs fail every 1000 x 86400 / (1024 x 1e5) = 0.84 s, less than an iteration
# (the interval's floor): checkpoint_flag 1 and mttf_hours 0.84375 / 3600 = 2.34375e-4.
sed -e 's/gpu_failures = \[ 0.0, 0.3029 \]; node_failures = \[ 0.0, 0.9856 \];/gpu_failures = 1e5; node_failures = 0.0;/' \
    -e 's/write_bandwidth = \[ 100.0, 400.0 \]/write_bandwidth = 100.0/' "$tmp/job.cfg" >"$tmp/over.cfg"
run "$bin" eval "$tmp/over.cfg" --csv
read -r flag mttf interval iter <<<"$(awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i }
    NR == 2 { print $c["checkpoint_flag"], $c["mttf_hours"], $c["checkpoint_interval_s"],
              $c["time_per_iteration_s"] }' "$tmp/out")"
[ "$rc" -eq 0 ] && [ "$flag" = 1 ] &&
    awk -v m="$mttf" -v i="$interval" -v t="$iter" \
        'BEGIN { exit !(m > 2.34375e-4 * 0.999 && m < 2.34375e-4 * 1.001 && i == t && i > m * 3600) }' ||
    fail "interval over the MTTF: exit $rc, flag '$flag', mttf_hours $mttf, interval $interval s, iteration $iter s"

# Every shipped profile has a failure model (a rate with its source in the profile): MTTF of a
# 1024-GPU job by hand, L = (1024 x (gpu + link) + nodes x node) / 1000 per day, hours = 24 / L:
#   Llama 3 rates (h100, grandteton, h200, mi300x; 128 nodes): 1024 x 0.35037 + 128 x 0.9856
#     = 484.9357 per 1000 days -> 49.4911 h; GB200/GB300 (256 trays x 0.4928: the same 126.16);
#   b200 (GPU rate 0.3608, Lablup 2026): 1024 x 0.40827 + 126.1568 = 544.2253 -> 44.0994 h;
#   RSC-1 (a100-40g, a100-80g, jean-zay; 128 nodes x 6.50 = 832) -> 28.8462 h.
for profile in "$src"/calibration/systems/*.cfg; do
    name=$(basename "$profile" .cfg)
    case $name in
    h100-sxm-dgx | grandteton-h100-96g | h200-sxm-dgx | mi300x-oam | gb200-nvl72 | gb300-nvl72) want=49.4911 ;;
    b200-dgx) want=44.0994 ;;
    a100-40g-dgx | a100-80g-dgx | jean-zay-a100) want=28.8462 ;;
    *) want=none ;;
    esac
    grep -q '^# Failures and checkpoints\|^# Failures (goodput' "$profile" ||
        fail "$name: no 'Failures and checkpoints' comment citing the rates' source"
    cat >"$tmp/p.cfg" <<CFG
models = ( "llama3-8b" ); systems = ( "$name" );
space = { gpus = [ 1024 ]; tp = [ 8 ]; global_batch = [ 1024 ]; recompute = [ "full" ]; zero = [ 1 ]; };
objective = { tokens = 1e12; memory_headroom = 0.0; };
CFG
    run "$bin" eval "$tmp/p.cfg" --csv
    mttf=$(awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i } NR == 2 { print $c["mttf_hours"] }' "$tmp/out")
    [ "$rc" -eq 0 ] && [ "$want" != none ] && awk -v m="$mttf" -v w="$want" 'BEGIN { exit !(m > w * 0.9999 && m < w * 1.0001) }' ||
        fail "$name: mttf_hours '$mttf' at 1024 GPUs, expected $want by hand (a profile without a failure model?)"
done

# prune refuses the goodput metrics: file:line, the key, the reason, exit 1.
for metric in time_to_train_effective interruptions_expected checkpoint_interval_s goodput; do
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
