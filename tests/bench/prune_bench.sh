#!/usr/bin/env bash
# Benchmark of exact pruning (docs/sweep.md, Pruning; issue 12 point 4), not a CTest test: the
# exact best configuration per (GPU count, hardware design) of GPT-3 175B over a COMET-style
# grid of 3,888 cluster designs x 5 cluster sizes x 4,423,680 strategies = 107,495,424,000
# configurations (jobs/comet-grid-gpt3-175b.cfg widened: 7 hardware axes, every offload mask,
# fine-grained recomputation and TP overlap), swept on RANKS ranks (default 2) with
# objective.prune = true. Prints the wall time, the configurations per second it amounts to,
# the prune rate and each rank's peak resident memory (/usr/bin/time -v, "Maximum resident set
# size"). Targets (issue 12): under 10 minutes and 200 MB per rank on 2 ranks. Commits every
# 30 s (--flush 30): each commit rewrites /top, one row per group (24,300).
#   bash tests/bench/prune_bench.sh [BUILD_DIR] [RANKS]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$root/build}
ranks=${2:-2}
clusterdse=$build/clusterdse
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

cat >"$dir/prune-bench.cfg" <<CFG
# Hardware axes (7): bf16 peak 1x / 1.5x / 2x; HBM 40 / 80 / 141 GiB at 2.0 / 3.35 / 4.8 TB/s;
# NVLink domain of 8 / 16 / 32 / 64 GPUs; scale-out 12.5 to 200 GB/s per GPU; a node-level
# memory tier of 256 GiB to 2 TiB at 32 to 512 GB/s.
name = "prune-bench";
models = ( "$root/jobs/models/gpt3-175b.cfg" );
systems = ( { base = "h100-sxm-dgx"; name = "design";
  peak_tflops = { fp32 = 67.0; tf32 = 494.7; bf16 = [ 989.4, 1484.1, 1978.8 ]; fp16 = 989.4; fp8 = 1978.9; };
  hbm_gib = [ 40.0, 79.6, 141.0 ];
  hbm_bandwidth = [ 2000.0, 3350.0, 4800.0 ];
  network = ( { name = "nvlink"; size = [ 8, 16, 32, 64 ]; bandwidth = 450.0; latency = 3.4; efficiency = 0.82; },
              { name = "ib"; size = 0; bandwidth = [ 12.5, 25.0, 50.0, 100.0, 200.0 ]; latency = 9.6; efficiency = 0.90; } );
  memory_tier = { attach = "per_node"; capacity_gib = [ 256.0, 512.0, 2048.0 ]; bandwidth = [ 32.0, 128.0, 512.0 ];
                  latency = 1.0; shared_by = 8; }; } );
space = {
  gpus = [ 512, 1024, 2048, 4096, 8192 ];
  tp = [ 1, 2, 4, 8, 16 ];
  pp = [ 1, 2, 4, 8, 16, 32 ];
  vpp = [ 1, 2, 3 ];
  microbatch = [ 1, 2, 4, 8 ];
  global_batch = [ 1536, 3072 ];
  cp = [ 1, 2 ];
  recompute = [ "none", "selective", "full" ];
  sequence_parallel = [ true, false ];
  zero = [ 0, 1, 2, 3 ];
  precision = [ "bf16" ];
  offload = [ "none", "weights", "activations", "weights+activations", "optimizer",
              "weights+optimizer", "activations+optimizer", "weights+activations+optimizer" ];
  tp_comm_overlap = [ true, false ];
  recompute_modules = [ "none", "core_attn", "layernorm", "mlp", "core_attn+layernorm",
                        "core_attn+mlp", "layernorm+mlp", "core_attn+layernorm+mlp" ];
};
objective = { metric = "time_to_train"; top = 1; group_by = [ "gpus", "design" ]; store = "best";
              tokens = 3e11; electricity_price = 0.08; prune = true; };
CFG

# Each rank's /usr/bin/time report goes to its own file (time.RANK): on stderr, mpirun may end
# before a rank's report is forwarded.
cmd=(mpirun -np "$ranks" sh -c '/usr/bin/time -v -o "$0.$OMPI_COMM_WORLD_RANK" "$@"' "$dir/time"
     "$clusterdse" sweep "$dir/prune-bench.cfg" -o "$dir/prune-bench.h5" --flush 30)
echo "+ ${cmd[*]}"
start=$(date +%s.%N)
"${cmd[@]}" >"$dir/out.txt" 2>"$dir/err.txt" || { cat "$dir/err.txt"; exit 1; }
end=$(date +%s.%N)
grep "^sweep" "$dir/err.txt"
cat "$dir"/time.* >"$dir/time.txt"
/usr/bin/python3 - "$dir/prune-bench.h5" "$start" "$end" "$dir/time.txt" <<'PY'
import re
import sys

import h5py

path, start, end, err = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
with h5py.File(path, "r") as f:
    size = int(f.attrs["space_size"])
    counts = {r["name"].decode(): int(r["count"]) for r in f["counts"][:]}
    top = f["top"][:]
wall = end - start
rss = [int(m) / 1024 for m in re.findall(r"Maximum resident set size \(kbytes\): (\d+)",
                                         open(err).read())]
print(f"prune_bench: {size:,} configurations in {wall:.1f} s wall (mpirun included): "
      f"{size / wall:,.0f} configurations/s")
print(f"prune_bench: evaluated {counts['evaluated']:,}, pruned {counts['pruned']:,} "
      f"({100.0 * counts['pruned'] / size:.4f}%), feasible among the evaluated "
      f"{counts['feasible']:,}")
print("prune_bench: peak resident memory per process (MB): " +
      ", ".join(f"{r:.1f}" for r in rss))
print(f"prune_bench: /top holds the exact best of {len(top):,} (gpus, design) groups; "
      f"best time to train {top['time_to_train_days'].min():.2f} days")
PY
