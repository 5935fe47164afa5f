//! Every experiment file in `experiments/` as the testbed reads it: it validates (nothing is
//! built), as it does in the simulator (crates/mpquic-sim/tests/scenario_files.rs), dual-queue
//! files (`aqm = "dualq"`) included, except the simulator-only ones, which it must refuse with
//! their reason.

mod common;

use std::path::Path;
use std::process::Command;

/// The files the testbed refuses by design, each with the reason its refusal must give: the
/// simulator-only experiments (their write-ups say why the netns half is not run).
const SIMULATOR_ONLY: [(&str, &str); 12] = [
    ("amp-fig13-general-workload.toml", K8_FAT_TREE),
    ("amp-fig14-data-mining.toml", HOST_EGRESS_PORT),
    ("amp-fig14-data-mining-per-server.toml", HOST_EGRESS_PORT),
    ("mptcp-d-bursty.toml", BURSTS),
    ("mptcp-d-fig12-ec2.toml", HOST_EGRESS_PORT),
    ("mptcp-d-fig12-ec2-ten.toml", HOST_EGRESS_PORT),
    ("mptcp-d-fig14-bcube.toml", BCUBE_2_6),
    ("mptcp-d-fig14-fat-tree.toml", K8_FAT_TREE),
    ("mptcp-d-fig14-vl2.toml", HOST_EGRESS_PORT),
    ("xmp-fig7-rate-compensation.toml", LINK_DOWN),
    ("xmp-fig8-goodput-by-location.toml", K8_FAT_TREE),
    ("xmp-fig9-table3-jobs.toml", DRAWN_JOBS),
];
/// The testbed's refusal of a k = 8 fat tree (128 hosts and 80 switches).
const K8_FAT_TREE: &str = "208 nodes: the testbed builds at most 64 namespaces";
/// The testbed's refusal of BCube(2, 6): 128 hosts, their 128 relays and 448 level switches.
const BCUBE_2_6: &str = "704 nodes: the testbed builds at most 64 namespaces";
/// The testbed's refusal of hosts' egress queues made switch ports (its hosts' egress is
/// unshaped; the data-mining files are k = 8 fat trees too, MPTCP-D Fig. 14's VL2 has as many
/// hosts and switches, the EC2 files 40 hosts of four 256 Mbit/s interfaces).
const HOST_EGRESS_PORT: &str = "netns: the hosts' egress is their own qdisc";
/// The testbed's refusal of jobs whose hosts are drawn per job (its job streams have fixed
/// hosts).
const DRAWN_JOBS: &str = "netns: jobs that draw their hosts";
/// The testbed's refusal of a link going down mid-run (it shapes each direction once).
const LINK_DOWN: &str = "netns: links stay up for the whole run";
/// The testbed's refusal of burst sources (it has no rate-paced unresponsive sender).
const BURSTS: &str = "netns: burst sources run in the simulator";

#[test]
fn every_experiment_file_validates() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../experiments");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    files.sort();
    assert!(files.len() >= 10, "experiments/ holds the paper experiments: {files:?}");
    for file in files {
        let name = file.file_name().unwrap().to_str().unwrap();
        let out = Command::new(common::bin())
            .args(["validate", file.to_str().unwrap()])
            .env("RUST_BACKTRACE", "0")
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        match SIMULATOR_ONLY.iter().find(|(file, _)| *file == name) {
            Some((_, reason)) => assert!(
                !out.status.success() && stderr.contains(reason),
                "{name} is for the simulator only; the testbed must refuse it with `{reason}`: \
                 {stderr}"
            ),
            None => assert!(out.status.success(), "{name} does not validate: {stderr}"),
        }
    }
}

/// An analysis neither backend has is refused at its line, by the check the simulator makes
/// too (the analyses' names are declared once, in `mpquic_scenario::analyses`); one the
/// simulator computes (`shift_time`) validates here and reads `-`.
#[test]
fn an_unknown_analysis_is_refused_at_its_line() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("analysis.toml");
    let text = |analysis: &str| {
        format!(
            "name = \"a\"\nduration = \"1s\"\n[topology]\nkind = \"two-path\"\n\
             [[flows]]\nfrom = \"src\"\nto = \"dst\"\nbytes = 1000\n\
             [report]\nanalyses = [\"{analysis}\"]\nmetrics = [\"fct_mean_ms\"]\n"
        )
    };
    let validate = |analysis: &str| {
        std::fs::write(&file, text(analysis)).unwrap();
        let out = Command::new(common::bin())
            .args(["validate", file.to_str().unwrap()])
            .env("RUST_BACKTRACE", "0")
            .output()
            .unwrap();
        (out.status.success(), String::from_utf8_lossy(&out.stderr).into_owned())
    };
    let (ok, stderr) = validate("shfit");
    assert!(!ok && stderr.contains("analysis.toml:10:"), "{stderr}");
    assert!(stderr.contains("unknown analysis `shfit`"), "{stderr}");
    let (ok, stderr) = validate("shift_time");
    assert!(ok, "{stderr}");
}
