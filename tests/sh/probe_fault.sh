#!/usr/bin/env bash
# Issue 9: when a collective fails on one rank during a probe measurement, every rank returns
# CDSE_EMPI (-4) together; before, the failing rank returned while the others waited in
# MPI_Reduce for ever. Runs tests/mpi/probe_fault.c (the runner with its fault switch) on 2 and
# 3 ranks, the fault on the last rank, in the warm-up and in the timed loop, under a timeout.
set -euo pipefail
: "${CDSE_BUILD:?}"
prog=$CDSE_BUILD/tests/probe_fault
[ -x "$prog" ] || { echo "probe_fault not built"; exit 77; }
for np in 2 3; do
    for phase in warmup timed; do
        arg=; [ $phase = timed ] && arg=timed
        cmd="timeout -k 5 60 mpirun --oversubscribe -np $np env CDSE_PROBE_FAULT_RANK=$((np - 1)) $prog $arg"
        echo "+ $cmd"
        set +e
        out=$($cmd 2>&1)
        rc=$?
        set -e
        echo "$out"
        [ $rc -ne 124 ] || { echo "FAIL: hang ($np ranks, fault in $phase)"; exit 1; }
        [ $rc -eq 0 ] || { echo "FAIL: exit $rc"; exit 1; }
        n=$(echo "$out" | grep -c '^rank [0-9]* rc -4: an MPI collective failed$' || true)
        [ "$n" -eq "$np" ] || { echo "FAIL: $n of $np ranks returned CDSE_EMPI"; exit 1; }
    done
done
echo "probe_fault: every rank returned CDSE_EMPI together"
