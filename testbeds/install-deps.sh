#!/usr/bin/env bash
# Installs what the netns testbeds need (Debian/Ubuntu). Run as root; CI calls it.
#   iproute2  : ip, tc (built with libbpf: loads the marker's BTF maps)
#   clang llvm: compile bpf/ecn_marker.c at setup
#   libbpf-dev: bpf/bpf_helpers.h; linux-libc-dev: linux/bpf.h and asm/types.h
#   procps    : sysctl (per-namespace ECN / MPTCP / forwarding switches)
#   iptables  : the NFQUEUE rule of the delay line (link delay on kernels without netem)
#   iputils-ping: the delay line's test measures RTT with ping
set -euo pipefail
if [ "$(id -u)" -ne 0 ]; then
  echo "install-deps.sh: needs root" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends iproute2 clang llvm libbpf-dev linux-libc-dev procps \
  iptables iputils-ping gdb >/dev/null
echo "testbed dependencies installed: $(ip -V), $(clang --version | head -1)"
