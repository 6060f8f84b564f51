#!/usr/bin/env bash
# Every command output shown in README.md and docs/*.md is what the current build prints
# (numbers included; timings masked), and every output block is either regenerated or marked as
# an example: scripts/regen_docs.sh --check. After changing an output, run
# scripts/regen_docs.sh to rewrite the blocks, and read the diff.
set -euo pipefail
: "${CDSE_SRC:?}" "${CDSE_BUILD:?}"
/usr/bin/python3 -c 'import pandas, h5py' 2>/dev/null ||
    { echo "docs_current: SKIP: python3-pandas/h5py missing (scripts/setup.sh)"; exit 77; }
echo "+ bash $CDSE_SRC/scripts/regen_docs.sh --check $CDSE_BUILD"
bash "$CDSE_SRC/scripts/regen_docs.sh" --check "$CDSE_BUILD"
