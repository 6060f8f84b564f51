/* The evaluator (src/model/perf*.c) against hand calculations: pipeline point-to-point, lock-step
 * schedule, gradient accumulation and split embedding stages. Split from test_perf.c (issue 28);
 * the shared fixtures and the list of sources are in perf_fixtures.h. */
#include "perf_fixtures.h"

/* Interleaved pipeline, p = 4, v = 2, m = 8 in one node: m v + p - 1 = 19 chunk steps, each
 * sending the boundary activation forward and backward, 2 (2097152 / 240e9 + 2e-6) s, overlapped
 * with the next chunk's computation (Megatron-Core overlap_p2p_comm), which lasts longer (one
 * chunk of one micro-batch: (t_forward + t_backward) / (m v), checked below): 0.25 of it shows,
 * except for the p v - 1 = 7 steps of the first micro-batch's way through the pipeline and the
 * last one's way back, which wait for their transfers: 12 x 0.25 x 2 one + 7 x 2 one. */
static void test_pipeline_p2p_interleaved(void **state)
{
    (void)state;
    cdse_model m = gpt(8);
    cdse_system s = sys();
    cdse_strategy st = strat(4, 1, 4, 2, 16);
    st.vpp = 2;
    cdse_result r;
    eval_ok(&m, &s, &st, &r);
    double one = S * B * H * 2.0 / 240e9 + 2e-6;
    assert_true(2.0 * one < (r.t_forward_s + r.t_backward_s) / (8.0 * 2.0));
    assert_rel(r.t_pp_comm_s, 12.0 * 0.25 * 2.0 * one + 7.0 * 2.0 * one, 1e-12);
}

/* DeepSpeed's pipeline engine (stack key pipeline_lockstep; deepspeed/runtime/pipe/schedule.py
 * TrainSchedule at commit 3293cf72a, January 2022) runs at the 1F1B rate. Its steps pair a stage
 * with one neighbour only: a forward step receives the activation from and sends the previous
 * gradient to the stage before it, a backward step sends the previous activation to and receives
 * the gradient from the stage after it, all blocking (p2p.py). Hand trace for p = 2, m = 2 (f, b
 * the stage's forward and backward per micro-batch), commands in schedule order:
 *   stage 0: F0 [0, f], send act0 (met at f), F1 [f, 2f], send act1 (met at 2f + b), recv grad0,
 *            B0 [2f + b, 2f + 2b], recv grad1 (met at 3f + 2b), B1 [3f + 2b, 3f + 3b];
 *   stage 1: recv act0 (f), F0 [f, 2f], B0 [2f, 2f + b], recv act1, send grad0 (2f + b),
 *            F1 [2f + b, 3f + b], B1 [3f + b, 3f + 2b], send grad1 (3f + 2b).
 * The iteration ends at 3 (f + b) = (m + p - 1)(f + b): 1F1B's bubble (p - 1)(f + b) = f + b
 * (Narayanan et al. 2021, Sec. 2.2), not the 2 (m + p - 1) steps of the longer pass each
 * (2b over the work) that a schedule syncing with both neighbours every step would take. The
 * same holds for p = 4, m = 8 (an event simulation of the schedule's commands: 11 (f + b)).
 * f and b: t_forward_s / m and (t_backward_s + t_recompute_s) / m (no TP, CP or EP here).
 * Transfers, each one = 512 x 2 x 1024 x 2 B over NVLink (240 GB/s, 2 us), in the trace above:
 * act0, act1, grad0, grad1 each delay the iteration, 2m = 4 (Megatron's 1F1B: 2 (m + p - 1) = 6);
 * for p = 4, m = 8, 4m + 2p - 8 = 32 against 1F1B's 22 (tests/py/deepspeed_schedule.py); for
 * p = 4 and one micro-batch, its way there and back, 2 (p - 1) = 6 (4m + 2p - 8 = 4 is less). */
static void test_pipeline_lockstep(void **state)
{
    (void)state;
    cdse_model m = gpt(8);
    cdse_system s = sys();
    cdse_strategy single = strat(1, 1, 1, 2, 16); /* strat() resets the shared bare stack */
    cdse_strategy two = strat(2, 1, 2, 2, 4);
    cdse_strategy st = strat(4, 1, 4, 2, 16);
    cdse_strategy lone = strat(4, 1, 4, 2, 2);
    cdse_result plain, lock;
    bare.pipeline_lockstep = true;
    eval_ok(&m, &s, &two, &lock);
    double f = lock.t_forward_s / 2.0, b = (lock.t_backward_s + lock.t_recompute_s) / 2.0;
    assert_true(b > f);
    assert_rel(lock.t_bubble_s, f + b, 1e-12);
    double one = 512.0 * 2.0 * 1024.0 * 2.0 / 240e9 + 2e-6;
    assert_rel(lock.t_pp_comm_s, 4.0 * one, 1e-12);
    eval_ok(&m, &s, &lone, &lock);
    assert_int_equal(lock.grad_accum, 1);
    assert_rel(lock.t_pp_comm_s, 6.0 * one, 1e-12);
    /* Odd pipelines, counted by the simulation (tests/py/deepspeed_schedule.py iteration_time
     * with and without a transfer cost, not its formula): p = 3, m = 4: 14; p = 5, m = 3: 14. */
    cdse_strategy three = strat(3, 1, 3, 2, 8), five = strat(5, 1, 5, 2, 6);
    bare.pipeline_lockstep = true; /* strat() reset it */
    eval_ok(&m, &s, &three, &lock);
    assert_int_equal(lock.grad_accum, 4);
    assert_rel(lock.t_pp_comm_s, 14.0 * one, 1e-12);
    eval_ok(&m, &s, &five, &lock);
    assert_int_equal(lock.grad_accum, 3);
    assert_rel(lock.t_pp_comm_s, 14.0 * one, 1e-12);
    eval_ok(&m, &s, &st, &lock);
    f = lock.t_forward_s / 8.0;
    b = (lock.t_backward_s + lock.t_recompute_s) / 8.0;
    assert_rel(lock.t_bubble_s, 3.0 * (f + b), 1e-12);
    assert_rel(lock.t_pp_comm_s, 32.0 * one, 1e-12);
    /* one replica: no gradient reduction, so only the transfers differ */
    bare.pipeline_lockstep = false;
    eval_ok(&m, &s, &st, &plain);
    assert_rel(plain.t_pp_comm_s, 22.0 * one, 1e-12);
    assert_rel(lock.time_per_iteration_s - plain.time_per_iteration_s, 10.0 * one, 1e-9);
    bare.pipeline_lockstep = true;
    eval_ok(&m, &s, &single, &lock);
    bare.pipeline_lockstep = false;
    eval_ok(&m, &s, &single, &plain);
    assert_rel(lock.time_per_iteration_s, plain.time_per_iteration_s, 1e-15);
}

/* DeepSpeed's pipeline engine reduces the gradients after the last step of its schedule
 * (TrainSchedule: ReduceTiedGrads, ReduceGrads, OptimizerStep): the configuration of
 * test_dp_comm_last_bucket (t = 8, p = 2, d = 2 over IB at 200 GB/s x 0.9, 32 layers and the
 * embedding per stage in fp32 gradients), whose all-reduce 2 (1/2) 4 params / 180e9 + 2 x 5e-6
 * Megatron hides but for its last bucket, shows whole. */
static void test_pipeline_lockstep_reduces_after_flush(void **state)
{
    (void)state;
    cdse_model m = gpt(64);
    cdse_system s = sys();
    s.level[1].bandwidth_gbs = 200.0;
    cdse_strategy st = strat(32, 8, 2, 1, 8);
    bare.pipeline_lockstep = true;
    cdse_result r;
    eval_ok(&m, &s, &st, &r);
    double params = 32.0 * 1579904.0 + 1048576.0;
    double ar = 2.0 * 0.5 * params * 4.0 / (200e9 * 0.9) + 2.0 * 5e-6;
    assert_rel(r.t_dp_comm_s, ar, 1e-12);
    bare.pipeline_lockstep = false;
}

/* Gradients accumulated by a pass of their own (stack key grad_accum_bytes; DeepSpeed's
 * BF16_Optimizer.update_hp_grads after every backward pass: hp_grad.add_(lp.grad.to(fp32)), read
 * 2 + write 4 for the fp32 copy, read 4 + 4 + write 4 for the add: 18 B per parameter;
 * deepspeed/runtime/bf16_optimizer.py and pipe/engine.py _exec_backward_pass at DeepSpeed
 * 9b70ce56e, June 2022). The configuration of test_dp_comm_one_bucket (t = 8, p = 2, m = 4): the
 * stage's two layers hold 2 x 1579904 = 3159808 parameters per GPU, so each micro-batch's
 * backward pass grows by 3159808 x 18 / 1e12 s (1000 GB/s HBM): m = 4 times in the optimizer
 * term, (p - 1) = 1 time in the bubble. */
static void test_grad_accum_pass(void **state)
{
    (void)state;
    cdse_model m = gpt(4);
    cdse_system s = sys();
    cdse_strategy st = strat(32, 8, 2, 1, 8);
    cdse_result plain, accum;
    eval_ok(&m, &s, &st, &plain);
    bare.grad_accum_bytes = 18.0;
    eval_ok(&m, &s, &st, &accum);
    bare.grad_accum_bytes = 0.0;
    double pass = 3159808.0 * 18.0 / 1e12;
    assert_rel(accum.t_optimizer_s - plain.t_optimizer_s, 4.0 * pass, 1e-9);
    assert_rel(accum.t_bubble_s - plain.t_bubble_s, 1.0 * pass, 1e-9);
    assert_rel(accum.time_per_iteration_s - plain.time_per_iteration_s, 5.0 * pass, 1e-9);
}

/* A split that counts the input embedding and the output layer as one layer each (stack key
 * pipeline_split_embedding; DeepSpeed's partition_method 'type:transformer|embedding'). Six layers
 * on p = 4 stages, m = 8 micro-batches of T = 2 x 512 tokens: 6 + 2 = 8 units, 2 per stage, as
 * without the key (ceil(6 / 4) = 2). The last stage holds one layer and the output layer (the
 * logits GEMM 2 T V H = 8.6e9 FLOP, about a third of a layer's 24 T H^2 = 2.6e10): a middle stage
 * of two layers is the slowest, and no stage carries the output layer's
 * m (2 T V H / (100e12 x 0.5) + 52 T V / 1e12) forward (GEMM and loss) and m 2 (2 T V H / 5e13)
 * backward. With V = 65536 the output layer outweighs a layer (1.4e11 FLOP): the last stage is
 * the slowest, one layer (cdse_layer_times) lighter than without the key. */
static void test_pipeline_split_embedding(void **state)
{
    (void)state;
    cdse_model m = gpt(6);
    cdse_system s = sys();
    cdse_strategy st = strat(4, 1, 4, 2, 16);
    cdse_result plain, split;
    eval_ok(&m, &s, &st, &plain);
    bare.pipeline_split_embedding = true;
    eval_ok(&m, &s, &st, &split);
    double T = S * B, gemm = 2.0 * T * V * H / 5e13, loss = 52.0 * T * V / 1e12;
    assert_rel(plain.t_forward_s - split.t_forward_s, 8.0 * (gemm + loss), 1e-9);
    assert_rel(plain.t_backward_s - split.t_backward_s, 8.0 * 2.0 * gemm, 1e-9);
    /* a large vocabulary: the last stage sets the pace with one layer fewer */
    m.vocab = 65536;
    bare.pipeline_split_embedding = false;
    eval_ok(&m, &s, &st, &plain);
    bare.pipeline_split_embedding = true;
    eval_ok(&m, &s, &st, &split);
    double fwd, bwd;
    assert_int_equal(cdse_layer_times(&m, &s, &st, &fwd, &bwd), CDSE_ST_OK);
    assert_rel(plain.t_forward_s - split.t_forward_s, 8.0 * fwd, 1e-9);
    assert_rel(plain.t_backward_s - split.t_backward_s, 8.0 * bwd, 1e-9);
    bare.pipeline_split_embedding = false;
}

/* The same split on p = 2 stages (issue 31): 6 + 2 = 8 units, 4 per stage, so each stage holds 3
 * layers, the first with the embedding, the last with the output layer, as 6 layers on 2 stages
 * without the key (ceil(6 / 2) = 3 and the output layer on the last). No stage holds 4 layers:
 * the passes are the same with the key and without, for the small vocabulary (the output layer
 * lighter than a layer, where a 4-layer "middle" stage was counted) and the large one. */
static void test_pipeline_split_two_stages(void **state)
{
    (void)state;
    cdse_model m = gpt(6);
    cdse_system s = sys();
    cdse_strategy st = strat(2, 1, 2, 2, 16);
    for (int vocab = 0; vocab < 2; vocab++) {
        m.vocab = vocab == 0 ? (int)V : 65536;
        cdse_result plain, split;
        bare.pipeline_split_embedding = false;
        eval_ok(&m, &s, &st, &plain);
        bare.pipeline_split_embedding = true;
        eval_ok(&m, &s, &st, &split);
        assert_rel(split.t_forward_s, plain.t_forward_s, 1e-12);
        assert_rel(split.t_backward_s, plain.t_backward_s, 1e-12);
    }
    bare.pipeline_split_embedding = false;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pipeline_p2p_interleaved),
        cmocka_unit_test(test_pipeline_lockstep),
        cmocka_unit_test(test_pipeline_lockstep_reduces_after_flush),
        cmocka_unit_test(test_grad_accum_pass),
        cmocka_unit_test(test_pipeline_split_embedding),
        cmocka_unit_test(test_pipeline_split_two_stages),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
