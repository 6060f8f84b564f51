#!/usr/bin/env bash
# DeepSpeed's TrainSchedule runs at the 1F1B rate and carries deepspeed_transfers(m, p) blocking
# transfers on its critical path (src/model/perf.c, stack key pipeline_lockstep): an event
# simulation of the schedule's commands, tests/py/deepspeed_schedule.py.
set -euo pipefail
: "${CDSE_SRC:?}"
command -v /usr/bin/python3 >/dev/null || { echo "deepspeed_schedule: SKIP: no python3"; exit 77; }
echo "+ /usr/bin/python3 $CDSE_SRC/tests/py/deepspeed_schedule.py"
/usr/bin/python3 "$CDSE_SRC/tests/py/deepspeed_schedule.py"
