//! Every scenario shipped in `scenarios/` parses, builds, and runs a short slice cleanly.

use mpquic_sim::report::Report;
use mpquic_sim::scenario::Dur;
use mpquic_sim::{Scenario, Sim};

#[test]
fn shipped_scenarios_parse_build_and_run_briefly() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/scenarios");
    let mut names = vec![];
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "toml") {
            names.push(path);
        }
    }
    names.sort();
    assert!(names.len() >= 6, "{names:?}");
    for path in names {
        let text = std::fs::read_to_string(&path).unwrap();
        let mut s =
            Scenario::from_toml(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        // A short slice keeps this fast in debug builds; the full runs are for the CLI.
        s.duration = Dur::us(300);
        let mut sim = Sim::new(s).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        sim.run();
        let r = Report::new(&mut sim);
        assert_eq!(r.undeliverable, 0, "{}", path.display());
        assert!(r.flows.iter().all(|f| f.error.is_none()), "{}", path.display());
        assert!(r.datagrams > 0, "{}", path.display());
    }
}

/// Why `text` is rejected, by the parser or else by `Sim::new` (`None`: it is accepted).
fn rejection(text: &str) -> Option<String> {
    match Scenario::from_toml(text) {
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
    assert!(bad_node.contains("flow endpoint `nowhere` is not a host"), "{bad_node}");
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
