/* Software-stack profiles (calibration/stacks/NAME.cfg): a flat group of keys, each required,
 * read with libconfig into the model layer's plain cdse_stack. */
#include "clusterdse/config/stack.h"

#include <errno.h>
#include <libconfig.h>
#include <stddef.h>
#include <string.h>

enum { SK_FLOAT, SK_BOOL, SK_ENUM, SK_NAME };

typedef struct stack_key {
    const char *name;
    int type;
    size_t offset;
    double min, max; /* SK_FLOAT: min exclusive when min_open */
    bool min_open;
    const char *help;
} stack_key;

static const char *const zero3_names[] = {"deepspeed", "fsdp", NULL};

#define F(field) offsetof(cdse_stack, field)
static const stack_key stack_keys[] = {
    {"name", SK_NAME, F(name), 0, 0, false, "profile name (string)"},
    {"gemm_scale", SK_FLOAT, F(gemm_scale), 0.0, 1.0, true,
     "achieved GEMM efficiency relative to the system's gemm_efficiency table"},
    {"fused_attention", SK_BOOL, F(fused_attention), 0, 0, false,
     "a fused (flash / cuDNN) attention kernel is available"},
    {"selective_recompute", SK_BOOL, F(selective_recompute), 0, 0, false,
     "attention-core recomputation is available"},
    {"sequence_parallel", SK_BOOL, F(sequence_parallel), 0, 0, false,
     "its recipes use sequence parallelism with TP"},
    {"distributed_optimizer", SK_BOOL, F(distributed_optimizer), 0, 0, false,
     "its recipes shard the optimizer over data parallelism"},
    {"overlap_grad_reduce", SK_BOOL, F(overlap_grad_reduce), 0, 0, false,
     "DP gradient reduction overlaps the backward pass"},
    {"overlap_param_gather", SK_BOOL, F(overlap_param_gather), 0, 0, false,
     "the distributed optimizer's parameter all-gather overlaps the next forward pass"},
    {"overlap_tp_comm", SK_BOOL, F(overlap_tp_comm), 0, 0, false,
     "TP collectives pipelined with their GEMMs (with sequence parallelism)"},
    {"overlap_p2p", SK_BOOL, F(overlap_p2p), 0, 0, false,
     "the interleaved pipeline overlaps its sends with computation"},
    {"grad_bytes", SK_FLOAT, F(grad_bytes), 2.0, 4.0, false,
     "bytes per element of the gradient buffer and its reduction (2: bf16/fp16, 4: fp32)"},
    {"zero3_style", SK_ENUM, F(zero3_style), 0, 0, false,
     "ZeRO-3 implementation: \"deepspeed\" or \"fsdp\""},
    {"zero3_bucket_params", SK_FLOAT, F(zero3_bucket_params), 1e5, 1e10, false,
     "parameters per ZeRO-3 all-gather / reduce-scatter call"},
    {"runtime_gib", SK_FLOAT, F(runtime_gib), 0.0, 32.0, false,
     "GiB per GPU held by CUDA context, NCCL, cuBLAS and TE workspaces"},
    {"allocator_overhead", SK_FLOAT, F(allocator_overhead), 0.0, 1.0, false,
     "caching allocator: reserved over allocated bytes, minus 1"},
    {"iteration_fixed_s", SK_FLOAT, F(iteration_fixed_s), 0.0, 60.0, false,
     "seconds per iteration outside the model: data loading, logging, bookkeeping"},
    {"launch_s_per_layer", SK_FLOAT, F(launch_s_per_layer), 0.0, 0.01, false,
     "host seconds to launch one layer's forward kernels (backward: twice)"},
};
#undef F
#define N_KEYS (int)(sizeof stack_keys / sizeof stack_keys[0])

static void allowed_text(const stack_key *k, char *buf, size_t size)
{
    switch (k->type) {
    case SK_FLOAT:
        snprintf(buf, size, "a number %s %g and <= %g", k->min_open ? ">" : ">=", k->min, k->max);
        break;
    case SK_BOOL:
        snprintf(buf, size, "true or false");
        break;
    case SK_ENUM:
        snprintf(buf, size, "\"deepspeed\" or \"fsdp\"");
        break;
    default:
        snprintf(buf, size, "a string of at most %d characters", CDSE_NAME_MAX - 1);
    }
}

static int key_error(const char *path, const config_setting_t *at, const stack_key *k,
                     const char *what, cdse_diag *diag)
{
    char allowed[96];
    allowed_text(k, allowed, sizeof allowed);
    int line = at != NULL ? config_setting_source_line(at) : 1;
    cdse_diag_set(diag, "%s:%d: key '%s': %s; allowed: %s", path, line > 0 ? line : 1, k->name,
                  what, allowed);
    return CDSE_EINVAL;
}

static int read_key(const char *path, const config_setting_t *root, const stack_key *k,
                    cdse_stack *stack, cdse_diag *diag)
{
    const config_setting_t *s = config_setting_get_member(root, k->name);
    char *field = (char *)stack + k->offset;
    if (s == NULL)
        return key_error(path, root, k, "missing (every key of a stack profile is required)", diag);
    int type = config_setting_type(s);
    if (k->type == SK_FLOAT) {
        if (type != CONFIG_TYPE_FLOAT && type != CONFIG_TYPE_INT && type != CONFIG_TYPE_INT64)
            return key_error(path, s, k, "not a number", diag);
        double v = config_setting_get_float(s);
        if (type != CONFIG_TYPE_FLOAT)
            v = (double)config_setting_get_int64(s);
        bool low = k->min_open ? v <= k->min : v < k->min;
        if (low || v > k->max || v != v)
            return key_error(path, s, k, "out of range", diag);
        memcpy(field, &v, sizeof v);
    } else if (k->type == SK_BOOL) {
        if (type != CONFIG_TYPE_BOOL)
            return key_error(path, s, k, "not a boolean", diag);
        *(bool *)field = config_setting_get_bool(s) != 0;
    } else {
        const char *text = type == CONFIG_TYPE_STRING ? config_setting_get_string(s) : NULL;
        if (text == NULL)
            return key_error(path, s, k, "not a string", diag);
        if (k->type == SK_NAME) {
            if (strlen(text) >= CDSE_NAME_MAX || text[0] == '\0')
                return key_error(path, s, k, "empty or too long", diag);
            snprintf(stack->name, sizeof stack->name, "%s", text);
            return 0;
        }
        int choice = -1;
        for (int i = 0; zero3_names[i] != NULL; i++)
            if (strcmp(zero3_names[i], text) == 0)
                choice = i;
        if (choice < 0)
            return key_error(path, s, k, "unknown value", diag);
        *(int *)field = choice;
    }
    return 0;
}

static int read_stack(const char *path, const config_setting_t *root, cdse_stack *stack,
                      cdse_diag *diag)
{
    for (int i = 0; i < N_KEYS; i++) {
        int rc = read_key(path, root, &stack_keys[i], stack, diag);
        if (rc != 0)
            return rc;
    }
    for (int i = 0; i < config_setting_length(root); i++) {
        const config_setting_t *s = config_setting_get_elem(root, (unsigned)i);
        const char *name = config_setting_name(s);
        bool known = false;
        for (int k = 0; k < N_KEYS && !known; k++)
            known = strcmp(stack_keys[k].name, name) == 0;
        if (!known) {
            char names[640];
            size_t len = 0;
            for (int k = 0; k < N_KEYS; k++)
                len += (size_t)snprintf(names + len, sizeof names - len, "%s%s", k ? ", " : "",
                                        stack_keys[k].name);
            cdse_diag_set(diag, "%s:%d: key '%s': unknown key of a stack profile; allowed: %s",
                          path, config_setting_source_line(s), name, names);
            return CDSE_EINVAL;
        }
    }
    return 0;
}

int cdse_stack_load_file(const char *path, cdse_stack *stack, cdse_diag *diag)
{
    memset(stack, 0, sizeof *stack);
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        cdse_diag_set(diag,
                      "%s: cannot read stack profile (%s); allowed: a readable libconfig file",
                      path, strerror(errno));
        return CDSE_EIO;
    }
    config_t cfg;
    config_init(&cfg);
    int ok = config_read(&cfg, f);
    fclose(f);
    if (!ok) {
        cdse_diag_set(diag, "%s:%d: syntax error (%s); allowed: libconfig syntax: key = value;",
                      path, config_error_line(&cfg), config_error_text(&cfg));
        config_destroy(&cfg);
        return CDSE_EINVAL;
    }
    int rc = read_stack(path, config_root_setting(&cfg), stack, diag);
    config_destroy(&cfg);
    return rc;
}

void cdse_stack_print_keys(FILE *out)
{
    char allowed[96];
    for (int i = 0; i < N_KEYS; i++) {
        allowed_text(&stack_keys[i], allowed, sizeof allowed);
        fprintf(out, "  %-22s %s (%s)\n", stack_keys[i].name, stack_keys[i].help, allowed);
    }
}
