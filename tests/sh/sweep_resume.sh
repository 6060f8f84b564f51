#!/usr/bin/env bash
# Kill and resume: a sweep killed with SIGKILL (the whole job: mpirun and its ranks) at random
# moments, resumed each time with --resume, ends with a store identical to an uninterrupted
# one; so does one stopped with SIGTERM sent to the ranks (as Slurm does) and one stopped with
# SIGUSR1 sent to mpirun (which forwards it), both exiting with 3.
# Repeat a failing run with the same kill times: CDSE_SEED=<seed printed below>.
set -euo pipefail
: "${CLUSTERDSE:?}" "${CDSE_SRC:?}"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# shellcheck source=tests/sh/lib/common.bash
. "$CDSE_SRC/tests/sh/lib/common.bash"
export OMPI_MCA_rmaps_base_oversubscribe=1
py=/usr/bin/python3
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
seed=${CDSE_SEED:-$(date +%s)}
RANDOM=$seed
echo "sweep_resume: seed $seed"

run() { echo "+ $*"; "$@"; }

# 2 models x 2 systems x 4 gpus x 4 tp x 4 pp x 2 cp x 3 vpp x 4 microbatch x 4 global_batch
# x 3 recompute x 2 sequence_parallel x 2 zero x 2 precision = 1,179,648 configurations,
# every one stored (store = "all"): 1.5 s on two quiet cores, 5 s on busy ones.
cat >"$dir/job.cfg" <<CFG
name = "resume";
models = ( "llama3-8b", "gpt3-13b" );
systems = ( "a100-80g-dgx", "h100-sxm-dgx" );
space = {
  gpus = [ 8, 16, 32, 64 ];
  tp = [ 1, 2, 4, 8 ];
  pp = [ 1, 2, 4, 8 ];
  cp = [ 1, 2 ];
  vpp = [ 1, 2, 4 ];
  microbatch = [ 1, 2, 4, 8 ];
  global_batch = [ 128, 256, 512, 1024 ];
  recompute = [ "none", "selective", "full" ];
  sequence_parallel = [ true, false ];
  zero = [ 0, 1 ];
  precision = [ "bf16", "fp8" ];
};
objective = { metric = "time_per_iteration"; top = 3; group_by = [ "model", "system", "gpus" ];
              store = "all"; };
CFG
sweep=(mpirun -np 2 "$CLUSTERDSE" sweep "$dir/job.cfg" --flush 0.05 --quiet)

start=$(date +%s%N)
run "${sweep[@]}" -o "$dir/ref.h5" >/dev/null
ref_ms=$(( ($(date +%s%N) - start) / 1000000 ))
echo "sweep_resume: uninterrupted run: $ref_ms ms"

# A random moment between FROM% and TO% of the uninterrupted run, in seconds; signals wait for
# MPI start-up (0.6 s at least: mpirun forwards signals only once it has started the ranks).
moment() {
    local lo=$(( ref_ms * $1 / 100 )) span=$(( ref_ms * ($2 - $1) / 100 ))
    [ "${3:-0}" -gt "$lo" ] && lo=$3
    local ms=$(( lo + RANDOM % (span > 0 ? span : 1) ))
    printf '%d.%03d' $(( ms / 1000 )) $(( ms % 1000 ))
}

# SIGKILL of the whole job (mpirun and every rank) at three random moments.
resume=()
# The first kill lands in the first 20-60% of the run, the later ones (on resumed runs, which
# have less left to do) within the first 10-30%.
for k in 1 2 3; do
    if [ "$k" -eq 1 ]; then t=$(moment 20 60); else t=$(moment 10 30); fi
    echo "+ ${sweep[*]} -o $dir/kill.h5 ${resume[*]} &  # killed with SIGKILL after ${t}s"
    "${sweep[@]}" -o "$dir/kill.h5" "${resume[@]}" >/dev/null 2>&1 &
    pid=$!
    sleep "$t"
    # mpirun puts each rank in a process group of its own: kill them all at once, as Slurm does.
    kill -KILL "$pid" $(pgrep -P "$pid") 2>/dev/null || true
    wait "$pid" || true
    if [ -e "$dir/kill.h5" ]; then
        # The killed store opens; `top` reads it.
        run "$CLUSTERDSE" top "$dir/kill.h5" -n 1 >/dev/null
    fi
    resume=(--resume)
done
run "${sweep[@]}" -o "$dir/kill.h5" --resume >/dev/null
run "$py" "$CDSE_SRC/tests/py/compare_stores.py" "$dir/ref.h5" "$dir/kill.h5"

# interrupt OUT SIGNAL ranks|mpirun FLOOR_MS: runs the sweep into OUT, sends SIGNAL to the ranks
# or to mpirun at a random moment, and expects exit 3. A run that finished before the signal
# (a busy machine makes runs vary) is tried again, earlier.
interrupt() {
    local out=$1 sig=$2 who=$3 floor=$4 lo=40 hi=60 attempt t pid rc
    for attempt in 1 2 3; do
        t=$(moment "$lo" "$hi" "$floor")
        echo "+ ${sweep[*]} -o $out &  # SIG$sig to $who after ${t}s"
        rm -f "$out"
        "${sweep[@]}" -o "$out" >/dev/null 2>"$dir/sig.err" &
        pid=$!
        cdse_wait_started "$out" "$pid" # the delay counts from the store's creation
        sleep "$t"
        if [ "$who" = ranks ]; then
            kill "-$sig" $(pgrep -P "$pid") 2>/dev/null || true
        else
            kill "-$sig" "$pid" 2>/dev/null || true
        fi
        rc=0
        wait "$pid" || rc=$?
        head -2 "$dir/sig.err"
        if [ "$rc" -eq 3 ]; then
            grep -q -- "--resume" "$dir/sig.err"
            return 0
        fi
        # mpirun that has already reaped its ranks no longer forwards signals: SIGUSR1 then ends
        # it with the default action (128 + 10). That is a finished sweep, when its store is
        # complete (identical to the uninterrupted one).
        if [ "$rc" -eq $((128 + $(kill -l "$sig"))) ] && [ "$who" = mpirun ] &&
            "$py" "$CDSE_SRC/tests/py/compare_stores.py" "$dir/ref.h5" "$out" >/dev/null 2>&1; then
            rc=0
        fi
        [ "$rc" -eq 0 ] || { echo "sweep_resume: SIG$sig: exit $rc, expected 3"; exit 1; }
        echo "sweep_resume: finished before the signal; again, earlier"
        lo=$(( lo / 2 )) hi=$(( hi / 2 ))
    done
    echo "sweep_resume: SIG$sig never interrupted the sweep"
    exit 1
}

# SIGTERM to the ranks (as Slurm sends it): they finish their chunks, commit, exit 3.
interrupt "$dir/term.h5" TERM ranks 300
run "${sweep[@]}" -o "$dir/term.h5" --resume >/dev/null
run "$py" "$CDSE_SRC/tests/py/compare_stores.py" "$dir/ref.h5" "$dir/term.h5"

# SIGUSR1 to mpirun, which forwards it to the ranks (once they run: 0.6 s at least).
interrupt "$dir/usr1.h5" USR1 mpirun 600
# Resuming on another number of ranks is allowed.
run mpirun -np 1 "$CLUSTERDSE" sweep "$dir/job.cfg" -o "$dir/usr1.h5" --resume --quiet >/dev/null
run "$py" "$CDSE_SRC/tests/py/compare_stores.py" "$dir/ref.h5" "$dir/usr1.h5"
echo "sweep_resume: ok"
