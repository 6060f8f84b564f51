#!/usr/bin/env bash
# tests/validation/validate_rows.c models a GPT row from its columns with an output layer of its
# own when the published size counts one and the tied size does not (untied_by_size). This test runs
# the Megatron-LM README's 7.1B row (30 layers, hidden 4096, vocabulary 131,072, sequence 4096,
# tp 2, pp 1) under three names and checks the first stage's weights against a hand count:
#   per layer on one of 2 TP ranks: attention 33,554,432 (QKV 4096 x 6144 = 25,165,824, projection
#   2048 x 4096 = 8,388,608), MLP 2 x 4096 x 8192 = 67,108,864, biases 10,240 + 12,288, two
#   norms 16,384: 100,702,208;
#   30 layers 3,021,066,240; input embedding 131,072 x 4096 / 2 = 268,435,456; position table
#   4096 x 4096 = 16,777,216; final norm 8,192. Tied: 3,306,287,104 parameters x 2 B = 6.158 GiB;
#   untied (+268,435,456): 3,574,722,560 x 2 B = 6.658 GiB.
# "GPT-7.1B": untied 7.13B rounds to 7.1, tied 6.60B does not -> 6.66 GiB. "GPT-6.6B": tied.
# "GPT-7B": both 6.60B and 7.13B round to 7 -> the default, tied.
set -euo pipefail
: "${CDSE_SRC:?} ${CDSE_BUILD:?}"
validate="$CDSE_BUILD/tests/validate"
# shellcheck source=tests/sh/lib/common.bash
. "$CDSE_SRC/tests/sh/lib/common.bash"
published=$(cdse_published_csv)
if [[ ! -x "$validate" || ! -f "$published" ]] || ! grep -q '^M24-2,' "$published"; then
    echo "validation_untied: no $validate or no row M24-2 in $published" >&2
    exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cdse_validation_tree "$tmp"
cp "$CDSE_SRC/tests/validation/known_gaps.txt" "$tmp/tests/validation/"
{
    head -1 "$published"
    for name in 7.1B 6.6B 7B; do
        grep '^M24-2,' "$published" | sed "s/^M24-2,/U-$name,/; s/,GPT-7\.1B,/,GPT-$name,/"
    done
} > "$tmp/rows.csv"
rc=0
"$validate" "$tmp/rows.csv" "$tmp" -v > "$tmp/out.txt" 2> "$tmp/err.txt" || rc=$?
if [[ $rc -gt 1 ]]; then # 1: the group's targets (three copies of one row); 2: bad input
    echo "validation_untied: validate exit $rc" >&2
    cat "$tmp/err.txt" >&2
    exit 1
fi
weights() { # ID -> the weights GiB of its memory line
    awk -v id="$1" '$1 == id { found = 1; next } found && /memory GiB/ { print $4; exit }' \
        "$tmp/out.txt"
}
check() { # ID EXPECTED_GIB
    local got
    got=$(weights "$1")
    if [[ "$got" != "$2" ]]; then
        echo "validation_untied: $1 weights '$got' GiB, expected $2 (hand count)" >&2
        cat "$tmp/out.txt" >&2
        exit 1
    fi
    echo "ok: $1 weights $got GiB"
}
check U-7.1B 6.66
check U-6.6B 6.16
check U-7B 6.16
echo "validation_untied: ok"
