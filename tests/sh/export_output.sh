#!/usr/bin/env bash
# clusterdse export's output and its failures: a damaged /results chunk gives top and export one
# message and exit 2 (the reading thread silences HDF5's own error stack); -o is never the store
# read (by name, symbolic or hard link), an HDF5 file, a directory, or an existing file without
# --force; -o is written whole or not at all: a write failure (a file-size limit), a damaged
# store and SIGTERM leave an existing FILE as it was and no temporary file behind.
: "${CDSE_SRC:?}"
source "$CDSE_SRC/tests/sh/lib/expect.sh"
py=/usr/bin/python3
"$py" -c 'import h5py' 2>/dev/null || { echo "export_output: SKIP: python3-h5py missing"; exit 77; }
# one_line: the last command's stderr is one line (no HDF5 error stack).
one_line() {
    [ "$(wc -l <err.txt)" = 1 ] || { echo "export_output: $(wc -l <err.txt) lines on stderr"; exit 1; }
}
# same FILE SUM: FILE's md5sum is SUM (it was left as it was).
same() {
    [ "$(md5sum <"$1")" = "$2" ] || { echo "export_output: $1 changed"; exit 1; }
}
# no_temporary: no temporary file of export is left in this directory.
no_temporary() {
    if ls -A | grep -q '^\.'; then
        echo "export_output: left behind: $(ls -A | grep '^\.' | tr '\n' ' ')"
        exit 1
    fi
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
# The store's path once (the store's message begins with it; it was printed twice).
expect 2 '^clusterdse top: damaged.h5: a damaged store: rows 0\.\.' "$CLUSTERDSE" top damaged.h5
one_line
expect 2 '^clusterdse export: damaged.h5: a damaged store: rows 0\.\.' "$CLUSTERDSE" export damaged.h5
one_line

# -o is never the store read, whatever the name, nor another store, nor a directory.
sum=$(md5sum <s.h5)
cp s.h5 other.h5
ln -s s.h5 link.h5
ln s.h5 hard.h5
mkdir adir
expect 1 '^clusterdse export: s\.h5 is the store being read; allowed: another file$' \
    "$CLUSTERDSE" export s.h5 -o s.h5
expect 1 'the store being read' "$CLUSTERDSE" export s.h5 -o s.h5 --force
expect 1 'link\.h5 is the same file as s\.h5, the store being read' \
    "$CLUSTERDSE" export s.h5 -o link.h5 --force
expect 1 'hard\.h5 is the same file as s\.h5' "$CLUSTERDSE" export s.h5 -o hard.h5 --force
expect 1 'other\.h5 is an HDF5 file \(a store\?\), not overwritten even with --force' \
    "$CLUSTERDSE" export s.h5 -o other.h5 --force
expect 1 '^clusterdse export: adir is a directory; allowed: a file name$' \
    "$CLUSTERDSE" export s.h5 -o adir
same s.h5 "$sum"
same other.h5 "$sum"
"$CLUSTERDSE" top s.h5 -n 1 >/dev/null

# An existing file needs --force (as fit and probe); a new one has the mode a new file gets.
expect 0 '' "$CLUSTERDSE" export s.h5 -o rows.csv
touch new.txt
[ "$(stat -c %a rows.csv)" = "$(stat -c %a new.txt)" ] || { echo "export_output: mode"; exit 1; }
rows=$(md5sum <rows.csv)
echo "keep me" >keep.csv
kept=$(md5sum <keep.csv)
expect 1 '^clusterdse export: keep\.csv exists; use --force to overwrite it$' \
    "$CLUSTERDSE" export s.h5 -o keep.csv
same keep.csv "$kept"
# Through a symbolic link, --force replaces the file the link points to.
cp keep.csv target.csv
ln -s target.csv via.csv
expect 0 '' "$CLUSTERDSE" export s.h5 -o via.csv --force
[ -L via.csv ] || { echo "export_output: the link was replaced"; exit 1; }
same target.csv "$rows"
no_temporary

# A write that fails (file-size limit of 8 KiB; SIGXFSZ would kill the process otherwise),
# a damaged store: exit 2, an existing FILE as it was, nothing else left.
expect 2 '^clusterdse export: writing limited\.csv: File too large$' \
    bash -c 'ulimit -f 8; exec "$0" export s.h5 -o limited.csv' "$CLUSTERDSE"
[ ! -e limited.csv ] || { echo "export_output: limited.csv left ($(stat -c %s limited.csv) bytes)"; exit 1; }
expect 2 'File too large' bash -c 'ulimit -f 8; exec "$0" export s.h5 -o keep.csv --force' \
    "$CLUSTERDSE"
same keep.csv "$kept"
expect 2 'damaged.h5: a damaged store' "$CLUSTERDSE" export damaged.h5 -o keep.csv --force
same keep.csv "$kept"
expect 2 'damaged.h5: a damaged store' "$CLUSTERDSE" export damaged.h5 -o fresh.csv
[ ! -e fresh.csv ] || { echo "export_output: fresh.csv left"; exit 1; }
no_temporary

# SIGTERM during an export (a slow filter over a larger store): exit 143, FILE as it was, the
# temporary removed.
cat >big.cfg <<'CFG'
name = "big";
models = ( "llama3-8b", "gpt3-13b" );
systems = ( "a100-80g-dgx", "h100-sxm-dgx" );
space = { gpus = [ 16, 32, 64, 128 ]; tp = [ 1, 2, 4, 8 ]; pp = [ 1, 2, 4, 8 ];
          microbatch = [ 1, 2, 4, 8 ]; global_batch = [ 256, 512, 1024 ];
          recompute = [ "none", "selective", "full" ]; sequence_parallel = [ true, false ];
          zero = [ 0, 1, 2, 3 ]; };
objective = { store = "all"; };
CFG
echo "+ mpirun -np 2 $CLUSTERDSE sweep big.cfg -o big.h5 --quiet"
mpirun -np 2 "$CLUSTERDSE" sweep big.cfg -o big.h5 --quiet >/dev/null
sum900=$(printf 'tp + %.0s' $(seq 899))tp
slow="($sum900) + ($sum900) + ($sum900) + ($sum900) + ($sum900) < 0"
echo "+ $CLUSTERDSE export big.h5 --where '(tp + tp + ... < 0' -o keep.csv --force & kill -TERM"
"$CLUSTERDSE" export big.h5 --where "$slow" -o keep.csv --force 2>err.txt &
pid=$!
for _ in $(seq 1000); do
    ls -A | grep -q '^\.keep\.csv\.' && break
    kill -0 "$pid" 2>/dev/null || { echo "export_output: export ended before SIGTERM"; exit 1; }
    sleep 0.01
done
kill -TERM "$pid"
rc=0
wait "$pid" || rc=$?
[ "$rc" = 143 ] || { echo "export_output: exit $rc after SIGTERM, expected 143"; exit 1; }
same keep.csv "$kept"
no_temporary

echo "export_output: ok"
