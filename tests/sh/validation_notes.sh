#!/usr/bin/env bash
# tests/validation/validate_rows.c reads a recipe's recompute_num_layers N from a row's notes
# (stated_layers): the held-out row HMB2511-H1 states "recompute_num_layers 5" (Megatron-Bridge
# LLAMA3_8B_H100_FP8_CS_BASE_CONFIG: full, block, 5 of the 32 layers) and is evaluated with
# recompute_layers 5. The same row with the setting negated in its notes ("no
# recompute_num_layers 5", "not recompute_num_layers 5") states no recomputation and must not run
# recompute_layers 5. Stating all 32 layers of the single stage ("recompute_num_layers 32", valid
# in Megatron-Core up to the layers per pipeline rank) recomputes every layer: full recomputation,
# recompute_layers 0, not a fallback to the open choices.
set -euo pipefail
: "${CDSE_SRC:?} ${CDSE_BUILD:?}"
validate="$CDSE_BUILD/tests/validate"
# shellcheck source=tests/sh/lib/common.bash
. "$CDSE_SRC/tests/sh/lib/common.bash"
holdout="$CDSE_SRC/tests/validation/holdout.csv"
if [[ ! -x "$validate" ]] || ! grep -q '^HMB2511-H1,.*recompute_num_layers 5 ' "$holdout"; then
    echo "validation_notes: no $validate or no row HMB2511-H1 stating recompute_num_layers 5" >&2
    exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cdse_validation_tree "$tmp"
{
    head -1 "$holdout"
    grep '^HMB2511-H1,' "$holdout" | sed 's/^HMB2511-H1,/N-stated,/'
    grep '^HMB2511-H1,' "$holdout" |
        sed 's/^HMB2511-H1,/N-no,/; s/recompute_num_layers 5 /no recompute_num_layers 5 /'
    grep '^HMB2511-H1,' "$holdout" |
        sed 's/^HMB2511-H1,/N-not,/; s/recompute_num_layers 5 /not recompute_num_layers 5 /'
    grep '^HMB2511-H1,' "$holdout" |
        sed 's/^HMB2511-H1,/N-all,/; s/recompute_num_layers 5 /recompute_num_layers 32 /'
} > "$tmp/rows.csv"
rc=0
"$validate" --holdout "$tmp/rows.csv" "$tmp" -v > "$tmp/out.txt" 2> "$tmp/err.txt" || rc=$?
if [[ $rc -ne 0 ]]; then
    echo "validation_notes: validate exit $rc" >&2
    cat "$tmp/err.txt" >&2
    exit 1
fi
layers() { # ID -> the recompute_layers its configuration line shows, 0 without
    awk -v id="$1" '$1 == id && /\[mbs/ {
        n = 0; if (match($0, /recompute_layers [0-9]+/)) n = substr($0, RSTART + 17, RLENGTH - 17)
        print n; exit }' "$tmp/out.txt"
}
check() { # ID EXPECTED
    local got
    got=$(layers "$1")
    if [[ "$got" != "$2" ]]; then
        echo "validation_notes: $1 ran recompute_layers '$got', expected $2" >&2
        cat "$tmp/out.txt" >&2
        exit 1
    fi
    echo "ok: $1 recompute_layers $got"
}
recompute() { # ID -> the recomputation its configuration line shows ("[mbs 1 vpp 1 full ...")
    awk -v id="$1" '$1 == id && $2 == "[mbs" { print $6; exit }' "$tmp/out.txt"
}
if grep -q 'N-all: the stated' "$tmp/out.txt" || [[ "$(recompute N-all)" != full ]]; then
    echo "validation_notes: N-all (recompute_num_layers 32 of 32) not run with full recomputation" >&2
    cat "$tmp/out.txt" >&2
    exit 1
fi
check N-all 0
check N-stated 5
check N-no 0
check N-not 0
echo "validation_notes: ok"
