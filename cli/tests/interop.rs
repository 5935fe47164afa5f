//! Interop with another multipath QUIC stack (RFC 10069): picoquic, driven by our Python peer
//! (testbeds/interop/picoquic_peer.py, through the picoquic inside the PyPI wheel aiopquic),
//! against the `mpquic` binary, both ways, on loopback with 127.0.0.1 and 127.0.0.2 as the two
//! client addresses. Each transfer checks the handshake, that both ends negotiated multipath,
//! that two paths were validated and each carried at least 10% of the bytes where mpquic sends
//! (where picoquic sends, that a second path took data: `PICOQUIC_SENDER_MIN_BYTES`), and that
//! the file arrived byte-identical (BLAKE3 of both copies). The abandon cases let the picoquic end
//! abandon a path with each kind of error code, or drop a path's datagrams, and check what
//! mpquic makes of it (RFC 10069 section on PATH_ABANDON); the backup case lets it mark a path
//! as backup.
//!
//! The peer lives in a venv that `testbeds/interop/install.sh` makes (`.ci/run` runs it); where
//! it is missing, each test reports a skip with that command.

mod common;

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::sync::{Mutex, MutexGuard};

use common::*;
use serde_json::Value;

const PEER: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../testbeds/interop/picoquic_peer.py");
const WORKSPACE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/..");

/// The picoquic peer died of a signal (its log). picoquic 1.1.53 crashes now and then when a
/// path has no connection ID from its peer (a NULL `tuple->p_remote_cnxid` in
/// `picoquic_create_packet_header`, under `picoquic_prepare_next_packet`), as after a path
/// opens or re-opens on a busy host; such a run says nothing of mpquic, so the case runs again.
struct Crashed(String);

type Run<T> = Result<T, Crashed>;

/// Runs of a case before a crashing peer fails it.
const ATTEMPTS: u32 = 3;

/// Run `case` until the peer lives through it (its assertions fail the test as usual).
fn retrying_peer_crashes(case: impl Fn() -> Run<()>) {
    for attempt in 1..=ATTEMPTS {
        match case() {
            Ok(()) => return,
            Err(Crashed(log)) => {
                eprintln!("attempt {attempt} of {ATTEMPTS}: the peer crashed: {log}")
            }
        }
    }
    panic!("the picoquic peer crashed in each of {ATTEMPTS} attempts (above)");
}

/// RFC 10069's PATH_ABANDON error codes.
const APPLICATION_ABANDON_PATH: u64 = 0x3e;
const PATH_RESOURCE_LIMIT_REACHED: u64 = 0x3e75;
const PATH_UNSTABLE_OR_POOR: u64 = 0x3e76;

/// mpquic's scheduler here: loopback seldom fills path 0, so the default (stack: the lowest path
/// with room first) would leave path 1 idle whenever the peer keeps up (as `mpquic demo`).
const SCHEDULER: &str = "round-robin";

/// mpquic's sends and reads are paced to this rate (`--bwlimit`, bytes/s, on the clients and on
/// `mpquic serve` alike): an application-limited sender never fills a path's window, so
/// round-robin deals its packets evenly over the paths whatever the host's speed (unpaced, the
/// split against picoquic ranged from 2% to 98%), and every transfer outlives a re-open however
/// fast the host.
const BWLIMIT: &str = "4M";

/// Each of at least two paths must carry this share of the bytes.
const MIN_SHARE: f64 = 0.10;

/// mpquic re-opens a failed path after 0.5 s (`PathFailure::retry`): a connection that lives
/// this much longer after an abandon would have shown a re-open.
const REOPEN_WINDOW_S: f64 = 1.0;

/// One lab at a time: the Python peer takes a core to itself at these rates, and tests run in
/// parallel would starve it (and make mpquic's failover see stalls that are the host's).
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// A lab: the peer's Python, a temporary directory, and a server certificate for 127.0.0.1.
struct Lab {
    python: PathBuf,
    dir: tempfile::TempDir,
    _turn: MutexGuard<'static, ()>,
}

impl Lab {
    /// The lab, or `None` after reporting `test` as skipped when the peer is not installed.
    fn new(test: &str) -> Option<Lab> {
        let python = peer_python(test)?;
        // A test that failed while holding the lock leaves nothing behind for the next.
        let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
        let dir = tempfile::tempdir().unwrap();
        let pki = dir.path().join("pki");
        let out = mpquic(&["cert", "--out", path_str(&pki), "--name", "127.0.0.1"]);
        assert!(out.status.success(), "mpquic cert: {}", stderr(&out));
        for sub in ["mpquic-store", "picoquic-store"] {
            std::fs::create_dir(dir.path().join(sub)).unwrap();
        }
        Some(Lab { python, dir, _turn })
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// A file of `len` pseudo-random bytes in the lab.
    fn file(&self, name: &str, len: usize) -> PathBuf {
        random_file(self.dir.path(), name, len)
    }

    /// A picoquic server storing into and serving from `picoquic-store`, with `extra` options.
    fn picoquic_server(&self, extra: &[&str]) -> Peer {
        let (cert, key, store) =
            (self.path("pki/cert.pem"), self.path("pki/key.pem"), self.path("picoquic-store"));
        let mut args = vec!["--role", "server", "--listen", "127.0.0.1:0"];
        args.extend(["--cert", path_str(&cert), "--key", path_str(&key)]);
        args.extend(["--dir", path_str(&store)]);
        args.extend(extra);
        Peer::start(self, "server", &args)
    }

    /// A picoquic client from 127.0.0.1 and 127.0.0.2 to `server`, run to its end.
    fn picoquic_client(&self, server: &str, extra: &[&str]) -> Run<Value> {
        let mut args = vec!["--role", "client", "--server", server];
        args.extend(["--local", "127.0.0.1", "--local", "127.0.0.2"]);
        args.extend(extra);
        Peer::start(self, "client", &args).report()
    }

    /// `mpquic send` or `mpquic get` (`command` and its own arguments) to the picoquic server
    /// `peer` over two paths, trusting the lab's certificate; its JSON report.
    fn mpquic_client(&self, peer: &mut Peer, command: &[&str]) -> Run<Value> {
        let mut lines = self.mpquic_client_lines(peer, command)?;
        Ok(lines.pop().expect("a result line"))
    }

    /// Every JSON line `mpquic` printed (`--interval` lines, then its result).
    fn mpquic_client_lines(&self, peer: &mut Peer, command: &[&str]) -> Run<Vec<Value>> {
        let server = format!("127.0.0.1:{}", peer.port);
        let ca = self.path("pki/cert.pem");
        let mut args = vec![command[0], "--server", &server, "--local", "127.0.0.1"];
        args.extend(["--local", "127.0.0.2", "--ca", path_str(&ca), "--json"]);
        args.extend(["--scheduler", SCHEDULER, "--bwlimit", BWLIMIT]);
        // The peer speaks the first protocol ('P' and 'G'), not the resumable one.
        args.push("--no-resume");
        args.extend(command[1..].iter().copied());
        let out = mpquic(&args);
        if !out.status.success() {
            if let Some(crash) = peer.crashed() {
                return Err(crash);
            }
            panic!("mpquic failed: {}\npeer: {}", stderr(&out), peer.log());
        }
        let stdout = String::from_utf8_lossy(&out.stdout);
        Ok(stdout.lines().map(|line| serde_json::from_str(line).expect(line)).collect())
    }
}

fn path_str(path: &Path) -> &str {
    path.to_str().expect("a UTF-8 temporary path")
}

/// The installed peer's Python, or `None` after reporting `test` as skipped.
fn peer_python(test: &str) -> Option<PathBuf> {
    let venv = std::env::var_os("MPQUIC_INTEROP_VENV")
        .map_or_else(|| PathBuf::from("target/interop-venv"), PathBuf::from);
    let venv = Path::new(WORKSPACE).join(venv); // a relative venv is the workspace's, as for install.sh
    let python = venv.join("bin/python");
    let check = Command::new(&python).args(["-c", "import aiopquic, blake3"]).output();
    if check.is_ok_and(|out| out.status.success()) {
        return Some(python);
    }
    mpquic_skip::skip(
        test,
        &format!(
            "the picoquic peer is not installed in {} (testbeds/interop/install.sh: Python >= 3.12, aiopquic 0.6.1, blake3)",
            venv.display()
        ),
    );
    None
}

/// A running picoquic peer; killed on drop. Its stderr goes to a file of the lab.
struct Peer {
    child: Child,
    stdout: BufReader<ChildStdout>,
    stderr: PathBuf,
    /// A server's port (0 for a client).
    port: u16,
}

impl Peer {
    fn start(lab: &Lab, role: &str, args: &[&str]) -> Peer {
        let n = std::fs::read_dir(lab.dir.path()).unwrap().count();
        let stderr = lab.path(&format!("{role}-{n}.stderr"));
        let qlog = lab.path(&format!("{role}-{n}.qlog"));
        let mut child = Command::new(&lab.python)
            .args(["-X", "faulthandler", PEER]) // a crash in C still names the Python line
            .args(args)
            .args(["--qlog", path_str(&qlog), "--timeout", "60"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(File::create(&stderr).unwrap())
            .spawn()
            .expect("start the picoquic peer");
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let mut peer = Peer { child, stdout, stderr, port: 0 };
        if role == "server" {
            let line = peer.line().unwrap_or_else(|| panic!("peer exited: {}", peer.log()));
            let listening: Value = serde_json::from_str(&line).unwrap();
            let addr = listening["listening"].as_str().unwrap();
            peer.port = addr.rsplit(':').next().unwrap().parse().unwrap();
        }
        peer
    }

    fn line(&mut self) -> Option<String> {
        let mut line = String::new();
        (self.stdout.read_line(&mut line).unwrap() > 0).then_some(line)
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.stderr).unwrap_or_default()
    }

    /// The peer's crash, if it died of a signal.
    fn crashed(&mut self) -> Option<Crashed> {
        let status = self.child.try_wait().unwrap()?;
        status.signal().map(|signal| Crashed(format!("signal {signal}: {}", self.log())))
    }

    /// Wait for the peer's end (its own --timeout bounds it) and return its report; a failed
    /// transfer fails the test with the peer's log.
    fn report(mut self) -> Run<Value> {
        let mut rest = String::new();
        self.stdout.read_to_string(&mut rest).unwrap();
        let status = self.child.wait().unwrap();
        if let Some(signal) = status.signal() {
            return Err(Crashed(format!("signal {signal}: {}", self.log())));
        }
        let report: Value = rest
            .lines()
            .last()
            .and_then(|line| serde_json::from_str(line).ok())
            .unwrap_or_else(|| panic!("no report from the peer ({status}): {}", self.log()));
        assert!(status.success(), "the peer failed: {report}\n{}", self.log());
        Ok(report)
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The picoquic end: handshake done, multipath offered by mpquic (its initial_max_path_id
/// transport parameter), two paths validated, its transfer done.
fn assert_peer_multipath(report: &Value) {
    assert_eq!(report["handshake"], true, "{report}");
    assert!(report["peer_initial_max_path_id"].as_u64().is_some(), "no multipath offer: {report}");
    // Two paths validated: path 0 and another (a picoquic client's probe that picoquic gave
    // up on leaves its path ID unused, so the second path is not always path 1).
    let validated = report["multipath_paths"].as_array().unwrap();
    let zero = validated.contains(&Value::from(0));
    assert!(zero && validated.len() >= 2, "fewer than two paths validated: {report}");
    assert_eq!(report["transfer"]["done"], true, "{report}");
}

/// Where picoquic sends, how it splits the data over the paths is its scheduler's choice, not
/// mpquic's: on a fast host (loopback at 5.4 Gbit/s) picoquic put 2.8% and 3.0% of a 12.9 MB
/// download on path 1 in 2 of 4 runs (2026-11-28), a loaded host 6.4-8.3%. What
/// mpquic is responsible for as the receiver is that its second path was opened, validated and
/// took data: at least this many bytes on it, ~45 full packets, more than a path's validation,
/// probes and ACKs ever carry (a few kB).
const PICOQUIC_SENDER_MIN_BYTES: u64 = 64 << 10;

/// Which end sent the bytes a spread check counts.
#[derive(Clone, Copy)]
enum Sender {
    Mpquic,
    Picoquic,
}

/// The pacing rate of `BWLIMIT`, bytes per second.
fn bwlimit_bytes_per_s() -> f64 {
    BWLIMIT.trim_end_matches('M').parse::<f64>().unwrap() * (1 << 20) as f64
}

/// Whether mpquic's report shows path `p` unable to carry its half of the paced rate with the
/// window it ended with (cwnd over smoothed RTT): a path that lost packets on a loaded host
/// (2 losses, 43 KB at 41 ms, 9.6% of a send under load 10 on 2026-11-29) then takes less than
/// its round-robin turn, as it should.
fn window_limited(p: &Value) -> bool {
    let (cwnd, srtt_ms) = (p["cwnd"].as_f64(), p["rtt_smoothed_ms"].as_f64());
    matches!((cwnd, srtt_ms), (Some(c), Some(r)) if r > 0.0 && c / (r / 1e3) < bwlimit_bytes_per_s() / 2.0)
}

/// The data went over two paths. Where mpquic sends (its own report in `paths`), at least two
/// paths each carried `MIN_SHARE` of the bytes counted in `field` (mpquic's round-robin deals
/// them), or, for a path whose window could not carry half the paced rate, at least
/// `PICOQUIC_SENDER_MIN_BYTES`. Where picoquic sends, or the counts are picoquic's, at least two
/// paths each carried `PICOQUIC_SENDER_MIN_BYTES`.
fn assert_spread(paths: &Value, field: &str, who: &str, sender: Sender) {
    let paths_list = paths.as_array().unwrap();
    let bytes: Vec<u64> = paths_list.iter().map(|p| p[field].as_u64().unwrap()).collect();
    let total: u64 = bytes.iter().sum();
    // Shown with --nocapture: the margin over the floor, run after run.
    eprintln!("{who}: {field} per path {bytes:?}");
    let (floors, expected): (Vec<u64>, String) = match sender {
        Sender::Mpquic => (
            paths_list
                .iter()
                .map(|p| match window_limited(p) {
                    true => PICOQUIC_SENDER_MIN_BYTES,
                    false => (MIN_SHARE * total as f64) as u64,
                })
                .collect(),
            format!(
                "mpquic's scheduler to give at least two paths {MIN_SHARE} of the bytes each \
                 ({PICOQUIC_SENDER_MIN_BYTES} bytes for a path whose window could not carry half \
                 of {BWLIMIT}/s)"
            ),
        ),
        Sender::Picoquic => (
            vec![PICOQUIC_SENDER_MIN_BYTES; bytes.len()],
            format!(
                "data on a second path (>= {PICOQUIC_SENDER_MIN_BYTES} bytes): the path was \
                 opened, validated and carried data"
            ),
        ),
    };
    let carrying = bytes.iter().zip(&floors).filter(|(b, f)| b >= f).count();
    assert!(carrying >= 2, "{who}: {field} per path {bytes:?}; expected {expected}: {paths}");
}

/// `copy` is byte-identical to `original`, whose BLAKE3 `reported` (the peer's) also names.
fn assert_same_file(original: &Path, copy: &Path, reported: &Value) {
    let hash = |path: &Path| blake3::hash(&std::fs::read(path).unwrap()).to_hex().to_string();
    let expected = hash(original);
    assert_eq!(hash(copy), expected, "{} differs from {}", copy.display(), original.display());
    assert_eq!(reported.as_str(), Some(expected.as_str()), "the peer's hash");
}

/// mpquic's report of path `id`.
fn path(report: &Value, id: u64) -> &Value {
    let paths = report["paths"].as_array().unwrap();
    paths.iter().find(|p| p["id"] == id).unwrap_or_else(|| panic!("no path {id}: {report}"))
}

fn path_ids(report: &Value) -> Vec<u64> {
    report["paths"].as_array().unwrap().iter().map(|p| p["id"].as_u64().unwrap()).collect()
}

/// The events of mpquic's `failovers` named `event`.
fn failovers<'a>(report: &'a Value, event: &str) -> Vec<&'a Value> {
    report["failovers"].as_array().unwrap().iter().filter(|e| e["event"] == event).collect()
}

#[test]
fn picoquic_client_uploads_to_and_downloads_from_mpquic_serve() {
    let Some(lab) = Lab::new("picoquic_client_uploads_to_and_downloads_from_mpquic_serve") else {
        return;
    };
    let original = lab.file("up.bin", 12 << 20);
    let store = lab.path("mpquic-store");
    retrying_peer_crashes(|| {
        // The download is mpquic's to split, so the server is set up as the mpquic clients
        // are: paced at BWLIMIT, so that round-robin's even split holds whatever the host's
        // speed (unpaced, one path took as little as 2%), and uncoupled (reno), so that an
        // early loss on one path does not rightly move the data off it.
        let server = ServerProcess::start(
            &["127.0.0.1"],
            &[
                "--insecure",
                "--dir",
                path_str(&store),
                "--overwrite",
                "--json",
                "--max-transfers",
                "2",
                "--scheduler",
                SCHEDULER,
                "--bwlimit",
                BWLIMIT,
                "--cc",
                "reno",
            ],
        );
        let addr = server.addr("127.0.0.1");

        let put = lab.picoquic_client(&addr, &["--put", path_str(&original)])?;
        assert_peer_multipath(&put);
        assert_spread(&put["paths"], "bytes_sent", "picoquic client (upload)", Sender::Picoquic);
        assert_same_file(&original, &store.join("up.bin"), &put["transfer"]["blake3"]);

        let copy = lab.path("down.bin");
        let get = lab.picoquic_client(&addr, &["--get", "up.bin", "--out", path_str(&copy)])?;
        assert_peer_multipath(&get);
        // picoquic's counts carry no window: the share is checked on mpquic serve's report below.
        assert_spread(
            &get["paths"],
            "bytes_received",
            "picoquic client (download)",
            Sender::Picoquic,
        );
        assert_same_file(&original, &copy, &get["transfer"]["blake3"]);

        let out = server.wait();
        let results: Vec<Value> = out.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        assert_eq!(results.len(), 2, "{out}");
        assert_eq!(results[0]["direction"], "receive");
        assert_spread(
            &results[0]["paths"],
            "bytes_received",
            "mpquic serve (upload)",
            Sender::Picoquic,
        );
        assert_eq!(results[1]["direction"], "upload");
        assert_spread(
            &results[1]["paths"],
            "bytes_sent",
            "mpquic serve (download)",
            Sender::Mpquic,
        );
        Ok(())
    });
}

#[test]
fn mpquic_send_and_get_against_a_picoquic_server() {
    let Some(lab) = Lab::new("mpquic_send_and_get_against_a_picoquic_server") else { return };
    let original = lab.file("up.bin", 12 << 20);
    let store = lab.path("picoquic-store");
    retrying_peer_crashes(|| {
        let mut server = lab.picoquic_server(&[]);
        // Uncoupled: a coupled controller moves data off a path that lost a packet early
        // (as it should), which the per-path share check would read as one path unused.
        let send = ["send", path_str(&original), "--cc", "reno"];
        let sent = lab.mpquic_client(&mut server, &send)?;
        let peer = server.report()?;
        assert_peer_multipath(&peer);
        assert_spread(&sent["paths"], "bytes_sent", "mpquic send", Sender::Mpquic);
        // picoquic's counts carry no window: the share is checked on mpquic's side above.
        let received = &peer["paths"];
        assert_spread(received, "bytes_received", "picoquic server", Sender::Picoquic);
        assert_same_file(&original, &store.join("up.bin"), &peer["transfer"]["blake3"]);

        let mut server = lab.picoquic_server(&[]);
        let copy = lab.path("down.bin");
        let got =
            lab.mpquic_client(&mut server, &["get", "up.bin", "-o", path_str(&copy), "--force"])?;
        let peer = server.report()?;
        assert_peer_multipath(&peer);
        assert_spread(&got["paths"], "bytes_received", "mpquic get", Sender::Picoquic);
        assert_spread(&peer["paths"], "bytes_sent", "picoquic server (download)", Sender::Picoquic);
        assert_same_file(&original, &copy, &peer["transfer"]["blake3"]);
        Ok(())
    });
}

/// `mpquic send` of a file long enough to outlive a re-open, to a picoquic server that
/// abandons path 1 with `code` early on; mpquic's report and the peer's.
fn send_while_picoquic_abandons(lab: &Lab, original: &Path, code: u64) -> Run<(Value, Value)> {
    let code = format!("{code:#x}");
    let mut server = lab.picoquic_server(&[
        "--abandon-path",
        "1",
        "--abandon-code",
        &code,
        "--abandon-after-bytes",
        "500000",
    ]);
    let sent = lab.mpquic_client(&mut server, &["send", path_str(original)])?;
    let peer = server.report()?;
    assert_peer_multipath(&peer);
    let abandoned = peer["abandoned_at_s"].as_f64().unwrap_or_else(|| panic!("{peer}"));
    let stored = lab.path("picoquic-store").join("abandon.bin");
    assert_same_file(original, &stored, &peer["transfer"]["blake3"]);
    Ok((sent, peer_with_window(peer, abandoned)))
}

/// The peer's report, checked to have lived `REOPEN_WINDOW_S` after its abandon: else the
/// absence of a re-open would prove nothing.
fn peer_with_window(peer: Value, abandoned: f64) -> Value {
    let ended = peer["ended_at_s"].as_f64().unwrap();
    assert!(
        ended - abandoned >= REOPEN_WINDOW_S,
        "the transfer ended {:.2} s after the abandon, too soon to tell a re-open: {peer}",
        ended - abandoned
    );
    peer
}

/// The case where picoquic abandons path 1 with `code`, which is no failure verdict: mpquic
/// closes it for `close_reason`, does not count it as failed, and never opens another.
fn closed_for_good_case(test: &str, code: u64, close_reason: &'static str) {
    abandon_case(test, code, |sent, _| {
        assert_eq!(path(sent, 1)["close_reason"], close_reason, "{sent}");
        assert!(failovers(sent, "path_failed").is_empty(), "counted as a failure: {sent}");
        assert!(failovers(sent, "path_recovered").is_empty(), "re-opened: {sent}");
        assert!(path_ids(sent).iter().all(|&id| id <= 1), "a path beyond 0 and 1: {sent}");
    });
}

/// The abandon case of `test`: picoquic abandons path 1 with `code`, then `check` sees mpquic's
/// report and the peer's.
fn abandon_case(test: &str, code: u64, check: impl Fn(&Value, &Value)) {
    let Some(lab) = Lab::new(test) else { return };
    let original = lab.file("abandon.bin", 24 << 20);
    retrying_peer_crashes(|| {
        let (sent, peer) = send_while_picoquic_abandons(&lab, &original, code)?;
        check(&sent, &peer);
        Ok(())
    });
}

#[test]
fn a_picoquic_abandon_for_resource_limit_is_respected() {
    let test = "a_picoquic_abandon_for_resource_limit_is_respected";
    closed_for_good_case(test, PATH_RESOURCE_LIMIT_REACHED, "resource_limit");
}

#[test]
fn a_picoquic_abandon_as_unstable_is_a_failure_and_the_path_reopens() {
    let test = "a_picoquic_abandon_as_unstable_is_a_failure_and_the_path_reopens";
    abandon_case(test, PATH_UNSTABLE_OR_POOR, |sent, peer| {
        assert_eq!(path(sent, 1)["close_reason"], "failed", "{sent}");
        assert!(failovers(sent, "path_failed").iter().any(|e| e["path"] == 1), "{sent}");
        let recovered = failovers(sent, "path_recovered");
        assert!(recovered.iter().any(|e| e["failed_path"] == 1), "not re-opened: {sent}");
        let reopened = recovered[0]["path"].as_u64().unwrap();
        assert!(reopened >= 2 && path_ids(sent).contains(&reopened), "{sent}");
        let validated = peer["multipath_paths"].as_array().unwrap();
        assert!(validated.contains(&Value::from(reopened)), "picoquic saw no re-open: {peer}");
    });
}

#[test]
fn a_picoquic_abandon_for_another_reason_closes_the_path_for_good() {
    let test = "a_picoquic_abandon_for_another_reason_closes_the_path_for_good";
    closed_for_good_case(test, APPLICATION_ABANDON_PATH, "closed_by_peer");
}

#[test]
fn mpquic_failover_tells_picoquic_path_unstable_or_poor() {
    let Some(lab) = Lab::new("mpquic_failover_tells_picoquic_path_unstable_or_poor") else {
        return;
    };
    let original = lab.file("drop.bin", 12 << 20);
    retrying_peer_crashes(|| {
        // From 1 MB on, everything mpquic sends on path 1 is lost: a black hole to mpquic.
        let mut server =
            lab.picoquic_server(&["--drop-path", "1", "--drop-after-bytes", "1000000"]);
        let send = ["send", path_str(&original), "--interval", "0.2"];
        let mut lines = lab.mpquic_client_lines(&mut server, &send)?;
        let sent = lines.pop().expect("a result line");
        let peer = server.report()?;
        assert_peer_multipath(&peer);
        assert!(peer["dropped_datagrams"].as_u64().unwrap() > 0, "{peer}");
        // The failure was told as it happened, with its retry delay (`--interval --json`).
        let told = lines.iter().find(|l| l["kind"] == "failover" && l["event"] == "path_failed");
        let told = told.unwrap_or_else(|| panic!("no failover line: {lines:?}"));
        assert_eq!(told["path"], 1, "{told}");
        assert!(told["retry_in_s"].as_f64().is_some_and(|s| s > 0.0), "{told}");
        let stored = lab.path("picoquic-store").join("drop.bin");
        assert_same_file(&original, &stored, &peer["transfer"]["blake3"]);
        assert_eq!(path(&sent, 1)["close_reason"], "failed", "{sent}");
        assert!(failovers(&sent, "path_failed").iter().any(|e| e["path"] == 1), "{sent}");
        // What picoquic received of path 1's abandon: its failure verdict, nothing else.
        let abandons: Vec<u64> = peer["abandons_received"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|a| a["path_id"] == 1)
            .map(|a| a["reason"].as_u64().unwrap())
            .collect();
        assert!(!abandons.is_empty(), "picoquic received no PATH_ABANDON of path 1: {peer}");
        assert!(
            abandons.iter().all(|&code| code == PATH_UNSTABLE_OR_POOR),
            "path 1 abandoned with {abandons:x?}, not PATH_UNSTABLE_OR_POOR (0x3e76)"
        );
        Ok(())
    });
}

#[test]
fn a_picoquic_backup_path_carries_little_while_path_0_lives() {
    let Some(lab) = Lab::new("a_picoquic_backup_path_carries_little_while_path_0_lives") else {
        return;
    };
    let original = lab.file("backup.bin", 12 << 20);
    retrying_peer_crashes(|| {
        let mut server = lab.picoquic_server(&["--backup-path", "1"]);
        // Not a failover test: without failure detection, a CPU-starved host that leaves
        // loopback silent past the 200 ms rule cannot fail path 0 and promote the backup (seen
        // at load 15: path 0 "failed" 3.2 s in, path 1 then "available").
        let send = ["send", path_str(&original), "--no-failover"];
        let sent = lab.mpquic_client(&mut server, &send)?;
        let peer = server.report()?;
        assert_peer_multipath(&peer);
        let stored = lab.path("picoquic-store").join("backup.bin");
        assert_same_file(&original, &stored, &peer["transfer"]["blake3"]);
        let backup = path(&sent, 1);
        assert_eq!(backup["status"], "backup", "{sent}");
        assert_eq!(path(&sent, 0)["status"], "available", "{sent}");
        let share = backup["share"].as_f64().unwrap();
        assert!(
            share < MIN_SHARE,
            "the backup path carried {:.1}% of the bytes: {sent}",
            share * 100.0
        );
        Ok(())
    });
}
