#!/usr/bin/env bash
# Damaged stores never crash or hang clusterdse (issue 15): CDSE_MUTATIONS (default 1000)
# byte-mutated copies of two small stores (one written now, one of the older format with
# variable-length strings and no checksums, tests/fuzz/stores/old_format_seed.h5) go through
# `top`, every fourth copy through `compare`, and every second copy of the new one through
# `sweep --resume`, each under a 4 GiB memory limit; every run must exit 0, 1 or 2 within 20 s. Prints the counts of exit codes.
# By hand, for more: CDSE_MUTATIONS=20000 ctest -R store_mutations -V
set -euo pipefail
: "${CLUSTERDSE:?}" "${CDSE_SRC:?}"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cat >"$dir/job.cfg" <<CFG
name = "mutations";
models = ( "gpt3-125m" );
systems = ( "a100-80g-dgx" );
space = { gpus = [ 8, 16 ]; tp = [ 1, 2 ]; pp = [ 1, 2 ]; global_batch = [ 64 ]; };
objective = { top = 3; store = "all"; };
CFG
echo "+ $CLUSTERDSE sweep $dir/job.cfg -o $dir/seed.h5 --quiet"
"$CLUSTERDSE" sweep "$dir/job.cfg" -o "$dir/seed.h5" --quiet >/dev/null
cmd=(/usr/bin/python3 "$CDSE_SRC/tests/fuzz/store_mutations.py" "$CLUSTERDSE" "$dir/job.cfg"
     "$dir/seed.h5" "$CDSE_SRC/tests/fuzz/stores/old_format_seed.h5"
     --count "${CDSE_MUTATIONS:-1000}" --resume-every 2 --compare-every 4 --timeout 20
     --memory-mib 4096
     --keep "${CDSE_BUILD:-$dir}")
echo "+ ${cmd[*]}"
"${cmd[@]}"
