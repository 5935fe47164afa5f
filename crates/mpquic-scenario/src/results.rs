//! An experiment's output, the same for every backend: [`ExperimentResults`] is the
//! `experiment.json` that `mpquic-sim run` and `mpquic-testbed run` write (one derived,
//! versioned schema), and [`ExperimentResults::tables`] the `tables.md` made from it. A
//! backend hands over a [`RunEntry`] per run it finished; the summary over seeds, the metric
//! definitions, the notes and the tables are made here, once.
//!
//! Files written before the schema had a version (`schema` absent: 0) read into the same type:
//! the simulator's rows had no `point`, the testbed's no `series` or `x`, and called the load
//! `host_loadavg_1min`; the missing fields read as empty. Their tables re-derive from their
//! `summary` and `report`, where they recorded one.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

use crate::analyses::{self, BackendKind};
use crate::metrics::{short, summarize, Metrics, SummaryRow, CATALOGUE};
use crate::model::FlowKind;
use crate::sections::{ReportSpec, TableSpec};
use crate::tables::markdown;
use crate::Experiment;

/// The version of the schema this crate writes.
pub const SCHEMA: u32 = 1;

/// `experiment.json`: what was run, every run's metrics, and the summary per sweep point.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ExperimentResults {
    /// The schema's version ([`SCHEMA`]; 0 for a file written before versions).
    #[serde(default)]
    pub schema: u32,
    /// The experiment's name.
    pub experiment: String,
    /// The backend that ran it (`sim`, `netns`).
    #[serde(default)]
    pub backend: String,
    /// The experiment file, as given on the command line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// The command that reproduces the output.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// The file's scenario as written (its sweep, seeds and report with it): a record of the
    /// input, not read back.
    #[serde(default)]
    pub scenario: Value,
    /// The seeds each point ran with.
    #[serde(default)]
    pub seeds: Vec<u64>,
    /// What was computed and tabulated.
    #[serde(default)]
    pub report: Option<ReportSpec>,
    /// Each reported metric's meaning.
    #[serde(default)]
    pub metrics: BTreeMap<String, String>,
    /// What the backend could not compute of the report.
    #[serde(default)]
    pub notes: Vec<String>,
    /// Every finished run, in the order the backend ran them.
    pub runs: Vec<RunEntry>,
    /// The runs (or their analyses) that failed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failed: Vec<FailedRun>,
    /// Per sweep point: the median, min and max of each metric over its runs.
    pub summary: Vec<SummaryRow>,
    /// Per analysis that gives a table of rows per run: the rows of every run.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub analyses: BTreeMap<String, Vec<AnalysisRow>>,
}

/// One finished run. Deterministic in the simulator: the same run gives the same entry
/// (wall-clock time is no part of it, so the output does not depend on how the runs were
/// spread over threads or machines).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct RunEntry {
    /// Its point (`axis=value,...`; empty without axes).
    #[serde(default)]
    pub point: String,
    /// Its series in the sweep plot (the values of the axes other than x).
    #[serde(default)]
    pub series: String,
    /// Its x in the sweep plot.
    #[serde(default)]
    pub x: f64,
    /// Its seed.
    pub seed: u64,
    /// The round it ran in, from 1 (the testbed interleaves the points round by round).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub round: Option<usize>,
    /// Where its per-run output is (the testbed's `result.json`, plots and series).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dir: Option<String>,
    /// The host's 1-minute load average at its start (the testbed: a shared host's noise).
    #[serde(default, alias = "host_loadavg_1min", skip_serializing_if = "Option::is_none")]
    pub host_load_1min: Option<f64>,
    /// The hypervisor's CPU steal over it, % of the host's CPU time (the testbed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_steal_pct: Option<f64>,
    /// The report's metrics (JSON has no NaN: a metric with no value is written `null`).
    #[serde(deserialize_with = "nan_for_null")]
    pub metrics: Metrics,
}

/// A run, or one analysis of it, that failed.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FailedRun {
    /// Its point's directory or name.
    pub point: String,
    /// Its round, from 1.
    pub round: usize,
    /// The analysis that failed (none: the run itself).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub analysis: Option<String>,
    /// Why.
    pub error: String,
}

/// One row of an analysis's per-run table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AnalysisRow {
    /// The run's point.
    pub point: String,
    /// The run's round, from 1.
    pub round: usize,
    /// (column, value), in column order (a JSON object in that order).
    #[serde(with = "ordered")]
    pub values: Vec<(String, Value)>,
}

impl ExperimentResults {
    /// The output of `e` run by `backend`, from its finished runs: the summary per point (of
    /// the runs whose `point` is that point's name), the definitions of the report's metrics
    /// and the notes on what `backend` does not compute.
    pub fn new(
        e: &Experiment,
        backend: BackendKind,
        file: &str,
        command: Option<String>,
        runs: Vec<RunEntry>,
    ) -> ExperimentResults {
        let s = &e.base;
        let report = s.report.clone();
        ExperimentResults {
            schema: SCHEMA,
            experiment: s.name.clone(),
            backend: backend.name().to_string(),
            file: Some(file.to_string()),
            command,
            scenario: serde_json::to_value(s).unwrap_or(Value::Null),
            seeds: s.seeds.clone(),
            metrics: report.as_ref().map(definitions).unwrap_or_default(),
            notes: report
                .as_ref()
                .map(|r| analyses::not_computed(r, backend))
                .unwrap_or_default()
                .into_iter()
                .chain(kernel_flows_run_as_quic(e, backend))
                .chain(runs_with_steal(&runs))
                .collect(),
            report,
            summary: summaries(e, &runs),
            runs,
            failed: vec![],
            analyses: BTreeMap::new(),
        }
    }

    /// `tables.md`: the report's tables over the summary (one of every metric when the report
    /// names none), then each analysis's table of rows per run.
    pub fn tables(&self) -> String {
        let Some(report) = &self.report else { return String::new() };
        let metric_tables = table_specs(&self.experiment, report);
        let analysis_tables = self.analyses.iter().map(|(name, rows)| {
            let title = analyses::find(name).and_then(|a| a.table).unwrap_or(name);
            rows_markdown(title, rows)
        });
        let tables = metric_tables.iter().map(|t| markdown(t, &self.summary));
        tables.chain(analysis_tables).collect::<Vec<_>>().join("\n")
    }

    /// Write `experiment.json` and `tables.md` into `out`; returns the tables.
    pub fn write(&self, out: &Path) -> Result<String, String> {
        std::fs::create_dir_all(out).map_err(|e| fail(out, &e))?;
        let json = serde_json::to_string_pretty(self).map_err(|e| e.to_string())?;
        let path = out.join("experiment.json");
        std::fs::write(&path, json).map_err(|e| fail(&path, &e))?;
        let tables = self.tables();
        let path = out.join("tables.md");
        std::fs::write(&path, &tables).map_err(|e| fail(&path, &e))?;
        Ok(tables)
    }

    /// Read an `experiment.json` (of this schema or an older one), or a gzip'd one
    /// (`experiment.json.gz`, as `results/` keeps them in git).
    pub fn read(path: &Path) -> Result<ExperimentResults, String> {
        let file = std::fs::File::open(path).map_err(|e| fail(path, &e))?;
        let gzipped = path.extension().is_some_and(|ext| ext == "gz");
        let reader: Box<dyn std::io::Read> =
            if gzipped { Box::new(flate2::read::GzDecoder::new(file)) } else { Box::new(file) };
        serde_json::from_reader(std::io::BufReader::new(reader)).map_err(|e| fail(path, &e))
    }
}

/// The simulator has no kernel stack: it runs a flow of kind `kernel-tcp` or `kernel-mptcp` as an
/// mpquic connection with the library's controller of that name (see `FlowSpec::kind`). A note
/// per such flow and point, so that a row labelled with a kernel kind is not read as the kernel's.
fn kernel_flows_run_as_quic(e: &Experiment, backend: BackendKind) -> Vec<String> {
    if backend != BackendKind::Sim {
        return vec![];
    }
    let mut notes = vec![];
    for point in &e.points {
        let s = &point.scenario;
        let name = if point.labels.is_empty() { s.name.clone() } else { point.name() };
        for (i, flow) in s.flows.iter().enumerate().filter(|(_, f)| f.kind != FlowKind::Mpquic) {
            let controller = flow.controller.as_ref().unwrap_or(&s.controller).text();
            notes.push(format!(
                "sim: {name}: flows.{i} (kind = {}) ran as an mpquic connection with the \
                 library's `{controller}` (the simulator has no kernel stack)",
                flow.kind.name()
            ));
        }
    }
    notes
}

/// CPU steal above this share of the host's CPU time (%) makes a testbed run's timing suspect:
/// on this project's VM, runs with bursts of 12-27% had single-path controls 10-20% off.
pub const STEAL_SUSPECT_PCT: f64 = 5.0;

/// A note naming the runs during which the hypervisor took more than [`STEAL_SUSPECT_PCT`] of
/// the host's CPU, so that their numbers are not read as the stack's alone.
fn runs_with_steal(runs: &[RunEntry]) -> Option<String> {
    let suspect: Vec<String> = runs
        .iter()
        .filter_map(|r| Some((r, r.host_steal_pct.filter(|&s| s > STEAL_SUSPECT_PCT)?)))
        .map(|(r, steal)| match r.round {
            Some(round) => format!("{} round {round} ({steal:.1}%)", r.point),
            None => format!("{} seed {} ({steal:.1}%)", r.point, r.seed),
        })
        .collect();
    (!suspect.is_empty()).then(|| {
        format!(
            "{} of {} runs had more than {STEAL_SUSPECT_PCT}% of the host's CPU stolen by the \
             hypervisor, so their timing is suspect: {}",
            suspect.len(),
            runs.len(),
            suspect.join(", ")
        )
    })
}

/// An I/O or parse error of `path`, as the reader sees it.
fn fail(path: &Path, e: &dyn std::fmt::Display) -> String {
    format!("{}: {e}", path.display())
}

/// The per-point summaries of `runs`, in the order of the experiment's points: each point's
/// series and x as the sweep plot places it, and its axis values.
pub fn summaries(e: &Experiment, runs: &[RunEntry]) -> Vec<SummaryRow> {
    e.points
        .iter()
        .map(|point| {
            let name = point.name();
            let mine: Vec<Metrics> =
                runs.iter().filter(|r| r.point == name).map(|r| r.metrics.clone()).collect();
            let (series, x) = point.place(&e.base);
            SummaryRow { labels: point.labels.clone(), ..summarize(&series, x, &mine) }
        })
        .collect()
}

/// The report's tables, or one of every metric titled with the experiment's name.
fn table_specs(experiment: &str, report: &ReportSpec) -> Vec<TableSpec> {
    if !report.table.is_empty() {
        return report.table.clone();
    }
    vec![TableSpec {
        title: experiment.to_string(),
        metrics: report.metrics.clone(),
        only: Default::default(),
        sum: vec![],
        compare: vec![],
    }]
}

/// The meaning of each metric the report asks for: the catalogue's, then the analyses'.
fn definitions(report: &ReportSpec) -> BTreeMap<String, String> {
    let asked = |name: &str| report.metrics.iter().any(|m| m.split('@').next() == Some(name));
    let mut out: BTreeMap<String, String> = CATALOGUE
        .iter()
        .filter(|c| asked(c.name))
        .map(|c| (c.name.to_string(), c.meaning.to_string()))
        .collect();
    out.extend(analyses::definitions(report));
    out
}

/// A markdown table of an analysis's rows (every row has the same columns) under `title`,
/// each row led by its run's point and round.
pub fn rows_markdown(title: &str, rows: &[AnalysisRow]) -> String {
    let Some(first) = rows.first() else {
        return format!("### {title}\n\n(no runs)\n");
    };
    let columns: Vec<&str> = first.values.iter().map(|(c, _)| c.as_str()).collect();
    let mut out = format!("### {title}\n\n| point | round | {} |\n", columns.join(" | "));
    out += &format!("|{}\n", "---|".repeat(columns.len() + 2));
    for row in rows {
        let cells: Vec<String> = row.values.iter().map(|(_, v)| cell(v)).collect();
        out += &format!("| {} | {} | {} |\n", row.point, row.round, cells.join(" | "));
    }
    out
}

/// A value as a table cell: numbers short (as the report's tables), strings bare, null as `-`.
fn cell(v: &Value) -> String {
    match v {
        Value::Null => "-".into(),
        Value::String(s) => s.clone(),
        Value::Bool(b) => if *b { "yes" } else { "NO" }.into(),
        Value::Number(n) => n.as_f64().map_or_else(|| n.to_string(), short),
        other => other.to_string(),
    }
}

/// Metrics whose `null`s (how JSON writes NaN) read back as NaN.
fn nan_for_null<'de, D: Deserializer<'de>>(d: D) -> Result<Metrics, D::Error> {
    let m: BTreeMap<String, Option<f64>> = Deserialize::deserialize(d)?;
    Ok(m.into_iter().map(|(k, v)| (k, v.unwrap_or(f64::NAN))).collect())
}

/// (key, value) pairs as a JSON object in their order (serde_json's own map sorts its keys).
mod ordered {
    use serde::de::{MapAccess, Visitor};
    use serde::{Deserializer, Serializer};
    use serde_json::Value;

    pub fn serialize<S: Serializer>(pairs: &[(String, Value)], s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(pairs.iter().map(|(k, v)| (k, v)))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<(String, Value)>, D::Error> {
        struct Pairs;
        impl<'de> Visitor<'de> for Pairs {
            type Value = Vec<(String, Value)>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut out = vec![];
                while let Some(entry) = map.next_entry()? {
                    out.push(entry);
                }
                Ok(out)
            }
        }
        d.deserialize_map(Pairs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn experiment() -> Experiment {
        let text = r#"
name = "t"
duration = "1s"
seeds = [1, 2]
[topology]
kind = "two-path"
[[flows]]
from = "src"
to = "dst"
[[sweep]]
name = "k"
values = [2, 4]
set = ["flows.0.paths"]
[report]
metrics = ["fct_mean_ms"]
"#;
        Experiment::parse(text, "t.toml").unwrap()
    }

    fn entry(point: &str, seed: u64, v: f64) -> RunEntry {
        let metrics = [("fct_mean_ms".to_string(), v)].into();
        RunEntry { point: point.into(), seed, metrics, ..RunEntry::default() }
    }

    #[test]
    fn the_simulator_notes_each_kernel_flow_it_ran_as_quic() {
        let text = r#"
name = "t"
duration = "1s"
controller = "lia"
[topology]
kind = "two-path"
[[flows]]
from = "src"
to = "dst"
[[sweep]]
name = "controller"
values = ["amp", "kernel-mptcp"]
[sweep.when.amp]
"flows.0.controller" = "amp"
[sweep.when.kernel-mptcp]
"flows.0.kind" = "kernel-mptcp"
"flows.0.controller" = "cubic"
[report]
metrics = ["fct_mean_ms"]
"#;
        let e = Experiment::parse(text, "t.toml").unwrap();
        let notes = |backend| ExperimentResults::new(&e, backend, "t.toml", None, vec![]).notes;
        assert_eq!(
            notes(BackendKind::Sim),
            ["sim: controller=kernel-mptcp: flows.0 (kind = kernel-mptcp) ran as an mpquic \
              connection with the library's `cubic` (the simulator has no kernel stack)"]
        );
        assert!(notes(BackendKind::Netns).is_empty(), "the testbed runs the kernel's");
    }

    #[test]
    fn runs_with_cpu_steal_above_the_threshold_are_named_in_a_note() {
        let run = |point: &str, round, steal| RunEntry {
            round: Some(round),
            host_steal_pct: steal,
            ..entry(point, 1, 1.0)
        };
        let runs = vec![run("k=2", 1, Some(0.3)), run("k=4", 1, Some(12.25)), run("k=2", 2, None)];
        let r = ExperimentResults::new(&experiment(), BackendKind::Netns, "t.toml", None, runs);
        assert_eq!(
            r.notes,
            ["1 of 3 runs had more than 5% of the host's CPU stolen by the hypervisor, so their \
              timing is suspect: k=4 round 1 (12.2%)"]
        );
        let quiet = vec![run("k=2", 1, Some(STEAL_SUSPECT_PCT))];
        assert!(ExperimentResults::new(&experiment(), BackendKind::Netns, "t.toml", None, quiet)
            .notes
            .is_empty());
    }

    #[test]
    fn the_summary_groups_runs_by_point_and_nan_survives_json_as_null() {
        let e = experiment();
        let runs = vec![entry("k=2", 1, 1.0), entry("k=4", 1, 5.0), entry("k=2", 2, f64::NAN)];
        let r = ExperimentResults::new(&e, BackendKind::Netns, "t.toml", None, runs);
        let medians: Vec<f64> = r.summary.iter().map(|s| s.metrics["fct_mean_ms"].median).collect();
        assert_eq!(medians, [1.0, 5.0]);
        assert_eq!(r.summary[0].labels, [("k".to_string(), "2".to_string())]);
        let text = serde_json::to_string(&r).unwrap();
        let back: ExperimentResults = serde_json::from_str(&text).unwrap();
        assert!(back.runs[2].metrics["fct_mean_ms"].is_nan());
        assert_eq!((back.schema, back.backend.as_str()), (SCHEMA, "netns"));
        assert_eq!(back.tables(), r.tables());
        assert!(r.tables().starts_with("### t\n\n| k | fct_mean_ms |\n"), "{}", r.tables());
    }

    #[test]
    fn an_old_testbed_file_reads_with_its_load_and_analysis_columns_in_order() {
        // As the file's text has it (a `Value` would sort the keys).
        let old = r#"{
            "experiment": "pk", "backend": "netns",
            "runs": [{"point": "", "round": 1, "seed": 1, "dir": "d",
                      "host_loadavg_1min": 1.5, "metrics": {"m": null}}],
            "summary": [],
            "analyses": {"pathkeep": [{"point": "pk", "round": 1,
                                       "values": {"path": 0, "open": true, "MB": 62.4449}}]}
        }"#;
        let r: ExperimentResults = serde_json::from_str(old).unwrap();
        assert_eq!((r.schema, r.runs[0].host_load_1min), (0, Some(1.5)));
        assert!(r.runs[0].metrics["m"].is_nan());
        let columns: Vec<&str> =
            r.analyses["pathkeep"][0].values.iter().map(|(c, _)| c.as_str()).collect();
        assert_eq!(columns, ["path", "open", "MB"]);
    }

    #[test]
    fn an_analysis_table_has_a_row_per_run_and_entry_with_its_point_and_round() {
        let row = |open: bool, mb: f64| AnalysisRow {
            point: "pk".into(),
            round: 1,
            values: vec![("open".into(), json!(open)), ("MB".into(), json!(mb))],
        };
        assert_eq!(
            rows_markdown("t", &[row(true, 62.4449), row(false, 0.0)]),
            "### t\n\n| point | round | open | MB |\n|---|---|---|---|\n\
             | pk | 1 | yes | 62.4 |\n| pk | 1 | NO | 0 |\n"
        );
    }
}
