#!/usr/bin/env bash
# Issue 12, step 5, the MoE half: the COMET-style design grid of DeepSeek-V3
# (jobs/comet-grid-deepseek-v3.cfg), reduced to a few strategies so that it runs in seconds, swept
# with and without offload. Its summary (`clusterdse-study comet-grid`, as in the README) must keep what
# the README says of the full grid: every design trains at both sizes; memory (HBM bandwidth or
# capacity), not compute, is the dimension that buys the most; memory expansion helps most at
# 40 GiB of HBM and least at 141 GiB; the time-optimal point is the largest cluster and the cost-optimal the smallest, both
# of the same design (up to HBM capacity the larger cluster does not need); /pareto_cost holds
# one point per size, that design's.
set -euo pipefail
: "${CLUSTERDSE:?} ${CDSE_SRC:?}"
/usr/bin/python3 -c 'import pandas, h5py' 2>/dev/null ||
    { echo "comet_grid_moe: SKIP: python3-pandas/h5py missing (scripts/setup.sh)"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
run() { echo "+ $*" >&2; "$@"; }
sed -e 's/gpus = \[ 1024, 2048, 4096 \];/gpus = [ 1024, 4096 ];/' -e 's/tp = \[ 1, 2, 4, 8 \];/tp = [ 2 ];/' \
    -e 's/pp = \[ 4, 8, 16, 32 \];/pp = [ 4, 8 ];/' -e 's/vpp = \[ 1, 2 \];/vpp = [ 1 ];/' \
    -e 's/ep = \[ 8, 16, 32, 64, 128 \];/ep = [ 64, 128 ];/' -e 's/etp = \[ 1, 2 \];/etp = [ 1 ];/' \
    -e 's/microbatch = \[ 1, 2 \];/microbatch = [ 1 ];/' \
    -e 's/moe_overlap = \[ "none", "a2a" \];/moe_overlap = [ "a2a" ];/' \
    "$CDSE_SRC/jobs/comet-grid-deepseek-v3.cfg" >small.cfg
[ "$(diff "$CDSE_SRC/jobs/comet-grid-deepseek-v3.cfg" small.cfg | grep -c '^>')" -eq 8 ]
sed 's/offload = \[ "none", "optimizer", "activations", "optimizer+activations" \];/offload = [ "none" ];/' \
    small.cfg >plain.cfg
grep -q 'offload = \[ "none" \];' plain.cfg
run mpirun -np 2 "$CLUSTERDSE" sweep small.cfg -o grid.h5 --quiet >/dev/null
run mpirun -np 2 "$CLUSTERDSE" sweep plain.cfg -o plain.h5 --quiet >/dev/null
PYTHONPATH="$CDSE_SRC/python" run /usr/bin/python3 -m clusterdse.study comet-grid grid.h5 plain.h5 | tee table.txt
# 2 x 3 x 3 x 4 x 3 x 2 x 2 = 864 designs, each runnable at both sizes.
grep -q '^# grid.h5: deepseek-v3, 1728 runnable (size, design) points, 864 designs$' table.txt
[ "$(grep -cE '^ +(1024|4096) +864 +0 ' table.txt)" -eq 2 ]
# Memory (HBM capacity or bandwidth), not compute, buys the most in the median.
awk '/^  [a-z0-9_]+ +[0-9.]+ -> / { v = $5 + 0; if (v > best) { best = v; who = $1 } }
     END { print who; exit who != "hbm_gib" && who != "hbm_bandwidth_gbs" }' table.txt
# Offload is faster at more points with 40 GiB than with 79.6 GiB, and with 79.6 than with 141.
awk '$1 == 40 || $1 == 79.6 || $1 == 141 { n[$1] = $3 }
     END { print n[40], n[79.6], n[141]; exit !(n[40] > n[79.6] && n[79.6] >= n[141]) }' table.txt
# At 4,096 GPUs the best strategy fits 79.6 GiB as well as 141 GiB: designs that differ only in
# HBM capacity the run does not need tie, and the first (79.6) is printed.
hbm="'hbm_gib': (79.6|141.0)"
best="'peak_fp8_tflops': 3957.8, $hbm, 'hbm_bandwidth_gbs': 4800.0, 'net0_size': 64.0, 'net1_bandwidth_gbs': 100.0"
grep -qE "^  time-optimal: \{'gpus': 4096, $best" table.txt
grep -qF "  cost-optimal: {'gpus': 1024, 'peak_fp8_tflops': 3957.8, 'hbm_gib': 141.0, 'hbm_bandwidth_gbs': 4800.0, 'net0_size': 64.0, 'net1_bandwidth_gbs': 100.0" table.txt
grep -q '^# /pareto_cost: 2 points of time against cost to train, cheapest first$' table.txt
[ "$(grep -cE '^ +(1024|4096) GPUs .* peak_fp8_tflops=3957.8 hbm_gib=(79.6|141) hbm_bandwidth_gbs=4800 net0_size=64 net1_bandwidth_gbs=100 ' table.txt)" -eq 2 ]
echo "comet_grid_moe: ok"
