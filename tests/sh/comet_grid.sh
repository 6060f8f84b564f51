#!/usr/bin/env bash
# Issue 12, step 5: the COMET-style design grid (jobs/comet-grid-gpt3-175b.cfg), reduced to a
# few strategies so that it runs in seconds, swept with and without offload; its summary
# (`clusterdse-study comet-grid`, as in the README) covers every design at both sizes, finds twice the
# compute the dimension that buys the most, and reports the time- and cost-optimal points.
set -euo pipefail
: "${CLUSTERDSE:?} ${CDSE_SRC:?}"
/usr/bin/python3 -c 'import pandas, h5py' 2>/dev/null ||
    { echo "comet_grid: SKIP: python3-pandas/h5py missing (scripts/setup.sh)"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
run() { echo "+ $*" >&2; "$@"; }
sed -e 's/gpus = \[ 512, 1024, 2048, 4096, 8192 \];/gpus = [ 1024, 4096 ];/' \
    -e 's/tp = \[ 1, 2, 4, 8, 16 \];/tp = [ 8 ];/' -e 's/pp = \[ 1, 2, 4, 8, 16, 32 \];/pp = [ 8, 16 ];/' \
    -e 's/vpp = \[ 1, 2, 3 \];/vpp = [ 1 ];/' -e 's/zero = \[ 0, 1, 2, 3 \];/zero = [ 1 ];/' \
    -e 's/sequence_parallel = \[ true, false \];/sequence_parallel = [ true ];/' \
    -e 's/cp = \[ 1, 2 \];/cp = [ 1 ];/' "$CDSE_SRC/jobs/comet-grid-gpt3-175b.cfg" >small.cfg
grep -q 'tp = \[ 8 \];' small.cfg && grep -q 'gpus = \[ 1024, 4096 \];' small.cfg
sed 's/offload = \[ "none", "optimizer", "activations", "optimizer+activations" \];/offload = [ "none" ];/' \
    small.cfg >plain.cfg
grep -q 'offload = \[ "none" \];' plain.cfg
run mpirun -np 2 "$CLUSTERDSE" sweep small.cfg -o grid.h5 --quiet >/dev/null
run mpirun -np 2 "$CLUSTERDSE" sweep plain.cfg -o plain.h5 --quiet >/dev/null
PYTHONPATH="$CDSE_SRC/python" run /usr/bin/python3 -m clusterdse.study comet-grid grid.h5 plain.h5 | tee table.txt
# 2 x 3 x 3 x 4 x 3 x 3 x 3 = 1944 designs, each runnable at both sizes with these strategies.
grep -q '^# grid.h5: gpt3-175b, 3888 runnable (size, design) points, 1944 designs$' table.txt
[ "$(grep -cE '^ +(1024|4096) +1944 +0 ' table.txt)" -eq 2 ]
# Twice the bf16 peak is the largest median speed-up of the seven dimensions.
awk '/^  [a-z0-9_]+ +[0-9.]+ -> / { v = $5 + 0; if (v > best) { best = v; who = $1 } }
     END { print who; exit who != "peak_bf16_tflops" }' table.txt
grep -q '^  time-optimal: {.gpus.: 4096' table.txt
grep -q '^  cost-optimal: {.gpus.: 1024' table.txt
echo "comet_grid: ok"
