//! An experiment file: a scenario, sweep axes whose values set fields of it, seeds, and what to
//! report. [`Experiment::parse`] checks everything and expands the sweep into [`Point`]s.

use std::path::Path;

use toml::{Table, Value};

use crate::error::{at, locate, ScenarioError};
use crate::model::Scenario;
use crate::validate::validate;

pub use crate::sections::{label, Axis, Compare, PanelSpec, PlotSpec, ReportSpec, TableSpec};

/// One point of the sweep: the axes' values and the scenario they make.
#[derive(Debug, Clone)]
pub struct Point {
    /// (axis, value label), in axis order.
    pub labels: Vec<(String, String)>,
    /// The axes' values, in axis order.
    pub values: Vec<Value>,
    /// The scenario of this point (run it once per seed of `seeds`).
    pub scenario: Scenario,
}

impl Point {
    /// Where the point sits in the sweep plot and tables of the experiment `base`: the series
    /// (the values of the axes other than x, joined by `/`; the experiment's name without any)
    /// and x (the value of the plot's axis, else the last axis; its index when not a number).
    pub fn place(&self, base: &Scenario) -> (String, f64) {
        let x_axis = base
            .plot
            .as_ref()
            .map(|p| p.x.clone())
            .or_else(|| base.sweep.last().map(|a| a.name.clone()));
        let mut series = vec![];
        let mut x = 0.0;
        for (i, (axis, label)) in self.labels.iter().enumerate() {
            if Some(axis) != x_axis.as_ref() {
                series.push(label.clone());
                continue;
            }
            let index = base.sweep[i].values.iter().position(|v| v == &self.values[i]).unwrap_or(0);
            x = match &self.values[i] {
                Value::Integer(n) => *n as f64,
                Value::Float(f) => *f,
                _ => index as f64,
            };
        }
        let series = if series.is_empty() { base.name.clone() } else { series.join("/") };
        (series, x)
    }

    /// `axis=value` pairs, comma-separated (empty without axes).
    pub fn name(&self) -> String {
        self.labels.iter().map(|(a, v)| format!("{a}={v}")).collect::<Vec<_>>().join(",")
    }
}

/// A parsed, checked experiment file.
#[derive(Debug, Clone)]
pub struct Experiment {
    /// The scenario as written (no axis applied).
    pub base: Scenario,
    /// Every point of the sweep, first axis slowest (one point without axes).
    pub points: Vec<Point>,
    /// The points with `[netns] set` applied, when the file has one ([`Experiment::for_netns`]).
    netns_points: Option<Vec<Point>>,
}

impl Experiment {
    /// Read and check `path`; errors are `file:line:column: reason`. A file may start from
    /// another with `extends = "E1-incast.toml"` (relative to it): its tables merge into the
    /// other's key by key, arrays of tables entry by entry, other values replace.
    pub fn load(path: &Path) -> Result<Experiment, ScenarioError> {
        let file = path.display().to_string();
        let text = std::fs::read_to_string(path)
            .map_err(|e| ScenarioError::Invalid(format!("{file}: {e}")))?;
        let table: Table =
            text.parse().map_err(|e: toml::de::Error| locate(e.into(), &file, &text))?;
        let Some(parent) = table.get("extends") else {
            return Experiment::parse(&text, &file);
        };
        let Some(parent) = parent.as_str() else {
            return Err(locate(at("extends", "must be a file name"), &file, &text));
        };
        let parent_path = path.parent().unwrap_or(Path::new("")).join(parent);
        let parent_file = parent_path.display().to_string();
        let parent_text = std::fs::read_to_string(&parent_path)
            .map_err(|e| locate(at("extends", format!("{parent_file}: {e}")), &file, &text))?;
        let mut doc: Table = parent_text
            .parse()
            .map_err(|e: toml::de::Error| locate(e.into(), &parent_file, &parent_text))?;
        if doc.contains_key("extends") {
            return Err(locate(
                at("extends", format!("{parent_file} extends another file (one level only)")),
                &file,
                &text,
            ));
        }
        let mut child = table;
        child.remove("extends");
        merge(&mut doc, child);
        Experiment::check(&doc).map_err(|e| match &e {
            ScenarioError::At { path, .. } if crate::error::span_of(&text, path).is_none() => {
                locate(e, &parent_file, &parent_text)
            }
            _ => locate(e, &file, &text),
        })
    }

    /// Parse and check the text of `file`: the TOML and its keys, then every point of the
    /// sweep as [`validate`] checks a scenario, and the report against the sweep.
    pub fn parse(text: &str, file: &str) -> Result<Experiment, ScenarioError> {
        let inner = || -> Result<Experiment, ScenarioError> {
            // Deserializing the text (not a table) keeps the parser's spans in its errors.
            let _: Scenario = toml::from_str(text)?;
            Experiment::check(&text.parse()?)
        };
        inner().map_err(|e| locate(e, file, text))
    }

    /// The same experiment as the netns testbed runs it: `[netns] set` applied to every point
    /// (checked by [`Experiment::load`] and [`Experiment::parse`] already).
    pub fn for_netns(&self) -> Experiment {
        let mut e = self.clone();
        if let Some(points) = &self.netns_points {
            e.points = points.clone();
        }
        e
    }

    /// Check a document and expand its sweep (and, with `[netns] set`, the testbed's variant).
    fn check(doc: &Table) -> Result<Experiment, ScenarioError> {
        let mut e = Experiment::check_points(doc, false)?;
        if e.base.netns.as_ref().is_some_and(|n| !n.set.is_empty()) {
            e.netns_points = Some(Experiment::check_points(doc, true)?.points);
        }
        Ok(e)
    }

    fn check_points(doc: &Table, netns: bool) -> Result<Experiment, ScenarioError> {
        let base: Scenario = Value::Table(doc.clone()).try_into()?;
        check_axes(&base)?;
        let points = expand(&base, doc, netns)?;
        let check =
            |s: &Scenario| validate(s).and_then(|()| crate::analyses::check_selectors(&base, s));
        for p in &points {
            if let Err(e) = check(&p.scenario) {
                // An error of the document as written needs no point to explain it.
                return Err(match check(&base) {
                    Err(same) if same == e => e,
                    _ => in_point(e, p),
                });
            }
        }
        if let Some(report) = &base.report {
            crate::analyses::check(report)?;
        }
        crate::metrics::check_report(&base)?;
        crate::tables::check(&base)?;
        Ok(Experiment { base, points, netns_points: None })
    }
}

/// A point's error, saying which point.
fn in_point(e: ScenarioError, p: &Point) -> ScenarioError {
    if p.labels.is_empty() {
        return e;
    }
    match e {
        ScenarioError::At { path, message } => at(path, format!("[{}] {message}", p.name())),
        ScenarioError::Invalid(m) => ScenarioError::Invalid(format!("[{}] {m}", p.name())),
        other => other,
    }
}

fn check_axes(s: &Scenario) -> Result<(), ScenarioError> {
    if s.seeds.is_empty() {
        return Err(at("seeds", "needs at least one seed"));
    }
    for (j, entry) in s.skip.iter().enumerate() {
        if let Some(k) = entry.keys().find(|k| !s.sweep.iter().any(|a| &a.name == *k)) {
            return Err(at(format!("skip.{j}.{k}"), format!("`{k}` is not a sweep axis")));
        }
    }
    let tables = s.report.iter().flat_map(|r| r.table.iter().enumerate());
    for (t, (axis, v)) in tables.flat_map(|(t, table)| table.only.iter().map(move |o| (t, o))) {
        let here = format!("report.table.{t}.only.{axis}");
        match s.sweep.iter().find(|a| a.name == *axis) {
            None => return Err(at(here, format!("`{axis}` is not a sweep axis"))),
            Some(a) if !a.values.iter().any(|x| label(x) == label(v)) => {
                return Err(at(here, format!("`{}` is not a value of axis `{axis}`", label(v))))
            }
            Some(_) => {}
        }
    }
    for (i, axis) in s.sweep.iter().enumerate() {
        let here = |what: &str| format!("sweep.{i}.{what}");
        if s.sweep[..i].iter().any(|a| a.name == axis.name) {
            return Err(at(here("name"), format!("axis `{}` appears twice", axis.name)));
        }
        if axis.values.is_empty() {
            return Err(at(here("values"), format!("axis `{}` has no values", axis.name)));
        }
        if axis.set.is_empty() && axis.when.is_empty() {
            return Err(at(here("set"), format!("axis `{}` sets no field", axis.name)));
        }
        let labels: Vec<String> = axis.values.iter().map(label).collect();
        for (j, entry) in s.skip.iter().enumerate() {
            if let Some(v) = entry.get(&axis.name).filter(|v| !labels.contains(&label(v))) {
                return Err(at(
                    format!("skip.{j}.{}", axis.name),
                    format!("`{}` is not a value of axis `{}`", label(v), axis.name),
                ));
            }
        }
        if let Some(k) = axis.when.keys().find(|k| !labels.contains(k)) {
            return Err(at(
                format!("sweep.{i}.when.{k}"),
                format!("`{k}` is not a value of axis `{}` ({})", axis.name, labels.join(", ")),
            ));
        }
        if let Some((key, path)) = axis.set.iter().find_map(|p| Some((experiment_key(p)?, p))) {
            return Err(at(here("set"), not_a_run_field("set", path, key)));
        }
        for (value, fields) in &axis.when {
            let paths = flatten(fields, "").into_iter().map(|(path, _)| path);
            if let Some((key, path)) = paths.filter_map(|p| Some((experiment_key(&p)?, p))).next() {
                let place = format!("sweep.{i}.when.{value}.{path}");
                return Err(at(place, not_a_run_field("when", &path, key)));
            }
        }
    }
    Ok(())
}

/// The keys of the experiment around its runs rather than of a run's scenario: they are read
/// once, from the file as written, so an axis that set one for some points would be ignored.
const EXPERIMENT_KEYS: [&str; 6] = ["seeds", "sweep", "skip", "report", "plot", "netns.set"];

/// The experiment key that the dotted `path` is or lies inside, if any.
fn experiment_key(path: &str) -> Option<&'static str> {
    EXPERIMENT_KEYS.into_iter().find(|&k| {
        path.strip_prefix(k).is_some_and(|rest| rest.is_empty() || rest.starts_with('.'))
    })
}

/// Why an axis's `set` or `when` may not write `path` (inside the experiment key `key`).
fn not_a_run_field(how: &str, path: &str, key: &str) -> String {
    format!(
        "`{how}` writes fields of each point's scenario, and `{path}` is not one: `{key}` belongs \
         to the experiment ({}), read once from the file as written",
        EXPERIMENT_KEYS.join(", ")
    )
}

/// Every combination of the axes' values applied to the document `table`.
fn expand(base: &Scenario, table: &Table, netns: bool) -> Result<Vec<Point>, ScenarioError> {
    let mut combos: Vec<Vec<usize>> = vec![vec![]];
    for axis in &base.sweep {
        combos = combos
            .into_iter()
            .flat_map(|c| {
                (0..axis.values.len()).map(move |j| {
                    let mut c = c.clone();
                    c.push(j);
                    c
                })
            })
            .collect();
    }
    let skipped = |combo: &Vec<usize>| {
        base.skip.iter().any(|entry| {
            base.sweep.iter().zip(combo).all(|(axis, &j)| {
                entry.get(&axis.name).is_none_or(|v| label(v) == label(&axis.values[j]))
            })
        })
    };
    combos
        .into_iter()
        .filter(|c| !skipped(c))
        .map(|combo| {
            let mut doc = table.clone();
            let mut labels = vec![];
            let mut values = vec![];
            // Every axis's `set` first, then the `when`s: an irregular case wins over any axis.
            for (i, (axis, &j)) in base.sweep.iter().zip(&combo).enumerate() {
                let value = &axis.values[j];
                for path in &axis.set {
                    set_path(&mut doc, path, value.clone())
                        .map_err(|m| at(format!("sweep.{i}.set"), m))?;
                }
                labels.push((axis.name.clone(), label(value)));
                values.push(value.clone());
            }
            for (i, (axis, &j)) in base.sweep.iter().zip(&combo).enumerate() {
                if let Some(extra) = axis.when.get(&label(&axis.values[j])) {
                    for (path, v) in flatten(extra, "") {
                        set_path(&mut doc, &path, v)
                            .map_err(|m| at(format!("sweep.{i}.when"), m))?;
                    }
                }
            }
            if let Some(set) = base.netns.as_ref().map(|n| &n.set).filter(|_| netns) {
                for (path, v) in flatten(set, "") {
                    set_path(&mut doc, &path, v).map_err(|m| at("netns.set", m))?;
                }
            }
            let mut point = Point { labels, values, scenario: base.clone() };
            point.scenario = Value::Table(doc)
                .try_into()
                .map_err(|e: toml::de::Error| in_point(at("sweep", e.message().trim()), &point))?;
            Ok(point)
        })
        .collect()
}

/// `over` merged into `doc`: tables key by key, arrays of tables entry by entry (a longer
/// array adds entries), any other value replaces.
fn merge(doc: &mut Table, over: Table) {
    let tables = |items: &[Value]| items.iter().all(Value::is_table);
    for (k, v) in over {
        match (doc.get_mut(&k), v) {
            (Some(Value::Table(mine)), Value::Table(theirs)) => merge(mine, theirs),
            (Some(Value::Array(mine)), Value::Array(theirs)) if tables(mine) && tables(&theirs) => {
                for (i, entry) in theirs.into_iter().enumerate() {
                    match (mine.get_mut(i), entry) {
                        (Some(Value::Table(a)), Value::Table(b)) => merge(a, b),
                        (_, entry) => mine.push(entry),
                    }
                }
            }
            (_, v) => {
                doc.insert(k, v);
            }
        }
    }
}

/// `table`'s leaves as (dotted path, value); nested tables are paths, not values.
fn flatten(table: &Table, prefix: &str) -> Vec<(String, Value)> {
    table
        .iter()
        .flat_map(|(k, v)| {
            let path = if prefix.is_empty() { k.clone() } else { format!("{prefix}.{k}") };
            match v {
                Value::Table(t) => flatten(t, &path),
                other => vec![(path, other.clone())],
            }
        })
        .collect()
}

/// Write `value` at the dotted `path` of `doc`, making missing tables on the way; array
/// entries by index (which must exist), or `*` for every entry.
pub fn set_path(doc: &mut Table, path: &str, value: Value) -> Result<(), String> {
    let keys: Vec<&str> = path.split('.').collect();
    // Work on a copy, so that an error leaves `doc` as it was.
    let mut root = Value::Table(doc.clone());
    set_in(&mut root, &keys, &value, path)?;
    if let Value::Table(t) = root {
        *doc = t;
    }
    Ok(())
}

fn set_in(node: &mut Value, keys: &[&str], value: &Value, path: &str) -> Result<(), String> {
    let Some((key, rest)) = keys.split_first() else {
        *node = value.clone();
        return Ok(());
    };
    match node {
        Value::Table(t) => {
            let missing =
                if rest.is_empty() { Value::Boolean(false) } else { Value::Table(Table::new()) };
            set_in(t.entry(key.to_string()).or_insert(missing), rest, value, path)
        }
        Value::Array(items) if *key == "*" => {
            items.iter_mut().try_for_each(|item| set_in(item, rest, value, path))
        }
        Value::Array(items) => {
            let i = index(key, items.len(), path)?;
            set_in(&mut items[i], rest, value, path)
        }
        _ => Err(format!("`{path}`: `{key}` is inside a value that is not a table or array")),
    }
}

fn index(key: &str, len: usize, path: &str) -> Result<usize, String> {
    let i: usize = key.parse().map_err(|_| format!("`{path}`: `{key}` is not an array index"))?;
    if i >= len {
        return Err(format!("`{path}`: index {i} out of range (the array has {len} entries)"));
    }
    Ok(i)
}
