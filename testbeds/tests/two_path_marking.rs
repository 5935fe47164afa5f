//! Two disjoint marked paths, kernel MPTCP (cubic + ECN): the marker marks on both paths,
//! the queue stays near K, the marking does not starve the flow (goodput near the link sum on a
//! quiet host), the marker's marks equal the receiver's CE count, and the closed loop keeps the
//! model within a few packets of the real queue. Without ECN the same queue fills far past K
//! (so marking is what bounds it).

mod common;
use common::*;

const K: u32 = 20;

fn scenario(name: &str, ecn: bool) -> String {
    format!(
        r#"
name = "{name}"
duration = "20s"
[link]
rate = "50Mbps"
buffer = "150000B"
k = {k}
[topology]
kind = "two-path"
cross_hosts = 0
[[flows]]
kind = "kernel-mptcp"
from = "src"
to = "dst"
bytes = 25000000
"#,
        k = if ecn { K } else { 0 }
    )
}

#[test]
fn two_path_kernel_mptcp_with_marking() {
    let Some(_serial) = netns_test("two_path_kernel_mptcp_with_marking") else { return };
    let r = run_scenario("two-path-ecn", &scenario("two-path-ecn", true));
    assert!(r["backend"] == "ebpf" || r["backend"] == "red", "backend reported: {}", r["backend"]);
    let rep = &r["repetitions"][0];
    let flow = &rep["flows"][0];
    assert_eq!(flow["completed"], true, "flow failed: {}", flow["error"]);
    assert_eq!(f(flow, &["bytes"]), 25e6);

    let links = rep["links"].as_array().unwrap();
    assert_eq!(links.len(), 2);
    for l in links {
        // Both paths carried traffic and were marked.
        assert!(f(l, &["sent_bytes"]) > 2e6, "path {} barely used: {l}", l["from"]);
        if r["backend"] == "ebpf" {
            assert!(f(l, &["marker", "marks"]) > 0.0, "no CE marks on path {}", l["from"]);
            // Closed loop: the model tracks the real queue.
            let mm = f(l, &["model_minus_real_pkts", "median"]);
            assert!(mm.abs() < 3.0, "marker model drifts from the qdisc: median {mm} packets");
        }
        // Bounded near K, far below the 99-packet buffer.
        let med = f(l, &["queue_pkts_busy", "median"]);
        let p99 = f(l, &["queue_pkts_busy", "p99"]);
        assert!(med <= 2.0 * K as f64, "queue median {med} > 2K");
        assert!(p99 <= 3.0 * K as f64, "queue p99 {p99} > 3K");
    }
    let frac = f(rep, &["goodput_fraction_of_link_sum"]);
    assert!(frac > STARVATION_FLOOR, "goodput only {:.1}% of the link sum", frac * 100.0);

    // Estimation: every mark arrives unless the FIFO behind the marker dropped it.
    let ce = &rep["ce"];
    let marks = f(ce, &["marks"]);
    let recv = f(ce, &["receiver_ce"]);
    let drops = f(ce, &["qdisc_drops"]);
    assert!(
        recv <= marks && recv >= marks - drops,
        "receiver CE {recv} vs marks {marks} (drops {drops})"
    );
    assert!(ce["receiver_error"].is_number());
}

#[test]
fn two_path_without_ecn_fills_the_buffer() {
    let Some(_serial) = netns_test("two_path_without_ecn_fills_the_buffer") else { return };
    let r = run_scenario("two-path-droptail", &scenario("two-path-droptail", false));
    let rep = &r["repetitions"][0];
    assert_eq!(rep["flows"][0]["completed"], true, "{}", rep["flows"][0]["error"]);
    assert!(rep["ce"].is_null());
    for l in rep["links"].as_array().unwrap() {
        let med = f(l, &["queue_pkts_busy", "median"]);
        assert!(med > 2.0 * K as f64, "drop-tail queue median {med} should exceed 2K");
        assert_eq!(f(&rep["receiver_counters"]["dst"], &["IpExt.InCEPkts"]), 0.0);
    }
}
