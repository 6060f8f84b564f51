/* Cost, energy and purchase price of a system's or a pool's GPUs (see cost.h). */
#include "clusterdse/model/cost.h"

#include <math.h>
#include <string.h>

/* Julian year (365.25 days) for amortization; 1 kWh = 3.6e6 J. */
#define SECONDS_PER_YEAR (365.25 * 86400.0)
#define SECONDS_PER_HOUR 3600.0
#define JOULES_PER_KWH   3.6e6

void cdse_system_bill(const cdse_system *system, int gpus, double seconds, double electricity_price,
                      cdse_bill *bill)
{
    const cdse_cost *c = &system->cost;
    double n = (double)gpus;
    double nodes = ceil(n / (double)system->gpus_per_node);
    bill->power_w = c->pue * (n * c->gpu_power_w + nodes * c->node_power_w);
    if (c->rental_price > 0.0) {
        bill->purchase_price = 0.0;
        bill->cost = n * c->rental_price * seconds * (1.0 / SECONDS_PER_HOUR);
        return;
    }
    double per_gpu = c->gpu_price + c->facility_price;
    for (int l = 0; l < system->n_levels; l++)
        per_gpu += system->level[l].port_price;
    bill->purchase_price = n * per_gpu;
    double capital = 0.0;
    if (c->amortization_years > 0.0)
        capital = n * per_gpu * seconds / (c->amortization_years * SECONDS_PER_YEAR);
    double kwh = bill->power_w * seconds * (1.0 / JOULES_PER_KWH);
    bill->cost = capital + kwh * electricity_price;
}

bool cdse_pool_take(const int counts[], int n, int gpus, int g[])
{
    long long total = 0;
    for (int i = 0; i < n; i++)
        total += counts[i];
    if (total <= 0)
        return false;
    for (int i = 0; i < n; i++) {
        if ((long long)gpus * counts[i] % total != 0)
            return false;
        g[i] = (int)((long long)gpus * counts[i] / total);
    }
    return true;
}

bool cdse_pool_bill(const cdse_system *const types[], const int counts[], int n, int gpus,
                    double seconds, double electricity_price, cdse_bill *bill)
{
    int g[CDSE_MAX_POOL_TYPES];
    memset(bill, 0, sizeof *bill);
    if (n < 1 || n > CDSE_MAX_POOL_TYPES || !cdse_pool_take(counts, n, gpus, g))
        return false;
    for (int i = 0; i < n; i++) {
        cdse_bill own;
        cdse_system_bill(types[i], g[i], seconds, electricity_price, &own);
        bill->power_w += own.power_w;
        bill->cost += own.cost;
        bill->purchase_price += own.purchase_price;
    }
    return true;
}
