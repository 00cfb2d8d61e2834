#!/usr/bin/env bash
# Failover time with replicated input, over KILLS kills (default 20), one
# per fresh cluster: FailoverClusterTest.LeaderKilledAnotherLeadsAndTheSurvivorsAgree
# starts three paxflow-node processes (local-1x3's shape, default 1 s
# election timeout), kills the group's leader with SIGKILL and times the
# kill until a survivor says it leads and has committed an epoch past the
# one the dead leader had reported.
#   bench/failover_time.sh [KILLS]   (alone on the machine: /work/team/bench)
# Prints each kill's time and min / median / p90 / max.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD:-$here/build}
kills=${1:-20}
log=$(mktemp /tmp/paxflow-failover-time.XXXXXX)
trap 'rm -f "$log"' EXIT
"$build/bin/cluster_tests" --gtest_color=no --gtest_repeat="$kills" \
  --gtest_filter=FailoverClusterTest.LeaderKilledAnotherLeadsAndTheSurvivorsAgree > "$log" 2>&1 ||
  { echo "a run failed: its output follows" >&2; grep -E 'Failure|FAILED|failover:' "$log" >&2; exit 1; }
grep '^failover:' "$log"
sed -n 's/^failover: .* after \([0-9.]*\) s.*/\1/p' "$log" | sort -n | awk '
  { t[NR] = $1 }
  END {
    if (NR == 0) { print "no failover measured"; exit 1 }
    p = int(0.9 * NR + 0.999); if (p < 1) p = 1
    m = (NR % 2) ? t[(NR + 1) / 2] : (t[NR / 2] + t[NR / 2 + 1]) / 2
    printf "%d kills: min %.2f s, median %.2f s, p90 %.2f s, max %.2f s\n", NR, t[1], m, t[p], t[NR]
  }'
