#!/usr/bin/env bash
# clusterdse report on every kind of store: each figure's plotted data (the JSON block next to
# it) equals the store read with the Python package (sweep stores in the modes all and best, a
# probe store, a store with /verify); clusterdse.load reads every table of every mode; exit
# codes for bad input (1).
set -euo pipefail
: "${CLUSTERDSE:?}" "${CDSE_SRC:?}"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
py=/usr/bin/python3
"$py" -c 'import matplotlib, h5py, pandas' 2>/dev/null ||
    { echo "report_data: SKIP: python3-matplotlib/h5py/pandas missing (scripts/setup.sh)"; exit 77; }
export PYTHONPATH="$CDSE_SRC/python"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
run() { echo "+ $*"; "$@"; }

for mode in all best; do
    sed "s/store = \"feasible\"/store = \"$mode\"/" "$CDSE_SRC/tests/jobs/report.cfg" >"$dir/$mode.cfg"
    run mpirun -np 2 "$CLUSTERDSE" sweep "$dir/$mode.cfg" -o "$dir/$mode.h5" --quiet >/dev/null
    run "$CLUSTERDSE" report "$dir/$mode.h5" -o "$dir/r_$mode" --png
    run "$py" "$CDSE_SRC/tests/py/report_check.py" data "$dir/r_$mode/report.html" "$dir/$mode.h5"
    for fig in pareto pareto_cost best_vs_size heatmap time_breakdown memory failures goodput; do
        [ -s "$dir/r_$mode/$fig.png" ] || { echo "report_data: --png wrote no $fig.png"; exit 1; }
    done
done
# A heterogeneous pool beside systems of one GPU type (README, "A100 + H100 or H100 alone"):
# the section "Heterogeneous pool or one GPU type" (figure and table) is drawn from it; the
# stores above, without a pool, have none (report_check.py check_pool).
run mpirun -np 2 "$CLUSTERDSE" sweep "$CDSE_SRC/jobs/pool-a100-h100-llama3-70b.cfg" -o "$dir/pool.h5" --quiet >/dev/null
run "$CLUSTERDSE" report "$dir/pool.h5" -o "$dir/r_pool" --png
run "$py" "$CDSE_SRC/tests/py/report_check.py" data "$dir/r_pool/report.html" "$dir/pool.h5"
[ -s "$dir/r_pool/pool_vs_homogeneous.png" ] || { echo "report_data: no pool_vs_homogeneous.png"; exit 1; }
grep -q 'id="fig-pool_vs_homogeneous"' "$dir/r_pool/report.html" ||
    { echo "report_data: the pool store's report has no pool figure"; exit 1; }
if grep -q 'pool_vs_homogeneous' "$dir/r_all/report.html"; then
    echo "report_data: a pool section in the report of a store without a pool"; exit 1
fi
run mpirun -np 2 "$CLUSTERDSE" probe "$CDSE_SRC/calibration/plans/quick.cfg" -o "$dir/p.h5" >/dev/null
run "$CLUSTERDSE" report "$dir/p.h5" -o "$dir/r_p"
run "$py" "$CDSE_SRC/tests/py/report_check.py" data "$dir/r_p/report.html" "$dir/p.h5"
cp "$dir/all.h5" "$dir/v.h5"
run mpirun -np 2 "$CLUSTERDSE" verify "$dir/v.h5" -n 1 --max-bytes 65536 --time-budget 5 --datasheet >/dev/null
run "$CLUSTERDSE" report "$dir/v.h5" -o "$dir/r_v"
run "$py" "$CDSE_SRC/tests/py/report_check.py" data "$dir/r_v/report.html" "$dir/v.h5"

# load(): every table of each mode, committed rows only, names decoded; the counts are those the
# sweep printed into /counts (evaluated = the space, 3456 = 2 x 2 x 3 x 4 x 3 x 2 x 3 x 2 x 2).
"$py" - "$dir" <<'PY'
import sys, clusterdse
d = sys.argv[1]
all_ = clusterdse.load(f"{d}/all.h5")
counts = dict(zip(*clusterdse.load(f"{d}/all.h5", "counts").T.values))
assert counts["evaluated"] == 3456 == len(all_), (counts["evaluated"], len(all_))
assert (all_.status == "ok").sum() == counts["ok"] == counts["feasible"]
assert set(all_.status.cat.categories) >= {"ok", "oom", "sp_needs_tp"}
assert set(all_.system.astype(str)) == {"a100-80g-dgx", "h100-sxm-dgx"}
assert all_.sequence_parallel.dtype == bool and isinstance(all_.model.iloc[0], str)
try:
    clusterdse.load(f"{d}/best.h5")
    sys.exit("load of /results of a best store did not fail")
except clusterdse.StoreError as e:
    assert "store = \"best\"" in str(e), e
top = clusterdse.load(f"{d}/best.h5", "top")
assert len(top) == 12 * 4 and (top.status == "ok").all(), len(top)  # 2 models x 2 systems x 3 sizes, top 4
probes = clusterdse.load(f"{d}/p.h5", "probes")
assert isinstance(probes.collective.iloc[0], str) and len(probes) > 0
verify = clusterdse.load(f"{d}/v.h5", "verify")
assert isinstance(verify.collective.iloc[0], str) and len(verify) > 0
print(f"    load: {len(all_)} rows, {counts['ok']} ok; best: {len(top)} top rows; "
      f"{len(probes)} probes; {len(verify)} verify rows")
PY

# Bad input: 1, with a message.
expect() {
    local want=$1; shift
    set +e; "$@" 2>"$dir/err" >/dev/null; local rc=$?; set -e
    echo "+ $* -> $rc: $(head -1 "$dir/err")"
    [ "$rc" = "$want" ] || { echo "report_data: exit $rc, expected $want"; exit 1; }
}
expect 1 "$CLUSTERDSE" report "$dir/missing.h5" -o "$dir/x"
expect 1 "$CLUSTERDSE" report "$dir/all.cfg" -o "$dir/x"
expect 1 "$CLUSTERDSE" report "$dir/all.h5"
expect 1 "$CLUSTERDSE" report "$dir/all.h5" -o /proc/no/such/dir
expect 1 "$CLUSTERDSE" report "$dir/all.h5" -o "$dir/x" --system no-such-system
echo "report_data: ok"
