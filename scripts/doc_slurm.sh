#!/usr/bin/env bash
# What docs/slurm.md shows of Slurm jobs (scripts/regen_docs.sh --slow, checked by
# tests/sh/docs_slow.sh): slurm/sweep.sbatch under the throw-away one-node Slurm cluster of the
# tests (tests/slurm/cluster.sh: root only), with the clusterdse on PATH as the binary.
#   scripts/doc_slurm.sh quickstart   the quick start as one batch job: the command, then the log
#   scripts/doc_slurm.sh timelimit    tests/sh/slurm_timelimit.sh's job (a sweep of about 40 s
#                                     under a 1-minute limit): the log's first and last runs
# The source tree is shown as /path/to/clusterdse, the job's directory as /tmp; progress lines
# (and, for the time limit, the table of the last run) are left out. What varies from run to
# run (dates, job ids, the node's name, timings, and for the time limit the number of runs and
# the sizes, which depend on this machine's speed) is masked by the block in docs/slurm.md.
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
mode=${1:?usage: doc_slurm.sh quickstart|timelimit}
bin=$(readlink -f "$(command -v clusterdse)")
work=$(mktemp -d /tmp/cdse-doc-slurm.XXXXXX)
trap 'rm -rf "$work"' EXIT
cd "$work"
export CLUSTERDSE_BIN=$bin CLUSTERDSE=$bin
# shellcheck source=SCRIPTDIR/../tests/slurm/cluster.sh
(source "$src/tests/slurm/cluster.sh" && slurm_install_if_missing) >&2
# The paths of this machine as the docs show them.
paths() { sed -e "s|$bin|/path/to/clusterdse/build/clusterdse|g" -e "s|$src|/path/to/clusterdse|g" \
    -e "s|$work|/tmp|g"; }
progress='^sweep: [0-9]+/[0-9]+ \('

case $mode in
quickstart)
    cat <<'CMD'
# cd /tmp && bash -c 'source /path/to/clusterdse/tests/slurm/cluster.sh && slurm_cluster_start &&
    sbatch --wait -N 1 --ntasks-per-node=2 /path/to/clusterdse/slurm/sweep.sbatch \
        /path/to/clusterdse/jobs/quickstart.cfg /tmp/q.h5; cat cdse-sweep-*.out'
CMD
    bash -c "source '$src/tests/slurm/cluster.sh' && slurm_cluster_start &&
        sbatch --wait -N 1 --ntasks-per-node=2 '$src/slurm/sweep.sbatch' \
            '$src/jobs/quickstart.cfg' '$work/q.h5'; cat cdse-sweep-*.out" 2>&1 |
        grep -vE "$progress" | awk '/^# best/ { print; print "..."; t = 1; next } t && /^[# ]/ { next } { t = 0; print }' |
        paths
    ;;
timelimit)
    run() { "$@"; }
    # shellcheck source=SCRIPTDIR/../tests/slurm/timelimit_job.sh
    source "$src/tests/slurm/timelimit_job.sh"
    # The job is sized by timing a small sweep (about 40 s on 2 ranks); if the machine got faster
    # in the meantime and the sweep finished within its first run, it is sized twice as large.
    for seconds in 40 80 160; do
        timelimit_job_sized $seconds >size.log 2>&1 || { cat size.log >&2; exit 1; }
        rm -rf limited.log limited.h5
        bash -c "source '$src/tests/slurm/cluster.sh' && slurm_cluster_start &&
            timeout 900 sbatch --wait -N 1 --ntasks-per-node=2 -t 1 --signal=B:USR1@30 \
                -o limited.log '$src/slurm/sweep.sbatch' job.cfg '$work/limited.h5'" \
            >/dev/null 2>&1 || true
        ! grep -q 'requeued: the next run' limited.log 2>/dev/null || break
    done
    echo '# sbatch -N 1 --ntasks-per-node=2 -t 1 --signal=B:USR1@30 /path/to/clusterdse/slurm/sweep.sbatch job.cfg /tmp/limited.h5'
    # Run 1 as it is, the middle runs counted, the last run without its table. Left out, as
    # they come only when Slurm's requeue overtakes the end of the run (some runs, not others):
    # slurmstepd's "*** JOB ... CANCELLED ... DUE TO JOB REQUEUE ***" and the batch shell's
    # "got SIGTERM" after its "requeued" line.
    grep -vE "$progress|^slurmstepd" limited.log | paths | awk '
        / run [0-9]+ on / { run++; requeued = 0 }
        requeued && /got SIGTERM/ { next }
        /requeued: the next run/ { requeued = 1 }
        { line[++n] = $0; of[n] = run; last = run }
        END {
            for (i = 1; i <= n; i++) if (of[i] <= 1) print line[i]
            printf "(%d run(s) like run 1 in between)\n", (last > 2 ? last - 2 : 0)
            for (i = 1; i <= n; i++) {
                if (of[i] != last) continue
                if (line[i] ~ /^# best/) { print line[i]; print "..."; t = 1; continue }
                if (t && line[i] ~ /^[# ]/) continue
                t = 0; print line[i]
            }
        }'
    ;;
*)
    echo "doc_slurm.sh: unknown mode '$mode' (quickstart or timelimit)" >&2
    exit 1
    ;;
esac
