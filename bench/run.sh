#!/usr/bin/env bash
# Benchmarks. Run nothing else heavy meanwhile: the machine has 2 cores.
#  1. Google Benchmark micro-benchmarks (lock manager, stores, GC).
#  2. The presets on one node, calvin and paxflow side by side, one run, and
#     the latency-throughput curve through clients (CURVE workloads, "" for none).
# Results land in results/bench-<date>/.
set -euo pipefail
build=${1:-build}
out=results/bench-$(date +%Y%m%d-%H%M%S)
mkdir -p "$out"
echo "== micro-benchmarks"
"$build/bin/micro_bench" --benchmark_out="$out/micro.json" --benchmark_out_format=json \
  ${MICRO_FILTER:+--benchmark_filter="$MICRO_FILTER"}
echo "== workloads on deployment/local-1.conf, calvin vs paxflow"
"$build/bin/paxflow-bench" --config=deployment/local-1.conf --quiet \
  --duration="${DURATION:-10}" --results="$out" --curve="${CURVE-mixed}" \
  --runs="${RUNS:-ro,ro:ro_workers=1,ro:ro_workers=2,ro:max_batch=5000:max_inflight=10000,mixed,mixed50,rmw,rmw-hot}"
