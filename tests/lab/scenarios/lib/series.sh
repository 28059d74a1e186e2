# shellcheck shell=bash
# Sourced by scenarios that record a series (record.sh puts it beside run.sh as
# lib/series.sh); they set O (the output folder) and Z (the zpulse binary) first.

# series N GAP_S HOOK [FIRST]: N captures by `zpulse capture` in $O/series/FIRST… (000 by
# default), GAP_S seconds apart; after each, the guest's clock in its cli/date.txt, then
# `HOOK CAPTURE_DIR` for the scenario's own views of the same moment (under CAPTURE_DIR/cli/).
series() {
  local n=$1 gap=$2 hook=$3 first=${4:-0} i out
  for ((i = 0; i < n; i++)); do
    out=$O/series/$(printf %03d "$((first + i))")
    $Z capture "$out" || echo "capture $out failed"
    mkdir -p "$out/cli"
    date +%s.%N > "$out/cli/date.txt"
    "$hook" "$out"
    ((i == n - 1)) || sleep "$gap"
  done
}
