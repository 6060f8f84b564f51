#!/usr/bin/env bash
# Issue 28 item 4: no function in src/ longer than the limit (default 80 lines), counted from the
# signature's first line to the closing brace, both included. Works on clang-formatted C: a
# definition starts with a line at column 0 that begins with an identifier and holds a '(' (the
# signature, possibly continued on the following lines), is followed by a line that is exactly
# '{', and ends at the next line that is exactly '}'.
# Usage: scripts/function_lengths.sh [SRC_ROOT] [LIMIT]. Prints "file:line name length" for
# every function over the limit (longest first) and exits 1 if there is any, 0 otherwise; a body
# at column 0 whose signature it cannot find is reported too (so that none is skipped silently).
set -euo pipefail
root="${1:-$(cd "$(dirname "$0")/.." && pwd)}"
limit="${2:-80}"
out=$(find "$root/src" -name '*.c' -print | LC_ALL=C sort | while read -r f; do
    awk -v file="${f#"$root"/}" -v limit="$limit" '
        /^[A-Za-z_][A-Za-z0-9_ \t*]*[A-Za-z0-9_*][ \t]*\(/ || /^[A-Za-z_][A-Za-z0-9_]*\(/ {
            if (!infn) { start = NR; sig = $0; pending = 1 }
            next
        }
        pending && /^\{$/ { infn = 1; pending = 0; next }
        /^\{$/ { printf "0 %s:%d (a body whose signature this script does not recognise)\n", file, NR }
        pending && /^[ \t]/ { next }            # signature continued on indented lines
        { pending = 0 }
        infn && /^\}$/ {
            infn = 0
            len = NR - start + 1
            if (len > limit) {
                name = sig; sub(/\(.*/, "", name); n = split(name, w, /[ \t*]+/); name = w[n]
                printf "%d %s:%d %s %d\n", len, file, start, name, len
            }
        }
    ' "$f"
done | sort -k1,1nr -k2,2 | cut -d' ' -f2-)
if [ -n "$out" ]; then
    echo "functions over $limit lines in $root/src:"
    echo "$out"
    exit 1
fi
echo "no function over $limit lines in $root/src"
