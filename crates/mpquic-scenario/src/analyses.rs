//! The named analyses a `[report] analyses = [...]` may ask for, declared and computed once for
//! both backends: each one's metrics with their meaning, which backends fill the series it
//! reads, and its computation over a run's [`RunRecord`]. An analysis reads more of a run than
//! the per-run [`Outcome`](crate::metrics::Outcome) carries (time series of links and receivers,
//! flows' path openings, the aggregators' jobs), which each backend puts in its record; a
//! backend that does not fill what one reads reports its metrics as NaN (`-` in the tables)
//! and says so.
//!
//! Adding one: its entry in [`ANALYSES`] and a module with its computation (as
//! [`crate::shift`]), plus, if it reads something no record has yet, a field of
//! [`RunRecord`] each backend fills where it can.
//!
//! Its metrics are named `<analysis>.<metric>[@group]` in `report.metrics`; an analysis with a
//! [`Analysis::selector`] takes one as `<analysis>.<metric>[<value>]` (`phases.jain[3]`). A
//! file naming an analysis or metric not declared here is refused at its line in both backends.

use crate::error::{at, ScenarioError};
use crate::metrics::{in_group, Metrics};
use crate::model::Scenario;
use crate::record::RunRecord;
use crate::sections::ReportSpec;

pub use crate::record::{Compute, Row, Rows, Run};

/// Which backend runs an experiment file: the name it writes in its output and what it can
/// measure (each [`Analysis::backends`] lists the kinds that compute it). The backend itself is
/// a [`crate::sweep::Backend`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BackendKind {
    /// The simulator, `mpquic-sim`.
    Sim,
    /// The netns testbed, `mpquic-testbed`.
    Netns,
}

impl BackendKind {
    /// The name it goes by in messages and docs.
    pub fn name(self) -> &'static str {
        match self {
            BackendKind::Sim => "sim",
            BackendKind::Netns => "netns",
        }
    }
}

/// One named analysis.
#[derive(Debug)]
pub struct Analysis {
    /// The name a report asks for.
    pub name: &'static str,
    /// What it measures, in a line.
    pub about: &'static str,
    /// The backends that compute it.
    pub backends: &'static [BackendKind],
    /// Its metrics, with what each means.
    pub metrics: &'static [(&'static str, &'static str)],
    /// The `[value]` after a metric's name, if its metrics take one.
    pub selector: Option<Selector>,
    /// The title of its table of rows per run, if it gives one (`tables.md` prints it run by
    /// run, not as a median over seeds).
    pub table: Option<&'static str>,
    /// Its metrics' computation (None: it has no metrics).
    pub compute: Option<Compute>,
    /// Its table's rows of a run, if it gives a table.
    pub rows: Option<Rows>,
}

/// What an analysis's `[value]` means, and its check when the file is read.
#[derive(Debug)]
pub struct Selector {
    /// What it names.
    pub about: &'static str,
    /// Why a metric's (`metric`, selector) names nothing in the point `point` of the experiment
    /// file `file`, if it does not (a metric that would read NaN in every run).
    pub check:
        fn(file: &Scenario, point: &Scenario, metric: &str, selector: &str) -> Result<(), String>,
}

/// Every analysis of either backend.
pub const ANALYSES: &[Analysis] = &[
    Analysis {
        name: "shift",
        about: "E3: the rest of a cross flow's link before and during the cross flow, in 10 ms \
                bins of the link's sent rate minus the cross flow's receiver rate (windows in \
                crate::shift, for phases of about 1 s); the group names the cross flow",
        backends: &[BackendKind::Netns, BackendKind::Sim],
        metrics: &[
            ("before_mbps", "rate of the rest of the cross flow's link before it starts, Mbit/s"),
            ("during_mbps", "the same 0.2-0.95 s after the cross flow's start, Mbit/s"),
            ("cross_mbps", "the cross flow's receiver rate over that window, Mbit/s"),
            ("other_link_mbps", "sent rate of the other links into its receiver then, Mbit/s"),
            ("to_80pct_ms", "time until the rest's rate fell by 80% of before - during, ms"),
        ],
        selector: None,
        table: None,
        compute: Some(crate::shift::compute),
        rows: None,
    },
    Analysis {
        name: "shift_time",
        about: "E3 (simulator): how fast the run's 2-path flow moves its traffic off the path a \
                cross flow arrives on, from its bytes per path on its host's access links in \
                buckets of output.goodput_interval; the group names the cross flow. Moved: the \
                crossed path's share of the flow's bytes below 0.5 x its pre-cross mean (over \
                the last half of the time from the previous timeline instant to the cross \
                flow's start) in every bucket of a run lasting >= 1 ms",
        backends: &[BackendKind::Sim],
        metrics: &[
            ("shift_ms", "from the cross flow's start to the end of the run's first bucket, ms"),
            ("pre_share", "the crossed path's mean share of the 2-path flow's bytes before"),
            ("during_share", "its mean share over the second half of the cross flow's time"),
            ("during_rate_gbps", "the 2-path flow's wire rate then (both paths), Gbit/s"),
        ],
        selector: None,
        table: None,
        compute: Some(crate::shift_time::compute),
        rows: None,
    },
    Analysis {
        name: "phases",
        about: "E4: the run cut into phases at the instants of the file's timeline as written \
                (flow starts and stops, path_times; 0 and the end; crate::phases), so that \
                every point of a sweep has the same phases; per phase, the group's flows \
                present for the whole phase (testbed: rates from the receivers' series, paths \
                from the clients' reports)",
        backends: &[BackendKind::Netns, BackendKind::Sim],
        metrics: &[
            ("rate_gbps", "their goodput over the phase's second half, summed, Gbit/s"),
            ("rate_mbps", "the same in Mbit/s"),
            ("paths", "their paths established by the middle of the phase, summed"),
            ("jain", "Jain's index of their goodputs over the phase's second half"),
            (
                "link_mbps",
                "the sent rate over the phase's second half of the link direction named after \
                 the phase (`[3,a->b]`), Mbit/s: a subflow's wire rate where it has a link of \
                 its own (XMP Fig. 7; a link's down_at cuts the timeline too)",
            ),
        ],
        selector: Some(Selector {
            about: "the phase, 1 to the number of phases (link_mbps: then `,` and a link)",
            check: crate::phases::check_selector,
        }),
        table: None,
        compute: Some(crate::phases::compute),
        rows: None,
    },
    Analysis {
        name: "paths_end",
        about: "the group's flows' paths at the end of the run, as their client's coupled \
                controller (mpquic-cc) sees them (testbed: the client's report at the end of its \
                transfer, where a closed path is not active)",
        backends: &[BackendKind::Netns, BackendKind::Sim],
        metrics: &[("active", "paths allowed to carry new data at the end (AMP: not suppressed)")],
        selector: None,
        table: None,
        compute: Some(crate::paths_end::compute),
        rows: None,
    },
    Analysis {
        name: "job_phase",
        about: "E7 (testbed): the bottleneck into the aggregator while the jobs ran, and what \
                the background (the group) did meanwhile",
        backends: &[BackendKind::Netns],
        metrics: &[
            ("answer_share", "answers' bytes / bytes sent into the aggregator in the job phase"),
            (
                "queue_p50",
                "median queue into the aggregator in the job phase, busy samples, frames",
            ),
            ("queue_p99", "99th percentile of the same, frames"),
            ("connect_ms", "the aggregator's connection set-up (concurrent handshakes), ms"),
            ("bg_outlasted", "1 when every flow of the group ended no earlier than the aggregator"),
            ("bg_paths_open", "mpquic paths of the group's flows open at the end"),
            ("bg_paths", "mpquic paths of the group's flows"),
        ],
        selector: None,
        table: None,
        compute: Some(crate::job_phase::compute),
        rows: None,
    },
    Analysis {
        name: "pathkeep",
        about: "the CLI's 10 s path idle timeout (testbed): each path of the run's first flow \
                before and after it, a table of rows per run (no metrics)",
        backends: &[BackendKind::Netns],
        metrics: &[],
        selector: None,
        table: Some("pathkeep: each path of the first flow before and after the 10 s idle timeout"),
        compute: None,
        rows: Some(crate::pathkeep::rows),
    },
];

/// The analysis named `name`.
pub fn find(name: &str) -> Option<&'static Analysis> {
    ANALYSES.iter().find(|a| a.name == name)
}

impl Analysis {
    /// Whether `backend` computes it.
    pub fn on(&self, backend: BackendKind) -> bool {
        self.backends.contains(&backend)
    }

    /// Its metric `metric`'s meaning, if it has one.
    pub fn metric(&self, metric: &str) -> Option<&'static str> {
        self.metrics.iter().find(|(k, _)| *k == metric).map(|(_, about)| *about)
    }
}

/// An analysis metric's parts: `phases.jain[3]@f1` is (`phases`, `jain`, `Some("3")`), with
/// the `@group` left out. None for a name without a `.`.
pub fn split(m: &str) -> Option<(&str, &str, Option<&str>)> {
    let name = m.split_once('@').map_or(m, |(n, _)| n);
    let (analysis, metric) = name.split_once('.')?;
    Some(match metric.strip_suffix(']').and_then(|n| n.split_once('[')) {
        Some((metric, selector)) => (analysis, metric, Some(selector)),
        None => (analysis, metric, None),
    })
}

/// One analysis metric a report asks for: `<analysis>.<metric>[<selector>]@<group>`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Asked<'a> {
    /// The metric as written (the key of its value).
    pub key: &'a str,
    /// The analysis.
    pub analysis: &'a str,
    /// The analysis's metric.
    pub metric: &'a str,
    /// What is inside `[...]`, if anything.
    pub selector: Option<&'a str>,
    /// The flows' group it is about: its `@group`, else the report's `group`.
    pub group: Option<&'a str>,
}

/// The report's metrics of the analyses it asks for, in its order (a backend computes those of
/// the analyses it has; the catalogue leaves the others NaN).
pub fn asked(report: &ReportSpec) -> impl Iterator<Item = Asked<'_>> {
    report.metrics.iter().filter_map(move |key| {
        let (analysis, metric, selector) = split(key)?;
        report.analyses.iter().any(|a| a == analysis).then_some(())?;
        let group = key.split_once('@').map(|(_, g)| g).or(report.group.as_deref());
        Some(Asked { key, analysis, metric, selector, group })
    })
}

/// Whether the report's analyses are declared, and every `<analysis>.<metric>` of an analysis
/// it asks for is that analysis's, with a selector where it takes one.
pub fn check(report: &ReportSpec) -> Result<(), ScenarioError> {
    for (i, name) in report.analyses.iter().enumerate() {
        if find(name).is_none() {
            let known: Vec<&str> = ANALYSES.iter().map(|a| a.name).collect();
            return Err(at(
                format!("report.analyses.{i}"),
                format!("unknown analysis `{name}` (known: {})", known.join(", ")),
            ));
        }
    }
    for AskedOperand { index, analysis: a, metric, selector, .. } in asked_operands(report) {
        let name = a.name;
        let fail = |why: String| Err(at(format!("report.metrics.{index}"), why));
        if a.metric(metric).is_none() {
            let known: Vec<&str> = a.metrics.iter().map(|(k, _)| *k).collect();
            return fail(format!(
                "`{name}` has no metric `{metric}` (it has {})",
                known.join(", ")
            ));
        }
        match (&a.selector, selector) {
            (Some(what), None) => {
                return fail(format!("`{name}.{metric}` needs `[...]`: {}", what.about));
            }
            (None, Some(_)) => return fail(format!("`{name}.{metric}` takes no `[...]`")),
            _ => {}
        }
    }
    Ok(())
}

/// An operand of a report's metric (a metric may be an expression of several) that names an
/// analysis the report declares.
struct AskedOperand<'a> {
    /// The report metric's index (where an error points).
    index: usize,
    /// The operand as written.
    operand: &'a str,
    analysis: &'static Analysis,
    metric: &'a str,
    selector: Option<&'a str>,
}

/// Every operand of the report's metrics that names an analysis the report declares, in order.
fn asked_operands(report: &ReportSpec) -> impl Iterator<Item = AskedOperand<'_>> {
    report.metrics.iter().enumerate().flat_map(move |(index, m)| {
        crate::metrics::operands(m).into_iter().filter_map(move |operand| {
            let (name, metric, selector) = split(operand)?;
            let analysis = find(name).filter(|_| report.analyses.iter().any(|r| r == name))?;
            Some(AskedOperand { index, operand, analysis, metric, selector })
        })
    })
}

/// Whether every analysis metric the report of `file` asks for names, in its `[...]`, what
/// there is in the point `point` (the phase and link of `phases.link_mbps[3,a->b]`).
pub fn check_selectors(file: &Scenario, point: &Scenario) -> Result<(), ScenarioError> {
    let Some(report) = &file.report else { return Ok(()) };
    for asked in asked_operands(report) {
        let (Some(Selector { check, .. }), Some(selector)) =
            (&asked.analysis.selector, asked.selector)
        else {
            continue;
        };
        check(file, point, asked.metric, selector).map_err(|why| {
            at(format!("report.metrics.{}", asked.index), format!("`{}`: {why}", asked.operand))
        })?;
    }
    Ok(())
}

/// The definitions of the report's analysis metrics (`<analysis>.<metric>`: meaning, with the
/// backends that compute it), for `experiment.json`.
pub fn definitions(report: &ReportSpec) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = vec![];
    for m in &report.metrics {
        let Some((name, metric, _)) = split(m) else { continue };
        let Some(a) = find(name) else { continue };
        let Some(about) = a.metric(metric) else { continue };
        let key = format!("{name}.{metric}");
        if !out.iter().any(|(k, _)| *k == key) {
            let backends: Vec<&str> = a.backends.iter().map(|b| b.name()).collect();
            out.push((key, format!("{about} ({}: {})", backends.join(", "), a.about)));
        }
    }
    out
}

/// A line for each analysis the report asks for that `backend` does not compute: its metrics
/// read NaN there.
pub fn not_computed(report: &ReportSpec, backend: BackendKind) -> Vec<String> {
    report
        .analyses
        .iter()
        .filter_map(|n| find(n))
        .filter(|a| !a.on(backend))
        .map(|a| {
            let on: Vec<&str> = a.backends.iter().map(|b| b.name()).collect();
            format!(
                "{}: analysis `{}` is computed by {} only: its metrics are NaN (`-`) here",
                backend.name(),
                a.name,
                on.join(", ")
            )
        })
        .collect()
}

/// The indices of the run's flows in `group` (every flow for None).
fn flows_in(record: &RunRecord, group: Option<&str>) -> Vec<usize> {
    let flows = record.flows.iter().enumerate();
    flows.filter(|(_, f)| in_group(f.group.as_deref(), group)).map(|(i, _)| i).collect()
}

/// The report's analysis metrics of one run on `backend` (those of analyses it does not fill
/// the series of are left out: the catalogue's computation has them NaN, and
/// [`not_computed`] says why).
pub fn compute(report: &ReportSpec, run: &Run, backend: BackendKind) -> Metrics {
    asked(report)
        .filter_map(|asked| {
            let compute = find(asked.analysis).filter(|a| a.on(backend))?.compute?;
            let flows = flows_in(run.record, asked.group);
            Some((asked.key.to_owned(), compute(run, asked.metric, asked.selector, &flows)))
        })
        .collect()
}

/// The report's analyses on `backend` that give tables, with their rows of one run.
pub fn tables(
    report: &ReportSpec,
    run: &Run,
    backend: BackendKind,
) -> Vec<(&'static str, Result<Vec<Row>, String>)> {
    let given = report.analyses.iter().filter_map(|name| find(name));
    given.filter(|a| a.on(backend)).filter_map(|a| Some((a.name, (a.rows?)(run)))).collect()
}
