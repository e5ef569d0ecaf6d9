#!/usr/bin/env bash
# Saturation throughput with the load's producers in process and in 1, 2
# and 3 local worker processes (--workers), interleaved over rounds, with
# an in-process A/A pair as the noise floor. Local workers share the
# machine, so this shows what the worker protocol costs, not what more
# client machines gain.
#
#   ci/workers-saturation.sh BINARY OUTDIR [ROUNDS] [MODE]
set -euo pipefail
bin=${1:?binary}; out=${2:?output directory}; rounds=${3:-4}; mode=${4:-idempotent}
mkdir -p "$out"
configs=(in-process-a in-process-b workers-1 workers-2 workers-3)
for round in $(seq 1 "$rounds"); do
  # Each round starts one configuration later, so none always runs first.
  order=()
  for i in "${!configs[@]}"; do order+=("${configs[$(( (i + round - 1) % ${#configs[@]} ))]}"); done
  for config in "${order[@]}"; do
    extra=()
    case $config in workers-*) extra=(--workers "${config#workers-}") ;; esac
    dir="$out/round-$round/$config"
    mkdir -p "$dir"
    "$bin" loadgen --workload throughput --mode "$mode" --producers 3 --consumers 0 --duration 10s --warmup 2s \
      --records 5000000 --quiet --out "$dir" "${extra[@]}" > "$dir/stdout.txt" 2>&1 || echo "round $round $config failed" >&2
    echo "round $round $config: $(grep -h -o '"records_per_second": *[0-9.]*' "$dir"/*.json | head -1)"
  done
done
