#!/usr/bin/env bash
# Issue 30: the GPUs of each type in a pool as a sweep axis (systems[].pool[].gpus = [ ... ];
# docs/job-file.md, Heterogeneous pools), with objective.budget, and exact pruning on pools.
# Hand calculation for the job below (prices: a100-80g-dgx.cfg cost.gpu_price 25,000,
# h100-sxm-dgx.cfg 35,000; budget 1,000,000; model/cost.h cdse_pool_bill, cdse_within_budget):
#   systems, in order: h100-sxm-dgx, mix/16+8, mix/16+16 (the pool's H100 list [8, 16]);
#   h100-sxm-dgx at 32 GPUs: 32 x 35,000 = 1,120,000 > 1,000,000: over_budget; at 24: 840,000 ok
#   mix/16+8 at 24 GPUs (all of it): 16 x 25,000 + 8 x 35,000 = 680,000: ok; at 32: 32 x 16 / 24
#     A100 is not whole: pool_split
#   mix/16+16 at 32 GPUs: 16 x 25,000 + 16 x 35,000 = 960,000: ok; at 24: 12 of each, 720,000: ok
# Then the same job swept with objective.prune = true and false: the same /top (pools have no
# lower bound, model/bound.h, so none of their configurations is skipped). Bad input: a count
# twice, 0, an empty list.
set -euo pipefail
: "${CLUSTERDSE:?}" "${CDSE_SRC:?}"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
job() { # PRUNE [H100 counts]
    cat <<CFG
models = ( "gpt3-1.3b" );
systems = ( "h100-sxm-dgx",
            { name = "mix"; pool = ( { system = "a100-80g-dgx"; gpus = 16; },
                                     { system = "h100-sxm-dgx"; gpus = ${2:-[ 8, 16 ]}; } ); } );
space = { gpus = [ 24, 32 ]; tp = [ 1, 2 ]; pp = [ 1, 2 ]; microbatch = [ 1, 2 ];
          global_batch = 192; };
objective = { metric = "time_to_train"; tokens = 1e11; budget = 1000000.0; top = 3;
              group_by = [ "system", "gpus" ]; store = "best"; prune = $1; };
CFG
}
job false >"$dir/job.cfg"
echo "+ $CLUSTERDSE eval job.cfg --csv"
"$CLUSTERDSE" eval "$dir/job.cfg" --csv >"$dir/rows.csv"
/usr/bin/python3 - "$dir/rows.csv" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
assert len(rows) == 3 * 2 * 8, len(rows)
systems = []
for r in rows:
    if r["system"] not in systems:
        systems.append(r["system"])
assert systems == ["h100-sxm-dgx", "mix/16+8", "mix/16+16"], systems
# (system, gpus) -> the status every configuration that runs gets (hand: the header)
want = {("h100-sxm-dgx", "32"): "over_budget", ("h100-sxm-dgx", "24"): "ok",
        ("mix/16+8", "24"): "ok", ("mix/16+8", "32"): "pool_split",
        ("mix/16+16", "32"): "ok", ("mix/16+16", "24"): "ok"}
for key, status in want.items():
    got = {r["status"] for r in rows if (r["system"], r["gpus"]) == key} - {"oom"}
    assert got == {status}, (key, got)
share = {r["pool_share_1"] for r in rows if r["system"] == "mix/16+16" and r["status"] == "ok"}
assert all(0.5 < float(s) < 1 for s in share), share  # the H100 half takes more than half
print("pool_counts: 3 systems from the count list, statuses and budget as computed by hand")
PY
echo "+ $CLUSTERDSE sweep job.cfg (prune false, true); top of both"
job true >"$dir/pruned.cfg"
"$CLUSTERDSE" sweep "$dir/job.cfg" -o "$dir/full.h5" --quiet >/dev/null
"$CLUSTERDSE" sweep "$dir/pruned.cfg" -o "$dir/pruned.h5" --quiet >/dev/null
"$CLUSTERDSE" top "$dir/full.h5" --csv >"$dir/full.top" 2>/dev/null
"$CLUSTERDSE" top "$dir/pruned.h5" --csv >"$dir/pruned.top" 2>"$dir/pruned.err"; grep -q "skipped by their bound" "$dir/pruned.err" || { echo "pool_counts: nothing pruned"; exit 1; }
[ "$(wc -l <"$dir/full.top")" -gt 5 ] || { echo "pool_counts: too few top rows"; exit 1; }
grep -q 'mix/16+16' "$dir/full.top" || { echo "pool_counts: no pool in /top"; exit 1; }
diff "$dir/full.top" "$dir/pruned.top" || { echo "pool_counts: pruning changed /top"; exit 1; }
# /pareto_cost of a job of pools only: the pools are priced through their types (it was empty,
# "no system has a price", while pools were billed 0).
grep -v '"h100-sxm-dgx",$' "$dir/job.cfg" | sed 's/^            { name = "mix"/systems = ( { name = "mix"/' >"$dir/pools.cfg"
grep -q '^systems = ( { name = "mix"' "$dir/pools.cfg" || { echo "pool_counts: pools.cfg"; exit 1; }
echo "+ $CLUSTERDSE sweep pools.cfg; top --from pareto_cost"
"$CLUSTERDSE" sweep "$dir/pools.cfg" -o "$dir/pools.h5" --quiet >/dev/null
"$CLUSTERDSE" top "$dir/pools.h5" --from pareto_cost --csv >"$dir/front.csv" 2>"$dir/front.err"
[ "$(wc -l <"$dir/front.csv")" -ge 2 ] && ! grep -q 'no system has a price' "$dir/front.err" ||
    { echo "pool_counts: empty /pareto_cost:"; cat "$dir/front.err"; exit 1; }
# compare names a pool's bill by its types (hand: the best of mix/16+16 is on 32 GPUs, the faster
# size, 16 of each type, at a100-80g-dgx.cfg's 25,000 and h100-sxm-dgx.cfg's 35,000) and shows
# the partition's rows.
echo "+ $CLUSTERDSE compare pools.h5"
"$CLUSTERDSE" compare "$dir/pools.h5" >"$dir/compare.txt" 2>&1 ||
    { echo "pool_counts: compare failed:"; cat "$dir/compare.txt"; exit 1; }
grep -q "^# cost_to_train of mix/16+16: the sum of its types' bills: 16 a100-80g-dgx bought at 25000 USD per GPU.* + 16 h100-sxm-dgx bought at 35000 USD per GPU" "$dir/compare.txt" &&
    grep -q '^  pool_microbatches_1 ' "$dir/compare.txt" ||
    { echo "pool_counts: compare lacks the pool's bill or partition:"; cat "$dir/compare.txt"; exit 1; }
for bad in '[ 8, 8 ]:appears twice' '[ 0, 8 ]:allowed: an integer from 1' '[ ]:0 values'; do
    job false "${bad%%:*}" >"$dir/bad.cfg"
    echo "+ $CLUSTERDSE eval bad.cfg  # gpus = ${bad%%:*}"
    if "$CLUSTERDSE" eval "$dir/bad.cfg" >"$dir/out" 2>"$dir/err"; then
        echo "pool_counts: gpus = ${bad%%:*} accepted"; exit 1
    fi
    grep -q "bad.cfg:4: key 'systems\[1\].pool\[1\].gpus'.*${bad#*:}" "$dir/err" ||
        { echo "pool_counts: unexpected message:"; cat "$dir/err"; exit 1; }
done
echo "pool_counts: ok"
