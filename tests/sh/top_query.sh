#!/usr/bin/env bash
# clusterdse top against pandas: the same rows, in the same order, for filters over numbers and
# names, ranking by a metric (both directions) and by a column; --csv carries the columns of the
# store; h5dump reads the store.
set -euo pipefail
: "${CLUSTERDSE:?}" "${CDSE_SRC:?}"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
py=/usr/bin/python3
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
run() { echo "+ $*"; "$@"; }

cat >"$dir/job.cfg" <<CFG
name = "topq";
models = ( "llama3-8b", "gpt3-13b" );
systems = ( "a100-80g-dgx", "h100-sxm-dgx" );
space = {
  gpus = [ 16, 64 ];
  tp = [ 1, 2, 4, 8 ];
  pp = [ 1, 2, 4 ];
  microbatch = [ 1, 2 ];
  global_batch = [ 256 ];
  recompute = [ "none", "selective", "full" ];
  sequence_parallel = [ true, false ];
  zero = [ 0, 1 ];
};
objective = { metric = "time_per_iteration"; top = 4; group_by = [ "model" ]; store = "all"; };
CFG
run mpirun -np 2 "$CLUSTERDSE" sweep "$dir/job.cfg" -o "$dir/s.h5" --quiet >/dev/null

# check ARGS... -- PYTHON_EXPR: the indices printed by `top ARGS --csv` equal those of the
# pandas expression (over df, the decoded /results; only feasible rows unless --all).
check() {
    local args=() expr
    while [ "$1" != "--" ]; do args+=("$1"); shift; done
    expr=$2
    echo "+ $CLUSTERDSE top $dir/s.h5 ${args[*]} --csv"
    "$CLUSTERDSE" top "$dir/s.h5" "${args[@]}" --csv >"$dir/top.csv"
    PYTHONPATH="$CDSE_SRC/python" "$py" - "$dir/s.h5" "$dir/top.csv" "$expr" <<'PY'
import sys
import pandas as pd
from clusterdse import load as read_table
df = read_table(sys.argv[1])
ok = df[df.status == "ok"]
want = list(eval(sys.argv[3], {"df": df, "ok": ok, "pd": pd})["index"])
got = list(pd.read_csv(sys.argv[2])["index"])
if got != want:
    sys.exit(f"top_query: got {got}, pandas says {want}")
print(f"    {len(got)} rows as pandas: {got[:6]}{' ...' if len(got) > 6 else ''}")
PY
}

check -n 5 --where 'tp==8 && mem_total_gib<70' -- \
    'ok[(ok.tp == 8) & (ok.mem_total_gib < 70)].sort_values(["time_per_iteration_s", "index"]).head(5)'
check -n 7 --where 'model=="gpt3-13b" && (recompute=="selective" || !(pp<=2)) && sequence_parallel==true' -- \
    'ok[(ok.model == "gpt3-13b") & ((ok.recompute == "selective") | ~(ok.pp <= 2)) & ok.sequence_parallel].sort_values(["time_per_iteration_s", "index"]).head(7)'
check -n 6 --by tokens_per_s --where 'system=="a100-80g-dgx"' -- \
    'ok[ok.system == "a100-80g-dgx"].assign(k=-ok.tokens_per_s).sort_values(["k", "index"]).head(6)'
check -n 4 --by mem_total_gib --desc -- \
    'ok.assign(k=-ok.mem_total_gib).sort_values(["k", "index"]).head(4)'
check -n 5 --by mem_total_gib --all --where 'status=="oom"' -- \
    'df[df.status == "oom"].sort_values(["mem_total_gib", "index"]).head(5)'
check -n 100 --from top -- \
    '__import__("clusterdse").load("'"$dir/s.h5"'", "top").sort_values(["time_per_iteration_s", "index"]).head(100)'
# -n beyond the rows (fuzz finding B2: -n 49060489557738170 wrapped an up-front allocation and
# crashed): every matching row, nothing allocated from N.
check -n 49060489557738170 -- 'ok.sort_values(["time_per_iteration_s", "index"])'
check -n 9223372036854775807 --by mem_total_gib --where 'tp==8' -- \
    'ok[ok.tp == 8].sort_values(["mem_total_gib", "index"])'

# export: every stored row, in the order stored, the same text as top's CSV rows.
run "$CLUSTERDSE" export "$dir/s.h5" -o "$dir/export.csv"
run "$CLUSTERDSE" export "$dir/s.h5" --feasible --where 'tp==8 || pp==4' -o "$dir/export_where.csv"
echo "+ $CLUSTERDSE top $dir/s.h5 --all -n 1000000000 --by index --csv"
"$CLUSTERDSE" top "$dir/s.h5" --all -n 1000000000 --by index --csv >"$dir/by_index.csv"
PYTHONPATH="$CDSE_SRC/python" "$py" - "$dir/s.h5" "$dir" <<'PY'
import sys
import pandas as pd
import clusterdse
df = clusterdse.load(sys.argv[1])
full = pd.read_csv(sys.argv[2] + "/export.csv")
assert list(full["index"]) == list(df["index"]), "export: not the rows of /results in order"
assert len(full) == len(df) and len(df) > 1000, len(df)
sub = pd.read_csv(sys.argv[2] + "/export_where.csv")
ok = df[df.status == "ok"]
want = list(ok[(ok.tp == 8) | (ok.pp == 4)]["index"])
assert list(sub["index"]) == want, (list(sub["index"])[:5], want[:5])
print(f"    export: {len(full)} rows as /results, --feasible --where: {len(sub)} rows as pandas")
PY
# The same text for each row as top's CSV (rows stored by chunk arrival: compared sorted).
cmp <(sort "$dir/export.csv") <(sort "$dir/by_index.csv")
rc=0; "$CLUSTERDSE" export "$dir/s.h5" --from nothing >/dev/null 2>&1 || rc=$?
[ "$rc" = 1 ] || { echo "top_query: export --from nothing: exit $rc, want 1"; exit 1; }
rc=0; "$CLUSTERDSE" export "$dir/s.h5" --where 'nosuch==1' >/dev/null 2>"$dir/err" || rc=$?
[ "$rc" = 1 ] && grep -q "clusterdse export: --where" "$dir/err" ||
    { echo "top_query: export --where nosuch==1: exit $rc"; cat "$dir/err"; exit 1; }

# --csv has every column of the store, in its order.
"$py" - "$dir/s.h5" "$dir/top.csv" <<'PY'
import sys, h5py, pandas as pd
cols = list(h5py.File(sys.argv[1], "r")["results"].dtype.names)
got = list(pd.read_csv(sys.argv[2]).columns)
assert got == cols, (got, cols)
print(f"    --csv columns = /results columns ({len(cols)})")
PY
# h5dump reads the store: counts by status name.
run h5dump -d /counts "$dir/s.h5" >"$dir/dump.txt"
grep -q '"evaluated"' "$dir/dump.txt"
run h5dump -H "$dir/s.h5" >"$dir/dump.txt"
grep -q 'DATASET "results"' "$dir/dump.txt"
echo "top_query: ok"
