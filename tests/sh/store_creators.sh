#!/usr/bin/env bash
# Issue 31, M4: two sweeps creating the same new store exclude each other before anything is
# written. In each round two sweeps of different jobs start at the same moment on one new -o:
# exactly one must exit 0 with a store that reads (`top`; its /job and /models are the winner's),
# the other must exit 1 naming the lock it found, and no temporary may be left behind.
# A round whose loser started only after the winner had finished ("exists") is no race and is
# not counted: rounds go on until CDSE_RACES (default 100) races were seen, at most 1.5 times
# as many rounds. Before the fix, one sweep could exit 0 with /job, /models and /systems
# unreadable (its temporary truncated by the other), or both failed; the loser exited 2.
set -uo pipefail
: "${CLUSTERDSE:?}"
want=${CDSE_RACES:-100}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

# Two jobs of different models over the same space (the reproducer's two jobs, larger, so that
# each sweep lasts longer than the two processes' start apart: about 0.55 million
# configurations, a second or less on a free core).
for pair in "jobA:gpt3-13b:a100-80g-dgx" "jobB:llama2-13b:h100-sxm-dgx"; do
    IFS=: read -r name model system <<<"$pair"
    cat >"$dir/$name.cfg" <<CFG
name = "$name";
models = ( "$model" );
systems = ( "$system" );
space = { gpus = [64, 128]; tp = [1, 2, 4, 8]; pp = [1, 2, 4, 8]; microbatch = [1, 2, 4, 8];
          global_batch = [512, 1024, 2048]; recompute = ["none", "selective", "full"];
          zero = [0, 1, 2, 3]; sequence_parallel = [true, false]; vpp = [1, 2]; cp = [1, 2, 4];
          precision = ["bf16", "fp8"]; };
objective = { metric = "time_to_train"; tokens = 3e11; store = "feasible"; };
CFG
done
out=$dir/same.h5
echo "each round: $CLUSTERDSE sweep $dir/jobA.cfg -o $out --quiet & $CLUSTERDSE sweep $dir/jobB.cfg -o $out --quiet &"

races=0 late=0 failed=0 round=0
max_rounds=$((want * 3 / 2))
while [ "$races" -lt "$want" ] && [ "$round" -lt "$max_rounds" ]; do
    round=$((round + 1))
    rm -f "$out" "$out.tmp"
    for j in A B; do
        ( "$CLUSTERDSE" sweep "$dir/job$j.cfg" -o "$out" --quiet >/dev/null 2>"$dir/$j.err"
          echo $? >"$dir/$j.rc" ) &
    done
    wait
    a=$(cat "$dir/A.rc") b=$(cat "$dir/B.rc")
    if [ "$a" = 0 ] && [ "$b" != 0 ]; then
        winner=A loser=B lrc=$b
    elif [ "$b" = 0 ] && [ "$a" != 0 ]; then
        winner=B loser=A lrc=$a
    else
        echo "FAIL: round $round: sweep A exit $a, sweep B exit $b (expected one 0)"
        sed 's/^/    /' "$dir/A.err" "$dir/B.err" | cut -c1-200
        failed=$((failed + 1))
        continue
    fi
    if [ "$lrc" = 1 ] && grep -q " exists: add --resume" "$dir/$loser.err"; then
        late=$((late + 1)) # the winner had finished: no race
        continue
    fi
    races=$((races + 1))
    if [ "$lrc" != 1 ] || ! grep -q "holds the lock on $out" "$dir/$loser.err"; then
        echo "FAIL: round $round: the losing sweep $loser exited $lrc; expected 1 naming the lock:"
        sed 's/^/    /' "$dir/$loser.err" | cut -c1-200
        failed=$((failed + 1))
    fi
    model=$([ "$winner" = A ] && echo gpt3-13b || echo llama2-13b)
    if ! "$CLUSTERDSE" top "$out" -n 1 >"$dir/top.out" 2>"$dir/top.err" ||
        ! grep -q "$model" "$dir/top.out" ||
        ! h5dump -d /job "$out" 2>/dev/null | grep -qF "name = \"job$winner\""; then
        echo "FAIL: round $round: the store of the winning sweep $winner does not read as its own:"
        echo "    $CLUSTERDSE top $out -n 1"
        sed 's/^/    /' "$dir/top.err" "$dir/top.out" | cut -c1-200 | head -6
        failed=$((failed + 1))
    fi
    if [ -e "$out.tmp" ]; then
        echo "FAIL: round $round: $out.tmp left behind"
        failed=$((failed + 1))
    fi
done
echo "store_creators: $round rounds, $races races ($late rounds with the winner done first), $failed failed"
if [ "$races" -lt "$want" ]; then
    echo "FAIL: fewer than $want races in $round rounds"
    failed=$((failed + 1))
fi
[ "$failed" -eq 0 ] && echo "store_creators: ok"
[ "$failed" -eq 0 ]
