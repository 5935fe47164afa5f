//! The exit codes scripts rely on, one test per code that loopback can produce; `--bwlimit`
//! (the client's and `serve`'s); shell completions.

mod common;

use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use common::*;

fn code(out: &std::process::Output) -> i32 {
    out.status.code().unwrap_or_else(|| panic!("killed by a signal: {}", stderr(out)))
}

/// A server storing into a fresh directory (kept alive by the returned handle).
fn store_server() -> (ServerProcess, tempfile::TempDir) {
    let store = tempfile::tempdir().unwrap();
    let server = ServerProcess::start(
        &["127.0.0.1"],
        &["--insecure", "--dir", store.path().to_str().unwrap()],
    );
    (server, store)
}

#[test]
fn success_is_0_other_errors_1_and_usage_2() {
    let (server, _store) = store_server();
    let tmp = tempfile::tempdir().unwrap();
    let file = random_file(tmp.path(), "a.bin", 10_000);
    let addr = server.addr("127.0.0.1");
    let ok = mpquic(&["send", file.to_str().unwrap(), "--server", &addr, "--insecure"]);
    assert_eq!(code(&ok), 0, "{}", stderr(&ok));
    let missing = tmp.path().join("missing.bin");
    let other = mpquic(&["send", missing.to_str().unwrap(), "--server", &addr, "--insecure"]);
    assert_eq!(code(&other), 1, "{}", stderr(&other));
    let usage = mpquic(&["send", "--no-such-flag"]);
    assert_eq!(code(&usage), 2, "{}", stderr(&usage));
}

#[test]
fn a_server_that_is_not_there_is_a_connection_failure_3() {
    // A port nothing listens on: bind one, learn its number, close it.
    let port = std::net::UdpSocket::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let out = mpquic(&[
        "send",
        "--generate",
        "1K",
        "--server",
        &format!("127.0.0.1:{port}"),
        "--insecure",
        "--timeout",
        "1",
    ]);
    assert_eq!(code(&out), 3, "{}", stderr(&out));
}

#[test]
fn a_refusal_by_the_server_is_4() {
    let (server, store) = store_server();
    random_file(store.path(), "taken.bin", 1000);
    let addr = server.addr("127.0.0.1");
    let tmp = tempfile::tempdir().unwrap();
    let missing = tmp.path().join("copy");
    let out = mpquic(&[
        "get",
        "nope.bin",
        "-o",
        missing.to_str().unwrap(),
        "--server",
        &addr,
        "--insecure",
    ]);
    assert_eq!(code(&out), 4, "{}", stderr(&out));
    let file = random_file(tmp.path(), "taken.bin", 2000);
    let out = mpquic(&["send", file.to_str().unwrap(), "--server", &addr, "--insecure"]);
    assert_eq!(code(&out), 4, "{}", stderr(&out));
    assert!(stderr(&out).contains("already exists"), "{}", stderr(&out));
}

/// A server that answers a resumable download ('D') with the right size and data but a wrong
/// hash.
fn lying_server(runtime: &tokio::runtime::Runtime) -> SocketAddr {
    use mpquic::{Identity, Options, Server};
    let _guard = runtime.enter();
    let identity = Identity::self_signed(&["127.0.0.1".into()]).unwrap();
    let listen = ["127.0.0.1:0".parse().unwrap()];
    let server = Server::bind(&listen, &identity, Options::default()).unwrap();
    let addr = server.local_addr().unwrap();
    runtime.spawn(async move {
        let conn = server.accept().await.unwrap().established().await.unwrap();
        let (mut send, mut recv) = conn.connection().accept_bi().await.unwrap();
        let mut header = [0u8; 7];
        recv.read_exact(&mut header).await.unwrap();
        let mut name = vec![0u8; u16::from_be_bytes([header[5], header[6]]) as usize];
        recv.read_exact(&mut name).await.unwrap();
        assert_eq!(header[4], b'D', "a resumable download");
        let data = vec![7u8; 5000];
        let mut answer = vec![0u8, 0, 0]; // reply: OK, no message
        answer.extend_from_slice(&(data.len() as u64).to_be_bytes());
        send.write_all(&answer).await.unwrap();
        // The client's offer: chunk size, no chunks (it holds nothing); the data starts at 0.
        let mut offer = [0u8; 12];
        recv.read_exact(&mut offer).await.unwrap();
        assert_eq!(&offer[8..], &[0, 0, 0, 0]);
        let mut answer = 0u64.to_be_bytes().to_vec();
        answer.extend_from_slice(&data);
        answer.extend_from_slice(blake3::hash(b"other data").as_bytes());
        send.write_all(&answer).await.unwrap();
        send.finish().unwrap();
        let _ = send.stopped().await;
        std::future::pending::<()>().await;
    });
    addr
}

#[test]
fn data_that_fails_its_hash_is_a_verification_failure_5_and_is_not_kept() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let addr = lying_server(&runtime);
    let tmp = tempfile::tempdir().unwrap();
    let target = tmp.path().join("copy.bin");
    let out = mpquic(&[
        "get",
        "x.bin",
        "-o",
        target.to_str().unwrap(),
        "--server",
        &addr.to_string(),
        "--insecure",
    ]);
    assert_eq!(code(&out), 5, "{}", stderr(&out));
    assert!(stderr(&out).contains("integrity check failed"), "{}", stderr(&out));
    assert!(files_in(tmp.path()).is_empty(), "nothing kept: {:?}", files_in(tmp.path()));
}

/// A capped upload of far more than it can send in a few seconds, running.
fn slow_upload(addr: &str) -> Child {
    Command::new(BIN)
        .args(["send", "--generate", "1G", "--bwlimit", "1M", "--server", addr, "--insecure"])
        .args(["--name", "slow.bin", "--json"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

#[test]
fn a_signal_is_130_for_ctrl_c_and_143_for_sigterm_and_leaves_no_file() {
    let (server, store) = store_server();
    for (signal, expected) in [(libc::SIGINT, 130), (libc::SIGTERM, 143)] {
        let client = slow_upload(&server.addr("127.0.0.1"));
        // Under way (the handlers are installed before the connection is made).
        std::thread::sleep(Duration::from_millis(1500));
        // SAFETY: a signal to our own child, which has not been reaped.
        assert_eq!(unsafe { libc::kill(client.id() as i32, signal) }, 0);
        let out = client.wait_with_output().unwrap();
        assert_eq!(code(&out), expected, "{}", stderr(&out));
        assert!(stderr(&out).contains("interrupted by"), "{}", stderr(&out));
    }
    // Nothing that looks complete: the server keeps only the (hidden) partial copy, for the
    // next send of slow.bin to resume.
    let left = files_in(store.path());
    assert!(left.iter().all(|name| name.starts_with(".mpquic-part-resume-")), "{left:?}");
}

/// A 3 MiB send to `addr` and the get of it back, each with `client_args` added, take at least
/// what a cap of 1 MiB/s allows (less its only slack: the burst of 256 KiB and one chunk read
/// before the first wait), and the copy fetched is the file sent.
fn assert_capped_at_one_mib_per_second(addr: &str, client_args: &[&str], who: &str) {
    const SIZE: f64 = 3.0 * 1048576.0;
    const RATE: f64 = 1048576.0;
    let floor = (SIZE - 2.0 * 262144.0) / RATE;
    let tmp = tempfile::tempdir().unwrap();
    let file = random_file(tmp.path(), "capped.bin", SIZE as usize);
    let copy = tmp.path().join("copy.bin");
    let (file, copy) = (file.to_str().unwrap(), copy.to_str().unwrap());
    for command in [vec!["send", file], vec!["get", "capped.bin", "-o", copy]] {
        let args = [&command[..], client_args, &["--server", addr, "--insecure", "--json"]];
        let fct = json(&mpquic(&args.concat()))["fct_s"].as_f64().unwrap();
        assert!(fct >= floor, "{}: 3 MiB {who} took {fct} s", command[0]);
    }
    assert_eq!(std::fs::read(copy).unwrap(), std::fs::read(file).unwrap());
}

#[test]
fn bwlimit_caps_uploads_and_downloads_from_below() {
    let (server, _store) = store_server();
    let addr = server.addr("127.0.0.1");
    assert_capped_at_one_mib_per_second(&addr, &["--bwlimit", "1M"], "at 1 MiB/s");
}

/// `serve --bwlimit` caps what the server reads and writes, whoever asks: an upload to it and
/// a download from it, each uncapped at the client, take the server's time (its bucket is
/// shared by both transfers, so the second gets no more than the first).
#[test]
fn serve_bwlimit_caps_what_the_server_receives_and_sends() {
    let store = tempfile::tempdir().unwrap();
    let dir = store.path().to_str().unwrap();
    let server =
        ServerProcess::start(&["127.0.0.1"], &["--insecure", "--dir", dir, "--bwlimit", "1M"]);
    let addr = server.addr("127.0.0.1");
    assert_capped_at_one_mib_per_second(&addr, &[], "from a server at 1 MiB/s");
}

#[test]
fn help_lists_the_exit_codes_and_bash_completes_the_subcommands() {
    let help = mpquic(&["--help"]);
    let text = String::from_utf8_lossy(&help.stdout);
    for line in ["Exit codes:", "  3    connection failure", "  5    verification failure"] {
        assert!(text.contains(line), "{line:?} in {text}");
    }
    let out = mpquic(&["completions", "bash"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let script = String::from_utf8_lossy(&out.stdout);
    assert!(script.contains("complete -F"), "{script}");
    for sub in ["serve", "send", "get", "completions"] {
        assert!(script.contains(sub), "{sub} in the bash script");
    }
}
