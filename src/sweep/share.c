/* Rank 0 reads, every rank agrees on the verdict, then rank 0's bytes are broadcast. */
#include "clusterdse/sweep/share.h"

#include <stdint.h>
#include <stdlib.h>

#include "clusterdse/model/common.h"
#include "clusterdse/sweep/fault.h"

/* MPI counts are ints: larger buffers go in pieces of this many bytes. */
#define SHARE_PIECE ((size_t)1 << 30)

static void bcast_bytes(MPI_Comm comm, void *data, size_t size)
{
    for (size_t at = 0; at < size; at += SHARE_PIECE) {
        size_t n = size - at < SHARE_PIECE ? size - at : SHARE_PIECE;
        MPI_Bcast((char *)data + at, (int)n, MPI_BYTE, 0, comm);
    }
}

int cdse_agree(MPI_Comm comm, int rc)
{
    int worst = rc;
    MPI_Allreduce(&rc, &worst, 1, MPI_INT, MPI_MIN, comm);
    return worst;
}

int cdse_share(MPI_Comm comm, int rc, void *data, size_t size)
{
    MPI_Bcast(&rc, 1, MPI_INT, 0, comm);
    if (rc == 0)
        bcast_bytes(comm, data, size);
    return rc;
}

int cdse_share_alloc(MPI_Comm comm, int rc, void **data, size_t *size)
{
    int rank = 0;
    MPI_Comm_rank(comm, &rank);
    int64_t head[2] = {rc, rank == 0 && rc == 0 ? (int64_t)*size : 0}; /* verdict, length */
    MPI_Bcast(head, 2, MPI_INT64_T, 0, comm);
    if (head[0] != 0) {
        if (rank != 0)
            *data = NULL, *size = 0;
        return (int)head[0];
    }
    int mine = CDSE_OK;
    if (rank != 0) {
        *size = (size_t)head[1];
        *data = cdse_fault("share_alloc") ? NULL : malloc(*size ? *size : 1);
        if (*data == NULL)
            mine = CDSE_ENOMEM;
    }
    int worst = cdse_agree(comm, mine);
    if (worst != CDSE_OK) {
        if (rank != 0) {
            free(*data);
            *data = NULL, *size = 0;
        }
        return worst;
    }
    bcast_bytes(comm, *data, *size);
    return CDSE_OK;
}
