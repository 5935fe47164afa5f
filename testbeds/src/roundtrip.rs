//! The round trip (`mpquic-testbed roundtrip`, issue 25): a nested directory of 1,000 files
//! goes up with one `mpquic send DIR` over two shaped, marked paths and comes back with one
//! `mpquic get -r`; every file's bytes and the tree's shape are compared, and each command's
//! per-path byte counts say whether both paths carried data.
//!
//! Sizes: 997 files log-uniform between 1 KB and 1 MB, and one each of 10, 30 and 100 MB, so
//! the sizes span 1 KB to 100 MB while the total stays near 290 MB (a CI-sized run: 1,000
//! files log-uniform over the whole range would average 8.7 MB, 8.7 GB in all). The files sit
//! in a tree three levels deep. Topology and shaping are the failover experiment's
//! (`failover::TwoPaths`), with the download direction (d -> r) rate-shaped the same way.

use crate::backend::{self, Backend};
use crate::cleanup;
use crate::failover::{run_saved, same_contents, write_random, TwoPaths};
use crate::flows::Proc;
use anyhow::{bail, Context, Result};
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Namespaces are `mqtb-<pid>-roundtrip-<node>`.
const NODE_TAG: &str = "roundtrip-";
/// The sent directory's name (and so its name on the server).
const TREE: &str = "tree";
/// The largest files, one each: the top of the size range.
const LARGE: [u64; 3] = [10_000_000, 30_000_000, 100_000_000];

#[derive(clap::Args, Debug, Clone)]
pub struct RoundtripArgs {
    /// Files in the tree (the three large ones included).
    #[arg(long, default_value_t = 1000)]
    pub files: usize,
    /// Rate of each path's bottleneck, Mbit/s.
    #[arg(long, default_value_t = 100.0)]
    pub rate_mbit: f64,
    /// Marking threshold K, packets.
    #[arg(long, default_value_t = 20)]
    pub k_packets: u32,
    /// Seed of the file sizes.
    #[arg(long, default_value_t = 25)]
    pub seed: u64,
    /// Give up on a command after this many seconds.
    #[arg(long, default_value_t = 600.0)]
    pub deadline_s: f64,
    /// Where result.json and the commands' output go.
    #[arg(long)]
    pub out: PathBuf,
}

/// One command's outcome: its time and what each path carried.
#[derive(Serialize, Debug)]
pub struct Leg {
    pub ok: bool,
    pub duration_s: f64,
    /// Payload bytes verified, from the command's report.
    pub bytes: u64,
    /// Per path: the bytes this end sent (`send`) or received (`get`), from `--json`.
    pub path_bytes: Vec<u64>,
    pub failed_files: u64,
}

#[derive(Serialize, Debug)]
pub struct RoundtripResult {
    pub files: usize,
    pub total_bytes: u64,
    pub smallest: u64,
    pub largest: u64,
    pub backend: Backend,
    pub rate_mbit: f64,
    pub send: Leg,
    pub get: Leg,
    /// The tree that came back has the same paths, sizes and bytes as the one sent.
    pub identical: bool,
    /// What differed, when something did.
    pub differences: Vec<String>,
}

/// Runs it, tears it down, writes `<out>/result.json`.
pub fn run_roundtrip(args: &RoundtripArgs, run_id: u32) -> Result<RoundtripResult> {
    run_saved(&args.out, run_id, |mpquic| run_inner(args, run_id, mpquic))
}

fn run_inner(args: &RoundtripArgs, run_id: u32, mpquic: &str) -> Result<RoundtripResult> {
    let dir = cleanup::run_dir(run_id);
    std::fs::create_dir_all(&dir)?;
    let sizes = sizes(args.files, args.seed);
    let local = dir.join("local");
    write_tree(&local.join(TREE), &sizes)?;
    let tb = TwoPaths::setup(args.rate_mbit, args.k_packets, NODE_TAG, run_id, &dir)?;
    shape_downloads(&tb)?;
    let stored = dir.join("stored");
    std::fs::create_dir_all(&stored)?;
    let mut server = Proc::spawn(tb.nss.ns(tb.d), mpquic, &tb.server_args(&stored))?;
    if !server.wait_err_line(Duration::from_secs(10), |l| l.starts_with("mpquic: serving on")) {
        let (_, err) = server.stop();
        bail!("mpquic serve did not start: {}", err.trim());
    }
    let paths = tb.client_paths(&tb.net.path_pairs(tb.s, tb.d), false)?;
    let client = |command: Vec<String>, name: &str| -> Result<Leg> {
        let mut all = command;
        all.extend(paths.iter().cloned());
        all.extend(["--insecure", "--json"].map(String::from));
        let started = Instant::now();
        let proc = Proc::spawn(tb.nss.ns(tb.s), mpquic, &all)?;
        let (lines, stderr, ok, _) = proc.finish(Duration::from_secs_f64(args.deadline_s))?;
        std::fs::write(args.out.join(format!("{name}.stdout")), lines.join("\n"))?;
        std::fs::write(args.out.join(format!("{name}.stderr")), &stderr)?;
        leg(ok, started.elapsed(), lines.last(), name)
    };
    let tree = local.join(TREE).display().to_string();
    let send = client(vec!["send".into(), tree], "send")?;
    let back = dir.join("back");
    std::fs::create_dir_all(&back)?;
    let get_cmd = ["get", "-r", TREE, "-o", &back.display().to_string()].map(String::from);
    let get = client(get_cmd.to_vec(), "get")?;
    let (_, server_err) = server.stop();
    std::fs::write(args.out.join("server.stderr"), server_err)?;
    if let Err(e) = tb.sampling.finish() {
        eprintln!("note: the queue sampler stopped early (the markers ran open-loop): {e:#}");
    }
    let differences = compare(&local.join(TREE), &back.join(TREE))?;
    Ok(RoundtripResult {
        files: sizes.len(),
        total_bytes: sizes.iter().sum(),
        smallest: sizes.iter().copied().min().unwrap_or(0),
        largest: sizes.iter().copied().max().unwrap_or(0),
        backend: tb.backend,
        rate_mbit: args.rate_mbit,
        send,
        get,
        identical: differences.is_empty(),
        differences,
    })
}

/// Shape d's egress on both paths as the r -> d directions are (rate and FIFO; the eBPF
/// backend's marks come from its marker, attached to r -> d only): the testbed shapes the
/// uploads' direction alone, and an unshaped download path never fills, so a scheduler that
/// fills the first path first would leave the second idle.
fn shape_downloads(tb: &TwoPaths) -> Result<()> {
    for (_, end) in tb.net.ends_of(tb.d) {
        backend::shape(tb.nss.ns(tb.d), &end.dev, &tb.link, tb.backend, tb.delay)?;
    }
    Ok(())
}

/// One command's leg from its exit and its last stdout line (the `--json` batch result).
fn leg(ok: bool, took: Duration, last: Option<&String>, name: &str) -> Result<Leg> {
    let report: serde_json::Value = match last.map(|l| serde_json::from_str(l)) {
        Some(Ok(report)) => report,
        _ => bail!("mpquic {name} printed no result (see {name}.stderr)"),
    };
    let counted = if name == "send" { "bytes_sent" } else { "bytes_received" };
    let paths = report["paths"].as_array().context("no paths in the report")?;
    Ok(Leg {
        ok,
        duration_s: took.as_secs_f64(),
        bytes: report["bytes"].as_u64().unwrap_or(0),
        path_bytes: paths.iter().map(|p| p[counted].as_u64().unwrap_or(0)).collect(),
        failed_files: report["failed"].as_u64().unwrap_or(0),
    })
}

/// `files` sizes: the `LARGE` ones and the rest log-uniform in [1 KB, 1 MB].
pub fn sizes(files: usize, seed: u64) -> Vec<u64> {
    let mut rng = fastrand::Rng::with_seed(seed);
    let small = files.saturating_sub(LARGE.len());
    let (lo, hi) = (1e3f64.ln(), 1e6f64.ln());
    let mut sizes: Vec<u64> =
        (0..small).map(|_| (lo + rng.f64() * (hi - lo)).exp().round() as u64).collect();
    sizes.extend(LARGE.iter().take(files - small));
    sizes
}

/// The relative path of file `i`: three levels of directories, a few files in each.
fn file_path(i: usize) -> PathBuf {
    PathBuf::from(format!("d{}/e{}/f{}/file-{i:04}.bin", i % 4, i % 7, i % 11))
}

fn write_tree(root: &Path, sizes: &[u64]) -> Result<()> {
    for (i, &size) in sizes.iter().enumerate() {
        let path = root.join(file_path(i));
        std::fs::create_dir_all(path.parent().expect("nested"))?;
        write_random(&path, size)?;
    }
    Ok(())
}

/// Every regular file beneath `root`: (relative path, size), sorted.
fn listing(root: &Path) -> Result<Vec<(PathBuf, u64)>> {
    let mut files = Vec::new();
    let mut todo = vec![root.to_path_buf()];
    while let Some(dir) = todo.pop() {
        for entry in std::fs::read_dir(&dir).with_context(|| format!("{}", dir.display()))? {
            let entry = entry?;
            let kind = entry.file_type()?;
            if kind.is_dir() {
                todo.push(entry.path());
            } else {
                let rel = entry.path().strip_prefix(root)?.to_path_buf();
                files.push((rel, entry.metadata()?.len()));
            }
        }
    }
    files.sort();
    Ok(files)
}

/// What differs between the trees at `a` and `b`: their shapes (paths and sizes), then each
/// file's bytes.
fn compare(a: &Path, b: &Path) -> Result<Vec<String>> {
    let (la, lb) = (listing(a)?, listing(b)?);
    if la != lb {
        let only_a = la.iter().filter(|f| !lb.contains(f)).count();
        let only_b = lb.iter().filter(|f| !la.contains(f)).count();
        return Ok(vec![format!(
            "the trees differ: {only_a} of {} files (path, size) not in the copy, {only_b} of {} \
             in the copy only",
            la.len(),
            lb.len()
        )]);
    }
    let mut differences = Vec::new();
    for (rel, _) in &la {
        if !same_contents(&a.join(rel), &b.join(rel))? {
            differences.push(format!("{} differs", rel.display()));
        }
    }
    Ok(differences)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_span_1_kb_to_100_mb_and_stay_ci_sized() {
        let sizes = sizes(1000, 25);
        assert_eq!(sizes.len(), 1000);
        assert!(sizes.iter().all(|&s| (1000..=100_000_000).contains(&s)));
        assert_eq!(*sizes.iter().max().unwrap(), 100_000_000);
        assert!(*sizes.iter().min().unwrap() < 1200, "the bottom of the range");
        let total: u64 = sizes.iter().sum();
        assert!(total < 300_000_000, "{total} bytes");
        let below_10k = sizes.iter().filter(|&&s| s < 10_000).count();
        assert!((250..420).contains(&below_10k), "log-uniform: a third below 10 KB, {below_10k}");
    }

    #[test]
    fn a_tree_compares_equal_to_its_copy_only() {
        let tmp = std::env::temp_dir().join(format!("roundtrip-unit-{}", std::process::id()));
        let sizes = [1000, 2000, 3000];
        write_tree(&tmp.join("a"), &sizes).unwrap();
        let copy = |from: &Path, to: &Path| {
            for (rel, _) in listing(from).unwrap() {
                std::fs::create_dir_all(to.join(&rel).parent().unwrap()).unwrap();
                std::fs::copy(from.join(&rel), to.join(&rel)).unwrap();
            }
        };
        copy(&tmp.join("a"), &tmp.join("b"));
        assert!(compare(&tmp.join("a"), &tmp.join("b")).unwrap().is_empty());
        let one = tmp.join("b").join(file_path(1));
        let mut bytes = std::fs::read(&one).unwrap();
        bytes[7] ^= 1;
        std::fs::write(&one, bytes).unwrap();
        assert_eq!(compare(&tmp.join("a"), &tmp.join("b")).unwrap().len(), 1);
        std::fs::remove_file(&one).unwrap();
        assert!(compare(&tmp.join("a"), &tmp.join("b")).unwrap()[0].contains("trees differ"));
        std::fs::remove_dir_all(&tmp).unwrap();
    }
}
