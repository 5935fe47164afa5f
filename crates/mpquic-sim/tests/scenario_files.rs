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

#[test]
fn unknown_fields_and_nodes_are_rejected() {
    let bad_field =
        "name = \"x\"\nduration = \"1ms\"\nbogus = 1\n[topology]\nkind = \"two-path\"\n";
    assert!(Scenario::from_toml(bad_field).is_err());
    let bad_node = "name = \"x\"\nduration = \"1ms\"\n[topology]\nkind = \"two-path\"\n[[flows]]\nfrom = \"nowhere\"\nto = \"dst\"\n";
    let s = Scenario::from_toml(bad_node).unwrap();
    assert!(Sim::new(s).is_err());
    let bad_cc = "name = \"x\"\nduration = \"1ms\"\ncontroller = \"vegas\"\n[topology]\nkind = \"two-path\"\n[[flows]]\nfrom = \"src\"\nto = \"dst\"\n";
    assert!(Sim::new(Scenario::from_toml(bad_cc).unwrap()).is_err());
}

#[test]
fn bad_path_times_are_rejected_with_the_reason() {
    let scenario = |flow: &str| {
        let text = format!(
            "name = \"x\"\nduration = \"1ms\"\n[topology]\nkind = \"two-path\"\n\
             [[flows]]\nfrom = \"src\"\nto = \"dst\"\n{flow}\n"
        );
        Sim::new(Scenario::from_toml(&text).unwrap()).err().map(|e| e.to_string())
    };
    assert_eq!(scenario("paths = 2\npath_times = [\"0ms\", \"1ms\"]"), None);
    let count = scenario("paths = 2\npath_times = [\"0ms\"]").unwrap();
    assert!(count.contains("1 entries for 2 paths"), "{count}");
    let order = scenario("paths = 3\npath_times = [\"0ms\", \"2ms\", \"1ms\"]").unwrap();
    assert!(order.contains("must not decrease"), "{order}");
    let first = scenario("paths = 2\npath_times = [\"1ms\", \"2ms\"]").unwrap();
    assert!(first.contains("after the handshake"), "{first}");
    assert!(Scenario::from_toml(
        "name = \"x\"\nduration = \"1ms\"\n[topology]\nkind = \"two-path\"\n[[flows]]\n\
         from = \"src\"\nto = \"dst\"\npaths = 2\npath_times = [\"0ms\", \"soon\"]\n"
    )
    .is_err());
}
