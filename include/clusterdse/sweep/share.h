/* "Rank 0 reads, every rank learns the verdict, then the input" (HPL, IOR; STYLE.md), once for
 * every command and layer that reads input on one rank: jobs, probe plans, replayed ops. */
#ifndef CLUSTERDSE_SWEEP_SHARE_H
#define CLUSTERDSE_SWEEP_SHARE_H

#include <mpi.h>
#include <stddef.h>

/* Collective over `comm`: the worst (most negative) of the ranks' return codes `rc`, on every
 * rank, so that all of them stop together when one failed. */
int cdse_agree(MPI_Comm comm, int rc);

/* Collective over `comm`. Rank 0 passes its verdict `rc` (0: it read and checked the input;
 * otherwise the code to stop with) and the `size` bytes at `data`; every rank passes the same
 * `size` and, when the verdict is 0, receives rank 0's bytes in `data`. Returns the verdict on
 * every rank (rc of the other ranks is ignored). */
int cdse_share(MPI_Comm comm, int rc, void *data, size_t size);

/* The same for bytes whose length only rank 0 knows (*data, *size on rank 0, kept): the other
 * ranks receive a copy that they own (malloc) in *data and its length in *size. Returns the
 * verdict, or CDSE_ENOMEM on every rank when a rank could not allocate its copy; unless 0, the
 * other ranks are left with *data = NULL and *size = 0. */
int cdse_share_alloc(MPI_Comm comm, int rc, void **data, size_t *size);

#endif
