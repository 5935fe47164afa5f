//! Every file in `experiments/` (the paper experiments) and `experiments/scenarios/` (examples,
//! cross-checks, repros) validates, builds at every sweep point, and runs a short slice cleanly.

use std::path::PathBuf;

use mpquic_sim::report::Report;
use mpquic_sim::scenario::{expand_workloads, parse_scenario, Dur, Experiment};
use mpquic_sim::Sim;

fn toml_files(dir: &str) -> Vec<PathBuf> {
    let dir = format!("{}/../../{dir}", env!("CARGO_MANIFEST_DIR"));
    let mut names: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{dir}: {e}"))
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|e| e == "toml"))
        .collect();
    names.sort();
    names
}

#[test]
fn every_experiment_file_validates_builds_and_runs_briefly() {
    let files: Vec<PathBuf> =
        ["experiments", "experiments/scenarios", "experiments/scenarios/repro"]
            .iter()
            .flat_map(|d| toml_files(d))
            .collect();
    assert!(files.len() >= 20, "{files:?}");
    for path in files {
        let e = Experiment::load(&path).unwrap_or_else(|e| panic!("{e}"));
        for p in &e.points {
            Sim::new(p.scenario.clone())
                .unwrap_or_else(|err| panic!("{} [{}]: {err}", path.display(), p.name()));
        }
        // A short slice of the first point keeps this fast in debug builds: 300 us from its
        // first flow's start (a stream of arrivals may begin later).
        let mut s = e.points[0].scenario.clone();
        let hosts = s.topology.expand().unwrap().hosts;
        let flows = expand_workloads(&s, &hosts).unwrap_or_else(|e| panic!("{e}"));
        let first = flows.iter().map(|f| f.start).min().unwrap_or(Dur(0));
        s.duration = Dur(first.0 + Dur::us(300).0);
        let mut sim = Sim::new(s).unwrap();
        sim.run();
        let r = Report::new(&mut sim);
        assert_eq!(r.undeliverable, 0, "{}", path.display());
        assert!(r.flows.iter().all(|f| f.error.is_none()), "{}", path.display());
        assert!(r.datagrams > 0, "{}", path.display());
    }
}

/// Every experiment file runs in the simulator; what it refuses of the language (a testbed-only
/// field) `mpquic-sim validate` reports at the field's line.
#[test]
fn a_testbed_only_field_is_refused_at_its_line() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("pairs.toml");
    let text = "name = \"pairs\"\nduration = \"1ms\"\n[topology]\nkind = \"two-path\"\n\
                [[flows]]\nfrom = \"src\"\nto = \"dst\"\npaths = 2\npaths_per_pair = 2\n";
    std::fs::write(&file, text).unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_mpquic-sim"))
        .args(["validate", file.to_str().unwrap()])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    let line = stderr.split_once("pairs.toml:").and_then(|(_, rest)| rest.split(':').next());
    assert_eq!(line.map(str::trim), Some("9"), "{stderr}");
    assert!(stderr.contains("sim: paths_per_pair is the testbed's"), "{stderr}");
}

/// Why `text` is rejected, by the parser or else by `Sim::new` (`None`: it is accepted).
fn rejection(text: &str) -> Option<String> {
    match parse_scenario(text) {
        Err(e) => Some(e.to_string()),
        Ok(s) => Sim::new(s).err().map(|e| e.to_string()),
    }
}

#[test]
fn unknown_fields_nodes_and_controllers_are_rejected_with_the_reason() {
    let head = "name = \"x\"\nduration = \"1ms\"\n";
    let two_path = "[topology]\nkind = \"two-path\"\n";
    let bad_field = rejection(&format!("{head}bogus = 1\n{two_path}")).unwrap();
    assert!(bad_field.contains("unknown field `bogus`"), "{bad_field}");
    let bad_node =
        rejection(&format!("{head}{two_path}[[flows]]\nfrom = \"nowhere\"\nto = \"dst\"\n"))
            .unwrap();
    assert!(bad_node.contains("flows.0.from: no host `nowhere` in this topology"), "{bad_node}");
    let bad_cc = rejection(&format!(
        "{head}controller = \"vegas\"\n{two_path}[[flows]]\nfrom = \"src\"\nto = \"dst\"\n"
    ))
    .unwrap();
    assert!(bad_cc.contains("unknown controller `vegas`"), "{bad_cc}");
}

#[test]
fn bad_path_times_are_rejected_with_the_reason() {
    let scenario = |flow: &str| {
        let text = format!(
            "name = \"x\"\nduration = \"1ms\"\n[topology]\nkind = \"two-path\"\n\
             [[flows]]\nfrom = \"src\"\nto = \"dst\"\n{flow}\n"
        );
        rejection(&text)
    };
    assert_eq!(scenario("paths = 2\npath_times = [\"0ms\", \"1ms\"]"), None);
    let count = scenario("paths = 2\npath_times = [\"0ms\"]").unwrap();
    assert!(count.contains("1 entries for 2 paths"), "{count}");
    let order = scenario("paths = 3\npath_times = [\"0ms\", \"2ms\", \"1ms\"]").unwrap();
    assert!(order.contains("must not decrease"), "{order}");
    let first = scenario("paths = 2\npath_times = [\"1ms\", \"2ms\"]").unwrap();
    assert!(first.contains("after the handshake"), "{first}");
    let unit = scenario("paths = 2\npath_times = [\"0ms\", \"soon\"]").unwrap();
    assert!(unit.contains("bad duration `soon`"), "{unit}");
}

/// A per-direction override changes that direction only, and queue amounts in bytes become
/// full packets on the wire (mtu 1400 + 28 bytes of IP and UDP).
#[test]
fn link_overrides_and_byte_amounts_reach_the_simulated_links() {
    let text = "name = \"o\"\nduration = \"1ms\"\n[link]\nbuffer = \"150KB\"\nk = \"28560B\"\n\
                [topology]\nkind = \"two-path\"\n\
                [[link_overrides]]\nfrom = \"b\"\nto = \"dst\"\nrate = \"1Gbps\"\nk = 5\n";
    let sim = Sim::new(parse_scenario(text).unwrap()).unwrap();
    let link = |name: &str| {
        let l = sim.links.iter().find(|l| l.params.name == name).unwrap();
        (l.params.rate_bps, l.params.buffer_packets, l.params.ecn_k)
    };
    assert_eq!(link("b->dst"), (1_000_000_000, 107, Some(5)));
    assert_eq!(link("a->dst"), (10_000_000_000, 107, Some(20)));
    assert_eq!(link("dst->b").0, 10_000_000_000, "the other direction keeps [link]");
}

/// A path is named by the link that delivers to its remote address: on two paths, the
/// receiver's two addresses arrive over `a->dst` and `b->dst`.
#[test]
fn each_address_names_the_link_into_it() {
    let text = "name = \"l\"\nduration = \"1ms\"\n[topology]\nkind = \"two-path\"\n";
    let sim = Sim::new(parse_scenario(text).unwrap()).unwrap();
    let into = |host: &str| -> Vec<String> {
        let ips = sim.nodes.iter().find_map(|n| match n {
            mpquic_sim::net::Node::Host { name, interfaces } if name == host => {
                Some(interfaces.iter().map(|i| i.ip).collect::<Vec<_>>())
            }
            _ => None,
        });
        ips.unwrap().into_iter().map(|ip| sim.link_into(ip).unwrap().to_string()).collect()
    };
    assert_eq!(into("dst"), ["a->dst", "b->dst"]);
    assert_eq!(into("src"), ["a->src", "b->src"]);
    assert_eq!(sim.link_into("192.0.2.1".parse().unwrap()), None);
}
