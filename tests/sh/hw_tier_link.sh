#!/usr/bin/env bash
# memory_tier.link_bandwidth, a hardware key made from its CDSE_HW_KEYS row alone (issue 28: its
# profile key and /systems field come from the row): one GPU's link to the second memory tier
# (PCIe, C2C), which bounds the GPU's share of the tier's bandwidth. Hand calculation: a per-node
# tier of 512 GB/s shared by the node's 8 GPUs gives each 512 / 8 = 64 GB/s; optimizer offload
# moves the optimizer state out and back once per step, serially (t_offload_s = 2 x state / bw
# with latency 0, docs/eval.md), so
#   link 0 (no limit) and link 1000 (above the share): bw = 64 GB/s, the same rows;
#   link 16: bw = 16 GB/s, t_offload_s 64 / 16 = 4 times that at 64 GB/s (within the 6
#   significant digits of the CSV).
set -u
bin=${CLUSTERDSE:?}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
cat >"$tmp/job.cfg" <<'JOB'
name = "tier-link";
models = ( "llama3-70b" );
systems = ( { base = "h100-sxm-dgx"; name = "h100"; gpus = [ 64 ];
    memory_tier = { attach = "per_node"; capacity_gib = 2048.0; bandwidth = 512.0;
                    link_bandwidth = [ 0.0, 16.0, 1000.0 ]; }; } );
space = { tp = [ 8 ]; pp = [ 2 ]; microbatch = [ 1 ]; global_batch = [ 256 ]; zero = [ 1 ];
          recompute = [ "selective" ]; sequence_parallel = [ true ]; offload = [ "optimizer" ]; };
JOB
echo "+ $bin eval $tmp/job.cfg --csv --all"
"$bin" eval "$tmp/job.cfg" --csv --all >"$tmp/out.csv" 2>"$tmp/err" || fail "eval: $(cat "$tmp/err")"
col() { head -1 "$tmp/out.csv" | tr , '\n' | grep -nx "$1" | cut -d: -f1; }
c_link=$(col tier_link_gbs) c_off=$(col t_offload_s) c_st=$(col status)
[ -n "$c_link" ] && [ -n "$c_off" ] && [ -n "$c_st" ] || fail "columns missing: tier_link_gbs t_offload_s status"
[ "$(wc -l <"$tmp/out.csv")" -eq 4 ] || fail "$(($(wc -l <"$tmp/out.csv") - 1)) rows, expected 3"
row() { awk -F, -v c="$c_link" -v v="$1" 'NR > 1 && $c == v + 0' "$tmp/out.csv"; }
strip() { cut -d, -f2- | tr , '\n' | sed "$((c_link - 1))d" | tr '\n' ,; } # without index and the column
[ -n "$(row 0)" ] && [ "$(row 0 | strip)" = "$(row 1000 | strip)" ] ||
    fail "link 0 and link 1000 GB/s (above the 64 GB/s share) differ"
field() { row "$1" | cut -d, -f"$2"; }
[ "$(field 0 "$c_st")" = ok ] || fail "status $(field 0 "$c_st"), expected ok"
awk -v slow="$(field 16 "$c_off")" -v fast="$(field 0 "$c_off")" \
    'BEGIN { exit !(fast > 0 && slow / fast > 4 - 4e-5 && slow / fast < 4 + 4e-5) }' ||
    fail "t_offload_s at link 16 GB/s ($(field 16 "$c_off")) is not 4 x that at 64 GB/s ($(field 0 "$c_off"))"
# The key is a profile key: a scalar in a profile, printed in the effective job when given only.
sed 's/link_bandwidth = \[ 0.0, 16.0, 1000.0 \]/link_bandwidth = 16.0/' "$tmp/job.cfg" >"$tmp/one.cfg"
echo "+ $bin eval $tmp/one.cfg --show-job"
"$bin" eval "$tmp/one.cfg" --show-job >"$tmp/show" 2>"$tmp/err" || fail "show-job: $(cat "$tmp/err")"
grep -q 'link_bandwidth = 16' "$tmp/show" || fail "the effective job does not give link_bandwidth = 16"
sed 's/ *link_bandwidth = \[ 0.0, 16.0, 1000.0 \];//' "$tmp/job.cfg" >"$tmp/none.cfg"
"$bin" eval "$tmp/none.cfg" --show-job >"$tmp/show" 2>"$tmp/err" || fail "show-job: $(cat "$tmp/err")"
grep -q 'link_bandwidth' "$tmp/show" && fail "link_bandwidth printed in an effective job that does not give it"
# A value outside the key's bounds is an error naming file:line, the key and what is allowed.
sed 's/link_bandwidth = \[ 0.0, 16.0, 1000.0 \]/link_bandwidth = [ 16.0, -1.0 ]/' "$tmp/job.cfg" >"$tmp/bad.cfg"
echo "+ $bin eval $tmp/bad.cfg"
"$bin" eval "$tmp/bad.cfg" >/dev/null 2>"$tmp/err"
rc=$?
[ "$rc" -eq 1 ] && grep -q "bad.cfg:5:.*link_bandwidth.*>= 0" "$tmp/err" ||
    fail "bad link_bandwidth: exit $rc: $(cat "$tmp/err")"
[ "$failures" -eq 0 ] && echo "hw_tier_link: ok"
exit $((failures > 0))
