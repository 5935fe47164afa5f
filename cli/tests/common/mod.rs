//! Helpers of the end-to-end tests: the `mpquic` binary, a server process, files.
#![allow(dead_code)] // each test binary uses its own share of them

use std::io::{BufRead, BufReader, Read};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mpquic::noq;
use serde_json::Value;

pub const BIN: &str = env!("CARGO_BIN_EXE_mpquic");

pub fn mpquic(args: &[&str]) -> Output {
    Command::new(BIN).args(args).stdin(Stdio::null()).output().expect("run mpquic")
}

/// A running `mpquic serve`, killed on drop.
pub struct ServerProcess {
    pub child: Child,
    pub port: u16,
    pub stderr: Arc<Mutex<String>>,
}

impl ServerProcess {
    /// Start `mpquic serve` on the given loopback IPs (port chosen by the OS) with extra args;
    /// without `--client-ca` among them, it accepts anonymous clients.
    pub fn start(ips: &[&str], extra: &[&str]) -> ServerProcess {
        let mut args = vec!["serve".to_string()];
        if !extra.contains(&"--client-ca") {
            args.push("--allow-anonymous".into());
        }
        for ip in ips {
            args.push("--listen".into());
            args.push(format!("{ip}:0"));
        }
        args.extend(extra.iter().map(|s| s.to_string()));
        let mut child = Command::new(BIN)
            .args(&args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start server");
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let mut seen = String::new();
        let port = loop {
            let line = lines.next().unwrap_or_else(|| panic!("server exited: {seen}")).unwrap();
            seen.push_str(&line);
            seen.push('\n');
            if let Some(rest) = line.strip_prefix("mpquic: serving on ") {
                let addr = rest.split([',', ' ']).next().unwrap();
                break addr.rsplit(':').next().unwrap().parse().unwrap();
            }
        };
        let stderr = Arc::new(Mutex::new(seen));
        let sink = stderr.clone();
        std::thread::spawn(move || {
            for line in lines.map_while(Result::ok) {
                let mut s = sink.lock().unwrap();
                s.push_str(&line);
                s.push('\n');
            }
        });
        ServerProcess { child, port, stderr }
    }

    pub fn addr(&self, ip: &str) -> String {
        format!("{ip}:{}", self.port)
    }

    /// Wait for the server to exit by itself (e.g. after --max-transfers); returns its stdout.
    pub fn wait(mut self) -> String {
        let deadline = Instant::now() + Duration::from_secs(30);
        while self.child.try_wait().unwrap().is_none() {
            assert!(
                Instant::now() < deadline,
                "server did not exit: {}",
                self.stderr.lock().unwrap()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        let mut out = String::new();
        self.child.stdout.take().unwrap().read_to_string(&mut out).unwrap();
        out
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn random_file(dir: &Path, name: &str, len: usize) -> PathBuf {
    // A simple LCG is enough to make every byte position distinct from its neighbours.
    let mut x: u64 = len as u64 ^ 0x9e37_79b9_7f4a_7c15;
    let data: Vec<u8> = (0..len)
        .map(|_| {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (x >> 56) as u8
        })
        .collect();
    let path = dir.join(name);
    std::fs::write(&path, data).unwrap();
    path
}

pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

pub fn json(out: &Output) -> Value {
    assert!(out.status.success(), "mpquic failed: {}", stderr(out));
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("bad JSON ({e}): {}", String::from_utf8_lossy(&out.stdout)))
}

/// Only the final file may exist in `dir`: no temporaries left behind.
pub fn files_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

pub fn nix_is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

/// A bare QUIC client speaking the transfer protocol by hand, trusting any server certificate
/// and presenting none: it plays the stranger.
pub struct Stranger {
    pub runtime: tokio::runtime::Runtime,
    pub endpoint: noq::Endpoint,
}

impl Stranger {
    /// A stranger at a loopback address (any of 127.0.0.0/8 is this host).
    pub fn at(ip: &str) -> Self {
        let runtime = tokio::runtime::Runtime::new().unwrap();
        let bind = SocketAddr::new(ip.parse().unwrap(), 0);
        let endpoint = runtime.block_on(async { noq::Endpoint::client(bind) });
        Stranger { runtime, endpoint: endpoint.unwrap() }
    }

    pub fn connect(&self, addr: &str) -> Result<noq::Connection, String> {
        let addr: SocketAddr = addr.parse().unwrap();
        let crypto = mpquic::Trust::InsecureAnyCertificate.client_crypto().unwrap();
        let connecting =
            self.endpoint.connect_with(noq::ClientConfig::new(crypto), addr, "localhost");
        self.runtime.block_on(async {
            let connecting = connecting.map_err(|e| e.to_string())?;
            tokio::time::timeout(Duration::from_secs(5), connecting)
                .await
                .map_err(|_| "timed out".to_string())?
                .map_err(|e| e.to_string())
        })
    }

    /// Send `bytes` on a new stream (then finish it, if `finish`), and return the server's
    /// reply message: `Ok(text)` for an OK reply, `Err(text)` for an error reply or none.
    pub fn ask(
        &self,
        conn: &noq::Connection,
        bytes: &[u8],
        finish: bool,
    ) -> Result<String, String> {
        self.runtime.block_on(async {
            let (mut send, mut recv) = conn.open_bi().await.map_err(|e| e.to_string())?;
            send.write_all(bytes).await.map_err(|e| e.to_string())?;
            if finish {
                send.finish().map_err(|e| e.to_string())?;
            }
            let mut fixed = [0u8; 3];
            let read = tokio::time::timeout(Duration::from_secs(10), recv.read_exact(&mut fixed));
            read.await.map_err(|_| "no reply".to_string())?.map_err(|e| e.to_string())?;
            let mut msg = vec![0u8; u16::from_be_bytes([fixed[1], fixed[2]]) as usize];
            recv.read_exact(&mut msg).await.map_err(|e| e.to_string())?;
            let text = String::from_utf8_lossy(&msg).into_owned();
            if fixed[0] == 0 {
                Ok(text)
            } else {
                Err(text)
            }
        })
    }

    /// Wait up to `limit` for the server to close `conn`; its reason, or `None` if still open.
    pub fn closed_within(&self, conn: &noq::Connection, limit: Duration) -> Option<String> {
        self.runtime
            .block_on(async { tokio::time::timeout(limit, conn.closed()).await.ok() })
            .map(|e| e.to_string())
    }
}

/// A request header: "MPQ1", op, name length, name (and the size of a put).
pub fn header(op: u8, name: &[u8], size: Option<u64>) -> Vec<u8> {
    let mut h = b"MPQ1".to_vec();
    h.push(op);
    h.extend_from_slice(&(name.len() as u16).to_be_bytes());
    h.extend_from_slice(name);
    if let Some(size) = size {
        h.extend_from_slice(&size.to_be_bytes());
    }
    h
}
