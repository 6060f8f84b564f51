#!/usr/bin/env bash
# Bad inputs to sweep and top end with one message and exit 1 or 2, never a crash or a hang:
# a corrupt file, a foreign HDF5 file, a truncated store given to --resume and to top; --resume
# with a different job; an existing output without --force; a bad job file on 3 ranks; a
# --where expression with an error.
set -uo pipefail
: "${CLUSTERDSE:?}" "${CDSE_SRC:?}"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1
py=/usr/bin/python3
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
failed=0

# expect CODES PATTERN COMMAND...: the exit code is one of CODES (e.g. "1 2") and stderr
# matches PATTERN.
expect() {
    local codes=$1 pattern=$2
    shift 2
    echo "+ $*"
    "$@" >"$dir/out" 2>"$dir/err"
    local rc=$?
    sed 's/^/    /' "$dir/err" | grep -v -- '----\|^ *$' | head -4
    if [[ " $codes " != *" $rc "* ]]; then
        echo "FAIL: exit $rc, expected one of: $codes"
        failed=1
    elif ! grep -q -- "$pattern" "$dir/err"; then
        echo "FAIL: stderr does not match '$pattern'"
        failed=1
    fi
}

cat >"$dir/job.cfg" <<CFG
name = "bad";
models = ( "llama3-8b" );
systems = ( "h100-sxm-dgx" );
space = { gpus = [ 8, 16 ]; tp = [ 1, 2, 4, 8 ]; pp = [ 1, 2 ]; global_batch = [ 128 ]; };
objective = { top = 3; store = "all"; };
CFG
sed 's/gpus = \[ 8, 16 \]/gpus = [ 8, 32 ]/' "$dir/job.cfg" >"$dir/other.cfg"
sweep=(mpirun -np 2 "$CLUSTERDSE" sweep)

echo "+ ${sweep[*]} $dir/job.cfg -o $dir/good.h5 --quiet"
"${sweep[@]}" "$dir/job.cfg" -o "$dir/good.h5" --quiet >/dev/null || { echo "FAIL: good sweep"; failed=1; }

# Not HDF5 at all.
head -c 100000 /dev/urandom >"$dir/random.h5"
expect "1 2" "not an HDF5 file" "${sweep[@]}" "$dir/job.cfg" -o "$dir/random.h5" --resume
expect "1 2" "not an HDF5 file" "$CLUSTERDSE" top "$dir/random.h5"
# HDF5, but not a store.
"$py" -c "import h5py,sys; h5py.File(sys.argv[1],'w')['x'] = [1, 2, 3]" "$dir/foreign.h5"
expect "1 2" "not a clusterdse store" "${sweep[@]}" "$dir/job.cfg" -o "$dir/foreign.h5" --resume
expect "1 2" "not a clusterdse store" "$CLUSTERDSE" top "$dir/foreign.h5"
# A store cut short.
size=$(stat -c %s "$dir/good.h5")
head -c $(( size / 3 )) "$dir/good.h5" >"$dir/cut.h5"
expect "1 2" "cut.h5" "${sweep[@]}" "$dir/job.cfg" -o "$dir/cut.h5" --resume
expect "1 2" "cut.h5" "$CLUSTERDSE" top "$dir/cut.h5"
# A store with its superblock overwritten.
cp "$dir/good.h5" "$dir/zeroed.h5"
dd if=/dev/zero of="$dir/zeroed.h5" bs=1 count=64 conv=notrunc status=none
expect "1 2" "zeroed.h5" "$CLUSTERDSE" top "$dir/zeroed.h5"
# A missing file for top.
expect "1 2" "missing.h5" "$CLUSTERDSE" top "$dir/missing.h5"
# Another job's store.
expect "1" "different job" "${sweep[@]}" "$dir/other.cfg" -o "$dir/good.h5" --resume
# An existing output is not overwritten without --force, and stays as it was.
before=$(md5sum <"$dir/good.h5")
expect "1" "exists" "${sweep[@]}" "$dir/job.cfg" -o "$dir/good.h5"
[ "$before" = "$(md5sum <"$dir/good.h5")" ] || { echo "FAIL: store changed"; failed=1; }
# A bad job file: one message (from rank 0) for all 3 ranks, exit 1.
sed 's/tp = \[ 1, 2, 4, 8 \]/tp = [ 1, -2 ]/' "$dir/job.cfg" >"$dir/badjob.cfg"
expect "1" "badjob.cfg:" mpirun -np 3 "$CLUSTERDSE" sweep "$dir/badjob.cfg" -o "$dir/x.h5"
n=$(grep -c "^clusterdse sweep:" "$dir/err")
[ "$n" -eq 1 ] || { echo "FAIL: $n error messages, expected 1"; failed=1; }
[ ! -e "$dir/x.h5" ] || { echo "FAIL: a store was created for a bad job"; failed=1; }
# Filter errors point at the character.
expect "1" "position 10" "$CLUSTERDSE" top "$dir/good.h5" --where 'tp==8 && mem<70'
grep -q "^  *\^" "$dir/err" || { echo "FAIL: no caret line"; failed=1; }
expect "1" "no value \"llama9\"" "$CLUSTERDSE" top "$dir/good.h5" --where 'model=="llama9"'
expect "1" "neither a metric" "$CLUSTERDSE" top "$dir/good.h5" --by speed
[ "$failed" -eq 0 ] && echo "sweep_badstore: ok"
exit "$failed"
