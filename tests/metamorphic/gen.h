/* Random job files over the zoo (jobs/models, calibration/systems, calibration/stacks) and every
 * strategy axis, for the metamorphic suite (tests/metamorphic/metamorphic.c, docs/testing.md).
 * A job is kept as lists of literals so that it can be rendered again with every list in
 * another order. */
#ifndef CDSE_META_GEN_H
#define CDSE_META_GEN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* splitmix64 (Steele, Lea and Flood 2014): seedable and well mixed. */
typedef struct meta_rng {
    uint64_t state;
} meta_rng;

uint64_t meta_rng_next(meta_rng *rng);
int meta_rng_below(meta_rng *rng, int n); /* uniform in [0, n) */
double meta_rng_unit(meta_rng *rng);      /* uniform in [0, 1) */

/* What a job is for: pair relations (large spaces sampled), eval vs sweep (a small space stored
 * whole), pruned vs exhaustive (store "best", hardware axes, pools, cost metrics). */
typedef enum meta_kind { META_PAIRS = 0, META_SWEEP, META_PRUNE } meta_kind;

#define META_MAX_LIST 8
#define META_MAX_AXES 24
#define META_ITEM_MAX 2048

typedef struct meta_list {
    char key[32];
    int n;
    char item[META_MAX_LIST][META_ITEM_MAX]; /* job-file literals: "\"full\"", "4", "{ ... }" */
} meta_list;

typedef struct meta_job {
    meta_list models, systems, stacks;
    int n_axes;
    meta_list axis[META_MAX_AXES]; /* space.KEY = [ ... ] */
    char objective[1024];          /* the body of objective = { ... } */
} meta_job;

/* Reads the zoo's file names from the source tree; returns 0, or -1 with a message on stderr. */
int meta_zoo_load(const char *source_dir);

/* A random job of `kind`. `prune`: objective.prune for META_PRUNE. */
void meta_job_generate(meta_rng *rng, meta_kind kind, bool prune, meta_job *job);

/* The job as job-file text; with `shuffle` every list (models, systems, stacks, each axis) in a
 * random order. Returns the length, or -1 when `size` is too small. */
int meta_job_render(const meta_job *job, meta_rng *shuffle, char *buf, size_t size);

#endif
