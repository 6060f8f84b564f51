#!/usr/bin/env bash
# The README's Speed table (a program that prints figures, not a timed test): each figure measured
# CDSE_BENCH_REPEAT times (default 3) and printed as minimum / median / maximum, so that the noise
# of the machine shows beside the figure.
#   1. `clusterdse bench`: the evaluator on one core, GPT-3 175B on 1,024 H100 (dense);
#   2. `clusterdse bench tests/bench/deepseek-v3-1024.cfg`: the same for DeepSeek-V3 (MoE);
#   3. `clusterdse export STORE`: every row of a store as CSV, in rows per second;
#   4. `clusterdse top STORE -n 1000000 --csv`: the million best rows, in seconds.
# STORE is results/quickstart.h5 (the quick start's store; made here on 2 ranks when missing).
# Usage: tests/bench/speed_table.sh [CLUSTERDSE] [STORE.h5]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
bin=${1:-${CLUSTERDSE:-$root/build/clusterdse}}
store=${2:-results/quickstart.h5}
repeat=${CDSE_BENCH_REPEAT:-3}
export OMPI_ALLOW_RUN_AS_ROOT=${OMPI_ALLOW_RUN_AS_ROOT:-1}
export OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=${OMPI_ALLOW_RUN_AS_ROOT_CONFIRM:-1}
if [ ! -e "$store" ]; then
    mkdir -p "$(dirname "$store")"
    mpirun -np 2 "$bin" sweep -o "$store" --quiet >/dev/null
fi
rows=$("$bin" export "$store" | tail -n +2 | wc -l)

# stats: min, median, max of the numbers on standard input
stats() { sort -g | awk '{ v[NR] = $1 } END { printf "%s %s %s\n", v[1], v[int((NR + 1) / 2)], v[NR] }'; }
# seconds CMD...: the wall time of one run, output discarded
seconds() {
    local t0 t1
    t0=$(date +%s.%N)
    "$@" >/dev/null
    t1=$(date +%s.%N)
    awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f\n", b - a }'
}
bench_rate() { "$bin" bench "$@" | sed -n 's/^configs_per_s_per_core: //p'; }

dense=$(for _ in $(seq "$repeat"); do bench_rate; done | stats)
moe=$(for _ in $(seq "$repeat"); do bench_rate "$root/tests/bench/deepseek-v3-1024.cfg"; done | stats)
export_rate=$(for _ in $(seq "$repeat"); do
    seconds "$bin" export "$store" | awk -v r="$rows" '{ printf "%.0f\n", r / $1 }'
done | stats)
top_s=$(for _ in $(seq "$repeat"); do seconds "$bin" top "$store" -n 1000000 --csv; done | stats)

echo "# $(nproc) cores, $repeat runs each: min / median / max; $rows rows in $store"
printf "%-44s %10s %10s %10s %10s\n" "# figure" min median max target
row() { printf "%-44s %10s %10s %10s %10s\n" "$1" $2 "$3"; }
row "bench, dense (M configs/s per core)" "$(awk '{ printf "%.2f %.2f %.2f", $1/1e6, $2/1e6, $3/1e6 }' <<<"$dense")" ">= 5"
row "bench, MoE (M configs/s per core)" "$(awk '{ printf "%.2f %.2f %.2f", $1/1e6, $2/1e6, $3/1e6 }' <<<"$moe")" ">= 2"
row "export (M rows/s)" "$(awk '{ printf "%.2f %.2f %.2f", $1/1e6, $2/1e6, $3/1e6 }' <<<"$export_rate")" ">= 1"
row "top -n 1000000 --csv (s)" "$(awk '{ printf "%.2f %.2f %.2f", $1, $2, $3 }' <<<"$top_s")" "< 5"
