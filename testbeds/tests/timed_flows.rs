//! mpquic flows without `bytes` (E3's bulk flows): timed sends from their start until their stop
//! or the run's end, verified by the server's sink, with the server's receiver series as their
//! throughput over time.

mod common;
use common::*;

#[test]
fn timed_flows_run_until_their_stop_or_the_run_end_with_a_receiver_series() {
    let test = "timed_flows_run_until_their_stop_or_the_run_end_with_a_receiver_series";
    let Some(_serial) = netns_test(test) else { return };
    require_mpquic(test);
    let sc = r#"
name = "timed-flows"
duration = "3s"
controller = "amp"
[link]
rate = "50Mbps"
buffer = "150000B"
k = 20
[transport]
ecn = "per-packet"
[topology]
kind = "two-path"
cross_hosts = 1
[[flows]]
from = "src"
to = "dst"
paths = 2
[[flows]]
from = "xa0"
to = "dst"
to_addr = 0
controller = "dctcp"
start = "1s"
stop = "2s"
"#;
    let r = run_scenario("timed-flows", sc);
    let flows = r["repetitions"][0]["flows"].as_array().unwrap();
    let (bulk, cross) = (&flows[0], &flows[1]);
    // The multipath flow runs into the run's end: the runner's SIGTERM ends it, cleanly.
    assert_eq!(mpquic_report(bulk)["ended_by"], "SIGTERM");
    assert_eq!(mpquic_report(cross)["ended_by"], "time");
    for flow in [bulk, cross] {
        let m = mpquic_report(flow);
        assert_eq!(f(flow, &["bytes"]), f(m, &["bytes"]));
        assert!(f(flow, &["bytes"]) > 1e6, "{flow}");
        let series = flow["throughput"].as_array().unwrap();
        assert!(series.len() > 20, "no receiver series: {flow}");
    }
    // The cross flow's series lies within its time, after its start.
    let cross_series = cross["throughput"].as_array().unwrap();
    let first = f(&cross_series[0], &["0"]);
    let last = f(cross_series.last().unwrap(), &["0"]);
    assert!(first > 1.0 && last < 2.9, "the cross flow's series spans {first}..{last} s");
    let fct = f(cross, &["fct_s"]);
    assert!((1.0..1.9).contains(&fct), "a 1 s timed flow took {fct} s");
    // The server verified both streams: its reports name the flows, without their series.
    let servers = r["repetitions"][0]["mpquic_server_reports"].as_array().unwrap();
    for id in ["f0.0", "f1.0"] {
        let s = servers.iter().find(|s| s["name"] == id).unwrap_or_else(|| panic!("{id}"));
        assert_eq!((&s["ended_by"], &s["verified"]), (&"sender".into(), &true.into()));
        assert!(s.get("received_series").is_none(), "stored twice: {s}");
    }
}
