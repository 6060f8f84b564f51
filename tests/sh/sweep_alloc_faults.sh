#!/usr/bin/env bash
# Faults on rank 0 while sweeping: every rank stops together with exit 2 and a message, none
# hangs in MPI_Recv. The allocation failures are provoked with CDSE_FAULT=NAME, read only by a
# build with the CMake option CDSE_FAULT_INJECTION (the sanitizer build of scripts/test.sh);
# other builds run the --chunk checks and skip the rest.
#   master_loop  rank 0 cannot allocate its bookkeeping before handing out the first work
#   master_recv  rank 0 cannot allocate the buffer for the workers' results (allocated once, for
#                the largest result a chunk can make, before any work goes out: a result is
#                never left unreceived for want of memory)
#   share_alloc  a rank other than 0 cannot allocate its copy of what rank 0 read (the job's text;
#                @2: the probe section's plan, src/calibrate/calibrate.c): every rank stops with
#                exit 2 and one message, none calls MPI_Abort (src/sweep/share.c, issue 28)
#   store_swap_in@2, store_swap_back@1, store_progress@1  the first commit fails part-way (/top's
#                rename into place, /counts' old table's rename back, the /progress write; which
#                commit is first depends on timing, so later ones are not aimed at): every rank
#                stops with exit 2, and --resume completes to a store identical to an
#                uninterrupted run (tests/py/compare_stores.py; docs/store.md, Faults while
#                sweeping; test_store_commit.c test_failed_commit covers later commits)
set -euo pipefail
: "${CLUSTERDSE:?}" "${CDSE_SRC:?}" "${CDSE_BUILD:?}"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
job=$CDSE_SRC/tests/jobs/good_small.cfg

# expect CODE TEXT CMD...: CMD exits with CODE (within 120 s: a hang fails) and stderr has TEXT.
expect() {
    local want=$1 text=$2 rc=0
    shift 2
    echo "+ $*"
    timeout 120 "$@" >"$dir/out" 2>"$dir/err" || rc=$?
    if [ "$rc" != "$want" ] || { [ -n "$text" ] && ! grep -qF -- "$text" "$dir/err"; }; then
        echo "sweep_alloc_faults: exit $rc (want $want), stderr:"
        cat "$dir/err"
        exit 1
    fi
    echo "    exit $rc${text:+: $(grep -F -m1 -- "$text" "$dir/err")}"
}

# --chunk: a whole number from 1 to 2^20 (one chunk's results are one MPI message, whose size
# is an int); 1e12 used to be accepted and its message size cast to int.
for bad in 1e12 1048577 0.5 0; do
    expect 1 "allowed: a whole number of configurations from 1 to 1048576" \
        "$CLUSTERDSE" sweep "$job" -o "$dir/c.h5" --chunk "$bad"
done
expect 0 "" mpirun -np 2 "$CLUSTERDSE" sweep "$job" -o "$dir/c.h5" --chunk 1048576 --quiet
expect 0 "" mpirun -np 2 "$CLUSTERDSE" sweep "$job" -o "$dir/d.h5" --chunk 7 --quiet

if ! grep -q '^CDSE_FAULT_INJECTION:BOOL=ON' "$CDSE_BUILD/CMakeCache.txt"; then
    echo "sweep_alloc_faults: skipped the faults: $CDSE_BUILD is not built with -DCDSE_FAULT_INJECTION=ON"
    exit 77
fi
for np in 2 3; do
    expect 2 "out of memory before the sweep could start" \
        mpirun -np "$np" -x CDSE_FAULT=master_loop "$CLUSTERDSE" sweep "$job" -o "$dir/f.h5" \
        --force --quiet
    expect 2 "out of memory before the sweep could start" \
        mpirun -np "$np" -x CDSE_FAULT=master_recv "$CLUSTERDSE" sweep "$job" -o "$dir/f.h5" \
        --force --quiet --chunk 16
done
cat >"$dir/probe.cfg" <<'JOB'
name = "self-calibrated";
models = ( "llama3-8b" );
systems = ( { base = "h100-sxm-dgx"; name = "measured"; } );
space = { gpus = [ 8 ]; tp = [ 1, 2 ]; global_batch = [ 64 ]; };
probe = { plan = "quick"; systems = [ "measured" ]; };
JOB
for np in 2 3; do
    expect 2 "out of memory for the job's text on a rank" \
        mpirun -np "$np" -x CDSE_FAULT=share_alloc "$CLUSTERDSE" sweep "$job" -o "$dir/f.h5" \
        --force --quiet
    expect 2 "out of memory for the probe plan" \
        mpirun -np "$np" -x CDSE_FAULT=share_alloc@2 "$CLUSTERDSE" sweep "$dir/probe.cfg" \
        -o "$dir/p.h5" --force --quiet
    grep -q MPI_Abort "$dir/err" && { echo "sweep_alloc_faults: MPI_Abort"; exit 1; }
done
# Without the fault, the same build sweeps normally.
expect 0 "" mpirun -np 2 "$CLUSTERDSE" sweep "$job" -o "$dir/f.h5" --force --quiet --chunk 16
# A commit that fails part-way, then --resume.
for fault in store_swap_in@2 store_swap_back@1 store_progress@1; do
    expect 2 "committing to the store failed" \
        mpirun -np 2 -x CDSE_FAULT="$fault" "$CLUSTERDSE" sweep "$job" -o "$dir/c.h5" --force \
        --quiet --chunk 16 --flush 0.001
    expect 0 "" mpirun -np 2 "$CLUSTERDSE" sweep "$job" -o "$dir/c.h5" --resume --quiet --chunk 16
    echo "+ compare_stores.py f.h5 c.h5 (after $fault)"
    /usr/bin/python3 "$CDSE_SRC/tests/py/compare_stores.py" "$dir/f.h5" "$dir/c.h5" | cut -c1-80
done
echo "sweep_alloc_faults: ok"
