#!/usr/bin/env bash
# mixed on deployment/local-1x3.conf with replicated input on (a Raft group
# agrees on every epoch before it runs) and off (replica 0 sequences, the
# other two follow its batches as they come), alternately, ROUNDS times
# each: throughput and latency side by side from one invocation.
#   bench/replicated_input.sh [DURATION_S] [ROUNDS]   (alone on the machine)
# Prints two lines per run (the second: where an epoch's input waited from
# its cut to the scheduler, by stage) and the medians per setting.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD:-$here/build}
duration=${1:-10}
rounds=${2:-2}
out=$(mktemp -d /tmp/paxflow-repl-bench.XXXXXX)
trap 'rm -rf "$out"' EXIT
declare -A tput p50
for round in $(seq 1 "$rounds"); do
  for setting in true false; do
    log="$out/run-$setting-$round.txt"
    "$build/bin/paxflow-cluster" run --config="$here/deployment/local-1x3.conf" \
      --logs="$out/logs-$setting-$round" --log_dir="$out/input-$setting-$round" --wipe \
      --replicated_input="$setting" --duration="$duration" --progress_ms=0 > "$log" 2>&1 ||
      { echo "run failed (replicated_input=$setting): see $log" >&2; tail -20 "$log" >&2; exit 1; }
    # The cluster summary (after its header line).
    t=$(awk '/=== cluster summary/ {c=1} c && /^throughput:/ {print $2; exit}' "$log")
    rw=$(awk '/=== cluster summary/ {c=1} c && $1 == "RW" {print $3; exit}' "$log")
    ro=$(awk '/=== cluster summary/ {c=1} c && $1 == "RO" {print $3; exit}' "$log")
    digest=$(awk '/=== cluster summary/ {c=1} c && /state digest/ {print $NF; exit}' "$log")
    # Where the epochs' input waited between the cut and the scheduler.
    stages=$(awk '/=== cluster summary/ {c=1} c && /^epoch input/ {sub(/^[^:]*: /, ""); print; exit}' "$log")
    printf 'replicated_input=%-5s round %d: %8s txn/s  p50 RW %7s ms  RO %7s ms  digest %s\n' \
      "$setting" "$round" "$t" "$rw" "$ro" "$digest"
    printf '    input, cut to scheduler (ms, p50/p99): %s\n' "$stages"
    tput[$setting]+="$t "
    p50[$setting]+="$rw "
  done
done
median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
on=$(echo "${tput[true]}" | median); off=$(echo "${tput[false]}" | median)
echo "median throughput: on $on txn/s, off $off txn/s, on/off $(awk -v a="$on" -v b="$off" 'BEGIN {printf "%.2f", a/b}')"
echo "median p50 RW latency: on $(echo "${p50[true]}" | median) ms, off $(echo "${p50[false]}" | median) ms"
