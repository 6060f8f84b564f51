#!/usr/bin/env bash
# Results must not move when the code is reorganised: the quick-start and COMET-study stores are
# compared, column by column, with digests of the stores made by the commit each digest names
# (tests/ref/*.digest, tests/py/store_digest.py). A change that moves results on purpose
# regenerates the reference with the command below and says why in its commit.
#   python3 tests/py/store_digest.py STORE.h5 > tests/ref/NAME.digest   (then restore the header)
set -euo pipefail
: "${CLUSTERDSE:?} ${CDSE_SRC:?}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
run() { echo "+ $*" >&2; "$@"; }
check() { # STORE REFERENCE
    run /usr/bin/python3 "$CDSE_SRC/tests/py/store_digest.py" "$1" "$2" > got.digest
    if ! diff <(grep -v '^# digest' "$2") got.digest; then
        echo "store_identity: $1 differs from $2" >&2
        exit 1
    fi
}
run mpirun -np 2 "$CLUSTERDSE" sweep -o qs.h5 --quiet > /dev/null
check qs.h5 "$CDSE_SRC/tests/ref/quickstart.digest"
run mpirun -np 2 "$CLUSTERDSE" sweep "$CDSE_SRC/jobs/comet-gpt3-175b.cfg" -o comet.h5 --quiet > /dev/null
check comet.h5 "$CDSE_SRC/tests/ref/comet-gpt3-175b.digest"
echo "store_identity: ok"
