#!/usr/bin/env bash
# A short libFuzzer run of every harness of tests/fuzz (docs/fuzzing.md) from the committed seed
# corpora and dictionaries, with AddressSanitizer and UndefinedBehaviorSanitizer: the job parser
# (with the effective-job round trip and the evaluator), probe plans, `--where`, store opening.
# Needs clang (scripts/setup.sh installs it); skipped otherwise. CDSE_FUZZ_SECONDS (default 15)
# is the time per harness. Prints each harness's executions.
#
# The store harness runs in fork mode and keeps going after a crash, because libhdf5 1.10.8
# itself crashes, loops or asks for terabytes on some damaged files (the command line turns
# those into exit 2, src/cli/store_guard.c): each crash input is replayed and fails this test
# only if the crash is not inside libhdf5.
set -uo pipefail
: "${CDSE_SRC:?}" "${CDSE_BUILD:?}"
if ! command -v clang >/dev/null; then
    echo "fuzz_smoke: clang not found (bash scripts/setup.sh installs it): skipped"
    exit 77
fi
seconds=${CDSE_FUZZ_SECONDS:-15}
fuzz_build=$CDSE_BUILD/fuzz-clang
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export LSAN_OPTIONS=suppressions=$CDSE_SRC/tests/fuzz/lsan.supp
export ASAN_OPTIONS=allocator_may_return_null=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
failed=0

echo "+ CC=clang cmake -S $CDSE_SRC -B $fuzz_build -DCDSE_FUZZ=ON && cmake --build ... fuzz_*"
if ! { CC=clang cmake -S "$CDSE_SRC" -B "$fuzz_build" -DCDSE_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo &&
       cmake --build "$fuzz_build" -j 2 --target fuzz_job fuzz_plan fuzz_where fuzz_store; } \
       >"$work/build.log" 2>&1; then
    tail -20 "$work/build.log"
    echo "fuzz_smoke: FAIL: the clang build of the harnesses failed"
    exit 1
fi
bin=$fuzz_build/tests/fuzz

# run NAME DICT EXTRA...: fuzz for $seconds from the committed corpus; prints the executions.
# A harness that cannot start (a seed corpus that is missing or empty, which libFuzzer reports
# with exit 1 before any execution) fails the test, whatever the mode it runs in.
run() {
    local name=$1 dict=$2
    shift 2
    if ! compgen -G "$CDSE_SRC/tests/fuzz/corpus/$name/*" >/dev/null; then
        echo "fuzz_smoke: FAIL: $name: no seed corpus in tests/fuzz/corpus/$name (docs/fuzzing.md)"
        return 1
    fi
    mkdir -p "$work/$name.corpus" "$work/$name.art"
    local cmd=("$bin/fuzz_$name" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048
               -artifact_prefix="$work/$name.art/" "$@")
    [ -n "$dict" ] && cmd+=(-dict="$CDSE_SRC/tests/fuzz/$dict")
    cmd+=("$work/$name.corpus" "$CDSE_SRC/tests/fuzz/corpus/$name")
    echo "+ ${cmd[*]}"
    "${cmd[@]}" >"$work/$name.log" 2>&1
    local rc=$?
    local execs
    execs=$(grep -oE '^(Done [0-9]+ runs|#[0-9]+)' "$work/$name.log" | tail -1 | tr -d '#')
    echo "fuzz_smoke: $name: exit $rc, ${execs:-? runs} in ${seconds} s"
    return $rc
}

for h in job:libconfig.dict plan:libconfig.dict where:where.dict; do
    name=${h%%:*}
    if ! run "$name" "${h#*:}"; then
        grep -E "ERROR|SUMMARY|#[0-9]+ 0x" "$work/$name.log" | head -20
        for f in "$work/$name.art"/*; do
            [ -e "$f" ] || continue
            cp "$f" "$CDSE_BUILD/" && echo "fuzz_smoke: FAIL: $name: input kept as $CDSE_BUILD/$(basename "$f") (add it to tests/fuzz/corpus/$name once fixed)"
        done
        failed=1
    fi
done

# In fork mode with the -ignore_ flags libFuzzer goes on after a crash (the inputs are replayed
# below) and at the end exits with the status of the last job it collected, so a crash in the
# last job makes the whole run exit non-zero (FuzzerFork.cpp: "INFO: exiting: %d" then
# exit(ExitCode)). The harness ran if libFuzzer printed that line with the status it exited
# with; any other exit means it did not, and so does a run of no execution.
run store "" -fork=1 -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1
rc=$?
if [ "$rc" -ne 0 ] && ! grep -q "^INFO: exiting: $rc " "$work/store.log" 2>/dev/null; then
    [ -f "$work/store.log" ] && tail -5 "$work/store.log" | sed 's/^/    /'
    echo "fuzz_smoke: FAIL: store: the harness did not run (exit status above)"
    failed=1
elif ! grep -qE '^#[1-9][0-9]*[: ]|Done [1-9][0-9]* runs' "$work/store.log"; then
    tail -5 "$work/store.log" | sed 's/^/    /'
    echo "fuzz_smoke: FAIL: store: no input was executed"
    failed=1
fi
upstream=0
for f in "$work/store.art"/*; do
    [ -e "$f" ] || continue
    "$bin/fuzz_store" -timeout=10 -rss_limit_mb=2048 "$f" >"$work/replay.log" 2>&1
    # Whose crash it is: the first stack frame in libhdf5 or in the project's sources (the
    # frames above it are the sanitizers', libFuzzer's, the allocator's and libc's string
    # functions, which libhdf5 calls too: ASan's strdup interceptor, glibc's
    # __memcpy_avx512_unaligned_erms). No such frame: not ours either.
    frame=$(grep -E '^ *#[0-9]+ 0x' "$work/replay.log" |
            grep -E 'libhdf5|/src/(model|config|sweep|calibrate|cli)/[a-z_]+\.[ch]:|/tests/fuzz/[a-z_]+\.c:' |
            head -1)
    if [ -z "$frame" ] || [[ "$frame" == *libhdf5* ]]; then
        upstream=$((upstream + 1))
    else
        echo "fuzz_smoke: FAIL: store: a crash outside libhdf5: $frame"
        cp "$f" "$CDSE_BUILD/" && echo "fuzz_smoke: input kept as $CDSE_BUILD/$(basename "$f")"
        failed=1
    fi
done
echo "fuzz_smoke: store: $upstream inputs crashed, leaked or hung inside libhdf5 (upstream, see docs/fuzzing.md)"

[ "$failed" -eq 0 ] && echo "fuzz_smoke: ok"
exit "$failed"
