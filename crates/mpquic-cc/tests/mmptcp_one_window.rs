//! MMPTCP through the public API: the packet-scatter phase is one congestion window, however
//! many paths share it (mmptcp-paper.txt: "randomly scattered in the network under a single TCP
//! congestion window").

use std::time::Duration;

use mpquic_cc::{ControllerConfig, Event, MmptcpConfig, PathId, RttSample};

const MSS: u64 = 1200;

/// Four paths after persistent congestion: `W` is at its floor of 2 packets (RFC 9002 section
/// 7.6.2: the minimum window), and the four paths together may hold at most that, plus one
/// packet of rounding; before issue 15 they held 8 packets (each share floored at 2).
#[test]
fn four_paths_at_the_floor_hold_at_most_w() {
    let mut cc = ControllerConfig::Mmptcp(MmptcpConfig::default()).build();
    for id in 0..4 {
        cc.on_event(PathId(id), Event::PathAdded { mss: MSS });
    }
    let rtt = RttSample {
        latest: Duration::from_micros(100),
        smoothed: Duration::from_micros(100),
        min: Duration::from_micros(100),
    };
    // Some traffic on every path, then persistent congestion on path 3.
    for id in 0..4 {
        for pn in 0..5 {
            cc.on_event(PathId(id), Event::PacketSent { bytes: MSS, pn });
        }
        cc.on_event(PathId(id), Event::PacketAcked { bytes: MSS, pn: 0, rtt, app_limited: false });
        cc.on_event(PathId(id), Event::AckBatchEnded);
    }
    let lost = Event::PacketsLost { bytes: 4 * MSS, largest_pn: 4, persistent: true };
    cc.on_event(PathId(3), lost);
    let snap = cc.snapshot();
    assert_eq!(snap.mode, Some("scatter"));
    let w_floor = 2 * MSS;
    let total: u64 = (0..4).map(|id| cc.window(PathId(id))).sum();
    assert!(total <= w_floor + MSS, "4 paths hold {total} bytes, W is {w_floor}");
    assert!(total >= w_floor, "the floor's 2 packets stay usable: {total}");
}
