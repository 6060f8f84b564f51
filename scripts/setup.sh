#!/usr/bin/env bash
# Installs what clusterdse needs from Debian's archive, if missing. Silent and fast when all is
# there. Needs root (or sudo) only when something must be installed.
set -euo pipefail

packages=(build-essential cmake pkg-config libopenmpi-dev openmpi-bin libhdf5-dev hdf5-tools
          libconfig-dev libcmocka-dev python3-h5py python3-pandas
          # clusterdse report (python/clusterdse), its browser test, the man page
          python3-matplotlib chromium chromium-driver python3-selenium help2man
          # pip install ./python into a venv (tests/sh/python_package.sh)
          python3-venv python3-setuptools python3-wheel
          # the fuzz harnesses (libFuzzer); scripts/test.sh builds Release with clang too
          clang
          # the multi-node test bed (ip netns, tc, unshare, nsenter)
          iproute2 util-linux)
missing=()
for p in "${packages[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
        missing+=("$p")
    fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "setup: installing ${missing[*]}" >&2
sudo=""
if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || { echo "setup: need root to install ${missing[*]}" >&2; exit 1; }
    sudo="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq >/dev/null
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
