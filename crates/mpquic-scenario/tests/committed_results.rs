//! The committed results still read and re-derive: every `experiment.json` in the repository
//! (`results/` keeps them gzip'd)
//! (of this schema or written before it had a version) reads into the one
//! [`ExperimentResults`] type, and the tables made from the summary of a file of this schema
//! are the committed `tables.md` beside it, byte for byte.
//!
//! A file written before the schema had a version is compared too, and the ones that differ
//! are listed, not failed: the table cells' format changed since many were written (numbers
//! were printed to the third decimal before `metrics::short`), and some cannot re-derive at
//! all (the testbed's that did not record their report; an analysis table whose column order
//! the old schema lost, its rows being JSON objects with sorted keys).

use std::path::{Path, PathBuf};

use mpquic_scenario::results::ExperimentResults;

/// The repository's root (two levels above this crate).
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Every `experiment.json` (or `.json.gz`) under `dir`, build and VCS folders left out. Where
/// both are present the `.gz` is the committed one: an `experiment.json` beside it is a local
/// copy (`gzip -k` keeps it), which may predate the committed file and its tables.
fn find(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name();
        if path.is_dir() && !matches!(name.to_str(), Some("target" | ".git" | "node_modules")) {
            find(&path, out);
        } else if name == "experiment.json.gz"
            || (name == "experiment.json" && !path.with_extension("json.gz").exists())
        {
            out.push(path);
        }
    }
}

/// Why a file's tables cannot be re-derived, if they cannot.
fn not_derivable(r: &ExperimentResults) -> Option<&'static str> {
    if r.report.is_none() {
        return Some("no report recorded");
    }
    if r.schema == 0 && !r.analyses.is_empty() {
        return Some("an analysis table whose column order the old schema lost");
    }
    None
}

#[test]
fn every_committed_experiment_reads_and_its_tables_re_derive() {
    let mut files = vec![];
    find(&root(), &mut files);
    files.sort();
    assert!(!files.is_empty(), "no experiment.json found under {}", root().display());
    let (mut compared, mut listed) = (0, vec![]);
    for file in &files {
        let r = ExperimentResults::read(file).unwrap_or_else(|e| panic!("{e}"));
        let Ok(committed) = std::fs::read_to_string(file.with_file_name("tables.md")) else {
            continue;
        };
        if r.schema > 0 {
            assert_eq!(r.tables(), committed, "{}", file.display());
            compared += 1;
            continue;
        }
        // The testbed used to end its tables with one more blank line than the simulator.
        match not_derivable(&r) {
            Some(why) => listed.push(format!("{}: {why}", file.display())),
            None if r.tables().trim_end() == committed.trim_end() => compared += 1,
            None => listed.push(format!("{}: the tables differ", file.display())),
        }
    }
    let (n, listed) = (files.len(), listed.join("\n"));
    println!("{compared} of {n} tables re-derived byte for byte; the others:\n{listed}");
}

/// Whether `name` (`E1-incast-dc.toml`) is one of `listed`, where a listed name may end its
/// stem with `*` (`E1-incast*.toml`).
fn is_listed(name: &str, listed: &[&str]) -> bool {
    listed.iter().any(|l| match l.split_once('*') {
        Some((head, tail)) => name.starts_with(head) && name.ends_with(tail),
        None => name == *l,
    })
}

#[test]
fn the_write_ups_index_names_every_experiment_with_committed_results() {
    let index = std::fs::read_to_string(root().join("docs/results/README.md")).unwrap();
    let listed: Vec<&str> = index.split('`').filter(|s| s.ends_with(".toml")).collect();
    let mut unlisted = vec![];
    for entry in std::fs::read_dir(root().join("results")).unwrap().flatten() {
        let folder = entry.file_name().to_string_lossy().into_owned();
        let file = format!("{folder}.toml");
        let has_file = entry.path().is_dir() && root().join("experiments").join(&file).exists();
        if has_file && !is_listed(&file, &listed) {
            unlisted.push(file);
        }
    }
    unlisted.sort();
    assert!(
        unlisted.is_empty(),
        "experiments with results in results/ that docs/results/README.md does not list: {unlisted:?}"
    );
    assert!(is_listed("E1-incast-dc.toml", &["E1-incast*.toml"]));
    assert!(!is_listed("E2-min-window.toml", &["E1-incast*.toml"]));
}
