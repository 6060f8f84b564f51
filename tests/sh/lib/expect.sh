# Sourced by the tests in tests/sh/ that check commands' exit codes and messages (not a test: CTest
# runs tests/sh/*.sh only). Sets up a scratch directory, removed at exit, as the current
# directory, and defines expect.
#   expect CODE PATTERN CMD...: CMD exits with CODE and its stderr matches PATTERN (grep -E; ""
#   matches anything). Its stdout is left in out.txt, its stderr in err.txt; the first lines of
#   stderr are echoed. A mismatch ends the test, named after the sourcing script.
set -euo pipefail
: "${CLUSTERDSE:?}" "${CDSE_SRC:?}"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
test_name=$(basename "$0" .sh)
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cd "$dir"
expect() {
    local want=$1 pattern=$2
    shift 2
    echo "+ $*"
    set +e
    "$@" >out.txt 2>err.txt
    local rc=$?
    set -e
    sed 's/^/    /' err.txt | head -4
    [ "$rc" = "$want" ] || { echo "$test_name: exit $rc, expected $want"; exit 1; }
    [ -z "$pattern" ] || grep -Eq -- "$pattern" err.txt ||
        { echo "$test_name: stderr lacks /$pattern/"; exit 1; }
}
