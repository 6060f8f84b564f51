#!/usr/bin/env bash
# Faults while sweeping (issue 15): one rank killed with SIGKILL (not the whole job), a full disk
# (a small tmpfs), a read-only store directory. Each time the job stops within seconds on every
# rank with a non-zero exit naming the cause (2 for the faults while sweeping, 1 for a directory
# that cannot be written, found before the sweep starts), and, for the first two, `--resume` on a healthy
# file system completes to a store identical to an uninterrupted run (compare_stores.py).
# The disk tests mount tmpfs and are skipped (with a message) where mounting is not allowed.
set -uo pipefail
: "${CLUSTERDSE:?}" "${CDSE_SRC:?}"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1
py=/usr/bin/python3
dir=$(mktemp -d)
mounts=()
cleanup() {
    for m in "${mounts[@]}"; do umount "$m" 2>/dev/null; done
    rm -rf "$dir"
}
trap cleanup EXIT
failed=0
fail() { echo "FAIL: $*"; failed=1; }
run() { echo "+ $*"; "$@"; }

# The job of sweep_resume.sh: 1,179,648 configurations, every one stored.
cat >"$dir/job.cfg" <<CFG
name = "faults";
models = ( "llama3-8b", "gpt3-13b" );
systems = ( "a100-80g-dgx", "h100-sxm-dgx" );
space = {
  gpus = [ 8, 16, 32, 64 ]; tp = [ 1, 2, 4, 8 ]; pp = [ 1, 2, 4, 8 ]; cp = [ 1, 2 ];
  vpp = [ 1, 2, 4 ]; microbatch = [ 1, 2, 4, 8 ]; global_batch = [ 128, 256, 512, 1024 ];
  recompute = [ "none", "selective", "full" ]; sequence_parallel = [ true, false ];
  zero = [ 0, 1 ]; precision = [ "bf16", "fp8" ];
};
objective = { metric = "time_per_iteration"; top = 3; group_by = [ "model", "system", "gpus" ];
              store = "all"; };
CFG
sweep() { # NP OUT [ARGS...]
    local np=$1 out=$2
    shift 2
    mpirun -np "$np" "$CLUSTERDSE" sweep "$dir/job.cfg" -o "$out" --flush 0.1 --quiet "$@"
}

start=$(date +%s%N)
run sweep 2 "$dir/ref.h5" >/dev/null || fail "the uninterrupted run failed"
ref_ms=$(( ($(date +%s%N) - start) / 1000000 ))
ref_bytes=$(stat -c %s "$dir/ref.h5")
echo "sweep_faults: uninterrupted run: $ref_ms ms, $ref_bytes bytes"

# resume_and_compare STORE: --resume on the healthy disk completes to the reference store.
resume_and_compare() {
    run sweep 2 "$1" --resume >/dev/null || fail "--resume of $1 failed"
    run "$py" "$CDSE_SRC/tests/py/compare_stores.py" "$dir/ref.h5" "$1" || fail "$1 differs"
}

# 1. One rank (rank 1 of 3) killed with SIGKILL at 30% of the run. Open MPI's mpirun ends the
#    other ranks and exits with 128 + 9, naming the rank and the signal.
killed=0
for attempt in 1 2 3; do
    rm -f "$dir/kill.h5"
    echo "+ mpirun -np 3 ... -o $dir/kill.h5 &  # rank 1 killed with SIGKILL"
    sweep 3 "$dir/kill.h5" >/dev/null 2>"$dir/kill.err" &
    pid=$!
    sleep "$(( ref_ms * 3 / 10 / 1000 )).$(printf '%03d' $(( ref_ms * 3 / 10 % 1000 )))"
    victim=""
    for p in $(pgrep -f -- "-o $dir/kill.h5"); do
        if tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx 'OMPI_COMM_WORLD_RANK=1'; then
            victim=$p
        fi
    done
    [ -n "$victim" ] && kill -KILL "$victim"
    t0=$(date +%s)
    rc=0
    wait "$pid" || rc=$?
    [ -z "$victim" ] && continue # finished before the kill: try again
    killed=1
    elapsed=$(( $(date +%s) - t0 ))
    echo "sweep_faults: rank 1 (pid $victim) killed: mpirun exit $rc after ${elapsed} s"
    grep -m1 "signal 9" "$dir/kill.err" | sed 's/^/    /'
    [ "$rc" -ne 0 ] || fail "exit 0 after a rank was killed"
    [ "$elapsed" -le 20 ] || fail "the job took ${elapsed} s to stop"
    grep -q "rank 1 .*signal 9" "$dir/kill.err" || fail "the message does not name rank 1 and signal 9"
    break
done
if [ "$killed" -eq 1 ]; then
    resume_and_compare "$dir/kill.h5"
else
    fail "the sweep finished three times before rank 1 could be killed"
fi

# 2. A full disk: a tmpfs of a third of the store's size.
mkdir -p "$dir/small" "$dir/ro"
if mount -t tmpfs -o size=$(( ref_bytes / 3 / 1024 ))k tmpfs "$dir/small" 2>/dev/null; then
    mounts+=("$dir/small")
    t0=$(date +%s)
    echo "+ mpirun -np 2 ... -o $dir/small/full.h5   # on a tmpfs of $(( ref_bytes / 3 / 1024 )) KiB"
    rc=0
    sweep 2 "$dir/small/full.h5" >/dev/null 2>"$dir/full.err" || rc=$?
    elapsed=$(( $(date +%s) - t0 ))
    head -1 "$dir/full.err" | sed 's/^/    /'
    [ "$rc" -eq 2 ] || fail "full disk: exit $rc, expected 2"
    [ "$elapsed" -le 60 ] || fail "full disk: the job took ${elapsed} s"
    grep -q "No space left on device" "$dir/full.err" || fail "full disk: the OS message is missing"
    cp "$dir/small/full.h5" "$dir/full.h5"
    resume_and_compare "$dir/full.h5"

    # 3. A read-only store directory. It is found before any work is handed out, so it is bad
    #    input (exit 1, the rule of every command for paths that cannot be written), with the
    #    operating system's message; a disk that fails while the sweep writes is case 2 (exit 2).
    if mount -t tmpfs -o ro,size=1m tmpfs "$dir/ro" 2>/dev/null; then
        mounts+=("$dir/ro")
        rc=0
        echo "+ mpirun -np 2 ... -o $dir/ro/out.h5   # on a read-only file system"
        sweep 2 "$dir/ro/out.h5" >/dev/null 2>"$dir/ro.err" || rc=$?
        head -1 "$dir/ro.err" | sed 's/^/    /'
        [ "$rc" -eq 1 ] || fail "read-only directory: exit $rc, expected 1"
        grep -q "Read-only file system" "$dir/ro.err" || fail "read-only: the OS message is missing"
    fi
else
    echo "sweep_faults: cannot mount tmpfs here (needs root): full-disk and read-only cases skipped"
fi

[ "$failed" -eq 0 ] && echo "sweep_faults: ok"
exit "$failed"
