#!/usr/bin/env bash
# The GEMM shape model's calibration (docs/zoo.md, GEMM shape model): with the gemm_shape groups
# that docs/zoo.md gives for the A100 and H100 profiles, every group of
# tests/validation/published.csv stays within its target (validate exits 0) and the held-out
# runs stay evaluable and feasible. Without them (the committed profiles) the tables serve; a
# shape efficiency far off (0.5 on the A100) must fail the A100 groups: the check can fail.
set -euo pipefail
: "${CDSE_SRC:?}" "${CDSE_BUILD:?}"
validate="$CDSE_BUILD/tests/validate"
[[ -x "$validate" ]] || { echo "gemm_shape_validation: no $validate" >&2; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
data() { # DIR A100_EFFICIENCY: a data directory whose A100/H100 profiles use the shape model
    mkdir -p "$1"
    cp -r "$CDSE_SRC/calibration" "$CDSE_SRC/jobs" "$1/"
    mkdir -p "$1/tests"
    cp -r "$CDSE_SRC/tests/validation" "$1/tests/"
    sed -i "s/^attention_efficiency = /gemm_shape = { sms = 108; efficiency = $2; };\n&/" \
        "$1/calibration/systems/a100-80g-dgx.cfg"
    sed -i 's/^attention_efficiency = /gemm_shape = { sms = 132; efficiency = 0.61; efficiency_fp8 = 0.535; };\n&/' \
        "$1/calibration/systems/h100-sxm-dgx.cfg"
    grep -q '^gemm_shape = { sms = 108' "$1/calibration/systems/a100-80g-dgx.cfg"
    grep -q '^gemm_shape = { sms = 132' "$1/calibration/systems/h100-sxm-dgx.cfg"
}
data "$tmp/shape" 0.76
echo "+ $validate tests/validation/published.csv (shape profiles)"
"$validate" "$CDSE_SRC/tests/validation/published.csv" "$tmp/shape" >"$tmp/out.txt" || {
    grep '^# ' "$tmp/out.txt" >&2; echo "gemm_shape_validation: a group fails" >&2; exit 1; }
grep '^# Korthikanti22-T5\|^# MegatronLM-README\|^# NeMo-24.07' "$tmp/out.txt"
echo "+ $validate --holdout tests/validation/holdout.csv (shape profiles)"
"$validate" --holdout "$CDSE_SRC/tests/validation/holdout.csv" "$tmp/shape" >"$tmp/hold.txt"
grep -q "every held-out run evaluable and feasible" "$tmp/hold.txt"
data "$tmp/off" 0.5
rc=0
"$validate" "$CDSE_SRC/tests/validation/published.csv" "$tmp/off" >"$tmp/off.txt" || rc=$?
[[ $rc -eq 1 ]] || { echo "gemm_shape_validation: efficiency 0.5 on the A100: exit $rc, expected 1" >&2; exit 1; }
grep -q '^# Korthikanti22-T5-end-to-end .* FAIL' "$tmp/off.txt"
echo "gemm_shape_validation: ok"
