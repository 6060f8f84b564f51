#!/usr/bin/env bash
# Issue 31, M7 and M9: what the commands accept as an output.
# M7: an output path longer than 1023 bytes (CDSE_OUTPUT_PATH_LIMIT) is refused with exit 1 and
#     nothing is written, by sweep -o, export -o, report -o, probe -o and fit -o; 1023 bytes work
#     (before, sweep wrote its store under the first 1023 bytes of a 1040-byte name, exit 0).
# M9: sweep --force replaces only a clusterdse store: the job file it reads (by its name or a
#     hard link), a CSV, an HDF5 file that is not a store and a directory are refused with exit 1
#     and left as they were; a store and a damaged store are replaced; a store another sweep
#     holds locked is refused, naming the lock (before, --force replaced any file, exit 0).
set -uo pipefail
: "${CLUSTERDSE:?}" "${CDSE_SRC:?}"
py=/usr/bin/python3
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
failed=0

# expect CODE PATTERN COMMAND...: the exit code is CODE and stderr matches PATTERN.
expect() {
    local code=$1 pattern=$2
    shift 2
    echo "+ $*" | cut -c1-300
    "$@" >"$dir/out" 2>"$dir/err"
    local rc=$?
    head -2 "$dir/err" | cut -c1-300 | sed 's/^/    /'
    if [ "$rc" != "$code" ]; then
        echo "FAIL: exit $rc, expected $code"
        failed=1
    elif [ -n "$pattern" ] && ! grep -q -- "$pattern" "$dir/err"; then
        echo "FAIL: stderr does not match '$pattern'"
        failed=1
    fi
}

cat >"$dir/a.cfg" <<'CFG'
name = "outputs-a";
models = ( "gpt3-1.3b" );
systems = ( "a100-80g-dgx" );
space = { gpus = [8, 16]; tp = [1, 2]; global_batch = 64; };
CFG
sed 's/outputs-a/outputs-b/; s/gpt3-1.3b/gpt3-125m/' "$dir/a.cfg" >"$dir/b.cfg"
expect 0 "" "$CLUSTERDSE" sweep "$dir/a.cfg" -o "$dir/store.h5" --quiet

# ---- M7: long paths -------------------------------------------------------------------------
cd "$dir" || exit 1
d=$(printf 'd%.0s' $(seq 1 200))
mkdir -p "$d/$d/$d/$d/$d"
long="$d/$d/$d/$d/$d/out_store_name_longer_than_limit.h5" # 1040 bytes, as the reproducer's
echo "a path of ${#long} bytes"
limit="the path has ${#long} bytes; allowed: at most 1023"
expect 1 "$limit" "$CLUSTERDSE" sweep "$dir/a.cfg" -o "$long" --quiet
expect 1 "$limit" "$CLUSTERDSE" sweep "$dir/a.cfg" -o "$long" --force --quiet
expect 1 "$limit" "$CLUSTERDSE" export "$dir/store.h5" -o "$long"
expect 1 "$limit" "$CLUSTERDSE" report "$dir/store.h5" -o "$long"
expect 1 "$limit" "$CLUSTERDSE" probe "$CDSE_SRC/calibration/plans/node.cfg" -o "$long"
expect 1 "$limit" "$CLUSTERDSE" fit "$dir/store.h5" -o "$long"
left=$(find "$d" -type f | wc -l)
if [ "$left" -ne 0 ]; then
    echo "FAIL: $left files written under the long folder: $(find "$d" -type f | cut -c1-60)"
    failed=1
fi
# Exactly the limit: 4 x 201 bytes of folders and a 219-byte name make 1023 bytes.
name=$(printf 'x%.0s' $(seq 1 216)).h5
fits="$d/$d/$d/$d/$name"
echo "a path of ${#fits} bytes"
expect 0 "" "$CLUSTERDSE" sweep "$dir/a.cfg" -o "$fits" --quiet
expect 0 "" "$CLUSTERDSE" top "$fits" -n 1
[ -f "$fits" ] || { echo "FAIL: no store at the 1023-byte path"; failed=1; }
cd - >/dev/null || exit 1

# ---- M9: what --force replaces ----------------------------------------------------------------
cp "$dir/a.cfg" "$dir/job.cfg"
cp "$dir/job.cfg" "$dir/job.keep"
ln "$dir/job.cfg" "$dir/alias.cfg"
echo "a,b" >"$dir/data.csv"
"$py" -c "import h5py, sys; h5py.File(sys.argv[1], 'w')['x'] = [1, 2, 3]" "$dir/foreign.h5"
cp "$dir/foreign.h5" "$dir/foreign.keep"
mkdir "$dir/folder.h5"
expect 1 "is the job file this sweep reads" "$CLUSTERDSE" sweep "$dir/job.cfg" -o "$dir/job.cfg" --force --quiet
expect 1 "is the job file this sweep reads" "$CLUSTERDSE" sweep "$dir/job.cfg" -o "$dir/alias.cfg" --force --quiet
cmp -s "$dir/job.cfg" "$dir/job.keep" || { echo "FAIL: the job file was changed"; failed=1; }
expect 1 "data.csv is not a clusterdse store (not an HDF5 file), not replaced even with --force" \
    "$CLUSTERDSE" sweep "$dir/a.cfg" -o "$dir/data.csv" --force --quiet
[ "$(cat "$dir/data.csv")" = "a,b" ] || { echo "FAIL: data.csv was changed"; failed=1; }
expect 1 "foreign.h5 is an HDF5 file but not a clusterdse store" \
    "$CLUSTERDSE" sweep "$dir/a.cfg" -o "$dir/foreign.h5" --force --quiet
cmp -s "$dir/foreign.h5" "$dir/foreign.keep" || { echo "FAIL: foreign.h5 was changed"; failed=1; }
expect 1 "is a directory" "$CLUSTERDSE" sweep "$dir/a.cfg" -o "$dir/folder.h5" --force --quiet
ls "$dir"/*.tmp >/dev/null 2>&1 && { echo "FAIL: a temporary was left: $(ls "$dir"/*.tmp)"; failed=1; }

# A store is replaced, by another job's store.
expect 0 "" "$CLUSTERDSE" sweep "$dir/b.cfg" -o "$dir/store.h5" --force --quiet
expect 0 "" "$CLUSTERDSE" top "$dir/store.h5" -n 1
grep -q "gpt3-125m" "$dir/out" || { echo "FAIL: the replaced store is not job b's"; failed=1; }
# A damaged store (its signature intact, the rest of its first 64 KiB overwritten) is replaced.
cp "$dir/store.h5" "$dir/damaged.h5"
"$py" - "$dir/damaged.h5" <<'PY'
import sys
with open(sys.argv[1], "r+b") as f:
    f.seek(8)
    f.write(b"\x55" * 65536)
PY
expect 2 "damaged" "$CLUSTERDSE" top "$dir/damaged.h5" -n 1
expect 0 "" "$CLUSTERDSE" sweep "$dir/a.cfg" -o "$dir/damaged.h5" --force --quiet
expect 0 "" "$CLUSTERDSE" top "$dir/damaged.h5" -n 1
# A store that another sweep writes (here flock(1) holds the writer's lock) is refused.
echo "+ flock $dir/store.h5 (the writer's lock, as a running sweep holds it)"
expect 1 "is being written by another sweep (it holds the lock on $dir/store.h5)" \
    flock "$dir/store.h5" "$CLUSTERDSE" sweep "$dir/a.cfg" -o "$dir/store.h5" --force --quiet
expect 1 "is being written by another sweep (it holds the lock on $dir/store.h5)" \
    flock "$dir/store.h5" "$CLUSTERDSE" sweep "$dir/b.cfg" -o "$dir/store.h5" --resume --quiet
expect 0 "" "$CLUSTERDSE" top "$dir/store.h5" -n 1
grep -q "gpt3-125m" "$dir/out" || { echo "FAIL: the locked store was changed"; failed=1; }

[ "$failed" -eq 0 ] && echo "sweep_outputs: ok"
exit "$failed"
