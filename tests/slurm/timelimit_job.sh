# shellcheck shell=bash
# A sweep that outlasts a short Slurm time limit, for the time-limit tests (tests/sh/
# slurm_timelimit.sh on one node, tests/sh/netbed_slurm.sh on two). Source it, then
# `timelimit_job_sized SECONDS` writes job.cfg (a sweep of about SECONDS on two ranks of this
# machine, sized by timing a small one) and sets TIMELIMIT_MS (the time of 4 slices) and
# TIMELIMIT_K (slices in job.cfg). Needs CLUSTERDSE and a `run` function that prints and runs.

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
# from other tests does not make the sweep too short), then scale to about SECONDS. With -t 1
# and --signal=B:USR1@30, the first run is interrupted for sure if the sweep takes more than
# about 32 s there.
timelimit_job_sized() {
    local seconds=$1 ms="" t t0 sweep_s k
    job 4 >probe.cfg
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
    k=$((seconds * 1000 * 4 / (ms > 1 ? ms : 1)))
    [ "$k" -ge 4 ] || k=4
    job "$k" >job.cfg
    # shellcheck disable=SC2034 # for the caller
    TIMELIMIT_MS=$ms
    # shellcheck disable=SC2034 # for the caller
    TIMELIMIT_K=$k
}
