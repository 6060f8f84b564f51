/* Cost, energy and purchase price of a system's and a pool's GPUs (src/model/cost.c) against
 * hand calculations. The formula is docs/job-file.md "Cost and energy" (the sweep's record_cost
 * in src/sweep/report.c), applied per GPU type:
 *   power = pue x (gpus x gpu_power + ceil(gpus / per node) x node_power)
 *   bought: cost = gpus x (gpu_price + facility_price + ports) x seconds / (years x 365.25 days)
 *                  + power x seconds / 3.6e6 (kWh) x electricity_price
 *   rented: cost = gpus x rental_price x seconds / 3600
 * A pool's bill is the sum over its types of the bill of the GPUs taken from each (in the
 * proportions of the pool, as cdse_evaluate_pool takes them). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "assert_rel.h"

#include <string.h>

#include "clusterdse/model/cost.h"

/* Bought, H100-like: 30,000 per GPU with its node share, 5,000 facility per GPU, two network
 * levels with ports of 1,000 and 500 per GPU, 4 years; 700 W per GPU, 2,000 W per node of 8,
 * PUE 1.25. */
static cdse_system bought(void)
{
    cdse_system s;
    memset(&s, 0, sizeof s);
    strcpy(s.name, "bought");
    s.gpus_per_node = 8;
    s.n_levels = 2;
    s.level[0].port_price = 1000.0;
    s.level[1].port_price = 500.0;
    s.cost.gpu_price = 30000.0;
    s.cost.facility_price = 5000.0;
    s.cost.amortization_years = 4.0;
    s.cost.gpu_power_w = 700.0;
    s.cost.node_power_w = 2000.0;
    s.cost.pue = 1.25;
    return s;
}

/* Rented, A100-like: 2.0 per GPU-hour, 400 W per GPU, 1,500 W per node of 8, PUE 1.1. */
static cdse_system rented(void)
{
    cdse_system s;
    memset(&s, 0, sizeof s);
    strcpy(s.name, "rented");
    s.gpus_per_node = 8;
    s.n_levels = 1;
    s.level[0].port_price = 300.0; /* not counted: a rented GPU has no purchase */
    s.cost.rental_price = 2.0;
    s.cost.amortization_years = 5.0;
    s.cost.gpu_power_w = 400.0;
    s.cost.node_power_w = 1500.0;
    s.cost.pue = 1.1;
    return s;
}

#define TEN_DAYS_S 864000.0 /* 10 x 86,400 s */
#define PRICE_KWH  0.10

/* 8 bought GPUs for 10 days: one node; power 1.25 x (8 x 700 + 2,000) = 9,500 W; per GPU
 * 30,000 + 5,000 + 1,000 + 500 = 36,500, purchase 8 x 36,500 = 292,000; capital
 * 292,000 x 864,000 / (4 x 365.25 x 86,400) = 292,000 x 10 / 1,461 = 1,998.6310746064339;
 * energy 9,500 x 864,000 / 3.6e6 = 2,280 kWh at 0.10 = 228; cost 2,226.6310746064339. */
static void test_bought_system(void **state)
{
    (void)state;
    cdse_system s = bought();
    cdse_bill b;
    cdse_system_bill(&s, 8, TEN_DAYS_S, PRICE_KWH, &b);
    assert_rel(b.power_w, 9500.0, 1e-15);
    assert_rel(b.purchase_price, 292000.0, 1e-15);
    assert_rel(b.cost, 2920000.0 / 1461.0 + 228.0, 1e-14);
}

/* 24 rented GPUs for 10 days: 3 nodes; power 1.1 x (24 x 400 + 3 x 1,500) = 15,510 W; cost
 * 24 x 2.0 x 240 h = 11,520; no purchase. */
static void test_rented_system(void **state)
{
    (void)state;
    cdse_system s = rented();
    cdse_bill b;
    cdse_system_bill(&s, 24, TEN_DAYS_S, PRICE_KWH, &b);
    assert_rel(b.power_w, 15510.0, 1e-14);
    assert_rel(b.cost, 11520.0, 1e-14);
    assert_true(b.purchase_price == 0.0);
}

/* A pool of 16 bought + 48 rented GPUs; a 32-GPU configuration takes 32 x 16/64 = 8 bought
 * and 32 x 48/64 = 24 rented: the sum of the two bills above, power 9,500 + 15,510 = 25,010 W,
 * cost 2,226.6310746064339 + 11,520 = 13,746.631074606434, purchase 292,000. */
static void test_pool_bill(void **state)
{
    (void)state;
    cdse_system a = bought(), b = rented();
    const cdse_system *types[] = {&a, &b};
    int counts[] = {16, 48};
    cdse_bill bill;
    assert_true(cdse_pool_bill(types, counts, 2, 32, TEN_DAYS_S, PRICE_KWH, &bill));
    assert_rel(bill.power_w, 25010.0, 1e-14);
    assert_rel(bill.cost, 2920000.0 / 1461.0 + 228.0 + 11520.0, 1e-14);
    assert_rel(bill.purchase_price, 292000.0, 1e-15);
    /* 30 GPUs would take 30 x 16/64 = 7.5 of the first type: no bill. */
    assert_false(cdse_pool_bill(types, counts, 2, 30, TEN_DAYS_S, PRICE_KWH, &bill));
    assert_true(bill.cost == 0.0 && bill.power_w == 0.0 && bill.purchase_price == 0.0);
}

/* GPUs taken from a pool: 3 + 5 GPUs, 16 GPUs take 6 and 10; 4 GPUs would take 1.5. */
static void test_pool_take(void **state)
{
    (void)state;
    int counts[] = {3, 5}, g[2];
    assert_true(cdse_pool_take(counts, 2, 16, g));
    assert_int_equal(g[0], 6);
    assert_int_equal(g[1], 10);
    assert_false(cdse_pool_take(counts, 2, 4, g));
}

/* objective.budget on the purchase price: the pool's 292,000 fits 300,000 and exactly 292,000,
 * not 250,000; no budget (0) admits everything. */
static void test_budget(void **state)
{
    (void)state;
    assert_true(cdse_within_budget(292000.0, 300000.0));
    assert_true(cdse_within_budget(292000.0, 292000.0));
    assert_false(cdse_within_budget(292000.0, 250000.0));
    assert_true(cdse_within_budget(1e12, 0.0));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bought_system), cmocka_unit_test(test_rented_system),
        cmocka_unit_test(test_pool_bill),     cmocka_unit_test(test_pool_take),
        cmocka_unit_test(test_budget),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
