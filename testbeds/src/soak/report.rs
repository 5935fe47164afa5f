//! The soak's table (Markdown) and its checks.

use super::schedule::{describe, Timeline};
use super::server::{total, Instance, Sample};
use super::watch::Findings;
use super::{SoakArgs, Tally};
use std::collections::BTreeMap;
use std::fmt::Write;
use std::path::Path;

pub struct Samples {
    /// The server quiet after one warm-up listing, before the clients.
    pub idle: Sample,
    pub during: Vec<Sample>,
    /// The connections gauge once the clients were done (0 when every connection closed).
    pub quiet_connections: Option<f64>,
    /// What the descriptors the quiet server held beyond its idle set referred to.
    pub extra_fds: Vec<String>,
    /// The quiet server's RSS after `malloc_trim(0)` at the end (`--trim-at-end`), KiB.
    pub trimmed_rss_kib: Option<u64>,
}

/// The entries of sorted `end` not matched one for one in sorted `idle`.
pub fn extra(end: &[String], idle: &[String]) -> Vec<String> {
    let mut left = idle.to_vec();
    end.iter()
        .filter(|t| match left.iter().position(|i| i == *t) {
            Some(at) => {
                left.remove(at);
                false
            }
            None => true,
        })
        .cloned()
        .collect()
}

/// Everything a run leaves for its table.
pub struct Run<'a> {
    pub args: &'a SoakArgs,
    pub site: String,
    pub faultable: bool,
    pub timeline: &'a Timeline,
    pub events: Vec<(f64, String)>,
    pub tally: Tally,
    pub instances: Vec<Instance>,
    pub samples: Samples,
    /// When the last client finished.
    pub load_end_s: f64,
    pub findings: Findings,
    pub panics: Vec<String>,
    pub client_errors: Vec<String>,
    /// How it was run: the command line, the commit (`commit()`), the UTC start.
    pub command: String,
    pub commit: String,
    pub date: String,
}

/// One check: what, whether it held, the numbers behind it.
struct Check {
    what: &'static str,
    ok: bool,
    detail: String,
}

/// The table, the JSON record and whether every check held.
pub fn render(run: &Run) -> (String, serde_json::Value, bool) {
    let checks = checks(run);
    let ok = checks.iter().all(|c| c.ok);
    let mut md = String::new();
    header(run, &mut md);
    transfers(run, &mut md);
    attempts(run, &mut md);
    failures(run, &mut md);
    faults(run, &mut md);
    server(run, &mut md);
    over_time(run, &mut md);
    let _ = writeln!(md, "\n{}", byte_note(run));
    let _ = writeln!(md, "\n### Checks\n\n| check | held | numbers |\n|---|---|---|");
    for c in &checks {
        let _ =
            writeln!(md, "| {} | {} | {} |", c.what, if c.ok { "yes" } else { "**NO**" }, c.detail);
    }
    let _ = writeln!(md, "\nVerdict: {}", if ok { "every check held" } else { "FAILED" });
    let samples = [&[run.samples.idle.clone()][..], &run.samples.during[..]].concat();
    let json = serde_json::json!({
        "args": run.args,
        "ok": ok,
        "checks": checks.iter().map(|c| serde_json::json!({"what": c.what, "ok": c.ok, "detail": c.detail})).collect::<Vec<_>>(),
        "ops": run.tally.ops,
        "attempts": run.tally.attempts,
        "instances": run.instances,
        "samples": samples,
        "events": run.events,
        "findings": run.findings,
        "panics": run.panics,
    });
    (md, json, ok)
}

fn header(run: &Run, md: &mut String) {
    let a = run.args;
    let loads: Vec<f64> = run.samples.during.iter().map(|s| s.load).collect();
    let (lo, hi) = loads.iter().fold((f64::MAX, f64::MIN), |(l, h), &x| (l.min(x), h.max(x)));
    let mean = loads.iter().sum::<f64>() / loads.len().max(1) as f64;
    let _ = writeln!(
        md,
        "## Soak: {} s, {} clients, seed {}\n\n{} clients over 2-4 of 4 paths each ({}), one \
         `mpquic serve` with mutual TLS, `--bwlimit {}` per command, files up to {} bytes, \
         {:.0}% of command runs SIGKILLed 0.2-2 s in, {} server restart(s). Host 1-minute load \
         average during the run: mean {mean:.1}, {lo:.1}-{hi:.1} (a 2-core VM shared with \
         other builds). Clients finished {:.0} s after the start.",
        a.duration_s,
        a.clients,
        a.seed,
        a.clients,
        run.site,
        a.bwlimit,
        a.max_file,
        100.0 * a.kill_probability,
        a.restarts,
        run.load_end_s,
    );
    let _ = writeln!(md, "\nCommand: `{}`; {}; started {}.", run.command, run.commit, run.date);
}

/// The commit of the tree this binary was built in, and whether that tree had changes.
pub fn commit() -> String {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
    let git = |args: &[&str]| {
        let out = std::process::Command::new("git").arg("-C").arg(root).args(args).output();
        out.ok().map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string()).unwrap_or_default()
    };
    let dirty = if git(&["status", "--porcelain", "--untracked-files=no"]).is_empty() {
        ""
    } else {
        " with uncommitted changes"
    };
    format!("commit {}{dirty}", git(&["rev-parse", "--short", "HEAD"]))
}

/// Per kind of command: started, completed, resumed, completed after a cut, failed.
fn transfers(run: &Run, md: &mut String) {
    let _ = writeln!(
        md,
        "\n### Transfers\n\n| command | started | completed | after a cut (kill or lost \
         connection) | resumed from a partial copy | failed | files checked identical | corrupt \
         |\n|---|---|---|---|---|---|---|---|"
    );
    let mut kinds: BTreeMap<&str, [u64; 7]> = BTreeMap::new();
    for op in &run.tally.ops {
        let row = kinds.entry(op.kind).or_default();
        let done = op.completed();
        for (i, v) in [
            1,
            done as u64,
            (done && op.cut) as u64,
            (done && op.resumed_from > 0) as u64,
            !done as u64,
            op.identical as u64,
            op.corrupt.len() as u64,
        ]
        .into_iter()
        .enumerate()
        {
            row[i] += v;
        }
    }
    let mut sum = [0u64; 7];
    for (kind, row) in &kinds {
        let _ = writeln!(md, "| {kind} | {} |", join(row));
        (0..7).for_each(|i| sum[i] += row[i]);
    }
    let _ = writeln!(md, "| **all** | {} |", join(&sum));
}

fn join(row: &[u64]) -> String {
    row.iter().map(u64::to_string).collect::<Vec<_>>().join(" | ")
}

/// Every run of a command, by how it ended.
fn attempts(run: &Run, md: &mut String) {
    let mut by: BTreeMap<&str, u64> = BTreeMap::new();
    for (_, _, class) in &run.tally.attempts {
        *by.entry(class).or_default() += 1;
    }
    let _ = writeln!(
        md,
        "\n### Command runs ({} in all)\n\n| ended | runs | meaning |\n|---|---|---|",
        run.tally.attempts.len()
    );
    let meaning = |c: &str| {
        match c {
        "ok" => "exit 0, its JSON result read",
        "SIGKILLed" => "killed by the soak, run again at once",
        "busy" => "busy retries: exit 4 \"being received by another transfer\" (a killed run's connection holds the partial copy), retried with backoff 1-8 s",
        "connection" => "exit 3: server restarting, or path 0 dead at the handshake; retried after 1-2 s",
        "exists" => "exit 4 \"already exists\" after a cut: the cut run had finished the file (checked below)",
        _ => "any other exit (counted against the command; 3 fail it)",
    }
    };
    for (class, n) in by {
        let _ = writeln!(md, "| {class} | {n} | {} |", meaning(class));
    }
}

fn failures(run: &Run, md: &mut String) {
    let failed: Vec<_> = run.tally.ops.iter().filter(|o| !o.completed()).collect();
    if failed.is_empty() && run.client_errors.is_empty() {
        let _ = writeln!(md, "\nNo command failed.");
        return;
    }
    let _ = writeln!(md, "\n### Failed commands\n\n| client | command | name | runs | reason |\n|---|---|---|---|---|");
    for o in failed {
        let why = o.failure.as_deref().unwrap_or("").replace('|', "\\|");
        let _ = writeln!(md, "| {} | {} | {} | {} | {why} |", o.client, o.kind, o.name, o.attempts);
    }
    for e in &run.client_errors {
        let _ = writeln!(md, "| - | harness | - | - | {e} |");
    }
}

fn faults(run: &Run, md: &mut String) {
    let _ = writeln!(md, "\n### Faults (seeded timeline, as applied)\n");
    if !run.faultable {
        let _ =
            writeln!(md, "Path faults skipped: loopback paths share one device (`--loopback`).\n");
    }
    let count =
        |p: fn(&super::schedule::Action) -> bool| run.timeline.iter().filter(|(_, a)| p(a)).count();
    use super::schedule::Action as A;
    let _ = writeln!(
        md,
        "{} black holes, {} gray paths, {} server restarts, {} client SIGKILLs.\n",
        count(|a| matches!(a, A::Blackhole(_))),
        count(|a| matches!(a, A::Lose(..))),
        count(|a| matches!(a, A::Restart { .. })),
        run.tally.attempts.iter().filter(|a| a.2 == "SIGKILLed").count(),
    );
    for (_, e) in &run.events {
        let _ = writeln!(md, "- {e}");
    }
    if run.events.is_empty() {
        for (t, a) in run.timeline {
            let _ = writeln!(md, "- planned: {}", describe(*t, a));
        }
    }
}

/// Per server instance: its life, memory, descriptors and counters.
fn server(run: &Run, md: &mut String) {
    let _ = writeln!(
        md,
        "\n### Server\n\n| instance | up (s) | SIGTERM -> exit | RSS after warm-up / max / end (MiB) | open fds idle / max / end | connections opened (Prometheus) | received / sent bytes (Prometheus) | transfers it logged |\n|---|---|---|---|---|---|---|---|"
    );
    for (i, inst) in run.instances.iter().enumerate() {
        let mine: Vec<&Sample> = run.samples.during.iter().filter(|s| s.instance == i).collect();
        let mib = |k: Option<u64>| k.map_or("-".into(), |k| format!("{:.1}", k as f64 / 1024.0));
        let warm = warm_sample(inst, &mine).map(|s| s.rss_kib);
        let max_rss = mine.iter().map(|s| s.rss_kib).max();
        let end = mine.last();
        let max_fds = mine.iter().map(|s| s.fds).max().unwrap_or(0);
        let idle_fds = if i == 0 { run.samples.idle.fds.to_string() } else { "-".into() };
        let _ = writeln!(
            md,
            "| {i} | {:.0}-{} | {} | {} / {} / {} | {idle_fds} / {max_fds} / {} | {} | {} / {} | {} |",
            inst.started_s,
            inst.stopped_s.map_or("end".into(), |s| format!("{s:.0}")),
            inst.exit.as_deref().map_or("-".into(), |e| format!(
                "{e} after {:.2} s",
                inst.term_to_exit_s.unwrap_or(0.0)
            )),
            mib(warm),
            mib(max_rss),
            mib(end.map(|s| s.rss_kib)),
            end.map_or(0, |s| s.fds),
            total(&inst.metrics, "mpquic_connections_opened_total"),
            total(&inst.metrics, "mpquic_path_received_bytes_total"),
            total(&inst.metrics, "mpquic_path_sent_bytes_total"),
            inst.transfers_logged,
        );
    }
}

/// The server over time: the idle sample, then about every twelfth of the run, and the last.
fn over_time(run: &Run, md: &mut String) {
    let _ = writeln!(
        md,
        "\n| t (s) | instance | RSS (MiB) | open fds | connections | host load |\n|---|---|---|---|---|---|"
    );
    let during = &run.samples.during;
    let step = (during.len() / 12).max(1);
    let picked = during.iter().enumerate().filter(|(i, _)| i % step == 0 || *i + 1 == during.len());
    for s in std::iter::once(&run.samples.idle).chain(picked.map(|(_, s)| s)) {
        let _ = writeln!(
            md,
            "| {:.0} | {} | {:.1} | {} | {} | {:.1} |",
            s.t_s,
            s.instance,
            s.rss_kib as f64 / 1024.0,
            s.fds,
            s.connections.map_or("-".into(), |c| c.to_string()),
            s.load
        );
    }
}

/// The instance's sample after warm-up: the first at a quarter of its life (20 s at least).
fn warm_sample<'a>(inst: &Instance, mine: &[&'a Sample]) -> Option<&'a Sample> {
    let last = mine.last()?.t_s;
    let warm = inst.started_s + ((last - inst.started_s) / 4.0).max(20.0);
    mine.iter().find(|s| s.t_s >= warm).copied()
}

fn checks(run: &Run) -> Vec<Check> {
    let ops = &run.tally.ops;
    let corrupt: usize = ops.iter().map(|o| o.corrupt.len()).sum();
    let failed = ops.iter().filter(|o| !o.completed()).count();
    let cut = ops.iter().filter(|o| o.cut).count();
    let identical: u32 = ops.iter().map(|o| o.identical).sum();
    let f = &run.findings;
    let mut checks = vec![
        Check {
            what: "every completed file byte-identical to its source",
            ok: corrupt == 0,
            detail: format!("{identical} identical, {corrupt} corrupt"),
        },
        Check {
            what: "every command completed (a cut one resumed to identical)",
            ok: failed == 0 && run.client_errors.is_empty(),
            detail: format!("{} commands, {cut} cut at least once, {failed} failed", ops.len()),
        },
        Check {
            what: "no partial file visible under its final name",
            ok: f.violation_count == 0,
            detail: format!(
                "{} walks of the server's and clients' directories every 100 ms, up to {} \
                 files each, {} violations{}",
                f.walks,
                f.most_files,
                f.violation_count,
                f.violations.first().map_or(String::new(), |v| format!(" (first: {v})"))
            ),
        },
        Check {
            what: "no panic in any log",
            ok: run.panics.is_empty(),
            detail: if run.panics.is_empty() { "none".into() } else { run.panics.join("; ") },
        },
        Check {
            what: "path faults applied",
            ok: !run.events.iter().any(|(_, e)| e.contains("FAILED")),
            detail: format!("{} events", run.events.len()),
        },
    ];
    checks.extend(memory_checks(run));
    checks.extend(metric_checks(run));
    checks
}

/// With `--trim-at-end`, in place of the plain RSS check (`plain`: its numbers, reported): what
/// the quiet server still holds once its allocator returned its free pages, against its RSS
/// after warm-up. One-sided: a leak can only hold more, while a heap that keeps freed pages
/// moves the plain RSS and not this.
fn held_check(warm_kib: u64, trimmed_kib: u64, tol: f64, plain: &str) -> Check {
    let change = 100.0 * (trimmed_kib as f64 - warm_kib as f64) / warm_kib as f64;
    Check {
        what: "server memory held at the end (RSS after malloc_trim) at most the tolerance above \
               its level after warm-up (last instance)",
        ok: change <= tol,
        detail: format!(
            "{:.1} MiB after warm-up, {:.1} MiB after malloc_trim at the end ({change:+.1}%), \
             tolerance {tol}%; plain RSS {plain} (with glibc's kept free pages; not counted)",
            warm_kib as f64 / 1024.0,
            trimmed_kib as f64 / 1024.0
        ),
    }
}

/// The last instance's RSS at the end against after warm-up; its descriptors against idle.
fn memory_checks(run: &Run) -> Vec<Check> {
    let last = run.instances.len() - 1;
    let mine: Vec<&Sample> = run.samples.during.iter().filter(|s| s.instance == last).collect();
    let warm = warm_sample(&run.instances[last], &mine).map(|s| s.rss_kib);
    let end = mine.last();
    let tol = run.args.rss_tolerance_pct;
    let rss = match (warm, end) {
        (Some(w), Some(e)) => {
            let change = 100.0 * (e.rss_kib as f64 - w as f64) / w as f64;
            let text = format!(
                "{:.1} -> {:.1} MiB ({change:+.1}%)",
                w as f64 / 1024.0,
                e.rss_kib as f64 / 1024.0
            );
            (change.abs() <= tol, text)
        }
        _ => (false, "too few samples".into()),
    };
    let idle = run.samples.idle.fds;
    let fds_end = end.map_or(usize::MAX, |s| s.fds);
    let plain = Check {
        what:
            "server RSS at the end within the tolerance of its level after warm-up (last instance)",
        ok: rss.0,
        detail: format!("{}, tolerance {tol}%", rss.1),
    };
    // With `--trim-at-end` the held memory decides: the plain RSS counts the free pages glibc
    // keeps after a busy spell (21 of 54 MiB in a 30-minute run), which no leak check wants.
    let memory = match warm.zip(run.samples.trimmed_rss_kib) {
        Some((w, t)) => held_check(w, t, tol, &rss.1),
        None => plain,
    };
    vec![
        memory,
        Check {
            what: "server's open fds back to idle once quiet (last instance)",
            ok: fds_end <= idle,
            detail: format!(
                "idle {idle} (after one warm-up listing, before the clients), {fds_end} at the end \
                 (up to {}s after the last connection closed){}",
                super::FD_SETTLE.as_secs(),
                if run.samples.extra_fds.is_empty() {
                    String::new()
                } else {
                    format!(", beyond idle: {}", run.samples.extra_fds.join(", "))
                }
            ),
        },
    ]
}

/// The Prometheus counters, summed over instances, against the clients' runs.
fn metric_checks(run: &Run) -> Vec<Check> {
    let sum = |name| run.instances.iter().map(|i| total(&i.metrics, name)).sum::<f64>();
    let opened = sum("mpquic_connections_opened_total");
    let runs = run.tally.attempts.len() as f64;
    // A run that ended "ok", "busy" or "exists" heard the server: it had a connection.
    let answered = (run.tally.attempts.iter())
        .filter(|a| matches!(a.2, "ok" | "busy" | "exists"))
        .count() as f64;
    vec![
        Check {
            what: "Prometheus: connections opened between the runs that reached the server and all runs",
            ok: (answered..=runs).contains(&opened),
            detail: format!("{opened} opened (all instances), {answered} runs answered, {runs} runs"),
        },
        Check {
            what: "Prometheus: no connection left open once the clients were done",
            ok: run.samples.quiet_connections == Some(0.0),
            detail: format!("mpquic_connections = {:?}", run.samples.quiet_connections),
        },
    ]
}

/// The byte counters against the file bytes the clients moved: reported, not asserted. The
/// library brings a connection's counters to its final totals when it closes (since 2026-11-29;
/// before, the last second of every connection went uncounted, 0.64-0.85x here), but each
/// instance's last scrape is taken before its SIGTERM, so what moves during a drain is missed.
fn byte_note(run: &Run) -> String {
    let sum = |name| run.instances.iter().map(|i| total(&i.metrics, name)).sum::<f64>();
    let payload = |up: bool| {
        let ops = run.tally.ops.iter().filter(|o| o.completed() && o.kind != "ls");
        ops.filter(|o| o.kind.starts_with("send") == up).map(|o| o.payload).sum::<u64>() as f64
    };
    let (up, down) = (payload(true), payload(false));
    let (received, sent) =
        (sum("mpquic_path_received_bytes_total"), sum("mpquic_path_sent_bytes_total"));
    format!(
        "Prometheus bytes, not asserted (each instance's last scrape precedes its SIGTERM, so \
         what moves during a drain is missed): received {received:.0} for \
         {up:.0} file bytes uploaded ({:.3}x), sent {sent:.0} for {down:.0} downloaded ({:.3}x).",
        received / up.max(1.0),
        sent / down.max(1.0)
    )
}

/// Lines of any log under `logs` that tell of a panic.
pub fn panics(logs: &Path) -> Vec<String> {
    let mut found = Vec::new();
    for file in super::files_under(logs) {
        let text = std::fs::read_to_string(&file).unwrap_or_default();
        for line in
            text.lines().filter(|l| l.contains("panicked at") || l.contains("RUST_BACKTRACE"))
        {
            found.push(format!("{}: {}", file.display(), line.trim()));
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::{extra, held_check};

    #[test]
    fn extra_descriptors_are_those_not_matched_one_for_one() {
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        let idle = s(&["/dev/null", "anon_inode", "socket", "socket"]);
        let end = s(&["/dev/null", "/srv/a.part", "anon_inode", "socket", "socket", "socket"]);
        assert_eq!(extra(&end, &idle), s(&["/srv/a.part", "socket"]));
        assert!(extra(&idle, &idle).is_empty());
    }

    #[test]
    fn memory_held_after_trim_is_checked_one_sided() {
        // 40 MiB after warm-up; 10% allows up to 44 MiB held at the end.
        let warm = 40 * 1024;
        assert!(held_check(warm, 44 * 1024, 10.0, "").ok);
        assert!(!held_check(warm, 45 * 1024, 10.0, "").ok, "a leak holds more than the tolerance");
        assert!(held_check(warm, 20 * 1024, 10.0, "").ok, "returning memory is not a leak");
        assert!(held_check(warm, 45 * 1024, 10.0, "").detail.contains("+12.5%"));
    }
}
