#!/usr/bin/env bash
# Overload on one node through real clients. The node starts with clients
# only; paxflow-load measures its capacity (closed loop), then offers, open
# loop, LOW% of it for PRE s, FACTOR times it for OVER s, and LOW% again for
# POST s, with BUSY txns given up (not retried: the offered load stays what
# it is). Meanwhile the node's resident memory is sampled once a second.
# Prints each step's throughput, BUSY rate and latency of the txns that ran
# (in ms and epochs), the node's memory growth, txns lost, and how long after
# the overload latency took to come back to its value before it: the first
# window (WINDOW_MS of send time) after the overload from which every
# window's p99 is within 1.5x of the p99 of all txns sent before the
# overload. The same test is applied to the windows before the overload,
# where nothing happened: the count of those above 1.5x is the noise the
# criterion carries (a flat run, FACTOR equal to LOW/100, must say 0 s).
#
#   bench/overload.sh [NODE_FLAG...]      e.g. --mode=calvin --client_admit_limit=2000
#
# Environment: BUILD (build), WORKLOAD (mixed), FACTOR (2), OVER (30 s),
# PRE/POST (5 s), LOW (25 %), CAPACITY (txn/s; measured when unset),
# CLIENTS (2), PORT (16820), WINDOW_MS (500), LOAD_FLAGS,
# OUT (results/overload-<date>).
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
window_ms=${WINDOW_MS:-500}
port=${PORT:-16820}
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
  --timeline_csv="$out/timeline.csv" --timeline_ms="$window_ms" --report_json="$out/load.json" \
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
# Recovery, against the p99 of every txn sent before the overload (step 1
# of the table above, in ms).
ref=$(awk '$1 == "1" && NF >= 7 { print $7 * 1000; exit }' "$out/load.out")
awk -F, -v pre="$pre" -v over="$over" -v ref="${ref:-0}" -v w="$window_ms" 'BEGIN { m = 0 }
  NR > 1 && $2 > 0 {
    if ($1 + 0 + w / 1000 <= pre) { before++; if ($5 > 1.5 * ref) noisy++ }
    else if ($1 + 0 >= pre + over) { t[m] = $1 + 0; p[m] = $5; m++ }
  }
  END {
    recovered = -1
    for (i = m - 1; i >= 0; i--) { if (p[i] > 1.5 * ref) break; recovered = t[i] }
    printf "p99 before the overload (all its txns): %.2f ms; windows of %d ms\n", ref / 1000, w
    printf "windows above 1.5x of it before the overload (noise): %d of %d\n", noisy, before
    if (ref <= 0 || recovered < 0) print "latency did not come back within the last step"
    else printf "back to it %.1f s after the overload ended\n", recovered - (pre + over)
  }' "$out/timeline.csv"
echo "results: $out"
