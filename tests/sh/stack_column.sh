#!/usr/bin/env bash
# The stack column names the software stack of every row, in CSV, the human table, the HDF5
# store (an enumeration whose names /stacks lists), --where and the dry run; a job without a
# stacks axis names the built-in stack "default".
set -euo pipefail
: "${CLUSTERDSE:?} ${CDSE_SRC:?}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
fail() { echo "stack_column: $*" >&2; exit 1; }
run() { echo "+ $*" >&2; "$@"; }
job=$CDSE_SRC/tests/jobs/stacks.cfg

run "$CLUSTERDSE" eval "$job" --csv > eval.csv
# 16 rows, 8 per stack, in index order (the stacks axis varies slowest of the two swept here).
awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "stack") s = i; next } { n[$s]++ }
         END { exit !(n["megatron-lm-2021"] == 8 && n["megatron-core-2025"] == 8 && length(n) == 2) }' \
    eval.csv || fail "eval --csv: not 8 rows of each stack"
run "$CLUSTERDSE" eval "$job" -n 3 > table.txt
grep -q '^#.* stack ' table.txt || fail "the table has no stack column"
run "$CLUSTERDSE" eval "$job" --dry-run > dry.txt
grep -Eq '^  stacks +2  megatron-lm-2021 megatron-core-2025$' dry.txt || fail "dry run: stack names"

run mpirun -np 2 "$CLUSTERDSE" sweep "$job" -o s.h5 --quiet > /dev/null
run "$CLUSTERDSE" top s.h5 -n 100 --all --csv --where 'stack=="megatron-lm-2021"' > old.csv
[ "$(tail -n +2 old.csv | wc -l)" -eq 8 ] || fail "--where stack==: not 8 rows"
awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "stack") s = i; next }
         $s != "megatron-lm-2021" { exit 1 }' old.csv || fail "--where stack==: another stack"
set +e
"$CLUSTERDSE" top s.h5 --where 'stack=="megatron-lm-1999"' 2> err.txt
rc=$?
set -e
[ "$rc" -eq 1 ] && grep -q 'megatron-core-2025' err.txt || fail "an unknown stack: exit $rc"
PYTHONPATH="$CDSE_SRC/python" /usr/bin/python3 - s.h5 <<'PY'
import sys
import clusterdse
df = clusterdse.load(sys.argv[1])
cats = list(df["stack"].cat.categories)
assert cats == ["megatron-lm-2021", "megatron-core-2025", "default"], cats
assert df["stack"].value_counts().to_dict() == {"megatron-lm-2021": 8, "megatron-core-2025": 8,
                                                "default": 0}, df["stack"].value_counts()
names = list(clusterdse.load(sys.argv[1], "stacks")["name"])
assert names == cats, names
PY
# Without a stacks axis every row runs on the built-in stack.
run "$CLUSTERDSE" eval "$CDSE_SRC/tests/jobs/good_small.cfg" --csv > small.csv
awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "stack") s = i; next } $s != "default" { exit 1 }' \
    small.csv || fail "a job without stacks: not every row \"default\""
echo "stack_column: ok"
