#!/usr/bin/env bash
# The cost of authentication (CURVE on every socket, README
# "Authentication"): the same 3-node loopback cluster and the same
# paxflow-load run (closed loop, WORKLOAD, default mixed) with auth.curve
# off, then on, one after the other in one invocation; prints txn/s, the
# latency percentiles paxflow-load saw and the ratios on/off.
#
#   bench/auth_cost.sh
#
# Environment: BUILD (build), SECONDS_PER_MODE (10), CLIENTS (2),
# OUTSTANDING (500 per client), BATCH (256 txns per message), WORKLOAD
# (mixed), PORT (16900; the nodes use PORT..PORT+5), ROUNDS (1: off,on
# pairs, interleaved), OUT (results/auth-cost-<date>).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD:-build}
seconds=${SECONDS_PER_MODE:-10}
clients=${CLIENTS:-2}
outstanding=${OUTSTANDING:-500}
batch=${BATCH:-256}
workload=${WORKLOAD:-mixed}
port=${PORT:-16900}
rounds=${ROUNDS:-1}
out=${OUT:-results/auth-cost-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$out"
out=$(cd "$out" && pwd)
BUILD=$build tools/make-keys.sh "$out/keys" node-0 node-1 node-2 operator app > /dev/null

# config MODE: the cluster's config, with CURVE keys when MODE is on.
config() {
  local mode=$1 conf="$out/$1.conf" i
  {
    echo "name: \"auth-cost-$mode\""
    echo 'transport: "tcp"'
    for i in 0 1 2; do
      echo "node { id: $i partition: $i replica: 0 host: \"127.0.0.1\" port: $((port + i))" \
           "client_port: $((port + 3 + i))"
      [ "$mode" = on ] && echo "  public_key_file: \"keys/node-$i.pub\" secret_key_file: \"keys/node-$i.key\""
      echo "}"
    done
    echo "param { name: \"workload\" value: \"$workload\" }"
    echo 'param { name: "multi_partition_pct" value: "10" }'
    if [ "$mode" = on ]; then
      echo 'auth { curve: true client_secret_key_file: "keys/operator.key"'
      echo '  client { name: "operator" public_key_file: "keys/operator.pub" operator: true }'
      echo '  client { name: "app" public_key_file: "keys/app.pub" } }'
    fi
  } > "$conf"
  echo "$conf"
}

running=""
cleanup() {
  if [ -n "$running" ]; then
    "$build/bin/paxflow-cluster" stop --config="$running" --logs="$out/logs" > /dev/null 2>&1 || true
  fi
}
trap cleanup EXIT

# field FILE KIND KEY: a value of paxflow-load's report ("[KIND], KEY, value").
field() { awk -F', ' -v k="$2" -v n="$3" '$1 == k && $2 == n { print $3; exit }' "$1"; }
pct() { awk -v s="$1" '$1 == s && $2 ~ /^50thPercentile/ { p50 = $3 } $1 == s && $2 ~ /^99thPercentile/ { p99 = $3 }
                      END { printf "%s %s", p50 == "" ? "-" : p50, p99 == "" ? "-" : p99 }' FS=', ' "$2"; }

table="$out/auth-cost.txt"
printf "%-6s %-5s %10s %10s %10s %10s %10s\n" round curve "txn/s" "RW p50 us" "RW p99 us" \
  "RO p50 us" "RO p99 us" | tee "$table"
for round in $(seq 1 "$rounds"); do
  for mode in off on; do
    conf=$(config "$mode")
    key_flags=()
    [ "$mode" = on ] && key_flags=(--client_key="$out/keys/app.key")
    "$build/bin/paxflow-cluster" start --wipe --config="$conf" --logs="$out/logs" \
      --log_dir="$out/logs/input" --generate=false > "$out/start-$mode-$round.out" 2>&1 ||
      { echo "start failed; see $out/start-$mode-$round.out" >&2; exit 1; }
    running=$conf
    report="$out/load-$mode-$round.out"
    "$build/bin/paxflow-load" --config="$conf" --workload="$workload" --duration="$seconds" \
      --clients="$clients" --outstanding="$outstanding" --batch="$batch" "${key_flags[@]}" \
      > "$report" 2>&1 || echo "paxflow-load exited non-zero; see $report" >&2
    "$build/bin/paxflow-cluster" stop --config="$conf" --logs="$out/logs" > "$out/stop-$mode-$round.out" 2>&1 || true
    running=""
    read -r rw50 rw99 <<< "$(pct '[RW]' "$report")"
    read -r ro50 ro99 <<< "$(pct '[RO]' "$report")"
    printf "%-6s %-5s %10.0f %10s %10s %10s %10s\n" "$round" "$mode" \
      "$(field "$report" '[OVERALL]' 'Throughput(ops/sec)')" "$rw50" "$rw99" "$ro50" "$ro99" | tee -a "$table"
  done
done
awk 'NR > 1 { n[$2]++; t[$2] += $3; rw[$2] += $5; ro[$2] += $7 }
     END { if (t["off"] > 0 && rw["off"] > 0 && ro["off"] > 0)
             printf "curve on / off: throughput %.2fx, RW p99 %.2fx, RO p99 %.2fx\n",
                    t["on"] / t["off"], rw["on"] / rw["off"], ro["on"] / ro["off"] }' "$table" | tee -a "$table"
echo "results: $out"
