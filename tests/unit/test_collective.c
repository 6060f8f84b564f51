/* Collective costs of src/model/collective.c against hand calculations.
 *
 * The systems are filled by hand here. The formulas (alpha-beta model per network level):
 *   - ring all-reduce on n ranks: 2 (n-1)/n B / bw + 2 (n-1) latency; all-gather and
 *     reduce-scatter: (n-1)/n B / bw + (n-1) latency (Thakur, Rabenseifner and Gropp 2005,
 *     "Optimization of Collective Communication Operations in MPICH", IJHPCA 19(1), Sec. 4; NCCL
 *     bus bandwidth factors 2(n-1)/n and (n-1)/n in nccl-tests doc/PERFORMANCE.md);
 *   - hierarchical: innermost level first on the whole buffer, each outer level on the buffer
 *     divided by the group members below it (reduce-scatter inside, all-reduce across, all-gather
 *     inside: Jia et al. 2018, "Highly Scalable Deep Learning Training System with Mixed-Precision"
 *     hierarchical all-reduce; NCCL's tree/ring over NVLink and the NIC);
 *   - all-to-all: B/n to each of the n-1 peers, the bytes for peers first reached at level l cross
 *     level l;
 *   - bandwidth of a level = bandwidth_gbs * 1e9 * efficiency unless a fitted per-collective
 *     bandwidth (already effective) is given; latency likewise. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "assert_rel.h"

#include <math.h>
#include <string.h>

#include "clusterdse/model/collective.h"

/* Relative comparison that prints both values and the caller's line on failure. */
/* Level 0: 8-GPU NVLink domain, 300 GB/s per GPU per direction, 80% achievable, 2 us per step.
 * Level 1: the whole system over InfiniBand, 25 GB/s per GPU, 90% achievable, 5 us per step.
 * Effective: bw0 = 240e9 B/s, bw1 = 22.5e9 B/s. */
#define BW0  240e9
#define BW1  22.5e9
#define LAT0 2e-6
#define LAT1 5e-6

static cdse_system two_level(void)
{
    cdse_system s;
    memset(&s, 0, sizeof s);
    strcpy(s.name, "test-2level");
    s.gpus_per_node = 8;
    s.n_levels = 2;
    strcpy(s.level[0].name, "nvlink");
    s.level[0].size = 8;
    s.level[0].bandwidth_gbs = 300.0;
    s.level[0].efficiency = 0.8;
    s.level[0].latency_us = 2.0;
    strcpy(s.level[1].name, "ib");
    s.level[1].size = 0;
    s.level[1].bandwidth_gbs = 25.0;
    s.level[1].efficiency = 0.9;
    s.level[1].latency_us = 5.0;
    return s;
}

static void assert_span(const cdse_system *s, int size, int stride, const int *expected)
{
    cdse_span span;
    cdse_group_span(s, size, stride, &span);
    assert_int_equal(span.n_levels, s->n_levels);
    for (int l = 0; l < s->n_levels; l++) {
        if (span.factor[l] != expected[l])
            print_error("size %d stride %d: factor[%d]\n", size, stride, l);
        assert_int_equal(span.factor[l], expected[l]);
    }
}

/* Ranks are placed contiguously, 8 per node. A group of `size` ranks `stride` apart has
 * min(size, max(1, 8 / stride)) members in one node; the rest spread over nodes. */
static void test_span_two_levels(void **state)
{
    (void)state;
    cdse_system s = two_level();
    assert_span(&s, 8, 1, (const int[]){8, 1});   /* tp = 8: ranks 0..7, one node */
    assert_span(&s, 4, 8, (const int[]){1, 4});   /* dp = 4 after tp = 8: ranks 0, 8, 16, 24 */
    assert_span(&s, 4, 4, (const int[]){2, 2});   /* ranks 0, 4 | 8, 12 */
    assert_span(&s, 16, 1, (const int[]){8, 2});  /* two full nodes */
    assert_span(&s, 2, 16, (const int[]){1, 2});  /* ranks 0, 16 */
    assert_span(&s, 2, 1, (const int[]){2, 1});   /* tp = 2 */
    assert_span(&s, 1, 1, (const int[]){1, 1});   /* no group */
    assert_span(&s, 64, 2, (const int[]){4, 16}); /* 4 per node, 16 nodes */
}

/* Three levels: pairs on a 4-GPU board (size 4), 16-GPU racks, the system. A group of 32 ranks
 * with stride 2: 4/2 = 2 per board, 16/2 = 8 per rack (4 boards), 32/8 = 4 racks: [2, 4, 4]. */
static void test_span_three_levels(void **state)
{
    (void)state;
    cdse_system s = two_level();
    s.n_levels = 3;
    s.level[0].size = 4;
    s.level[1].size = 16;
    s.level[2] = s.level[1];
    s.level[2].size = 0;
    assert_span(&s, 32, 2, (const int[]){2, 4, 4});
    assert_span(&s, 4, 16, (const int[]){1, 1, 4}); /* one member per rack */
    assert_span(&s, 4, 4, (const int[]){1, 4, 1});  /* 0, 4, 8, 12: one rack, four boards */
}

/* The contract of cdse_group_span (collective.h): the product of the factors is the group size,
 * and level l is crossed when factor[l] > 1. Groups that do not fill their nodes evenly:
 *   - 12 consecutive ranks (e.g. dp = 12 on the first pipeline stage of 24 GPUs with pp = 2):
 *     ranks 0..7 on node 0, 8..11 on node 1: InfiniBand is crossed;
 *   - 3 ranks 4 apart (dp = 3 after tp = 4 on 12 GPUs): ranks 0, 4 on node 0, rank 8 on node 1.
 * Whatever split the model chooses, the factors must multiply to the size and the inter-node
 * factor must exceed 1. */
static void test_span_uneven_groups(void **state)
{
    (void)state;
    cdse_system s = two_level();
    const int cases[][2] = {{12, 1}, {3, 4}};
    int wrong = 0;
    for (int c = 0; c < 2; c++) {
        cdse_span span;
        cdse_group_span(&s, cases[c][0], cases[c][1], &span);
        int product = span.factor[0] * span.factor[1];
        if (product != cases[c][0] || span.factor[1] <= 1) {
            print_error("size %d stride %d: factors [%d, %d]; expected a product of %d with an "
                        "inter-node factor > 1\n",
                        cases[c][0], cases[c][1], span.factor[0], span.factor[1], cases[c][0]);
            wrong++;
        }
    }
    assert_int_equal(wrong, 0);
    /* collective.c splits such groups evenly: 12 as 6 + 6 ([6, 2]); 3 ranks 4 apart as 1 + 1 + 1
     * ([1, 3], no divisor of 3 fits two per node). */
    assert_span(&s, 12, 1, (const int[]){6, 2});
    assert_span(&s, 3, 4, (const int[]){1, 3});
}

/* One level, n = 8, B = 1 GiB:
 * 2 * 7/8 * B / 240e9 + 2 * 7 * 2e-6 = 7.8293675e-3 + 2.8e-5 = 7.8573675e-3 s. */
static void test_allreduce_one_level(void **state)
{
    (void)state;
    cdse_system s = two_level();
    cdse_span span;
    cdse_group_span(&s, 8, 1, &span);
    double B = 1073741824.0;
    double expected = 2.0 * 7.0 / 8.0 * B / BW0 + 2.0 * 7.0 * LAT0;
    assert_rel(cdse_allreduce_time(&s, &span, B), expected, 1e-12);
    assert_rel(cdse_allreduce_time(&s, &span, B), 7.8573674667e-3, 1e-10);
}

/* Two levels, 16 ranks stride 1 ([8, 2]), B = 1e9:
 * NVLink: 2 * 7/8 * B / bw0 + 2 * 7 * lat0; IB on B/8: 2 * 1/2 * (B/8) / bw1 + 2 * 1 * lat1
 * = 7.291666...e-3 + 2.8e-5 + 5.5555...e-3 + 1e-5 = 1.2885222...e-2 s. */
static void test_allreduce_hierarchical(void **state)
{
    (void)state;
    cdse_system s = two_level();
    cdse_span span;
    cdse_group_span(&s, 16, 1, &span);
    double B = 1e9;
    double expected = 2.0 * 7.0 / 8.0 * B / BW0 + 2.0 * 7.0 * LAT0 + 2.0 * 0.5 * (B / 8.0) / BW1 +
                      2.0 * 1.0 * LAT1;
    assert_rel(cdse_allreduce_time(&s, &span, B), expected, 1e-12);
    assert_rel(cdse_allreduce_time(&s, &span, B), 1.2885222222222222e-2, 1e-12);
}

/* Data parallel across nodes only ([1, 4]): 2 * 3/4 * B / bw1 + 2 * 3 * lat1. */
static void test_allreduce_inter_node_only(void **state)
{
    (void)state;
    cdse_system s = two_level();
    cdse_span span;
    cdse_group_span(&s, 4, 8, &span);
    double B = 2e8;
    assert_rel(cdse_allreduce_time(&s, &span, B), 2.0 * 0.75 * B / BW1 + 6.0 * LAT1, 1e-12);
}

/* Three levels (4-GPU boards at 300 GB/s x 0.8, 2 us; 16-GPU racks at 25 GB/s x 0.9, 5 us; the
 * system at 12.5 GB/s x 0.5, 10 us). 32 ranks with stride 2: [2, 4, 4]. Each level runs its ring
 * on the buffer divided by the members below it:
 *   2 (1/2) B / bw0 + 2 * 1 lat0 + 2 (3/4) (B/2) / bw1 + 2 * 3 lat1 + 2 (3/4) (B/8) / bw2 +
 *   2 * 3 lat2. */
static void test_allreduce_three_levels(void **state)
{
    (void)state;
    cdse_system s = two_level();
    s.n_levels = 3;
    s.level[0].size = 4;
    s.level[1].size = 16;
    s.level[2] = s.level[1];
    s.level[2].size = 0;
    s.level[2].bandwidth_gbs = 12.5;
    s.level[2].efficiency = 0.5;
    s.level[2].latency_us = 10.0;
    cdse_span span;
    cdse_group_span(&s, 32, 2, &span);
    double B = 8e8, bw2 = 6.25e9, lat2 = 10e-6;
    double expected = 2.0 * 0.5 * B / BW0 + 2.0 * LAT0 + 2.0 * 0.75 * (B / 2.0) / BW1 + 6.0 * LAT1 +
                      2.0 * 0.75 * (B / 8.0) / bw2 + 6.0 * lat2;
    assert_rel(cdse_allreduce_time(&s, &span, B), expected, 1e-12);
    /* All-gather, one ring through the 32 ranks: 31 steps, 16 inside the 16 boards (one each),
     * 12 between boards inside the 4 racks (3 each), 3 between racks:
     * (1/2) B / bw0 + 16 lat0 + (3/4) (B/2) / bw1 + 12 lat1 + (3/4) (B/8) / bw2 + 3 lat2. */
    double ag = 0.5 * B / BW0 + 16.0 * LAT0 + 0.75 * (B / 2.0) / BW1 + 12.0 * LAT1 +
                0.75 * (B / 8.0) / bw2 + 3.0 * lat2;
    assert_rel(cdse_allgather_time(&s, &span, B), ag, 1e-12);
}

/* All-gather and reduce-scatter are one ring pass through every member (NCCL runs them as rings
 * only; its latency is (nRanks - nNodes) intra-node steps + (nNodes - 1) network steps,
 * NVIDIA/nccl src/graph/tuning.cc at v2.9.9-1): on [2, 2] (size 4, stride 4) with B = 4e8, the
 * ring 0-4-8-12 makes two steps inside the two nodes and one across:
 * 1/2 * B / bw0 + 2 lat0 + 1/2 * (B/2) / bw1 + lat1. */
static void test_allgather_reduce_scatter(void **state)
{
    (void)state;
    cdse_system s = two_level();
    cdse_span span;
    cdse_group_span(&s, 4, 4, &span);
    double B = 4e8;
    double expected = 0.5 * B / BW0 + 2.0 * LAT0 + 0.5 * (B / 2.0) / BW1 + LAT1;
    assert_rel(cdse_allgather_time(&s, &span, B), expected, 1e-12);
    assert_rel(cdse_reduce_scatter_time(&s, &span, B), expected, 1e-12);
    /* One level, n = 8: 7/8 B / bw0 + 7 lat0, half of the all-reduce. */
    cdse_group_span(&s, 8, 1, &span);
    assert_rel(cdse_allgather_time(&s, &span, B), 7.0 / 8.0 * B / BW0 + 7.0 * LAT0, 1e-12);
    assert_rel(cdse_reduce_scatter_time(&s, &span, B), 7.0 / 8.0 * B / BW0 + 7.0 * LAT0, 1e-12);
}

/* All-to-all over 16 ranks [8, 2], B = 1.6e9 of send buffer per rank (1e8 to each peer):
 * 7 peers in the node, 7/16 B over NVLink with 7 steps; 8 peers in the other node, 8/16 B over
 * IB with 1 step: 7/16 B / bw0 + 7 lat0 + 8/16 B / bw1 + lat1. */
static void test_alltoall(void **state)
{
    (void)state;
    cdse_system s = two_level();
    cdse_span span;
    cdse_group_span(&s, 16, 1, &span);
    double B = 1.6e9;
    double expected = 7.0 / 16.0 * B / BW0 + 7.0 * LAT0 + 8.0 / 16.0 * B / BW1 + LAT1;
    assert_rel(cdse_alltoall_time(&s, &span, B), expected, 1e-12);
    /* One level, 4 ranks: 3/4 B / bw0 + 3 lat0. */
    cdse_group_span(&s, 4, 1, &span);
    assert_rel(cdse_alltoall_time(&s, &span, B), 0.75 * B / BW0 + 3.0 * LAT0, 1e-12);
}

/* A group of one rank communicates nothing. */
static void test_single_rank_is_free(void **state)
{
    (void)state;
    cdse_system s = two_level();
    cdse_span span;
    cdse_group_span(&s, 1, 1, &span);
    assert_true(cdse_allreduce_time(&s, &span, 1e9) == 0.0);
    assert_true(cdse_allgather_time(&s, &span, 1e9) == 0.0);
    assert_true(cdse_reduce_scatter_time(&s, &span, 1e9) == 0.0);
    assert_true(cdse_alltoall_time(&s, &span, 1e9) == 0.0);
}

/* Point to point: ranks 1 or 7 apart share a node (NVLink); 8 or 64 apart do not (IB).
 * B / bw + lat of the level. */
static void test_sendrecv_level_by_stride(void **state)
{
    (void)state;
    cdse_system s = two_level();
    double B = 3e7;
    assert_rel(cdse_sendrecv_time(&s, 1, B), B / BW0 + LAT0, 1e-12);
    assert_rel(cdse_sendrecv_time(&s, 7, B), B / BW0 + LAT0, 1e-12);
    assert_rel(cdse_sendrecv_time(&s, 8, B), B / BW1 + LAT1, 1e-12);
    assert_rel(cdse_sendrecv_time(&s, 64, B), B / BW1 + LAT1, 1e-12);
}

/* Fitted parameters (from `clusterdse fit`) replace bandwidth * efficiency and the level latency
 * for their collective only: all-reduce on NVLink fitted at 150 GB/s bus bandwidth and 3 us. */
static void test_fitted_parameters_override(void **state)
{
    (void)state;
    cdse_system s = two_level();
    s.level[0].coll_bandwidth_gbs[CDSE_COLL_ALLREDUCE] = 150.0;
    s.level[0].coll_latency_us[CDSE_COLL_ALLREDUCE] = 3.0;
    s.level[1].coll_latency_us[CDSE_COLL_SENDRECV] = 9.0;
    assert_rel(cdse_level_bandwidth(&s, 0, CDSE_COLL_ALLREDUCE), 150e9, 1e-15);
    assert_rel(cdse_level_latency(&s, 0, CDSE_COLL_ALLREDUCE), 3e-6, 1e-15);
    assert_rel(cdse_level_bandwidth(&s, 0, CDSE_COLL_ALLGATHER), 300e9 * 0.8, 1e-15);
    assert_rel(cdse_level_latency(&s, 0, CDSE_COLL_ALLGATHER), 2e-6, 1e-15);
    assert_rel(cdse_level_bandwidth(&s, 1, CDSE_COLL_SENDRECV), 25e9 * 0.9, 1e-15);
    assert_rel(cdse_level_latency(&s, 1, CDSE_COLL_SENDRECV), 9e-6, 1e-15);

    cdse_span span;
    cdse_group_span(&s, 16, 1, &span);
    double B = 1e9;
    /* NVLink part uses the fitted 150e9 and 3 us; IB keeps 22.5e9 and 5 us. */
    double expected =
        2.0 * 7.0 / 8.0 * B / 150e9 + 2.0 * 7.0 * 3e-6 + 2.0 * 0.5 * (B / 8.0) / BW1 + 2.0 * LAT1;
    assert_rel(cdse_allreduce_time(&s, &span, B), expected, 1e-12);
    /* All-gather on the same span is unaffected (one ring: 14 NVLink steps, 1 IB step). */
    double ag = 7.0 / 8.0 * B / BW0 + 14.0 * LAT0 + 0.5 * (B / 8.0) / BW1 + LAT1;
    assert_rel(cdse_allgather_time(&s, &span, B), ag, 1e-12);
    /* Send/recv across nodes: the fitted 9 us with the default bandwidth. */
    assert_rel(cdse_sendrecv_time(&s, 8, B), B / BW1 + 9e-6, 1e-12);
    /* A fit whose latency is 0 (fit.c's least-median candidates include latency 0) keeps it:
     * reduce-scatter on 8 NVLink ranks fitted at 100 GB/s and 0 us is 7/8 B / 100e9, no latency
     * term (the level's 2 us would add 7 x 2 us). */
    s.level[0].coll_bandwidth_gbs[CDSE_COLL_REDUCE_SCATTER] = 100.0;
    s.level[0].coll_latency_us[CDSE_COLL_REDUCE_SCATTER] = 0.0;
    cdse_span node;
    cdse_group_span(&s, 8, 1, &node);
    assert_rel(cdse_reduce_scatter_time(&s, &node, B), 7.0 / 8.0 * B / 100e9, 1e-12);
}

/* A ring or pipeline step over a group waits for its slowest hop: the transfer on the outermost
 * level the group crosses (collective.h). B / bw + lat of that level:
 *   4 pipeline stages 4 ranks apart ([2, 2]): ranks 4-7 to 8-11 cross IB;
 *   8 ranks 1 apart ([8, 1]): NVLink only;
 *   8 context-parallel ranks 2 apart ([4, 2]): IB. */
static void test_group_p2p_outermost_hop(void **state)
{
    (void)state;
    cdse_system s = two_level();
    double B = 5e6;
    cdse_span span;
    cdse_group_span(&s, 4, 4, &span);
    assert_rel(cdse_group_p2p_time(&s, &span, B), B / BW1 + LAT1, 1e-12);
    cdse_group_span(&s, 8, 1, &span);
    assert_rel(cdse_group_p2p_time(&s, &span, B), B / BW0 + LAT0, 1e-12);
    cdse_group_span(&s, 8, 2, &span);
    assert_rel(cdse_group_p2p_time(&s, &span, B), B / BW1 + LAT1, 1e-12);
    /* Fitted send/recv parameters apply (a fit gives both: 12.5 GB/s and 7 us). */
    s.level[1].coll_bandwidth_gbs[CDSE_COLL_SENDRECV] = 12.5;
    s.level[1].coll_latency_us[CDSE_COLL_SENDRECV] = 7.0;
    assert_rel(cdse_group_p2p_time(&s, &span, B), B / 12.5e9 + 7e-6, 1e-12);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_span_two_levels),
        cmocka_unit_test(test_span_three_levels),
        cmocka_unit_test(test_span_uneven_groups),
        cmocka_unit_test(test_allreduce_one_level),
        cmocka_unit_test(test_allreduce_hierarchical),
        cmocka_unit_test(test_allreduce_inter_node_only),
        cmocka_unit_test(test_allreduce_three_levels),
        cmocka_unit_test(test_allgather_reduce_scatter),
        cmocka_unit_test(test_alltoall),
        cmocka_unit_test(test_single_rank_is_free),
        cmocka_unit_test(test_sendrecv_level_by_stride),
        cmocka_unit_test(test_group_p2p_outermost_hop),
        cmocka_unit_test(test_fitted_parameters_override),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
