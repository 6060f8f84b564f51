#!/usr/bin/env bash
# A stand-in for the clusterdse binary with the same command line and exit codes, so the Slurm
# scripts and the harness can be tested without the real sweep (and faster). It is launched as
# N ranks by srun or mpirun exactly like clusterdse; rank 0 does the "work", one step a second:
#
#   standin.sh sweep JOB [-o OUT] [--resume] [--force]
#       JOB holds `steps = N;` (and optionally `output = "OUT";`). Writes "step i" lines to OUT,
#       then "done". SIGUSR1/SIGTERM: finish the step, exit 3 (OUT is resumable); --resume
#       continues after the last step; an existing OUT without --resume/--force is exit 1.
#   standin.sh probe PLAN -o OUT     writes "probe ranks=N" to OUT
#   standin.sh fit IN -o OUT [--name N]  writes "fitted from IN as N" to OUT (no MPI)
#   standin.sh verify STORE [-n K]   checks STORE ends with "done", prints K lines
#
# Every rank logs "standin: rank R of N ..." lines on stderr, so a test sees how many ranks ran.
set -u

rank=${OMPI_COMM_WORLD_RANK:-${PMIX_RANK:-${SLURM_PROCID:-0}}}
size=${OMPI_COMM_WORLD_SIZE:-${SLURM_NTASKS:-1}}
say() { echo "standin: rank $rank of $size: $*" >&2; }

cmd=${1:-}
shift || true
input=${1:-}
shift || true
out="" resume=0 force=0 n=5 name=""
while [ $# -gt 0 ]; do
    case $1 in
    -o) out=$2; shift ;;
    -n) n=$2; shift ;;
    --name) name=$2; shift ;;
    --resume) resume=1 ;;
    --force) force=1 ;;
    *) say "unknown argument $1"; exit 1 ;;
    esac
    shift
done
[ -r "$input" ] || { say "cannot read '$input'"; exit 1; }
[ $resume -eq 0 ] || [ $force -eq 0 ] || { say "--resume and --force exclude each other"; exit 1; }

stop=0
trap 'stop=1; say "got a signal"' USR1 TERM

# Sleeps SECONDS in a child, so the signal trap runs at once instead of after the sleep.
nap() {
    sleep "$1" &
    wait $! 2>/dev/null || true
}

sweep() {
    local steps done_steps
    steps=$(sed -n 's/^ *steps *= *\([0-9]*\).*/\1/p' "$input")
    [ -n "$out" ] || out=$(sed -n 's/^ *output *= *"\(.*\)".*/\1/p' "$input")
    [ -n "$steps" ] && [ -n "$out" ] || { say "$input: needs steps and an output"; exit 1; }
    if [ "$rank" -ne 0 ]; then
        # Other ranks idle until rank 0 is done or a signal comes, like workers.
        while [ $stop -eq 0 ]; do
            [ "$(tail -n 1 "$out" 2>/dev/null)" = done ] && exit 0
            nap 0.2
        done
        exit 3
    fi
    if [ -e "$out" ] && [ $resume -eq 0 ]; then
        [ $force -eq 1 ] || { say "$out exists: use --resume or --force"; exit 1; }
        rm -f "$out"
    fi
    if [ $resume -eq 1 ] && [ ! -e "$out" ]; then
        say "$out: nothing to resume"
        exit 1
    fi
    done_steps=$(grep -c '^step ' "$out" 2>/dev/null)
    done_steps=${done_steps:-0}
    say "sweep of $steps steps, $done_steps already done"
    : >>"$out"
    local i
    for ((i = done_steps; i < steps; i++)); do
        if [ $stop -eq 1 ]; then
            say "interrupted after step $i of $steps: resume with --resume"
            exit 3
        fi
        nap 1
        echo "step $i" >>"$out"
    done
    [ "$(tail -n 1 "$out")" = done ] || echo done >>"$out"
    say "sweep done: $steps steps"
    exit 0
}

case $cmd in
sweep) sweep ;;
probe)
    [ -n "$out" ] || { say "probe needs -o"; exit 1; }
    [ "$rank" -eq 0 ] && echo "probe ranks=$size" >"$out"
    say "probe done"
    ;;
fit)
    [ -n "$out" ] || { say "fit needs -o"; exit 1; }
    echo "fitted from $input${name:+ as $name}" >"$out"
    say "fit done"
    ;;
verify)
    [ "$(tail -n 1 "$input")" = done ] || { say "$input is not complete"; exit 2; }
    [ "$rank" -eq 0 ] && head -n "$n" "$input"
    say "verify done"
    ;;
*) say "unknown command '$cmd'"; exit 1 ;;
esac
