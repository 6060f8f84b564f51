#!/usr/bin/env bash
# Issue 14, part 4: Slurm across two nodes of the test bed (tests/netbed/netbed.sh -H and
# tests/netbed/slurm.sh: slurmctld and munged on the bridge, one slurmd per node namespace).
#   - slurm/sweep.sbatch -N 2 (srun --mpi=pmix over both nodes, 2 ranks each): the store is
#     identical to a one-node sweep of the same job run directly with mpirun;
#   - slurm/calibrate.sbatch -N 2: a profile with two levels (intra_node of 2 ranks, inter_node);
#   - the time limit with two nodes: USR1 before the limit, the sweep exits 3, the job requeues
#     itself and resumes until done, and the store equals an uninterrupted sweep's.
# The links are shaped to 1 Gbit/s; nothing here times them.
set -euo pipefail
: "${CLUSTERDSE:?}" "${CDSE_SRC:?}"
src=$CDSE_SRC
py=/usr/bin/python3
# shellcheck source=../netbed/lib.sh
source "$src/tests/netbed/lib.sh"
# shellcheck source=../slurm/cluster.sh
source "$src/tests/slurm/cluster.sh"
netbed_preflight
slurm_test_preflight
netbed_start 2 1gbit -H
# shellcheck source=../netbed/slurm.sh
source "$src/tests/netbed/slurm.sh"
netbed_slurm_start
set -a
# shellcheck disable=SC1091
source "$NB_DIR/mca.env"
set +a
T=$SLURM_TEST_DIR
cd "$T"
export CLUSTERDSE_BIN=$CLUSTERDSE
run() { echo "+ $*"; "$@"; }
nodes=$(sinfo -h -N -o %N | sort -u | tr '\n' ' ')
echo "netbed_slurm: nodes $nodes"

# The time-limited sweep: about 60 s on two ranks, one rank per node here (60, not the one-node
# test's 40: sized under load, it once ran in 17 s when the load dropped and was never warned;
# Slurm warns 5-30 s into a run). Sized first, while nothing else runs.
# shellcheck source=../slurm/timelimit_job.sh
source "$src/tests/slurm/timelimit_job.sh"
timelimit_job_sized 60
echo "netbed_slurm: 4 slices took $TIMELIMIT_MS ms; the time-limited sweep has $TIMELIMIT_K slices"

# 2 models x 2 systems x 2 gpus x 4 tp x 3 pp x 2 microbatch x 3 recompute x 2 zero = 1152
# configurations, every one stored.
cat >small.cfg <<'CFG'
name = "netbed-slurm";
models = ( "llama3-8b", "gpt3-13b" );
systems = ( "a100-80g-dgx", "h100-sxm-dgx" );
space = { gpus = [ 8, 16 ]; tp = [ 1, 2, 4, 8 ]; pp = [ 1, 2, 4 ]; microbatch = [ 1, 2 ];
          global_batch = [ 128 ]; recompute = [ "none", "selective", "full" ]; zero = [ 0, 1 ]; };
objective = { metric = "time_to_train"; tokens = 100000000000L; top = 5;
              group_by = [ "model", "gpus" ]; store = "all"; };
CFG
run mpirun -np 2 "$CLUSTERDSE" sweep small.cfg -o ref.h5 --quiet >/dev/null
slurm_submit sweep2 -N 2 --ntasks-per-node=2 -o sweep2-%j.log \
    "$src/slurm/sweep.sbatch" small.cfg "$T/sweep2.h5"
slurm_submit calibrate2 -N 2 --ntasks-per-node=2 -o calibrate2-%j.log \
    --export=ALL,CLUSTERDSE_FITTED_DIR="$T/fitted" \
    "$src/slurm/calibrate.sbatch" "$src/calibration/plans/quick.cfg" nbfab

slurm_wait_submitted
run mpirun -np 2 "$CLUSTERDSE" sweep job.cfg -o reference.h5 --quiet >/dev/null
slurm_submit limited2 -N 2 --ntasks-per-node=1 -t 1 --signal=B:USR1@30 -o limited2-%j.log \
    "$src/slurm/sweep.sbatch" job.cfg "$T/limited2.h5"
slurm_wait_submitted
echo "# jobcomp records:"
cat "$SLURM_TEST_JOBCOMP"
for f in sweep2-*.log calibrate2-*.log limited2-*.log; do
    echo "# ---- $f (progress lines left out)"
    grep -v '^sweep: [0-9]*/[0-9]* (' "$f" || true
done

echo "# checks:"
slurm_expect sweep2 COMPLETED 0 1 1
slurm_check "sweep2: 4 ranks on the two node namespaces" \
    grep -q "run 1 on 2 node(s) (nb$NB_ID-n\[1-2\]), 4 ranks" sweep2-*.log
echo "+ $py $src/tests/py/compare_stores.py ref.h5 sweep2.h5"
slurm_check "sweep2: the two-node store is identical to a one-node sweep" \
    "$py" "$src/tests/py/compare_stores.py" ref.h5 sweep2.h5

slurm_expect calibrate2 COMPLETED 0 1 1
slurm_check "calibrate2: probed 4 ranks on the two nodes" \
    grep -q "4 ranks on 2 node(s) (2 per node)" calibrate2-*.log
echo "+ $py (fitted/nbfab.cfg has two levels)"
slurm_check "calibrate2: a two-level profile (intra_node of 2 ranks, inter_node)" "$py" -c "
import re, sys
text = open('fitted/nbfab.cfg').read()
levels = re.findall(r'name = \"(\w+)\";\s*size = (\d+);', text)  # one line or one key a line
print('calibrate2: levels', levels)
sys.exit(0 if levels == [('intra_node', '2'), ('inter_node', '0')] else 1)"

log=$(ls limited2-*.log)
runs=$(grep -c 'sweep exited' "$log" || true)
slurm_expect limited2 COMPLETED 0 2
slurm_check "limited2: every run on both nodes" \
    bash -c "[ \$(grep -c 'run [0-9]* on 2 node(s)' '$log') -eq $runs ]"
slurm_check "limited2: Slurm's warning reached the batch shell" grep -q 'got SIGUSR1' "$log"
slurm_check "limited2: the sweep exited 3 when warned" grep -q 'clusterdse sweep exited 3' "$log"
slurm_check "limited2: the job requeued itself" grep -q 'requeued: the next run' "$log"
slurm_check "limited2: later runs resumed the store" grep -q 'limited2.h5 --resume' "$log"
slurm_check "limited2: the last run finished the sweep" \
    bash -c "tail -n 1 '$log' | grep -q 'clusterdse sweep exited 0'"
echo "+ $py $src/tests/py/compare_stores.py reference.h5 limited2.h5"
slurm_check "limited2.h5 is identical to reference.h5" \
    "$py" "$src/tests/py/compare_stores.py" reference.h5 limited2.h5

if [ "$SLURM_TEST_FAILURES" -ne 0 ]; then
    echo "netbed_slurm: $SLURM_TEST_FAILURES check(s) failed"
    exit 1
fi
echo "netbed_slurm: all checks passed ($runs runs of the time-limited two-node job)"
