#!/usr/bin/env bash
# space.checkpoint (issue 28, item 5: the axis added through the axis table alone): sweeping the
# checkpoint scheme on one stack gives, row for row, the goodput figures of the stack files that
# differ from it only in their `checkpoint` key (jobs/goodput/meta-llama3-2024-{async,memory}.cfg,
# written for the README's goodput study before the axis existed); "stack" keeps the stack's
# own scheme; the column is stored as an HDF5 enumeration and --where takes its names; a wrong
# value is an error naming file:line and the allowed values.
set -euo pipefail
: "${CLUSTERDSE:?} ${CDSE_SRC:?}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
fail() { echo "checkpoint_axis: $*" >&2; exit 1; }
run() { echo "+ $*" >&2; "$@"; }

common='models = ( "llama3-405b" );
systems = ( { base = "h100-sxm-dgx"; name = "h100"; gpus = [ 16384 ];
              storage = { write_bandwidth = 250.0; }; } );
objective = { metric = "time_to_train_effective"; tokens = 15.6e12; top = 3; store = "all"; };'
space='tp = [ 8 ]; pp = [ 16 ]; vpp = [ 1, 2 ]; global_batch = [ 2048 ];
         recompute = [ "none", "full" ]; sequence_parallel = [ true ]; zero = [ 1 ];'
cat > stacks.cfg <<EOF
name = "by-stacks";
$common
stacks = ( "meta-llama3-2024", "$CDSE_SRC/jobs/goodput/meta-llama3-2024-async.cfg",
           "$CDSE_SRC/jobs/goodput/meta-llama3-2024-memory.cfg" );
space = { $space };
EOF
cat > axis.cfg <<EOF
name = "by-axis";
$common
stacks = ( "meta-llama3-2024" );
space = { $space checkpoint = [ "sync", "async", "memory" ]; };
EOF
cols=vpp,recompute,status,checkpoint_gib,checkpoint_stall_s,checkpoint_interval_s,lost_work_s,goodput,time_to_train_effective_days
# pick CSV COLUMNS: those columns of an `eval --csv` output, in that order.
pick() {
    /usr/bin/python3 -c 'import csv, sys
rows = csv.DictReader(open(sys.argv[1]))
cols = sys.argv[2].split(",")
print(",".join(cols))
for r in rows:
    print(",".join(r[c] for c in cols))' "$1" "$2"
}
# The stack axis varies fastest in stacks.cfg as the checkpoint axis does in axis.cfg (both are
# the last axes with several values), so the rows pair up in order.
run "$CLUSTERDSE" eval stacks.cfg --csv > stacks-all.csv
run "$CLUSTERDSE" eval axis.cfg --csv > axis-all.csv
pick stacks-all.csv "$cols" > stacks.csv
pick axis-all.csv "$cols,checkpoint" > axis.csv
[ "$(wc -l < stacks.csv)" -eq 13 ] || fail "expected 12 rows: $(cat stacks.csv)"
diff <(cut -d, -f1-9 axis.csv) stacks.csv || fail "the axis and the stack files disagree"
grep -q ',ok,.*,async$' axis.csv || fail "no feasible async row: $(cat axis.csv)"
# An asynchronous save stalls for the copy to host memory only (goodput.c): less than sync.
awk -F, 'NR > 1 && $3 == "ok" { s[$1 $2 $10] = $5 }
         END { if (!(s["1fullasync"] < s["1fullsync"])) exit 1 }' axis.csv ||
    fail "async does not stall less than sync"

# "stack" (the default) is the stack's own scheme: the sync rows of meta-llama3-2024.
sed 's/checkpoint = \[ "sync", "async", "memory" \];/checkpoint = [ "stack" ];/' axis.cfg > default.cfg
run "$CLUSTERDSE" eval default.cfg --csv > default-all.csv
pick default-all.csv "$cols" > default.csv
diff default.csv <(awk -F, 'NR == 1 || $10 == "sync"' axis.csv | cut -d, -f1-9) ||
    fail "checkpoint \"stack\" is not the stack's scheme"

# The store keeps the column as an enumeration of the row's names; --where takes them.
run mpirun -np 2 "$CLUSTERDSE" sweep axis.cfg -o axis.h5 --quiet > /dev/null
/usr/bin/python3 - axis.h5 <<'PY'
import sys
import h5py
with h5py.File(sys.argv[1], "r") as f:
    t = f["results"].dtype["checkpoint"]
    names = h5py.check_enum_dtype(t)
    assert names == {"stack": 0, "sync": 1, "async": 2, "memory": 3}, names
    assert sorted(set(f["results"]["checkpoint"].tolist())) == [1, 2, 3]
    assert list(f["space"]["checkpoint"][:]) == [1, 2, 3]
PY
run "$CLUSTERDSE" top axis.h5 --where 'checkpoint == "memory"' --csv -n 100 > memory.csv
[ "$(tail -n +2 memory.csv | wc -l)" -eq 2 ] || fail "--where checkpoint: $(cat memory.csv)"

# A value that is not a scheme: file:line, the key and the allowed values.
sed 's/"memory" \]/"lazy" ]/' axis.cfg > bad.cfg
if run "$CLUSTERDSE" eval bad.cfg > out.txt 2> err.txt; then fail "bad.cfg accepted"; fi
grep -q "bad.cfg:[0-9]*: key 'space.checkpoint'.*\"stack\", \"sync\", \"async\", \"memory\"" err.txt ||
    fail "error message: $(cat err.txt)"
echo "checkpoint_axis: ok"
