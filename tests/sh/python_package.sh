#!/usr/bin/env bash
# The Python package as a user installs it: `pip install ./python` (a copy of it, so the source
# tree stays clean) into a venv made with --system-site-packages (Debian's h5py, pandas,
# matplotlib), without network (--no-build-isolation --no-index); then, from outside the source
# tree and with that venv's interpreter: the installed version is the tool's, the reader's tests
# (tests/py/test_store.py) pass against the installed copy on a sweep store and a probe store,
# the installed clusterdse-report writes a report and clusterdse-study summarizes a store.
# Skipped (77) without python3-venv.
set -euo pipefail
: "${CLUSTERDSE:?}" "${CDSE_SRC:?}"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
py=/usr/bin/python3
"$py" -c 'import ensurepip, h5py, pandas, matplotlib' 2>/dev/null ||
    { echo "python_package: SKIP: python3-venv/h5py/pandas/matplotlib missing (scripts/setup.sh)"; exit 77; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
run() { echo "+ $*"; "$@"; }
unset PYTHONPATH PIP_FIND_LINKS

cp -r "$CDSE_SRC/python" "$dir/src"
rm -rf "$dir/src/build" "$dir/src"/*.egg-info
run "$py" -m venv --system-site-packages "$dir/venv"
run "$dir/venv/bin/pip" install --quiet --no-build-isolation --no-index "$dir/src"
cd "$dir"

# The package's version is the tool's (clusterdse --version: "clusterdse 0.1.0 (git ...)").
tool=$("$CLUSTERDSE" --version | awk '{print $2}')
installed=$("$dir/venv/bin/python" -c 'import clusterdse; print(clusterdse.__version__)')
echo "    clusterdse --version $tool, installed package $installed"
[ "$tool" = "$installed" ] || { echo "python_package: version $installed, the tool is $tool"; exit 1; }

sed 's/store = "feasible"/store = "all"/' "$CDSE_SRC/tests/jobs/report.cfg" >all.cfg
run mpirun -np 2 "$CLUSTERDSE" sweep all.cfg -o all.h5 --quiet >/dev/null
run mpirun -np 2 "$CLUSTERDSE" probe "$CDSE_SRC/calibration/plans/quick.cfg" -o p.h5 >/dev/null
echo "+ CDSE_STORE=all.h5 CDSE_PROBES=p.h5 CDSE_INSTALLED=$dir/venv $dir/venv/bin/python test_store.py -v"
CDSE_STORE=all.h5 CDSE_PROBES=p.h5 CDSE_INSTALLED="$dir/venv" \
    "$dir/venv/bin/python" "$CDSE_SRC/tests/py/test_store.py" -v 2>&1 | sed 's/^/    /'
test "${PIPESTATUS[0]}" = 0

run "$dir/venv/bin/clusterdse-report" all.h5 -o rep
grep -q '<figure id="fig-pareto"' rep/report.html ||
    { echo "python_package: clusterdse-report wrote no Pareto figure"; exit 1; }
# The installed study command: its list, an unknown study refused (exit 1), and a summary of a
# store read by the installed package (per cluster size, the spread over the systems).
run "$dir/venv/bin/clusterdse-study" --help >study-help.txt
grep -q 'comet-grid' study-help.txt ||
    { echo "python_package: clusterdse-study --help lists no comet-grid"; exit 1; }
if "$dir/venv/bin/clusterdse-study" no-such-study 2>err.txt; then
    echo "python_package: clusterdse-study accepted an unknown study"; exit 1
fi
grep -q "unknown study 'no-such-study'; allowed: comet-table, comet-grid, goodput" err.txt ||
    { echo "python_package: clusterdse-study's error: $(cat err.txt)"; exit 1; }
run "$dir/venv/bin/clusterdse-study" comet-table all.h5 >study.txt
for g in 16 32 64; do
    grep -q "^# $g GPUs: spread best/worst variant" study.txt ||
        { echo "python_package: clusterdse-study comet-table printed no line for $g GPUs"; exit 1; }
done
echo "python_package: ok"
