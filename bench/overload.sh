#!/usr/bin/env bash
# Overload on one node through real clients. The node starts with clients
# only; paxflow-load measures its capacity (closed loop), then offers, open
# loop, LOW% of it for PRE s, FACTOR times it for OVER s, and LOW% again for
# POST s, with BUSY txns given up (not retried: the offered load stays what
# it is). Meanwhile the node's resident memory is sampled once a second.
# Prints each step's throughput, BUSY rate and latency of the txns that ran
# (in ms and epochs), the node's memory growth, txns lost, and how long after
# the overload latency took to come back to its value before it (p99 of
# 100-ms buckets of send time, within 1.5x).
#
#   bench/overload.sh [NODE_FLAG...]      e.g. --mode=calvin --client_admit_limit=2000
#
# Environment: BUILD (build), WORKLOAD (mixed), FACTOR (2), OVER (30 s),
# PRE/POST (5 s), LOW (25 %), CAPACITY (txn/s; measured when unset),
# CLIENTS (2), PORT (52820), LOAD_FLAGS, OUT (results/overload-<date>).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD:-build}
workload=${WORKLOAD:-mixed}
factor=${FACTOR:-2}
over=${OVER:-30}
pre=${PRE:-5}
post=${POST:-5}
low=${LOW:-25}
clients=${CLIENTS:-2}
port=${PORT:-52820}
out=${OUT:-results/overload-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$out"
# shellcheck source=bench/one_node.sh
. bench/one_node.sh
one_node_config overload "$port"
sampler_pid=""
cli=("$build/bin/paxflow-cli" --config="$conf")
load=("$build/bin/paxflow-load" --config="$conf" --workload="$workload" --clients="$clients")

start_node "$out/node.out" --workload="$workload" --generate=false "$@"
rss_kib() { awk '/^VmRSS/ { print $2 }' "/proc/$node_pid/status"; }

capacity=${CAPACITY:-}
if [ -z "$capacity" ]; then
  # shellcheck disable=SC2086
  "${load[@]}" --duration=5 --report_json="$out/capacity.json" ${LOAD_FLAGS:-} \
    > "$out/capacity.out" 2>&1 || true
  capacity=$(sed -n 's/.*"throughput":\([0-9.]*\).*/\1/p' "$out/capacity.json")
fi
lo=$(awk -v c="$capacity" -v p="$low" 'BEGIN { printf "%.0f", c * p / 100 }')
hi=$(awk -v c="$capacity" -v f="$factor" 'BEGIN { printf "%.0f", c * f }')
echo "capacity $capacity txn/s (closed loop); schedule: $lo txn/s for $pre s, $hi for $over s, $lo for $post s"

rss_before=$(rss_kib)
( while kill -0 "$node_pid" 2>/dev/null; do echo "$(date +%s.%N) $(rss_kib)"; sleep 1; done ) \
  > "$out/rss.txt" &
sampler_pid=$!
extra_pids=("$sampler_pid")
ticks() { cpu_ticks "$1" | awk '{ print $1 + $2 }'; }
m0=$(machine_ticks); n0=$(ticks "$node_pid")
# shellcheck disable=SC2086
"${load[@]}" --rate_schedule="$lo:$pre,$hi:$over,$lo:$post" --retry_busy=false --allow_busy \
  --timeline_csv="$out/timeline.csv" --timeline_ms=100 --report_json="$out/load.json" \
  ${LOAD_FLAGS:-} > "$out/load.out" 2>&1 &
load_pid=$!
extra_pids+=("$load_pid")
d_last=0
while kill -0 "$load_pid" 2>/dev/null; do d_last=$(ticks "$load_pid" 2>/dev/null || echo "$d_last"); sleep 0.5; done
wait "$load_pid" || echo "paxflow-load exited non-zero; see $out/load.out"
m1=$(machine_ticks); n1=$(ticks "$node_pid")
# What else used the machine meanwhile (cores, on average): well above 0
# means the figures are suspect.
others=$(awk -v m=$((m1 - m0)) -v n=$((n1 - n0)) -v d="$d_last" -v s=$((pre + over + post)) \
  -v t="$(getconf CLK_TCK)" 'BEGIN { x = (m - n - d) / (s * t); printf "%.2f", x < 0 ? 0 : x }')
kill "$sampler_pid" 2>/dev/null || true
wait "$sampler_pid" 2>/dev/null || true
rss_max=$(awk '{ if ($2 > m) m = $2 } END { print m }' "$out/rss.txt")
"${cli[@]}" status > "$out/status.txt" || true
stop_node

echo "other processes used $others cores on average meanwhile"
sed -n '/^latency of the txns/,$p' "$out/load.out"
grep -E '^\[(BUSY|CLIENT|ERRORS)\], (Replies|GaveUp|Lost|Total)' "$out/load.out" || true
awk -v b="$rss_before" -v m="$rss_max" \
  'BEGIN { printf "node RSS: %.0f MiB before, %.0f MiB at most: +%.0f MiB\n", b / 1024, m / 1024, (m - b) / 1024 }'
# Recovery: the first 100-ms bucket after the overload from which every
# bucket's p99 is within 1.5x of the p99 before it (median of its buckets).
ref=$(awk -F, -v pre="$pre" 'NR > 1 && $2 > 0 && $1 + 0 < pre { print $5 }' "$out/timeline.csv" |
      sort -n | awk '{ v[NR] = $1 } END { print NR ? v[int((NR + 1) / 2)] : 0 }')
awk -F, -v pre="$pre" -v over="$over" -v ref="$ref" 'NR > 1 && $2 > 0 && $1 + 0 >= pre + over {
    t[m] = $1 + 0; p[m++] = $5
  }
  END {
    recovered = -1
    for (i = m - 1; i >= 0; i--) { if (p[i] > 1.5 * ref) break; recovered = t[i] }
    printf "p99 before the overload (median of 100-ms buckets): %.2f ms\n", ref / 1000
    if (recovered < 0) print "latency did not come back within the last step"
    else printf "back to it %.1f s after the overload ended\n", recovered - (pre + over)
  }' "$out/timeline.csv"
echo "results: $out"
