#!/usr/bin/env bash
# The report in a real browser: headless Chromium opens the page of a sweep store with /verify
# and of a probe store, takes a screenshot (kept as $CDSE_BUILD/report_*.png), and checks that
# every figure loaded (no broken image, ink inside each figure's box) and that every cell of the
# page's tables equals the store. Skipped (77) only where Chromium cannot be installed.
set -euo pipefail
: "${CLUSTERDSE:?}" "${CDSE_SRC:?}" "${CDSE_BUILD:?}"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
py=/usr/bin/python3
"$py" -c 'import matplotlib, h5py, pandas' 2>/dev/null ||
    { echo "report_browser: SKIP: python3-matplotlib/h5py/pandas missing (scripts/setup.sh)"; exit 77; }
export PYTHONPATH="$CDSE_SRC/python"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
run() { echo "+ $*"; "$@"; }

run mpirun -np 2 "$CLUSTERDSE" sweep "$CDSE_SRC/tests/jobs/report.cfg" -o "$dir/s.h5" --quiet >/dev/null
run mpirun -np 2 "$CLUSTERDSE" verify "$dir/s.h5" -n 1 --max-bytes 65536 --time-budget 5 >/dev/null
run "$CLUSTERDSE" report "$dir/s.h5" -o "$dir/r_s"
run "$py" "$CDSE_SRC/tests/py/report_check.py" browser "$dir/r_s/report.html" \
    "$CDSE_BUILD/report_sweep.png" "$dir/s.h5"
run mpirun -np 2 "$CLUSTERDSE" probe "$CDSE_SRC/calibration/plans/quick.cfg" -o "$dir/p.h5" >/dev/null
run "$CLUSTERDSE" report "$dir/p.h5" -o "$dir/r_p"
run "$py" "$CDSE_SRC/tests/py/report_check.py" browser "$dir/r_p/report.html" \
    "$CDSE_BUILD/report_probe.png" "$dir/p.h5"
echo "report_browser: ok (screenshots $CDSE_BUILD/report_sweep.png, report_probe.png)"
