//! A sweep split over machines: `--shard I/N` runs the sweep's runs `k` with `k mod N = I`
//! (runs numbered from 0 in the sweep's order: point after point, each with every seed) and
//! writes them as a partial result, `partial-I-of-N.cbor`; [`merge`] joins the N partials into
//! the output one machine would have written, byte for byte.
//!
//! A partial names what it is a part of: the experiment file (its path and a fingerprint of
//! its points as loaded), the options that change runs, the commit the simulator was built
//! from, and N. The merge refuses partials that differ in any of these, a shard missing or
//! given twice, and a file that no longer loads to the same points. Partials are CBOR: it
//! keeps every float exactly, NaN included (JSON would turn NaN into null).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use mpquic_scenario::sweep::{self, Finished, Order};
use mpquic_scenario::Experiment;

use crate::exp::{self, Panels, SweepOptions};

pub use mpquic_scenario::sweep::Shard;

/// The commit the simulator was built from (see `build.rs`).
pub const COMMIT: &str = env!("MPQUIC_SIM_COMMIT");

/// The partial's file name of `shard`.
fn file_name(shard: Shard) -> String {
    format!("partial-{}-of-{}.cbor", shard.index, shard.count)
}

/// What a partial result is a part of; partials merge only when theirs are equal.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Origin {
    /// The experiment file, as given on the command line.
    file: String,
    /// [`fingerprint`] of the file's points as loaded.
    fingerprint: String,
    /// The simulator's commit.
    commit: String,
    /// The options that change the runs.
    options: SweepOptions,
    /// N.
    shards: usize,
    /// The sweep's runs, all shards together.
    runs: usize,
}

/// One shard's results.
#[derive(Debug, Serialize, Deserialize)]
struct Partial {
    origin: Origin,
    /// I.
    shard: usize,
    /// (run number in the sweep, its result), in sweep order.
    results: Vec<(usize, Finished<Panels>)>,
}

/// A digest of the experiment as loaded (its scenario, every point's, and the seeds, which a
/// scenario does not serialize), so that a file edited between the shards' runs and the merge
/// is noticed.
pub fn fingerprint(e: &Experiment) -> String {
    let points: Vec<_> = e.points.iter().map(|p| (&p.labels, &p.scenario)).collect();
    let text =
        serde_json::to_string(&(&e.base, points, &e.base.seeds)).expect("scenarios serialize");
    blake3::hash(text.as_bytes()).to_hex().to_string()
}

/// Run shard `shard` of `e` (loaded from `file` with `options`) on `jobs` threads and write
/// its partial into `out`; returns the partial's path.
pub fn run_shard(
    e: &Experiment,
    file: &str,
    out: &Path,
    options: &SweepOptions,
    shard: Shard,
    jobs: usize,
) -> Result<PathBuf, String> {
    let all = sweep::runs(e, Order::Sweep).len();
    let mine = (0..all).filter(|&k| shard.owns(k)).count();
    eprintln!("{}: shard {}/{}: {mine} of {all} runs", e.base.name, shard.index, shard.count);
    let results = sweep::run(&exp::SimBackend, e, &exp::loop_options(e, jobs, Some(shard)))?;
    let origin = Origin {
        file: file.to_owned(),
        fingerprint: fingerprint(e),
        commit: COMMIT.to_owned(),
        options: options.clone(),
        shards: shard.count,
        runs: all,
    };
    let partial = Partial { origin, shard: shard.index, results };
    std::fs::create_dir_all(out).map_err(|e| format!("{}: {e}", out.display()))?;
    let path = out.join(file_name(shard));
    let f = std::fs::File::create(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    ciborium::into_writer(&partial, std::io::BufWriter::new(f))
        .map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(path)
}

/// The partials in `paths`: each a partial's file, or a directory whose `partial-*.cbor` are
/// read.
fn read_partials(paths: &[PathBuf]) -> Result<Vec<(PathBuf, Partial)>, String> {
    let mut files = vec![];
    for p in paths {
        if !p.is_dir() {
            files.push(p.clone());
            continue;
        }
        let entries = std::fs::read_dir(p).map_err(|e| format!("{}: {e}", p.display()))?;
        let mut found: Vec<PathBuf> = entries
            .filter_map(|e| Some(e.ok()?.path()))
            .filter(|f| f.file_name().and_then(|n| n.to_str()).is_some_and(is_partial_name))
            .collect();
        if found.is_empty() {
            return Err(format!("{}: no partial-*.cbor (written by `run --shard`)", p.display()));
        }
        found.sort();
        files.extend(found);
    }
    files
        .into_iter()
        .map(|f| {
            let r = std::fs::File::open(&f).map_err(|e| format!("{}: {e}", f.display()))?;
            let partial = ciborium::from_reader(std::io::BufReader::new(r))
                .map_err(|e| format!("{}: not a partial result: {e}", f.display()))?;
            Ok((f, partial))
        })
        .collect()
}

fn is_partial_name(name: &str) -> bool {
    name.starts_with("partial-") && name.ends_with(".cbor")
}

/// Why two partials' origins do not merge: the first field that differs.
fn mismatch(a: &Origin, b: &Origin) -> Option<String> {
    let field = |name: &str, x: &dyn std::fmt::Debug, y: &dyn std::fmt::Debug| {
        Some(format!("different {name}: {x:?} and {y:?}"))
    };
    if a.file != b.file {
        return field("files", &a.file, &b.file);
    }
    if a.fingerprint != b.fingerprint {
        return field("file contents (fingerprints)", &a.fingerprint, &b.fingerprint);
    }
    if a.commit != b.commit {
        return field("commits", &a.commit, &b.commit);
    }
    if a.options != b.options {
        return field("options", &a.options, &b.options);
    }
    if a.shards != b.shards {
        return field("shard counts N", &a.shards, &b.shards);
    }
    None
}

/// The partials' common origin and their results in sweep order, or why they do not make one
/// whole sweep.
fn join(partials: Vec<(PathBuf, Partial)>) -> Result<(Origin, Vec<Finished<Panels>>), String> {
    let (first_path, first) = partials.first().ok_or("no partial results to merge")?;
    let origin = first.origin.clone();
    let mut by_shard: BTreeMap<usize, &Path> = BTreeMap::new();
    for (path, p) in &partials {
        if let Some(why) = mismatch(&origin, &p.origin) {
            return Err(format!("{} and {}: {why}", first_path.display(), path.display()));
        }
        if let Some(other) = by_shard.insert(p.shard, path) {
            return Err(format!(
                "shard {}/{} given twice: {} and {}",
                p.shard,
                origin.shards,
                other.display(),
                path.display()
            ));
        }
    }
    let missing: Vec<String> =
        (0..origin.shards).filter(|i| !by_shard.contains_key(i)).map(|i| i.to_string()).collect();
    if !missing.is_empty() {
        return Err(format!(
            "missing shards of {}: {} (of 0..{})",
            origin.file,
            missing.join(", "),
            origin.shards
        ));
    }
    let mut results: Vec<(usize, Finished<Panels>)> =
        partials.into_iter().flat_map(|(_, p)| p.results).collect();
    results.sort_by_key(|(k, _)| *k);
    if results.iter().map(|(k, _)| *k).ne(0..origin.runs) {
        return Err(format!(
            "the partials do not hold each of the sweep's {} runs once",
            origin.runs
        ));
    }
    Ok((origin, results.into_iter().map(|(_, r)| r).collect()))
}

/// Merge the partial results in `paths` (files or directories) into the output of the whole
/// sweep in `out` (default: the experiment file's `results/<file name>/sim`, as `run` writes);
/// returns where it wrote. The experiment file is read again from the path the partials name
/// (relative to the current directory) and must load to the points they ran.
pub fn merge(paths: &[PathBuf], out: Option<&Path>) -> Result<PathBuf, String> {
    let (origin, results) = join(read_partials(paths)?)?;
    let mut e = Experiment::load(Path::new(&origin.file)).map_err(|e| e.to_string())?;
    origin.options.apply(&mut e)?;
    if fingerprint(&e) != origin.fingerprint {
        return Err(format!("{}: changed since the shards ran (its points differ)", origin.file));
    }
    let out = out.map_or_else(
        || mpquic_scenario::default_out(Path::new(&origin.file), "sim"),
        Path::to_path_buf,
    );
    exp::write(&e, &origin.file, &out, &origin.options, results)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn origin() -> Origin {
        Origin {
            file: "e.toml".into(),
            fingerprint: "f".into(),
            commit: "c".into(),
            options: SweepOptions::default(),
            shards: 2,
            runs: 0,
        }
    }

    fn partial(shard: usize, origin: Origin) -> (PathBuf, Partial) {
        (format!("p{shard}").into(), Partial { origin, shard, results: vec![] })
    }

    #[test]
    fn a_whole_set_of_shards_joins() {
        assert!(join(vec![partial(1, origin()), partial(0, origin())]).is_ok());
    }

    #[test]
    fn join_refuses_mixed_missing_or_doubled_shards() {
        let other = |f: fn(&mut Origin)| {
            let mut o = origin();
            f(&mut o);
            o
        };
        let cases = [
            (vec![partial(0, origin())], "missing shards of e.toml: 1"),
            (vec![partial(0, origin()), partial(0, origin())], "shard 0/2 given twice"),
            (vec![partial(0, origin()), partial(1, other(|o| o.commit = "d".into()))], "commits"),
            (vec![partial(0, origin()), partial(1, other(|o| o.file = "x.toml".into()))], "files"),
            (vec![partial(0, origin()), partial(1, other(|o| o.shards = 3))], "shard counts"),
            (
                vec![partial(0, origin()), partial(1, other(|o| o.options.seed = Some(3)))],
                "options",
            ),
            (vec![], "no partial results"),
        ];
        for (partials, why) in cases {
            let err = join(partials).expect_err(why);
            assert!(err.contains(why), "{err} (expected: {why})");
        }
    }
}
