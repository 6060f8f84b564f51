#!/usr/bin/env bash
# The test clusters' watchdog (tests/slurm/cluster.sh slurm__watch) runs from before the first
# daemon starts: a test shell killed with SIGKILL halfway through slurm_cluster_start (after
# munged, before slurmctld and slurmd) leaves no daemon behind. Stand-in daemons (sleep in a
# session of their own, as the real ones are started) take the daemons' place, so the test needs
# no Slurm; the watchdog stops them the way it stops the real ones (slurm__stop_daemons).
set -euo pipefail
src=${CDSE_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
tmp=$(mktemp -d)
trap 'kill -KILL $(cat "$tmp"/*.pid 2>/dev/null) 2>/dev/null || true; rm -rf "$tmp"' EXIT
fails=0
check() { # WHAT COMMAND...
    local what=$1
    shift
    if "$@"; then echo "ok: $what"; else echo "FAIL: $what" >&2; fails=$((fails + 1)); fi
}
alive() { kill -0 "$1" 2>/dev/null; }
gone_within() { # PID SECONDS
    for _ in $(seq 1 $(($2 * 5))); do alive "$1" || return 0; sleep 0.2; done
    return 1
}

# A shell that starts the watchdog and one stand-in daemon (munged's place), records it, and is
# killed before it starts the others.
start_half() { # NAME: writes NAME.pid (the stand-in) and NAME.owner (the shell)
    setsid bash -c 'source "$1"; SLURM_TEST_SRC=$(dirname "$1"); SLURM_TEST_DIR=$2
        slurm__watch "$2"
        setsid sleep 300 & slurm__add_pid "$!"
        echo "$!" >"$3.pid"; exec sleep 300' \
        half "$src/tests/slurm/cluster.sh" "$tmp/$1" "$tmp/$1" >/dev/null 2>&1 </dev/null &
    echo "$!" >"$tmp/$1.owner"
    disown
    for _ in $(seq 1 50); do [ -s "$tmp/$1.pid" ] && break; sleep 0.1; done
}

mkdir -p "$tmp/a"
start_half a
daemon=$(cat "$tmp/a.pid")
check "the stand-in daemon runs ($daemon)" alive "$daemon"
check "its PID is in the watchdog's list" grep -qw "$daemon" "$tmp/a/pids"
kill -KILL "$(cat "$tmp/a.owner")"
check "after SIGKILL of the starting shell the watchdog stops the daemon" gone_within "$daemon" 10

# The same shell left alone keeps its daemon (the watchdog acts on the shell's death only).
mkdir -p "$tmp/b"
start_half b
daemon=$(cat "$tmp/b.pid")
sleep 2
check "while the shell lives the daemon runs" alive "$daemon"
kill -KILL "$(cat "$tmp/b.owner")"
check "and stops once the shell is killed" gone_within "$daemon" 10

[ "$fails" -eq 0 ] || { echo "slurm_watchdog: $fails check(s) failed" >&2; exit 1; }
echo "slurm_watchdog: ok"
