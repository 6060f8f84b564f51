#!/usr/bin/env bash
# Issue 6: the COMET-style study of jobs/comet-gpt3-175b.cfg runs as a sweep and its summary
# (`clusterdse-study comet-table`, shown in the README) holds what the study is about: every variant
# at every size has a best configuration except the 40 GB parts on 64 GPUs, which only memory
# expansion makes trainable; twice the compute is the largest gain; the spread between best and
# worst variant is reported per size.
set -euo pipefail
: "${CLUSTERDSE:?} ${CDSE_SRC:?}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
run() { echo "+ $*" >&2; "$@"; }
run mpirun -np 2 "$CLUSTERDSE" sweep "$CDSE_SRC/jobs/comet-gpt3-175b.cfg" -o comet.h5 --quiet >/dev/null
PYTHONPATH="$CDSE_SRC/python" run /usr/bin/python3 -m clusterdse.study comet-table comet.h5 | tee table.txt
grep -Eq '^ +64 hbm-40g +no fit' table.txt
grep -q '^#   memory expansion: hbm-40g+cxl runs where hbm-40g cannot' table.txt
[ "$(grep -c '^# [0-9]* GPUs: spread best/worst variant' table.txt)" -eq 3 ]
# The fastest variant at every size is compute-2x (vs_base well below 1).
awk '$1 ~ /^[0-9]+$/ && $3 != "no" { if (!($1 in best) || $3 < best[$1]) { best[$1] = $3; who[$1] = $2 } }
     END { for (g in who) { print g, who[g]; if (who[g] != "compute-2x") bad = 1 } exit bad }' table.txt
echo "comet_study: ok"
