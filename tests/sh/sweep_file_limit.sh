#!/usr/bin/env bash
# A sweep whose store hits the file-size limit (RLIMIT_FSIZE, `ulimit -f`): the sweep ignores
# SIGXFSZ, so the write fails with EFBIG; rank 0 reports the failed write, every rank exits 2, and
# `--resume` (without the limit) completes to a store identical to an uninterrupted one. Before,
# a rank under mpirun died of SIGXFSZ without a word (exit 153), and one rank alone (SIGXFSZ
# ignored by its shell) closed the store after the failure: HDF5's close flushed the unfinished
# commit, its extension of the file failed at the limit part-way through, the process died in
# HDF5's exit handler (SIGSEGV, exit 139) and --resume could not open the store ("cut short").
# Now the store is abandoned unclosed (cdse_store_abandon), as a kill leaves it.
set -euo pipefail
: "${CLUSTERDSE:?}" "${CDSE_SRC:?}"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cd "$dir"
job=$CDSE_SRC/jobs/quickstart.cfg # a 125 MB store
limit_kib=20000                   # ulimit -f counts 1024-byte blocks: 20.5 MB

run() { echo "+ $*" >&2; "$@"; }
run mpirun -np 2 "$CLUSTERDSE" sweep "$job" -o ref.h5 --quiet >/dev/null

for launch in "" "mpirun -np 2"; do
    rm -f lim.h5
    echo "+ (ulimit -f $limit_kib; $launch clusterdse sweep quickstart -o lim.h5)" >&2
    rc=0
    (
        ulimit -f "$limit_kib"
        # shellcheck disable=SC2086 # $launch is a command prefix or nothing
        timeout 300 $launch "$CLUSTERDSE" sweep "$job" -o lim.h5 --quiet >out.txt 2>err.txt
    ) || rc=$?
    cat err.txt >&2
    [ "$rc" -eq 2 ] || { echo "sweep_file_limit: ${launch:-1 rank}: exit $rc, want 2" >&2; exit 1; }
    grep -q "writing .* failed: File too large" err.txt ||
        { echo "sweep_file_limit: no message naming the failed write" >&2; exit 1; }
    ! grep -q "Segmentation\|signal" err.txt || { echo "sweep_file_limit: a crash" >&2; exit 1; }
    size=$(stat -c %s lim.h5)
    [ "$size" -le $((limit_kib * 1024)) ] || { echo "sweep_file_limit: $size bytes" >&2; exit 1; }
    run timeout 300 "$CLUSTERDSE" sweep "$job" -o lim.h5 --resume --quiet >/dev/null
    run /usr/bin/python3 "$CDSE_SRC/tests/py/compare_stores.py" ref.h5 lim.h5
done
echo "sweep_file_limit: ok"
