#!/usr/bin/env bash
# The held-out report (validate --holdout, tests/validation/holdout.csv) is no gate on the errors,
# but a configuration that ran in public must be evaluable and feasible in the model. This test
# shows the check can fail: on altered copies of the file, validate must exit 1 when a row is
# `oom` (MT-NLG 530B on one pipeline stage: 66B parameters of the 8-way split on each GPU) and when a row
# names an unknown stack; 2 on an unknown `compare` value, naming holdout.csv:LINE; 0 on the
# committed file.
set -euo pipefail
: "${CDSE_SRC:?} ${CDSE_BUILD:?}"
validate="$CDSE_BUILD/tests/validate"
holdout="$CDSE_SRC/tests/validation/holdout.csv"
if [[ ! -x "$validate" ]]; then
    echo "validation_holdout: no $validate" >&2
    exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
expect() { # STATUS FILE WHAT
    local rc=0
    echo "+ $validate --holdout $2 $CDSE_SRC"
    "$validate" --holdout "$2" "$CDSE_SRC" > "$tmp/out.txt" 2> "$tmp/err.txt" || rc=$?
    if [[ $rc -ne $1 ]]; then
        echo "validation_holdout: $3: exit $rc, expected $1" >&2
        tail -25 "$tmp/out.txt" "$tmp/err.txt" >&2
        exit 1
    fi
    echo "ok: $3 (exit $rc)"
}
expect 0 "$holdout" "the committed holdout.csv"
grep -q "every held-out run evaluable and feasible" "$tmp/out.txt"
# MTNLG-280 with pp 1, dp 280 and a batch of 2240 (divisible): 530B / 8 parameters per GPU
/usr/bin/python3 - "$holdout" "$tmp/oom.csv" "$tmp/stack.csv" "$tmp/compare.csv" \
    "$tmp/later.csv" "$tmp/mixed.csv" <<'PY'
import csv, sys
src, oom, stack, compare, later, mixed = sys.argv[1:]
rows = list(csv.DictReader(open(src)))
cols = list(rows[0].keys())
def write(path, edit):
    out = [dict(r) for r in rows]
    edit(out)
    w = csv.DictWriter(open(path, "w", newline=""), fieldnames=cols, lineterminator="\n")
    w.writeheader()
    w.writerows(out)
def one_stage(out):
    r = next(r for r in out if r["id"] == "MTNLG-280")
    r["pp"], r["dp"], r["gbs"] = "1", "280", "2240"
write(oom, one_stage)
write(stack, lambda out: out[0].update(stack="no-such-stack"))
write(compare, lambda out: out[0].update(compare="speed"))
# Row 6 (file line 7) is a later row of the first group: checked as its first row is.
assert rows[5]["group"] == rows[0]["group"] and rows[5]["compare"] != "iter_time"
write(later, lambda out: out[5].update(compare="speed"))
write(mixed, lambda out: out[5].update(compare="iter_time"))
PY
expect 1 "$tmp/oom.csv" "a held-out run that is oom"
grep -q "MTNLG-280 *FAILED: status oom" "$tmp/out.txt"
expect 1 "$tmp/stack.csv" "a held-out row whose stack does not load"
grep -q "FAILED: system or stack not loadable" "$tmp/out.txt"
expect 2 "$tmp/compare.csv" "an unknown compare"
grep -q "compare.csv:2: compare 'speed'" "$tmp/err.txt"
expect 2 "$tmp/later.csv" "an unknown compare on a later row of a group"
grep -q "later.csv:7: compare 'speed'" "$tmp/err.txt"
expect 2 "$tmp/mixed.csv" "a later row comparing another quantity than its group"
grep -q "mixed.csv:7: compare 'iter_time', system 'a100-80g-dgx': every row of group" "$tmp/err.txt"
