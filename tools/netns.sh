#!/usr/bin/env bash
# A multi-host network on one machine: N network namespaces, each with its
# own address, joined by a bridge in the root namespace (which gets an
# address too, so that clients and tests running there reach the nodes).
#
#   tools/netns.sh up   [N] [PREFIX] [SUBNET]   (defaults: 3 pf-n 10.77.0)
#   tools/netns.sh down [N] [PREFIX]
#
# up makes namespaces PREFIX0..PREFIX(N-1); namespace i gets SUBNET.(i+1)/24
# on its eth0 (a veth whose other end, PREFIX<i>v, is in bridge PREFIXbr),
# and lo up; the bridge has SUBNET.254/24. deployment/netns-3.conf uses the
# defaults. down removes the namespaces PREFIX<number> (all of them: N
# only documents the intent) and the bridge. Both are idempotent. Run as root.
set -euo pipefail

usage() {
  sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

die() {
  echo "netns.sh: $*" >&2
  exit 1
}

command=${1:-}
case "$command" in
  up | down) ;;
  -h | --help | help) usage ;;
  *) echo "netns.sh: unknown command '${command}'" >&2; usage ;;
esac
count=${2:-3}
prefix=${3:-pf-n}
subnet=${4:-10.77.0}

if ! { [[ "$count" =~ ^[0-9]{1,3}$ ]] && ((10#$count >= 1 && 10#$count <= 253)); }; then
  die "N must be a number of namespaces from 1 to 253, not '$count'"
fi
count=$((10#$count))
[[ "$prefix" =~ ^[A-Za-z0-9_.-]+$ ]] ||
  die "PREFIX may hold letters, digits, '_', '.' and '-' only, not '$prefix'"
bridge="${prefix}br"
last_veth="${prefix}$((count - 1))v"
# Interface names are at most 15 characters (IFNAMSIZ - 1).
((${#bridge} <= 15 && ${#last_veth} <= 15)) ||
  die "PREFIX '$prefix' is too long: interface names ${bridge}/${last_veth} exceed 15 characters"
if [[ "$command" == up ]]; then
  if ! { [[ "$subnet" =~ ^([0-9]{1,3})\.([0-9]{1,3})\.([0-9]{1,3})$ ]] &&
    ((10#${BASH_REMATCH[1]} <= 255 && 10#${BASH_REMATCH[2]} <= 255 &&
      10#${BASH_REMATCH[3]} <= 255)); }; then
    die "SUBNET must be the first three numbers of an IPv4 /24, e.g. 10.77.0, not '$subnet'"
  fi
fi

((EUID == 0)) || die "must run as root (network namespaces need CAP_SYS_ADMIN): sudo $0 $*"
command -v ip >/dev/null 2>&1 || die "'ip' is missing; install iproute2"

# When bridged traffic goes through iptables (br_netfilter) and FORWARD drops
# by default (as on Docker hosts), namespace-to-namespace traffic needs a rule.
needs_forward_rule() {
  [[ "$(cat /proc/sys/net/bridge/bridge-nf-call-iptables 2>/dev/null)" == 1 ]] &&
    command -v iptables >/dev/null 2>&1 &&
    iptables -S FORWARD 2>/dev/null | grep -qx -- '-P FORWARD DROP'
}

namespace_exists() { [[ -e "/run/netns/$1" ]]; }

up() {
  # A subnet some other interface already has would make routes ambiguous.
  local used
  used=$(ip -o -4 addr show | awk -v s="$subnet." -v b="$bridge" \
    '$2 != b && index($4, s) == 1 { print $2; exit }')
  [[ -z "$used" ]] ||
    die "subnet $subnet.0/24 is already in use on interface $used; pick another SUBNET"
  if ! ip link show "$bridge" >/dev/null 2>&1; then
    ip link add "$bridge" type bridge
  fi
  ip addr replace "$subnet.254/24" dev "$bridge"
  ip link set "$bridge" up
  if needs_forward_rule &&
    ! iptables -C FORWARD -i "$bridge" -o "$bridge" -j ACCEPT 2>/dev/null; then
    iptables -I FORWARD -i "$bridge" -o "$bridge" -j ACCEPT
  fi
  local i ns veth
  for ((i = 0; i < count; i++)); do
    ns="${prefix}${i}"
    veth="${prefix}${i}v"
    namespace_exists "$ns" || ip netns add "$ns"
    if ! ip -n "$ns" link show eth0 >/dev/null 2>&1; then
      # A host end left without its peer (an interrupted up) is replaced.
      ip link del "$veth" >/dev/null 2>&1 || true
      ip link add "$veth" type veth peer name eth0 netns "$ns"
    fi
    ip link set "$veth" master "$bridge" up
    ip -n "$ns" link set lo up
    ip -n "$ns" addr replace "$subnet.$((i + 1))/24" dev eth0
    ip -n "$ns" link set eth0 up
    echo "$ns: $subnet.$((i + 1))"
  done
  echo "bridge $bridge: $subnet.254 (root namespace)"
}

down() {
  local ns
  for ns in $(ip netns list | awk '{print $1}' | grep -E "^${prefix//./\\.}[0-9]+\$" || true); do
    # Deleting the namespace deletes its eth0, and so the veth pair.
    ip netns del "$ns"
  done
  local i
  for ((i = 0; i < count; i++)); do
    ip link del "${prefix}${i}v" >/dev/null 2>&1 || true
  done
  if ip link show "$bridge" >/dev/null 2>&1; then
    ip link del "$bridge"
  fi
  if command -v iptables >/dev/null 2>&1; then
    while iptables -D FORWARD -i "$bridge" -o "$bridge" -j ACCEPT 2>/dev/null; do :; done
  fi
  echo "removed namespaces ${prefix}<n> and bridge $bridge"
}

"$command"
