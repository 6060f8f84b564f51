#!/usr/bin/env bash
# Issue 31, M5: commands that read a store while its sweep writes it see the last commit (or wait
# for the commit being flushed), never a false "damaged store". A sweep on 2 ranks commits every
# 0.1 s (--flush 0.1) while `top -n 3`, `top --where` and `export -o` read its store one after
# another; sweeps are started again (a new store each) until CDSE_READS (default 100) reads have
# run while a sweep was running. Every read must exit 0. Then the finished store reads, and a
# copy of it whose /results chunk is overwritten is still reported damaged (exit 2).
# Before the fix, about a third of such reads ended "a damaged store: rows ... of /results cannot
# be read" or "/progress cannot be read", exit 2 (the reproducer of issue 31, M5).
set -uo pipefail
: "${CLUSTERDSE:?}"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1
want=${CDSE_READS:-100}
py=/usr/bin/python3
dir=$(mktemp -d)
sweep_pid=
cleanup() {
    [ -n "$sweep_pid" ] && kill "$sweep_pid" 2>/dev/null && wait "$sweep_pid" 2>/dev/null
    rm -rf "$dir"
}
trap cleanup EXIT

# GPT-3 175B on 1024 A100s (the space of the reproducer's job on one system, 2.76 million
# configurations), the feasible ones stored: /results grows by partial chunks at every commit.
cat >"$dir/job.cfg" <<'CFG'
name = "read-while-sweeping";
models = ( "gpt3-175b" );
systems = ( "a100-80g-dgx" );
space = {
  gpus = [ 1024 ];
  tp = [ 1, 2, 4, 8 ];
  pp = [ 1, 2, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96 ];
  cp = [ 1, 2, 4, 8 ];
  vpp = [ 1, 2, 3, 4, 6, 8 ];
  microbatch = [ 1, 2, 4, 8, 16 ];
  global_batch = [ 256, 512, 1024, 1536, 2048 ];
  recompute = [ "none", "selective", "full" ];
  sequence_parallel = [ true, false ];
  zero = [ 0, 1, 2, 3 ];
  precision = [ "bf16", "fp8" ];
  flash_attention = [ true, false ];
};
objective = { metric = "time_to_train"; tokens = 300000000000L; top = 10;
              group_by = [ "system" ]; store = "feasible"; };
CFG

reads=0 failed=0 sweeps=0
deadline=$((SECONDS + 600))
while [ "$reads" -lt "$want" ] && [ "$SECONDS" -lt "$deadline" ]; do
    sweeps=$((sweeps + 1))
    store=$dir/s$sweeps.h5
    echo "+ mpirun -np 2 $CLUSTERDSE sweep $dir/job.cfg -o $store --flush 0.1 --quiet &"
    mpirun -np 2 "$CLUSTERDSE" sweep "$dir/job.cfg" -o "$store" --flush 0.1 --quiet \
        >/dev/null 2>"$dir/sweep.err" &
    sweep_pid=$!
    while [ ! -e "$store" ] && kill -0 "$sweep_pid" 2>/dev/null; do sleep 0.05; done
    while [ "$reads" -lt "$want" ] && kill -0 "$sweep_pid" 2>/dev/null; do
        for cmd in "top $store -n 3" "top $store -n 3 --where tp==8" \
                   "export $store -o $dir/e.csv --force"; do
            # shellcheck disable=SC2086
            "$CLUSTERDSE" $cmd >/dev/null 2>"$dir/err"
            rc=$?
            reads=$((reads + 1))
            if [ "$rc" -ne 0 ]; then
                failed=$((failed + 1))
                echo "FAIL: exit $rc: $CLUSTERDSE $cmd"
                sed 's/^/    /' "$dir/err" | cut -c1-200
            fi
        done
    done
    wait "$sweep_pid"
    rc=$?
    sweep_pid=
    if [ "$rc" -ne 0 ]; then
        echo "FAIL: the sweep exited $rc"
        sed 's/^/    /' "$dir/sweep.err" | head -5
        failed=$((failed + 1))
    fi
    [ "$failed" -gt 0 ] && break
done
echo "store_read_while_sweeping: $reads reads during $sweeps sweeps, $failed failed"
if [ "$failed" -eq 0 ] && [ "$reads" -lt "$want" ]; then
    echo "FAIL: only $reads of $want reads in 600 s"
    failed=1
fi

# The finished store reads whole; a damaged one is still reported damaged.
echo "+ $CLUSTERDSE export $store -o $dir/final.csv --force"
if ! "$CLUSTERDSE" export "$store" -o "$dir/final.csv" --force; then
    echo "FAIL: the finished store does not read"
    failed=1
fi
cp "$store" "$dir/damaged.h5"
# The middle of /results's first chunk overwritten with 4 KiB of 0x55 (h5py's chunk query).
"$py" - "$dir/damaged.h5" <<'PY'
import h5py, sys
with h5py.File(sys.argv[1], "r") as f:
    info = f["results"].id.get_chunk_info(0)
with open(sys.argv[1], "r+b") as f:
    f.seek(info.byte_offset + info.size // 2)
    f.write(b"\x55" * 4096)
PY
echo "+ $CLUSTERDSE top $dir/damaged.h5 -n 3"
"$CLUSTERDSE" top "$dir/damaged.h5" -n 3 >/dev/null 2>"$dir/err"
rc=$?
sed 's/^/    /' "$dir/err" | cut -c1-200
if [ "$rc" -ne 2 ] || ! grep -q "damaged" "$dir/err"; then
    echo "FAIL: a store with a damaged /results chunk: exit $rc, expected 2 and 'damaged'"
    failed=1
fi
[ "$failed" -eq 0 ] && echo "store_read_while_sweeping: ok"
exit "$failed"
