#!/bin/bash
# How many datagrams each end of `mpquic demo` receives, per configuration: the data receiver's
# count is the data packets, the sender's (the smaller) is the ACK datagrams it gets back. Counted
# with a uprobe on noq-proto's `Connection::handle_event`, called once per datagram a connection
# receives; `self` (first argument, %di) tells the two connections apart. Root and `perf` needed.
#
#   cargo build --release -p mpquic-cli && benches/ack-datagrams.sh [BINARY] [SIZE]
#
# docs/PERFORMANCE.md, "What paths cost": at 16 paths round-robin the sender gets ~11x the ACK datagrams of 1
# path, each path's ACKs riding that path.
set -euo pipefail
bin=$(realpath "${1:-target/release/mpquic}")
size=${2:-200M}
command -v perf >/dev/null || { echo "perf is needed (linux-perf)" >&2; exit 2; }
symbol=$(nm "$bin" | awk '/ [Tt] .*Connection12handle_event/ && !found {print $1; found = 1}')
[ -n "$symbol" ] || { echo "no Connection::handle_event symbol in $bin" >&2; exit 2; }
# uprobes take file offsets: the symbol's address less its executable segment's address-offset gap.
read -r seg_offset seg_addr < <(readelf -lW "$bin" | awk '/LOAD/ && /R E/ && !found {print $2, $3; found = 1}')
offset=$(( 16#$symbol - (seg_addr - seg_offset) ))
trap 'perf probe -q -d "probe_mpquic_ack:*" 2>/dev/null || true; rm -f "$data"' EXIT
data=$(mktemp)
perf probe -q -d 'probe_mpquic_ack:*' 2>/dev/null || true
perf probe -q -x "$bin" -a "probe_mpquic_ack:received=$(printf '0x%x' $offset) conn=%di:x64"
for config in "1 round-robin" "16 round-robin" "16 stack"; do
  read -r paths scheduler <<<"$config"
  perf record -q -e probe_mpquic_ack:received -o "$data" \
    "$bin" demo --json --size "$size" --paths "$paths" --cc amp --scheduler "$scheduler" >/dev/null
  counts=$(perf script -i "$data" -F trace 2>/dev/null | awk '{n[$NF]++} END {for (c in n) print n[c]}' | sort -n | paste -sd' ')
  echo "$paths path(s), $scheduler: datagrams received by the sender (ACKs) and the receiver (data): $counts"
done
