#!/usr/bin/env bash
# Exact pruning (docs/sweep.md, Pruning): a job of 10,616,832 configurations swept exhaustively
# and with objective.prune = true gives the same /top and /pareto byte for byte; the pruned
# store's /counts have pruned > 0 and evaluated + pruned = the space's size; pruned sweeps on
# 1, 2 and 3 ranks, and one killed (SIGKILL) and stopped (SIGTERM, exit 3) then resumed, give
# identical stores, /counts included. Bad input: prune with store "feasible" or metric "mfu", a
# top too large for one chunk's message.
set -euo pipefail
: "${CLUSTERDSE:?}" "${CDSE_SRC:?}"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1
py=/usr/bin/python3
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
seed=${CDSE_SEED:-$(date +%s)}
RANDOM=$seed
echo "prune_identity: seed $seed"

run() { echo "+ $*"; "$@"; }

# 2 models x 8 designs (bf16 peak, HBM, NVLink domain) x 4 gpus x 4 tp x 3 pp x 2 cp x 2 vpp
# x 3 microbatch x 2 global_batch x 3 recompute x 2 sequence_parallel x 3 zero x 2 precision
# x 2 flash_attention x 2 offload x 2 tp_comm_overlap x 2 stacks = 10,616,832 configurations.
# Grouped by precision too, so that a box (which spans both precisions) touches two groups.
job() {
    cat <<CFG
name = "prune";
models = ( "gpt3-1.3b", "llama3-8b" );
systems = ( { base = "h100-sxm-dgx"; name = "design";
  peak_tflops = { fp32 = 67.0; tf32 = 494.7; bf16 = [ 989.4, 1978.8 ]; fp16 = 989.4; fp8 = 1978.9; };
  hbm_gib = [ 40.0, 79.6 ];
  network = ( { name = "nvlink"; size = [ 8, 16 ]; bandwidth = 450.0; latency = 3.4; efficiency = 0.82; },
              { name = "ib"; size = 0; bandwidth = 50.0; latency = 9.6; efficiency = 0.90; } );
  memory_tier = { attach = "per_node"; capacity_gib = 512.0; bandwidth = 128.0; latency = 1.0; shared_by = 8; }; } );
stacks = [ "megatron-lm-2022", "megatron-core-2025" ];
space = {
  gpus = [ 8, 16, 32, 64 ];
  tp = [ 1, 2, 4, 8 ];
  pp = [ 1, 2, 4 ];
  cp = [ 1, 2 ];
  vpp = [ 1, 2 ];
  microbatch = [ 1, 2, 4 ];
  global_batch = [ 256, 512 ];
  recompute = [ "none", "selective", "full" ];
  sequence_parallel = [ true, false ];
  zero = [ 0, 1, 3 ];
  precision = [ "bf16", "fp8" ];
  flash_attention = [ true, false ];
  offload = [ "none", "optimizer" ];
  tp_comm_overlap = [ true, false ];
};
objective = { metric = "$1"; top = 3; group_by = [ "model", "gpus", "precision", "design" ];
              store = "$2"; prune = $3; tokens = 1e11; };
CFG
}
job time_to_train best false >"$dir/exhaustive.cfg"
job time_to_train best true >"$dir/pruned.cfg"

sweep() { # RANKS JOB OUT [options]
    local np=$1 cfg=$2 out=$3
    shift 3
    mpirun -np "$np" "$CLUSTERDSE" sweep "$cfg" -o "$out" --quiet --flush 0.05 "$@"
}

start=$(date +%s%N)
echo "+ sweep 2 exhaustive.cfg -o exhaustive.h5"
sweep 2 "$dir/exhaustive.cfg" "$dir/exhaustive.h5" >/dev/null
echo "prune_identity: exhaustive: $(( ($(date +%s%N) - start) / 1000000 )) ms"
start=$(date +%s%N)
run mpirun -np 2 "$CLUSTERDSE" sweep "$dir/pruned.cfg" -o "$dir/pruned2.h5" 2>"$dir/pruned2.err" \
    >/dev/null
pruned_ms=$(( ($(date +%s%N) - start) / 1000000 ))
echo "prune_identity: pruned: $pruned_ms ms"
grep "pruned (" "$dir/pruned2.err"

run "$py" "$CDSE_SRC/tests/py/compare_stores.py" --best "$dir/exhaustive.h5" "$dir/pruned2.h5"
"$py" - "$dir/pruned2.h5" <<'PY'
import sys
import h5py
with h5py.File(sys.argv[1], "r") as f:
    counts = {r["name"].decode(): int(r["count"]) for r in f["counts"][:]}
    size = int(f.attrs["space_size"])
    assert size >= 10**7, size
    assert int(f.attrs["pruned"]) == 1
    assert counts["pruned"] > 0 and counts["evaluated"] + counts["pruned"] == size, counts
    assert sum(int(r["pruned"]) for r in f["progress"][:]) == counts["pruned"]
    print(f"prune_identity: {counts['pruned']} of {size} pruned "
          f"({100.0 * counts['pruned'] / size:.1f}%)")
PY

# `clusterdse top` says that the store was pruned, with the counts.
run "$CLUSTERDSE" top "$dir/pruned2.h5" -n 1 2>"$dir/top.err" >/dev/null
cat "$dir/top.err"
grep -q "was pruned (objective.prune): [0-9]* configurations evaluated, [0-9]* skipped" \
    "$dir/top.err"

for np in 1 3; do
    echo "+ sweep $np pruned.cfg -o pruned$np.h5"
    sweep "$np" "$dir/pruned.cfg" "$dir/pruned$np.h5" >/dev/null
    run "$py" "$CDSE_SRC/tests/py/compare_stores.py" "$dir/pruned2.h5" "$dir/pruned$np.h5"
done

# mpirun itself in the background (not a function's subshell), so that its ranks are its children.
pruned=(mpirun -np 2 "$CLUSTERDSE" sweep "$dir/pruned.cfg" --quiet --flush 0.05)

# SIGKILL of the whole job at a random moment of the first 20-70% of the run, three times,
# resumed each time.
resume=()
for k in 1 2 3; do
    ms=$(( pruned_ms * (20 + RANDOM % 50) / 100 ))
    t=$(printf '%d.%03d' $(( ms / 1000 )) $(( ms % 1000 )))
    echo "+ sweep 2 pruned.cfg -o kill.h5 ${resume[*]} &  # killed with SIGKILL after ${t}s"
    "${pruned[@]}" -o "$dir/kill.h5" "${resume[@]}" >/dev/null 2>&1 &
    pid=$!
    sleep "$t"
    kill -KILL "$pid" $(pgrep -P "$pid") 2>/dev/null || true
    wait "$pid" || true
    resume=(--resume)
done
echo "+ sweep 2 pruned.cfg -o kill.h5 --resume"
sweep 2 "$dir/pruned.cfg" "$dir/kill.h5" --resume >/dev/null
run "$py" "$CDSE_SRC/tests/py/compare_stores.py" "$dir/pruned2.h5" "$dir/kill.h5"

# SIGTERM to the ranks: they finish their chunks, commit and exit 3; --resume completes it. A
# run that finished before the signal is tried again, earlier.
# The delay counts from the store's creation (lib/common.bash, cdse_wait_started), so it can
# be short without reaching a rank mpirun is still starting.
# shellcheck source=tests/sh/lib/common.bash
. "$CDSE_SRC/tests/sh/lib/common.bash"
interrupted=0
for attempt in 1 2 3 4; do
    ms=$(( pruned_ms * (40 - 8 * attempt) / 100 ))
    [ "$ms" -lt 20 ] && ms=20
    t=$(printf '%d.%03d' $(( ms / 1000 )) $(( ms % 1000 )))
    rm -f "$dir/term.h5"
    echo "+ sweep 2 pruned.cfg -o term.h5 &  # SIGTERM to the ranks after ${t}s"
    "${pruned[@]}" -o "$dir/term.h5" >/dev/null 2>"$dir/term.err" &
    pid=$!
    cdse_wait_started "$dir/term.h5" "$pid"
    sleep "$t"
    kill -TERM $(pgrep -P "$pid") 2>/dev/null || true
    rc=0
    wait "$pid" || rc=$?
    if [ "$rc" -eq 3 ]; then
        interrupted=1
        break
    fi
    [ "$rc" -eq 0 ] || {
        cat "$dir/term.err"
        echo "prune_identity: SIGTERM: exit $rc, expected 3"
        exit 1
    }
    echo "prune_identity: finished before the signal; again, earlier"
done
[ "$interrupted" -eq 1 ] || { echo "prune_identity: SIGTERM never interrupted the sweep"; exit 1; }
echo "+ sweep 2 pruned.cfg -o term.h5 --resume"
sweep 2 "$dir/pruned.cfg" "$dir/term.h5" --resume >/dev/null
run "$py" "$CDSE_SRC/tests/py/compare_stores.py" "$dir/pruned2.h5" "$dir/term.h5"

# Bad input: file:line, the key, what is allowed; exit 1.
bad() { # METRIC STORE EXPECTED
    job "$1" "$2" true >"$dir/bad.cfg"
    rc=0
    "$CLUSTERDSE" sweep "$dir/bad.cfg" -o "$dir/bad.h5" 2>"$dir/bad.err" >/dev/null || rc=$?
    cat "$dir/bad.err"
    [ "$rc" -eq 1 ] || { echo "prune_identity: exit $rc for $1/$2, expected 1"; exit 1; }
    grep -q "bad.cfg:27: key 'objective.prune'" "$dir/bad.err"
    grep -q "$3" "$dir/bad.err"
}
bad time_to_train feasible 'allowed: prune = true with store = "best"'
bad mfu best 'allowed: prune with metric time_per_iteration, tokens_per_s'
# A top so large that a pruned chunk's candidates (top per group of a unit, here 8 groups of
# 1,000,000 capped at the unit's 3,932,160 configurations of 584 bytes: 2.3 GB) exceed one MPI
# message: refused before the sweep starts, naming the line of objective.top; no store.
cat >"$dir/top.cfg" <<CFG
models = ( "gpt3-1.3b" );
systems = ( "h100-sxm-dgx" );
space = { gpus = 64; tp = [ 1, 2, 4, 8, 16 ]; pp = [ 1, 2, 4, 8 ]; cp = [ 1, 2 ];
  vpp = [ 1, 2, 3, 4 ]; microbatch = [ 1, 2, 4, 8, 16, 32, 64, 128 ];
  global_batch = [ 256, 512, 1024, 2048 ]; recompute = [ "none", "selective", "full" ];
  sequence_parallel = [ true, false ]; zero = [ 0, 1, 2, 3 ]; precision = [ "bf16", "fp8" ];
  flash_attention = [ true, false ]; tp_comm_overlap = [ true, false ];
  offload = [ "none", "optimizer", "activations", "optimizer+activations" ]; };
objective = { store = "best"; prune = true;
  top = 1000000; group_by = [ "global_batch", "precision" ]; };
CFG
rc=0
"$CLUSTERDSE" sweep "$dir/top.cfg" -o "$dir/top.h5" 2>"$dir/top.err" >/dev/null || rc=$?
cat "$dir/top.err"
[ "$rc" -eq 1 ] || { echo "prune_identity: exit $rc for top = 1000000, expected 1"; exit 1; }
grep -q "top.cfg:10: objective.top = 1000000: .*allowed: a smaller top" "$dir/top.err"
[ ! -e "$dir/top.h5" ] || { echo "prune_identity: a refused sweep left a store"; exit 1; }
echo "prune_identity: ok"
