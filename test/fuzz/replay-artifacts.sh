#!/bin/sh
# Compiles every example into SEEDS/ with $CGC and replays the artifacts and
# the regression inputs through $REPLAY (the artifact fuzz target).
#   replay-artifacts.sh SEEDS EXAMPLES REGRESSIONS
set -eu
seeds=$1 examples=$2 regressions=$3
mkdir -p "$seeds"
for model in "$examples"/*.json; do
  out="$seeds/$(basename "$model" .json).cgc"
  # Models cgc refuses (symbolic dims) are no seeds.
  [ -f "$out" ] || "$CGC" "$model" -o "$out" >/dev/null 2>&1 || true
done
exec "$REPLAY" "$seeds" "$regressions"
