//! The report's markdown tables: per sweep point, its axis values, then the median (min-max)
//! of each metric over the point's runs, the sum over its runs, and ratios between two points
//! of one axis ([`crate::experiment::TableSpec`]).

use crate::error::{at, ScenarioError};
use crate::metrics::{cell, short, Spread, SummaryRow};
use crate::model::Scenario;
use crate::sections::{label, Compare, TableSpec};

/// One column of a table.
pub enum Column<'a> {
    /// `median (min-max)` of a metric over the point's runs.
    Median(&'a str),
    /// The sum of a metric over the point's runs.
    Sum(&'a str),
    /// A metric's median over its median at another point of one axis.
    Ratio(&'a Compare),
}

impl Column<'_> {
    fn heading(&self) -> String {
        match self {
            Column::Median(m) => m.to_string(),
            Column::Sum(m) => format!("{m} (sum)"),
            Column::Ratio(c) => {
                format!("{} {} / {}", c.metric, label(&c.value), label(&c.over))
            }
        }
    }

    fn cell(&self, row: &SummaryRow, summary: &[SummaryRow]) -> String {
        let dash = || "-".to_string();
        match self {
            Column::Median(m) => row.metrics.get(*m).map_or_else(dash, cell),
            Column::Sum(m) => row.metrics.get(*m).map_or_else(dash, |s| short(s.sum)),
            Column::Ratio(c) => {
                let median = |r: &SummaryRow| r.metrics.get(&c.metric).map(|s: &Spread| s.median);
                ratio_partner(c, row, summary)
                    .and_then(|other| Some(median(row)? / median(other)?))
                    .filter(|x| x.is_finite())
                    .map_or_else(dash, |x| format!("{x:.2}"))
            }
        }
    }
}

/// The row `row` is compared with: the one with `c.over` on `c.axis` and every other axis
/// alike (none when `row` is not at `c.value`).
fn ratio_partner<'a>(
    c: &Compare,
    row: &SummaryRow,
    summary: &'a [SummaryRow],
) -> Option<&'a SummaryRow> {
    let at = |r: &SummaryRow, v: &str| r.labels.iter().any(|(a, l)| *a == c.axis && l == v);
    if !at(row, &label(&c.value)) {
        return None;
    }
    let others = |r: &SummaryRow| -> Vec<(String, String)> {
        r.labels.iter().filter(|(a, _)| *a != c.axis).cloned().collect()
    };
    summary.iter().find(|r| at(r, &label(&c.over)) && others(r) == others(row))
}

/// A markdown table of `columns`: one row per row of `rows` (its axis values, or else its
/// series and x); ratios find their partner among all of `summary`.
pub fn render(
    title: &str,
    rows: &[&SummaryRow],
    summary: &[SummaryRow],
    columns: &[Column],
) -> String {
    let keys: Vec<String> = match rows.first() {
        Some(row) if !row.labels.is_empty() => row.labels.iter().map(|(a, _)| a.clone()).collect(),
        _ => vec!["series".into(), "x".into()],
    };
    let headings: Vec<String> = columns.iter().map(Column::heading).collect();
    let mut out = format!("### {title}\n\n| {} | {} |\n", keys.join(" | "), headings.join(" | "));
    out += &format!("|{}\n", "---|".repeat(keys.len() + columns.len()));
    for row in rows {
        let mut cells: Vec<String> = if row.labels.is_empty() {
            vec![row.series.clone(), row.x.to_string()]
        } else {
            row.labels.iter().map(|(_, v)| v.clone()).collect()
        };
        cells.extend(columns.iter().map(|c| c.cell(row, summary)));
        out += &format!("| {} |\n", cells.join(" | "));
    }
    out
}

/// The table `t` of the report over `summary` (the points it `shows`).
pub fn markdown(t: &TableSpec, summary: &[SummaryRow]) -> String {
    let columns: Vec<Column> = t
        .metrics
        .iter()
        .map(|m| Column::Median(m))
        .chain(t.sum.iter().map(|m| Column::Sum(m)))
        .chain(t.compare.iter().map(Column::Ratio))
        .collect();
    let rows: Vec<&SummaryRow> = summary.iter().filter(|r| t.shows(&r.labels)).collect();
    render(&t.title, &rows, summary, &columns)
}

/// Every table's sums and comparisons name metrics of the report, and comparisons an axis and
/// two of its values.
pub fn check(s: &Scenario) -> Result<(), ScenarioError> {
    let Some(report) = &s.report else { return Ok(()) };
    let reported = |m: &String| report.metrics.contains(m);
    for (t, table) in report.table.iter().enumerate() {
        if let Some((i, m)) = table.sum.iter().enumerate().find(|(_, m)| !reported(m)) {
            return Err(at(
                format!("report.table.{t}.sum.{i}"),
                format!("`{m}` is not in report.metrics"),
            ));
        }
        for (i, c) in table.compare.iter().enumerate() {
            let here = |f: &str| format!("report.table.{t}.compare.{i}.{f}");
            if !reported(&c.metric) {
                return Err(at(here("metric"), format!("`{}` is not in report.metrics", c.metric)));
            }
            let Some(axis) = s.sweep.iter().find(|a| a.name == c.axis) else {
                return Err(at(here("axis"), format!("`{}` is not a sweep axis", c.axis)));
            };
            for (field, v) in [("value", &c.value), ("over", &c.over)] {
                if !axis.values.iter().any(|x| label(x) == label(v)) {
                    return Err(at(
                        here(field),
                        format!("`{}` is not a value of axis `{}`", label(v), c.axis),
                    ));
                }
            }
        }
    }
    Ok(())
}
