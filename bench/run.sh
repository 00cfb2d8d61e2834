#!/usr/bin/env bash
# `make bench`: the benchmarks. Run nothing else heavy meanwhile: the
# machine's cores are the instrument.
#  1. Google Benchmark micro-benchmarks: lock manager, stores, versioned
#     reads and writes, GC under a long reader, whole txns' store work.
#  2. The benchmark matrix on one node (deployment/local-1.conf): every
#     workload preset in calvin and paxflow mode, at its own batch size and
#     with the batch cap lifted, plus ro and mixed with two sequencers per
#     node; a table with the ratio and each run's peak resident memory.
#  3. The latency-throughput curve through real clients (paxflow-load, open
#     loop at fractions of capacity) for the CURVE workloads.
# Results land in results/bench-<date>/ (compare.md is the README's table).
#
# Knobs: DURATION (seconds per run, default 10), REPEAT (runs per cell,
# median kept; default 1), MICRO_FILTER (a --benchmark_filter regex),
# SKIP_MICRO=1, UPDATE_README=1 (rewrite README.md's performance section),
# CURVE (comma-separated workloads for the curve, default mixed; "" for none).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
out=results/bench-$(date +%Y%m%d-%H%M%S)
mkdir -p "$out"
if [ -z "${SKIP_MICRO:-}" ]; then
  echo "== micro-benchmarks"
  "$build/bin/micro_bench" --benchmark_out="$out/micro.json" --benchmark_out_format=json \
    ${MICRO_FILTER:+--benchmark_filter="$MICRO_FILTER"}
fi
echo "== benchmark matrix on deployment/local-1.conf, calvin vs paxflow"
"$build/bin/paxflow-bench" --config=deployment/local-1.conf --quiet --matrix \
  --duration="${DURATION:-10}" --repeat="${REPEAT:-1}" --results="$out" \
  --curve="${CURVE-mixed}" ${UPDATE_README:+--update_readme=README.md}
