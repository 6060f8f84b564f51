#!/usr/bin/env bash
# A store made before the status stack_unsupported was appended counts 17 statuses in its
# /progress rows: --resume of it with a job whose configurations can have the new status (a stack
# without fused attention asked for it) is refused at once (exit 1, naming the status), not run
# into rows and counts that store cannot hold. A store made before over_headroom (18 statuses,
# no column mem_reserved_gib) is refused likewise, whatever the job: every job can have it. The old layout is made here by rewriting a new
# store's /progress and /counts with h5py (enough for the check, which runs before any row is
# read).
: "${CDSE_SRC:?}"
source "$CDSE_SRC/tests/sh/lib/expect.sh"
py=/usr/bin/python3
"$py" -c 'import h5py' 2>/dev/null || { echo "old_store_statuses: SKIP: python3-h5py missing"; exit 77; }
cat >j.cfg <<'JOB'
name = "old"; models = ( "gpt3-1.3b" ); systems = ( "a100-80g-dgx" );
stacks = [ "megatron-lm-2021" ];
space = { gpus = 16; tp = [ 1, 2, 4, 8 ]; global_batch = 512; zero = [ 0, 1 ];
          flash_attention = [ false, true ]; };
objective = { metric = "tokens_per_s"; store = "all"; };
JOB
expect 0 '' "$CLUSTERDSE" sweep j.cfg -o s.h5 --quiet
old() { # STORE STATUSES: rewrites /progress and /counts with the first STATUSES statuses
    "$py" - "$1" "$2" <<'PY'
import sys, h5py, numpy as np
n = int(sys.argv[2])
with h5py.File(sys.argv[1], 'r+') as f:
    p = f['progress'][:]
    assert p.dtype['status'].shape == (20,), p.dtype
    dt = np.dtype([('begin', '<u8'), ('end', '<u8'), ('rows', '<u8'), ('status', '<u8', (n,)),
                   ('pruned', '<u8')])
    q = np.zeros(p.shape, dt)
    for k in ('begin', 'end', 'rows', 'pruned'):
        q[k] = p[k]
    q['status'] = p['status'][:, :n]
    del f['progress']
    f.create_dataset('progress', data=q, maxshape=(None,), chunks=(1024,))
    names = ['stack_unsupported', 'over_headroom', 'over_budget'][n - 17:]
    rows = f['counts'][:]
    keep = rows[[r[0].decode() not in names for r in rows]]
    del f['counts']
    f.create_dataset('counts', data=keep, maxshape=(None,), chunks=(20,), fletcher32=True)
PY
}
cp s.h5 s18.h5
old s.h5 17
old s18.h5 18
expect 1 'made before the status stack_unsupported, which this job.s configurations can have' \
    "$CLUSTERDSE" sweep j.cfg -o s.h5 --resume
expect 1 'made before the status over_headroom' "$CLUSTERDSE" sweep j.cfg -o s18.h5 --resume
echo "old_store_statuses: ok"
