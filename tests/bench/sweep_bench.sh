#!/usr/bin/env bash
# Sweep benchmark (a program that prints figures, not a timed test): the GPT-3 175B / 1024-GPU
# space of tests/bench/gpt3-175b-1024.cfg (11,059,200 configurations) swept
#   1. with store = "best" (evaluation only) on 1 and on 2 ranks: rates and their ratio;
#   2. with store = "feasible" on 2 ranks: the rate of the whole sweep and the write rate of the
#      store (rows appended per second of rank 0's time in the store; whole HDF5 chunks are
#      compressed by the ranks that evaluate them, so this is the rate the single writer can
#      absorb).
# Each figure is the best of CDSE_BENCH_REPEAT runs (default 3): on a shared machine the other
# processes only ever make a run slower.
# Usage: tests/bench/sweep_bench.sh [CLUSTERDSE] [JOB.cfg]   (CDSE_BENCH_NP=N for step 1's
# second run instead of 2)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
bin=${1:-${CLUSTERDSE:-$root/build/clusterdse}}
job=${2:-$root/tests/bench/gpt3-175b-1024.cfg}
np=${CDSE_BENCH_NP:-2}
repeat=${CDSE_BENCH_REPEAT:-3}
export OMPI_ALLOW_RUN_AS_ROOT=${OMPI_ALLOW_RUN_AS_ROOT:-1}
export OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=${OMPI_ALLOW_RUN_AS_ROOT_CONFIRM:-1}
export OMPI_MCA_rmaps_base_oversubscribe=1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

sed 's/store *= *"[a-z]*"/store = "best"/' "$job" >"$dir/best.cfg"
sed 's/store *= *"[a-z]*"/store = "feasible"/' "$job" >"$dir/feasible.cfg"

# Runs a sweep `repeat` times and prints "configs seconds rows store_seconds" of the fastest,
# from its summary lines.
sweep() {
    local np=$1 cfg=$2 i
    for i in $(seq "$repeat"); do
        echo "+ mpirun -np $np $bin sweep $cfg -o $dir/out.h5 --force" >&2
        mpirun -np "$np" "$bin" sweep "$cfg" -o "$dir/out.h5" --force >/dev/null 2>"$dir/err" ||
            { cat "$dir/err" >&2; exit 1; }
        awk '/configurations in/ { c = $2; s = $5 }
             /rows written to/ { r = $2; w = $(NF-6) }
             END { print c, s, r, w }' "$dir/err"
    done | sort -g -k2 | head -1
}

echo "# clusterdse sweep benchmark: $(basename "$job") on $(hostname), $(nproc) cores," \
    "best of $repeat runs, load average $(cut -d' ' -f1 /proc/loadavg)"
echo "# $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')"
read -r c1 s1 _ _ < <(sweep 1 "$dir/best.cfg")
read -r c2 s2 _ _ < <(sweep "$np" "$dir/best.cfg")
read -r c3 s3 r3 w3 < <(sweep "$np" "$dir/feasible.cfg")
awk -v c1="$c1" -v s1="$s1" -v c2="$c2" -v s2="$s2" -v np="$np" \
    -v c3="$c3" -v s3="$s3" -v r3="$r3" -v w3="$w3" 'BEGIN {
    r1 = c1 / s1; r2 = c2 / s2
    printf "%-44s %14s\n", "# figure", "value"
    printf "%-44s %14d\n", "configurations", c1
    printf "%-44s %14.0f\n", "rate, 1 rank, store=best (configs/s)", r1
    printf "%-44s %14.0f\n", sprintf("rate, %d ranks, store=best (configs/s)", np), r2
    printf "%-44s %14.2f\n", sprintf("ratio %d ranks / 1 rank (target >= 1.8)", np), r2 / r1
    printf "%-44s %14.0f\n", sprintf("rate, %d ranks, store=feasible (configs/s)", np), c3 / s3
    printf "%-44s %14d\n", "rows stored (feasible)", r3
    printf "%-44s %14.3f\n", "rank 0 time in the store (s)", w3
    printf "%-44s %14.0f\n", "store write rate (rows/s, target >= 1e6)", (w3 > 0 ? r3 / w3 : 0)
    printf "%-44s %14.0f\n", "rows stored per second of sweep", r3 / s3
}'
