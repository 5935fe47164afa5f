//! Fat-tree k = 4 with ECMP: 16 kernel TCP flows from pod 0 to pod 3 all cross the core, and
//! the per-router hash seeds spread them over at least 3 of the 4 cores (one seed for every
//! hop, or the socket's own hash reused at every hop, polarizes them onto exactly 2: the first
//! aggregation switch's first core and the second's second). With 16 independent flows, fewer
//! than 3 cores happens with probability ~1e-4. Marked queues stay bounded.

mod common;
use common::*;

const K: u32 = 10;

#[test]
fn fat_tree_ecmp_spreads_flows_over_the_core() {
    let Some(_serial) = netns_test("fat_tree_ecmp_spreads_flows_over_the_core") else { return };
    let sc = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../experiments/scenarios/fat-tree-k4-tcp.toml"),
    )
    .unwrap();
    assert!(sc.contains(&format!("k = {K}\n")) && sc.contains("buffer = \"150000B\""));
    let r = run_scenario("fat-tree", &sc);
    let rep = &r["repetitions"][0];
    let flows = rep["flows"].as_array().unwrap();
    assert_eq!(flows.len(), 16);
    let mut sent = 0.0;
    for fl in flows {
        assert_eq!(fl["completed"], true, "flow {} failed: {}", fl["id"], fl["error"]);
        sent += f(fl, &["bytes"]);
    }
    let links = rep["links"].as_array().unwrap();
    assert_eq!(links.len(), 80, "every switch egress is a marked bottleneck");
    // All of pod 0 -> pod 3 goes down from some core: the core downlinks carry all the bytes.
    let mut per_core = std::collections::BTreeMap::new();
    for l in links {
        let from = l["from"].as_str().unwrap();
        if from.starts_with('c') {
            *per_core.entry(from.to_string()).or_insert(0.0) += f(l, &["sent_bytes"]);
        }
    }
    let down: f64 = per_core.values().sum();
    assert!(
        down >= sent && down < sent * 1.2,
        "core downlinks carried {down} bytes for {sent} bytes of flows: {per_core:?}"
    );
    let used = per_core.values().filter(|b| **b > 0.05 * sent).count();
    assert!(used >= 3, "ECMP used only {used} of 4 cores (hash polarization?): {per_core:?}");
    // Where the flows collide, the marker keeps the queue well below the buffer (unmarked,
    // Cubic fills it). Not a tighter multiple of K: kernel Cubic halves at most once per RTT,
    // and several of these flows collide on a core link, so the p99 has reached 3.2K on a
    // quiet machine while the median stays near K.
    let buffer_frames = 150_000.0 / 1_500.0;
    let mut marks = 0.0;
    for l in links.iter().filter(|l| f(l, &["sent_bytes"]) > 1e6) {
        let p99 = f(l, &["queue_frames_busy", "p99"]);
        assert!(
            p99 <= buffer_frames / 2.0,
            "queue p99 {p99} > half the buffer on {} -> {}",
            l["from"],
            l["to"]
        );
        marks += f(l, &["marker", "marks"]);
    }
    assert!(marks > 0.0, "no link was marked although 16 flows share 4 cores");
}
