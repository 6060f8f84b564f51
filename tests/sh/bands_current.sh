#!/usr/bin/env bash
# calibration/bands.cfg (the error bands of the predicted time per stack and GPU generation) is
# what `validate --bands` makes from the current model and validation files: regenerated here
# and compared, so it never drifts. validate --bands also reports, over the validation rows, the
# share of measured times inside their predicted band, and exits 1 when it is below the band's
# nominal coverage (0.80); the share is checked here again from its report.
#   build/tests/validate --bands calibration/bands.cfg tests/validation/published.csv \
#       tests/validation/holdout.csv .        (to regenerate after a model change)
: "${CDSE_SRC:?}" "${CDSE_BUILD:?}"
source "$CDSE_SRC/tests/sh/lib/expect.sh"
cmd=("$CDSE_BUILD/tests/validate" --bands "$PWD/bands.cfg" tests/validation/published.csv
     tests/validation/holdout.csv .)
echo "+ (cd $CDSE_SRC && ${cmd[*]})"
(cd "$CDSE_SRC" && "${cmd[@]}") >report.txt 2>err.txt || {
    cat report.txt err.txt; echo "bands_current: validate --bands failed"; exit 1; }
cat report.txt
line=$(grep '^# coverage over' report.txt)
read -r rows inside <<<"$(sed -E 's/.* over ([0-9]+) validation rows: ([0-9]+) inside.*/\1 \2/' <<<"$line")"
awk -v r="$rows" -v i="$inside" 'BEGIN { exit !(r >= 30 && i >= 0.80 * r) }' ||
    { echo "bands_current: $inside of $rows rows inside their band, below 0.80"; exit 1; }
sed -i "s|$PWD/bands.cfg|calibration/bands.cfg|" bands.cfg
diff "$CDSE_SRC/calibration/bands.cfg" bands.cfg ||
    { echo "bands_current: calibration/bands.cfg differs from what validate --bands makes" \
           "(regenerate it with the command above)"; exit 1; }
echo "bands_current: ok"
