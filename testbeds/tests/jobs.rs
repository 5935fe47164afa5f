//! Partition/aggregate jobs (`[[jobs]]`, the `mpquic aggregate` client) beside a multipath
//! background flow on one marked bottleneck: every job completes, its JCT covers every answer's
//! FCT, each worker answers the configured size once per job, and the answers crossed the
//! bottleneck. Behaviour only, no timing. Needs the `mpquic` CLI binary.

mod common;
use common::*;

#[test]
fn every_job_completes_after_its_last_answer() {
    let Some(_serial) = netns_test("every_job_completes_after_its_last_answer") else { return };
    require_mpquic("every_job_completes_after_its_last_answer");
    let sc = r#"
name = "jobs-m2o"
duration = "30s"
controller = "amp"
[link]
rate = "100Mbps"
buffer = 100
k = 10
[topology]
kind = "many-to-one"
senders = 4
sender_addrs = 2
receiver_addrs = 2
[[flows]]
from = "s3"
to = "r"
paths = 2
bytes = 5000000
[[workloads]]
kind = "partition-aggregate"
aggregator = "r"
workers = ["s0", "s1", "s2"]
response_bytes = 65536
jobs = 5
parallel = 2
start = "200ms"
controller = "dctcp"
"#;
    let r = run_scenario("jobs-m2o", sc);
    let rep = &r["repetitions"][0];
    let j = &rep["jobs"][0];
    assert_eq!(j["completed"], true, "{}", j["error"]);
    let report = &j["report"];
    let jobs = report["jobs"].as_array().unwrap();
    assert_eq!(jobs.len(), 10, "2 streams x 5 jobs");
    assert_eq!(report["completed"], 10);
    for job in jobs {
        let jct = job["jct_s"].as_f64().unwrap_or_else(|| panic!("job failed: {job}"));
        let fcts = job["response_fct_s"].as_array().unwrap();
        assert_eq!(fcts.len(), 3, "one answer per worker: {job}");
        for fct in fcts {
            let fct = fct.as_f64().unwrap();
            assert!(fct > 0.0 && fct <= jct, "JCT {jct} < an answer's FCT {fct}");
        }
        assert!(job["response_bytes"].as_array().unwrap().iter().all(|b| b == 65536));
    }
    assert_eq!(f(report, &["jct_ms", "n"]), 10.0);
    // The answers (and the background flow) crossed the one bottleneck into the aggregator.
    let answers = 10.0 * 3.0 * 65536.0;
    assert!(f(&rep["links"][0], &["sent_bytes"]) > answers + 5e6, "{}", rep["links"][0]);
    assert!(
        f(&rep["receiver_counters"]["r"], &["Udp.InDatagrams"]) > answers / 1500.0,
        "the aggregator's host received the answers: {}",
        rep["receiver_counters"]
    );
    let bg = &rep["flows"][0];
    assert_eq!(bg["completed"], true, "{}", bg["error"]);
}
