#!/usr/bin/env bash
# Issue 27: the shipped full plan runs unchanged on 2, 4, 8 and 16 ranks (oversubscribed on a
# small machine): its "node" groups become the ranks per node that
# MPI_Comm_split_type(MPI_COMM_TYPE_SHARED) reports (here one node, so the TP-like contiguous
# shape is every rank), and the DP-like shape with one rank on each of two nodes is skipped with
# a '#' line on one node. Only sizes and timing are cut for the test; the shapes are full.cfg's
# own lines. (Across nodes, where "node" is smaller than the world: tests/sh/netbed_calibrate.sh
# on 2 nodes x 2 ranks.)
set -euo pipefail
: "${CLUSTERDSE:?} ${CDSE_SRC:?}"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
sed -e 's/^sizes = .*/sizes = { from = 64; to = 256; };/' -e 's/^warmup = .*/warmup = 1;/' \
    -e 's/^iterations_min = .*/iterations_min = 2;/' -e 's/^iterations_max = .*/iterations_max = 4;/' \
    -e 's/^time_budget_ms = .*/time_budget_ms = 0.01;/' -e 's/^check = .*/check = true;/' \
    "$CDSE_SRC/calibration/plans/full.cfg" >"$tmp/full-quick.cfg"
diff <(grep -A7 '^shapes' "$CDSE_SRC/calibration/plans/full.cfg") <(grep -A7 '^shapes' "$tmp/full-quick.cfg")
for np in 2 4 8 16; do
    cmd="mpirun -np $np $CLUSTERDSE probe $tmp/full-quick.cfg -o $tmp/p$np.h5"
    echo "+ $cmd"
    $cmd >"$tmp/out$np.txt"
    grep '^#' "$tmp/out$np.txt" | head -5
    # contiguous group "node" = np ranks (one node); 5 collectives x 3 sizes, every check ok.
    [ "$(awk -v n="$np" '$2 == "contiguous" && $3 == n && $4 == 1 && $5 == 0 && $NF == "ok"' "$tmp/out$np.txt" | wc -l)" -eq 15 ]
    grep -q "^# shape strided skipped: group 2 x stride $np does not fit $np ranks ($np per node)" "$tmp/out$np.txt"
    # strided group 2 (default stride np/2) runs
    [ "$(awk -v s="$((np / 2))" '$2 == "strided" && $3 == 2 && $NF == "ok"' "$tmp/out$np.txt" | wc -l)" -eq 15 ]
    if grep "FAIL\|failed" "$tmp/out$np.txt"; then exit 1; fi
done
# The quick plan as shipped (groups of 2 and world / node shapes) on 8 and 16 ranks: 5 collectives
# x 11 sizes (64 B .. 64 KiB) x 4 shapes, every check ok; per_node skipped on one node.
for np in 8 16; do
    cmd="mpirun -np $np $CLUSTERDSE probe $CDSE_SRC/calibration/plans/quick.cfg -o $tmp/q$np.h5"
    echo "+ $cmd"
    $cmd >"$tmp/q$np.txt"
    [ "$(grep -c ' ok$' "$tmp/q$np.txt")" -eq 220 ]
    grep -q "^# shape per_node skipped: a group of 1 rank(s)" "$tmp/q$np.txt"
    if grep "FAIL\|failed" "$tmp/q$np.txt"; then exit 1; fi
done
echo "probe_plan_node: ok"
