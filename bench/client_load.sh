#!/usr/bin/env bash
# Real clients against the embedded generator, on one node of this machine.
# For each run (a workload preset with optional :flag=value node overrides)
# the node runs twice: with its embedded generator, then with clients only
# (paxflow-load beside it, closed loop). Over a window in the middle of each
# run the script samples the node's committed txns (paxflow-cli status) and
# the CPU time of the node and of the driver (/proc), and prints txn/s and
# CPU per txn (user+system, and the system share) for both, and the ratio
# of the node's CPU per client txn to its CPU per embedded txn.
#
#   bench/client_load.sh [RUN...]        default: mixed rmw:max_batch=2000
#
# Environment: BUILD (build), WINDOW (5 s measured), WARMUP (2 s before it),
# CLIENTS (2), OUTSTANDING (500 per client), BATCH (256 txns per message),
# PORT (16800; the node uses PORT and PORT+1), NODE_FLAGS and LOAD_FLAGS
# (extra flags for every node / paxflow-load), PROFILE=1 (perf record -g the
# node during the client window; reports in OUT), OUT (results/client-load-<date>).
# Run it alone on the machine (e.g. under a CPU lock): it measures CPU time.
# The "others" column is the CPU (in cores) that anything else used during
# the window; well above 0 means the machine was not quiet.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD:-build}
window=${WINDOW:-5}
warmup=${WARMUP:-2}
clients=${CLIENTS:-2}
outstanding=${OUTSTANDING:-500}
batch=${BATCH:-256}
port=${PORT:-16800}
out=${OUT:-results/client-load-$(date +%Y%m%d-%H%M%S)}
runs=("$@")
[ ${#runs[@]} -gt 0 ] || runs=(mixed rmw:max_batch=2000)
mkdir -p "$out"
# shellcheck source=bench/one_node.sh
. bench/one_node.sh
one_node_config client-load "$port"
tck=$(getconf CLK_TCK)
load_pid=""

# The node's committed txns since it started, from its status.
committed() {
  "$build/bin/paxflow-cli" --config="$conf" status |
    awk 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "committed") c = i; next }
         NR == 2 { print $c }'
}

# Measures one window: sets txns, node_user, node_sys, drv_user, drv_sys.
measure() {
  local driver=${1:-}
  sleep "$warmup"
  local c0 n0 d0 c1 n1 d1 m0 m1
  c0=$(committed); n0=$(cpu_ticks "$node_pid"); d0="0 0"; m0=$(machine_ticks)
  [ -n "$driver" ] && d0=$(cpu_ticks "$driver")
  if [ "${PROFILE:-0}" = 1 ] && [ -n "$driver" ]; then
    perf record -g -o "$out/$label.perf.data" -p "$node_pid" -- sleep "$window" > /dev/null 2>&1
  else
    sleep "$window"
  fi
  c1=$(committed); n1=$(cpu_ticks "$node_pid"); d1="0 0"; m1=$(machine_ticks)
  [ -n "$driver" ] && d1=$(cpu_ticks "$driver")
  txns=$((c1 - c0))
  read -r nu0 ns0 <<< "$n0"; read -r nu1 ns1 <<< "$n1"
  read -r du0 ds0 <<< "$d0"; read -r du1 ds1 <<< "$d1"
  node_user=$((nu1 - nu0)); node_sys=$((ns1 - ns0))
  drv_user=$((du1 - du0)); drv_sys=$((ds1 - ds0))
  # Whatever else ran meanwhile (other processes, interrupts): a busy
  # machine makes every figure of the window suspect.
  other=$(( (m1 - m0) - node_user - node_sys - drv_user - drv_sys ))
  other_share=$(awk -v o="$other" -v w="$window" -v t="$tck" \
    'BEGIN { x = o / (w * t); printf "%.2f", x < 0 ? 0 : x }')
}

# CPU microseconds per txn for "user sys" ticks over $txns.
per_txn() { awk -v u="$1" -v s="$2" -v n="$txns" -v t="$tck" \
  'BEGIN { if (n > 0) printf "%.1f", (u + s) * 1e6 / t / n; else printf "-" }'; }
sys_share() { awk -v u="$1" -v s="$2" 'BEGIN { if (u + s > 0) printf "%.0f%%", 100 * s / (u + s); else printf "-" }'; }

table="$out/client-load.txt"
printf "%-24s %-9s %10s %12s %8s %12s %8s %7s\n" "run" "load" "txn/s" "node us/txn" "node sys" \
  "driver us/txn" "drv sys" "others" | tee "$table"
for run in "${runs[@]}"; do
  preset=${run%%:*}
  flags=()
  if [ "$run" != "$preset" ]; then
    IFS=: read -r -a overrides <<< "${run#*:}"
    for o in "${overrides[@]}"; do flags+=("--$o"); done
  fi
  label=$(echo "$run" | tr ':=/' '___')
  # shellcheck disable=SC2086
  common=(--workload="$preset" "${flags[@]}" ${NODE_FLAGS:-})

  # 1. Embedded generator.
  start_node "$out/$label-embedded.out" "${common[@]}"
  measure ""
  stop_node
  embedded_txns=$txns
  embedded_us=$(per_txn "$node_user" "$node_sys")
  printf "%-24s %-9s %10.0f %12s %8s %12s %8s %7s\n" "$run" embedded \
    "$(awk -v n="$txns" -v w="$window" 'BEGIN { print n / w }')" "$embedded_us" \
    "$(sys_share "$node_user" "$node_sys")" - - "$other_share" | tee -a "$table"

  # 2. Clients only.
  start_node "$out/$label-clients.out" "${common[@]}" --generate=false
  # shellcheck disable=SC2086
  "$build/bin/paxflow-load" --config="$conf" --workload="$preset" "${flags[@]}" \
    --duration=$((warmup + window + 2)) --clients="$clients" --outstanding="$outstanding" \
    --batch="$batch" --report_json="$out/$label-load.json" ${LOAD_FLAGS:-} \
    > "$out/$label-load.out" 2>&1 &
  load_pid=$!
  extra_pids=("$load_pid")
  measure "$load_pid"
  wait "$load_pid" || echo "paxflow-load exited non-zero; see $out/$label-load.out" >&2
  load_pid=""
  stop_node
  client_us=$(per_txn "$node_user" "$node_sys")
  printf "%-24s %-9s %10.0f %12s %8s %12s %8s %7s\n" "$run" clients \
    "$(awk -v n="$txns" -v w="$window" 'BEGIN { print n / w }')" "$client_us" \
    "$(sys_share "$node_user" "$node_sys")" "$(per_txn "$drv_user" "$drv_sys")" \
    "$(sys_share "$drv_user" "$drv_sys")" "$other_share" | tee -a "$table"
  awk -v c="$client_us" -v e="$embedded_us" -v r="$run" \
    'BEGIN { if (e > 0) printf "%-24s node CPU per client txn / per embedded txn: %.2fx\n", r, c / e }' |
    tee -a "$table"
  if [ "${PROFILE:-0}" = 1 ] && [ -f "$out/$label.perf.data" ]; then
    perf report -i "$out/$label.perf.data" --no-children --sort=dso,symbol --stdio 2> /dev/null |
      grep -v '^#' | grep -v '^$' | head -60 > "$out/$label.profile.txt" || true
    echo "profile: $out/$label.profile.txt"
  fi
done
echo "results: $out"
