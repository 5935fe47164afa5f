//! Named analyses an experiment file's `[report] analyses` asks for: testbed-only readings of a
//! run (its result and raw series) that are not per-run metrics of the shared catalogue, such
//! as time windows over the per-link byte series. Each gives rows per run; `experiment.json`
//! keeps them under `analyses.<name>` and `tables.md` prints one table per analysis, a row per
//! run and entry (not a median over rounds).

mod pathkeep;

use crate::results::RunResult;
use anyhow::Result;
use std::path::Path;

/// The analyses the testbed has.
pub const NAMES: &[&str] = &[pathkeep::NAME];

/// One row: (column, value) in column order.
pub type Row = Vec<(&'static str, serde_json::Value)>;

/// A named analysis's rows for one run of `result`, whose files are in `dir`.
pub fn run(name: &str, result: &RunResult, dir: &Path) -> Result<Vec<Row>> {
    match name {
        pathkeep::NAME => pathkeep::rows(result, dir),
        other => anyhow::bail!("no analysis `{other}` (known: {})", NAMES.join(", ")),
    }
}

/// The heading of an analysis's table (the name itself for one the testbed does not have).
pub fn title(name: &str) -> &str {
    match name {
        pathkeep::NAME => pathkeep::TITLE,
        other => other,
    }
}

/// A markdown table of `rows` (every row has the same columns) under `title`, each row led by
/// its run's point and round.
pub fn markdown(title: &str, rows: &[(String, usize, Row)]) -> String {
    let Some((_, _, first)) = rows.first() else {
        return format!("### {title}\n\n(no runs)\n");
    };
    let columns: Vec<&str> = first.iter().map(|(c, _)| *c).collect();
    let mut out = format!("### {title}\n\n| point | round | {} |\n", columns.join(" | "));
    out += &format!("|{}\n", "---|".repeat(columns.len() + 2));
    for (point, round, row) in rows {
        let cells: Vec<String> = row.iter().map(|(_, v)| cell(v)).collect();
        out += &format!("| {point} | {round} | {} |\n", cells.join(" | "));
    }
    out
}

/// A value as a table cell: numbers with at most 2 decimals, strings bare, null as `-`.
fn cell(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::Null => "-".into(),
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Bool(b) => if *b { "yes" } else { "NO" }.into(),
        serde_json::Value::Number(n) if n.is_f64() => {
            let x = n.as_f64().unwrap_or(f64::NAN);
            format!("{}", (x * 100.0).round() / 100.0)
        }
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_table_has_a_row_per_run_and_entry_with_its_point_and_round() {
        let row = |open: bool, mb: f64| -> Row { vec![("open", json!(open)), ("MB", json!(mb))] };
        let rows =
            vec![("pk".to_string(), 1, row(true, 62.4449)), ("pk".to_string(), 1, row(false, 0.0))];
        assert_eq!(
            markdown("t", &rows),
            "### t\n\n| point | round | open | MB |\n|---|---|---|---|\n\
             | pk | 1 | yes | 62.44 |\n| pk | 1 | NO | 0 |\n"
        );
    }
}
