#!/usr/bin/env bash
# Issue 9: one fit pipeline. A job's probe section (clusterdse sweep) and `clusterdse fit` turn
# the same probes into the same network: the profile the sweep writes for its measured system
# and the one `clusterdse fit PROBES --job JOB --system NAME` writes are byte-identical, and
# `--base SYSTEM` (the same system by name) gives the same network section. The profile read
# back as a network_profile gives the system the sweep evaluated (same effective job).
set -euo pipefail
: "${CLUSTERDSE:?} ${CDSE_SRC:?}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
run() { echo "+ $*" >&2; "$@"; }
cat >job.cfg <<'JOB'
name = "fit-pipeline";
models = ( "gpt3-1.3b" );
systems = ( { base = "h100-sxm-dgx"; name = "measured"; } );
space = { gpus = [ 8 ]; tp = [ 1, 2 ]; global_batch = [ 64 ]; };
probe = { plan = "quick"; systems = [ "measured" ]; };
JOB
run mpirun -np 2 "$CLUSTERDSE" sweep job.cfg -o out.h5 >out.txt 2>err.txt || { cat err.txt; exit 1; }
grep '^sweep: probe: ' err.txt
grep -q '^sweep: probe: [1-9][0-9]* fitted (level, collective) pairs applied to system measured; its network written to out.fitted-measured.cfg$' err.txt
run "$CLUSTERDSE" fit out.probes.h5 --job job.cfg --system measured -o cli.cfg >/dev/null
run cmp out.fitted-measured.cfg cli.cfg
run "$CLUSTERDSE" fit out.probes.h5 --base h100-sxm-dgx --name measured-fitted -o base.cfg >/dev/null
grep -q '^base = "h100-sxm-dgx";$' base.cfg
run cmp <(sed -n '/^name = /,$p' cli.cfg) <(sed -n '/^name = /,$p' base.cfg)
# The profile's numbers read back exactly: a job using it as network_profile has the network
# the sweep evaluated. Effective jobs compared from the network list on (names differ).
cat >again.cfg <<'JOB'
models = ( "gpt3-1.3b" );
systems = ( { base = "h100-sxm-dgx"; name = "measured"; network_profile = "cli.cfg"; } );
space = { gpus = [ 8 ]; tp = [ 1, 2 ]; global_batch = [ 64 ]; };
JOB
run "$CLUSTERDSE" eval again.cfg --show-job >again.txt
sed -n '/^    network = (/,/^    );/p' again.txt >net-again.txt
sed -n '/^network = (/,/^);/p' cli.cfg | sed 's/^/    /' >net-profile.txt
[ -s net-again.txt ] || { echo "no network in the effective job"; exit 1; }
run diff net-profile.txt net-again.txt
echo "fit_pipeline: ok"
