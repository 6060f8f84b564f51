# shellcheck shell=bash
# A throw-away one-node Slurm cluster for tests. Source this file, then:
#
#   slurm_test_preflight              # SKIP (exit 77) unless root; installs Slurm if missing
#   slurm_cluster_start               # munged + slurmctld + slurmd under $SLURM_TEST_DIR, an
#                                     # EXIT trap and a watchdog that stop them all
#   slurm_submit NAME SBATCH-ARGS...  # sbatch --wait in the background
#   slurm_wait_submitted              # until every submitted job has ended
#   slurm_expect NAME STATE EXIT [MIN_RUNS [MAX_RUNS]]   # from the jobcomp records
#   slurm_check "what" COMMAND...     # ok/FAIL line; failures counted in SLURM_TEST_FAILURES
#
# Everything lives in a fresh temp directory (state, spool, logs, the munge socket, PMIx
# directories), with ports and job ids of its own, so it neither touches nor needs a site's
# Slurm, and several tests can each run one at the same time. After slurm_cluster_start,
# SLURM_CONF points at the generated slurm.conf, so sbatch, squeue, scontrol (also those run
# inside jobs) talk to this cluster. Why each setting: tests/slurm/slurm.conf.in, docs/slurm.md.

SLURM_TEST_SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SLURM_TEST_PIDS=()

slurm__log() { echo "slurm-test: $*" >&2; }

# Exits 77 (CTest's SKIP_RETURN_CODE: reported as skipped) with a SKIP line when this machine
# cannot run the Slurm tests: not root (slurmd runs
# jobs as root here and the packages may need installing), or a sanitizer build (these tests
# exercise the batch scripts, not the C code, and the release build already ran them; they
# would only double the CI time). CDSE_SLURM_TESTS=0 skips too, =1 forces a sanitizer build.
slurm_test_preflight() {
    if [ "${CDSE_SLURM_TESTS:-}" = 0 ]; then
        echo "SKIP: CDSE_SLURM_TESTS=0"
        exit 77
    fi
    if [ "$(id -u)" -ne 0 ]; then
        echo "SKIP: the Slurm tests start slurmd and need root"
        exit 77
    fi
    if [ "${CDSE_SLURM_TESTS:-}" != 1 ] && [ -n "${CDSE_BUILD:-}" ] &&
        grep -q '^CDSE_SANITIZE:BOOL=ON' "$CDSE_BUILD/CMakeCache.txt" 2>/dev/null; then
        echo "SKIP: sanitizer build (the release build runs the Slurm tests)"
        exit 77
    fi
    slurm_install_if_missing || { echo "FAIL: could not install Slurm"; exit 1; }
}

# slurm_submit NAME SBATCH-ARGS...: sbatch --wait in the background (printing the command);
# the job id goes to $SLURM_TEST_DIR/NAME.jid, sbatch's exit code to NAME.rc. The timeout
# turns a job that can never start (a request the node cannot meet) into a failure.
slurm_submit() {
    local name=$1
    shift
    echo "+ sbatch --parsable --wait $*" >&2
    (
        rc=0
        timeout "${SLURM_TEST_JOB_TIMEOUT:-300}" sbatch --parsable --wait "$@" \
            >"$SLURM_TEST_DIR/$name.jid" 2>"$SLURM_TEST_DIR/$name.sbatch.err" || rc=$?
        echo $rc >"$SLURM_TEST_DIR/$name.rc"
    ) &
    SLURM_TEST_SUBMITS+=("$!")
}

# Waits for every slurm_submit (a plain `wait` would also wait for the daemons).
SLURM_TEST_SUBMITS=()
slurm_wait_submitted() {
    local pid
    for pid in "${SLURM_TEST_SUBMITS[@]}"; do
        wait "$pid" || true
    done
    SLURM_TEST_SUBMITS=()
}

# Waits until job NAME (from slurm_submit) is RUNNING; returns 1 after 120 s.
slurm_wait_running() {
    local i jid
    for i in $(seq 1 240); do
        jid=$(cat "$SLURM_TEST_DIR/$1.jid" 2>/dev/null || true)
        if [ -n "$jid" ] && [ "$(squeue -h -j "$jid" -o %T 2>/dev/null)" = RUNNING ]; then
            return 0
        fi
        sleep 0.5
    done
    return 1
}

# Installs Debian's Slurm and munge when a command is missing. Returns 1 (and says why) when
# that is impossible, so a caller can skip instead of failing on a machine without root.
slurm_install_if_missing() {
    local missing=() cmd
    export PATH=$PATH:/usr/sbin:/sbin
    for cmd in slurmctld slurmd sbatch munged mungekey; do
        command -v "$cmd" >/dev/null 2>&1 || missing+=("$cmd")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    if [ "$(id -u)" -ne 0 ]; then
        slurm__log "missing ${missing[*]} and not root: cannot install Slurm"
        return 1
    fi
    # Several Slurm tests may start at once on a fresh machine: one installs, the others wait
    # for it (dpkg takes one apt-get at a time) and then find everything there.
    (
        flock 9
        command -v slurmctld >/dev/null 2>&1 && command -v munged >/dev/null 2>&1 && exit 0
        slurm__log "installing Debian's slurmctld slurmd slurm-client munge"
        export DEBIAN_FRONTEND=noninteractive
        # "policy-rc.d denied execution of start" is expected: nothing starts by itself.
        apt=(apt-get -y -qq -o DPkg::Lock::Timeout=300)
        if ! "${apt[@]}" install --no-install-recommends slurmctld slurmd slurm-client munge \
            >/dev/null 2>&1; then
            "${apt[@]}" update >/dev/null 2>&1 || true
            "${apt[@]}" install --no-install-recommends slurmctld slurmd slurm-client munge \
                >/dev/null || exit 1
        fi
    ) 9>/tmp/cdse-slurm-install.lock
}

# A TCP port nobody listens on, from a range above the usual service ports.
slurm__free_port() {
    local port tries=0
    while [ $tries -lt 50 ]; do
        port=$((20000 + RANDOM % 20000))
        if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
            echo "$port"
            return 0
        fi
        tries=$((tries + 1))
    done
    return 1
}

# Records daemon PID(s) in SLURM_TEST_PIDS and in $SLURM_TEST_DIR/pids, which the watchdog reads.
slurm__add_pid() {
    SLURM_TEST_PIDS+=("$@")
    echo "${SLURM_TEST_PIDS[*]}" >"$SLURM_TEST_DIR/pids"
}

# Starts, before the first daemon, a watchdog in a session of its own that stops the daemons
# listed in DIR/pids when the shell PID dies without running its EXIT trap (SIGKILL, a test
# driver's timeout), however far the start got. Sets SLURM_TEST_WATCHDOG.
slurm__watch() { # DIR
    : >"$1/pids"
    env -u SLURM_CONF setsid bash -c 'while kill -0 "$1" 2>/dev/null; do sleep 1; done
        source "$2"; SLURM_TEST_DIR=$3; read -r -a SLURM_TEST_PIDS <"$3/pids" || true
        [ ${#SLURM_TEST_PIDS[@]} -eq 0 ] || slurm__stop_daemons' watchdog "$$" \
        "$SLURM_TEST_SRC/cluster.sh" "$1" >/dev/null 2>&1 </dev/null &
    SLURM_TEST_WATCHDOG=$!
}

# Starts munged, slurmctld and slurmd; waits until the node is idle. Sets SLURM_TEST_DIR (kept if
# already set), SLURM_CONF, SLURM_TEST_JOBCOMP and an EXIT trap that stops them all.
# SLURM_TEST_CPUS (default 4) is the node's slot count.
slurm_cluster_start() {
    export PATH=$PATH:/usr/sbin:/sbin
    SLURM_TEST_DIR=${SLURM_TEST_DIR:-$(mktemp -d /tmp/cdse-slurm.XXXXXX)}
    local dir=$SLURM_TEST_DIR
    mkdir -p "$dir"/{state,spool,run,log,munge}
    chmod 0755 "$dir"
    trap slurm_cluster_stop EXIT
    trap 'exit 130' INT TERM
    slurm__watch "$dir"

    # munged refuses a socket directory that is not its own, or not searchable by all.
    chown munge:munge "$dir/munge"
    chmod 0755 "$dir/munge"
    mungekey --create --keyfile="$dir/munge/munge.key" >/dev/null 2>&1 ||
        dd if=/dev/urandom of="$dir/munge/munge.key" bs=1024 count=1 status=none
    chown munge:munge "$dir/munge/munge.key"
    chmod 0600 "$dir/munge/munge.key"
    runuser -u munge -- munged --socket="$dir/munge/munge.sock" \
        --key-file="$dir/munge/munge.key" --log-file="$dir/munge/munged.log" \
        --pid-file="$dir/munge/munged.pid" --seed-file="$dir/munge/munged.seed" ||
        { slurm__log "munged failed to start:"; cat "$dir/munge/munged.log" >&2; return 1; }
    slurm__add_pid "$(cat "$dir/munge/munged.pid")"
    if ! munge -S "$dir/munge/munge.sock" -n | unmunge -S "$dir/munge/munge.sock" >/dev/null; then
        slurm__log "munge does not work"
        return 1
    fi

    local host mem ctld_port slurmd_port
    host=$(hostname -s)
    # A little below physical memory, as slurmd checks RealMemory against it.
    mem=$(awk '/^MemTotal:/ { printf "%d", $2 / 1024 * 0.9 }' /proc/meminfo)
    ctld_port=$(slurm__free_port) && slurmd_port=$(slurm__free_port) || return 1
    sed -e "s|@DIR@|$dir|g" -e "s|@HOST@|$host|g" -e "s|@CTLD_PORT@|$ctld_port|g" \
        -e "s|@SLURMD_PORT@|$slurmd_port|g" -e "s|@CPUS@|${SLURM_TEST_CPUS:-4}|g" \
        -e "s|@MEM_MB@|$mem|g" -e "s|@CLUSTER@|cdse$$|g" -e "s|@PARTITION@|debug|g" \
        -e "s|@FIRST_JOB_ID@|$((ctld_port * 100))|g" \
        "$SLURM_TEST_SRC/slurm.conf.in" >"$dir/slurm.conf"
    # srun --mpi=pmix makes a directory per job step, named by uid, job and step id, under
    # /tmp by default: two test clusters (both with job 1, 2, ...) would collide there.
    mkdir -p "$dir/pmix"
    echo "PMIxCliTmpDirBase=$dir/pmix" >"$dir/mpi.conf"
    export SLURM_CONF=$dir/slurm.conf
    SLURM_TEST_JOBCOMP=$dir/log/jobcomp.txt
    touch "$SLURM_TEST_JOBCOMP"

    # Foreground mode (-D) in a session of their own: $! is the daemon, stopped by PID.
    setsid slurmctld -D -f "$SLURM_CONF" >"$dir/log/slurmctld.out" 2>&1 &
    slurm__add_pid "$!"
    setsid slurmd -D -f "$SLURM_CONF" >"$dir/log/slurmd.out" 2>&1 &
    slurm__add_pid "$!"

    local i state
    for i in $(seq 1 60); do
        state=$(sinfo -h -N -o '%t' 2>/dev/null | head -1)
        [ "$state" = "idle" ] && break
        sleep 0.5
    done
    if [ "$state" != "idle" ]; then
        slurm__log "node not idle after 30 s (state '$state'); logs follow"
        tail -n 20 "$dir"/log/slurmctld.log "$dir"/log/slurmd.log "$dir"/log/*.out >&2
        return 1
    fi
    slurm__log "cluster up in $dir (SLURM_CONF=$SLURM_CONF, node $host idle)"
}

# Stops every process of this cluster: slurmd, slurmctld (TERM, then KILL after 10 s), then
# whatever they left (slurmstepd, job scripts, launchers, ranks: all carry our SLURM_CONF in
# their environment, inherited from the daemons or from sbatch), then munged. Needs
# SLURM_TEST_DIR and SLURM_TEST_PIDS (munged, slurmctld, slurmd).
slurm__stop_daemons() {
    local i pid p conf="SLURM_CONF=$SLURM_TEST_DIR/slurm.conf" left=()
    for ((i = ${#SLURM_TEST_PIDS[@]} - 1; i >= 1; i--)); do
        pid=${SLURM_TEST_PIDS[$i]}
        kill -TERM "$pid" 2>/dev/null || continue
        for _ in $(seq 1 40); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.25
        done
        kill -KILL "$pid" 2>/dev/null || true
    done
    for p in /proc/[0-9]*; do
        p=${p#/proc/}
        [ "$p" != $$ ] && [ "$p" != "$BASHPID" ] || continue
        if grep -qzx -- "$conf" "/proc/$p/environ" 2>/dev/null; then
            left+=("$p")
        fi
    done
    [ ${#left[@]} -eq 0 ] || kill -KILL "${left[@]}" 2>/dev/null || true
    # munged last, and waited for: it removes its socket and pid file as it exits, which raced
    # with the directory's removal on a loaded machine ("rm: cannot remove .../munge: Directory
    # not empty" after every check had passed).
    if [ ${#SLURM_TEST_PIDS[@]} -gt 0 ] && kill -TERM "${SLURM_TEST_PIDS[0]}" 2>/dev/null; then
        for _ in $(seq 1 40); do
            kill -0 "${SLURM_TEST_PIDS[0]}" 2>/dev/null || break
            sleep 0.25
        done
        kill -KILL "${SLURM_TEST_PIDS[0]}" 2>/dev/null || true
    fi
}

# Cancels what is left and stops every daemon this shell started (the EXIT trap). Safe to call
# twice; keeps the directory when SLURM_TEST_KEEP=1 or the test failed, so its logs can be read.
slurm_cluster_stop() {
    local rc=$?
    trap - EXIT
    [ -n "${SLURM_TEST_DIR:-}" ] && [ ${#SLURM_TEST_PIDS[@]} -gt 0 ] || return $rc
    [ -z "${SLURM_TEST_WATCHDOG:-}" ] || kill "$SLURM_TEST_WATCHDOG" 2>/dev/null || true
    if [ ${#SLURM_TEST_PIDS[@]} -gt 1 ]; then
        timeout 10 scancel --quiet --user="$(id -un)" 2>/dev/null || true
    fi
    slurm__stop_daemons
    SLURM_TEST_PIDS=()
    if [ $rc -ne 0 ]; then
        slurm__log "failed (exit $rc): logs kept in $SLURM_TEST_DIR"
    elif [ "${SLURM_TEST_KEEP:-0}" = 1 ]; then
        slurm__log "logs kept in $SLURM_TEST_DIR"
    else
        rm -rf "$SLURM_TEST_DIR" 2>/dev/null || { sleep 1; rm -rf "$SLURM_TEST_DIR"; }
    fi
    slurm__log "cluster stopped"
    return $rc
}

# Prints the jobcomp lines of every run of JOBID (one per run: a requeued job has several).
# Each line has JobId= ... JobState= ... ExitCode=N:S ... fields (jobcomp/filetxt format).
slurm_job_runs() {
    grep -E "^JobId=$1 " "$SLURM_TEST_JOBCOMP" || true
}

# Field FIELD of a jobcomp line on stdin, e.g. `slurm_job_runs 3 | tail -1 | slurm_field JobState`.
slurm_field() {
    sed -n "s/.* $1=\([^ ]*\).*/\1/p"
}

# slurm_expect NAME STATE EXITCODE [MIN_RUNS [MAX_RUNS]]: checks job NAME's last jobcomp line
# (JobState, ExitCode=EXITCODE:0) and how many times it ran; prints ok/FAIL with the evidence.
SLURM_TEST_FAILURES=0
slurm_expect() {
    local name=$1 state=$2 code=$3 min_runs=${4:-1} max_runs=${5:-1000} jid runs last
    jid=$(cat "$SLURM_TEST_DIR/$name.jid" 2>/dev/null || true)
    runs=$(slurm_job_runs "$jid" | wc -l)
    last=$(slurm_job_runs "$jid" | tail -n 1)
    if [ -n "$jid" ] && [ "$(slurm_field JobState <<<"$last")" = "$state" ] &&
        [ "$(slurm_field ExitCode <<<"$last")" = "$code:0" ] &&
        [ "$runs" -ge "$min_runs" ] && [ "$runs" -le "$max_runs" ]; then
        echo "ok:   $name: job $jid $state, exit $code, $runs run(s)"
    else
        echo "FAIL: $name: job '$jid': wanted $state exit $code in $min_runs..$max_runs runs;" \
            "got $runs run(s), last: $last (sbatch: $(cat "$SLURM_TEST_DIR/$name.rc" \
            2>/dev/null) $(cat "$SLURM_TEST_DIR/$name.sbatch.err" 2>/dev/null))"
        SLURM_TEST_FAILURES=$((SLURM_TEST_FAILURES + 1))
    fi
}

# slurm_check DESCRIPTION COMMAND...: runs COMMAND, prints ok/FAIL, counts failures.
slurm_check() {
    local what=$1
    shift
    if "$@"; then
        echo "ok:   $what"
    else
        echo "FAIL: $what"
        SLURM_TEST_FAILURES=$((SLURM_TEST_FAILURES + 1))
    fi
}
