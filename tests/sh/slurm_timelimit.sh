#!/usr/bin/env bash
# A sweep whose Slurm time limit is shorter than the sweep: slurm/sweep.sbatch gets Slurm's
# warning (USR1), the sweep stops and exits 3, the job requeues itself and resumes, until done;
# the final store is identical to an uninterrupted sweep's of the same job (run before, with
# mpirun), compared with tests/py/compare_stores.py.
#
# Timing: with -t 1 and --signal=B:USR1@30, Slurm (which checks limits every 30 s and may warn
# up to 60 s early, sbatch(1)) signals each run 0-30 s after it starts. The sweep is sized here,
# on this machine, to last about 55 s on two ranks alone, so the first run is always
# interrupted, even when the load that sized it goes away (sized at 40 s under load, a run
# once finished in 28 s, before the warning); later runs get about 15 s each (the requeued
# job waits cred_expire + 1 s and a scheduling pass, then the next 30 s check comes). About
# 2.5 minutes in all.
set -euo pipefail
: "${CLUSTERDSE:?}" "${CDSE_SRC:?}"
src=$CDSE_SRC
py=/usr/bin/python3
# shellcheck source=../slurm/cluster.sh
source "$src/tests/slurm/cluster.sh"
slurm_test_preflight
slurm_cluster_start
T=$SLURM_TEST_DIR
cd "$T"
export CLUSTERDSE_BIN=$CLUSTERDSE
run() { echo "+ $*"; "$@"; }

# shellcheck source=../slurm/timelimit_job.sh
source "$src/tests/slurm/timelimit_job.sh"
timelimit_job_sized 55
ms=$TIMELIMIT_MS
k=$TIMELIMIT_K
echo "slurm_timelimit: 4 slices took $ms ms; the test sweep has $k or a few more slices" \
    "(about $((k * 5898240)) configurations), about 55 s on two ranks"

# The uninterrupted sweep first, directly with mpirun (alone on the machine, so that the
# time-limited job does not share the cores with it and make more, shorter runs).
t0=$(date +%s)
run mpirun -np 2 "$CLUSTERDSE" sweep job.cfg -o reference.h5 --quiet >/dev/null
echo "slurm_timelimit: the uninterrupted sweep took $(($(date +%s) - t0)) s"

slurm_submit limited -N 1 --ntasks-per-node=2 -t 1 --signal=B:USR1@30 -o limited-%j.log \
    "$src/slurm/sweep.sbatch" job.cfg "$T/limited.h5"
slurm_wait_submitted
echo "# jobcomp records:"
cat "$SLURM_TEST_JOBCOMP"
for f in limited-*.log; do
    echo "# ---- $f (progress lines left out)"
    grep -v '^sweep: [0-9]*/[0-9]* (' "$f" || true
done

echo "# checks:"
log=$(ls limited-*.log)
runs=$(grep -c 'sweep exited' "$log" || true)
slurm_expect limited COMPLETED 0 2
slurm_check "limited: Slurm's warning reached the batch shell" grep -q 'got SIGUSR1' "$log"
slurm_check "limited: the sweep exited 3 when warned" grep -q 'clusterdse sweep exited 3' "$log"
slurm_check "limited: the job requeued itself" grep -q 'requeued: the next run' "$log"
slurm_check "limited: later runs resumed the store" grep -q 'limited.h5 --resume' "$log"
slurm_check "limited: the log has all $runs runs (append)" \
    bash -c "[ \$(grep -c '^sweep.sbatch: .* run [0-9]* on' '$log') -eq $runs ]"
slurm_check "limited: the last run finished the sweep" \
    bash -c "tail -n 1 '$log' | grep -q 'clusterdse sweep exited 0'"
echo "+ $py $src/tests/py/compare_stores.py reference.h5 limited.h5"
slurm_check "limited.h5 is identical to reference.h5" \
    "$py" "$src/tests/py/compare_stores.py" reference.h5 limited.h5

if [ "$SLURM_TEST_FAILURES" -ne 0 ]; then
    echo "slurm_timelimit: $SLURM_TEST_FAILURES check(s) failed"
    exit 1
fi
echo "slurm_timelimit: all checks passed ($runs runs of the time-limited job)"
