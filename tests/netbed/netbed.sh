#!/usr/bin/env bash
# A multi-node test bed on one machine: N nodes (2 to 4) as network namespaces on a private
# bridge, each with its own host name, the links between nodes shaped with tbf to a chosen rate,
# and Open MPI launching ranks across them over TCP (shared memory inside a node).
#
#   netbed.sh up [-n NODES] [-r RATE] [-s SLOTS] [-H] [-d DIR] [--owner PID]   build; prints DIR
#   netbed.sh exec DIR NODE CMD...     run CMD on node NODE (1..N): its namespace, its host name
#   netbed.sh mpirun DIR ARGS...       mpirun on node 1 with the bed's hostfile and agent
#   netbed.sh shape DIR RATE           re-shape every node's link (e.g. 4gbit)
#   netbed.sh status DIR               addresses, qdiscs, processes
#   netbed.sh down DIR                 remove everything `up` made (safe to repeat)
#
# RATE is a tc rate (1gbit, 500mbit, ...). Each node has one veth "NIC" per slot (SLOTS,
# default 2) on the bridge, as a DGX node has one NIC per GPU, which is what the model's
# per-rank inter-node bandwidth assumes; tbf shapes each NIC in both directions (egress inside
# the node and egress of the bridge port toward it). Rank L of a node uses NIC L mod SLOTS when
# started through DIR/nic (`netbed.sh mpirun DIR -np 4 DIR/nic PROGRAM ...`; srun sets
# SLURM_LOCALID, which DIR/nic reads too). Loopback and shared memory inside a node are not
# shaped. Payload rate of one TCP stream: RATE x 1448 / 1514 (MTU 1500, TCP timestamps; tbf
# counts the frame from the Ethernet header, not the preamble, FCS and gap of a real wire).
#
# No traffic can leave the machine: the nodes have no default route, only the bridge's private
# /24 (a 10.213.X.0/24 that no interface or route of this machine uses, picked under a lock so
# that two beds can run at once), and mpirun runs on node 1, not in the host's namespace. The
# bridge carries no host address, unless -H gives it NET.254 for daemons that serve the nodes
# from the host's namespace (slurmctld); the host routes NET.0/24 to the bridge, nothing more.
#
# Cleanup: `down` kills every process in the nodes' namespaces, deletes the namespaces (which
# deletes their veths and qdiscs), the bridge and DIR. With --owner PID, `up` also starts a
# watchdog in a session of its own that runs `down` when process PID is gone, so a test killed
# by SIGKILL or a timeout leaves nothing behind; tests pass their own $$ and add
# `trap 'netbed.sh down DIR' EXIT` for the normal path. A failed `up` removes what it made.
#
# Exit codes: 0 done, 1 bad usage, 2 the machine cannot make the bed (not root, no namespaces,
# no bridge, no tbf), with a message saying which step failed.
set -euo pipefail
export PATH=$PATH:/usr/sbin:/sbin
NETBED_SELF=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/$(basename "${BASH_SOURCE[0]}")

die() {
    echo "netbed: $*" >&2
    exit "${NETBED_RC:-2}"
}
usage() {
    sed -n '2,/^set -euo/p' "$NETBED_SELF" | sed -e '/^set -euo/d' -e 's/^# \{0,1\}//' >&2
    exit 1
}
say() { echo "+ $*" >&2; }

# Reads DIR/bed.env (written by `up`): NB_ID NB_NODES NB_NET NB_BRIDGE NB_RATE NB_NS_1..
load() {
    [ -f "$1/bed.env" ] || NETBED_RC=1 die "$1: not a test bed directory (no bed.env)"
    # shellcheck disable=SC1091
    source "$1/bed.env"
}

# A 10.213.X.0/24 with no address or route of this machine (any namespace we can see) in it.
pick_subnet() {
    local used x
    used=$( (ip -4 -o addr show; ip -4 route show; for ns in $(ip netns list | awk '{print $1}'); do
        ip -n "$ns" -4 -o addr show 2>/dev/null || true; done) | grep -o '10\.213\.[0-9]*\.' | sort -u)
    for x in $(seq 1 250); do
        grep -qx "10\.213\.$x\." <<<"$used" || { echo "10.213.$x"; return 0; }
    done
    return 1
}

# tbf's bucket: 2 ms at RATE, at least 32 KiB. A smaller bucket starves the link while the
# sender waits for tbf's timer (measured here with one TCP stream at 1 Gbit/s: a 64 KiB bucket
# gave 74 MB/s of payload, 250 kB 118 MB/s of the 119.5 possible). tbf's queue: 512 KiB, and
# each node's TCP keeps at most 64 KiB per socket in it (tcp_limit_output_bytes, set in
# add_node): with a queue of 1 ms the senders overflowed it (25 % of packets dropped at 100
# Mbit/s, half the rate), with 50 ms the ACKs of the reverse direction waited behind it and
# two-way TCP ran at half the rate.
burst_bytes() {
    local bits
    bits=$(awk -v r="$1" 'BEGIN { n = r + 0; u = r; sub(/^[0-9.]+/, "", u);
        m = (u == "gbit") ? 1e9 : (u == "mbit") ? 1e6 : (u == "kbit") ? 1e3 : 1;
        printf "%d", n * m }')
    awk -v b="$bits" 'BEGIN { x = b / 8 * 0.002; printf "%d", x < 32768 ? 32768 : x }'
}
shape_nic() { # NS DEV HOSTVETH RATE
    local burst
    burst=$(burst_bytes "$4")
    tc -n "$1" qdisc replace dev "$2" root tbf rate "$4" burst "$burst" limit 524288 ||
        return 1
    tc qdisc replace dev "$3" root tbf rate "$4" burst "$burst" limit 524288
}

cmd_up() {
    local nodes=2 rate=1gbit dir="" owner=0 slots=2 host_addr=0
    while [ $# -gt 0 ]; do
        case $1 in
        -n) nodes=$2; shift 2 ;;
        -r) rate=$2; shift 2 ;;
        -d) dir=$2; shift 2 ;;
        -s) slots=$2; shift 2 ;;
        -H) host_addr=1; shift ;;
        --owner) owner=$2; shift 2 ;;
        *) NETBED_RC=1 die "up: unknown argument '$1'; allowed: -n NODES -r RATE -s SLOTS -H -d DIR --owner PID" ;;
        esac
    done
    [[ $nodes =~ ^[2-4]$ ]] || NETBED_RC=1 die "up: -n $nodes: allowed 2 to 4 nodes"
    [[ $slots =~ ^[1-8]$ ]] || NETBED_RC=1 die "up: -s $slots: allowed 1 to 8 slots per node"
    [[ $rate =~ ^[0-9]+(\.[0-9]+)?[kmg]?bit$ ]] ||
        NETBED_RC=1 die "up: -r $rate: allowed a tc rate such as 1gbit, 500mbit"
    [ "$(id -u)" -eq 0 ] || die "needs root (network namespaces, veths, tc)"
    for c in ip tc unshare flock; do
        command -v $c >/dev/null || die "needs '$c' (iproute2, util-linux)"
    done
    dir=${dir:-$(mktemp -d /tmp/cdse-netbed.XXXXXX)}
    mkdir -p "$dir"
    trap 'cmd_down "$dir"' EXIT
    local id net bridge k ns
    id=$(printf '%04x' $((RANDOM % 65536)))
    bridge=cdsebr$id
    exec 9>/tmp/cdse-netbed.lock
    flock 9
    net=$(pick_subnet) || die "no free 10.213.X.0/24"
    {
        echo "NB_ID=$id NB_NODES=$nodes NB_NET=$net NB_BRIDGE=$bridge NB_RATE=$rate NB_SLOTS=$slots NB_DIR=$dir"
        for k in $(seq 1 "$nodes"); do echo "NB_NS_$k=cdse-$id-node$k"; done
    } >"$dir/bed.env"
    start_watchdog "$dir" "$owner"
    ip link add "$bridge" type bridge || die "cannot create bridge $bridge"
    ip link set "$bridge" up
    [ "$host_addr" = 0 ] || ip addr add "$net.254/24" dev "$bridge" || die "cannot address $bridge"
    for k in $(seq 1 "$nodes"); do
        add_node "$id" "$k" "$net" "$bridge" "$slots" "$rate"
    done
    flock -u 9
    write_mpi_files "$dir"
    wait_reachable "$dir" || die "nodes cannot reach each other over $bridge"
    echo "netbed: $nodes nodes on $net.0/24 (bridge $bridge), links shaped to $rate; dir $dir" >&2
    trap - EXIT
    echo "$dir"
}

# Node K: namespace cdse-ID-nodeK with one veth "NIC" per slot, ethS at NET.(K + 16 S), each
# shaped to RATE both ways. The NICs share one /24, so the node routes by source address (a
# table per NIC) and answers ARP only on the NIC that owns the address: a socket bound to
# ethS's address (Open MPI's TCP transport binds) leaves and arrives through ethS.
add_node() {
    local id=$1 k=$2 net=$3 bridge=$4 slots=$5 rate=$6 ns=cdse-$1-node$2 s host addr
    ip netns add "$ns" || die "cannot create network namespace $ns"
    ip -n "$ns" link set lo up
    ip netns exec "$ns" sysctl -qw net.ipv4.conf.all.arp_ignore=1 \
        net.ipv4.conf.all.arp_announce=2 net.ipv4.conf.all.rp_filter=0 \
        net.ipv4.conf.default.rp_filter=0 net.ipv4.tcp_limit_output_bytes=65536 >/dev/null || die "sysctl failed in $ns"
    for s in $(seq 0 $((slots - 1))); do
        host=cdse${id}n$k$s
        addr=$net.$((k + 16 * s))
        ip link add "$host" type veth peer name "cdse${id}p$k$s" || die "cannot create veth"
        ip link set "cdse${id}p$k$s" netns "$ns"
        ip -n "$ns" link set "cdse${id}p$k$s" name "eth$s"
        ip link set "$host" master "$bridge"
        ip link set "$host" up
        ip -n "$ns" addr add "$addr/24" dev "eth$s"
        ip -n "$ns" link set "eth$s" up
        ip -n "$ns" route add "$net.0/24" dev "eth$s" src "$addr" table $((100 + s))
        ip -n "$ns" rule add from "$addr" table $((100 + s))
        shape_nic "$ns" "eth$s" "$host" "$rate" || die "tc tbf failed on node $k eth$s"
    done
}

# The watchdog outlives this script in a session of its own; `down` kills it by its PID.
start_watchdog() {
    local dir=$1 owner=$2
    [ "$owner" -gt 1 ] 2>/dev/null || return 0
    setsid bash -c 'while kill -0 "$1" 2>/dev/null && [ -f "$2/bed.env" ]; do sleep 1; done
        [ -f "$2/bed.env" ] && exec bash "$3" down "$2"' netbed-watchdog \
        "$owner" "$dir" "$NETBED_SELF" >/dev/null 2>&1 </dev/null &
    echo $! >"$dir/watchdog.pid"
}

# Host names: node K is "nbID-nK". The hostfile lists them with SLOTS slots each (mpirun -np
# N fills node 1 first, then node 2: ranks 0..SLOTS-1 on node 1); the agent maps a
# name to its namespace. Open MPI talks TCP only on the bed's /24 (btl and oob).
write_mpi_files() {
    local dir=$1 k
    load "$dir"
    : >"$dir/hostfile"
    for k in $(seq 1 "$NB_NODES"); do echo "nb$NB_ID-n$k slots=$NB_SLOTS" >>"$dir/hostfile"; done
    cat >"$dir/agent" <<EOF
#!/bin/sh
# Open MPI's rsh agent for the bed in $dir: "agent HOST COMMAND" runs COMMAND on HOST.
host=\$1
shift
case "\$host" in
$(for k in $(seq 1 "$NB_NODES"); do echo "nb$NB_ID-n$k) ns=cdse-$NB_ID-node$k ;;"; done)
*) echo "netbed agent: unknown host '\$host'" >&2; exit 1 ;;
esac
exec nsenter --net=/run/netns/\$ns unshare --uts sh -c 'hostname "\$0" && exec sh -c "\$*"' "\$host" "\$@"
EOF
    chmod +x "$dir/agent"
    # Messages up to 64 MiB go eagerly over TCP. With Open MPI's rendezvous, a two-way exchange
    # (MPI_Sendrecv) over the one TCP connection of a pair of ranks serialised: each side's
    # clear-to-send waited behind its own data, and 1 MiB took twice the link time (measured at
    # 100 Mbit/s: 172 ms instead of 88). RDMA fabrics do not have this head-of-line blocking;
    # the bed is there to check the model's bandwidth terms, so it avoids it.
    # Each rank talks TCP through its own NIC: local rank L uses eth(L mod SLOTS).
    cat >"$dir/nic" <<EOF
#!/bin/sh
# "nic PROGRAM ARGS": run PROGRAM with Open MPI's TCP transport on this rank's own NIC.
local_rank=\${OMPI_COMM_WORLD_LOCAL_RANK:-\${SLURM_LOCALID:-0}}
OMPI_MCA_btl_tcp_if_include=eth\$((local_rank % $NB_SLOTS))
export OMPI_MCA_btl_tcp_if_include
exec "\$@"
EOF
    chmod +x "$dir/nic"
    cat >"$dir/mca.env" <<EOF
OMPI_MCA_plm_rsh_agent=$dir/agent
OMPI_MCA_plm_rsh_no_tree_spawn=1
OMPI_MCA_btl=self,vader,tcp
OMPI_MCA_btl_tcp_if_include=$NB_NET.0/24
OMPI_MCA_oob_tcp_if_include=$NB_NET.0/24
OMPI_MCA_rmaps_base_oversubscribe=1
OMPI_MCA_mpi_yield_when_idle=1
OMPI_MCA_btl_tcp_eager_limit=67108864
OMPI_MCA_btl_tcp_max_send_size=67108864
OMPI_ALLOW_RUN_AS_ROOT=1
OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
EOF
}

# Node 1 connects to every other node's address (bash's /dev/tcp to a closed port: "connection
# refused" proves the path, a timeout does not). A new bridge port takes a moment to forward.
wait_reachable() {
    load "$1"
    local k try out
    for k in $(seq 2 "$NB_NODES"); do
        for try in $(seq 1 40); do
            out=$(ip netns exec "$NB_NS_1" timeout 1 bash -c \
                "exec 3<>/dev/tcp/$NB_NET.$k/9" 2>&1 || true)
            [[ $out != *refused* ]] || break
            [ "$try" -lt 40 ] || { echo "netbed: node 1 cannot reach $NB_NET.$k" >&2; return 1; }
            sleep 0.25
        done
    done
}

# Enters the node's network namespace with nsenter, not `ip netns exec`: that one mounts the
# namespace's own sysfs over /sys, which hides /sys/fs/cgroup, and slurmd then stops with "No
# filesystem mounted on /sys/fs/cgroup". The agent above does the same.
cmd_exec() {
    [ $# -ge 3 ] || usage
    load "$1"
    local k=$2 ns
    shift 2
    [[ $k =~ ^[0-9]+$ ]] && [ "$k" -ge 1 ] && [ "$k" -le "$NB_NODES" ] ||
        NETBED_RC=1 die "exec: node '$k': allowed 1 to $NB_NODES"
    ns=NB_NS_$k
    exec nsenter --net="/run/netns/${!ns}" unshare --uts sh -c 'hostname "$0" && exec "$@"' \
        "nb$NB_ID-n$k" "$@"
}

cmd_mpirun() {
    [ $# -ge 2 ] || usage
    local dir=$1
    shift
    load "$dir"
    set -a
    # shellcheck disable=SC1091
    source "$dir/mca.env"
    set +a
    say "netbed.sh exec $dir 1 mpirun --hostfile $dir/hostfile $*"
    cmd_exec "$dir" 1 mpirun --hostfile "$dir/hostfile" "$@"
}

cmd_shape() {
    [ $# -eq 2 ] || usage
    load "$1"
    local k ns s
    for k in $(seq 1 "$NB_NODES"); do
        ns=NB_NS_$k
        for s in $(seq 0 $((NB_SLOTS - 1))); do
            shape_nic "${!ns}" "eth$s" "cdse${NB_ID}n$k$s" "$2" || die "tc tbf failed on node $k"
        done
    done
    sed -i "s/NB_RATE=[^ ]*/NB_RATE=$2/" "$1/bed.env"
    echo "netbed: links shaped to $2" >&2
}

cmd_status() {
    load "$1"
    local k ns
    echo "bed $NB_ID: $NB_NODES nodes, $NB_NET.0/24, bridge $NB_BRIDGE, rate $NB_RATE"
    for k in $(seq 1 "$NB_NODES"); do
        ns=NB_NS_$k
        echo "node $k (nb$NB_ID-n$k, ${!ns}): $(ip -n "${!ns}" -4 -o addr show |
            awk '$2 != "lo" {printf "%s %s  ", $2, $4}')processes: $(ip netns pids "${!ns}" | wc -l)"
        tc -n "${!ns}" qdisc show | grep tbf
    done
}

cmd_down() {
    [ $# -eq 1 ] || usage
    local dir=$1 k ns pids wd s
    [ -f "$dir/bed.env" ] || return 0
    load "$dir"
    wd=$(cat "$dir/watchdog.pid" 2>/dev/null || true)
    [ -z "$wd" ] || [ "$wd" = $$ ] || [ "$wd" = "$PPID" ] || kill "$wd" 2>/dev/null || true
    for k in $(seq 1 "$NB_NODES"); do
        ns=NB_NS_$k
        ip netns list | grep -qw "${!ns}" || continue
        pids=$(ip netns pids "${!ns}" 2>/dev/null || true)
        [ -z "$pids" ] || kill -KILL $pids 2>/dev/null || true
    done
    for k in $(seq 1 "$NB_NODES"); do
        ns=NB_NS_$k
        ip netns list | grep -qw "${!ns}" && ip netns del "${!ns}" 2>/dev/null || true
        for s in $(seq 0 $((NB_SLOTS - 1))); do
            ip link del "cdse${NB_ID}n$k$s" 2>/dev/null || true
        done
    done
    ip link del "$NB_BRIDGE" 2>/dev/null || true
    rm -rf "$dir"
    echo "netbed: $NB_ID down" >&2
}

[ $# -ge 1 ] || usage
sub=$1
shift
case $sub in
up) cmd_up "$@" ;;
exec) cmd_exec "$@" ;;
mpirun) cmd_mpirun "$@" ;;
shape) cmd_shape "$@" ;;
status) cmd_status "$@" ;;
down) cmd_down "$@" ;;
-h | --help | help) usage ;;
*) NETBED_RC=1 die "unknown subcommand '$sub'; allowed: up, exec, mpirun, shape, status, down" ;;
esac
