#!/usr/bin/env bash
# Sets up, builds and runs every test: once with the normal build (build/), once under
# AddressSanitizer + UndefinedBehaviorSanitizer with fault injection (build-asan/); then builds
# Release with GCC and with clang and runs their unit tests. Exit 0 only if all pass.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
bash scripts/setup.sh
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1

echo "== build (release) =="
bash scripts/build.sh "$root/build"
(cd build && ctest --output-on-failure -j 2 --timeout 900)

echo "== build (AddressSanitizer + UndefinedBehaviorSanitizer, fault injection) =="
bash scripts/build.sh "$root/build-asan" -DCDSE_SANITIZE=ON -DCDSE_FAULT_INJECTION=ON
# Open MPI's own allocations are not ours to free: leak checking stays on for the unit tests,
# and is off for the shell tests that start MPI (set in tests/CMakeLists.txt).
(cd build-asan && ctest --output-on-failure -j 2 --timeout 900 -LE slow)

# What packagers build: Release (-O3) with GCC and with clang, warnings as errors, and the unit
# tests of each (a minute or two each on two cores; the shell tests ran above).
for cc in gcc clang; do
    echo "== build (Release, $cc) =="
    CC=$cc bash scripts/build.sh "$root/build-release-$cc" -DCMAKE_BUILD_TYPE=Release
    (cd "build-release-$cc" && ctest --output-on-failure -j 2 -L unit)
done
