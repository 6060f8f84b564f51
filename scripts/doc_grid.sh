#!/usr/bin/env bash
# What the README shows of a COMET-style design grid (scripts/regen_docs.sh): sweeps
# jobs/comet-grid-NAME.cfg and the same grid with offload = "none" on 2 ranks into results/, then
# prints `clusterdse-study comet-grid`'s summary of the two. The figure goes to docs/img/FIGURE when the
# documentation is being rewritten, and to results/ when it is only checked (REGEN_CHECK=1).
#   scripts/doc_grid.sh NAME FIGURE.png      e.g. scripts/doc_grid.sh gpt3-175b comet-grid.png
set -euo pipefail
name=$1
figure=$2
job=jobs/comet-grid-$name.cfg
[ -f "$job" ] || { echo "doc_grid: no $job" >&2; exit 1; }
no_offload='s/offload = \[ "none", "optimizer", "activations", "optimizer+activations" \];/offload = [ "none" ];/'
mkdir -p results
sed "$no_offload" "$job" >"results/$name-no-offload.cfg"
mpirun -np 2 clusterdse sweep "$job" -o "results/comet-grid-$name.h5" --force --quiet >/dev/null
mpirun -np 2 clusterdse sweep "results/$name-no-offload.cfg" \
    -o "results/comet-grid-$name-no-offload.h5" --force --quiet >/dev/null
png=docs/img/$figure
[ "${REGEN_CHECK:-0}" = 1 ] && png=results/$figure
PYTHONPATH=python /usr/bin/python3 -m clusterdse.study comet-grid "results/comet-grid-$name.h5" \
    "results/comet-grid-$name-no-offload.h5" --png "$png"
