#!/usr/bin/env bash
# Issue 14, part 1: the multi-node test bed itself (tests/netbed/netbed.sh).
#   - 3 nodes: each its own host name and addresses on the bed's /24 only (no default route, so
#     nothing can leave the machine); Open MPI places ranks on all three by host name and they
#     talk TCP only on the bed's /24 (btl_tcp_if_include; hostname and MPI_Get_processor_name);
#   - bad usage is refused with a message and exit 1;
#   - `down` removes the namespaces, veths, bridge, qdiscs and the directory;
#   - a test killed with SIGKILL leaves nothing: the watchdog tears the bed down;
#   - two beds in a row (the second after the kill) work.
set -euo pipefail
: "${CDSE_SRC:?}"
# shellcheck source=../netbed/lib.sh
source "$CDSE_SRC/tests/netbed/lib.sh"
netbed_preflight
tmp=$(mktemp -d)
cd "$tmp"
fails=0
check() {
    local what=$1
    shift
    if "$@"; then echo "ok:   $what"; else echo "FAIL: $what"; fails=$((fails + 1)); fi
}
# Everything of bed ID that the machine still holds: namespaces, links, the directory.
leftovers() {
    { ip netns list | grep -- "cdse-$1-" || true; ip -o link show | grep -- "cdse\(br\)\?$1" || true
    [ ! -e "$2" ] || echo "$2"; } | sed 's/^/  left: /'
}
nothing_left() { [ -z "$(leftovers "$1" "$2")" ]; }

# Bad usage: exit 1 and a message naming what is allowed.
rc=0
bash "$NB" up -n 5 2>err.txt || rc=$?
check "up -n 5 is refused (exit 1, allowed range named)" \
    test "$rc" = 1 -a -n "$(grep -F 'allowed 2 to 4 nodes' err.txt)"
rm -f err.txt

netbed_start 3 200mbit
source "$NB_DIR/bed.env"
id=$NB_ID
bash "$NB" status "$NB_DIR"
names=$(for k in 1 2 3; do bash "$NB" exec "$NB_DIR" $k hostname; done | tr '\n' ' ')
check "each node has its own host name ($names)" test "$names" = "nb$id-n1 nb$id-n2 nb$id-n3 "
routes=$(for k in 1 2 3; do ip -n "cdse-$id-node$k" -4 route show; done)
check "nodes route only the bed's /24, no default route" \
    test -z "$(grep -v "^$NB_NET.0/24 dev eth[01] " <<<"$routes")"
out=$(nbrun -np 6 --map-by node "$NB_DIR/nic" sh -c \
    'echo "$OMPI_COMM_WORLD_RANK $(hostname) $OMPI_MCA_btl_tcp_if_include"' | sort -n)
echo "$out"
want=$(printf '%s\n' "0 nb$id-n1 eth0" "1 nb$id-n2 eth0" "2 nb$id-n3 eth0" "3 nb$id-n1 eth1" \
    "4 nb$id-n2 eth1" "5 nb$id-n3 eth1")
check "mpirun places 6 ranks on 3 nodes, each on its own NIC" test "$out" = "$want"
check "Open MPI's TCP is limited to the bed's /24" \
    grep -qx "OMPI_MCA_oob_tcp_if_include=$NB_NET.0/24" "$NB_DIR/mca.env"
bash "$NB" down "$NB_DIR"
trap - EXIT
check "down removes everything" nothing_left "$id" "$NB_DIR"

# A test process killed with SIGKILL: its watchdog takes the bed down.
setsid bash -c 'source "$1"; netbed_start 2 100mbit >/dev/null; echo "$NB_DIR" >"$2"; exec sleep 300' \
    killed "$CDSE_SRC/tests/netbed/lib.sh" "$PWD/killed.dir" >/dev/null 2>&1 </dev/null &
owner=$!
for _ in $(seq 1 100); do [ -s killed.dir ] && break; sleep 0.2; done
dir=$(cat killed.dir)
kid=$(sed -n 's/.*NB_ID=\([0-9a-f]*\).*/\1/p' "$dir/bed.env")
check "the second bed came up ($kid)" test -n "$kid"
kill -KILL "$owner"
for _ in $(seq 1 50); do nothing_left "$kid" "$dir" && break; sleep 0.2; done
leftovers "$kid" "$dir"
check "after SIGKILL of its owner the watchdog removed the bed" nothing_left "$kid" "$dir"
rm -f killed.dir

# And a bed right after that works (two runs in a row).
netbed_start 2 100mbit
out=$(nbrun -np 2 --map-by node hostname | sort | tr '\n' ' ')
source "$NB_DIR/bed.env"
check "a third bed in a row runs MPI across its nodes ($out)" test "$out" = "nb$NB_ID-n1 nb$NB_ID-n2 "
[ "$fails" -eq 0 ] || { echo "netbed_bed: $fails check(s) failed"; exit 1; }
cd / && rm -rf "$tmp"
echo "netbed_bed: ok"
