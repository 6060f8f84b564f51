#!/usr/bin/env bash
# Issue 13's findings on messages and exit codes: --where with an unknown column suggests the
# closest and lists every column; output paths that cannot be written are bad input (1) in
# sweep and fit; sweep creates every missing directory level; a file that is not a store is
# bad input for --resume; eval says when nothing is feasible; top says when the store did not
# keep what was asked for.
: "${CDSE_SRC:?}"
source "$CDSE_SRC/tests/sh/lib/expect.sh"
job=$CDSE_SRC/tests/jobs/report.cfg
expect 0 '' mpirun -np 2 "$CLUSTERDSE" sweep "$job" -o a/b/c/s.h5 --quiet
[ -f a/b/c/s.h5 ] || { echo "cli_findings: sweep did not create a/b/c/"; exit 1; }
expect 1 'unknown name mem; did you mean mem_total_gib\?' "$CLUSTERDSE" top a/b/c/s.h5 --where 'mem<70'
grep -q '^ *columns: index, model, .*, mem_total_gib, .*, placement, .*, t_fixed_s, .*, tokens_per_kwh, .*, checkpoint_flag, .*, mem_reserved_gib, checkpoint, storage_read_gbs, t_ceiling_s, pool_layers_0, .*, pool_tp_3, replace_time_s, tier_link_gbs$' err.txt
expect 1 'unknown name placment; did you mean placement\?' "$CLUSTERDSE" top a/b/c/s.h5 --where 'placment=="x"'
expect 1 'unknown name xyzzy$' "$CLUSTERDSE" top a/b/c/s.h5 --where 'xyzzy>1'
expect 0 'keeps only feasible configurations \(store = "feasible"\)' \
    "$CLUSTERDSE" top a/b/c/s.h5 --all --where 'status=="oom"'
echo "not a store" >junk.h5
expect 1 'junk.h5 is not an HDF5 file' mpirun -np 2 "$CLUSTERDSE" sweep "$job" -o junk.h5 --resume
expect 1 'cannot create the directory junk.h5/x' mpirun -np 2 "$CLUSTERDSE" sweep "$job" -o junk.h5/x/s.h5
mpirun -np 2 "$CLUSTERDSE" probe "$CDSE_SRC/calibration/plans/quick.cfg" -o p.h5 >/dev/null
expect 1 'cannot use the directory no/such of no/such/f.cfg' "$CLUSTERDSE" fit p.h5 -o no/such/f.cfg
expect 1 'cannot write in directory junk.h5' "$CLUSTERDSE" fit p.h5 -o junk.h5/f.cfg
# gpt3-175b (174.6B parameters: 16 bytes each with Adam are 2.8 TB) on 8 A100s of 80 GB: oom.
cat >none.cfg <<'CFG'
name = "none";
models = ( "gpt3-175b" );
systems = ( "a100-80g-dgx" );
space = { gpus = [ 8 ]; tp = [ 1, 2 ]; pp = [ 1 ]; microbatch = [ 1 ]; global_batch = [ 64 ]; };
CFG
expect 0 'no feasible configuration among the 2 of none.cfg' "$CLUSTERDSE" eval none.cfg -n 3
[ "$(wc -l <out.txt)" = 1 ] || { echo "cli_findings: eval printed rows"; exit 1; }
echo "cli_findings: ok"
