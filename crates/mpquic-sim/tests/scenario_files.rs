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
