#!/usr/bin/env bash
# Commands that read a store, on damaged stores and on paths that are not stores: one line on
# stderr and exit 2 for damage (1 for what the user gave wrongly), never a crash, a hang, an
# HDF5 error stack, a Python traceback, or output left behind. The damage is made at fixed
# places found in the file, so each run repeats. Checked:
#   - a good store: no HDF5 messages, even with CDSE_HDF5_ERRORS=1 (no HDF5 call fails);
#     top and export on a damaged /results chunk (read in a thread of their own);
#   - compare: damaged root attributes and /models (HDF5 1.10.8 crashes on them), a damaged
#     /results chunk, a failed write of its output;
#   - a FIFO or a directory given as the store: bad input at once (top, export, compare,
#     report, sweep --resume);
#   - verify on the damaged stores, alone and on 2 ranks (every rank stops with exit 2), and
#     on a FIFO;
#   - fit on damaged probe stores (/probes' type, header, header continuation), on files
#     that are no probe store, and on a FIFO;
#   - report on a damaged store, with a --system or --gpus the store lacks, and with h5py
#     crashing: nothing left in DIR or of DIR.
set -uo pipefail
: "${CLUSTERDSE:?}" "${CDSE_SRC:?}"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1
py=/usr/bin/python3
"$py" -c 'import h5py' 2>/dev/null || { echo "store_readers: SKIP: python3-h5py missing (scripts/setup.sh)"; exit 77; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cd "$dir" || exit 1
failed=0
fail() {
    echo "FAIL: $*"
    failed=1
}

# Under AddressSanitizer a read past a buffer inside libhdf5 (the damaged size of /models'
# datatype) is reported by ASan, which ends the process, before the guard's SIGSEGV handler sees
# a crash: upstream, accepted in that build when the report's first frames are libhdf5's (as
# tests/sh/fuzz_findings.sh does for H2).
asan=0
ldd "$CLUSTERDSE" | grep libasan >/dev/null && asan=1
hdf5_asan_report() {
    [ "$asan" = 1 ] && grep -A8 "ERROR: AddressSanitizer" err.txt | grep -q "libhdf5" &&
        echo "    (an AddressSanitizer report inside libhdf5: upstream, accepted in this build)"
}

# expect CODE PATTERN COMMAND...: exit code CODE within 20 s, and stderr exactly one line that
# matches PATTERN (grep -E), with no HDF5 error stack and no traceback.
expect() {
    local want=$1 pattern=$2
    shift 2
    echo "+ $*"
    timeout 20 "$@" >out.txt 2>err.txt
    local rc=$?
    sed 's/^/    /' err.txt | head -3
    hdf5_asan_report && return
    [ "$rc" = "$want" ] || fail "exit $rc, expected $want"
    [ "$(wc -l <err.txt)" = 1 ] || fail "stderr has $(wc -l <err.txt) lines, expected 1"
    grep -Eq -- "$pattern" err.txt || fail "stderr does not match /$pattern/"
}

# expect_quiet COMMAND...: exit 0 and nothing on stderr.
expect_quiet() {
    echo "+ $*"
    "$@" >out.txt 2>err.txt
    local rc=$?
    sed 's/^/    /' err.txt | head -3
    [ "$rc" = 0 ] || fail "exit $rc, expected 0"
    [ -s err.txt ] && fail "stderr is not empty"
}

# expect_mpi CODE PATTERN COMMAND...: for mpirun, whose own lines follow the program's: exit
# code CODE within 60 s, PATTERN in stderr, no crash of a rank.
expect_mpi() {
    local want=$1 pattern=$2
    shift 2
    echo "+ $*"
    timeout 60 "$@" >out.txt 2>err.txt
    local rc=$?
    grep -v -- '----\|^ *$' err.txt | sed 's/^/    /' | head -3
    hdf5_asan_report && return
    [ "$rc" = "$want" ] || fail "exit $rc, expected $want"
    grep -Eq -- "$pattern" err.txt || fail "stderr does not match /$pattern/"
    grep -q 'signal\|HDF5-DIAG' err.txt && fail "a rank crashed or HDF5 printed its stack"
}

# Damaged copies are made at places found by structure (h5py gives the object headers), each
# checked against what h5py reads there, so that a change of layout fails here, not later.
cat >damage.py <<'PY'
def damage(src, dst, changes):
    """A copy of src with the bytes at each (offset, bytes) replaced."""
    data = bytearray(open(src, "rb").read())
    for at, value in changes:
        data[at:at + len(value)] = value
    open(dst, "wb").write(data)


def compound_at(data, header, itemsize):
    """The datatype message of a compound (class 6) of itemsize bytes after an object header:
    class and version, 3 bytes of bit fields, then the size (4 bytes, little-endian)."""
    return next(i for i in range(header, header + 4096)
                if data[i] & 0x0F == 6 and int.from_bytes(data[i + 4:i + 8], "little") == itemsize)
PY

cat >job.cfg <<CFG
name = "readers";
models = ( "gpt3-125m" );
systems = ( "a100-80g-dgx" );
space = { gpus = [ 8, 16 ]; tp = [ 1, 2 ]; pp = [ 1, 2 ]; global_batch = [ 64 ]; };
objective = { top = 3; store = "all"; };
CFG
echo "+ $CLUSTERDSE sweep job.cfg -o good.h5 --quiet"
"$CLUSTERDSE" sweep job.cfg -o good.h5 --quiet >/dev/null || fail "the sweep"

# A good store: no HDF5 messages, even with them on (nothing fails: the deflate filter is
# looked up, not asked for on tables without it).
expect_quiet env CDSE_HDF5_ERRORS=1 "$CLUSTERDSE" top good.h5
expect_quiet env CDSE_HDF5_ERRORS=1 "$CLUSTERDSE" compare good.h5
# The middle of /results' first chunk (a deflate stream: inflate or its Adler-32 check fails).
# top and export read /results in a thread of their own, where HDF5's messages were on.
echo "+ $py - (/results damaged)"
"$py" - <<'PY' || fail "making the damaged copy"
import h5py
from damage import damage
with h5py.File("good.h5", "r") as f:
    chunk = f["results"].id.get_chunk_info(0)
# A quarter into the compressed chunk: the rows' own data (the middle of the deflate stream can
# be the 1,016 unused rows of the chunk, whose loss changes nothing: seen with 103 columns).
damage("good.h5", "chunk.h5", [(chunk.byte_offset + chunk.size // 4, b"\0" * 16)])
PY
for cmd in top export; do
    expect 2 "a damaged store: rows 0\.\.8 of /results cannot be read" "$CLUSTERDSE" $cmd chunk.h5
done

# compare: as top (no HDF5 messages, crashes inside HDF5 under the guard), and a failed write of
# its output is exit 2. The datatype size of the root attribute job_name (HDF5 1.10.8 crashes
# in H5Aexists on it) and the size of /models' compound type (a crash in H5Dread).
echo "+ $py - (root attribute and /models damaged)"
"$py" - <<'PY' || fail "making the damaged copies"
import h5py
from damage import compound_at, damage
good = open("good.h5", "rb").read()
# Attribute message (version 1): version, reserved, name size (2), datatype size (2), dataspace
# size (2), then the name, NUL-padded.
at = good.find(b"job_name\0")
assert at > 8 and good[at - 8] == 1 and good[at - 6] == 9, "the job_name attribute moved"
damage("good.h5", "attr.h5", [(at - 3, b"\xd6")])  # datatype size 0x0008 -> 0xd608
with h5py.File("good.h5", "r") as f:
    at = compound_at(good, h5py.h5o.get_info(f["models"].id).addr, f["models"].dtype.itemsize)
damage("good.h5", "models.h5", [(at + 7, b"\xfd")])  # its size's top byte: 4 GB more
PY
expect_quiet "$CLUSTERDSE" compare good.h5
echo "+ $CLUSTERDSE compare good.h5 >/dev/full"
"$CLUSTERDSE" compare good.h5 >/dev/full 2>err.txt
rc=$?
sed 's/^/    /' err.txt
[ "$rc" = 2 ] || fail "exit $rc, expected 2"
grep -q '^clusterdse compare: writing the output failed' err.txt || fail "no message"
for f in attr.h5 models.h5; do
    # (HDF5 crashes on attr.h5 in some builds, caught by the guard, and reports it in others)
    expect 2 "^clusterdse compare: $f: a damaged (clusterdse )?store" "$CLUSTERDSE" compare "$f"
done
expect 2 "^clusterdse compare: chunk.h5: a damaged store: rows 0\.\.8 of /results" \
    "$CLUSTERDSE" compare chunk.h5

# Not a regular file: refused at once (bad input) by every command that reads a store.
mkfifo fifo.h5
regular='allowed: a regular file \(an HDF5 file written by clusterdse\)$'
for cmd in top export compare; do
    expect 1 "^clusterdse $cmd: fifo.h5 is not a regular file \(a FIFO, device or socket\); $regular" \
        "$CLUSTERDSE" $cmd fifo.h5
done
expect 1 "^clusterdse report: fifo.h5 is not a regular file" "$CLUSTERDSE" report fifo.h5 -o rep
[ -e rep ] && fail "report made rep"
expect 1 "^clusterdse top: $dir is a directory; $regular" "$CLUSTERDSE" top "$dir"
expect_mpi 1 "^clusterdse sweep: fifo.h5 is not a regular file" \
    mpirun -np 2 "$CLUSTERDSE" sweep job.cfg -o fifo.h5 --resume --quiet

# verify: damage is exit 2, on every rank, none crashing (the store's job_path was read outside
# the guard, before the store was opened).
for f in attr.h5 models.h5; do
    expect 2 "^clusterdse verify: $f: a damaged" "$CLUSTERDSE" verify "$f"
    expect_mpi 2 "^clusterdse verify: $f: a damaged" mpirun -np 2 "$CLUSTERDSE" verify "$f"
done
expect 1 "^clusterdse verify: fifo.h5 is not a regular file" "$CLUSTERDSE" verify fifo.h5

# fit: a damaged probe store is exit 2: the size of /probes' compound type, its object header,
# and the address of the header's continuation (a crash in HDF5).
echo "+ mpirun -np 2 $CLUSTERDSE probe $CDSE_SRC/calibration/plans/quick.cfg -o p.h5"
mpirun -np 2 "$CLUSTERDSE" probe "$CDSE_SRC/calibration/plans/quick.cfg" -o p.h5 >/dev/null ||
    fail "the probe"
echo "+ $py - (probe store damaged)"
"$py" - <<'PY' || fail "making the damaged copies"
import h5py
from damage import compound_at, damage
probes = open("p.h5", "rb").read()
with h5py.File("p.h5", "r") as f:
    header = h5py.h5o.get_info(f["probes"].id).addr
    at = compound_at(probes, header, f["probes"].dtype.itemsize)
damage("p.h5", "p_type.h5", [(at + 5, b"\xfd")])
damage("p.h5", "p_header.h5", [(header, b"\xff" * 8)])
# Object header version 1: 16 bytes, then the first message: type 0x10 is a continuation,
# whose 8-byte address follows the message's own 8 bytes of header.
assert probes[header] == 1 and probes[header + 16] == 0x10, "/probes' header changed"
damage("p.h5", "p_cont.h5", [(header + 24, b"\xff" * 8)])
PY
echo "not a store" >junk.h5
for f in p_type.h5 p_header.h5 p_cont.h5; do
    expect 2 "^clusterdse fit: $f: a damaged (probe )?store" "$CLUSTERDSE" fit "$f" -o fit.cfg
    [ -e fit.cfg ] && fail "fit wrote fit.cfg from $f"
done
expect 1 '^clusterdse fit: junk.h5: not a probe store, nor a nccl-tests or OSU log' "$CLUSTERDSE" fit junk.h5 -o fit.cfg
expect 1 '^clusterdse fit: good.h5: no /probes table' "$CLUSTERDSE" fit good.h5 -o fit.cfg
expect 1 '^clusterdse fit: cannot open no.h5: No such file' "$CLUSTERDSE" fit no.h5 -o fit.cfg
expect 1 "^clusterdse fit: fifo.h5 is not a regular file" "$CLUSTERDSE" fit fifo.h5 -o fit.cfg

# report: damage is exit 2, a --system or --gpus the store lacks exit 1, and no failure leaves
# a directory it made, or a file in one that existed.
if "$py" -c 'import matplotlib, pandas' 2>/dev/null; then
    expect 2 '^clusterdse report: attr.h5: a damaged store: .*\(Damaged stores\)$' \
        "$CLUSTERDSE" report attr.h5 -o new/deep/rep
    [ -e new ] && fail "report left new/ behind"
    mkdir kept && echo before >kept/report.html
    expect 2 '^clusterdse report: attr.h5: a damaged store' "$CLUSTERDSE" report attr.h5 -o kept
    [ "$(ls -A kept)" = report.html ] && [ "$(cat kept/report.html)" = before ] ||
        fail "report changed kept/: $(ls -A kept)"
    expect 1 '^clusterdse report: --system nosuch: not a system of good.h5; allowed: a100-80g-dgx$' \
        "$CLUSTERDSE" report good.h5 -o rep --system nosuch
    expect 1 '^clusterdse report: --gpus 7: no feasible configuration with 7 GPUs in /results; sizes with one: 8, 16$' \
        "$CLUSTERDSE" report good.h5 -o rep --gpus 7
    [ -e rep ] && fail "report left rep/ behind"
    # HDF5 crashing inside h5py: the drawing process dies, the report says so and removes what
    # it made.
    echo "+ $py - (a report whose reading crashes) good.h5 -o crash/rep"
    PYTHONPATH="$CDSE_SRC/python" "$py" - good.h5 -o crash/rep 2>err.txt <<'PY'
import os, signal, sys
import clusterdse.report as report
def crash(args, staging):
    open(os.path.join(staging, "report.html"), "w").write("partial")
    os.kill(os.getpid(), signal.SIGSEGV)
report.write_report = crash
sys.exit(report.main(sys.argv[1:]))
PY
    rc=$?
    sed 's/^/    /' err.txt
    [ "$rc" = 2 ] || fail "exit $rc, expected 2"
    grep -q '^clusterdse report: good.h5: a damaged store: HDF5 crashed reading it' err.txt ||
        fail "no message"
    [ -e crash ] && fail "report left crash/ behind"
    echo "+ $CLUSTERDSE report good.h5 -o rep"
    "$CLUSTERDSE" report good.h5 -o rep >/dev/null 2>err.txt && [ -s rep/report.html ] &&
        [ ! -s err.txt ] && [ "$(ls -A rep)" = report.html ] || fail "report of good.h5"
else
    echo "store_readers: report not drawn: python3-matplotlib/pandas missing (scripts/setup.sh)"
fi

[ "$failed" = 0 ] && echo "store_readers: ok"
exit "$failed"
