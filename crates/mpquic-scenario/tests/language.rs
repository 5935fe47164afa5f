//! The language as a researcher meets it: what parses, how sweeps expand, and what the errors
//! say and where.

use mpquic_scenario::expand::expand_workloads;
use mpquic_scenario::sweep::{self, Order};
use mpquic_scenario::{Amount, Dur, Experiment, FlowKind, RepeatOver, Spread, Workload};

const INCAST: &str = r#"name = "t"
duration = "100ms"
seeds = [1, 2]
controller = "amp"

[topology]
kind = "many-to-one"
senders = 4
sender_addrs = 4

[[workloads]]
kind = "incast"
receiver = "r"
bytes = "128KB"
rounds = 2
interval = "30ms"
paths = 4

[[sweep]]
name = "controller"
values = ["amp", "dctcp"]
set = ["workloads.0.controller"]
[sweep.when.dctcp]
"workloads.0.paths" = 1

[[sweep]]
name = "k"
values = [2, 4]
set = ["workloads.0.k"]
"#;

fn error(text: &str) -> String {
    Experiment::parse(text, "e.toml").unwrap_err().to_string()
}

#[test]
fn sweep_expands_axes_in_order_with_per_value_overrides() {
    let e = Experiment::parse(INCAST, "e.toml").unwrap();
    let names: Vec<String> = e.points.iter().map(|p| p.name()).collect();
    assert_eq!(
        names,
        [
            "controller=amp,k=2",
            "controller=amp,k=4",
            "controller=dctcp,k=2",
            "controller=dctcp,k=4"
        ]
    );
    let hosts = e.points[3].scenario.topology.expand().unwrap().hosts;
    let flows = expand_workloads(&e.points[3].scenario, &hosts).unwrap();
    assert_eq!(flows.len(), 8, "k = 4 senders x 2 rounds");
    assert!(flows
        .iter()
        .all(|f| f.paths == 1 && f.controller.as_ref().map(|c| c.text()) == Some("dctcp")));
    assert!(flows.iter().all(|f| f.bytes == Some(131_072)));
    let amp = expand_workloads(&e.points[0].scenario, &hosts).unwrap();
    assert!(amp.iter().all(|f| f.paths == 4), "the override is for dctcp only");
    let seeds: Vec<u64> = sweep::runs(&e, Order::Sweep).iter().map(|r| r.seed).collect();
    assert_eq!(seeds, [1, 2, 1, 2, 1, 2, 1, 2]);
}

#[test]
fn errors_say_file_line_column_and_reason() {
    // A host the topology lacks, at the line of the value.
    let e = error(&INCAST.replace("receiver = \"r\"", "receiver = \"d\""));
    assert_eq!(e, "e.toml:13:12: workloads.0.receiver: no host `d` in this topology (hosts: s0, s1, s2, s3, r)");
    // An unknown key, where it is written.
    let e = error(&INCAST.replace("rounds = 2", "rounds = 2\nround = 3"));
    assert!(e.starts_with("e.toml:16:1: unknown field `round`"), "{e}");
    // A bad unit.
    let e = error(&INCAST.replace("\"30ms\"", "\"30 fortnights\""));
    assert!(e.starts_with("e.toml:16:12: bad duration unit in `30 fortnights`"), "{e}");
    // A controller the library does not know, in a sweep point: which point, and the axis.
    let e = error(&INCAST.replace("\"dctcp\"]", "\"dctpc\"]").replace("when.dctcp", "when.dctpc"));
    assert!(
        e.starts_with(
            "e.toml:11:1: workloads.0.controller: [controller=dctpc,k=2] controller `dctpc`"
        ),
        "{e}"
    );
    // k above the senders.
    let e = error(&INCAST.replace("[2, 4]", "[2, 5]"));
    assert!(e.contains("[controller=amp,k=5] k = 5: must be in 1..=4 (the senders)"), "{e}");
    // A `when` for a value the axis does not have.
    let e = error(&INCAST.replace("when.dctcp", "when.cubic"));
    assert!(
        e.contains("sweep.0.when.cubic: `cubic` is not a value of axis `controller` (amp, dctcp)"),
        "{e}"
    );
    // A sweep path into an array entry that is not there.
    let e = error(&INCAST.replace("workloads.0.k", "workloads.1.k"));
    assert!(e.contains("`workloads.1.k`: index 1 out of range (the array has 1 entries)"), "{e}");
}

/// A `phases` metric whose `[...]` names no phase or no link would read NaN in every run: the
/// file is refused at the metric.
#[test]
fn a_phase_selector_must_name_a_phase_and_a_link_there_are() {
    let asking = |metric: &str| {
        error(&format!("{INCAST}\n[report]\nanalyses = [\"phases\"]\nmetrics = [\"{metric}\"]\n"))
    };
    let e = asking("phases.link_mbps[1,sw->r9]");
    assert!(
        e.starts_with("e.toml:33:12: report.metrics.0: `phases.link_mbps[1,sw->r9]`: no link direction `sw->r9`"),
        "{e}"
    );
    let e = asking("phases.jain[2]");
    assert!(e.contains("`2` is not a phase (this timeline has 1 to 1)"), "{e}");
    let ok = format!(
        "{INCAST}\n[report]\nanalyses = [\"phases\"]\nmetrics = [\"phases.link_mbps[1, sw->r]\"]\n"
    );
    Experiment::parse(&ok, "e.toml").unwrap();
}

/// `set` and `when` write a point's scenario; the experiment's own keys (read once from the
/// file) would be ignored for that point, so writing one is an error at its place.
#[test]
fn an_axis_may_not_write_the_experiments_own_keys() {
    let when = |line: &str| error(&INCAST.replace("\"workloads.0.paths\" = 1", line));
    let e = when("\"workloads.0.paths\" = 1\nskip = [{ k = 2 }]");
    assert!(e.starts_with("e.toml:25:8: sweep.0.when.dctcp.skip: `when` writes fields of each point's scenario, and `skip` is not one: `skip` belongs to the experiment (seeds, sweep, skip, report, plot, netns.set)"), "{e}");
    let e = when("seeds = [3]");
    assert!(e.contains("sweep.0.when.dctcp.seeds: `when` writes"), "{e}");
    // Inside a key, as a dotted path or a nested table.
    let e = when("\"report.metrics\" = [\"fct_p99_ms\"]");
    assert!(e.contains("sweep.0.when.dctcp.report.metrics: `when` writes fields of each point's scenario, and `report.metrics` is not one: `report` belongs"), "{e}");
    let e = when("netns = { set = { duration = \"1s\" } }");
    assert!(e.contains("`netns.set.duration` is not one: `netns.set` belongs"), "{e}");
    // What a run reads is fine, also next to those names.
    Experiment::parse(
        &INCAST.replace(
            "\"workloads.0.paths\" = 1",
            "duration = \"50ms\"\nnetns = { rate_scale = 0.5 }\nskipped = 1",
        ),
        "e.toml",
    )
    .map(|_| ())
    .unwrap_err(); // `skipped` is no field at all: the scenario refuses it as unknown
    Experiment::parse(
        &INCAST.replace(
            "\"workloads.0.paths\" = 1",
            "duration = \"50ms\"\nnetns = { rate_scale = 0.5 }",
        ),
        "e.toml",
    )
    .unwrap();
    let e = error(
        &INCAST.replace("set = [\"workloads.0.k\"]", "set = [\"workloads.0.k\", \"plot.x\"]"),
    );
    assert!(e.contains("sweep.1.set: `set` writes fields of each point's scenario, and `plot.x` is not one: `plot` belongs"), "{e}");
}

#[test]
fn flows_with_ranges_counts_and_kernel_kinds() {
    let text = r#"name = "f"
duration = "1s"
[topology]
kind = "many-to-one"
senders = 8
[link]
rate = "100Mbit"
buffer = "150KB"
k = "20pkt"
[[flows]]
name = "bulk"
kind = "kernel-tcp"
controller = "dctcp"
from = "s[2..4]"
to = "r"
count = 2
stagger = "1ms"
"#;
    let s = mpquic_scenario::parse_scenario(text).unwrap();
    assert_eq!(s.link.buffer, Some(Amount::Bytes(153_600)));
    assert_eq!(s.link.k, Some(Amount::Packets(20)));
    let flows = mpquic_scenario::expand::expand_flows(&s.flows).unwrap();
    let got: Vec<(String, String, Dur)> =
        flows.iter().map(|f| (f.name.clone().unwrap(), f.from.clone(), f.start)).collect();
    assert_eq!(got[0], ("bulk-0".into(), "s2".into(), Dur(0)));
    assert_eq!(got[5], ("bulk-5".into(), "s4".into(), Dur::ms(5)));
    assert!(flows.iter().all(|f| f.kind == FlowKind::KernelTcp));
    let e = mpquic_scenario::parse_scenario(&text.replace("s[2..4]", "s[2..9]")).unwrap_err();
    assert_eq!(e.to_string(), "<scenario>:14:8: flows.0.from: no host `s8` in this topology (hosts: s0, s1, s2, s3, s4, s5, ... 9 in all)");
}

#[test]
fn skip_wildcards_and_when_after_every_set() {
    let text = r#"name = "w"
duration = "10ms"
[topology]
kind = "many-to-one"
senders = 3
[[flows]]
from = "s0"
to = "r"
[[flows]]
from = "s1"
to = "r"
[[sweep]]
name = "controller"
values = ["amp", "dctcp"]
set = ["controller"]
[sweep.when.dctcp]
"flows.*.paths" = 1
[[sweep]]
name = "paths"
values = [4, 8]
set = ["flows.*.paths"]
[[skip]]
controller = "dctcp"
paths = 4
"#;
    let e = Experiment::parse(text, "w.toml").unwrap();
    let got: Vec<(String, Vec<usize>)> = e
        .points
        .iter()
        .map(|p| (p.name(), p.scenario.flows.iter().map(|f| f.paths).collect()))
        .collect();
    assert_eq!(
        got,
        [
            ("controller=amp,paths=4".to_string(), vec![4, 4]),
            ("controller=amp,paths=8".to_string(), vec![8, 8]),
            // The `when` wins over the later axis's `set`.
            ("controller=dctcp,paths=8".to_string(), vec![1, 1]),
        ]
    );
    let e = error(
        &text
            .replace("paths = 4\n\"#", "paths = 5\n\"#")
            .replace("controller = \"dctcp\"\npaths = 4", "controller = \"dctcp\"\npaths = 5"),
    );
    assert!(e.contains("skip.0.paths: `5` is not a value of axis `paths`"), "{e}");
}

#[test]
fn extends_merges_tables_by_key_and_arrays_of_tables_by_entry() {
    let dir = std::env::temp_dir().join(format!("mpquic-scenario-extends-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("base.toml"), INCAST).unwrap();
    let child = "extends = \"base.toml\"\nname = \"bigger\"\n[[workloads]]\nbytes = \"256KB\"\n\
                 [[sweep]]\nvalues = [\"dctcp\"]\n[transport]\nmax_ack_delay = \"1ms\"\n";
    std::fs::write(dir.join("child.toml"), child).unwrap();
    let e = Experiment::load(&dir.join("child.toml")).unwrap();
    assert_eq!(e.base.name, "bigger");
    assert_eq!(e.base.transport.max_ack_delay, Some(Dur::ms(1)));
    assert_eq!(e.points.len(), 2, "controller axis narrowed to dctcp, k axis kept");
    let hosts = e.base.topology.expand().unwrap().hosts;
    let flows = expand_workloads(&e.points[0].scenario, &hosts).unwrap();
    assert!(flows.iter().all(|f| f.bytes == Some(262_144) && f.paths == 1), "the parent's when");
    assert!(flows.iter().all(|f| f.controller.as_ref().map(|c| c.text()) == Some("dctcp")));
    // An error of the merged document that the child does not write is placed in the parent.
    std::fs::write(
        dir.join("bad.toml"),
        "extends = \"base.toml\"\n[[workloads]]\nreceiver = \"x\"\n",
    )
    .unwrap();
    let err = Experiment::load(&dir.join("bad.toml")).unwrap_err().to_string();
    assert!(err.contains("bad.toml:3:12: workloads.0.receiver: no host `x`"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn every_file_in_experiments_parses() {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../../experiments");
    let mut n = 0;
    for dir in [root.to_string(), format!("{root}/scenarios"), format!("{root}/scenarios/repro")] {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "toml") {
                Experiment::load(&path).unwrap_or_else(|e| panic!("{e}"));
                n += 1;
            }
        }
    }
    assert!(n >= 20, "{n} files");
}

#[test]
fn netns_set_applies_to_the_testbed_variant_only_and_is_checked() {
    let text = format!(
        "{INCAST}\n[netns]\nrate_scale = 0.01\n[netns.set]\n\"workloads.0.bytes\" = \"1MB\"\n"
    );
    let e = Experiment::parse(&text, "n.toml").unwrap();
    let bytes = |e: &Experiment| {
        let s = &e.points[0].scenario;
        let hosts = s.topology.expand().unwrap().hosts;
        expand_workloads(s, &hosts).unwrap()[0].bytes
    };
    assert_eq!(bytes(&e), Some(131_072));
    assert_eq!(bytes(&e.for_netns()), Some(1 << 20));
    let bad = text.replace("\"workloads.0.bytes\"", "\"workloads.3.bytes\"");
    let err = error(&bad);
    assert!(err.contains("netns.set: `workloads.3.bytes`: index 3 out of range"), "{err}");
}

#[test]
fn poisson_with_a_receiver_sends_every_flow_to_it_from_the_other_hosts() {
    let text = r#"name = "p"
duration = "1s"
[topology]
kind = "many-to-one"
senders = 4
[[workloads]]
kind = "poisson"
hosts = ["s1", "s2", "s3", "r"]
receiver = "r"
rate = 200.0
bytes = "70KB"
start = "100ms"
stop = "600ms"
"#;
    let s = mpquic_scenario::parse_scenario(text).unwrap();
    let hosts = s.topology.expand().unwrap().hosts;
    let flows = expand_workloads(&s, &hosts).unwrap();
    assert!(flows.len() > 50, "~100 arrivals in 0.5 s at 200/s: {}", flows.len());
    assert!(flows.iter().all(|f| f.to == "r"));
    let from: std::collections::BTreeSet<&str> = flows.iter().map(|f| f.from.as_str()).collect();
    assert_eq!(from.into_iter().collect::<Vec<_>>(), ["s1", "s2", "s3"]);
    assert!(flows.windows(2).all(|w| w[0].start < w[1].start));
    assert!(flows.iter().all(|f| f.start >= Dur::ms(100) && f.start < Dur::ms(600)));
    let e =
        mpquic_scenario::parse_scenario(&text.replace("\"s1\", \"s2\", \"s3\", ", "")).unwrap_err();
    assert!(
        e.to_string()
            .contains("workloads.0.hosts: needs at least 1 host(s) other than the receiver"),
        "{e}"
    );
    let e = mpquic_scenario::parse_scenario(&text.replace("receiver = \"r\"", "receiver = \"x\""))
        .unwrap_err();
    assert!(e.to_string().contains("workloads.0.receiver: no host `x`"), "{e}");
}

#[test]
fn poisson_sizes_drawn_from_a_distribution_leave_the_arrivals_where_they_were() {
    let text = r#"name = "p"
duration = "1s"
seeds = [3]
[topology]
kind = "many-to-one"
senders = 4
[[workloads]]
kind = "poisson"
rate = 2000.0
bytes = "70KB"
stop = "500ms"
"#;
    let flows = |text: &str| {
        let s = mpquic_scenario::parse_scenario(text).unwrap();
        let hosts = s.topology.expand().unwrap().hosts;
        expand_workloads(&s, &hosts).unwrap()
    };
    let fixed = flows(text);
    let uniform = flows(&text.replace(
        "bytes = \"70KB\"",
        "bytes = { uniform = [\"1KB\", \"1MB\"] }\ngroup = \"short\"",
    ));
    let key = |f: &mpquic_scenario::FlowSpec| (f.from.clone(), f.to.clone(), f.start);
    assert_eq!(
        fixed.iter().map(key).collect::<Vec<_>>(),
        uniform.iter().map(key).collect::<Vec<_>>()
    );
    assert!(fixed
        .iter()
        .all(|f| f.bytes == Some(71_680) && f.group.as_deref() == Some("poisson0")));
    let sizes: Vec<u64> = uniform.iter().map(|f| f.bytes.unwrap()).collect();
    assert!(sizes.iter().all(|s| (1024..=1 << 20).contains(s)));
    let mean = sizes.iter().sum::<u64>() as f64 / sizes.len() as f64;
    assert!((mean / 524_800.0 - 1.0).abs() < 0.1, "{} flows, mean {mean}", sizes.len());
    assert!(uniform.iter().all(|f| f.group.as_deref() == Some("short")));

    let err = mpquic_scenario::parse_scenario(
        &text.replace("bytes = \"70KB\"", "bytes = { cdf = [[1000, 0.5], [2000, 0.9]] }"),
    )
    .unwrap_err();
    assert!(
        err.to_string()
            .contains("workloads.0.bytes: cdf: the last point's probability is 0.9, not 1"),
        "{err}"
    );
}

#[test]
fn a_permutation_pairs_every_host_with_another_once_each_way() {
    let text = r#"name = "perm"
duration = "1s"
seeds = [1, 2]
[topology]
kind = "fat-tree"
k = 4
[[workloads]]
kind = "permutation"
hosts = ["h0", "h2", "h4", "h6", "h8", "h10", "h12", "h14"]
paths = 4
controller = "amp"
group = "long"
stop = "800ms"
"#;
    let e = Experiment::parse(text, "perm.toml").unwrap();
    let mut pairings = vec![];
    for seed in [1, 2] {
        let mut s = e.points[0].scenario.clone();
        s.seed = seed;
        let hosts = s.topology.expand().unwrap().hosts;
        let flows = expand_workloads(&s, &hosts).unwrap();
        assert_eq!(flows.len(), 8);
        let mut from: Vec<&str> = flows.iter().map(|f| f.from.as_str()).collect();
        let mut to: Vec<&str> = flows.iter().map(|f| f.to.as_str()).collect();
        assert!(flows.iter().all(|f| f.from != f.to), "a host paired with itself");
        from.sort();
        to.sort();
        assert_eq!(from, to, "every host sends once and receives once");
        assert!(flows.iter().all(|f| f.bytes.is_none()
            && f.paths == 4
            && f.stop == Some(Dur::ms(800))
            && f.group.as_deref() == Some("long")));
        pairings.push(flows.iter().map(|f| f.to.clone()).collect::<Vec<_>>());
    }
    assert_ne!(pairings[0], pairings[1], "seeds draw different pairings");

    let err = error(&text.replace("\"h0\", \"h2\"", "\"h0\", \"h0\""));
    assert!(err.contains("workloads.0.hosts.1: `h0` is listed twice"), "{err}");
    let err = error(
        &text
            .replace("\"h0\", \"h2\", \"h4\", \"h6\", \"h8\", \"h10\", \"h12\", \"h14\"", "\"h0\""),
    );
    assert!(err.contains("workloads.0.hosts: needs at least 2 hosts to pair"), "{err}");
}

/// The flows a pairing workload of `text` expands to under `seed`.
fn pairing_flows(text: &str, seed: u64) -> Vec<mpquic_scenario::FlowSpec> {
    let mut s = Experiment::parse(text, "pairing.toml").unwrap().points[0].scenario.clone();
    s.seed = seed;
    let hosts = s.topology.expand().unwrap().hosts;
    expand_workloads(&s, &hosts).unwrap()
}

const RANDOM: &str = r#"name = "random"
duration = "1s"
[topology]
kind = "fat-tree"
k = 4
[[workloads]]
kind = "random"
max_in = 2
paths = 2
group = "large"
"#;

#[test]
fn a_random_pattern_sends_one_flow_from_each_host_to_another_none_receiving_more_than_max_in() {
    let mut most = 0;
    let mut draws = vec![];
    for seed in 1..=10 {
        let flows = pairing_flows(RANDOM, seed);
        assert_eq!(flows.len(), 16);
        let from: Vec<String> = flows.iter().map(|f| f.from.clone()).collect();
        assert_eq!(from, (0..16).map(|i| format!("h{i}")).collect::<Vec<_>>(), "one from each");
        assert!(flows.iter().all(|f| f.from != f.to && f.paths == 2 && f.bytes.is_none()));
        assert!(flows.iter().all(|f| f.group.as_deref() == Some("large")));
        let received = |h: &str| flows.iter().filter(|f| f.to == h).count();
        let max = from.iter().map(|h| received(h)).max().unwrap();
        assert!(max <= 2, "seed {seed}: a host receives {max} flows");
        most = most.max(max);
        draws.push(flows.iter().map(|f| f.to.clone()).collect::<Vec<_>>());
    }
    assert_eq!(most, 2, "no seed drew a host twice: a permutation, not a random pattern");
    assert_ne!(draws[0], draws[1], "seeds draw different patterns");

    let err = error(&RANDOM.replace("max_in = 2", "max_in = 1"));
    assert!(err.contains("workloads.0.max_in: must be >= 2"), "{err}");
    let err = error(&RANDOM.replace("\"random\"", "\"permutation\""));
    assert!(
        err.contains("workloads.0.max_in: a permutation's hosts each receive one flow"),
        "{err}"
    );
}

#[test]
fn by_location_names_each_flow_by_where_its_hosts_sit_in_the_fat_tree() {
    // k = 8: four hosts per rack (h0..h3 under e0_0), sixteen per pod (h0..h15). Two hosts
    // can only be paired with each other, so each pair fixes both flows' location.
    let text = |hosts: &str| {
        RANDOM
            .replace("k = 4", "k = 8")
            .replace("kind = \"random\"", "kind = \"permutation\"")
            .replace("max_in = 2", &format!("hosts = {hosts}\nby_location = true"))
    };
    for (hosts, location) in [
        (r#"["h0", "h3"]"#, "large-inner-rack"),
        (r#"["h3", "h4"]"#, "large-inter-rack"),
        (r#"["h15", "h16"]"#, "large-inter-pod"),
    ] {
        let flows = pairing_flows(&text(hosts), 1);
        let groups: Vec<_> = flows.iter().map(|f| f.group.as_deref().unwrap()).collect();
        assert_eq!(groups, [location, location], "{hosts}");
    }
    // A random pattern over the whole tree: every flow has one of the three.
    let flows = pairing_flows(&RANDOM.replace("max_in = 2", "by_location = true"), 3);
    assert!(flows.iter().all(|f| matches!(
        f.group.as_deref(),
        Some("large-inner-rack" | "large-inter-rack" | "large-inter-pod")
    )));

    let dumbbell = text(r#"["l0", "r0"]"#)
        .replace("kind = \"fat-tree\"\nk = 8", "kind = \"dumbbell\"\npairs = 2");
    let err = error(&dumbbell);
    assert!(err.contains("workloads.0.by_location: needs a fat-tree topology"), "{err}");
}

#[test]
fn backup_paths_name_paths_of_the_flow_other_than_path_0() {
    let text = r#"name = "b"
duration = "1s"
[topology]
kind = "two-path"
[[flows]]
from = "src"
to = "dst"
paths = 2
backup_paths = [1]
"#;
    let s = mpquic_scenario::parse_scenario(text).unwrap();
    assert!(s.flows[0].is_backup(1) && !s.flows[0].is_backup(0));
    let e = |list: &str| {
        let text = text.replace("[1]", list);
        mpquic_scenario::parse_scenario(&text).unwrap_err().to_string()
    };
    assert!(e("[0]").ends_with("backup_paths names path 0, the connection's own path (available)"));
    assert!(e("[2]").ends_with("backup_paths names path 2, but the flow has paths 0..1"));
}

#[test]
fn repeat_over_names_new_or_one_connection_and_needs_repeats() {
    let text = r#"name = "r"
duration = "1s"
[topology]
kind = "two-path"
[[flows]]
from = "src"
to = "dst"
bytes = "2MB"
repeat = 3
repeat_over = "one-connection"
"#;
    let parse = |text: &str| mpquic_scenario::parse_scenario(text).map_err(|e| e.to_string());
    assert_eq!(parse(text).unwrap().flows[0].repeat_over, RepeatOver::OneConnection);
    let default = parse(&text.replace("repeat_over = \"one-connection\"\n", "")).unwrap();
    assert_eq!(default.flows[0].repeat_over, RepeatOver::NewConnection);
    let once = parse(&text.replace("repeat = 3", "repeat = 1")).unwrap_err();
    assert!(once.contains("flows.0.repeat_over: needs repeat > 1"), "{once}");
    let unknown = parse(&text.replace("one-connection", "same")).unwrap_err();
    assert!(unknown.contains("new-connection") && unknown.contains("one-connection"), "{unknown}");
}

#[test]
fn start_spread_moves_each_start_by_a_seeded_draw_below_it() {
    let text = r#"name = "s"
duration = "1s"
start_spread = "2ms"
[topology]
kind = "many-to-one"
senders = 8
[[flows]]
name = "bulk"
from = "s[0..7]"
to = "r"
stagger = "1ms"
"#;
    let mut s = mpquic_scenario::parse_scenario(text).unwrap();
    let hosts = s.topology.expand().unwrap().hosts;
    let starts = |s: &mpquic_scenario::Scenario| -> Vec<Dur> {
        expand_workloads(s, &hosts).unwrap().iter().map(|f| f.start).collect()
    };
    let first = starts(&s);
    for (i, start) in first.iter().enumerate() {
        let written = Dur::ms(i as u64).0;
        assert!(start.0 >= written && start.0 < written + Dur::ms(2).0, "flow {i}: {start:?}");
    }
    assert_eq!(starts(&s), first, "the same seed draws the same starts");
    s.seed += 1;
    assert_ne!(starts(&s), first, "another seed draws other starts");
    s.start_spread = Dur(0);
    let written: Vec<Dur> = (0..8).map(Dur::ms).collect();
    assert_eq!(starts(&s), written, "no spread: the written starts");
}

/// A closed-loop partition-aggregate workload of 9-host jobs drawn on a k = 4 fat tree (the
/// XMP paper's Incast pattern), with `parallel` and `jobs` put in by each test.
const JOBS: &str = r#"name = "jobs"
duration = "1s"
[topology]
kind = "fat-tree"
k = 4
[[flows]]
from = "h0"
to = "h15"
[[workloads]]
kind = "partition-aggregate"
workers = 8
request_bytes = "2KB"
response_bytes = "64KB"
closed_loop = true
gap = "1ms"
start = "5ms"
controller = "newreno"
"#;

/// The flows of `text`'s scenario at `seed`, the written flow left out.
fn job_flows(text: &str, seed: u64) -> Vec<mpquic_scenario::FlowSpec> {
    let mut s = mpquic_scenario::parse_scenario(text).unwrap();
    s.seed = seed;
    let hosts = s.topology.expand().unwrap().hosts;
    expand_workloads(&s, &hosts).unwrap().split_off(1)
}

/// Each slot's first job starts at `start`; job `parallel + i` waits for job `i`, `gap` after
/// it; every flow of a job waits for the same job, and makes its connection as it starts.
#[test]
fn closed_loop_jobs_chain_each_slot_to_its_previous_job() {
    let flows = job_flows(&format!("{JOBS}parallel = 3\njobs = 4\n"), 1);
    assert_eq!(flows.len(), 3 * 4 * 8, "3 slots x 4 jobs x 8 workers");
    for f in &flows {
        let job = f.job.unwrap();
        let after = f.after.map(|a| (a.job, a.gap));
        assert_eq!(after, (job >= 3).then_some((job - 3, Dur::ms(1))), "{:?}", f.name);
        assert!(f.handshake_at_start && f.start == Dur::ms(5) && f.connect_at() == f.start);
        assert_eq!(
            (f.bytes, f.response_bytes, f.group.as_deref()),
            (Some(2048), 65536, Some("pa0"))
        );
    }
    // Without `jobs`: as many as the other flows (one here) leave of the run's limit.
    let open_ended = job_flows(&format!("{JOBS}parallel = 3\n"), 1);
    let limit = mpquic_scenario::expand::MAX_FLOWS;
    assert_eq!(open_ended.len(), (limit - 1) / 24 * 24);
    assert_eq!(open_ended[..flows.len()], flows[..], "the same jobs first");
}

/// A job of `workers = 8` draws its aggregator and 8 distinct workers from the pool; the seed
/// fixes every job's draw, another seed draws others.
#[test]
fn jobs_draw_distinct_hosts_from_the_pool_by_the_seed() {
    let pool: Vec<String> = (2..14).map(|h| format!("h{h}")).collect();
    let text = format!("{JOBS}parallel = 8\njobs = 5\nhosts = {pool:?}\n");
    let crews = |seed| {
        let flows = job_flows(&text, seed);
        let mut jobs = vec![(String::new(), vec![]); 40];
        for f in flows {
            let (aggregator, workers) = &mut jobs[f.job.unwrap()];
            *aggregator = f.from.clone();
            workers.push(f.to.clone());
        }
        jobs
    };
    let first = crews(1);
    for (aggregator, workers) in &first {
        let mut hosts: Vec<&String> = workers.iter().chain([aggregator]).collect();
        assert!(hosts.iter().all(|h| pool.contains(h)), "{hosts:?}");
        hosts.sort();
        hosts.dedup();
        assert_eq!(
            hosts.len(),
            9,
            "an aggregator and 8 distinct workers: {aggregator} {workers:?}"
        );
    }
    assert!(first.windows(2).any(|w| w[0].0 != w[1].0), "aggregators vary from job to job");
    assert_eq!(crews(1), first, "the same seed draws the same jobs");
    assert_ne!(crews(2), first, "another seed draws other jobs");
    // A written aggregator leads every job, and is never one of its workers.
    let fixed = job_flows(&format!("{JOBS}parallel = 2\njobs = 5\naggregator = \"h7\"\n"), 1);
    assert!(fixed.iter().all(|f| f.from == "h7" && f.to != "h7"));
}

#[test]
fn partition_aggregate_jobs_are_checked_at_their_fields() {
    let jobs = format!("{JOBS}parallel = 8\n");
    let e = |from: &str, to: &str| error(&jobs.replace(from, to));
    let pool = "hosts = [\"h0\", \"h1\", \"h2\", \"h3\", \"h4\", \"h5\", \"h6\", \"h7\", \"h8\"]";
    let err = error(&format!("{jobs}{pool}\nworkers = 9\n").replace("workers = 8\n", ""));
    assert!(err.contains("workloads.0.workers: workers = 9: must be in 1..=8 (a job draws its aggregator and its workers, distinct, from 9 hosts)"), "{err}");
    let err = e("parallel = 8", "parallel = 0");
    assert!(err.contains("workloads.0.parallel: must be >= 1 (job slots)"), "{err}");
    let err = e("closed_loop = true", "jobs = 0");
    assert!(err.contains("workloads.0.jobs: must be >= 1"), "{err}");
    let err = e("closed_loop = true\n", "");
    assert!(err.contains("workloads.0.gap: is the closed loop's (closed_loop = true)"), "{err}");
    let err = e("workers = 8", "workers = [\"h1\", \"h2\"]");
    assert!(err.contains("workloads.0.workers: a list of workers needs its `aggregator`"), "{err}");
    let err = e("workers = 8", "aggregator = \"h0\"\nworkers = [\"h1\"]\nhosts = [\"h2\"]");
    assert!(err.contains("workloads.0.hosts: is what a number of workers draws from"), "{err}");
    let err = e("workers = 8", "workers = \"all\"");
    assert!(
        err.contains(
            "workers is a list of hosts ([\"h1\", \"h2\"]) or how many each job draws (8)"
        ),
        "{err}"
    );
}

const BURSTS: &str = r#"name = "b"
duration = "10s"
[topology]
kind = "two-path"
[[flows]]
from = "src"
to = "dst"
paths = 2
[[workloads]]
kind = "bursts"
from = "xb0"
to = "dst"
to_addr = 1
rate = "50Mbps"
on_mean = "200ms"
off_mean = "1s"
"#;

/// A burst source reads with its defaults (Pareto bursts of shape 1.5, exponential gaps, the
/// mtu's datagrams), makes no flow, and has its periods drawn; a bad value is an error at its
/// key, with the reason.
#[test]
fn a_burst_source_reads_with_defaults_and_bad_values_are_errors_at_their_key() {
    let e = Experiment::parse(BURSTS, "e.toml").unwrap();
    let s = &e.points[0].scenario;
    let Workload::Bursts(b) = &s.workloads[0] else { panic!("{:?}", s.workloads[0]) };
    assert_eq!((b.on_dist, b.off_dist, b.shape), (Spread::Pareto, Spread::Exponential, 1.5));
    assert_eq!((b.packet, b.stop, b.from_addr, b.to_addr), (None, None, 0, 1));
    let hosts = s.topology.expand().unwrap().hosts;
    assert_eq!(expand_workloads(s, &hosts).unwrap().len(), 1, "only the written flow");
    let sources = mpquic_scenario::bursts::sources(s);
    assert_eq!((sources.len(), sources[0].payload), (1, 1400));
    assert!(!sources[0].on.is_empty());
    let e = |from: &str, to: &str| error(&BURSTS.replace(from, to));
    let err = e("to_addr = 1", "to_addr = 2");
    assert!(
        err.starts_with("e.toml:13:11: workloads.0.to_addr: 2: `dst` has addresses 0..=1"),
        "{err}"
    );
    let err = e("to_addr = 1", "from_addr = 1");
    assert!(err.contains("workloads.0.from_addr: 1: `xb0` has addresses 0..=0"), "{err}");
    let err = e("\"xb0\"", "\"dst\"");
    assert!(err.contains("workloads.0.to: bursts from `dst` to itself"), "{err}");
    let err = e("\"xb0\"", "\"xc0\"");
    assert!(err.contains("workloads.0.from: no host `xc0`"), "{err}");
    let err = e("\"200ms\"", "\"0s\"");
    assert!(err.starts_with("e.toml:15:11: workloads.0.on_mean: must be > 0"), "{err}");
    let err = e("\"1s\"", "\"0s\"");
    assert!(err.contains("workloads.0.off_mean: must be > 0"), "{err}");
    let err = e("\"1s\"\n", "\"1s\"\nshape = 1.0\n");
    assert!(err.contains("workloads.0.shape: 1: a Pareto shape must be > 1"), "{err}");
    let err = e("\"1s\"\n", "\"1s\"\npacket = 70000\n");
    assert!(
        err.contains("workloads.0.packet: 70000 bytes: a datagram's payload is 1..=65507"),
        "{err}"
    );
    let err = e("\"1s\"\n", "\"1s\"\nstart = \"2s\"\nstop = \"1s\"\n");
    assert!(err.contains("workloads.0.stop: must be after start"), "{err}");
    let err = e("\"1s\"\n", "\"1s\"\non_dist = \"weibull\"\n");
    assert!(
        err.contains("unknown variant `weibull`, expected one of `fixed`, `exponential`, `pareto`"),
        "{err}"
    );
    let err = e("\"50Mbps\"", "\"0Mbps\"");
    assert!(err.contains("rate `0Mbps` must be positive"), "{err}");
    let err = e("\"1s\"\n", "\"1s\"\nburst = 3\n");
    assert!(err.contains("unknown field `burst`"), "{err}");
}
