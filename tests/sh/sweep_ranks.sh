#!/usr/bin/env bash
# The same job on 1, 2, 3 and 4 ranks (oversubscribed) gives identical stores: the same
# /results rows after sorting by index, the same /top, /pareto and /counts
# (tests/py/compare_stores.py). Small fixed chunks and a commit every few milliseconds exercise
# many chunks of work, compressed chunks from workers and partial HDF5 chunks filled up later.
set -euo pipefail
: "${CLUSTERDSE:?}" "${CDSE_SRC:?}"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1
py=/usr/bin/python3
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

run() { echo "+ $*"; "$@"; }

for mode in all feasible; do
    # 2 models x 2 systems x 3 gpus x 4 tp x 3 pp x 3 microbatch x 2 global_batch x 3 recompute
    # x 2 sequence_parallel x 2 zero x 2 precision = 20736 configurations.
    cat >"$dir/job-$mode.cfg" <<CFG
name = "ranks-$mode";
models = ( "llama3-8b", "gpt3-13b" );
systems = ( "a100-80g-dgx", "h100-sxm-dgx" );
space = {
  gpus = [ 8, 16, 32 ];
  tp = [ 1, 2, 4, 8 ];
  pp = [ 1, 2, 4 ];
  microbatch = [ 1, 2, 4 ];
  global_batch = [ 128, 256 ];
  recompute = [ "none", "selective", "full" ];
  sequence_parallel = [ true, false ];
  zero = [ 0, 1 ];
  precision = [ "bf16", "fp8" ];
};
objective = { metric = "time_to_train"; tokens = 100000000000L; top = 5;
              group_by = [ "model", "gpus" ]; store = "$mode"; };
CFG
    run mpirun -np 1 "$CLUSTERDSE" sweep "$dir/job-$mode.cfg" -o "$dir/ref-$mode.h5" --quiet >/dev/null
    for np in 1 2 3 4; do
        run mpirun -np "$np" "$CLUSTERDSE" sweep "$dir/job-$mode.cfg" -o "$dir/np$np-$mode.h5" \
            --chunk 3000 --flush 0.005 --quiet >/dev/null
        run "$py" "$CDSE_SRC/tests/py/compare_stores.py" "$dir/ref-$mode.h5" "$dir/np$np-$mode.h5"
    done
done
# The store records how many ranks made it.
"$py" -c "import h5py,sys; f=h5py.File(sys.argv[1],'r'); assert f.attrs['ranks'] == 4, f.attrs['ranks']" \
    "$dir/np4-all.h5"
echo "sweep_ranks: ok"
