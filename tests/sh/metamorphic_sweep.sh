#!/usr/bin/env bash
# The metamorphic relations that need the command line (docs/testing.md), on random jobs that
# build/tests/metamorphic --emit-job writes (zoo models and systems, every strategy axis,
# memory tiers, rented and fitted systems, hardware axes, pools, MoE, stacks):
#   eval_sweep   `clusterdse eval --csv` and a 2-rank sweep's store (store = "all", read back by
#                `clusterdse export`) hold the same rows: every column of every index, as text;
#   prune        a pruned and an exhaustive 2-rank sweep of the same job (store = "best", a
#                random metric among those pruning takes, cost metrics included) hold the same
#                /top and /pareto (tests/py/compare_stores.py --best).
# CDSE_META_JOBS jobs of each kind (default 4); CDSE_SEED sets the first seed (default fixed, so
# a failure repeats; the seed of each job is printed).
set -euo pipefail
: "${CLUSTERDSE:?}" "${CDSE_SRC:?}" "${CDSE_BUILD:?}"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1
py=/usr/bin/python3
meta=$CDSE_BUILD/tests/metamorphic
[ -x "$meta" ] || { echo "metamorphic_sweep: $meta is not built"; exit 1; }
jobs=${CDSE_META_JOBS:-4}
seed=${CDSE_SEED:-20261203}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

run() { echo "+ $*"; "$@"; }
fail() {
    echo "metamorphic_sweep: $1 (the job: $2)"
    cat "$2"
    exit 1
}

rows=0
for ((k = 0; k < jobs; k++)); do
    s=$((seed + k))
    cfg=$dir/sweep$s.cfg
    "$meta" --emit-job sweep --seed "$s" >"$cfg"
    echo "metamorphic_sweep: eval_sweep, seed $s"
    "$CLUSTERDSE" eval "$cfg" --csv >"$dir/eval.csv"
    run mpirun -np 2 "$CLUSTERDSE" sweep "$cfg" -o "$dir/sweep$s.h5" --quiet >/dev/null
    run "$CLUSTERDSE" export "$dir/sweep$s.h5" -o "$dir/export$s.csv"
    n=$("$py" - "$dir/eval.csv" "$dir/export$s.csv" <<'PY'
import csv
import sys

def rows(path):
    with open(path, newline="") as f:
        reader = csv.reader(f)
        header = next(reader)
        return header, {r[0]: r for r in reader}

eh, ev = rows(sys.argv[1])
xh, xv = rows(sys.argv[2])
if eh != xh:
    sys.exit(f"the headers differ: eval {eh} export {xh}")
# store = "all" keeps every row but the repeats of another system's hardware axis
missing = [i for i, r in ev.items() if i not in xv and r[eh.index("status")] != "other_system_axis"]
if missing:
    sys.exit(f"{len(missing)} rows of eval are not in the store, e.g. index {missing[0]}")
for i, r in xv.items():
    if i not in ev:
        sys.exit(f"index {i} is in the store, not in eval")
    for c, (a, b) in enumerate(zip(ev[i], r)):
        if a != b:
            sys.exit(f"index {i}, column {eh[c]}: eval {a}, store {b}")
print(len(xv))
PY
) || fail "eval and the sweep's store differ" "$cfg"
    echo "metamorphic_sweep: eval_sweep, seed $s: $n rows identical"
    rows=$((rows + n))
done

best=0
for ((k = 0; k < jobs; k++)); do
    s=$((seed + k))
    "$meta" --emit-job prune --seed "$s" >"$dir/prune$s.cfg"
    "$meta" --emit-job exhaustive --seed "$s" >"$dir/exhaustive$s.cfg"
    features=""
    grep -q 'pool = (' "$dir/prune$s.cfg" && features+=" pool"
    grep -q '= \[ [0-9.]*, [0-9.]* \]' "$dir/prune$s.cfg" && features+=" hardware-axes"
    grep -q 'moe_dispatcher' "$dir/prune$s.cfg" && features+=" MoE"
    echo "metamorphic_sweep: prune, seed $s: $(grep -o 'metric = "[a-z_]*"' "$dir/prune$s.cfg")$features"
    run mpirun -np 2 "$CLUSTERDSE" sweep "$dir/exhaustive$s.cfg" -o "$dir/exhaustive$s.h5" \
        --quiet >/dev/null
    run mpirun -np 2 "$CLUSTERDSE" sweep "$dir/prune$s.cfg" -o "$dir/prune$s.h5" --quiet \
        >/dev/null
    "$py" "$CDSE_SRC/tests/py/compare_stores.py" --best "$dir/exhaustive$s.h5" "$dir/prune$s.h5" ||
        fail "pruned and exhaustive sweeps differ" "$dir/prune$s.cfg"
    n=$("$py" - "$dir/prune$s.h5" <<'PY'
import sys
import h5py
with h5py.File(sys.argv[1], "r") as f:
    counts = {r["name"].decode(): int(r["count"]) for r in f["counts"][:]}
    print(len(f["top"]) + len(f["pareto"]), counts.get("pruned", 0), int(f.attrs["space_size"]))
PY
)
    read -r kept pruned size <<<"$n"
    echo "metamorphic_sweep: prune, seed $s: /top and /pareto identical ($kept rows; $pruned of" \
         "$size configurations pruned)"
    best=$((best + kept))
done
echo "metamorphic_sweep: ok: $rows rows of eval = sweep over $jobs jobs, $best rows of" \
     "/top + /pareto pruned = exhaustive over $jobs jobs"
