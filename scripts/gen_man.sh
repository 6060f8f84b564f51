#!/usr/bin/env bash
# Writes the man page clusterdse.1 from the binary's --help texts with help2man (called by the
# build when help2man is installed): the top-level --help is the synopsis and description, each
# command's --help a subsection of COMMANDS, so the page cannot drift from the program.
#   scripts/gen_man.sh BUILD/clusterdse OUT.1
set -euo pipefail
bin=$1 out=$2
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# A sanitizer build: MPI's allocations at exit are not ours to report here.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0}
include=$(mktemp)
trap 'rm -f "$include"' EXIT
{
    echo "[COMMANDS]"
    for cmd in $("$bin" --help | awk '/^  [a-z]+ / {print $1}'); do
        echo ".SS $cmd"
        echo ".nf"
        "$bin" "$cmd" --help 2>&1 | sed 's/\\/\\e/g; s/^\./\\\&./'
        echo ".fi"
    done
    echo "[FILES]"
    echo "BINDIR/../share/clusterdse: the model zoo (jobs/models), system profiles"
    echo "(calibration/systems), Slurm scripts (slurm/), the Python package (python/);"
    echo "found relative to the binary, so a moved prefix still finds them."
    echo "[SEE ALSO]"
    echo "The documentation in BINDIR/../share/doc/clusterdse (README.md, docs/)."
} >"$include"
help2man --no-info --no-discard-stderr --name "design GPU clusters and training strategies \
for transformer models" --version-string "$("$bin" --version | awk '{print $2}')" \
    --include "$include" --output "$out" "$bin"
