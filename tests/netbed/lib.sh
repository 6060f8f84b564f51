# shellcheck shell=bash
# For tests that need the multi-node test bed (tests/netbed/netbed.sh). Source it, then:
#
#   netbed_preflight            # SKIP (exit 77) unless root, namespaces work and a release build
#   netbed_start NODES RATE [ARGS]  # a bed, 2 slots per node; sets NB_DIR, NB (the script); an
#                               # EXIT trap and a watchdog remove it; a failure here is a FAIL
#   nbrun ARGS...               # mpirun on the bed (printed first), ranks on their own NICs
#
# CDSE_NETBED_TESTS=0 skips, =1 runs them in a sanitizer build too (they time the network, which
# a sanitizer build would slow down, and exercise the same code the release pass runs).
NB=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/netbed.sh
NB_DIR=

netbed_preflight() {
    if [ "${CDSE_NETBED_TESTS:-}" = 0 ]; then
        echo "SKIP: CDSE_NETBED_TESTS=0"
        exit 77
    fi
    if [ "$(id -u)" -ne 0 ]; then
        echo "SKIP: the test bed makes network namespaces and needs root"
        exit 77
    fi
    if [ "${CDSE_NETBED_TESTS:-}" != 1 ] && [ -n "${CDSE_BUILD:-}" ] &&
        grep -q '^CDSE_SANITIZE:BOOL=ON' "$CDSE_BUILD/CMakeCache.txt" 2>/dev/null; then
        echo "SKIP: sanitizer build (the release build runs the multi-node tests)"
        exit 77
    fi
    local c ns=cdse-preflight-$$
    export PATH=$PATH:/usr/sbin:/sbin
    for c in ip tc unshare flock mpirun; do
        command -v $c >/dev/null 2>&1 || { echo "SKIP: '$c' is not installed"; exit 77; }
    done
    if ! ip netns add "$ns" 2>/dev/null; then
        echo "SKIP: cannot make a network namespace here (ip netns add failed)"
        exit 77
    fi
    ip netns del "$ns"
    if ! unshare --uts true 2>/dev/null; then
        echo "SKIP: cannot make a UTS namespace here (unshare --uts failed)"
        exit 77
    fi
}

netbed_start() { # NODES RATE [more netbed.sh up arguments]
    local nodes=$1 rate=$2
    shift 2
    echo "+ $NB up -n $nodes -r $rate $* --owner $$"
    NB_DIR=$(bash "$NB" up -n "$nodes" -r "$rate" "$@" --owner $$) ||
        { echo "FAIL: netbed.sh up"; exit 1; }
    trap 'bash "$NB" down "$NB_DIR"' EXIT
}

nbrun() {
    bash "$NB" mpirun "$NB_DIR" "$@"
}
