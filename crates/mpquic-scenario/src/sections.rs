//! The sections of an experiment file around its scenario, as the file writes them: the sweep
//! axes (`[[sweep]]`), what to report (`[report]`, its tables) and the sweep plot (`[plot]`).
//! Part of the language: the scenario model holds them, [`crate::experiment`] expands the axes
//! into runs, and the analysis side ([`crate::metrics`], [`crate::analyses`], [`crate::tables`])
//! reads the report from here, never from the experiment that loads it.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use toml::{Table, Value};

/// One sweep axis: each of `values` is written to every field of `set`; `when` adds fields for
/// single values (irregular cases: `[sweep.when.dctcp] "workloads.0.paths" = 1`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Axis {
    /// The axis name (a column of the tables, `x` of a plot).
    pub name: String,
    /// Its values, in order.
    pub values: Vec<Value>,
    /// Dotted field paths each value is written to (`"workloads.0.k"`, `"flows.8.controller"`,
    /// `"transport.max_ack_delay"`); array entries by index, `*` for every entry (`"flows.*.paths"`).
    #[serde(default)]
    pub set: Vec<String>,
    /// Per value (by its label): more fields to set, as dotted paths.
    #[serde(default)]
    pub when: BTreeMap<String, Table>,
}

/// The label of a sweep value: a string as written, other values in TOML form.
pub fn label(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// What to compute per run and tabulate (see [`crate::metrics`]).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
#[serde(deny_unknown_fields)]
pub struct ReportSpec {
    /// The flows the flow metrics are over: those whose group starts with this (default: every
    /// flow). A metric may name its own with `@group` (`"fct_p99_ms@poisson"`).
    #[serde(default)]
    pub group: Option<String>,
    /// The link (direction, `"sw->r"`) the link metrics read.
    #[serde(default)]
    pub link: Option<String>,
    /// Metric names, computed for every run.
    pub metrics: Vec<String>,
    /// Markdown tables of the median (min-max) over seeds, one row per sweep point.
    #[serde(default)]
    pub table: Vec<TableSpec>,
    /// What the metrics mean, recorded in the results JSON.
    #[serde(default)]
    pub definition: String,
    /// Named analyses of a run's raw record, declared in [`crate::analyses`] (`shift`,
    /// `shift_time`, `phases`, ...): an analysis gives metrics, listed in `metrics` as
    /// `<analysis>.<metric>[<selector>][@group]` (a backend that does not compute it reads them
    /// as NaN), or a table of rows per run. A name not declared there is refused.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub analyses: Vec<String>,
}

/// One markdown table (see [`crate::tables`]).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct TableSpec {
    /// Heading.
    pub title: String,
    /// Columns (metrics of the report): median (min-max) over the point's runs.
    pub metrics: Vec<String>,
    /// Rows: only the points with these axis values (`{ cross = "dctcp" }`); default every point.
    #[serde(default, skip_serializing_if = "Table::is_empty")]
    pub only: Table,
    /// Then columns of the sum over the point's runs (counts pooled over seeds, e.g. E5's
    /// eliminations that were right and wrong).
    #[serde(default)]
    pub sum: Vec<String>,
    /// Then columns comparing two points of one axis: a metric's median at a point over its
    /// median at the point that differs only in that axis's value.
    #[serde(default)]
    pub compare: Vec<Compare>,
}

impl TableSpec {
    /// Whether the point with these (axis, value label) pairs is a row of the table.
    pub fn shows(&self, labels: &[(String, String)]) -> bool {
        self.only.iter().all(|(axis, v)| labels.iter().any(|(a, l)| a == axis && *l == label(v)))
    }
}

/// A table column: `metric` at the points where `axis` is `value`, divided by `metric` at the
/// same point with `axis` = `over` (E5: CPU per GB with ESE on over off, at the same size and
/// path count); empty on the other rows.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Compare {
    /// A metric of the report.
    pub metric: String,
    /// A sweep axis.
    pub axis: String,
    /// The value of the rows that get a ratio.
    pub value: Value,
    /// The value of the point they are divided by.
    pub over: Value,
}

/// The sweep plot: panels of metrics against one axis, a line per value of the others.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct PlotSpec {
    /// The axis on x (numeric values; other values are placed at their index).
    pub x: String,
    /// Title.
    pub title: String,
    /// X axis label (default: the axis name).
    #[serde(default)]
    pub x_label: Option<String>,
    /// Panels, top to bottom.
    pub panels: Vec<PanelSpec>,
}

/// One panel of the sweep plot.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct PanelSpec {
    /// A metric of the report.
    pub metric: String,
    /// Y axis label.
    pub label: String,
    /// Log scale.
    #[serde(default)]
    pub log: bool,
}
