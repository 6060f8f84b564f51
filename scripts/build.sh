#!/usr/bin/env bash
# Configures and builds clusterdse in DIR (default build/), warnings as errors (CDSE_WERROR).
# Extra arguments go to cmake (and may override these).
# Usage: scripts/build.sh [DIR] [-DCDSE_SANITIZE=ON ...]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:-$root/build}
shift || true
log=$(mktemp)
trap 'rm -f "$log"' EXIT
if ! { cmake -S "$root" -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCDSE_WERROR=ON "$@" &&
       cmake --build "$dir" -j "$(nproc)"; } >"$log" 2>&1; then
    cat "$log" >&2
    echo "build: failed in $dir" >&2
    exit 1
fi
