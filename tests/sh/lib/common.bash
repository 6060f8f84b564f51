# Functions shared by the shell tests (sourced, never run: tests/CMakeLists.txt registers only
# tests/sh/*.sh). Each expects CDSE_SRC and CDSE_BUILD as CTest sets them.

# The published validation set the repository carries (tests/validation/published.csv).
cdse_published_csv() {
    echo "$CDSE_SRC/tests/validation/published.csv"
}

# A data directory for tests/validate in DIR: the source's calibration/ and jobs/, and an empty
# tests/validation/ for the known_gaps.txt a test puts there.
cdse_validation_tree() {
    mkdir -p "$1/tests/validation"
    ln -s "$CDSE_SRC/calibration" "$1/calibration"
    ln -s "$CDSE_SRC/jobs" "$1/jobs"
}

# Waits (up to 30 s) until the sweep PID has created STORE or has ended. The ranks install their
# signal handlers before MPI_Init and rank 0 creates the store after it, when every rank is in
# MPI_Init: a stop signal sent from then on is handled (exit 3), one sent earlier on a loaded
# machine could kill a rank mpirun is still starting (exit 143).
cdse_wait_started() {
    local _
    for _ in $(seq 600); do
        [ -e "$1" ] || ! kill -0 "$2" 2> /dev/null && return 0
        sleep 0.05
    done
}
