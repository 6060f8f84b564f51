#!/usr/bin/env bash
# Issue 15, the job-file reading findings: each reproducer of the fuzz-2026-12 findings (copied into tests/)
# (copied to tests/jobs/fuzz/) runs through `clusterdse eval`; the exit code and the message
# (file:line, the key, what is allowed) are checked. B4 @include with a wrapped integer, B5 a
# probe plan with a wrapped size, B6 the wrapped key named, B8a memory_tier attach = "none" in
# the effective job, B8b 1e999, B9 @include of a directory, B10 /dev/zero, a FIFO, a directory,
# a file above 16 MiB, 100,000 keys, B11 a NUL byte.
set -euo pipefail
: "${CLUSTERDSE:?} ${CDSE_SRC:?}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$CDSE_SRC/tests/jobs/fuzz"
fail() { echo "FAIL: $*"; exit 1; }
expect() { # expected-exit expected-message-text job-path [eval options]
    local want=$1 text=$2
    shift 2
    echo "+ $CLUSTERDSE eval $*"
    set +e
    timeout -k 5 60 "$CLUSTERDSE" eval "$@" >"$tmp/out" 2>"$tmp/err"
    local rc=$?
    set -e
    cat "$tmp/err"
    [ "$rc" -eq "$want" ] || fail "exit $rc, expected $want"
    grep -qF -- "$text" "$tmp/err" || fail "expected: $text"
}
include_allowed="allowed: every setting in the file itself"
expect 1 "include_wrap.cfg:3: @include is not accepted; $include_allowed" include_wrap.cfg
expect 1 "include_dir.cfg:3: @include is not accepted; $include_allowed" include_dir.cfg
expect 1 "wrapped_wrong_key.cfg:3: key 'space.global_batch': integer 4294967360 does not fit in 32 bits (libconfig would wrap it); allowed: integers from -2^31 to 2^31-1" wrapped_wrong_key.cfg
expect 1 "./plan_wrap.cfg:2: key 'sizes': integer 4294967304 does not fit in 32 bits" job_with_wrapped_plan.cfg
expect 1 "gemm_inf.cfg:2: key 'systems[0].gemm_efficiency': inf is not a finite number; allowed: finite numbers" gemm_inf.cfg
expect 1 "nul_hides_objective.cfg:4: a NUL byte in the job file; allowed: text without NUL bytes" nul_hides_objective.cfg
regular="allowed: a readable regular file of at most 16 MiB"
expect 1 "/dev/zero: cannot read job file (not a regular file (a FIFO, device or socket)); $regular" /dev/zero
mkfifo "$tmp/fifo"
expect 1 "$tmp/fifo: cannot read job file (not a regular file (a FIFO, device or socket)); $regular" "$tmp/fifo"
expect 1 "$tmp: cannot read job file (a directory, not a file); $regular" "$tmp"
truncate -s $((16 * 1024 * 1024 + 1)) "$tmp/big.cfg"
expect 1 "$tmp/big.cfg: cannot read job file (16777217 bytes, larger than 16 MiB); $regular" "$tmp/big.cfg"
/usr/bin/python3 gen_many_keys.py 100000 >"$tmp/keys.cfg"
expect 1 "$tmp/keys.cfg: 100005 settings; allowed: at most 10000 settings (key = value) per file" "$tmp/keys.cfg"
# A model file given by path goes through the same reader (B10: /dev/zero as a model path).
printf 'models = ( "/dev/zero" );\nsystems = ( "a100-80g-dgx" );\nspace = { gpus = 8; global_batch = 64; };\n' >"$tmp/model_zero.cfg"
expect 1 "model_zero.cfg:1: key 'models[0]': cannot read /dev/zero (not a regular file (a FIFO, device or socket))" "$tmp/model_zero.cfg"
# Probe plans go through the same reader (clusterdse probe, a singleton MPI run).
echo "+ $CLUSTERDSE probe $tmp/fifo -o $tmp/p.h5"
set +e
timeout -k 5 60 "$CLUSTERDSE" probe "$tmp/fifo" -o "$tmp/p.h5" >/dev/null 2>"$tmp/err"
rc=$?
set -e
cat "$tmp/err"
[ "$rc" -eq 1 ] || fail "probe of a FIFO: exit $rc"
grep -qF "$tmp/fifo: cannot read probe plan (not a regular file (a FIFO, device or socket)); $regular" "$tmp/err" || fail "probe of a FIFO: message"
# The allowed values are never cut (space.placement's 24 orders were cut at 400 characters,
# "... up to 64 distinct s").
echo "+ $CLUSTERDSE eval --help-keys | grep '^space.placement'"
"$CLUSTERDSE" eval --help-keys | grep '^space.placement' | grep -q '"pp-dp-cp-tp", or a list of up to 64 distinct such values$' || fail "space.placement's allowed text is cut"
printf 'models = ( "gpt3-1.3b" );\nsystems = ( "a100-80g-dgx" );\nspace = { gpus = 8; global_batch = 64;\n  placement = "x"; };\n' >"$tmp/placement.cfg"
expect 1 'placement.cfg:4: key '"'"'space.placement'"'"': unknown value "x"; allowed: one of "tp-cp-dp-pp",' "$tmp/placement.cfg"
grep -q 'or a list of up to 64 distinct such values$' "$tmp/err" || fail "the error's allowed text is cut"
# B8a: the effective job of a system with memory_tier attach = "none" (and values) reproduces
# the job: printing it again gives the same text, and it keeps the tier.
echo "+ $CLUSTERDSE eval roundtrip_tier_none.cfg --show-job > $tmp/s1.cfg; $CLUSTERDSE eval $tmp/s1.cfg --show-job > $tmp/s2.cfg"
"$CLUSTERDSE" eval roundtrip_tier_none.cfg --show-job >"$tmp/s1.cfg"
"$CLUSTERDSE" eval "$tmp/s1.cfg" --show-job >"$tmp/s2.cfg"
diff <(grep -v '^#' "$tmp/s1.cfg") <(grep -v '^#' "$tmp/s2.cfg") || fail "the effective job changed"
grep -q 'attach = "none";' "$tmp/s1.cfg" || fail "memory_tier dropped"
grep -q 'capacity_gib = 100.0;' "$tmp/s1.cfg" || fail "memory_tier values dropped"
echo "job_reading: ok"
