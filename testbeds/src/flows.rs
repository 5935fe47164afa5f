//! Flows: our own kernel TCP / MPTCP sender and sink (hidden subcommands of this binary, run
//! inside the namespaces), the `mpquic` CLI, and the plumbing to start them and collect output.

use crate::marker::mono_ns;
use anyhow::{anyhow, bail, Context, Result};
use serde::{Deserialize, Serialize};
use socket2::{Domain, Protocol, SockAddr, Socket, Type};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

pub const IPPROTO_MPTCP: i32 = 262;

fn stream_socket(mptcp: bool) -> Result<Socket> {
    let proto = if mptcp { Protocol::from(IPPROTO_MPTCP) } else { Protocol::TCP };
    Socket::new(Domain::IPV4, Type::STREAM, Some(proto)).with_context(|| {
        if mptcp {
            "socket(IPPROTO_MPTCP): is net.mptcp.enabled=1 and the kernel built with MPTCP?"
                .to_string()
        } else {
            "socket(TCP)".to_string()
        }
    })
}

/// One received connection, as the sink reports it (one JSON line each).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SinkRecord {
    pub peer: String,
    pub bytes: u64,
    pub first_ns: u64,
    pub last_ns: u64,
    /// (CLOCK_MONOTONIC ns, cumulative bytes)
    pub samples: Vec<(u64, u64)>,
}

/// `__sink`: accepts connections and reads them to EOF; prints one JSON line per connection.
pub fn sink_main(listen: SocketAddr, mptcp: bool, interval_ms: u64) -> Result<()> {
    let s = stream_socket(mptcp)?;
    s.set_reuse_address(true)?;
    s.bind(&SockAddr::from(listen))?;
    s.listen(256)?;
    let out = Arc::new(Mutex::new(std::io::stdout()));
    println!("{{\"listening\":\"{listen}\"}}");
    std::io::stdout().flush()?;
    loop {
        let (conn, peer) = s.accept()?;
        let out = out.clone();
        std::thread::spawn(move || {
            let mut stream: TcpStream = conn.into();
            let peer = peer.as_socket().map(|p| p.to_string()).unwrap_or_default();
            let mut buf = vec![0u8; 256 * 1024];
            let mut bytes = 0u64;
            let mut samples = Vec::new();
            let first_ns = mono_ns();
            let mut next = first_ns;
            let step = interval_ms * 1_000_000;
            let mut last_ns = first_ns;
            loop {
                match stream.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => {
                        bytes += n as u64;
                        last_ns = mono_ns();
                        if last_ns >= next {
                            samples.push((last_ns, bytes));
                            next = last_ns + step;
                        }
                    }
                }
            }
            samples.push((last_ns, bytes));
            let rec = SinkRecord { peer, bytes, first_ns, last_ns, samples };
            let line = serde_json::to_string(&rec).unwrap_or_default();
            // Closing tells the sender that everything arrived (its FCT ends here).
            drop(stream);
            let mut o = out.lock().unwrap();
            let _ = writeln!(o, "{line}");
            let _ = o.flush();
        });
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SendRecord {
    pub local: String,
    pub remote: String,
    pub bytes: u64,
    pub start_ns: u64,
    pub end_ns: u64,
    pub fct_s: f64,
    pub goodput_mbps: f64,
    pub cc: String,
    pub mptcp: bool,
}

/// `__send`: connects, sends `bytes` (or for `for_s` seconds), waits until the sink has read
/// everything and closed, prints one JSON line.
pub fn send_main(server: SocketAddr, mptcp: bool, cc: &str, bytes: u64, for_s: f64) -> Result<()> {
    let s = stream_socket(mptcp)?;
    // Per socket: new namespaces default to bbr and it cannot be changed there.
    s.set_tcp_congestion(cc.as_bytes()).with_context(|| format!("TCP_CONGESTION={cc}"))?;
    let start_ns = mono_ns();
    s.connect(&SockAddr::from(server)).with_context(|| format!("connecting to {server}"))?;
    let local = s.local_addr()?.as_socket().map(|a| a.to_string()).unwrap_or_default();
    let mut stream: TcpStream = s.into();
    let buf = vec![0x5au8; 64 * 1024];
    let mut sent = 0u64;
    let t0 = Instant::now();
    loop {
        let n = if bytes > 0 {
            if sent >= bytes {
                break;
            }
            ((bytes - sent) as usize).min(buf.len())
        } else {
            if t0.elapsed().as_secs_f64() >= for_s {
                break;
            }
            buf.len()
        };
        stream.write_all(&buf[..n])?;
        sent += n as u64;
    }
    stream.shutdown(std::net::Shutdown::Write)?;
    let mut tmp = [0u8; 64];
    while stream.read(&mut tmp)? > 0 {}
    let end_ns = mono_ns();
    let fct_s = (end_ns - start_ns) as f64 / 1e9;
    let rec = SendRecord {
        local,
        remote: server.to_string(),
        bytes: sent,
        start_ns,
        end_ns,
        fct_s,
        goodput_mbps: sent as f64 * 8.0 / fct_s / 1e6,
        cc: cc.to_string(),
        mptcp,
    };
    println!("{}", serde_json::to_string(&rec)?);
    Ok(())
}

/// CPU seconds (user + system) a process has used so far, from `/proc/<pid>/stat` (also
/// readable while it is a zombie, before it is reaped). `ip netns exec` execs the program, so
/// the pid is the program's own.
pub fn proc_cpu_s(pid: u32) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &stat[stat.rfind(')')? + 1..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    // Fields after the command: state (3), ..., utime (14), stime (15).
    let utime: f64 = f.get(11)?.parse().ok()?;
    let stime: f64 = f.get(12)?.parse().ok()?;
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    (hz > 0.0).then(|| (utime + stime) / hz)
}

/// A process started inside a namespace, its stdout collected line by line.
pub struct Proc {
    child: Child,
    /// CPU seconds, read just before the process was reaped or signalled.
    cpu_s: Option<f64>,
    lines: Arc<Mutex<Vec<String>>>,
    err_lines: Arc<Mutex<Vec<String>>>,
    reader: Option<JoinHandle<()>>,
    err_reader: Option<JoinHandle<()>>,
}

impl Proc {
    pub fn spawn(ns: &str, program: &str, args: &[String]) -> Result<Proc> {
        Proc::spawn_in(Some(ns), program, args)
    }

    /// As `spawn`, in namespace `ns` or, without one, in this process's own.
    pub fn spawn_in(ns: Option<&str>, program: &str, args: &[String]) -> Result<Proc> {
        let mut command = match ns {
            Some(ns) => {
                let mut c = Command::new("ip");
                c.args(["netns", "exec", ns, program]);
                c
            }
            None => Command::new(program),
        };
        let mut child = command
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .with_context(|| format!("starting {program} in {}", ns.unwrap_or("this namespace")))?;
        let lines = Arc::new(Mutex::new(Vec::new()));
        let out = child.stdout.take().ok_or_else(|| anyhow!("no stdout"))?;
        let l2 = lines.clone();
        let reader = std::thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                l2.lock().unwrap().push(line);
            }
        });
        let err = child.stderr.take().ok_or_else(|| anyhow!("no stderr"))?;
        let err_lines = Arc::new(Mutex::new(Vec::new()));
        let e2 = err_lines.clone();
        let err_reader = std::thread::spawn(move || {
            for line in BufReader::new(err).lines().map_while(Result::ok) {
                e2.lock().unwrap().push(line);
            }
        });
        Ok(Proc {
            child,
            cpu_s: None,
            lines,
            err_lines,
            reader: Some(reader),
            err_reader: Some(err_reader),
        })
    }

    pub fn lines(&self) -> Vec<String> {
        self.lines.lock().unwrap().clone()
    }

    /// Stderr so far, one string.
    pub fn stderr(&self) -> String {
        self.err_lines.lock().unwrap().join("\n")
    }

    /// Waits until a stderr line satisfies `f`, the process exits, or the timeout.
    pub fn wait_err_line(&mut self, timeout: Duration, f: impl Fn(&str) -> bool) -> bool {
        let t = Instant::now();
        while t.elapsed() < timeout {
            if self.err_lines.lock().unwrap().iter().any(|l| f(l)) {
                return true;
            }
            if self.child.try_wait().ok().flatten().is_some() {
                return false;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        false
    }

    /// Waits until a stdout line satisfies `f`, or the timeout.
    pub fn wait_line(&self, timeout: Duration, f: impl Fn(&str) -> bool) -> bool {
        let t = Instant::now();
        while t.elapsed() < timeout {
            if self.lines().iter().any(|l| f(l)) {
                return true;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        false
    }

    pub fn try_done(&mut self) -> Result<Option<bool>> {
        Ok(self.try_status()?.map(|s| s.success()))
    }

    /// Its exit status, once it has exited.
    pub fn try_status(&mut self) -> Result<Option<std::process::ExitStatus>> {
        self.note_cpu_if_exited();
        Ok(self.child.try_wait()?)
    }

    /// The program's pid (`ip netns exec` execs it: the program's own).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Sends `signal` now, without waiting.
    pub fn signal(&self, signal: nix::sys::signal::Signal) {
        let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(self.child.id() as i32), signal);
    }

    /// If the child has exited (a zombie, not yet reaped), records its CPU time.
    fn note_cpu_if_exited(&mut self) {
        if self.cpu_s.is_some() {
            return;
        }
        // SAFETY: a zeroed siginfo_t is a valid out-parameter; WNOWAIT leaves the child
        // waitable, so std's Child still reaps it.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        let r = unsafe {
            libc::waitid(
                libc::P_PID,
                self.child.id(),
                &mut info,
                libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
            )
        };
        // SAFETY: waitid filled `info` (si_pid 0 when the child has not exited).
        if r == 0 && unsafe { info.si_pid() } != 0 {
            self.cpu_s = proc_cpu_s(self.child.id());
        }
    }

    /// Ends the process (SIGTERM, then SIGKILL) and returns (stdout lines, stderr).
    pub fn stop(self) -> (Vec<String>, String) {
        let (l, e, _) = self.stop_cpu();
        (l, e)
    }

    /// As `stop`, and the process's CPU seconds (read before it is signalled or reaped).
    pub fn stop_cpu(mut self) -> (Vec<String>, String, Option<f64>) {
        let pid = nix::unistd::Pid::from_raw(self.child.id() as i32);
        self.note_cpu_if_exited();
        if self.cpu_s.is_none() {
            self.cpu_s = proc_cpu_s(self.child.id());
        }
        if self.child.try_wait().ok().flatten().is_none() {
            let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
            let t = Instant::now();
            while t.elapsed() < TERM_GRACE {
                if self.child.try_wait().ok().flatten().is_some() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(10));
            }
            let _ = self.child.kill();
        }
        let _ = self.child.wait();
        if let Some(r) = self.reader.take() {
            let _ = r.join();
        }
        if let Some(r) = self.err_reader.take() {
            let _ = r.join();
        }
        (self.lines(), self.stderr(), self.cpu_s)
    }

    /// Waits for exit (up to `timeout`), then stops: (stdout lines, stderr, success, CPU s).
    pub fn finish(mut self, timeout: Duration) -> Result<(Vec<String>, String, bool, Option<f64>)> {
        let t = Instant::now();
        let mut ok = None;
        while t.elapsed() < timeout {
            if let Some(s) = self.try_done()? {
                ok = Some(s);
                break;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        let (l, e, cpu) = self.stop_cpu();
        Ok((l, e, ok.unwrap_or(false), cpu))
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// How long a process may take to end after SIGTERM before it is killed. A timed `mpquic send`
/// ends cleanly on it, but first delivers what its stream has buffered (up to the receiver's
/// window, 1.25 MB by default): 17 flows sharing 100 Mbit/s need ~1.7 s for that, and with
/// the 1.5 s this used to be every one of them was killed unreported (amp-fig4b-k20).
const TERM_GRACE: Duration = Duration::from_secs(5);

/// The `mpquic` CLI binary to start: $MPQUIC_BIN, or target/{release,debug}/mpquic of the
/// workspace, as it was at the first call (see `programs`).
pub fn mpquic_bin() -> Result<String> {
    if let Ok(p) = std::env::var("MPQUIC_BIN") {
        return crate::programs::pinned(p.as_ref());
    }
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    for prof in ["release", "debug"] {
        let p = root.join("target").join(prof).join("mpquic");
        if p.is_file() {
            return crate::programs::pinned(&p);
        }
    }
    bail!("the mpquic CLI binary was not found: build it (cargo build --release -p <cli package>) or set MPQUIC_BIN")
}

/// Reads counters from /proc/net/netstat (IpExt/TcpExt) and /proc/net/snmp (Ip, Udp, ...)
/// inside a namespace.
pub fn netstat(ns: &str) -> Result<std::collections::BTreeMap<String, u64>> {
    let text = crate::netns::run(
        "ip",
        &["netns", "exec", ns, "cat", "/proc/net/netstat", "/proc/net/snmp"],
    )?;
    let lines: Vec<&str> = text.lines().collect();
    let mut m = std::collections::BTreeMap::new();
    for pair in lines.chunks(2) {
        if pair.len() < 2 {
            continue;
        }
        let mut names = pair[0].split_whitespace();
        let mut vals = pair[1].split_whitespace();
        let prefix = names.next().unwrap_or("").trim_end_matches(':').to_string();
        vals.next();
        for (n, v) in names.zip(vals) {
            m.insert(format!("{prefix}.{n}"), v.parse().unwrap_or(0));
        }
    }
    Ok(m)
}
