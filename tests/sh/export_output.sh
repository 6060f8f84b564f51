#!/usr/bin/env bash
# clusterdse export's output and its failures: a damaged /results chunk gives top and export one
# message and exit 2 (the reading thread silences HDF5's own error stack).
set -euo pipefail
: "${CLUSTERDSE:?}" "${CDSE_SRC:?}"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
py=/usr/bin/python3
"$py" -c 'import h5py' 2>/dev/null || { echo "export_output: SKIP: python3-h5py missing"; exit 77; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cd "$dir"
# expect CODE PATTERN CMD...: exit code CODE and PATTERN (grep -E) in stderr.
expect() {
    local want=$1 pattern=$2
    shift 2
    echo "+ $*"
    set +e
    "$@" >out.txt 2>err.txt
    local rc=$?
    set -e
    sed 's/^/    /' err.txt | head -4
    [ "$rc" = "$want" ] || { echo "export_output: exit $rc, expected $want"; exit 1; }
    [ -z "$pattern" ] || grep -Eq -- "$pattern" err.txt ||
        { echo "export_output: stderr lacks /$pattern/"; exit 1; }
}
# one_line: the last command's stderr is one line (no HDF5 error stack).
one_line() {
    [ "$(wc -l <err.txt)" = 1 ] || { echo "export_output: $(wc -l <err.txt) lines on stderr"; exit 1; }
}

echo "+ mpirun -np 2 $CLUSTERDSE sweep $CDSE_SRC/tests/jobs/report.cfg -o s.h5 --quiet"
mpirun -np 2 "$CLUSTERDSE" sweep "$CDSE_SRC/tests/jobs/report.cfg" -o s.h5 --quiet >/dev/null

# A store whose first /results chunk has 64 bytes overwritten in its middle.
cp s.h5 damaged.h5
"$py" - damaged.h5 <<'PY'
import sys, h5py
with h5py.File(sys.argv[1], "r") as f:
    chunk = f["results"].id.get_chunk_info(0)
with open(sys.argv[1], "r+b") as out:
    out.seek(chunk.byte_offset + chunk.size // 2)
    out.write(b"\xff" * 64)
PY
expect 2 'damaged.h5: a damaged store: rows 0\.\.' "$CLUSTERDSE" top damaged.h5
one_line
expect 2 'damaged.h5: a damaged store: rows 0\.\.' "$CLUSTERDSE" export damaged.h5
one_line

echo "export_output: ok"
