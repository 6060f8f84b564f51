#!/usr/bin/env bash
# storage.read_bandwidth as a hardware axis (issue 28: a hardware key is one row of
# CDSE_HW_KEYS). The goodput model reloads a checkpoint after a failure at the read bandwidth,
# 0 meaning the write bandwidth (docs/job-file.md, Failures and checkpoints): a read bandwidth of
# 0 and one equal to the write bandwidth give the same row apart from the index and the
# storage_read_gbs column; a slower read gives a longer recovery per failure, so a lower goodput
# and a longer time_to_train_effective_days, with the same failure-free figures.
set -u
bin=${CLUSTERDSE:?}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
cat >"$tmp/job.cfg" <<'JOB'
name = "read-bandwidth";
models = ( "llama3-70b" );
systems = ( { base = "h100-sxm-dgx"; name = "h100"; gpus = [ 1024 ];
    storage = { write_bandwidth = 20.0; read_bandwidth = [ 0.0, 20.0, 2.0 ]; }; } );
space = { tp = [ 8 ]; pp = [ 4 ]; microbatch = [ 1 ]; global_batch = [ 1024 ]; zero = [ 1 ];
          recompute = [ "selective" ]; sequence_parallel = [ true ]; };
objective = { metric = "goodput"; tokens = 1e12; };
JOB
echo "+ $bin eval $tmp/job.cfg --csv --all"
"$bin" eval "$tmp/job.cfg" --csv --all >"$tmp/out.csv" 2>"$tmp/err" || fail "eval: $(cat "$tmp/err")"
col() { head -1 "$tmp/out.csv" | tr , '\n' | grep -nx "$1" | cut -d: -f1; }
c_read=$(col storage_read_gbs) c_good=$(col goodput) c_eff=$(col time_to_train_effective_days)
c_days=$(col time_to_train_days)
[ -n "$c_read" ] && [ -n "$c_good" ] && [ -n "$c_eff" ] && [ -n "$c_days" ] ||
    fail "columns missing: storage_read_gbs goodput time_to_train_effective_days time_to_train_days"
[ "$(wc -l <"$tmp/out.csv")" -eq 4 ] || fail "$(($(wc -l <"$tmp/out.csv") - 1)) rows, expected 3"
row() { awk -F, -v c="$c_read" -v v="$1" 'NR > 1 && $c == v + 0' "$tmp/out.csv"; }
strip() { cut -d, -f2- | tr , '\n' | sed "$((c_read - 1))d" | tr '\n' ,; } # without index and the column
[ "$(row 0 | strip)" = "$(row 20 | strip)" ] || fail "read 0 differs from read = write (20 GB/s)"
field() { row "$1" | cut -d, -f"$2"; }
awk -v slow="$(field 2 "$c_good")" -v fast="$(field 20 "$c_good")" 'BEGIN { exit !(slow < fast && fast <= 1) }' ||
    fail "goodput at 2 GB/s ($(field 2 "$c_good")) not below 20 GB/s ($(field 20 "$c_good"))"
awk -v slow="$(field 2 "$c_eff")" -v fast="$(field 20 "$c_eff")" 'BEGIN { exit !(slow > fast) }' ||
    fail "effective days at 2 GB/s not above 20 GB/s"
[ "$(field 2 "$c_days")" = "$(field 20 "$c_days")" ] || fail "failure-free days moved with the read bandwidth"
# A read bandwidth outside the key's bounds is an error naming the key and what is allowed.
sed 's/read_bandwidth = \[ 0.0, 20.0, 2.0 \]/read_bandwidth = [ 1.0, -2.0 ]/' "$tmp/job.cfg" >"$tmp/bad.cfg"
echo "+ $bin eval $tmp/bad.cfg"
"$bin" eval "$tmp/bad.cfg" >/dev/null 2>"$tmp/err"
rc=$?
[ "$rc" -eq 1 ] && grep -q "bad.cfg:4:.*read_bandwidth.*>= 0" "$tmp/err" ||
    fail "bad read_bandwidth: exit $rc: $(cat "$tmp/err")"
[ "$failures" -eq 0 ] && echo "hw_storage_read: ok"
exit $((failures > 0))
