/* The torchtitan stack's mechanisms (issue 32), each against a hand calculation: FSDP2's memory
 * per rank (src/model/perf_memory.c fsdp2_state_memory) without and with pipeline parallelism,
 * the per-op selective checkpointing's activations eager and compiled,
 * and a context-parallel ring step's exposed time when each step's transfer overlaps only its own
 * attention block (cp_overlap "step", perf_layer.c cp_costs). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "assert_rel.h"

#include <math.h>
#include <string.h>

#include "clusterdse/model/perf.h"
#include "sys_fixture.h"

#define GIB CDSE_GIB

/* A small Llama-style model: h = 1024, 16 heads of 64 (no GQA), SwiGLU ffn 2816, vocabulary 4096,
 * untied, sequence 512. Per layer (t = 1): attention 4 h^2 = 4194304, MLP 3 h ffn = 8650752,
 * two RMSNorms 2 h = 2048: 12847104 parameters. */
static cdse_model llama(int layers)
{
    cdse_model m;
    memset(&m, 0, sizeof m);
    strcpy(m.name, "test-llama");
    m.layers = layers;
    m.hidden = 1024;
    m.heads = 16;
    m.kv_heads = 16;
    m.head_dim = 64;
    m.ffn = 2816;
    m.seq_len = 512;
    m.vocab = 4096;
    m.gated_mlp = true;
    m.tied_embeddings = false;
    return m;
}

/* sys(): sys_fixture.h, the system of test_perf_*.c: 100 TFLOP/s, GEMMs at 0.5, attention at
 * 0.4, HBM 1e12 B/s, NVLink 300 GB/s x 0.8 (2 us) in nodes of 8, InfiniBand 25 GB/s x 0.9 (5 us).
 */

/* The default stack as torchtitan-2025.cfg sets FSDP2 and its ring attention, fp32 reduction,
 * without runtime memory or host costs (tested in test_perf.c). */
static cdse_stack titan;

static cdse_strategy strat(int gpus, int tp, int pp, int microbatch, int global_batch)
{
    titan = cdse_stack_default;
    titan.runtime_gib = 0.0;
    titan.allocator_overhead = 0.0;
    titan.iteration_fixed_s = 0.0;
    titan.launch_s_per_layer = 0.0;
    titan.grad_bytes = 4.0;
    titan.fp8_param_gather = false;
    titan.fsdp2 = true;
    titan.cp_overlap = CDSE_CP_OVERLAP_STEP;
    cdse_strategy st;
    memset(&st, 0, sizeof st);
    st.gpus = gpus;
    st.tp = tp;
    st.pp = pp;
    st.cp = 1;
    st.ep = 1;
    st.vpp = 1;
    st.microbatch = microbatch;
    st.global_batch = global_batch;
    st.recompute = CDSE_RECOMPUTE_NONE;
    st.precision = CDSE_BF16;
    st.stack = &titan;
    return st;
}

static void eval_ok(const cdse_model *m, const cdse_system *s, const cdse_strategy *st,
                    cdse_result *r)
{
    cdse_evaluate(m, s, st, r);
    if (r->status != CDSE_ST_OK)
        print_error("status %s\n", cdse_status_name(r->status));
    assert_int_equal(r->status, CDSE_ST_OK);
}

/* FSDP2 without pipeline parallelism, 4 layers on d = 8 GPUs (torchtitan apply_fsdp: bf16
 * parameters for compute, fp32 reduction). The rank holds 4 x 12847104 = 51388416 layer
 * parameters and the root's: word embedding V h = 4194304, final norm h = 1024, output layer
 * V h = 4194304: 8389632, in all 59778048, of which it keeps 59778048 / 8 = 7472256 sharded:
 *   weights   4 B (fp32 shard, the master weights) x 7472256 + 2 B x (one block 12847104 gathered
 *             beside the root 8389632) = 29889024 + 25694208 + 16779264 = 72362496 B;
 *   gradients 2 B x the largest unit's bf16 gradient (a block, 12847104) = 25694208 B. The fp32
 *             shard, 4 x 7472256 = 29889024 B, does not exist at the peak, the start of the
 *             backward pass: torchtitan's step begins with optimizers.zero_grad() (train.py:266
 *             at 9dec370), which frees it (set_to_none=True, PyTorch's default since 2.0), and
 *             each block's reduce-scatter recreates its shard after the block's backward has
 *             freed its activations. It would count only beyond the activations the backward
 *             frees, and these are more: without recomputation and without flash attention each
 *             layer keeps its scores, b heads s^2 x 2 B = 16 x 512^2 x 2 = 8388608 B, 4 layers
 *             33554432 B > 29889024 B (test_fsdp2_sharded_grads_beyond_activations below);
 *   optimizer AdamW's two fp32 moments 8 B x 7472256 = 59778048 B (no separate master copy: the
 *             18 B / d of Megatron's ZeRO-3 are 16 B / d here);
 *   no FP8 weight cache. */
static void test_fsdp2_memory_per_rank(void **state)
{
    (void)state;
    cdse_model m = llama(4);
    cdse_system s = sys();
    cdse_strategy st = strat(8, 1, 1, 1, 8);
    st.zero = 3;
    cdse_result r;
    eval_ok(&m, &s, &st, &r);
    assert_int_equal(r.dp, 8);
    assert_rel(r.mem_weights_gib, 72362496.0 / GIB, 1e-12);
    assert_rel(r.mem_gradients_gib, 25694208.0 / GIB, 1e-12);
    assert_rel(r.mem_optimizer_gib, 59778048.0 / GIB, 1e-12);
    assert_rel(r.mem_fp8_cache_gib, 0.0, 0.0);
}

/* The sharded fp32 gradients against the activations the backward pass frees (perf_memory.c
 * fsdp2_state_memory). The rank of test_fsdp2_memory_per_rank with a 16-token sequence and full
 * recomputation keeps, per micro-batch, each layer's input, 2 B x 16 x 1024 = 32768 B, 4 layers
 * 131072 B, and the fp32 logits of the loss, 4 B x 16 x 4096 = 262144 B: 393216 B. The step ends
 * with the whole shard, 4 x 7472256 = 29889024 B, and none of them: the peak holds
 * 29889024 - 393216 = 29495808 B of it beyond the activations, beside the 25694208 B of bf16
 * gradients (the largest unit's): 55190016 B.
 * With two micro-batches per step (global batch 16 on d = 8) FSDP2 reduce-scatters after each
 * and adds the second micro-batch's shard into the first's: the shard lives through the second
 * micro-batch's passes, 29889024 + 25694208 = 55583232 B. */
static void test_fsdp2_sharded_grads_beyond_activations(void **state)
{
    (void)state;
    cdse_model m = llama(4);
    m.seq_len = 16;
    cdse_system s = sys();
    cdse_strategy st = strat(8, 1, 1, 1, 8);
    st.zero = 3;
    st.recompute = CDSE_RECOMPUTE_FULL;
    cdse_result r;
    eval_ok(&m, &s, &st, &r);
    assert_rel(r.mem_activations_gib, 393216.0 / GIB, 1e-12);
    assert_rel(r.mem_gradients_gib, 55190016.0 / GIB, 1e-12);

    st.global_batch = 16;
    eval_ok(&m, &s, &st, &r);
    assert_int_equal(r.grad_accum, 2);
    assert_rel(r.mem_gradients_gib, 55583232.0 / GIB, 1e-12);
}

/* torchtitan's per-op selective checkpointing eager and compiled (stack torch_compile,
 * perf_memory.c op_policy_layer_bytes), 4 layers of llama(), t = 1, one 512-token micro-batch,
 * flash attention. Eager, the policy's dispatch mode keeps every output it marks MUST_SAVE
 * (torchtitan _save_list and _custom_policy, parallelize_llama.py at 9dec370: every odd mm of
 * wq, wk, wv, wo, w1, w3, w2, the flash attention's outputs), per token:
 *   block input h 1024, wq q 1024, wv kv 16 x 64 = 1024, w1 ffn 2816, w2 h 1024, attention
 *   output 1024: 7936 bf16 elements, 15872 B, and the fp32 log-sum-exp of 16 heads, 64 B:
 *   15936 B, x 512 tokens = 8159232 B per layer (less than the 33344 B per token the layer
 *   keeps without recomputation), 4 layers 32636928 B, with the loss's fp32 logits
 *   4 x 512 x 4096 = 8388608 B: 41025536 B.
 * Compiled, AOTAutograd's partitioner saves only what the backward graph reads
 * (torch/_functorch/partitioners.py: MUST_SAVE bans recomputation, the saved set is the min
 * cut): w2's output feeds only the residual add, whose backward reads no input, so 2 B x 1024 x
 * 512 = 1048576 B per layer less: 41025536 - 4 x 1048576 = 36831232 B. */
static void test_op_policy_compiled(void **state)
{
    (void)state;
    cdse_model m = llama(4);
    cdse_system s = sys();
    cdse_strategy st = strat(8, 1, 1, 1, 8);
    st.zero = 3;
    st.flash_attention = true;
    st.recompute = CDSE_RECOMPUTE_SELECTIVE;
    titan.selective_policy = CDSE_SELECTIVE_OP;
    titan.torch_compile = false;
    cdse_result eager, compiled;
    eval_ok(&m, &s, &st, &eager);
    assert_rel(eager.mem_activations_gib, 41025536.0 / GIB, 1e-12);
    titan.torch_compile = true;
    eval_ok(&m, &s, &st, &compiled);
    assert_rel(compiled.mem_activations_gib, 36831232.0 / GIB, 1e-12);
}

/* FSDP2 under a pipeline (p = 2, d = 4 on 8 GPUs): torchtitan keeps blocks unsharded after the
 * forward pass and PyTorch's pipeline stage keeps them unsharded, and gradients unsharded in fp32,
 * until the last micro-batch (torch/distributed/pipelining/stage.py). The first stage holds 2
 * layers (25694208) and the word embedding (4194304): 29888512 parameters, 7472128 per shard:
 *   weights   4 x 7472128 + 2 x 29888512 = 29888512 + 59777024 = 89665536 B;
 *   gradients 4 x 7472128 + 4 x 29888512 = 29888512 + 119554048 = 149442560 B;
 *   optimizer 8 x 7472128 = 59777024 B. */
static void test_fsdp2_pipeline_memory(void **state)
{
    (void)state;
    cdse_model m = llama(4);
    cdse_system s = sys();
    cdse_strategy st = strat(8, 1, 2, 1, 8);
    st.zero = 3;
    cdse_result r;
    eval_ok(&m, &s, &st, &r);
    assert_int_equal(r.dp, 4);
    assert_rel(r.mem_weights_gib, 89665536.0 / GIB, 1e-12);
    assert_rel(r.mem_gradients_gib, 149442560.0 / GIB, 1e-12);
    assert_rel(r.mem_optimizer_gib, 59777024.0 / GIB, 1e-12);
}

/* Without the stack's fsdp2 the same ZeRO-3 rank holds Megatron's 2 + 4 + 12 B / d (18 / d):
 * 7472256 x (2, 4, 12) B; the mechanism is the stack's, not ZeRO-3's. */
static void test_zero3_without_fsdp2(void **state)
{
    (void)state;
    cdse_model m = llama(4);
    cdse_system s = sys();
    cdse_strategy st = strat(8, 1, 1, 1, 8);
    titan.fsdp2 = false;
    st.zero = 3;
    cdse_result r;
    eval_ok(&m, &s, &st, &r);
    assert_rel(r.mem_weights_gib, 2.0 * 7472256.0 / GIB, 1e-12);
    assert_rel(r.mem_gradients_gib, 4.0 * 7472256.0 / GIB, 1e-12);
    assert_rel(r.mem_optimizer_gib, 12.0 * 7472256.0 / GIB, 1e-12);
}

/* A ring step's exposed time (cp_overlap "step"): t = 2, cp = 8 on 16 GPUs, the ring crossing
 * InfiniBand (as test_perf.c test_cp_ring_across_nodes), flash attention, b = 2, 2 layers.
 * Per layer on a rank: s_local = 64, 8 heads of 64 on the TP rank.
 *   Transfer per step: keys and values of 8 kv heads, 2 x 64 x 2 x 8 x 64 x 2 B = 262144 B over
 *   InfiniBand: step = 262144 / (25e9 x 0.9) + 5e-6 = 1.6650596e-5 s (PyTorch's
 *   _templated_ring_attention: step i waits for its keys and values, starts the next transfer,
 *   then runs its block).
 *   Attention: scores b heads s_local s = 2 x 8 x 64 x 512 = 524288, causal flash FLOPs
 *   4 x 524288 x 64 x 0.5 = 67108864 at 100e12 x 0.4: A_f = 1.6777216e-6 s, A_b = 2.5 A_f.
 *   Merges of the partial results in fp32 (_SDPAMerger, perf_layer.c CP_MERGE_*_BYTES: 38 B per
 *   output element and step forward, 54 B backward) over b s_local heads d_head = 65536 elements,
 *   7 merges: M_f = 7 x 65536 x 38 / 1e12 = 1.7432576e-5 s, M_b = 7 x 65536 x 54 / 1e12 =
 *   2.4772608e-5 s; they belong to the attention.
 *   With causal load balancing each of the 8 blocks is 1 / 8 of the attention, and each of the 7
 *   transfers hides behind one block: 7 exposed(step, (A + M) / 8) = exposed(7 step,
 *   7 / 8 (A + M)) (exposed() is linear), where exposed(c, w) = c - min(c, w) + 0.25 min(c, w)
 *   (OVERLAP_INTERFERENCE). Forward 7 steps, backward 14 (keys/values and their gradients).
 *   Both windows are shorter than the transfers here: per layer
 *     (7 step - 0.75 x 7/8 (A_f + M_f)) + (14 step - 0.75 x 7/8 (A_b + M_b)).
 *   The layer-wide overlap (cp_overlap "layer", Transformer Engine's ring) hides each direction's
 *   transfers behind all of the attention, which is more: the assertion below also checks that
 *   difference. That ring merges in the activation dtype instead (perf_layer.c
 *   CP_MERGE_FIRST_BYTES 4, CP_MERGE_STEP_BYTES 6 per element: 4 + 6 x 7 = 46 B): forward over
 *   the 65536 output elements, T_f = 65536 x 46 / 1e12 = 3.014656e-6 s; backward over the query,
 *   key and value gradients, b s_local (heads d_qk + 0.5 kv_heads (d_qk + d_v)) = 128 x (8 x 64
 *   + 0.5 x 8 x 128) = 131072 elements, T_b = 131072 x 46 / 1e12 = 6.029312e-6 s; they join A. */
static void test_cp_ring_step_exposed(void **state)
{
    (void)state;
    cdse_model m = llama(2);
    cdse_system s = sys();
    cdse_strategy st = strat(16, 2, 1, 2, 2);
    st.cp = 8;
    st.zero = 3; /* the fsdp2 stacks run ZeRO-3 only; sharded over the 8 CP ranks */
    st.flash_attention = true;
    cdse_result r;
    eval_ok(&m, &s, &st, &r);
    assert_int_equal(r.dp, 1);
    double step = 262144.0 / (25e9 * 0.9) + 5e-6;
    double a_f = 67108864.0 / (100e12 * 0.4), a_b = 2.5 * a_f;
    double m_f = 7.0 * 65536.0 * 38.0 / 1e12, m_b = 7.0 * 65536.0 * 54.0 / 1e12;
    double w_f = 7.0 / 8.0 * (a_f + m_f), w_b = 7.0 / 8.0 * (a_b + m_b);
    assert_true(7.0 * step > w_f && 14.0 * step > w_b);
    double per_layer = (7.0 * step - 0.75 * w_f) + (14.0 * step - 0.75 * w_b);
    assert_rel(r.t_cp_comm_s, 2.0 * per_layer, 1e-12);

    titan.cp_overlap = CDSE_CP_OVERLAP_LAYER;
    cdse_result whole;
    eval_ok(&m, &s, &st, &whole);
    double t_f = 65536.0 * 46.0 / 1e12, t_b = 131072.0 * 46.0 / 1e12;
    double layer_wide = (7.0 * step - 0.75 * (a_f + t_f)) + (14.0 * step - 0.75 * (a_b + t_b));
    assert_rel(whole.t_cp_comm_s, 2.0 * layer_wide, 1e-12);
}

/* The loss's logits at its peak (the stack's logit_bytes, logit_bytes_tp with tensor
 * parallelism): one micro-batch of 512 tokens on t = 2 holds 512 x 4096 / 2 = 1048576 logits of
 * the vocabulary shard; at 16 B (PyTorch's vocabulary-parallel log_softmax in its backward pass:
 * kept output, incoming gradient, exp(output) and its product, fp32 each) instead of the 4 B of
 * fp32 logits the activations grow by 1048576 x 12 = 12582912 B, and logit_bytes (without TP)
 * does not enter. */
static void test_loss_parallel_logits(void **state)
{
    (void)state;
    cdse_model m = llama(2);
    cdse_system s = sys();
    cdse_strategy st = strat(2, 2, 1, 1, 1);
    st.sequence_parallel = true;
    titan.fsdp2 = false; /* one data-parallel rank: nothing to shard; the loss is the stack's */
    titan.logit_bytes = 4.0;
    titan.logit_bytes_tp = 4.0;
    cdse_result fp32_logits, parallel_loss;
    eval_ok(&m, &s, &st, &fp32_logits);
    titan.logit_bytes = 99.0; /* not used with t = 2 */
    titan.logit_bytes_tp = 16.0;
    eval_ok(&m, &s, &st, &parallel_loss);
    assert_rel(parallel_loss.mem_activations_gib - fp32_logits.mem_activations_gib,
               12582912.0 / GIB, 1e-9);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fsdp2_memory_per_rank),
        cmocka_unit_test(test_fsdp2_sharded_grads_beyond_activations),
        cmocka_unit_test(test_op_policy_compiled),
        cmocka_unit_test(test_fsdp2_pipeline_memory),
        cmocka_unit_test(test_zero3_without_fsdp2),
        cmocka_unit_test(test_cp_ring_step_exposed),
        cmocka_unit_test(test_loss_parallel_logits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
