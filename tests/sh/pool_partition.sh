#!/usr/bin/env bash
# Issue 30: the partition a pool's planner chose, as columns (pool_layers_i, pool_microbatches_i,
# pool_tp_i; docs/eval.md) and in eval's table. Hand calculations (model/pool.h; gpt3-1.3b has 24
# layers, jobs/models/gpt3-1.3b.cfg; global_batch 256, microbatch 1 = 256 micro-batches):
#  1. twins: a pool of a100-80g-dgx and an identical copy under another name, 2 + 2 GPUs. Equal
#     speeds give equal shares and the homogeneous system's figures exactly:
#       gpus 2, pp 2: one 1-GPU stage per type (the dp split needs 2-GPU replicas: 1 of each type
#         cannot make one), pp split, 24 / 2 = 12 layers each, 256 micro-batches per pipeline;
#       gpus 2, pp 1: 2 replicas, one per type, 256 / 2 = 128 micro-batches each;
#       gpus 4, pp 1: 4 replicas, 2 per type, 256 / 4 = 64 each; tp 1 everywhere;
#     time_per_iteration_s equal to a100-80g-dgx's for the same configuration.
#  2. 8 A100 + 8 H100, tp 2, pp 8 (16 GPUs, 2 per stage: 4 stages of each type, the dp split
#     needs 16-GPU replicas): pp split, 4 x layers_0 + 4 x layers_1 = 24 and the H100 stages
#     (989 against 312 dense bf16 TFLOP/s, calibration/systems) take more layers than the A100's;
#     share_i = 4 x layers_i / 24; pool_tp in {1, 2, 4} (half, same, twice, tp_per_type).
#  3. memory headroom (objective.memory_headroom, default 0.05) on a pool: the twins again with
#     gpt3-6.7b, 2 + 2 GPUs, tp 1, pp 2, micro-batch 1: the same reserved memory as on
#     a100-80g-dgx alone, above 0.95 x 80 GiB = 76 GiB (a100-80g-dgx.cfg hbm_gib): over_headroom
#     on both (a pool was never checked before), while tp 2 is ok on both.
#  4. the table of eval prints layers0/layers1 and mbs0/mbs1 for a pool's rows; no pool column
#     for a job without a pool.
set -euo pipefail
: "${CLUSTERDSE:?}" "${CDSE_SRC:?}"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cat >"$dir/twin.cfg" <<'CFG'
models = ( "gpt3-1.3b" );
systems = ( "a100-80g-dgx",
            { name = "twins"; pool = ( { system = "a100-80g-dgx"; gpus = 2; },
              { system = { base = "a100-80g-dgx"; name = "a100-twin"; }; gpus = 2; } ); } );
space = { gpus = [ 2, 4 ]; tp = [ 1 ]; pp = [ 1, 2 ]; global_batch = 256; };
CFG
cat >"$dir/mix.cfg" <<'CFG'
models = ( "gpt3-1.3b" );
systems = ( { name = "mix"; tp_per_type = true;
              pool = ( { system = "a100-80g-dgx"; gpus = 8; }, { system = "h100-sxm-dgx"; gpus = 8; } ); } );
space = { gpus = [ 16 ]; tp = [ 2 ]; pp = [ 8 ]; global_batch = 256; microbatch = [ 1, 2 ]; };
CFG
cat >"$dir/head.cfg" <<'CFG'
models = ( "gpt3-6.7b" );
systems = ( "a100-80g-dgx",
            { name = "twins"; pool = ( { system = "a100-80g-dgx"; gpus = 2; },
              { system = { base = "a100-80g-dgx"; name = "a100-twin"; }; gpus = 2; } ); } );
space = { gpus = [ 4 ]; tp = [ 1, 2 ]; pp = [ 2 ]; microbatch = [ 1 ]; global_batch = 256; };
CFG
echo "+ $CLUSTERDSE eval head.cfg --csv"
"$CLUSTERDSE" eval "$dir/head.cfg" --csv >"$dir/head.csv"
/usr/bin/python3 - "$dir/head.csv" <<'PY'
import csv, sys
rows = {(r["system"], r["tp"]): r for r in csv.DictReader(open(sys.argv[1]))}
for system in ("a100-80g-dgx", "twins"):
    one, two = rows[(system, "1")], rows[(system, "2")]
    assert float(one["mem_reserved_gib"]) > 0.95 * 80.0, one["mem_reserved_gib"]
    assert one["status"] == "over_headroom", (system, one["status"])
    assert float(two["mem_reserved_gib"]) <= 0.95 * 80.0 and two["status"] == "ok", two
print("pool_partition: headroom checked on a pool as on its type (tp 1 over, tp 2 ok)")
PY
echo "+ $CLUSTERDSE eval twin.cfg --csv; eval mix.cfg --csv"
"$CLUSTERDSE" eval "$dir/twin.cfg" --csv >"$dir/twin.csv"
"$CLUSTERDSE" eval "$dir/mix.cfg" --csv >"$dir/mix.csv"
/usr/bin/python3 - "$dir/twin.csv" "$dir/mix.csv" <<'PY'
import csv, sys
twin = list(csv.DictReader(open(sys.argv[1])))
assert len(twin) == 8, len(twin)
cols = [f"pool_{c}_{i}" for c in ("layers", "microbatches", "tp") for i in range(4)]
alone = {(r["gpus"], r["pp"]): r for r in twin if r["system"] == "a100-80g-dgx"}
for r in alone.values():  # not a pool: every partition column 0
    assert r["pool_split"] == "none" and all(r[c] == "0" for c in cols), r
# (gpus, pp) -> split, layers per type, micro-batches per type (hand: header, case 1)
want = {("2", "2"): ("pp", 12, 256), ("2", "1"): ("dp", 0, 128), ("4", "1"): ("dp", 0, 64)}
for key, (split, layers, mbs) in want.items():
    r = next(r for r in twin if r["system"] == "twins" and (r["gpus"], r["pp"]) == key)
    got = (r["pool_split"], int(r["pool_layers_0"]), int(r["pool_layers_1"]),
           int(r["pool_microbatches_0"]), int(r["pool_microbatches_1"]),
           int(r["pool_tp_0"]), int(r["pool_tp_1"]), float(r["pool_share_0"]))
    assert got == (split, layers, layers, mbs, mbs, 1, 1, 0.5), (key, got)
    assert all(r[c] == "0" for c in cols if c[-1] in "23"), r
    assert r["time_per_iteration_s"] == alone[key]["time_per_iteration_s"], (key, r, alone[key])
    assert r["dp"] == alone[key]["dp"] and r["grad_accum"] == alone[key]["grad_accum"], key
mix = list(csv.DictReader(open(sys.argv[2])))
assert len(mix) == 2, len(mix)
for r in mix:
    l0, l1 = int(r["pool_layers_0"]), int(r["pool_layers_1"])
    assert r["status"] == "ok" and r["pool_split"] == "pp", r
    assert 4 * l0 + 4 * l1 == 24 and l1 > l0 >= 1, (l0, l1)
    assert abs(float(r["pool_share_0"]) - 4 * l0 / 24) < 1e-6, r["pool_share_0"]
    assert int(r["pool_tp_0"]) in (1, 2, 4) and int(r["pool_tp_1"]) in (1, 2, 4), r
    assert r["dp"] == "1", r["dp"]  # the strategy's: 16 / (2 x 8)
print("pool_partition: twins split evenly and equal the homogeneous rows; "
      f"A100+H100 pp split {[(r['pool_layers_0'], r['pool_layers_1']) for r in mix]} layers")
PY
echo "+ $CLUSTERDSE eval mix.cfg; eval alone.cfg (twin.cfg without the pool)"
"$CLUSTERDSE" eval "$dir/mix.cfg" >"$dir/mix.txt"
grep -q '^#index .* layers0 layers1 mbs0 mbs1' "$dir/mix.txt" ||
    { echo "pool_partition: eval's table lacks the partition:"; cat "$dir/mix.txt"; exit 1; }
grep -q 'pool_split=pp' "$dir/mix.txt" || { echo "pool_partition: no pool_split"; exit 1; }
sed 's/^systems = .*/systems = ( "a100-80g-dgx" );/; /name = "twins"/d; /a100-twin/d' \
    "$dir/twin.cfg" >"$dir/alone.cfg"
"$CLUSTERDSE" eval "$dir/alone.cfg" >"$dir/alone.txt"
if grep -q 'share0\|layers0\|mbs0\|pool_split' "$dir/alone.txt"; then
    echo "pool_partition: pool columns in a job without a pool:"; cat "$dir/alone.txt"; exit 1
fi
echo "pool_partition: ok"
