#!/usr/bin/env bash
# What the documentation shows of a sweep (scripts/regen_docs.sh): its summary lines on stderr,
# without the progress lines, then the first N lines of the table it prints.
#   scripts/doc_sweep.sh N SWEEP-ARGUMENTS...   (runs mpirun -np 2 clusterdse sweep ARGUMENTS)
# The summary lines are taken by their exact shapes, not by dropping lines that look like
# progress: under load a progress line and a summary line can reach the pipe as one line.
set -euo pipefail
n=$1
shift
err=$(mktemp)
trap 'rm -f "$err"' EXIT
out=$(mpirun -np 2 clusterdse sweep "$@" 2>"$err")
grep -oE 'sweep: (job [^,]+, [0-9]+ configurations, [0-9]+ ranks?, store [^ ]+|[0-9]+ configurations in [0-9.]+ s on [0-9]+ ranks? \([0-9]+ configs/s\); [0-9]+ of [0-9]+ done, [0-9]+ feasible|[0-9]+ rows written to [^ ]+, [0-9.]+ s in the store \([0-9]+ rows/s\))' "$err" || true
printf '%s\n' "$out" | head -n "$n"
