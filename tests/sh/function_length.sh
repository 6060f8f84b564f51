#!/usr/bin/env bash
# Issue 28 item 4: no function in src/ over 80 lines (signature line to closing brace), as
# scripts/function_lengths.sh counts them in the clang-formatted sources.
set -euo pipefail
: "${CDSE_SRC:?}"
cmd="bash $CDSE_SRC/scripts/function_lengths.sh $CDSE_SRC 80"
echo "+ $cmd"
$cmd
