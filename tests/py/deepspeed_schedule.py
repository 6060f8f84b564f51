#!/usr/bin/env python3
"""Event simulation of DeepSpeed's pipeline training schedule (TrainSchedule in
deepspeed/runtime/pipe/schedule.py, read at microsoft/DeepSpeed commit 3293cf72a, January 2022),
the check behind src/model/perf*.c's treatment of the stack key pipeline_lockstep.

Each stage runs its commands in schedule order on one stream. A step pairs the stage with one
neighbour: a forward step receives the activation from the previous stage and then sends it the
gradient of the previous step; a backward step sends the previous step's activation to the next
stage and then receives the gradient from it (pipe/p2p.py: blocking send and recv). A transfer
ends when both partners have reached it and takes c seconds; F and B take f and b.

Checked: the iteration takes (m + p - 1)(f + b), 1F1B's time (Narayanan et al. 2021, Sec. 2.2),
and the transfers on its critical path number deepspeed_transfers(m, p) of perf*.c:
2m for p = 2, max(4m + 2p - 8, 2(p - 1)) for p >= 3. Exit 0 when both hold everywhere tried.
"""
import sys


def micro_batch(step, stage, stages):
    """TrainSchedule._step_to_micro_batch: (micro-batch id, is_forward)."""
    even_step, even_stage = step % 2 == 0, stage % 2 == 0
    if even_step and even_stage:
        return step // 2 - stage // 2, True
    if not even_step and not even_stage:
        return (step - 1) // 2 - stage // 2, True
    if even_step and not even_stage:
        return step // 2 - stages + (stage + 1) // 2, False
    return (step - 1) // 2 - stages + 1 + stage // 2, False


def commands(stage, stages, m):
    valid = lambda mb: 0 <= mb < m
    out, prev = [], -1
    for step in range(2 * (m + stages - 1)):
        mb, forward = micro_batch(step, stage, stages)
        if forward and stage > 0:
            if valid(mb):
                out.append(("recv_act", stage - 1, mb))
            if valid(prev):
                out.append(("send_grad", stage - 1, prev))
        if not forward and stage < stages - 1:
            if valid(prev):
                out.append(("send_act", stage + 1, prev))
            if valid(mb):
                out.append(("recv_grad", stage + 1, mb))
        if valid(mb):
            out.append(("F" if forward else "B", None, mb))
        prev = mb
    return out


PARTNER = {"recv_act": "send_act", "send_act": "recv_act",
           "send_grad": "recv_grad", "recv_grad": "send_grad"}


def iteration_time(m, stages, f, b, c):
    cmds = [commands(s, stages, m) for s in range(stages)]
    pos, clock = [0] * stages, [0.0] * stages
    while any(pos[s] < len(cmds[s]) for s in range(stages)):
        moved = False
        for s in range(stages):
            if pos[s] >= len(cmds[s]):
                continue
            op, peer, mb = cmds[s][pos[s]]
            if op in ("F", "B"):
                clock[s] += f if op == "F" else b
                pos[s] += 1
                moved = True
                continue
            if pos[peer] < len(cmds[peer]) and cmds[peer][pos[peer]] == (PARTNER[op], s, mb):
                clock[s] = clock[peer] = max(clock[s], clock[peer]) + c
                pos[s] += 1
                pos[peer] += 1
                moved = True
        if not moved:
            raise RuntimeError(f"deadlock at m={m} p={stages}")
    return max(clock)


def transfers(m, p):
    return 2 * m if p < 3 else max(4 * m + 2 * p - 8, 2 * (p - 1))


def main():
    failures = 0
    cases = 0
    for m in list(range(1, 25)) + [64, 128, 240]:
        for p in list(range(2, 13)) + [16, 24, 35]:
            for ratio in (1.0, 3.0):
                f, b, c = 1.0, ratio, 1e-3
                base = iteration_time(m, p, f, b, 0.0)
                count = (iteration_time(m, p, f, b, c) - base) / c
                cases += 1
                if abs(base - (m + p - 1) * (f + b)) > 1e-9 or abs(count - transfers(m, p)) > 1e-6:
                    failures += 1
                    print(f"m={m} p={p} b/f={ratio}: time {base} vs {(m + p - 1) * (f + b)}, "
                          f"transfers {count:.3f} vs {transfers(m, p)}")
    print(f"{cases - failures} passed, {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
