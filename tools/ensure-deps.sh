#!/usr/bin/env bash
# Installs the Debian packages the build needs, if any is missing.
# Quick when everything is present (one dpkg-query per package).
set -euo pipefail
packages=(g++ make libzmq3-dev cppzmq-dev libprotobuf-dev protobuf-compiler
          libgoogle-glog-dev libgflags-dev libgtest-dev libbenchmark-dev
          gnuplot-nox clang libclang-rt-14-dev iproute2
          libboost-dev prometheus libraft-dev libuv1-dev)
missing=()
for package in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "ok installed"; then
    missing+=("$package")
  fi
done
if ((${#missing[@]} == 0)); then exit 0; fi
echo "ensure-deps: installing ${missing[*]}"
sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
