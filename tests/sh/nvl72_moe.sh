#!/usr/bin/env bash
# GB200 NVL72 in a sweep space: `nodes` counts 4-GPU compute trays (18 trays = 72 GPUs, 64 trays =
# 256 GPUs, 3.56 NVLink domains); MoE expert parallelism folds over the data-parallel ranks; an
# EP group of 64 consecutive ranks stays inside one 72-GPU NVLink domain, so the hierarchical
# deepep dispatcher and the flat all-to-all cost the same, while an EP group of 128 spans two
# domains and deepep crosses the network once per domain a token touches (less time).
set -u
bin=${CLUSTERDSE:?set CLUSTERDSE to the clusterdse binary}
src=${CDSE_SRC:?set CDSE_SRC to the source tree}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
fail() {
    echo "FAIL: $*"
    failures=$((failures + 1))
}
echo "+ $bin eval $src/tests/jobs/nvl72_moe.cfg --csv"
"$bin" eval "$src/tests/jobs/nvl72_moe.cfg" --csv >"$tmp/out" 2>"$tmp/err" ||
    fail "eval exit $?: $(cat "$tmp/err")"
# Columns by name: gpus ep status t_ep_comm_s moe_dispatcher.
awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
         { print $c["gpus"], $c["ep"], $c["moe_dispatcher"], $c["status"], $c["t_ep_comm_s"] }' \
    "$tmp/out" >"$tmp/rows"
cat "$tmp/rows"
# 12 configurations: 2 cluster sizes x 3 ep x 2 dispatchers.
[ "$(wc -l <"$tmp/rows")" -eq 12 ] || fail "expected 12 rows"
grep -q '^72 8 alltoall ok ' "$tmp/rows" || fail "18 trays (72 GPUs), ep 8: not feasible"
grep -q '^72 128 alltoall ep_invalid ' "$tmp/rows" || fail "ep 128 on 72 GPUs must be ep_invalid"
ep_time() { awk -v g="$1" -v e="$2" -v d="$3" '$1 == g && $2 == e && $3 == d { print $5 }' "$tmp/rows"; }
a=$(ep_time 256 64 alltoall)
b=$(ep_time 256 64 deepep)
[ -n "$a" ] && [ "$a" = "$b" ] || fail "ep 64 inside one NVLink domain: alltoall $a, deepep $b differ"
a=$(ep_time 256 128 alltoall)
b=$(ep_time 256 128 deepep)
awk -v a="$a" -v b="$b" 'BEGIN { exit !(a > 0 && b > 0 && b < a) }' ||
    fail "ep 128 over two domains: deepep $b not below alltoall $a"
[ "$failures" -eq 0 ] && echo "nvl72_moe: ok"
exit $((failures > 0))
