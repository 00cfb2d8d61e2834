#!/usr/bin/env bash
# The main job (`make demo`): launch the 3-node loopback cluster, run the
# read-only and mixed YCSB workloads in calvin then paxflow mode, print the
# comparison table, and leave CSV/JSON results and PNG plots in
# results/<date-time> (results/latest points at the newest). `make
# demo-tpcc` runs TPC-C and CH-benCHmark through the same script (RUNS).
#
# Environment knobs (also `make demo DURATION=10 ...`):
#   DURATION  seconds of load per run (default 5)
#   CONFIG    cluster config (default deployment/local-3.conf)
#   RUNS      workloads, each a preset with optional :flag=value overrides (default ro,mixed)
#   MODES     modes to compare (default calvin,paxflow)
#   BENCH_FLAGS  more paxflow-bench / node flags, e.g. "--workers=4 --quiet"
set -euo pipefail
# Paths below are relative to the checkout, wherever make or the user runs us from.
cd "$(dirname "$0")/.."
build=${1:-build}
bench="$build/bin/paxflow-bench"
if [ ! -x "$bench" ]; then
  echo "demo: $bench is missing; build it first with 'make'" >&2
  exit 2
fi
stamp=$(date +%Y%m%d-%H%M%S)
out="results/$stamp"
mkdir -p results

status=0
# shellcheck disable=SC2086  # BENCH_FLAGS is a list of flags
"$bench" --config="${CONFIG:-deployment/local-3.conf}" --runs="${RUNS:-ro,mixed}" \
  --modes="${MODES:-calvin,paxflow}" --duration="${DURATION:-5}" --results="$out" \
  ${BENCH_FLAGS:-} || status=$?

# A comparison that ran (even partly, or with a failed run) is worth finding
# again; one refused before starting (bad config, busy ports) left nothing.
if [ -f "$out/compare.json" ]; then
  ln -sfn "$stamp" results/latest
  echo
  echo "demo: everything is in $out (also results/latest):"
  echo "  compare.txt               the table above"
  echo "  compare.csv, compare.json per-run numbers; JSON has the full latency histograms"
  describe() {
    case $1 in
      throughput) echo "txn/s by workload and mode, paxflow/calvin ratio on the bars" ;;
      latency_cdf) echo "CDF of end-to-end latency, RO and RW panels" ;;
      visibility) echo "CDF of read-only visibility delay" ;;
      ch_latency) echo "CDF of CH queries' latency, a panel per query" ;;
      ch_freshness) echo "CDF of CH queries' snapshot age at result" ;;
    esac
  }
  for png in throughput latency_cdf visibility ch_latency ch_freshness; do
    if [ -f "$out/$png.png" ]; then printf '  %-25s %s\n' "$png.png" "$(describe "$png")"; fi
  done
  echo "  re-render the plots:      $bench --replot=$out"
fi
if [ "$status" -ne 0 ]; then echo "demo: paxflow-bench exited with status $status" >&2; fi
exit "$status"
