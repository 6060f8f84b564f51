#!/usr/bin/env bash
# The Slurm batch scripts (slurm/*.sbatch) under a real one-node Slurm started by this test,
# with tests/slurm/standin.sh in place of clusterdse: a program with the same command line and
# exit codes whose duration and interruption points the test controls. It proves the scripts'
# own logic: the time-limit warning reaches the sweep through srun and through mpirun, the sweep
# exits 3 and the job requeues itself and resumes until done, logs append, scancel does not
# requeue, bad input fails once, calibrate writes its profile, verify reports failure.
# tests/sh/slurm_e2e.sh does the same with the real clusterdse.
set -euo pipefail
src=${CDSE_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
# shellcheck source=../slurm/cluster.sh
source "$src/tests/slurm/cluster.sh"
slurm_test_preflight

# Slots for every job at once (the stand-in sleeps, it does not compute).
SLURM_TEST_CPUS=16
slurm_cluster_start
T=$SLURM_TEST_DIR
cd "$T"
standin=$src/tests/slurm/standin.sh
export CLUSTERDSE_BIN=$standin
# -t 1 with the warning 30 s before: Slurm checks limits every 30 s, so USR1 comes 0-30 s into
# each run; a 40-step (40 s) sweep is therefore interrupted at least once, usually twice.
steps=40
limit=(-t 1 --signal=B:USR1@30)
one_node=(-N 1 --ntasks-per-node=2)

printf 'steps = %d;\noutput = "%s/srun.out";\n' $steps "$T" >srun.cfg
printf 'steps = %d;\n' $steps >mpirun.cfg
printf 'steps = 600;\noutput = "%s/cancel.out";\n' "$T" >cancel.cfg
# Long enough (30 s) not to finish before the test signals it, even on a busy machine.
printf 'steps = 30;\noutput = "%s/manual.out";\n' "$T" >manual.cfg
printf 'plan\n' >plan.cfg
printf 'step 0\ndone\n' >complete.out
printf 'step 0\n' >incomplete.out

# A user's copy of the scripts in a project with its own build/: the binary is found next to
# the submitted script (Slurm's Command=), not by CLUSTERDSE_BIN.
mkdir -p proj/slurm proj/build
cp "$src/slurm/sweep.sbatch" proj/slurm/
ln -s "$standin" proj/build/clusterdse

# --force is for the first run only: the requeued runs must resume, not start over.
slurm_submit srun "${one_node[@]}" "${limit[@]}" -o srun-%j.log \
    --export=ALL,CLUSTERDSE_SWEEP_ARGS=--force "$src/slurm/sweep.sbatch" srun.cfg
slurm_submit mpirun "${one_node[@]}" "${limit[@]}" -o mpirun-%j.log \
    --export=ALL,CLUSTERDSE_LAUNCHER=mpirun "$src/slurm/sweep.sbatch" mpirun.cfg "$T/mpirun.out"
slurm_submit badjob "${one_node[@]}" -o badjob-%j.log \
    --export=ALL,CLUSTERDSE_BIN= proj/slurm/sweep.sbatch missing.cfg "$T/badjob.out"
slurm_submit cancel "${one_node[@]}" -o cancel-%j.log "$src/slurm/sweep.sbatch" cancel.cfg
# calibrate.sbatch and verify.sbatch ask for whole nodes (--exclusive); --oversubscribe undoes
# that here, or they would hold the one node and the other jobs would wait for them.
slurm_submit calibrate --oversubscribe "${one_node[@]}" -o calibrate-%j.log \
    --export=ALL,CLUSTERDSE_FITTED_DIR="$T/fitted" "$src/slurm/calibrate.sbatch" plan.cfg testfab
slurm_submit verify --oversubscribe "${one_node[@]}" -o verify-%j.log \
    "$src/slurm/verify.sbatch" complete.out 1
slurm_submit verify_bad --oversubscribe "${one_node[@]}" -o verify_bad-%j.log \
    "$src/slurm/verify.sbatch" incomplete.out
slurm_submit manual "${one_node[@]}" -o manual-%j.log "$src/slurm/sweep.sbatch" manual.cfg
slurm_check "cancel: the job runs" slurm_wait_running cancel
slurm_check "manual: the job runs" slurm_wait_running manual
sleep 2
echo "+ scancel $(cat cancel.jid)"
scancel "$(cat cancel.jid)"
# What a user does to stop a sweep now and let it continue later (e.g. before maintenance):
# the same USR1 as Slurm's warning, so the job requeues itself and resumes.
echo "+ scancel --batch --signal=USR1 $(cat manual.jid)"
scancel --batch --signal=USR1 "$(cat manual.jid)"
slurm_wait_submitted
echo "# jobcomp records:"
cat "$SLURM_TEST_JOBCOMP"
for f in *.log; do
    echo "# ---- $f"
    cat "$f"
done

echo "# checks:"
# What an uninterrupted 40-step run writes: every step once, in order, then "done".
{ seq 0 $((steps - 1)) | sed 's/^/step /'; echo done; } >expected.out
for launcher in srun mpirun; do
    log=$(ls $launcher-*.log)
    # At least one requeue: two runs or more, the last COMPLETED with exit 0.
    slurm_expect $launcher COMPLETED 0 2
    slurm_check "$launcher: the store is complete, each step once" cmp -s expected.out $launcher.out
    slurm_check "$launcher: the warning reached the batch shell" grep -q 'got SIGUSR1' "$log"
    slurm_check "$launcher: the sweep exited 3" grep -q 'sweep exited 3' "$log"
    slurm_check "$launcher: the job requeued itself" grep -q 'requeued: the next run' "$log"
    slurm_check "$launcher: run 2 resumed" grep -q "sweep ${launcher}.cfg.*--resume\$" "$log"
    slurm_check "$launcher: the log kept run 1 (append)" grep -q 'run 1 on' "$log"
    slurm_check "$launcher: the last run exited 0" \
        bash -c "tail -n 1 '$log' | grep -q 'sweep exited 0'"
done
slurm_check "mpirun: the launcher was mpirun" grep -q 'mpirun -np 2 ' mpirun-*.log
slurm_check "srun: --force in the first run only" bash -c "grep -q 'srun.cfg --force\$' srun-*.log &&
    ! grep -q 'force.*resume' srun-*.log"
# srun delivers USR1 to every rank. mpirun forwards it too, but aborts the other ranks as soon as
# one exits non-zero, so there only its own message is certain.
slurm_check "srun: both ranks got the signal" grep -q 'rank 1 of 2: got a signal' srun-*.log
slurm_check "mpirun: forwarded the signal" grep -q 'mpirun: Forwarding signal 10' mpirun-*.log

slurm_expect badjob FAILED 1 1 1
slurm_check "badjob: binary found next to the submitted script" \
    grep -q "$T/proj/slurm/../build/clusterdse sweep missing.cfg\|$T/proj/build/clusterdse sweep" \
    badjob-*.log
slurm_check "badjob: not requeued" bash -c "! grep -q requeued badjob-*.log"

slurm_expect cancel CANCELLED 0 1 1
slurm_check "cancel: TERM reached the batch shell" grep -q 'got SIGTERM' cancel-*.log
slurm_check "cancel: not requeued" bash -c "! grep -q requeued cancel-*.log"

slurm_expect manual COMPLETED 0 2 2
{ seq 0 29 | sed 's/^/step /'; echo done; } >expected30.out
slurm_check "manual: USR1 by scancel stopped, requeued and resumed the sweep" \
    bash -c "grep -q 'requeued: the next run' manual-*.log && cmp -s expected30.out manual.out"

slurm_expect calibrate COMPLETED 0 1 1
slurm_check "calibrate: probe ran on 2 ranks" grep -qx 'probe ranks=2' fitted/testfab.probes.h5
slurm_check "calibrate: profile fitted from the probes" \
    grep -qx "fitted from $T/fitted/testfab.probes.h5 as testfab" fitted/testfab.cfg
slurm_expect verify COMPLETED 0 1 1
slurm_check "verify: -n 1 passed on" bash -c "grep -qx 'step 0' verify-*.log"
slurm_expect verify_bad FAILED 2 1 1

if [ "$SLURM_TEST_FAILURES" -ne 0 ]; then
    echo "slurm_standin: $SLURM_TEST_FAILURES check(s) failed"
    exit 1
fi
echo "slurm_standin: all checks passed"
