#!/usr/bin/env bash
# A sweep whose Slurm time limit is shorter than the sweep: slurm/sweep.sbatch gets Slurm's
# warning (USR1), the sweep stops and exits 3, the job requeues itself and resumes, until done;
# the final store is identical to an uninterrupted sweep's of the same job (run before, with
# mpirun), compared with tests/py/compare_stores.py.
#
# Timing: with -t 1 and --signal=B:USR1@30, Slurm (which checks limits every 30 s and may warn
# up to 60 s early, sbatch(1)) signals each run 0-30 s after it starts. The sweep is sized here,
# on this machine, to last about 40 s on two ranks alone, so the first run is always
# interrupted; later runs get about 15 s each (the requeued job waits cred_expire + 1 s and a
# scheduling pass, then the next 30 s check comes). About 2 minutes in all.
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

# Big models on A100 nodes of 8-64 GPUs: most configurations do not fit in memory (or are
# invalid: tp 3, 5, 6, 7), so the store keeps about 1 row in 9000 (store = "feasible"), while
# the space is large enough to take tens of seconds. The size is set in slices of 5,898,240
# configurations: one value of global_batch (128, 256, ...) for one copy of the two systems
# (a copy is the same system under another name). job K writes a job of at least K slices:
# S copies x G batch sizes, each axis within the 64 values a job file allows.
job() {
    local k=$1 copies per gbs systems c
    copies=$(((k + 63) / 64))
    per=$(((k + copies - 1) / copies))
    gbs=$(seq -s ', ' 128 128 $((128 * per)))
    systems=""
    for c in $(seq 1 "$copies"); do
        systems+="${systems:+, }{ base = \"a100-40g-dgx\"; name = \"a100-40g-c$c\"; }"
        systems+=", { base = \"a100-80g-dgx\"; name = \"a100-80g-c$c\"; }"
    done
    cat <<CFG
name = "slurm-timelimit";
models = ( "gpt3-175b", "llama3-405b", "gpt-530b", "gpt-1t" );
systems = ( $systems );
space = {
  gpus = [ 8, 16, 24, 32, 64 ];
  tp = [ 1, 2, 3, 4, 5, 6, 7, 8 ];
  pp = [ 1, 2, 3, 4, 6, 8 ];
  cp = [ 1, 2 ];
  vpp = [ 1, 2, 3, 4 ];
  microbatch = [ 1, 2, 4, 8 ];
  global_batch = [ $gbs ];
  recompute = [ "none", "selective", "full" ];
  sequence_parallel = [ true, false ];
  zero = [ 0, 1 ];
  precision = [ "bf16", "fp8" ];
  flash_attention = [ true, false ];
  tp_comm_overlap = [ true, false ];
};
objective = { metric = "time_to_train"; tokens = 100000000000L; top = 5;
              group_by = [ "model", "system", "gpus" ]; store = "feasible"; };
CFG
}

# Size the sweep: time 4 slices on two ranks (the faster of two tries, so that a moment of load
# from other tests does not make the sweep too short), then scale to about 40 s. The first run
# is interrupted for sure if the sweep takes more than about 32 s there.
job 4 >probe.cfg
ms=""
for _ in 1 2; do
    t0=$(date +%s%N)
    run mpirun -np 2 "$CLUSTERDSE" sweep probe.cfg -o probe.h5 --force >/dev/null 2>probe.err
    t=$((($(date +%s%N) - t0) / 1000000))
    # The sweep's own time, without MPI start-up ("... configurations in 1.58 s on 2 ranks"),
    # if it reports one.
    sweep_s=$(sed -n 's/.* configurations in \([0-9.]*\) s on .*/\1/p' probe.err | tail -n 1)
    [ -z "$sweep_s" ] || t=$(awk -v s="$sweep_s" 'BEGIN { printf "%d", s * 1000 }')
    [ -n "$ms" ] && [ "$ms" -le "$t" ] || ms=$t
done
k=$((40000 * 4 / (ms > 1 ? ms : 1)))
[ "$k" -ge 4 ] || k=4
job "$k" >job.cfg
echo "slurm_timelimit: 4 slices took $ms ms; the test sweep has $k or a few more slices" \
    "(about $((k * 5898240)) configurations), about 40 s on two ranks"

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
