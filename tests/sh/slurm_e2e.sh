#!/usr/bin/env bash
# The three batch scripts with the real clusterdse under a real one-node Slurm started here
# (tests/slurm/cluster.sh: Debian's slurmctld + slurmd + munge, installed if missing):
#   - slurm/sweep.sbatch with srun (4 ranks) and with mpirun (2 ranks, job file from
#     $CLUSTERDSE_JOB, store path from the job file): both stores identical to a sweep run
#     directly with mpirun (tests/py/compare_stores.py);
#   - slurm/calibrate.sbatch with calibration/plans/quick.cfg: probe data and a fitted profile
#     in the fitted directory, and the profile is usable by a job;
#   - slurm/verify.sbatch on the srun sweep's store, after it (--dependency=afterok): /verify;
#   - a bad job file: the job FAILS with exit 1 and the log names file:line, no requeue.
# Job states and exit codes come from Slurm's jobcomp/filetxt records (no sacct without
# accounting). The time limit and requeue: tests/sh/slurm_timelimit.sh.
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

# 2 models x 2 systems x 3 gpus x 4 tp x 3 pp x 3 microbatch x 2 global_batch x 3 recompute
# x 2 sequence_parallel x 2 zero x 2 precision = 20736 configurations, every one stored.
cat >small.cfg <<CFG
name = "slurm-e2e";
output = "$T/fromjob.h5";
models = ( "llama3-8b", "gpt3-13b" );
systems = ( "a100-80g-dgx", "h100-sxm-dgx" );
space = {
  gpus = [ 8, 16, 32 ];
  tp = [ 1, 2, 4, 8 ];
  pp = [ 1, 2, 4 ];
  microbatch = [ 1, 2, 4 ];
  global_batch = [ 128, 256 ];
  recompute = [ "none", "selective", "full" ];
  sequence_parallel = [ true, false ];
  zero = [ 0, 1 ];
  precision = [ "bf16", "fp8" ];
};
objective = { metric = "time_to_train"; tokens = 100000000000L; top = 5;
              group_by = [ "model", "gpus" ]; store = "all"; };
CFG
run mpirun -np 2 "$CLUSTERDSE" sweep small.cfg -o ref.h5 --quiet >/dev/null

slurm_submit sweep_srun -N 1 --ntasks-per-node=4 -o sweep_srun-%j.log \
    "$src/slurm/sweep.sbatch" small.cfg "$T/srun.h5"
slurm_submit sweep_mpirun -N 1 --ntasks-per-node=2 -o sweep_mpirun-%j.log \
    --export=ALL,CLUSTERDSE_LAUNCHER=mpirun,CLUSTERDSE_JOB=small.cfg "$src/slurm/sweep.sbatch"
# --oversubscribe undoes the scripts' --exclusive, so that the jobs share the one node.
slurm_submit calibrate --oversubscribe -N 1 --ntasks-per-node=2 -o calibrate-%j.log \
    --export=ALL,CLUSTERDSE_FITTED_DIR="$T/fitted" \
    "$src/slurm/calibrate.sbatch" "$src/calibration/plans/quick.cfg" e2efab
slurm_submit badjob -N 1 --ntasks-per-node=2 -o badjob-%j.log \
    "$src/slurm/sweep.sbatch" "$src/tests/jobs/bad_syntax.cfg" "$T/bad.h5"
for _ in $(seq 1 40); do
    [ -s sweep_srun.jid ] && break
    sleep 0.25
done
slurm_submit verify --oversubscribe -N 1 --ntasks-per-node=2 -o verify-%j.log \
    --dependency=afterok:"$(cat sweep_srun.jid)" \
    --export=ALL,CLUSTERDSE_VERIFY_ARGS="--max-bytes 65536 --time-budget 5 --datasheet" \
    "$src/slurm/verify.sbatch" "$T/srun.h5" 2
slurm_wait_submitted
echo "# jobcomp records:"
cat "$SLURM_TEST_JOBCOMP"
for f in *.log; do
    echo "# ---- $f"
    cat "$f"
done

echo "# checks:"
slurm_expect sweep_srun COMPLETED 0 1 1
slurm_check "sweep_srun: 4 ranks" grep -q ', 4 ranks, store' sweep_srun-*.log
echo "+ $py $src/tests/py/compare_stores.py ref.h5 srun.h5"
slurm_check "sweep_srun: store identical to a direct sweep" \
    "$py" "$src/tests/py/compare_stores.py" ref.h5 srun.h5
slurm_expect sweep_mpirun COMPLETED 0 1 1
slurm_check "sweep_mpirun: launched by mpirun" grep -q 'mpirun -np 2 ' sweep_mpirun-*.log
echo "+ $py $src/tests/py/compare_stores.py ref.h5 fromjob.h5"
slurm_check "sweep_mpirun: store (the job file's output) identical to a direct sweep" \
    "$py" "$src/tests/py/compare_stores.py" ref.h5 fromjob.h5

slurm_expect calibrate COMPLETED 0 1 1
slurm_check "calibrate: probe data has measurements" "$py" -c "
import h5py, sys
with h5py.File('fitted/e2efab.probes.h5', 'r') as f:
    n = len(f['probes'])
print('calibrate: /probes rows:', n)
sys.exit(0 if n > 0 else 1)"
slurm_check "calibrate: the profile is named e2efab" grep -q '^name = "e2efab";' fitted/e2efab.cfg
# The fitted profile drives a job's network: evaluating with it must work.
cat >withprofile.cfg <<CFG
name = "with-profile";
models = ( "llama3-8b" );
systems = ( { base = "h100-sxm-dgx";
              network_profile = "$T/fitted/e2efab.cfg"; } );
space = { gpus = [ 16 ]; tp = [ 1, 2 ]; pp = [ 1 ]; global_batch = [ 128 ]; };
CFG
echo "+ $CLUSTERDSE eval withprofile.cfg"
slurm_check "calibrate: a job evaluates with the fitted profile" \
    bash -c "'$CLUSTERDSE' eval withprofile.cfg >withprofile.out 2>&1 ||
             { cat withprofile.out; false; }"

slurm_expect verify COMPLETED 0 1 1
slurm_check "verify: /verify written to the sweep's store" "$py" -c "
import h5py, sys
with h5py.File('srun.h5', 'r') as f:
    v = f['verify'][:]
ranks = sorted(set(int(r) for r in v['top_rank']))
print('verify: /verify rows:', len(v), 'top ranks:', ranks)
sys.exit(0 if len(v) > 0 and len(ranks) == 2 else 1)"

slurm_expect badjob FAILED 1 1 1
slurm_check "badjob: the log names file:line" grep -q 'bad_syntax.cfg:[0-9]' badjob-*.log
slurm_check "badjob: not requeued" bash -c "! grep -q requeued badjob-*.log"

if [ "$SLURM_TEST_FAILURES" -ne 0 ]; then
    echo "slurm_e2e: $SLURM_TEST_FAILURES check(s) failed"
    exit 1
fi
echo "slurm_e2e: all checks passed"
