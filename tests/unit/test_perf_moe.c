/* The evaluator (src/model/perf*.c) against hand calculations: mixture-of-experts memory,
 * communication and compute, throughput, utilization and optimizer time. Split from test_perf.c
 * (issue 28); the shared fixtures and the list of sources are in perf_fixtures.h. */
#include "perf_fixtures.h"

/* ---- Mixture of experts --------------------------------------------------------------- */

/* Expert parallelism ep = 4 with t = 1, p = 2: each GPU of the first stage holds, per layer, the
 * attention 4 h^2 = 4194304, two RMSNorms 2048 and the router h E = 8192 (4204544; 8409088 for
 * two layers), the word embedding V h = 4194304 (dense total 12603392), and E / ep = 2 experts of
 * 3 h ffn = 6291456 per layer: 2 * 2 * 6291456 = 25165824 expert parameters (Megatron-Core expert
 * parallelism, Lepikhin et al. 2021 "GShard"). ZeRO shards the dense state over the d data-parallel
 * ranks and the expert state over the d / ep ranks that hold the same experts:
 *   d = 4: 18 B for both (ZeRO 0);
 *   d = 8, ZeRO 1: optimizer 12/8 B dense, 12/2 B experts. */
#define MOE_DENSE   12603392.0
#define MOE_EXPERTS 25165824.0

static void test_moe_state_memory(void **state)
{
    (void)state;
    cdse_model m = moe_model();
    cdse_system s = sys();
    cdse_strategy st = strat(8, 1, 2, 1, 16);
    st.ep = 4;
    cdse_result r;
    eval_ok(&m, &s, &st, &r);
    assert_int_equal(r.dp, 4);
    assert_rel(r.mem_weights_gib, (MOE_DENSE + MOE_EXPERTS) * 2.0 / GIB, 1e-12);
    assert_rel(r.mem_gradients_gib, (MOE_DENSE + MOE_EXPERTS) * 4.0 / GIB, 1e-12);
    assert_rel(r.mem_optimizer_gib, (MOE_DENSE + MOE_EXPERTS) * 12.0 / GIB, 1e-12);

    st = strat(16, 1, 2, 1, 32);
    st.ep = 4;
    st.zero = 1;
    eval_ok(&m, &s, &st, &r);
    assert_int_equal(r.dp, 8);
    assert_rel(r.mem_weights_gib, (MOE_DENSE + MOE_EXPERTS) * 2.0 / GIB, 1e-12);
    assert_rel(r.mem_optimizer_gib, (MOE_DENSE * 12.0 / 8.0 + MOE_EXPERTS * 12.0 / 2.0) / GIB,
               1e-12);
}

/* EP dispatch and combine (Megatron-Core all-to-all token dispatcher): each sends the routed copies
 * of the local tokens, T k h 2 B = 512 * 2 * 1024 * 2 = 2097152 B, over the 4 EP ranks (1 apart,
 * one node): 3/4 B / 240e9 + 3 * 2e-6 (see test_collective.c); two forward and two backward per
 * MoE layer, not overlapped; 2 layers per stage, m = 4 micro-batches: 4 * 2 * 4 all-to-alls. */
static void test_moe_ep_alltoall(void **state)
{
    (void)state;
    cdse_model m = moe_model();
    cdse_system s = sys();
    cdse_strategy st = strat(8, 1, 2, 1, 16);
    st.ep = 4;
    cdse_result r;
    eval_ok(&m, &s, &st, &r);
    assert_int_equal(r.grad_accum, 4);
    double one = 0.75 * 2097152.0 / 240e9 + 3.0 * 2e-6;
    assert_rel(r.t_ep_comm_s, 4.0 * 2.0 * 4.0 * one, 1e-12);
}

/* Gradient reduction of a MoE stage: the dense parameters over the d = 8 data-parallel ranks
 * (1 apart, one node: [8, 1]), the expert parameters over the d / ep = 2 ranks holding the same
 * experts (4 apart: ranks 0 and 4, one node). Both are smaller than one 40M-parameter bucket, so
 * both all-reduces are exposed whole (ZeRO 0):
 *   dense 2 (7/8) 4 * 12603392 / 240e9 + 2 * 7 * 2e-6;
 *   experts 2 (1/2) 4 * 25165824 / 240e9 + 2 * 2e-6. */
static void test_moe_dp_comm(void **state)
{
    (void)state;
    cdse_model m = moe_model();
    cdse_system s = sys();
    cdse_strategy st = strat(16, 1, 2, 1, 32);
    st.ep = 4;
    cdse_result r;
    eval_ok(&m, &s, &st, &r);
    assert_int_equal(r.dp, 8);
    double dense = 2.0 * 7.0 / 8.0 * 4.0 * MOE_DENSE / 240e9 + 14.0 * 2e-6;
    double experts = 2.0 * 0.5 * 4.0 * MOE_EXPERTS / 240e9 + 2.0 * 2e-6;
    assert_rel(r.t_dp_comm_s, dense + experts, 1e-12);
}

/* The expert gradients use the same bucket size as the dense ones, grown by the plain DP size
 * (Megatron-Core computes one bucket_size before it builds the dense and the expert buffers,
 * distributed_data_parallel.py at r0.8 and d98e8a64d), not by the expert data-parallel size. The
 * MoE model with t = 8, etp = 1, ep = 1 and d = 8 on 128 GPUs: every GPU holds all 8 experts of
 * its 2 layers unsplit, E = 4 x 25165824 = 100663296 parameters, reduced over edp = t d / (etp ep)
 * = 64 ranks; the bucket is max(40M, 1M x 8) = 40M parameters (with the edp size, 64M), so the
 * exposed part of the expert all-reduce ar (the plan's EDP op, hidden by one micro-batch's
 * backward pass) is 40e6 / E of it. */
static void test_moe_dp_comm_bucket(void **state)
{
    (void)state;
    cdse_model m = moe_model();
    cdse_system s = sys();
    s.level[1].bandwidth_gbs = 400.0;
    cdse_strategy st = strat(128, 8, 2, 16, 512);
    st.ep = 1;
    st.etp = 1;
    cdse_result r;
    cdse_comm_plan plan;
    cdse_evaluate_plan(&m, &s, &st, &r, &plan);
    assert_int_equal(r.status, CDSE_ST_OK);
    assert_int_equal(r.dp, 8);
    int edp_ops = 0;
    double ar = 0.0, exposed = 0.0;
    for (int i = 0; i < plan.n; i++)
        if (plan.op[i].group == CDSE_GROUP_EDP) {
            edp_ops++;
            assert_int_equal(plan.op[i].size, 64);
            assert_rel(plan.op[i].bytes, 4.0 * 100663296.0, 1e-12);
            ar = plan.op[i].time_s;
            exposed = plan.op[i].calls * plan.op[i].time_s * plan.op[i].exposed_share;
        }
    assert_int_equal(edp_ops, 1);
    assert_true(ar < r.t_backward_s / r.grad_accum);
    assert_rel(exposed, 40e6 / 100663296.0 * ar, 1e-12);
}

/* MoE activations per layer and micro-batch (perf*.c's generalization of Korthikanti Table 2),
 * b = 1, s = 512 (sb = 512), t = 1, no imbalance:
 *   kept as in a dense Llama layer: norm, QKV and FC1 inputs 4 * 2 sb h = 4194304;
 *   Q, K, V 2 sb (q + 2 kv) = 3145728; projection input 2 sb q = 1048576;
 *   softmax output 2 b a s^2 = 8388608;
 *   router logits and probabilities in fp32, 8 B per token and expert: 512 * 8 * 8 = 32768;
 *   routed copies sb k = 1024: their permuted inputs 2 h each = 2097152, and the SwiGLU gate, up
 *   and output 3 * 2 ffn each = 12582912;
 *   per layer 31490048. First stage: min(p, m) = 2 micro-batches of 2 layers: 125960192 B. */
static void test_moe_activations(void **state)
{
    (void)state;
    cdse_model m = moe_model();
    cdse_system s = sys();
    cdse_strategy st = strat(8, 1, 2, 1, 16);
    st.ep = 4;
    cdse_result r;
    eval_ok(&m, &s, &st, &r);
    double per_layer =
        4194304.0 + 3145728.0 + 1048576.0 + 8388608.0 + 32768.0 + 2097152.0 + 12582912.0;
    assert_rel(per_layer, 31490048.0, 1e-15);
    assert_rel(r.mem_activations_gib, 2.0 * 2.0 * per_layer / GIB, 1e-12);
}

/* Forward time of one MoE layer (the Mixtral-style model, t = 1, ep = 4, b = 1: T = 512 tokens,
 * k T = 1024 routed copies; 5e13 FLOP/s for GEMMs, 1e12 B/s HBM):
 *   QKV 512 x 3072 x 1024: 3221225472 FLOP (compute-bound: 10485760 B -> 1.05e-5 s < 6.4e-5 s);
 *   projection 512 x 1024 x 1024: 1073741824 FLOP (4194304 B: compute-bound);
 *   router 512 x 8 x 1024: 8388608 FLOP -> 1.7e-7 s, but (512*1024 + 1024*8 + 512*8) 2 =
 *   1073152 B -> 1.07e-6 s: memory-bound;
 *   experts: 2 local experts, each on T k ep / E = 512 rows: FC1 512 x 4096 x 1024
 *   (4294967296 FLOP) and FC2 512 x 1024 x 2048 (2147483648 FLOP), both compute-bound;
 *   router logits/probabilities 8 B per token and expert, permutation 8 B per routed element:
 *   512 (8 * 8 + 2 * 1024 * 8) B; the second sort by local expert (2 local experts, Megatron-
 *   Core's sort_chunks_by_idxs) 8 B per element of the 2 x 512 rows received: 1024 * 1024 * 8 B;
 *   attention: Q K^T and A V, batch 16 of 512 x 512 x 64, 536870912 FLOP each (compute-bound,
 *   10485760 B -> 1.05e-5 s < 1.07e-5 s), softmax 4 B on 1 * 16 * 512^2 = 4194304 scores;
 *   element-wise: 2 RMSNorms (4 B) and 2 residual adds (6 B) on h per token, T 20 h B, and the
 *   SwiGLU (6 B per output element) of the experts on their rows: k T moe_ffn 6 B =
 *   1024 * 2048 * 6 B (the activation function runs on the routed copies, not on T tokens of the
 *   dense ffn);
 *   EP dispatch + combine: 2 (3/4 2097152 / 240e9 + 3 * 2e-6) (test_moe_ep_alltoall). */
static void test_moe_layer_forward(void **state)
{
    (void)state;
    cdse_model m = moe_model();
    cdse_system s = sys();
    cdse_strategy st = strat(8, 1, 2, 1, 16);
    st.ep = 4;
    double pe = 5e13, hbm = 1e12, T = 512.0;
    double qkv = 3221225472.0 / pe, proj = 1073741824.0 / pe;
    double router = 1073152.0 / hbm;
    double experts = 2.0 * (4294967296.0 + 2147483648.0) / pe;
    double moe_ew = T * (8.0 * 8.0 + 2.0 * 1024.0 * 8.0) / hbm + 1024.0 * 1024.0 * 8.0 / hbm;
    double attn = 2.0 * 536870912.0 / pe + 4194304.0 * 4.0 / hbm;
    double ew = (T * 20.0 * H + 2.0 * T * 2048.0 * 6.0) / hbm;
    double ep = 2.0 * (0.75 * 2097152.0 / 240e9 + 3.0 * 2e-6);
    double fwd, bwd;
    assert_int_equal(cdse_layer_times(&m, &s, &st, &fwd, &bwd), CDSE_ST_OK);
    assert_rel(fwd, qkv + proj + router + experts + moe_ew + attn + ew + ep, 1e-12);
}

/* The layer's collectives share its computation (issue 31, perf_layer.c layer_windows): the CP
 * ring hides behind the attention core, EP's all-to-alls with 1F1B all-to-all overlap behind what
 * the ring left of the layer, not behind all of it again (each granted the whole window, a faster
 * attention exposed 0.75 of what it saved twice and trained slower:
 * tests/findings/model/ep_cp_share_window.cfg).
 * The MoE model with t = 1, cp = 2, ep = 4 on 8 GPUs (d = 4, b = 1, 4 sequences: m = 1), NVLink
 * slowed to 4 GB/s x 0.8 = 3.2e9 B/s (2 us) so that both streams outlast their windows. Per layer,
 * T = b s / cp = 256 tokens (5e13 FLOP/s GEMMs, 1e12 B/s HBM):
 *   QKV 256 x 3072 x 1024: 1610612736 FLOP -> 3.22e-5 s (8388608 B: compute-bound);
 *   projection 256 x 1024 x 1024: 536870912 FLOP (3145728 B: compute-bound);
 *   router 256 x 8 x 1024: (262144 + 8192 + 2048) 2 = 544768 B, memory-bound;
 *   experts: T k ep / E = 256 rows each (two whole tiles), 2 local: FC1 256 x 4096 x 1024
 *   (2147483648 FLOP, 11010048 B) and FC2 256 x 1024 x 2048 (1073741824 FLOP, 5767168 B), both
 *   compute-bound; router logits and permutation T (8 x 8 + 2 x 1024 x 8) B and the sort by local
 *   expert 2 x 256 rows x 1024 x 8 B: 8404992 B;
 *   attention (unfused), batch 16 of 256 queries x 512 keys x 64: Q K^T 268435456 FLOP -> 5.4e-6 s
 *   but 16 (256 x 64 + 64 x 512 + 256 x 512) 2 = 5767168 B -> 5.8e-6 s, memory-bound, A V the
 *   same; softmax on 16 x 256 x 512 = 2097152 scores, 4 B forward, 6 B backward:
 *   attn_fwd = (2 x 5767168 + 4 x 2097152) / 1e12, attn_bwd = (4 x 5767168 + 6 x 2097152) / 1e12;
 *   element-wise T (20 h + 2 x 2048 x 6) = 11534336 B forward, 1.5x backward;
 *   linear = QKV + projection + router + experts + 8404992 B; the layer computes
 *   3 linear + attn_fwd + attn_bwd + 2.5 ew.
 * CP ring step: b s/cp 2 kv dh 2 B = 1048576 B to the neighbour, 1048576 / 3.2e9 + 2e-6 = 3.3e-4 s,
 * one forward, two backward: both longer than the core they overlap, so each costs its excess and
 * 0.25 of the core. EP: 512 routed copies x h x 2 B = 1048576 B over 4 ranks of the node,
 * 0.75 x 1048576 / 3.2e9 + 3 x 2e-6 = 2.5e-4 s, 4 per layer (dispatch and combine, forward and
 * backward), 1.0e-3 s against the 3 linear + 2.5 ew = 5.9e-4 s the ring left: exposed
 * 4 a2a - 0.75 (3 linear + 2.5 ew). 4 layers, m = 1. */
static void test_layer_streams_share_window(void **state)
{
    (void)state;
    cdse_model m = moe_model();
    cdse_system s = sys();
    s.level[0].bandwidth_gbs = 4.0;
    cdse_strategy st = strat(8, 1, 1, 1, 4);
    st.cp = 2;
    st.ep = 4;
    st.moe_overlap = CDSE_MOE_OVERLAP_A2A;
    cdse_result r;
    eval_ok(&m, &s, &st, &r);
    assert_int_equal(r.dp, 4);
    assert_int_equal(r.grad_accum, 1);
    double pe = 5e13, hbm = 1e12, bw = 3.2e9;
    double linear = (1610612736.0 + 536870912.0 + 2.0 * (2147483648.0 + 1073741824.0)) / pe +
                    (544768.0 + 8404992.0) / hbm;
    double attn_fwd = (2.0 * 5767168.0 + 4.0 * 2097152.0) / hbm;
    double attn_bwd = (4.0 * 5767168.0 + 6.0 * 2097152.0) / hbm;
    double ew = 11534336.0 / hbm;
    double step = 1048576.0 / bw + 2e-6;
    double a2a = 0.75 * 1048576.0 / bw + 3.0 * 2e-6;
    double rest = 3.0 * linear + 2.5 * ew;
    assert_true(step > attn_fwd && 2.0 * step > attn_bwd && 4.0 * a2a > rest);
    assert_rel(r.t_cp_comm_s, 4.0 * (step - 0.75 * attn_fwd + 2.0 * step - 0.75 * attn_bwd), 1e-12);
    assert_rel(r.t_ep_comm_s, 4.0 * (4.0 * a2a - 0.75 * rest), 1e-12);
}

/* Tile quantization of the experts' GEMMs (NVIDIA Matrix Multiplication Background User's Guide
 * Sec. 3.1: a GEMM runs whole 128 x 128 output tiles). test_moe_layer_forward with the busiest
 * expert rank at 1.1 times the balanced load: each local expert gets 512 x 1.1 = 563.2 rows,
 * 5 tiles = 640 rows: FC1 640 x 4096 x 1024 (5368709120 FLOP) and FC2 640 x 1024 x 2048
 * (2684354560 FLOP) at 5e13 FLOP/s (compute-bound: 14942208 B and 8126464 B of operands take
 * under 1.5e-5 s); 4096 and 1024 columns are whole tiles. Every other term scales with the
 * 1.1 routed copies: permutation 512 (8 * 8 + 2.2 * 1024 * 8) B, the sort 2 x 563.2 rows x 1024
 * x 8 B, SwiGLU 2.2 x 512 x 2048 x 6 B, the all-to-alls 1.1 x 2097152 B. */
static void test_moe_expert_tiles(void **state)
{
    (void)state;
    cdse_model m = moe_model();
    m.moe_imbalance = 1.1;
    cdse_system s = sys();
    cdse_strategy st = strat(8, 1, 2, 1, 16);
    st.ep = 4;
    double pe = 5e13, hbm = 1e12, T = 512.0;
    double qkv = 3221225472.0 / pe, proj = 1073741824.0 / pe;
    double router = 1073152.0 / hbm;
    double experts = 2.0 * (5368709120.0 + 2684354560.0) / pe;
    double moe_ew = T * (8.0 * 8.0 + 2.2 * 1024.0 * 8.0) / hbm + 2.0 * 563.2 * 1024.0 * 8.0 / hbm;
    double attn = 2.0 * 536870912.0 / pe + 4194304.0 * 4.0 / hbm;
    double ew = (T * 20.0 * H + 2.2 * T * 2048.0 * 6.0) / hbm;
    double ep = 2.0 * (0.75 * 1.1 * 2097152.0 / 240e9 + 3.0 * 2e-6);
    double fwd, bwd;
    assert_int_equal(cdse_layer_times(&m, &s, &st, &fwd, &bwd), CDSE_ST_OK);
    assert_rel(fwd, qkv + proj + router + experts + moe_ew + attn + ew + ep, 1e-12);
}

/* Full recomputation repeats every local expert's GEMMs: the hardware FLOPs exceed the model
 * FLOPs by the forward FLOPs of the layers (test_moe_layer_forward's GEMMs, per GPU, layer and
 * micro-batch): QKV 3221225472 + projection 1073741824 + router 8388608 + 2 local experts x
 * (4294967296 + 2147483648) + attention 2 x 536870912 = 18261999616 FLOP, times L = 4 layers,
 * m = 4 micro-batches (16 sequences over d = 4) and d = 4 replicas: 1168767975424 FLOP per
 * iteration (Korthikanti et al. 2022 Sec. 6: hardware FLOPs count the recomputation). */
static void test_moe_recompute_flops(void **state)
{
    (void)state;
    cdse_model m = moe_model();
    cdse_system s = sys();
    cdse_strategy st = strat(8, 1, 2, 1, 16);
    st.ep = 4;
    st.recompute = CDSE_RECOMPUTE_FULL;
    cdse_result r;
    eval_ok(&m, &s, &st, &r);
    double extra =
        (r.hardware_tflops_per_gpu - r.model_tflops_per_gpu) * 1e12 * 8.0 * r.time_per_iteration_s;
    assert_rel(extra, 18261999616.0 * 4.0 * 4.0 * 4.0, 1e-9);
}

/* On one GPU (t = p = d = ep = 1) the weights are the whole model as workload.c counts it. A
 * GPT-style MoE (biases on every linear layer, LayerNorm) with h = 64, 4 heads of 16, ffn 256,
 * 2 layers of which the second is MoE (moe_every 2) with 4 experts of 128, top-1, V = 100,
 * s = 16, tied:
 *   attention 4 h^2 + 4 h = 16640, LayerNorms 4 h = 256: 2 * 16896 = 33792;
 *   dense MLP 2 h ffn + ffn + h = 32768 + 320 = 33088;
 *   MoE MLP 4 (2 h 128 + 128 + h) + router 4 h = 4 * 16576 + 256 = 66560;
 *   word and position embeddings 6400 + 1024, final LayerNorm 128: total 140992. */
static void test_moe_gpt_single_gpu_holds_whole_model(void **state)
{
    (void)state;
    cdse_model m;
    memset(&m, 0, sizeof m);
    strcpy(m.name, "gpt-moe");
    m.layers = 2;
    m.hidden = 64;
    m.heads = 4;
    m.kv_heads = 4;
    m.head_dim = 16;
    m.ffn = 256;
    m.seq_len = 16;
    m.vocab = 100;
    m.tied_embeddings = true;
    m.experts = 4;
    m.top_k = 1;
    m.moe_ffn = 128;
    m.moe_every = 2;
    m.moe_imbalance = 1.0;
    cdse_system s = sys();
    cdse_strategy st = strat(1, 1, 1, 1, 1);
    cdse_result r;
    eval_ok(&m, &s, &st, &r);
    assert_rel(r.mem_weights_gib, 140992.0 * 2.0 / GIB, 1e-12);
}

/* The same for the Mixtral-style model above on one GPU (no biases):
 * 4 layers of 4204544 dense + 8 * 6291456 experts = 4 * 54536192 = 218144768, word embedding and
 * untied output 2 * 4194304 = 8388608, final RMSNorm 1024: 226534400. */
static void test_moe_gated_single_gpu_holds_whole_model(void **state)
{
    (void)state;
    cdse_model m = moe_model();
    cdse_system s = sys();
    cdse_strategy st = strat(1, 1, 1, 1, 1);
    cdse_result r;
    eval_ok(&m, &s, &st, &r);
    assert_rel(r.mem_weights_gib, 226534400.0 * 2.0 / GIB, 1e-12);
}

/* ---- Throughput, MFU and HFU ----------------------------------------------------------- */

/* Model FLOPs per token by Narayanan et al. eq. 3, 72 L h^2 (1 + s/(6h) + V/(12 h L)); with
 * L = 2: 72*2*1024^2 (1 + 512/6144 + 4096/24576) = 150994944 * 1.25 = 188743680. An iteration
 * of global batch 8 x 512 tokens on 4 GPUs (d = 4, b = 2): model TFLOP/s per GPU = F * tokens /
 * time / 4 / 1e12, MFU = that / 100 TFLOP/s. Full recomputation repeats the forward pass of the
 * layers (one third of the layers' 72 L h^2 (1 + s/(6h)) per token): hardware FLOPs per token
 * 188743680 + 24*2*1024^2 (1 + 512/6144) = 188743680 + 54525952 = 243269632. */
static void test_throughput_and_utilization(void **state)
{
    (void)state;
    cdse_model m = gpt(2);
    cdse_system s = sys();
    cdse_strategy st = strat(4, 1, 1, 2, 8);
    st.recompute = CDSE_RECOMPUTE_FULL;
    cdse_result r;
    eval_ok(&m, &s, &st, &r);
    double L = 2.0;
    double per_token = 72.0 * L * H * H * (1.0 + S / (6.0 * H) + V / (12.0 * H * L));
    assert_rel(per_token, 188743680.0, 1e-15);
    double hw_per_token = per_token + 24.0 * L * H * H * (1.0 + S / (6.0 * H));
    assert_rel(hw_per_token, 243269632.0, 1e-15);
    double tokens = 8.0 * S;
    double time = r.time_per_iteration_s;
    assert_rel(r.tokens_per_s, tokens / time, 1e-12);
    assert_rel(r.model_tflops_per_gpu, per_token * tokens / time / 4.0 / 1e12, 1e-12);
    assert_rel(r.mfu, per_token * tokens / time / 4.0 / 100e12, 1e-12);
    assert_rel(r.hardware_tflops_per_gpu, hw_per_token * tokens / time / 4.0 / 1e12, 1e-12);
    assert_rel(r.hfu, hw_per_token * tokens / time / 4.0 / 100e12, 1e-12);
}

/* The optimizer step streams 58 B per locally updated parameter over HBM (perf*.c
 * OPTIMIZER_HBM_BYTES_PER_PARAM, Apex multi-tensor kernels): ZeRO-1 on the 16-GPU case above
 * updates 15223808 / 4 parameters: 3805952 * 58 / 1e12 s. */
static void test_optimizer_time(void **state)
{
    (void)state;
    cdse_model m = gpt(4);
    cdse_system s = sys();
    cdse_strategy st = strat(16, 2, 2, 1, 16);
    st.zero = 1;
    cdse_result r;
    eval_ok(&m, &s, &st, &r);
    assert_rel(r.t_optimizer_s, STAGE_PARAMS / 4.0 * 58.0 / 1e12, 1e-12);
    st.zero = 0;
    eval_ok(&m, &s, &st, &r);
    assert_rel(r.t_optimizer_s, STAGE_PARAMS * 58.0 / 1e12, 1e-12);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_moe_state_memory),
        cmocka_unit_test(test_moe_ep_alltoall),
        cmocka_unit_test(test_moe_dp_comm),
        cmocka_unit_test(test_moe_dp_comm_bucket),
        cmocka_unit_test(test_moe_activations),
        cmocka_unit_test(test_moe_layer_forward),
        cmocka_unit_test(test_layer_streams_share_window),
        cmocka_unit_test(test_moe_recompute_flops),
        cmocka_unit_test(test_moe_expert_tiles),
        cmocka_unit_test(test_moe_gpt_single_gpu_holds_whole_model),
        cmocka_unit_test(test_moe_gated_single_gpu_holds_whole_model),
        cmocka_unit_test(test_throughput_and_utilization),
        cmocka_unit_test(test_optimizer_time),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
