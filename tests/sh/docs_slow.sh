#!/usr/bin/env bash
# The outputs README.md and docs/*.md show from commands that take minutes (the design grids'
# sweeps, the benchmarks of the Speed table): the blocks marked <!-- slow: WHY -->, re-run and
# compared as tests/sh/docs_current.sh compares the others (numbers exactly, or within the
# block's stated tolerance for measured speeds; masked values: timings, dates, job ids). The
# Slurm logs of docs/slurm.md (scripts/doc_slurm.sh) need root to start the tests' Slurm: they
# are marked <!-- requires: ... --> and skipped, and listed as skipped, when not run as root.
# Labelled slow: scripts/test.sh --full runs it.
set -euo pipefail
: "${CDSE_SRC:?}" "${CDSE_BUILD:?}"
/usr/bin/python3 -c 'import pandas, h5py' 2>/dev/null ||
    { echo "docs_slow: SKIP: python3-pandas/h5py missing (scripts/setup.sh)"; exit 77; }
echo "+ bash $CDSE_SRC/scripts/regen_docs.sh --check --slow $CDSE_BUILD"
bash "$CDSE_SRC/scripts/regen_docs.sh" --check --slow "$CDSE_BUILD"
