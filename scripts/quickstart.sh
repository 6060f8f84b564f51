#!/usr/bin/env bash
# Sets up, builds, and runs the main job: a sweep of the default job compiled into the binary
# (jobs/quickstart.cfg) on all local cores, then prints the ten best configurations.
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
echo "+ build/clusterdse top $out -n 10" >&2
build/clusterdse top "$out" -n 10
