//! One soak client: a thread that runs `mpquic` commands one after another until the soak's
//! end (uploads of files and directories, downloads of what it uploaded, listings), each over
//! the client's own 2-4 paths with its own certificate. A command may be SIGKILLed at a
//! seeded moment and is then run again at once, to resume; a busy refusal (the killed
//! connection still holds the partial copy) is retried with backoff, a connection failure (the
//! server restarting, a dead path 0) after a pause. Every completed transfer is compared byte
//! for byte with its source.

use super::watch::Expected;
use super::{OpRecord, Shared};
use crate::failover::{same_contents, write_random};
use crate::flows::Proc;
use anyhow::Result;
use fastrand::Rng;
use nix::sys::signal::Signal;
use std::collections::VecDeque;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Uploads a client keeps on the server for its downloads and listings; older ones are removed
/// (the disk stays bounded over hours).
const POOL: usize = 6;
/// Attempts of one command before it counts as failed.
const MAX_ATTEMPTS: u32 = 40;
/// Errors other than busy refusals and connection failures before a command counts as failed.
const MAX_OTHER_ERRORS: u32 = 3;

/// What every client shares: the program, the directories, the soak's clock.
pub struct Ctx {
    pub program: String,
    pub ns: Option<String>,
    pub certs: PathBuf,
    pub src: PathBuf,
    pub server_dir: PathBuf,
    pub got: PathBuf,
    pub logs: PathBuf,
    pub expected: Expected,
    pub shared: Shared,
    pub t0: Instant,
    /// No new command starts after this.
    pub end: Instant,
    /// Commands still running give up here.
    pub give_up: Instant,
    pub bwlimit: String,
    pub max_file: u64,
    pub kill_probability: f64,
}

/// One upload on the server: its name and its files (server path, size).
#[derive(Clone)]
struct Upload {
    name: String,
    files: Vec<(String, u64)>,
    dir: bool,
}

#[derive(Clone, Copy, PartialEq, Debug)]
pub enum Kind {
    SendFile,
    SendDir,
    Get,
    GetDir,
    Ls,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::SendFile => "send file",
            Kind::SendDir => "send dir --parallel",
            Kind::Get => "get file",
            Kind::GetDir => "get -r dir --parallel",
            Kind::Ls => "ls",
        }
    }

    fn is_get(self) -> bool {
        matches!(self, Kind::Get | Kind::GetDir)
    }
}

/// How one run of a command ended.
enum Ended {
    Ok(serde_json::Value),
    Killed,
    Busy,
    Exists,
    Connection(String),
    Other(String),
}

/// A command: its arguments, and where its files must end up (path, source, size).
struct Op {
    kind: Kind,
    name: String,
    args: Vec<String>,
    results: Vec<(PathBuf, PathBuf, u64)>,
    /// For `ls`: the files the listing must show.
    listed: Vec<(String, u64)>,
    /// A download's own directory, removed after it.
    scratch: Option<PathBuf>,
}

pub struct Client {
    id: usize,
    rng: Rng,
    connect: Vec<String>,
    pool: VecDeque<Upload>,
    ops: u32,
    log: std::fs::File,
}

impl Client {
    /// Client `id` over `paths` (`--server` and `--path` options), with its certificate.
    pub fn new(id: usize, seed: u64, ctx: &Ctx, paths: Vec<String>) -> Result<Client> {
        let pem = |p: String| ctx.certs.join(p).display().to_string();
        let mut connect = paths;
        connect.extend(["--ca".into(), pem("ca/ca.pem".into())]);
        connect.extend(["--server-name".into(), super::SERVER_NAME.into()]);
        connect.extend(["--client-cert".into(), pem(format!("c{id}/cert.pem"))]);
        connect.extend(["--client-key".into(), pem(format!("c{id}/key.pem")), "--json".into()]);
        let log = std::fs::File::create(ctx.logs.join(format!("client-{id}.log")))?;
        let rng = Rng::with_seed(seed.wrapping_mul(0x9e37_79b9).wrapping_add(id as u64));
        Ok(Client { id, rng, connect, pool: VecDeque::new(), ops: 0, log })
    }

    /// One `ls` of everything, before the soak (fails if it does not list).
    pub fn warm_up(&mut self, ctx: &Ctx) -> Result<()> {
        let args = [&["ls".to_string()][..], &self.connect[..]].concat();
        let ended = self.run_command(ctx, &args, None)?;
        // Its connection counts among the server's.
        ctx.shared.lock().unwrap().attempts.push((0.0, ctx.t0.elapsed().as_secs_f64(), "ok"));
        match ended {
            Ended::Ok(_) => Ok(()),
            _ => anyhow::bail!("the warm-up `mpquic ls` failed (see logs/client-{}.log)", self.id),
        }
    }

    /// Runs commands until the soak's end.
    pub fn run(mut self, ctx: &Ctx) -> Result<()> {
        while Instant::now() < ctx.end {
            let op = self.next_op(ctx)?;
            let record = self.run_op(ctx, &op)?;
            let completed = record.completed();
            ctx.shared.lock().unwrap().ops.push(record);
            self.after(ctx, op, completed)?;
            std::thread::sleep(Duration::from_secs_f64(0.5 * self.rng.f64()));
        }
        Ok(())
    }

    /// The next command, at random: uploads while nothing is up yet, then a mix.
    fn next_op(&mut self, ctx: &Ctx) -> Result<Op> {
        self.ops += 1;
        let roll = self.rng.u32(0..100);
        let has_dir = self.pool.iter().any(|u| u.dir);
        let has_file = self.pool.iter().any(|u| !u.dir);
        match roll {
            30..=44 => self.send_dir(ctx),
            45..=69 if has_file => Ok(self.get(ctx, false)),
            70..=79 if has_dir => Ok(self.get(ctx, true)),
            80..=99 if !self.pool.is_empty() => Ok(self.ls()),
            _ => self.send_file(ctx),
        }
    }

    fn send_file(&mut self, ctx: &Ctx) -> Result<Op> {
        let name = format!("c{}-{}.bin", self.id, self.ops);
        let size = log_uniform(&mut self.rng, 16 << 10, ctx.max_file);
        let source = ctx.src.join(&name);
        write_random(&source, size)?;
        let mut args = vec!["send".into(), source.display().to_string()];
        args.extend(["--bwlimit".into(), ctx.bwlimit.clone()]);
        let results = vec![(ctx.server_dir.join(&name), source, size)];
        Ok(Op { kind: Kind::SendFile, name, args, results, listed: Vec::new(), scratch: None })
    }

    /// A directory of 2-6 files of 1 KiB to 1 MiB, some one level down, sent 2-4 at once.
    fn send_dir(&mut self, ctx: &Ctx) -> Result<Op> {
        let name = format!("c{}-d{}", self.id, self.ops);
        let mut results = Vec::new();
        for j in 0..self.rng.usize(2..=6) {
            let rel = if j % 3 == 2 {
                format!("{name}/sub/f{j}.bin")
            } else {
                format!("{name}/f{j}.bin")
            };
            let source = ctx.src.join(&rel);
            std::fs::create_dir_all(source.parent().expect("nested"))?;
            let size = log_uniform(&mut self.rng, 1 << 10, 1 << 20);
            write_random(&source, size)?;
            results.push((ctx.server_dir.join(&rel), source, size));
        }
        let mut args = vec!["send".into(), ctx.src.join(&name).display().to_string()];
        args.extend(["--parallel".into(), self.rng.u32(2..=4).to_string()]);
        args.extend(["--bwlimit".into(), ctx.bwlimit.clone()]);
        Ok(Op { kind: Kind::SendDir, name, args, results, listed: Vec::new(), scratch: None })
    }

    /// A download of one of this client's uploads (a directory with `-r`) into its own
    /// directory.
    fn get(&mut self, ctx: &Ctx, dir: bool) -> Op {
        let choices: Vec<Upload> = self.pool.iter().filter(|u| u.dir == dir).cloned().collect();
        let up = choices[self.rng.usize(0..choices.len())].clone();
        let out = ctx.got.join(format!("c{}-g{}", self.id, self.ops));
        let results = (up.files.iter())
            .map(|(rel, size)| (out.join(rel), ctx.src.join(rel), *size))
            .collect();
        let mut args = vec!["get".to_string()];
        if dir {
            args.extend(["-r".into(), up.name.clone(), "--parallel".into(), "3".into()]);
            args.extend(["-o".into(), format!("{}/", out.display())]);
        } else {
            args.extend([up.name.clone(), "-o".into(), out.join(&up.name).display().to_string()]);
        }
        args.extend(["--bwlimit".into(), ctx.bwlimit.clone()]);
        let kind = if dir { Kind::GetDir } else { Kind::Get };
        Op { kind, name: up.name, args, results, listed: Vec::new(), scratch: Some(out) }
    }

    fn ls(&mut self) -> Op {
        let up = self.pool[self.rng.usize(0..self.pool.len())].clone();
        let args = vec!["ls".into(), up.name.clone()];
        Op {
            kind: Kind::Ls,
            name: up.name,
            args,
            results: Vec::new(),
            listed: up.files,
            scratch: None,
        }
    }

    /// Runs `op` until it completes, fails for good, or the soak gives up; then checks it.
    fn run_op(&mut self, ctx: &Ctx, op: &Op) -> Result<OpRecord> {
        let now = ctx.t0.elapsed().as_secs_f64();
        let mut rec = OpRecord::new(self.id, op.kind, &op.name, now);
        for (path, _, size) in &op.results {
            std::fs::create_dir_all(path.parent().expect("in a directory"))?;
            ctx.expected.expect(path.clone(), *size);
        }
        let mut done = None;
        while done.is_none() && rec.failure.is_none() {
            if Instant::now() > ctx.give_up || rec.attempts >= MAX_ATTEMPTS {
                let why = rec.last_error.clone().unwrap_or_default();
                rec.failure = Some(format!("gave up after {} attempts: {why}", rec.attempts));
                break;
            }
            done = self.attempt_once(ctx, op, &mut rec)?;
        }
        if let Some(report) = done {
            rec.resumed_from = resumed_from(&report);
            rec.payload = payload(&report);
            self.verify(op, &report, &mut rec);
        }
        rec.ended_s = ctx.t0.elapsed().as_secs_f64();
        Ok(rec)
    }

    /// One run of `op`'s command and what follows from its end: the report once it is done
    /// (`Null` when the files were already whole), or none to go again.
    fn attempt_once(
        &mut self,
        ctx: &Ctx,
        op: &Op,
        rec: &mut OpRecord,
    ) -> Result<Option<serde_json::Value>> {
        let mut args = op.args.clone();
        if rec.cut && op.kind.is_get() {
            // A download cut off may have finished a file; its resumed partial copy stays.
            args.push("--force".into());
        }
        args.extend(self.connect.iter().cloned());
        let kill = (Instant::now() < ctx.end && self.rng.f64() < ctx.kill_probability)
            .then(|| Duration::from_secs_f64(0.2 + 1.8 * self.rng.f64()));
        rec.attempts += 1;
        let started = ctx.t0.elapsed().as_secs_f64();
        let ended = self.run_command(ctx, &args, kill)?;
        let class = rec.take(&ended);
        ctx.shared.lock().unwrap().attempts.push((started, ctx.t0.elapsed().as_secs_f64(), class));
        Ok(match ended {
            Ended::Ok(report) => Some(report),
            Ended::Exists if rec.cut => Some(serde_json::Value::Null),
            Ended::Killed => None,
            Ended::Busy => {
                let backoff = 0.5 * 2f64.powi(rec.busy.min(4) as i32);
                std::thread::sleep(Duration::from_secs_f64(backoff));
                None
            }
            Ended::Connection(_) | Ended::Exists | Ended::Other(_) => {
                if rec.other_errors >= MAX_OTHER_ERRORS {
                    let why = rec.last_error.clone().unwrap_or_default();
                    rec.failure = Some(why);
                    return Ok(None);
                }
                std::thread::sleep(Duration::from_secs_f64(1.0 + self.rng.f64()));
                None
            }
        })
    }

    /// Runs the command (SIGKILLed after `kill`, if it runs that long) and classifies its end.
    fn run_command(&mut self, ctx: &Ctx, args: &[String], kill: Option<Duration>) -> Result<Ended> {
        let mut proc = Proc::spawn_in(ctx.ns.as_deref(), &ctx.program, args)?;
        let started = Instant::now();
        let mut killed = false;
        let status = loop {
            if let Some(status) = proc.try_status()? {
                break status;
            }
            if !killed && kill.is_some_and(|k| started.elapsed() >= k) {
                proc.signal(Signal::SIGKILL);
                killed = true;
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let (lines, stderr) = proc.stop();
        writeln!(self.log, "== {:.1} s: {}", ctx.t0.elapsed().as_secs_f64(), args.join(" "))?;
        writeln!(self.log, "{stderr}\n-- {status:?}{}", if killed { " (SIGKILLed)" } else { "" })?;
        if killed && !status.success() {
            return Ok(Ended::Killed);
        }
        Ok(classify(status.code(), &stderr, lines.last()))
    }

    /// Compares what the command left with its sources; records what differs.
    fn verify(&self, op: &Op, report: &serde_json::Value, rec: &mut OpRecord) {
        if rec.failure.is_some() {
            return;
        }
        for (path, source, _) in &op.results {
            match same_contents(source, path) {
                Ok(true) => rec.identical += 1,
                Ok(false) => rec.corrupt.push(path.display().to_string()),
                Err(e) => rec.missing.push(format!("{}: {e}", path.display())),
            }
        }
        if op.kind == Kind::Ls {
            let listed = listing(report);
            for (name, size) in &op.listed {
                if listed.iter().all(|(n, s)| !(n.ends_with(name.as_str()) && s == size)) {
                    rec.missing.push(format!("ls {}: {name} ({size} bytes) not listed", op.name));
                }
            }
        }
        if !rec.corrupt.is_empty() || !rec.missing.is_empty() {
            let (c, m) = (rec.corrupt.len(), rec.missing.len());
            rec.failure = Some(format!("{c} file(s) differ from their source, {m} missing"));
        }
    }

    /// After a command: a completed upload joins the pool (the oldest leaves it, removed from
    /// the server and the sources); a download's copy is removed.
    fn after(&mut self, ctx: &Ctx, op: Op, completed: bool) -> Result<()> {
        match op.kind {
            Kind::SendFile | Kind::SendDir if completed => {
                let files = op.results.iter().map(|(p, _, s)| (rel(&ctx.server_dir, p), *s));
                let dir = op.kind == Kind::SendDir;
                self.pool.push_back(Upload { name: op.name, files: files.collect(), dir });
                if self.pool.len() > POOL {
                    let old = self.pool.pop_front().expect("full");
                    remove(&ctx.server_dir.join(&old.name), &ctx.expected)?;
                    remove(&ctx.src.join(&old.name), &ctx.expected)?;
                }
            }
            Kind::SendFile | Kind::SendDir => {
                // A failed upload leaves nothing to download: its copies go.
                remove(&ctx.server_dir.join(&op.name), &ctx.expected)?;
                remove(&ctx.src.join(&op.name), &ctx.expected)?;
            }
            _ => {}
        }
        if let Some(out) = &op.scratch {
            remove(out, &ctx.expected)?;
        }
        Ok(())
    }
}

impl OpRecord {
    /// Counts `ended` in the record; its class for the attempts' tally.
    fn take(&mut self, ended: &Ended) -> &'static str {
        match ended {
            Ended::Ok(_) => "ok",
            Ended::Killed => {
                self.kills += 1;
                self.cut = true;
                "SIGKILLed"
            }
            Ended::Busy => {
                self.busy += 1;
                "busy"
            }
            Ended::Exists => {
                if !self.cut {
                    self.other_errors += 1;
                    self.last_error = Some("exists before its first upload".into());
                }
                "exists"
            }
            Ended::Connection(why) => {
                self.connection_failures += 1;
                self.cut = true;
                self.last_error = Some(why.clone());
                "connection"
            }
            Ended::Other(why) => {
                self.other_errors += 1;
                self.last_error = Some(why.clone());
                "other"
            }
        }
    }
}

/// A command's end from its exit code and output (`mpquic --help`'s exit codes). A command of
/// several files names only its first failure on stderr; its JSON result has every file's, so
/// it is busy if any file was refused as busy, and "exists" only if every failed file was.
fn classify(code: Option<i32>, stderr: &str, last: Option<&String>) -> Ended {
    let why = error_line(stderr);
    let report: Option<serde_json::Value> = last.and_then(|l| serde_json::from_str(l).ok());
    let errors: Vec<String> = match report.as_ref().and_then(|r| r["files"].as_array()) {
        Some(files) => files.iter().filter_map(|f| f["error"].as_str().map(String::from)).collect(),
        None => vec![stderr.to_string()],
    };
    let busy = errors.iter().any(|e| e.contains("being received by another transfer"));
    let exists = errors.iter().all(|e| e.contains("already exists"));
    match code {
        Some(0) => match report {
            Some(report) => Ended::Ok(report),
            None => Ended::Other("exit 0 without a JSON result".into()),
        },
        Some(4) if busy => Ended::Busy,
        Some(4) if exists => Ended::Exists,
        Some(3) => Ended::Connection(why),
        code => Ended::Other(format!("exit {code:?}: {why}")),
    }
}

/// The command's error line (`mpquic: error: ...`), or its last line.
fn error_line(stderr: &str) -> String {
    let lines: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
    let error = lines.iter().find(|l| l.starts_with("mpquic: error:"));
    error.or(lines.last()).map_or(String::new(), |l| l.trim().chars().take(200).collect())
}

/// Where a resumed transfer started: the single file's `resumed_from`, or its files' sum.
fn resumed_from(report: &serde_json::Value) -> u64 {
    let files = report["files"].as_array().into_iter().flatten();
    report["resumed_from"].as_u64().unwrap_or(0)
        + files.map(|f| f["resumed_from"].as_u64().unwrap_or(0)).sum::<u64>()
}

/// The file bytes this run moved: verified bytes less where they resumed.
fn payload(report: &serde_json::Value) -> u64 {
    if let Some(files) = report["files"].as_array() {
        let moved = |f: &serde_json::Value| {
            let bytes = if f["verified"] == true { f["bytes"].as_u64().unwrap_or(0) } else { 0 };
            bytes.saturating_sub(f["resumed_from"].as_u64().unwrap_or(0))
        };
        return files.iter().map(moved).sum();
    }
    let bytes = report["bytes"].as_u64().unwrap_or(0);
    bytes.saturating_sub(report["resumed_from"].as_u64().unwrap_or(0))
}

/// `ls --json`'s files: (name, size).
fn listing(report: &serde_json::Value) -> Vec<(String, u64)> {
    let entries = report.as_array().into_iter().flatten();
    let entry =
        |e: &serde_json::Value| Some((e["name"].as_str()?.to_string(), e["size"].as_u64()?));
    entries.filter_map(entry).collect()
}

/// A size between `lo` and `hi`, log-uniform.
fn log_uniform(rng: &mut Rng, lo: u64, hi: u64) -> u64 {
    let (a, b) = ((lo as f64).ln(), (hi.max(lo) as f64).ln());
    (a + rng.f64() * (b - a)).exp().round() as u64
}

fn rel(root: &Path, path: &Path) -> String {
    path.strip_prefix(root).unwrap_or(path).display().to_string()
}

/// Removes a file or a tree, then forgets what the watch expected in it.
fn remove(path: &Path, expected: &Expected) -> Result<()> {
    let files = if path.is_dir() { super::files_under(path) } else { vec![path.to_path_buf()] };
    if path.is_dir() {
        std::fs::remove_dir_all(path)?;
    } else if path.exists() {
        std::fs::remove_file(path)?;
    }
    for f in files {
        expected.forget(&f);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_codes_and_messages_classify_as_the_cli_documents() {
        let busy = "mpquic: error: x.bin is being received by another transfer; try again";
        assert!(matches!(classify(Some(4), busy, None), Ended::Busy));
        let exists = "mpquic: error: a file named \"x\" already exists";
        assert!(matches!(classify(Some(4), exists, None), Ended::Exists));
        let lost = "warn ...\nmpquic: error: connection lost: timed out\n";
        match classify(Some(3), lost, None) {
            Ended::Connection(why) => assert_eq!(why, "mpquic: error: connection lost: timed out"),
            _ => panic!("exit 3 is a connection failure"),
        }
        // A directory whose re-run found some files whole and one still held by the killed
        // run: busy (run again later), not done.
        let batch = r#"{"files": [{"error": "peer: a file named \"f1.bin\" already exists"},
            {"error": "peer: \"f3.bin\" is being received by another transfer"}]}"#;
        let first = "mpquic: error: 2 of 2 files failed, the first: peer: a file named \"f1.bin\" already exists";
        assert!(matches!(classify(Some(4), first, Some(&batch.replace('\n', ""))), Ended::Busy));
        let whole = r#"{"files": [{"error": "peer: a file named \"f1.bin\" already exists"}, {"bytes": 3}]}"#;
        assert!(matches!(classify(Some(4), first, Some(&whole.to_string())), Ended::Exists));
        let ok = r#"{"bytes": 10, "resumed_from": 4}"#.to_string();
        assert!(matches!(classify(Some(0), "", Some(&ok)), Ended::Ok(_)));
        assert!(matches!(classify(Some(5), "bad hash", None), Ended::Other(_)));
    }

    #[test]
    fn a_batch_report_counts_the_bytes_moved_after_the_resumed_prefix() {
        let batch = serde_json::json!({"files": [
            {"bytes": 100, "resumed_from": 40, "verified": true},
            {"bytes": 50, "resumed_from": 0, "verified": true},
            {"bytes": 70, "resumed_from": 0, "verified": false}]});
        assert_eq!(payload(&batch), 110);
        assert_eq!(resumed_from(&batch), 40);
        let one = serde_json::json!({"bytes": 100, "resumed_from": 30});
        assert_eq!((payload(&one), resumed_from(&one)), (70, 30));
    }
}
