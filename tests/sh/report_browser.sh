#!/usr/bin/env bash
# The report in a real browser: headless Chromium opens the page of a sweep store with /verify,
# of a design grid (hardware axes, store = "best", pruning, prices in EUR), of a heterogeneous
# pool beside systems of one GPU type (jobs/pool-a100-h100-llama3-70b.cfg) and of a probe store,
# takes a screenshot of the page and of each section (kept as $CDSE_BUILD/report_*.png, to be
# looked at), and checks that every figure loaded (no broken image, ink inside each figure's
# box), that every cell of the page's tables equals the store, and (report_check.py data) that
# each figure's points equal the store, no two labels overlap and every figure has a legend.
# Skipped (77) only where Chromium cannot be installed.
set -euo pipefail
: "${CLUSTERDSE:?}" "${CDSE_SRC:?}" "${CDSE_BUILD:?}"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
py=/usr/bin/python3
"$py" -c 'import matplotlib, h5py, pandas' 2>/dev/null ||
    { echo "report_browser: SKIP: python3-matplotlib/h5py/pandas missing (scripts/setup.sh)"; exit 77; }
export PYTHONPATH="$CDSE_SRC/python" CLUSTERDSE
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
run() { echo "+ $*"; "$@"; }
shots="$CDSE_BUILD/report_shots"
rm -rf "$shots"
mkdir -p "$shots"

run mpirun -np 2 "$CLUSTERDSE" sweep "$CDSE_SRC/tests/jobs/report.cfg" -o "$dir/s.h5" --quiet >/dev/null
run mpirun -np 2 "$CLUSTERDSE" verify "$dir/s.h5" -n 1 --max-bytes 65536 --time-budget 5 --datasheet >/dev/null
run "$CLUSTERDSE" report "$dir/s.h5" -o "$dir/r_s"
run "$py" "$CDSE_SRC/tests/py/report_check.py" data "$dir/r_s/report.html" "$dir/s.h5"
run "$py" "$CDSE_SRC/tests/py/report_check.py" browser "$dir/r_s/report.html" \
    "$shots/sweep.png" "$dir/s.h5"

# The design grid of tests/sh/comet_grid.sh (1,944 designs at 1,024 and 4,096 GPUs, a few
# strategies), with its prices in EUR.
sed -e 's/gpus = \[ 512, 1024, 2048, 4096, 8192 \];/gpus = [ 1024, 4096 ];/' \
    -e 's/tp = \[ 1, 2, 4, 8, 16 \];/tp = [ 8 ];/' -e 's/pp = \[ 1, 2, 4, 8, 16, 32 \];/pp = [ 8, 16 ];/' \
    -e 's/vpp = \[ 1, 2, 3 \];/vpp = [ 1 ];/' -e 's/zero = \[ 0, 1, 2, 3 \];/zero = [ 1 ];/' \
    -e 's/sequence_parallel = \[ true, false \];/sequence_parallel = [ true ];/' \
    -e 's/cp = \[ 1, 2 \];/cp = [ 1 ];/' -e 's/^objective = {/objective = { currency = "EUR";/' \
    "$CDSE_SRC/jobs/comet-grid-gpt3-175b.cfg" >"$dir/grid.cfg"
grep -q 'tp = \[ 8 \];' "$dir/grid.cfg" && grep -q 'currency = "EUR"' "$dir/grid.cfg"
run mpirun -np 2 "$CLUSTERDSE" sweep "$dir/grid.cfg" -o "$dir/g.h5" --quiet >/dev/null
run "$CLUSTERDSE" report "$dir/g.h5" -o "$dir/r_g"
echo "+ CDSE_CURRENCY=EUR $py report_check.py data/browser ..."
CDSE_CURRENCY=EUR "$py" "$CDSE_SRC/tests/py/report_check.py" data "$dir/r_g/report.html" "$dir/g.h5"
CDSE_CURRENCY=EUR "$py" "$CDSE_SRC/tests/py/report_check.py" browser "$dir/r_g/report.html" \
    "$shots/grid.png" "$dir/g.h5"

# The README's decision (A100 + H100 or H100 alone): a heterogeneous pool beside systems of one
# GPU type, with the section that compares them (figure and table).
run mpirun -np 2 "$CLUSTERDSE" sweep "$CDSE_SRC/jobs/pool-a100-h100-llama3-70b.cfg" -o "$dir/pool.h5" --quiet >/dev/null
run "$CLUSTERDSE" report "$dir/pool.h5" -o "$dir/r_pool"
run "$py" "$CDSE_SRC/tests/py/report_check.py" data "$dir/r_pool/report.html" "$dir/pool.h5"
run "$py" "$CDSE_SRC/tests/py/report_check.py" browser "$dir/r_pool/report.html" \
    "$shots/pool.png" "$dir/pool.h5"
[ -s "$shots/pool_fig-pool_vs_homogeneous.png" ] && [ -s "$shots/pool_tab-pool_vs_homogeneous.png" ] ||
    { echo "report_browser: the pool section was not on the page"; exit 1; }

run mpirun -np 2 "$CLUSTERDSE" probe "$CDSE_SRC/calibration/plans/quick.cfg" -o "$dir/p.h5" >/dev/null
run "$CLUSTERDSE" report "$dir/p.h5" -o "$dir/r_p"
run "$py" "$CDSE_SRC/tests/py/report_check.py" data "$dir/r_p/report.html" "$dir/p.h5"
run "$py" "$CDSE_SRC/tests/py/report_check.py" browser "$dir/r_p/report.html" \
    "$shots/probe.png" "$dir/p.h5"
echo "report_browser: ok (screenshots in $shots)"
