#!/usr/bin/env bash
# The reference is complete (issue 26): every name the program's own tables hold is documented,
# and every command's --help names what the command accepts. The names are read from the build,
# never listed here:
#   commands  `clusterdse --help`                          -> README.md's Commands table
#   job keys  `clusterdse eval --help-keys`                -> docs/job-file.md (and README.md's
#             summary: top-level keys, space axes, system keys)
#   columns   `clusterdse eval --help-columns`             -> docs/eval.md
#   metrics   objective.metric's allowed values            -> docs/eval.md, README.md, and the
#             (`--help-keys`)                                 --help of eval, top and compare
#   statuses  the /counts rows of a store                  -> docs/eval.md's status table, README.md
# A name counts as documented where it stands in backticks (`name`) or, for a key, as the
# key column of a table row.
set -euo pipefail
: "${CLUSTERDSE:?}" "${CDSE_SRC:?}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
missing=0
miss() { echo "reference_complete: $*"; missing=$((missing + 1)); }
has() { grep -qF -- "\`$1\`" "$2" || grep -qE -- "^\| *\`?$(sed 's/[][().*]/\\&/g' <<<"$1")\`? *\|" "$2"; }

echo "+ $CLUSTERDSE --help"
commands=$("$CLUSTERDSE" --help | awk '/^  [a-z]+ / { print $1 }')
[ -n "$commands" ] || { echo "reference_complete: no commands in clusterdse --help"; exit 1; }
commands_table=$(sed -n '/^## Commands/,/^## /p' "$CDSE_SRC/README.md")
for c in $commands; do
    grep -qF "\`clusterdse $c" <<<"$commands_table" || miss "command '$c' is not in README.md's Commands table"
done

echo "+ $CLUSTERDSE eval --help-keys"
keys=$("$CLUSTERDSE" eval --help-keys | awk '!/^#/ { print $1 }')
[ "$(wc -l <<<"$keys")" -gt 100 ] || { echo "reference_complete: too few keys"; exit 1; }
for k in $keys; do
    has "$k" "$CDSE_SRC/docs/job-file.md" || miss "job key '$k' is not in docs/job-file.md"
done

# README.md's summary of the job file names every top-level key, every space axis and every
# system key (the full reference is docs/job-file.md).
summary=$(sed -n '/^| part | keys/,/^$/p' "$CDSE_SRC/README.md")
for k in $(grep -E '^[a-z_]+$|^space\.[a-z_]+$|^systems\[\]\.[a-z_]+$' <<<"$keys" | sort -u); do
    word=${k##*.}
    grep -qw -- "$word" <<<"$summary" || miss "job key '$k' is not in README.md's job-file summary"
done

echo "+ $CLUSTERDSE eval --help-columns"
columns=$("$CLUSTERDSE" eval --help-columns | awk '!/^#/ { print $1 }')
[ "$(wc -l <<<"$columns")" -gt 50 ] || { echo "reference_complete: too few columns"; exit 1; }
for c in $columns; do
    has "$c" "$CDSE_SRC/docs/eval.md" || miss "column '$c' is not in docs/eval.md"
done

metrics=$("$CLUSTERDSE" eval --help-keys | sed -n 's/^objective\.metric .*Allowed: one of //p' | tr -d '",' )
[ "$(wc -w <<<"$metrics")" -ge 8 ] || { echo "reference_complete: too few metrics: $metrics"; exit 1; }
for cmd in eval top compare; do
    help=$("$CLUSTERDSE" "$cmd" --help)
    for m in $metrics; do
        grep -qw -- "$m" <<<"$help" || miss "metric '$m' is not in 'clusterdse $cmd --help'"
    done
done
for m in $metrics; do
    has "$m" "$CDSE_SRC/docs/eval.md" || miss "metric '$m' is not in docs/eval.md"
    has "$m" "$CDSE_SRC/README.md" || miss "metric '$m' is not in README.md"
done

# Every status, as the store counts them: a one-configuration sweep's /counts.
cat >"$tmp/one.cfg" <<'CFG'
name = "one";
models = ( "gpt3-125m" );
systems = ( "a100-80g-dgx" );
space = { gpus = [ 8 ]; global_batch = [ 64 ]; };
CFG
echo "+ $CLUSTERDSE sweep $tmp/one.cfg -o $tmp/one.h5 --quiet"
"$CLUSTERDSE" sweep "$tmp/one.cfg" -o "$tmp/one.h5" --quiet >/dev/null
statuses=$(PYTHONPATH="$CDSE_SRC/python" /usr/bin/python3 -c '
import sys, clusterdse
c = clusterdse.load(sys.argv[1], "counts")
print("\n".join(n for n in c["name"] if n not in ("evaluated", "feasible", "pruned")))' "$tmp/one.h5")
[ "$(wc -l <<<"$statuses")" -ge 15 ] || { echo "reference_complete: too few statuses: $statuses"; exit 1; }
for s in $statuses; do
    has "$s" "$CDSE_SRC/docs/eval.md" || miss "status '$s' is not in docs/eval.md"
    has "$s" "$CDSE_SRC/README.md" || miss "status '$s' is not in README.md"
done

echo "reference_complete: $(wc -w <<<"$commands") commands, $(wc -l <<<"$keys") keys," \
    "$(wc -l <<<"$columns") columns, $(wc -w <<<"$metrics") metrics, $(wc -l <<<"$statuses") statuses"
[ "$missing" -eq 0 ] || { echo "reference_complete: $missing missing"; exit 1; }
echo "reference_complete: ok"
