# Sourced by the client benchmarks (client_load.sh, overload.sh): one node
# on 127.0.0.1 with clients as its load, and the CPU counters they read.
# Needs $build and $out set; defines $conf, $node_pid and the functions below.

# one_node_config NAME PORT: a config of one node (PORT and PORT+1) in $out.
one_node_config() {
  conf="$out/node.conf"
  cat > "$conf" <<CONF
name: "$1"
transport: "tcp"
node { id: 0 partition: 0 replica: 0 host: "127.0.0.1" port: $2 client_port: $(($2 + 1)) }
CONF
}

node_pid=""
extra_pids=()
cleanup() {
  local pid
  for pid in "${extra_pids[@]}" "$node_pid"; do
    [ -n "$pid" ] && kill "$pid" 2>/dev/null || true
  done
  wait 2>/dev/null || true
}
trap cleanup EXIT

# start_node LOG FLAG...: starts the node (output to LOG) and waits until
# its client port answers.
start_node() {
  local log=$1
  shift
  "$build/bin/paxflow-node" --config="$conf" --node_id=0 --duration=0 --progress_ms=0 "$@" \
    > "$log" 2>&1 &
  node_pid=$!
  for _ in $(seq 1 600); do
    if "$build/bin/paxflow-cli" --config="$conf" --timeout_ms=200 status > /dev/null 2>&1; then
      return 0
    fi
    kill -0 "$node_pid" 2>/dev/null || { echo "node exited; see $log" >&2; exit 1; }
    sleep 0.1
  done
  echo "node did not answer within 60 s; see $log" >&2
  exit 1
}

stop_node() {
  kill -TERM "$node_pid"
  wait "$node_pid" || true
  node_pid=""
}

# "user system" CPU ticks of a process.
cpu_ticks() { awk '{ print $14, $15 }' "/proc/$1/stat"; }
# Busy (non-idle) CPU ticks of the whole machine.
machine_ticks() { awk 'NR == 1 { print $2 + $3 + $4 + $7 + $8 + $9 }' /proc/stat; }
