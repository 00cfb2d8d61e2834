#!/usr/bin/env bash
# Catch-up time of a replica that was away, with replicated input.
#
# For each AWAY (seconds): start deployment/local-1x3.conf detached
# (mixed, replicated input, --log_dir, checkpoints every 2 s), let it run
# WARMUP seconds, kill a follower with SIGKILL, leave it down AWAY seconds
# while the other two go on, then restart it (`paxflow-cluster restart
# --node=ID`, which returns once the node serves again). Measured from the
# restart: until the verb returns (it has loaded its checkpoint, replayed
# its logs and rejoined the group), and until its published epoch is
# within 2 epochs of the leader's (caught up). Also printed: how many
# epochs it was behind when it came back.
#
#   bench/rejoin_time.sh [build dir]       (run it alone: it times things)
#   AWAY="10 30 60" WARMUP=5 RECORDS=100000 CHECKPOINT_EVERY=5 MAX_INFLIGHT=200 \
#     bench/rejoin_time.sh
# A node not caught up LIMIT seconds (default 300) after its restart is
# reported as such, and the run goes on.
# The load is capped (MAX_INFLIGHT txns in flight, default 200, about a
# quarter of what this 2-core machine runs): three replicas on one machine
# share its cores, and a node catches up only with the headroom the load
# leaves it (on a saturated machine it runs as fast as the others and the
# gap stays).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
cluster="$build/bin/paxflow-cluster"
cli="$build/bin/paxflow-cli"
config=${CONFIG:-deployment/local-1x3.conf}
away_list=${AWAY:-10 30 60}
warmup=${WARMUP:-5}
records=${RECORDS:-100000}
checkpoint_every=${CHECKPOINT_EVERY:-5}
limit=${LIMIT:-300}
max_inflight=${MAX_INFLIGHT:-200}
work=$(mktemp -d /tmp/paxflow-rejoin.XXXXXX)
flags=(--config="$config" --logs="$work/logs")
cleanup() {
  if [ -f "$work/logs/cluster.state" ]; then
    "$cluster" stop "${flags[@]}" --stop_timeout=5 >/dev/null 2>&1 || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT

now() { date +%s.%N; }
# "node published" pairs of every node that answers (status exits 1 while
# a node is down: that is part of what is measured).
published() {
  { "$cli" --config="$config" --timeout_ms=500 status 2>/dev/null || true; } |
    awk '$1 ~ /^[0-9]+$/ && $6 ~ /^[0-9]+$/ { print $1, $6 }'
}
leader() {  # the node the group status line names as leader
  { "$cli" --config="$config" --timeout_ms=500 status 2>/dev/null || true; } |
    sed -n 's/^partition 0: leader node \([0-9]*\).*/\1/p' | head -1
}
pid_of() {  # node $1's pid in the state file
  sed -n '/"id": '"$1"',/,/"pid"/ s/.*"pid": \([0-9]*\).*/\1/p' "$work/logs/cluster.state" | head -1
}

printf "%-7s %10s %14s %11s %13s\n" away_s load_txn_s behind_epochs restart_s caught_up_s
for away in $away_list; do
  rm -rf "$work/logs" "$work/input"
  "$cluster" start "${flags[@]}" --log_dir="$work/input" --records="$records" --max_inflight="$max_inflight" \
    --checkpoint_every="$checkpoint_every" \
    --progress_ms=1000 >/dev/null
  sleep "$warmup"
  lead=$(leader)
  [ -n "$lead" ] || { echo "no leader after ${warmup}s" >&2; exit 1; }
  victim=$(( (lead + 1) % 3 ))
  last=$(published | awk -v v="$victim" '$1 == v { print $2 }')
  load=$({ "$cli" --config="$config" --node="$lead" --timeout_ms=500 status 2>/dev/null || true; } |
         awk -v l="$lead" '$1 == l && $11 ~ /^[0-9]+$/ { print $11 + $12; exit }')
  pid=$(pid_of "$victim")
  [ -n "$pid" ] || { echo "no pid for node $victim in $work/logs/cluster.state" >&2; exit 1; }
  kill -9 "$pid"
  sleep "$away"
  behind=$(published | awk -v v="$victim" '$1 != v && $2 > m { m = $2 } END { print m + 0 }')
  start=$(now)
  "$cluster" restart "${flags[@]}" --node="$victim" >"$work/restart.out" 2>&1 ||
    { echo "restart failed:" >&2; cat "$work/restart.out" >&2; exit 1; }
  restarted=$(now)
  while :; do
    gap=$(published | awk -v v="$victim" '$1 == v { mine = $2 } $1 != v && $2 > m { m = $2 }
                                          END { if (mine == "") print 999999; else print m - mine }')
    [ "$gap" -le 2 ] && break
    if [ "$(echo "$(now) - $start > $limit" | bc -l)" = 1 ]; then break; fi
  done
  caught=$(now)
  [ "$gap" -le 2 ] || caught=""
  "$cluster" stop "${flags[@]}" >/dev/null 2>&1 || true
  if [ -n "$caught" ]; then caught_s=$(printf "%.2f" "$(echo "$caught - $start" | bc -l)")
  else caught_s="not in ${limit}s (gap $gap)"; fi
  printf "%-7s %10s %14s %11.2f %13s\n" "$away" "${load:-?}" "$((behind - ${last:-0}))" \
    "$(echo "$restarted - $start" | bc -l)" "$caught_s"
done
