#!/usr/bin/env bash
# scripts/regen_docs.py's check of numbers in prose (<!-- figures: COMMAND -->): a paragraph
# that contains every line COMMAND prints passes (line breaks and indentation inside it count as
# one space), one that lacks a line fails naming it, in a run and with --check alike, and the
# paragraph is never rewritten; a fenced block right after it is still a block.
set -euo pipefail
: "${CDSE_SRC:?}"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
regen() {
    echo "+ /usr/bin/python3 $CDSE_SRC/scripts/regen_docs.py $* $dir doc.md" >&2
    (cd "$dir" && /usr/bin/python3 "$CDSE_SRC/scripts/regen_docs.py" "$@" "$dir" doc.md)
}
cat >"$dir/doc.md" <<'EOF'
Intro.

<!-- figures: printf '1.59x longer\nUSD 82,000 at pp 4\n' -->
The pool trains 1.59x longer, and the cost-optimal
  answer is USD 82,000 at pp
4 (a paragraph broken over lines).

<!-- regen: echo 7 -->
```
7
```
EOF
cp "$dir/doc.md" "$dir/orig.md"
regen --check >"$dir/out" 2>&1 || { cat "$dir/out"; echo "FAIL: a matching paragraph"; exit 1; }
regen >"$dir/out" 2>&1 || { cat "$dir/out"; echo "FAIL: run refused a matching paragraph"; exit 1; }
cmp "$dir/doc.md" "$dir/orig.md" || { echo "FAIL: the document was rewritten"; exit 1; }

# The build now says 1.6x: the paragraph's 1.59x is stale.
sed -i "s/printf '1.59x/printf '1.6x/" "$dir/doc.md"
cp "$dir/doc.md" "$dir/orig.md"
for mode in --check ""; do
    if regen $mode >"$dir/out" 2>&1; then
        cat "$dir/out"
        echo "FAIL: a stale figure passed (${mode:-run})"
        exit 1
    fi
    grep -q "doc.md:4: the paragraph does not say what .* prints now: '1.6x longer'" "$dir/out" ||
        { cat "$dir/out"; echo "FAIL: the message does not name the missing text"; exit 1; }
    if grep -q "'USD 82,000 at pp 4'" "$dir/out"; then
        cat "$dir/out"
        echo "FAIL: a text the paragraph has is named"
        exit 1
    fi
    cmp "$dir/doc.md" "$dir/orig.md" || { echo "FAIL: the paragraph was rewritten"; exit 1; }
done

# A block's output that changed is still found after a figures paragraph.
sed -i "s/regen: echo 7/regen: echo 8/; s/printf '1.6x/printf '1.59x/" "$dir/doc.md"
if regen --check >"$dir/out" 2>&1; then
    cat "$dir/out"
    echo "FAIL: the block after the paragraph was not checked"
    exit 1
fi
grep -q "doc.md:9: \`echo 8\` prints otherwise" "$dir/out" || { cat "$dir/out"; exit 1; }
echo "regen_figures: ok"
