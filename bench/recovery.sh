#!/usr/bin/env bash
# Recovery time against log length, with and without checkpoints.
#
# For each run: start deployment/local-3.conf detached (mixed workload,
# --log_dir), let it run SECONDS, kill node 1 with SIGKILL, and restart it
# (`paxflow-cluster restart`, which returns once it has rejoined). Measured
# from the restart: until the cluster admits its first new epoch (node 0 was
# stalled at epoch E; the first epoch after E needs node 1's batch), and
# until node 1 has caught up and rejoined. Without checkpoints node 1
# replays its whole log; with them, what follows its newest checkpoint.
#
#   bench/recovery.sh [build dir]     (run it alone: it times things)
#   LENGTHS="10 30 60" CHECKPOINTS="0 2" RECORDS=100000 bench/recovery.sh
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
cluster="$build/bin/paxflow-cluster"
cli="$build/bin/paxflow-cli"
config=${CONFIG:-deployment/local-3.conf}
lengths=${LENGTHS:-10 30 60}
checkpoints=${CHECKPOINTS:-0 2}
records=${RECORDS:-100000}
work=$(mktemp -d /tmp/paxflow-recovery.XXXXXX)
cleanup() {
  if [ -f "$work/logs/cluster.state" ]; then
    "$cluster" stop --config="$config" --logs="$work/logs" --stop_timeout=5 >/dev/null 2>&1 || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT

now() { date +%s.%N; }
admitted() {  # node 0's admitted epoch (empty if it does not answer)
  # status exits 1 while a node cannot go on: that is what is measured here.
  { "$cli" --config="$config" --node=0 --timeout_ms=500 status 2>/dev/null || true; } |
    awk '$1 == "0" { print $5; exit }'
}
pid_of() {  # node $1's pid in the state file
  sed -n '/"id": '"$1"',/,/"pid"/ s/.*"pid": \([0-9]*\).*/\1/p' "$work/logs/cluster.state" | head -1
}

printf "%-12s %8s %10s %12s %12s %14s %12s\n" checkpoints run_s epochs replayed log_MiB first_epoch_s rejoined_s
for every in $checkpoints; do
  for seconds in $lengths; do
    rm -rf "$work/logs" "$work/input"
    flags=(--config=$config --logs="$work/logs")
    "$cluster" start "${flags[@]}" --log_dir="$work/input" --workload=mixed --records="$records" \
      --checkpoint_every="$every" --progress_ms=1000 >/dev/null
    sleep "$seconds"
    kill -9 "$(pid_of 1)"
    sleep 2  # the others notice, and stall at the next epoch
    stalled=$(admitted)
    log_bytes=$(du -cb "$work"/input/node-1.*log "$work"/input/node-1.log 2>/dev/null | tail -1 | cut -f1 || true)
    start=$(now)
    "$cluster" restart "${flags[@]}" --node=1 >"$work/restart.out" 2>&1 &
    restart=$!
    first=""
    while [ -z "$first" ]; do
      epoch=$(admitted)
      if [ -n "$epoch" ] && [ "$epoch" -gt "$stalled" ]; then
        first=$(now)
      fi
    done
    wait "$restart"
    rejoined=$(now)
    line=$(grep "recovering:" "$work/logs/node-1.out" | tail -1)
    from=$(echo "$line" | sed -n 's/.*checkpoint at epoch \([0-9]*\).*/\1/p')
    through=$(echo "$line" | sed -n 's/.*input log through epoch \([0-9]*\).*/\1/p')
    replayed=$((through - ${from:-0}))
    "$cluster" stop "${flags[@]}" >/dev/null 2>&1 || true
    label=$([ "$every" = 0 ] && echo none || echo "every ${every}s")
    printf "%-12s %8s %10s %12s %12.1f %14.2f %12.2f\n" "$label" "$seconds" "$stalled" \
      "$replayed" "$(echo "$log_bytes / 1048576" | bc -l)" \
      "$(echo "$first - $start" | bc -l)" "$(echo "$rejoined - $start" | bc -l)"
  done
done
