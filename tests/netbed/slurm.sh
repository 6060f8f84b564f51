# shellcheck shell=bash
# Slurm on the multi-node test bed: slurmctld and munged in the host's namespace (on the bridge's
# NET.254, netbed.sh up -H), one slurmd per node namespace with the node's name and address.
# Source after tests/netbed/lib.sh and tests/slurm/cluster.sh (whose slurm_submit, slurm_expect,
# slurm_check and cleanup this reuses), with a bed started by `netbed_start N RATE -H`:
#
#   netbed_slurm_start     # daemons up, every node idle; SLURM_CONF, SLURM_TEST_DIR set; the
#                          # EXIT trap stops Slurm and then removes the bed
#
# The configuration is tests/slurm/slurm.conf.in (every setting explained there) with the
# controller on NET.254, one NodeName per bed node (CPUs = slots) and slurmd's spool, PID and
# log files per node (%n).
netbed_slurm_start() {
    export PATH=$PATH:/usr/sbin:/sbin
    # shellcheck disable=SC1091
    source "$NB_DIR/bed.env"
    SLURM_TEST_DIR=$(mktemp -d /tmp/cdse-nbslurm.XXXXXX)
    local dir=$SLURM_TEST_DIR host ctld_port k nodes
    mkdir -p "$dir"/{state,spool,run,log,munge,pmix}
    chmod 0755 "$dir"
    trap 'slurm_cluster_stop; bash "$NB" down "$NB_DIR"' EXIT
    trap 'exit 130' INT TERM
    slurm__watch "$dir"
    chown munge:munge "$dir/munge"
    mungekey --create --keyfile="$dir/munge/munge.key" >/dev/null 2>&1 ||
        dd if=/dev/urandom of="$dir/munge/munge.key" bs=1024 count=1 status=none
    chown munge:munge "$dir/munge/munge.key"
    chmod 0600 "$dir/munge/munge.key"
    runuser -u munge -- munged --socket="$dir/munge/munge.sock" \
        --key-file="$dir/munge/munge.key" --log-file="$dir/munge/munged.log" \
        --pid-file="$dir/munge/munged.pid" --seed-file="$dir/munge/munged.seed" ||
        { echo "munged failed to start" >&2; return 1; }
    SLURM_TEST_PIDS=()
    slurm__add_pid "$(cat "$dir/munge/munged.pid")"

    host=$(hostname -s)
    ctld_port=$(slurm__free_port) || return 1
    nodes=$(for k in $(seq 1 "$NB_NODES"); do
        echo "NodeName=nb$NB_ID-n$k NodeAddr=$NB_NET.$k CPUs=$NB_SLOTS RealMemory=1000 State=UNKNOWN"
    done)
    sed -e "s|@DIR@|$dir|g" -e "s|@HOST@(127.0.0.1)|$host($NB_NET.254)|" \
        -e "s|@CTLD_PORT@|$ctld_port|g" -e "s|@SLURMD_PORT@|6818|g" \
        -e "s|@CLUSTER@|cdsenb$NB_ID|g" -e "s|@FIRST_JOB_ID@|$((ctld_port * 100))|g" \
        -e "s|^SlurmdSpoolDir=.*|SlurmdSpoolDir=$dir/spool/%n|" \
        -e "s|^SlurmdPidFile=.*|SlurmdPidFile=$dir/run/slurmd-%n.pid|" \
        -e "s|^SlurmdLogFile=.*|SlurmdLogFile=$dir/log/slurmd-%n.log|" \
        -e "/^NodeName=/d" -e "s|^PartitionName=@PARTITION@ Nodes=@HOST@|PartitionName=debug Nodes=ALL|" \
        "$SLURM_TEST_SRC/slurm.conf.in" >"$dir/slurm.conf"
    printf '%s\n' "$nodes" >>"$dir/slurm.conf"
    echo "PMIxCliTmpDirBase=$dir/pmix" >"$dir/mpi.conf"
    export SLURM_CONF=$dir/slurm.conf
    SLURM_TEST_JOBCOMP=$dir/log/jobcomp.txt
    touch "$SLURM_TEST_JOBCOMP"

    setsid slurmctld -D -f "$SLURM_CONF" >"$dir/log/slurmctld.out" 2>&1 &
    slurm__add_pid "$!"
    # The nodes share one file system, but srun --mpi=pmix makes the same directory name for a
    # step on every node ("Cannot create directory .../spmix_appdir_0_JOB.STEP: File exists"):
    # each slurmd gets a mount namespace of its own in which its node's directory is the pmix one.
    for k in $(seq 1 "$NB_NODES"); do
        mkdir -p "$dir/spool/nb$NB_ID-n$k" "$dir/pmix-n$k"
        setsid bash "$NB" exec "$NB_DIR" "$k" unshare --mount --propagation private \
            sh -c 'mount --bind "$1" "$2" && exec slurmd -D -N "$3" -f "$4"' slurmd \
            "$dir/pmix-n$k" "$dir/pmix" "nb$NB_ID-n$k" "$SLURM_CONF" \
            >"$dir/log/slurmd-$k.out" 2>&1 &
        slurm__add_pid "$!"
    done

    local idle=0
    for _ in $(seq 1 60); do
        idle=$(sinfo -h -N -o '%t' 2>/dev/null | grep -c '^idle$' || true)
        [ "$idle" -eq "$NB_NODES" ] && break
        sleep 0.5
    done
    if [ "$idle" -ne "$NB_NODES" ]; then
        echo "netbed slurm: $idle of $NB_NODES nodes idle after 30 s; logs follow" >&2
        sinfo -N >&2 || true
        tail -n 20 "$dir"/log/*.log "$dir"/log/*.out >&2
        return 1
    fi
    echo "netbed slurm: $NB_NODES nodes idle (SLURM_CONF=$SLURM_CONF)" >&2
}
