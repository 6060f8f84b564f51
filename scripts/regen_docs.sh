#!/usr/bin/env bash
# Rewrites every command output shown in README.md and docs/*.md from the current build (the
# blocks marked <!-- regen: COMMAND -->, see scripts/regen_docs.py); with --check, only compares
# and fails when a shown output differs (tests/sh/docs_current.sh).
#   scripts/regen_docs.sh [--check] [--slow] [BUILD_DIR]      (default BUILD_DIR: build)
# --slow: only the blocks marked <!-- slow: WHY --> (large sweeps and benchmarks; minutes), which
# are otherwise left alone (tests/sh/docs_slow.sh checks them in the full test pass).
# The commands run in a scratch directory holding links to build/, jobs/, calibration/, tests/,
# python/ and scripts/ of this tree, `clusterdse` on PATH (the build's binary), and
# results/quickstart.h5, swept there first on 2 ranks as the quick start does.
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
check=""
slow=""
while [ $# -gt 0 ]; do
    case "$1" in
        --check) check=--check ;;
        --slow) slow=--slow ;;
        *) break ;;
    esac
    shift
done
build=$(cd "${1:-$src/build}" && pwd)
[ -x "$build/clusterdse" ] || { echo "regen_docs: no $build/clusterdse: build first" >&2; exit 1; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export PYTHONPATH="$src/python" HDF5_USE_FILE_LOCKING=FALSE
if [ -n "$check" ]; then export REGEN_CHECK=1; fi
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
mkdir -p "$scratch/bin" "$scratch/results"
for d in jobs calibration tests python scripts slurm docs; do ln -s "$src/$d" "$scratch/$d"; done
ln -s "$build" "$scratch/build"
ln -s "$build/clusterdse" "$scratch/bin/clusterdse"
# show CMD...: each command as a reader types it ("$ CMD"), then what it prints (both streams).
cat >"$scratch/bin/show" <<'SH'
#!/usr/bin/env bash
for c in "$@"; do echo "\$ $c"; bash -c "$c" 2>&1; done
exit 0
SH
chmod +x "$scratch/bin/show"
export PATH="$scratch/bin:$PATH"
echo "regen_docs: sweeping the quick start into $scratch/results/quickstart.h5" >&2
(cd "$scratch" && mpirun -np 2 clusterdse sweep --quiet >/dev/null)
cd "$src"
/usr/bin/python3 "$src/scripts/regen_docs.py" $check $slow "$scratch" README.md docs/*.md
