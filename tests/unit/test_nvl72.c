/* Group spans and collective times on the GB200 NVL72 profile (calibration/systems/
 * gb200-nvl72.cfg), by hand: the 72-GPU NVLink domain, not the 4-GPU compute tray, is the fast
 * level, in clusters whose size is not a multiple of it (256 GPUs = 3.56 domains).
 *
 * The profile's levels: NVLink 900 GB/s per GPU per direction at efficiency 0.80 = 720e9 B/s,
 * 3.4 us per step; the scale-out NIC 50 GB/s at 0.90 = 45e9 B/s, 14.0 us per step (NCCL 2.18 on).
 * Formulas as in
 * test_collective.c (Thakur et al. 2005; nccl-tests PERFORMANCE.md): ring all-reduce
 * 2 (n-1)/n B / bw + 2 (n-1) lat per level on the buffer divided by the members below;
 * all-gather (n-1)/n B / bw + (n-1) lat; all-to-all: the share of B addressed to peers first
 * reached at level l crosses level l. Ranks are placed contiguously; a group that does not fill
 * its domains evenly is costed as an even split (collective.c), as a job that uses 64 of each
 * rack's 72 GPUs runs it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "assert_rel.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "clusterdse/config/job.h"
#include "clusterdse/model/collective.h"

#define BW0  720e9
#define LAT0 3.4e-6
#define BW1  45e9
#define LAT1 14.0e-6

static void load_gb200(cdse_system *system)
{
    cdse_diag diag = {{0}};
    memset(system, 0, sizeof *system);
    int rc = cdse_system_load_file(CDSE_SOURCE_DIR "/calibration/systems/gb200-nvl72.cfg", system,
                                   &diag);
    if (rc != 0)
        print_error("%s\n", diag.msg);
    assert_int_equal(rc, 0);
}

static void assert_span(const cdse_system *s, int size, int stride, int inside, int across)
{
    cdse_span span;
    cdse_group_span(s, size, stride, &span);
    if (span.factor[0] != inside || span.factor[1] != across)
        print_error("size %d stride %d: factors [%d, %d], expected [%d, %d]\n", size, stride,
                    span.factor[0], span.factor[1], inside, across);
    assert_int_equal(span.factor[0], inside);
    assert_int_equal(span.factor[1], across);
}

/* The profile itself: 4 GPUs per tray, one 72-GPU NVLink level, then the network. */
static void test_profile_levels(void **state)
{
    (void)state;
    cdse_system s;
    load_gb200(&s);
    assert_int_equal(s.gpus_per_node, 4);
    assert_int_equal(s.n_levels, 2);
    assert_int_equal(s.level[0].size, 72);
    assert_int_equal(s.level[1].size, 0);
    assert_rel(cdse_level_bandwidth(&s, 0, CDSE_COLL_ALLREDUCE), BW0, 1e-12);
    assert_rel(cdse_level_bandwidth(&s, 1, CDSE_COLL_ALLREDUCE), BW1, 1e-12);
}

/* Spans by hand (contiguous placement, 72 GPUs per NVLink domain):
 *   tp 4, stride 1: one tray, inside the domain                     -> [4, 1]
 *   dp 18 after tp 4 (18 trays = 72 GPUs), stride 4: 72 / 4 = 18 fit -> [18, 1] (no network)
 *   ep 64, stride 1 (256 GPUs): 64 <= 72                            -> [64, 1]
 *   72 ranks, stride 1: one full domain                             -> [72, 1]
 *   dp 64 after tp 4 (256 GPUs), stride 4: 72 / 4 = 18 fit, the largest divisor of 64 up to 18
 *     is 16                                                         -> [16, 4]
 *   144 ranks, stride 1: two full domains                           -> [72, 2]
 *   256 ranks, stride 1 (3.56 domains): largest divisor of 256 up to 72 is 64 -> [64, 4]
 *   96 ranks, stride 1: largest divisor of 96 up to 72 is 48        -> [48, 2]
 *   dp 8 after tp 2 x pp 16 (stride 32, 256 GPUs): 72 / 32 = 2.25, 2 fit -> [2, 4] */
static void test_spans_on_72_gpu_domains(void **state)
{
    (void)state;
    cdse_system s;
    load_gb200(&s);
    assert_span(&s, 4, 1, 4, 1);
    assert_span(&s, 18, 4, 18, 1);
    assert_span(&s, 64, 1, 64, 1);
    assert_span(&s, 72, 1, 72, 1);
    assert_span(&s, 64, 4, 16, 4);
    assert_span(&s, 144, 1, 72, 2);
    assert_span(&s, 256, 1, 64, 4);
    assert_span(&s, 96, 1, 48, 2);
    assert_span(&s, 8, 32, 2, 4);
}

/* Times for B = 1e9 bytes:
 *   all-reduce on [16, 4]: 2 (15/16 B / 720e9 + 15 x 3.4e-6) = 2.7061667e-3
 *                        + 2 (3/4 (B / 16) / 45e9 + 3 x 14.0e-6) = 2.1673333e-3 -> 4.8735000e-3 s
 *   all-to-all on [64, 1]: 63/64 B / 720e9 + 63 x 3.4e-6 = 1.5813875e-3 s (all on NVLink)
 *   all-to-all on [16, 4]: 15/64 B / 720e9 + 15 x 3.4e-6 + 48/64 B / 45e9 + 3 x 14.0e-6
 *                        = 1.7085188e-2 s (the NIC carries 3/4 of the bytes)
 *   all-gather on [72, 2]: 71/72 B / 720e9 + 2 x 71 x 3.4e-6 + 1/2 (B / 72) / 45e9 + 14.0e-6
 *                        = 2.0207198e-3 s (one NCCL ring through the 144 ranks: 142 steps
 *                        inside the two domains, one across) */
static void test_collectives_on_72_gpu_domains(void **state)
{
    (void)state;
    cdse_system s;
    load_gb200(&s);
    double B = 1e9;
    cdse_span span;
    cdse_group_span(&s, 64, 4, &span);
    assert_rel(cdse_allreduce_time(&s, &span, B), 4.8735000e-3, 1e-7);
    cdse_group_span(&s, 64, 1, &span);
    assert_rel(cdse_alltoall_time(&s, &span, B), 1.5813875e-3, 1e-7);
    cdse_group_span(&s, 64, 4, &span);
    assert_rel(cdse_alltoall_time(&s, &span, B), 1.7085188e-2, 1e-7);
    cdse_group_span(&s, 144, 1, &span);
    assert_rel(cdse_allgather_time(&s, &span, B), 2.0207198e-3, 1e-7);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_profile_levels),
        cmocka_unit_test(test_spans_on_72_gpu_domains),
        cmocka_unit_test(test_collectives_on_72_gpu_domains),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
