//! Many-to-one: several senders share one marked bottleneck.
//! - kernel TCP (cubic + ECN): the bottleneck is used, shared fairly, marks arrive as CE;
//! - mpquic AMP with 4 paths per flow, every path through the one bottleneck: AMP's
//!   suppression (SSR) engages in every flow. Needs the `mpquic` CLI binary (built by `cargo test
//!   --workspace` or `cargo build -p <cli>`; or $MPQUIC_BIN).

mod common;
use common::*;

#[test]
fn many_to_one_kernel_tcp_shares_the_bottleneck() {
    let Some(_serial) = netns_test("many_to_one_kernel_tcp_shares_the_bottleneck") else { return };
    let sc = String::from(
        r#"
name = "m2o-tcp"
duration = "20s"
[link]
rate = "100Mbps"
buffer = 100
k = 10
[topology]
kind = "many-to-one"
senders = 4
[[flows]]
kind = "kernel-tcp"
from = "s[0..3]"
to = "r"
stop = "3s"
"#,
    );
    let r = run_scenario("m2o-tcp", &sc);
    let rep = &r["repetitions"][0];
    let flows = rep["flows"].as_array().unwrap();
    assert_eq!(flows.len(), 4);
    let g: Vec<f64> = flows
        .iter()
        .map(|fl| {
            assert_eq!(fl["completed"], true, "{}", fl["error"]);
            f(fl, &["goodput_mbps"])
        })
        .collect();
    let sum: f64 = g.iter().sum();
    let jain = mpquic_stats::jain(&g).unwrap();
    assert!(jain > 0.9, "unfair sharing: {g:?}, Jain {jain}");
    assert!(sum > 100.0 * STARVATION_FLOOR, "the bottleneck is under-used: {sum} Mbit/s of 100");
    let l = &rep["links"][0];
    assert!(f(l, &["queue_pkts_busy", "p99"]) < 50.0, "queue not bounded: {l}");
    if r["backend"] == "ebpf" {
        let (marks, recv, drops) = (
            f(&rep["ce"], &["marks"]),
            f(&rep["ce"], &["receiver_ce"]),
            f(&rep["ce"], &["qdisc_drops"]),
        );
        assert!(
            marks > 0.0 && recv <= marks && recv >= marks - drops,
            "marks {marks}, receiver CE {recv}, drops {drops}"
        );
    }
}

// Why these numbers: AMP suppresses once every active path of a connection has sat at
// cwnd_min (2 packets; "at" = under 3) for gamma = 2 rounds of its initial path. 4 senders x 4
// paths x 2 packets = 32 packets in flight at the floor, more than K = 10 plus the base BDP
// (100 Mbit/s x ~0.1 ms ≈ 1 packet), so even at the floor the queue stays above K, every round
// of every path is marked, and no path can leave the floor: SSR must engage in every flow.
#[test]
fn many_to_one_amp_engages_suppression() {
    let Some(_serial) = netns_test("many_to_one_amp_engages_suppression") else { return };
    require_mpquic("many_to_one_amp_engages_suppression");
    let sc = String::from(
        r#"
name = "m2o-amp"
duration = "40s"
controller = "amp"
[link]
rate = "100Mbps"
buffer = 100
k = 10
[transport]
ecn = "per-packet"
[topology]
kind = "many-to-one"
senders = 4
sender_addrs = 4
receiver_addrs = 4
[[flows]]
from = "s[0..3]"
to = "r"
paths = 4
bytes = 10000000
"#,
    );
    let r = run_scenario("m2o-amp", &sc);
    let rep = &r["repetitions"][0];
    for fl in rep["flows"].as_array().unwrap() {
        let m = mpquic_report(fl);
        let paths = m["paths"].as_array().unwrap();
        assert_eq!(paths.len(), 4, "expected 4 paths: {m}");
        let st = &m["controller_state"];
        assert_eq!(st["algorithm"], "amp", "{st}");
        let ce: f64 = paths.iter().map(|p| f(p, &["ce_events"])).sum();
        assert!(ce > 0.0, "flow {}: the sender saw no CE: {m}", fl["id"]);
        assert!(
            f(st, &["suppressions"]) > 0.0,
            "flow {}: AMP never suppressed although its 4 paths share the bottleneck: {st}",
            fl["id"]
        );
        // Suppression means the non-initial paths were kept from new data for a while, and
        // the initial path carried most of the bytes.
        for p in &paths[1..] {
            assert!(
                f(p, &["inactive_ms"]) > 0.0,
                "flow {}: path {} never inactive: {p}",
                fl["id"],
                p["id"]
            );
        }
        assert!(
            f(&paths[0], &["share"]) > 0.5,
            "flow {}: initial path carried little: {m}",
            fl["id"]
        );
    }
    assert!(f(rep, &["goodput_fraction_of_link_sum"]) > STARVATION_FLOOR, "bottleneck under-used");
    let l = &rep["links"][0];
    assert!(f(l, &["queue_pkts_busy", "median"]) <= 30.0, "queue not bounded: {l}");
}
