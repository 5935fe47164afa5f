//! The named analyses (`[report] analyses`, computed by mpquic-scenario from a run's record)
//! on the simulator's records of short scripted runs of the E3 and E4 files, and the refusal of
//! an analysis no backend has.

use mpquic_scenario::analyses::{self, BackendKind, Run};
use mpquic_sim::report::Report;
use mpquic_sim::scenario::{Experiment, Scenario};
use mpquic_sim::Sim;

fn file(name: &str) -> String {
    let path = format!("{}/../../experiments/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The E3 file with its first phase in miniature: cross traffic on path 1 during (8, 16) ms
/// instead of (1, 2) s, the run 20 ms.
fn scaled_e3() -> String {
    file("E3-traffic-shifting.toml")
        .replace("\"flows.1.start\" = \"100ms\"", "\"flows.1.start\" = \"8ms\"")
        .replace("\"flows.1.stop\" = \"200ms\"", "\"flows.1.stop\" = \"16ms\"")
        .replace("\"flows.2.start\" = \"200ms\"", "\"flows.2.start\" = \"16ms\"")
        .replace("\"flows.2.stop\" = \"300ms\"", "\"flows.2.stop\" = \"20ms\"")
        .replace("duration = \"400ms\"", "duration = \"20ms\"")
}

/// The report's analysis metrics of `point` run with seed 1 (`file`: the experiment's
/// scenario as written).
fn analysed(e: &Experiment, point: &str, metrics: &[&str]) -> Vec<f64> {
    let p = e.points.iter().find(|p| p.name() == point).unwrap_or_else(|| panic!("{point}"));
    let mut s: Scenario = p.scenario.clone();
    s.seed = 1;
    let mut report = s.report.clone().expect("a [report]");
    report.metrics = metrics.iter().map(|m| m.to_string()).collect();
    let mut sim = Sim::new(s).unwrap();
    sim.run();
    let r = Report::new(&mut sim);
    let record = r.record(&sim);
    let run = Run { record: &record, point: &sim.scenario, file: &e.base };
    let m = analyses::compute(&report, &run, BackendKind::Sim);
    metrics.iter().map(|k| m[*k]).collect()
}

/// E3's first phase in miniature (cross traffic on path 1 during (8, 16) ms instead of
/// (1, 2) s): AMP moves the 2-path flow's traffic off path 1 within a few ms, by the
/// definition of `shift_time`; the 2-path flow is no cross flow of its own.
#[test]
fn amp_shifts_traffic_by_the_e3_definition() {
    let text = scaled_e3();
    let e = Experiment::parse(&text, "E3-traffic-shifting.toml").unwrap();
    let m = analysed(
        &e,
        "phase=100ms,controller=amp",
        &[
            "shift_time.shift_ms@cross-a",
            "shift_time.pre_share@cross-a",
            "shift_time.during_share@cross-a",
            "shift_time.during_rate_gbps@cross-a",
            "shift_time.shift_ms@mp",
        ],
    );
    let [shift, pre, during, rate, own] = m[..] else { unreachable!() };
    assert!(shift > 0.0 && shift < 6.0, "{m:?}");
    assert!(pre > 0.3 && during < 0.5 * pre, "{m:?}");
    assert!(rate > 1.0, "{m:?}");
    assert!(own.is_nan(), "{m:?}");
}

/// E4's timeline scaled to 10 ms phases: each phase has the rates of the flows present, its
/// boundaries follow `path_times` and `start`s (f1's paths 1, 2, 2, 3, 3; f4 only from phase
/// 3, f2 only in phase 5) and its Jain's index is in (0, 1]; the dctcp point, whose flows run on
/// one path, keeps the file's phases.
#[test]
fn e4_phases_follow_the_file_s_timeline() {
    let text = file("E4-coexistence.toml")
        .replace("[\"0ms\", \"100ms\", \"300ms\"]", "[\"0ms\", \"10ms\", \"30ms\"]")
        .replace("start = \"400ms\"", "start = \"40ms\"")
        .replace("start = \"200ms\"", "start = \"20ms\"")
        .replace("duration = \"500ms\"", "duration = \"50ms\"");
    let e = Experiment::parse(&text, "E4-coexistence.toml").unwrap();
    let phase = |metric: &'static str| (1..=6).map(move |k| format!("phases.{metric}[{k}]"));
    let mut names: Vec<String> = phase("jain").collect();
    names.extend(phase("paths").map(|m| m + "@f1"));
    names.extend(phase("rate_gbps").map(|m| m + "@f4"));
    names.extend(phase("rate_gbps").map(|m| m + "@f2"));
    names.push("phases.rate_mbps[1]@f3".into());
    names.push("phases.rate_gbps[1]@f3".into());
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    for (point, f1_paths) in
        [("controller=xmp", [1.0, 2.0, 2.0, 3.0, 3.0]), ("controller=dctcp", [1.0; 5])]
    {
        let m = analysed(&e, point, &names);
        let (jain, rest) = m.split_at(6);
        let (paths, rest) = rest.split_at(6);
        let (f4, rest) = rest.split_at(6);
        let (f2, f3) = rest.split_at(6);
        assert!(jain[..5].iter().all(|j| *j > 0.0 && *j <= 1.0), "{point}: {jain:?}");
        assert!(jain[5].is_nan(), "{point}: only 5 phases: {jain:?}");
        assert_eq!(paths[..5], f1_paths, "{point}");
        assert!(f4[..2].iter().all(|r| r.is_nan()), "{point}: f4 starts at 20 ms: {f4:?}");
        assert!(f4[2..5].iter().all(|r| *r > 0.5), "{point}: {f4:?}");
        assert!(f2[..4].iter().all(|r| r.is_nan()) && f2[4] > 0.5, "{point}: {f2:?}");
        assert!((f3[0] - 1e3 * f3[1]).abs() < 1e-6 * f3[0], "{point}: {f3:?}");
    }
}

/// An analysis no backend has, or a metric its analysis does not have, is refused at its line
/// (the same check refuses it in the testbed: the list is shared).
#[test]
fn an_unknown_analysis_is_refused_at_its_line() {
    let text = file("E3-traffic-shifting.toml");
    let refused = |text: &str| Experiment::parse(text, "E3.toml").unwrap_err().to_string();
    let line = |needle: &str| text.lines().position(|l| l.contains(needle)).unwrap() + 1;
    let asked = "analyses = [\"shift_time\", \"shift\"]";
    let e = refused(&text.replace(asked, "analyses = [\"shift_tme\", \"shift\"]"));
    let at = format!("E3.toml:{}:", line(asked));
    assert!(e.starts_with(&at) && e.contains("unknown analysis `shift_tme`"), "{e}");
    let e = refused(&text.replacen("shift_time.pre_share@cross-a", "shift_time.pre@cross-a", 1));
    assert!(e.contains("`shift_time` has no metric `pre`"), "{e}");
    // A metric of an analysis the report does not ask for is no metric at all.
    let e = refused(&text.replace(asked, "analyses = []"));
    assert!(e.contains("unknown metric `shift_time.shift_ms`"), "{e}");
}

/// The phases analysis needs its phase: `phases.jain` without `[k]` is refused.
#[test]
fn a_phase_metric_needs_its_phase() {
    let text = file("E4-coexistence.toml").replacen("\"phases.jain[1]\"", "\"phases.jain\"", 1);
    let e = Experiment::parse(&text, "E4.toml").unwrap_err().to_string();
    assert!(e.contains("`phases.jain` needs `[...]`"), "{e}");
}

/// The testbed's `shift` computed here too (the windows are shared), on the testbed's E3 file
/// cut after the first cross flow: the multipath flow's share of link a before the cross flow
/// arrives is most of the link, and yields to the cross flow (by 0.95 s after its start).
#[test]
fn the_testbed_s_shift_windows_read_the_simulated_links() {
    let text = file("E3-traffic-shifting-testbed.toml");
    let mut e = Experiment::parse(&text, "E3-traffic-shifting-testbed.toml").unwrap();
    e.points.iter_mut().for_each(|p| p.scenario.duration = mpquic_sim::scenario::Dur::ms(2000));
    let m = analysed(
        &e,
        "cross=kernel,controller=amp",
        &[
            "shift.before_mbps@cross-a",
            "shift.during_mbps@cross-a",
            "shift.cross_mbps@cross-a",
            "shift.other_link_mbps@cross-a",
            "shift.to_80pct_ms@cross-a",
        ],
    );
    let [before, during, cross, other, to_80pct] = m[..] else { unreachable!() };
    // Wire bytes on a 50 Mbit/s link (a bin may hold a packet that ends in the next one).
    assert!(before > 35.0 && before <= 51.0, "{m:?}");
    assert!(during < 0.6 * before && cross > 15.0, "{m:?}");
    assert!(other > 35.0, "{m:?}");
    assert!(to_80pct > 0.0 && to_80pct <= 1000.0, "{m:?}");
}

/// A run's record, as the simulator converts it: the 2-path flow's first path opens at its
/// start, its second in virtual time after, each flow's goodput series adds up to the bytes it delivered, and the
/// outcome is the report's.
#[test]
fn the_run_record_has_series_and_path_openings() {
    let text = scaled_e3();
    let e = Experiment::parse(&text, "E3-traffic-shifting.toml").unwrap();
    let mut s: Scenario = e.points[0].scenario.clone();
    s.seed = 1;
    let bucket_s = s.output.goodput_interval.secs();
    let mut sim = Sim::new(s).unwrap();
    sim.run();
    let r = Report::new(&mut sim);
    let record = r.record(&sim);
    assert_eq!(record.outcome.flows.len(), r.flows.len());
    for f in &r.flows {
        let series = record.flow_series(&f.name).expect("a series per flow");
        let bytes: f64 = series.goodput.iter().map(|(_, bps)| bps * bucket_s / 8.0).sum();
        assert!((bytes - f.delivered_bytes as f64).abs() < 1.0, "{}: {bytes}", f.name);
    }
    let mp = r.flows.iter().find(|f| f.paths == 2).expect("the 2-path flow");
    let opened: Vec<_> = record
        .path_events(&mp.name)
        .filter(|e| e.kind == mpquic_scenario::record::PathEventKind::Opened)
        .collect();
    assert_eq!((opened[0].path, opened[0].t_s), (0, Some(0.0)), "{opened:?}");
    assert!(opened.len() > 1, "{:?}", record.path_events);
    assert!(opened[1..].iter().all(|e| e.t_s.is_some_and(|t| t > 0.0 && t < 0.02)), "{opened:?}");
    let facts = record.flows.iter().find(|f| f.flow == mp.name).expect("the 2-path flow's facts");
    let paths = facts.paths.as_ref().expect("its paths");
    assert!(paths.iter().all(|p| p.first_link.is_some() && p.last_link.is_some()), "{paths:?}");
    assert_eq!(facts.into_link, paths[0].last_link);
}
