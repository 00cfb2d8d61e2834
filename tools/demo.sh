#!/usr/bin/env bash
# The main job: launch the 3-node loopback cluster, run the YCSB mixed
# workload for a few seconds, print every node's progress and summary.
set -euo pipefail
build=${1:-build}
exec "$build/bin/paxflow-cluster" --config=deployment/local-3.conf --workload=mixed \
  --duration="${DURATION:-5}" --logs=logs/demo
