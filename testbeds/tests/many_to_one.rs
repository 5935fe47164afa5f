//! Many-to-one: several senders share one marked bottleneck.
//! - kernel TCP (cubic + ECN): the bottleneck is used, shared fairly, marks arrive as CE;
//! - mpquic AMP with 4 paths per flow, every path through the one bottleneck: AMP's
//!   suppression (SSR) engages. Needs the `mpquic` CLI binary (built by `cargo test
//!   --workspace` or `cargo build -p <cli>`; or $MPQUIC_BIN).

mod common;
use common::*;

#[test]
fn many_to_one_kernel_tcp_shares_the_bottleneck() {
    if skip("many_to_one_kernel_tcp_shares_the_bottleneck") {
        return;
    }
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let mut sc = String::from(
        r#"
name = "m2o-tcp"
duration_s = 20.0
[topology]
kind = "many-to-one"
senders = 4
[link]
rate_mbit = 100.0
k_packets = 10
buffer_bytes = 151400
"#,
    );
    for i in 1..=4 {
        sc += &format!(
            "[[flows]]\nkind = \"kernel-tcp\"\nfrom = \"s{i}\"\nto = \"d\"\nfor_s = 3.0\n"
        );
    }
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
    let jain = sum * sum / (g.len() as f64 * g.iter().map(|x| x * x).sum::<f64>());
    assert!(jain > 0.9, "unfair sharing: {g:?}, Jain {jain}");
    assert!(sum > 75.0, "the bottleneck is under-used: {sum} Mbit/s of 100");
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

fn mpquic_available() -> Option<String> {
    if let Ok(p) = std::env::var("MPQUIC_BIN") {
        return Some(p);
    }
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    ["release", "debug"]
        .iter()
        .map(|p| root.join("target").join(p).join("mpquic"))
        .find(|p| p.is_file())
        .map(|p| p.display().to_string())
}

#[test]
fn many_to_one_amp_engages_suppression() {
    if skip("many_to_one_amp_engages_suppression") {
        return;
    }
    if mpquic_available().is_none() {
        println!("SKIPPED many_to_one_amp_engages_suppression: the mpquic CLI binary is not built (target/*/mpquic, or set MPQUIC_BIN)");
        return;
    }
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let mut sc = String::from(
        r#"
name = "m2o-amp"
duration_s = 40.0
[topology]
kind = "many-to-one"
senders = 4
addrs_per_host = 4
[link]
rate_mbit = 100.0
k_packets = 10
buffer_bytes = 151400
"#,
    );
    for i in 1..=4 {
        sc += &format!("[[flows]]\nkind = \"mpquic\"\nfrom = \"s{i}\"\nto = \"d\"\ncc = \"amp\"\nbytes = 10000000\n");
    }
    let r = run_scenario("m2o-amp", &sc);
    let rep = &r["repetitions"][0];
    let mut suppressions = 0.0;
    for fl in rep["flows"].as_array().unwrap() {
        assert_eq!(fl["completed"], true, "{}", fl["error"]);
        let m = &fl["mpquic"];
        assert_eq!(m["paths"].as_array().map(|p| p.len()), Some(4), "expected 4 paths: {m}");
        suppressions += f(m, &["controller_state", "suppressions"]);
        let ce: f64 = m["paths"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["ce_marked"].as_f64().unwrap_or(0.0))
            .sum();
        assert!(ce > 0.0, "the sender saw no CE: {m}");
    }
    assert!(
        suppressions > 0.0,
        "AMP never suppressed a path although all paths share the bottleneck"
    );
    assert!(f(rep, &["total_goodput_mbps"]) > 50.0);
}
