#!/usr/bin/env bash
# Sets up, builds, and runs the main job: a sweep of the default job compiled into the binary
# (jobs/quickstart.cfg) on all local cores; the sweep prints the ten best configurations. Ask
# the store more with: build/clusterdse top results/quickstart.h5 --help
# Usage: scripts/quickstart.sh [OUT.h5]   (default results/quickstart.h5, overwritten)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
bash scripts/setup.sh
bash scripts/build.sh "$root/build"
out=${1:-results/quickstart.h5}
mkdir -p "$(dirname "$out")"
ranks=$(nproc)
if [ "$(id -u)" -eq 0 ]; then
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
echo "+ mpirun -np $ranks build/clusterdse sweep -o $out --force" >&2
mpirun --oversubscribe -np "$ranks" build/clusterdse sweep -o "$out" --force
