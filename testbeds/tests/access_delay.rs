//! Delays on directions the testbed does not shape (issue 39, L4): three mpquic flows into one
//! bottleneck, s0's access link delayed 20 ms toward the switch (a host's egress: held where
//! it enters sw), sw's link toward s1 delayed 10 ms (the ACKs' way: held where they leave sw),
//! s2's left alone. Each flow's median RTT sample (the sender's own report) is the
//! reference's plus the delay set on its way, so the delays are on the wire, where the plan
//! puts them. The median, not the smallest: the flows share one queue, so it adds alike to
//! each, while a flow's smallest sample has read up to 4 ms under its wire RTT (L4's runs,
//! docs/results/L4S-netns.md).

mod common;
use common::*;

/// The delays and the flows, after `dualq_many_to_one`'s network (sw -> r 5 ms, the access
/// links' 1 us below the delay line's resolution). Prague: its controller records every RTT
/// sample (the report's `rtt_min_ms`), and the dual queue's 1 ms step keeps its queue short.
const DELAYS_AND_FLOWS: &str = r#"
[[link_overrides]]
from = "s0"
to = "sw"
delay = "20ms"
[[link_overrides]]
from = "sw"
to = "s1"
delay = "10ms"
[[flows]]
from = "s[0..2]"
to = "r"
bytes = "3MB"
controller = "prague"
"#;

/// The median RTT sample of the flow from `host`, ms.
fn rtt_p50_ms(rep: &serde_json::Value, host: &str) -> f64 {
    let flows = rep["flows"].as_array().unwrap();
    let fl = flows.iter().find(|fl| fl["from"] == host).unwrap();
    assert_eq!(fl["completed"], true, "{host}: {}", fl["error"]);
    f(fl, &["mpquic", "paths", "0", "rtt_p50_ms"])
}

#[test]
fn delays_on_unshaped_access_links_reach_the_flows_rtts() {
    let Some(_serial) = netns_test("delays_on_unshaped_access_links_reach_the_flows_rtts") else {
        return;
    };
    let scenario = dualq_many_to_one("access-delay", "8s", "30Mbps", 3) + DELAYS_AND_FLOWS;
    let r = run_scenario("access-delay", &scenario);
    let rep = &r["repetitions"][0];
    let [s0, s1, s2] = ["s0", "s1", "s2"].map(|h| rtt_p50_ms(rep, h));
    println!("rtt_p50_ms: s0 {s0}, s1 {s1}, s2 {s2}");
    // The reference crosses sw -> r's 5 ms, the L queue (its 1 ms step) and the veths; the
    // delay line releases up to its 100 us poll period late, and a loaded host adds more: 2 ms
    // of slack either way.
    assert!((5.0..9.0).contains(&s2), "the reference flow's RTT: {s2} ms");
    assert!((s0 - s2 - 20.0).abs() < 2.0, "s0 -> sw's 20 ms: {s0} against {s2} ms");
    assert!((s1 - s2 - 10.0).abs() < 2.0, "sw -> s1's 10 ms: {s1} against {s2} ms");
    // Where they are held: the plan the run recorded.
    let delayed = r["scenario"]["delay_only"].as_array().unwrap();
    let hooks: Vec<_> = delayed.iter().map(|d| (d["from"].as_str(), d["hook"].as_str())).collect();
    assert_eq!(hooks, [(Some("s0"), Some("ingress")), (Some("sw"), Some("egress"))]);
}
