// SPDX-License-Identifier: MIT OR Apache-2.0
//
// ECN marker for one bottleneck link direction (tc clsact egress, direct-action).
//
// It models the FIFO that the htb+bfifo qdisc behind it holds: a backlog in bytes that
// drains at the link rate. A packet that arrives while the modelled backlog exceeds K bytes
// is marked CE if it is ECN-capable (ECT(0) or ECT(1)), the DCTCP/XMP switch rule. The model
// is open-loop between updates; user space closes the loop by writing the qdisc's real
// backlog (read over rtnetlink) into STATE every few ms. Optionally drops packets at a given
// probability (loss injection).
//
// Dual-queue mode (CFG_DUALQ = 1, issue 39, RFC 9332's DualQ Coupled AQM on a kernel without
// `dualpi2`): ECT(1) and CE go to the L class, ECT(0) and not-ECT to the classic class of the htb
// behind (skb->priority set to the class id: htb classifies by it). The program models both
// backlogs (L served first, the rest from classic: htb gives L priority) and marks at arrival:
// an L packet is CE-marked when its modelled L sojourn exceeds the step (the L backlog above
// CFG_L_STEP_BYTES, the step times the rate) or with probability p_L = min(2p', 1); a classic
// packet is CE-marked (ECT(0)) or dropped (not-ECT) with probability p_C = p'^2. User space runs
// PI2 on the classic delay every 16 ms and writes both probabilities (CFG_PL_U32, CFG_PC_U32),
// and resynchronizes both backlogs (ST_BACKLOG is then the classic one, ST_L_BACKLOG the L one).
//
// Map names carry a per-link suffix (MAP_SUFFIX, set with -D at compile time) so that every
// bottleneck gets its own pinned maps.

#include <linux/bpf.h>
#include <linux/pkt_cls.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#ifndef MAP_SUFFIX
#define MAP_SUFFIX 0
#endif
#define CAT2(a, b) a##b
#define CAT(a, b) CAT2(a, b)
#define CFG_MAP CAT(mqc, MAP_SUFFIX)
#define STATE_MAP CAT(mqs, MAP_SUFFIX)

// Configuration, written once by user space.
enum {
    CFG_RATE_BPS = 0,    // drain rate in bytes per second
    CFG_K_BYTES = 1,     // mark when the backlog exceeds this (bytes)
    CFG_LOSS_U32 = 2,    // drop when prandom_u32 < this (0: no loss)
    CFG_DUALQ = 3,       // 1: dual-queue mode
    CFG_L_STEP_BYTES = 4, // dual queue: mark L packets above this L backlog (bytes)
    CFG_PL_U32 = 5,      // dual queue: CE-mark an L packet when prandom_u32 < this
    CFG_PC_U32 = 6,      // dual queue: mark/drop a classic packet when prandom_u32 < this
    CFG_PRIO_L = 7,      // dual queue: skb->priority (the htb class id) of L packets
    CFG_PRIO_C = 8,      // dual queue: skb->priority of classic packets
    CFG_LEN = 9,
};

// State, shared between the program and the resync loop.
enum {
    ST_BACKLOG = 0,      // modelled backlog in bytes at ST_LAST_NS
    ST_LAST_NS = 1,      // CLOCK_MONOTONIC time of the last update
    ST_MARKS = 2,        // CE marks set
    ST_PACKETS = 3,      // packets seen
    ST_ECT = 4,          // ECN-capable packets seen
    ST_ALREADY_CE = 5,   // packets that arrived already CE-marked
    ST_LOSS_DROPS = 6,   // packets dropped by loss injection
    ST_OVER_K = 7,       // packets (any ECN) that arrived above K
    ST_MARKED_SEGS = 8,  // packets the marks cover: a GSO skb is gso_segs packets, all CE
    ST_SKB_SEGS = 9,     // packets seen, counting a GSO skb as its gso_segs
    ST_L_BACKLOG = 10,   // dual queue: modelled L backlog in bytes at ST_LAST_NS
    ST_L_PACKETS = 11,   // dual queue: packets classified L
    ST_L_MARKS = 12,     // dual queue: CE marks set on L packets
    ST_L_STEP_MARKS = 13, // dual queue: of those, marks by the step (sojourn above l_step)
    ST_C_MARKS = 14,     // dual queue: CE marks set on classic (ECT(0)) packets
    ST_C_DROPS = 15,     // dual queue: classic not-ECT packets dropped at p_C
    ST_LEN = 16,
};

struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(max_entries, CFG_LEN);
    __type(key, __u32);
    __type(value, __u64);
    __uint(pinning, LIBBPF_PIN_BY_NAME);
} CFG_MAP SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(max_entries, ST_LEN);
    __type(key, __u32);
    __type(value, __u64);
    __uint(pinning, LIBBPF_PIN_BY_NAME);
} STATE_MAP SEC(".maps");

static __always_inline __u64 *st(__u32 k) { return bpf_map_lookup_elem(&STATE_MAP, &k); }
static __always_inline __u64 cfg(__u32 k)
{
    __u64 *v = bpf_map_lookup_elem(&CFG_MAP, &k);
    return v ? *v : 0;
}
static __always_inline void bump_by(__u32 k, __u64 n)
{
    __u64 *v = st(k);
    if (v)
        __sync_fetch_and_add(v, n);
}
static __always_inline void bump(__u32 k) { bump_by(k, 1); }

// The packet's ECN field (0-3), or -1.
static __always_inline int ecn_of(struct __sk_buff *skb, __u16 proto)
{
    __u8 byte1;
    if (bpf_skb_load_bytes(skb, ETH_HLEN + 1, &byte1, 1) < 0)
        return -1;
    return proto == bpf_htons(ETH_P_IP) ? (byte1 & 3) : ((byte1 >> 4) & 3);
}

// Sets CE in an ECT IPv4 packet's TOS and fixes the header checksum: 1, or -1 on error.
static __always_inline int set_ce_ipv4(struct __sk_buff *skb)
{
    __u8 tos;
    if (bpf_skb_load_bytes(skb, ETH_HLEN + 1, &tos, 1) < 0)
        return -1;
    __u8 ntos = tos | 3;
    // The checksum covers 16-bit words; TOS is the low byte of the first word.
    __u8 vihl;
    if (bpf_skb_load_bytes(skb, ETH_HLEN, &vihl, 1) < 0)
        return -1;
    __u16 oldw = bpf_htons((__u16)((__u16)vihl << 8 | tos));
    __u16 neww = bpf_htons((__u16)((__u16)vihl << 8 | ntos));
    if (bpf_l3_csum_replace(skb, ETH_HLEN + offsetof(struct iphdr, check), oldw, neww, 2) < 0)
        return -1;
    if (bpf_skb_store_bytes(skb, ETH_HLEN + 1, &ntos, 1, 0) < 0)
        return -1;
    return 1;
}

// Sets CE in an ECT IPv6 packet's traffic class: 1, or -1 on error.
static __always_inline int set_ce_ipv6(struct __sk_buff *skb)
{
    // Traffic class straddles the first two bytes: ECN bits are bits 4-5 of byte 1.
    __u8 b1;
    if (bpf_skb_load_bytes(skb, ETH_HLEN + 1, &b1, 1) < 0)
        return -1;
    b1 |= 0x30;
    if (bpf_skb_store_bytes(skb, ETH_HLEN + 1, &b1, 1, 0) < 0)
        return -1;
    return 1;
}

// Returns 1 if CE was set, 0 if not ECT (or not IP), 2 if it already was CE, -1 on error;
// counts the ECT packets it marks and the CE ones.
static __always_inline int set_ce(struct __sk_buff *skb, __u16 proto)
{
    if (proto != bpf_htons(ETH_P_IP) && proto != bpf_htons(ETH_P_IPV6))
        return 0;
    int ecn = ecn_of(skb, proto);
    if (ecn <= 0)
        return ecn;
    if (ecn == 3) {
        bump(ST_ALREADY_CE);
        return 2;
    }
    bump(ST_ECT);
    return proto == bpf_htons(ETH_P_IP) ? set_ce_ipv4(skb) : set_ce_ipv6(skb);
}

static __always_inline void count_mark(__u32 k, __u64 segs)
{
    bump(k);
    bump(ST_MARKS);
    bump_by(ST_MARKED_SEGS, segs);
}

// Dual-queue mode: drains both modelled backlogs to `now` (L first), classifies, marks or
// drops, and adds the packet to its queue's backlog.
static __always_inline int dualq(struct __sk_buff *skb, __u16 proto, __u64 now, __u64 segs)
{
    __u64 *cb = st(ST_BACKLOG);
    __u64 *lb = st(ST_L_BACKLOG);
    __u64 *last = st(ST_LAST_NS);
    if (!cb || !lb || !last)
        return TC_ACT_OK;
    __u64 rate = cfg(CFG_RATE_BPS);
    __u64 l = *lb, c = *cb, t = *last;
    if (now > t && rate) {
        __u64 drained = (now - t) * rate / 1000000000ULL;
        __u64 from_l = drained >= l ? l : drained;
        l -= from_l;
        drained -= from_l;
        c = drained >= c ? 0 : c - drained;
    }
    int ecn = ecn_of(skb, proto);
    // set_ce counts the ECT packets it marks; the others are counted here.
    int marked = 0;
    int verdict = TC_ACT_OK;
    if (ecn == 1 || ecn == 3) {
        bump(ST_L_PACKETS);
        skb->priority = (__u32)cfg(CFG_PRIO_L);
        int step = l > cfg(CFG_L_STEP_BYTES);
        if (step)
            bump(ST_OVER_K);
        if (ecn == 3) {
            bump(ST_ALREADY_CE);
        } else if (step || bpf_get_prandom_u32() < (__u32)cfg(CFG_PL_U32)) {
            marked = 1;
            if (set_ce(skb, proto) == 1) {
                count_mark(ST_L_MARKS, segs);
                if (step)
                    bump(ST_L_STEP_MARKS);
            }
        }
        l += skb->len;
    } else {
        skb->priority = (__u32)cfg(CFG_PRIO_C);
        if (ecn >= 0 && bpf_get_prandom_u32() < (__u32)cfg(CFG_PC_U32)) {
            if (ecn == 2) {
                marked = 1;
                if (set_ce(skb, proto) == 1)
                    count_mark(ST_C_MARKS, segs);
            } else {
                bump(ST_C_DROPS);
                verdict = TC_ACT_SHOT;
            }
        }
        if (verdict == TC_ACT_OK)
            c += skb->len;
    }
    if (!marked && (ecn == 1 || ecn == 2))
        bump(ST_ECT);
    // Races with the resync writer are benign: the next resync corrects the model.
    *lb = l;
    *cb = c;
    *last = now;
    return verdict;
}

SEC("tc")
int ecn_marker(struct __sk_buff *skb)
{
    __u16 proto = skb->protocol;
    if (proto != bpf_htons(ETH_P_IP) && proto != bpf_htons(ETH_P_IPV6))
        return TC_ACT_OK;

    __u64 *backlog = st(ST_BACKLOG);
    __u64 *last = st(ST_LAST_NS);
    if (!backlog || !last)
        return TC_ACT_OK;
    bump(ST_PACKETS);
    // A GSO skb (sender offload on) crosses as one skb; its segments all inherit the header.
    __u64 segs = skb->gso_segs > 1 ? skb->gso_segs : 1;
    bump_by(ST_SKB_SEGS, segs);

    __u32 loss = (__u32)cfg(CFG_LOSS_U32);
    if (loss && bpf_get_prandom_u32() < loss) {
        bump(ST_LOSS_DROPS);
        return TC_ACT_SHOT;
    }

    __u64 now = bpf_ktime_get_ns();
    if (cfg(CFG_DUALQ))
        return dualq(skb, proto, now, segs);
    __u64 rate = cfg(CFG_RATE_BPS);
    __u64 k = cfg(CFG_K_BYTES);
    __u64 b = *backlog;
    __u64 t = *last;
    if (now > t && rate) {
        __u64 drained = (now - t) * rate / 1000000000ULL;
        b = drained >= b ? 0 : b - drained;
    }
    if (b > k) {
        bump(ST_OVER_K);
        if (set_ce(skb, proto) == 1) {
            bump(ST_MARKS);
            bump_by(ST_MARKED_SEGS, segs);
        }
    } else {
        // Count ECT packets below K too, so ST_ECT is every ECN-capable packet.
        int ecn = ecn_of(skb, proto);
        if (ecn == 1 || ecn == 2)
            bump(ST_ECT);
    }
    // Races with the resync writer are benign: the next resync corrects the model.
    *backlog = b + skb->len;
    *last = now;
    return TC_ACT_OK;
}

char _license[] SEC("license") = "GPL";
