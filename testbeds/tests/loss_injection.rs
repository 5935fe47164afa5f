//! Loss injection on the marker backend: the requested drop rate is what the link drops,
//! counted by the program, and a kernel TCP flow still completes.

mod common;
use common::*;

#[test]
fn marker_drops_at_the_requested_rate() {
    let Some(_serial) = netns_test("marker_drops_at_the_requested_rate") else { return };
    let r = run_scenario(
        "loss",
        r#"
name = "loss"
duration = "20s"
[link]
rate = "50Mbps"
buffer = "150000B"
k = 20
loss = 0.02
[topology]
kind = "many-to-one"
senders = 1
[[flows]]
kind = "kernel-tcp"
from = "s0"
to = "r"
bytes = 10000000
"#,
    );
    let rep = &r["repetitions"][0];
    assert_eq!(rep["flows"][0]["completed"], true, "{}", rep["flows"][0]["error"]);
    if r["backend"] != "ebpf" {
        // The red backend drops with netem, whose drops the result does not count: the rate
        // cannot be checked there, so the test did not do its job.
        let reason = format!("backend {} injects loss with netem, not the marker", r["backend"]);
        return mpquic_skip::skip("marker_drops_at_the_requested_rate", &reason);
    }
    let m = &rep["links"][0]["marker"];
    let rate = f(m, &["loss_drops"]) / f(m, &["packets"]);
    assert!((0.01..0.03).contains(&rate), "drop rate {rate} for loss = 0.02");
}
