#!/usr/bin/env bash
# Makes the CURVE key pairs a config with auth.curve names (README,
# "Authentication"): DIR/NAME.key (secret, mode 0600) and DIR/NAME.pub for
# each NAME, with paxflow-cli keygen. Existing pairs are kept, so it can be
# run again. The shipped multi-host examples use
#   tools/make-keys.sh deployment/keys node-0 node-1 node-2 operator app
# On real hosts, copy each node's NAME.key to that host only; every host
# needs every .pub the config names.
set -euo pipefail
if [ $# -lt 2 ]; then
  echo "usage: tools/make-keys.sh DIR NAME... (e.g. deployment/keys node-0 node-1 operator)" >&2
  exit 2
fi
dir=$1
shift
build=${BUILD:-$(dirname "$0")/../build}
mkdir -p "$dir"
chmod 700 "$dir"
for name in "$@"; do
  if [ -e "$dir/$name.key" ]; then
    echo "$dir/$name.key exists: kept"
    continue
  fi
  "$build/bin/paxflow-cli" keygen --out="$dir/$name"
done
