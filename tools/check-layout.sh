#!/usr/bin/env bash
# The component layering, checked: one -Isrc_calvin lets any file include
# any other, so the rules live here. Prints each forbidden include and exits
# non-zero if there is one. Run by `make test` as the "layout" suite.
#
#   common, proto                   <- everything
#   auth (CURVE keys, ZAP handler)  -> common
#   backend, applications           -> common
#   scheduler, sequencer            -> backend, applications, common
#   checkpoint                      -> backend, common
#   client                          -> engine folders, base (never node/cluster/report/replay/partition)
#   base                            -> engine folders only (never a sibling above it)
#   partition                       -> engine folders, base
#   node                            -> replay (its --replay mode), partition, base, client,
#                                      checkpoint, engine
#   replay                          -> partition, base, checkpoint, engine folders
#   cluster                         -> base, client (nodes are other processes: never node)
#   report                          -> cluster, base
#   replication (consensus)         -> common
# Inside the scheduler, a lane never includes scheduler.h or another lane,
# and only the RW lane (and tests) include lock_manager.h.
set -u
cd "$(dirname "$0")/.."
status=0
forbid() {  # folder, regex of include paths it must not use
  local folder=$1 pattern=$2 hits
  hits=$(grep -rnE "#include \"($pattern)/" "src_calvin/$folder" 2>/dev/null)
  if [ -n "$hits" ]; then
    echo "layout: src_calvin/$folder must not include ($pattern)/:"
    echo "$hits" | sed 's/^/  /'
    status=1
  fi
}
upper='base|partition|node|replay|cluster|report|client|auth'
forbid common "backend|applications|scheduler|sequencer|checkpoint|$upper"
forbid backend "applications|scheduler|sequencer|checkpoint|$upper"
forbid checkpoint "applications|scheduler|sequencer|$upper"
forbid applications "backend|scheduler|sequencer|$upper"
forbid scheduler "sequencer|checkpoint|$upper"
forbid sequencer "checkpoint|$upper"
forbid client 'partition|node|replay|cluster|report|checkpoint'
forbid auth 'backend|applications|scheduler|sequencer|checkpoint|base|partition|node|replay|cluster|report|client'
forbid base 'partition|node|replay|cluster|report|client|checkpoint'
forbid partition 'node|replay|cluster|report|client'
forbid node 'cluster|report'
forbid replay 'node|cluster|report|client'
forbid cluster 'partition|node|replay|report|checkpoint'
forbid report 'partition|node|replay|checkpoint'
forbid replication "backend|applications|scheduler|sequencer|checkpoint|$upper"
for lane in src_calvin/scheduler/*_lane.h src_calvin/scheduler/*_lane.cc; do
  [ -e "$lane" ] || continue
  hits=$(grep -nE '#include "scheduler/(scheduler\.h|[a-z_]*_lane\.h)"' "$lane" |
         grep -v "scheduler/$(basename "${lane%.*}").h")
  if [ -n "$hits" ]; then
    echo "layout: $lane includes the scheduler or another lane:"; echo "$hits" | sed 's/^/  /'
    status=1
  fi
done
hits=$(grep -rln '#include "scheduler/lock_manager.h"' src_calvin |
       grep -vE 'scheduler/(lock_manager|rw_lane)\.(h|cc)$')
if [ -n "$hits" ]; then
  echo "layout: only the RW lane includes lock_manager.h; also:"; echo "$hits" | sed 's/^/  /'
  status=1
fi
[ $status -eq 0 ] && echo "layout: ok"
exit $status
