/* What GPUs cost and draw: a system's or a heterogeneous pool's power, cost of running for a
 * time, and purchase price (docs/job-file.md, Cost and energy). Pure: no I/O, no allocation. */
#ifndef CLUSTERDSE_COST_H
#define CLUSTERDSE_COST_H

#include "clusterdse/model/hardware.h"

typedef struct cdse_bill {
    double power_w;        /* facility power while training: pue x (GPUs + nodes), W */
    double cost;           /* cost of running for the given seconds (rental, or amortized
                              purchase plus electricity) */
    double purchase_price; /* price of buying the GPUs outright (0 for rented types) */
} cdse_bill;

/* `gpus` GPUs of `system` running for `seconds` at `electricity_price` per kWh:
 *   power = pue x (gpus x gpu_power + nodes x node_power), nodes = ceil(gpus / per node);
 *   cost  = gpus x rental_price x hours                                  (rented), or
 *           gpus x (gpu_price + facility_price + sum of port_price over levels)
 *           x seconds / (amortization_years x 1 year) + kWh x electricity_price (bought);
 *   purchase_price = gpus x (gpu_price + facility_price + ports), 0 when rented.
 * The formula of the sweep's record (src/sweep/report.c record_cost) for one system. */
void cdse_system_bill(const cdse_system *system, int gpus, double seconds, double electricity_price,
                      cdse_bill *bill);

/* The same for `gpus` GPUs of a pool, taken from its n types in proportion to counts[] (as
 * cdse_evaluate_pool takes them): the sum of each type's bill for its share, each type with its
 * own prices, power and nodes. A type given no work still stands in the allocation and is
 * billed. Returns false (bill zeroed) when gpus does not split into whole GPUs of each type. */
bool cdse_pool_bill(const cdse_system *const types[], const int counts[], int n, int gpus,
                    double seconds, double electricity_price, cdse_bill *bill);

/* GPUs of each type that a `gpus`-GPU configuration takes from a pool of n types with counts[]:
 * g[i] = gpus x counts[i] / sum(counts). False when one is not a whole number. */
bool cdse_pool_take(const int counts[], int n, int gpus, int g[]);

/* Whether a configuration whose GPUs cost `purchase_price` to buy stays within
 * objective.budget (`budget` <= 0: no budget). */
static inline bool cdse_within_budget(double purchase_price, double budget)
{
    return !(budget > 0.0) || purchase_price <= budget;
}

#endif
