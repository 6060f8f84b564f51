#!/usr/bin/env bash
# clusterdse --version: the project's version (CMakeLists.txt) and the git revision it was built
# from, e.g. "clusterdse 0.1.0 (git db38212)".
set -euo pipefail
: "${CLUSTERDSE:?}" "${CDSE_SRC:?}"
echo "+ $CLUSTERDSE --version"
got=$("$CLUSTERDSE" --version)
echo "    $got"
version=$(sed -n 's/^project(clusterdse VERSION \([0-9.]*\) .*/\1/p' "$CDSE_SRC/CMakeLists.txt")
[ -n "$version" ] || { echo "version: no VERSION in $CDSE_SRC/CMakeLists.txt"; exit 1; }
if rev=$(git -C "$CDSE_SRC" rev-parse --short HEAD 2>/dev/null); then
    want="clusterdse $version (git $rev)"
    [ "$got" = "$want" ] || { echo "version: got '$got', want '$want'"; exit 1; }
else # a source tree without git: the revision is "unknown"
    [ "$got" = "clusterdse $version (git unknown)" ] || { echo "version: got '$got'"; exit 1; }
fi
[ "$("$CLUSTERDSE" version)" = "$got" ] || { echo "version: 'clusterdse version' differs"; exit 1; }
echo "version: ok"
