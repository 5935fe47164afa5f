//! Write your own coupled congestion controller and run it: a controller defined here, with the
//! public API only, registered by name and used for a verified two-path transfer on loopback.
//!
//! The controller, `user-lia`, is RFC 6356's LIA re-expressed through
//! [`mpquic::mpquic_cc::coupled`]: it implements the one hook that differs from the common
//! ground (the congestion-avoidance increase) and reads the coupled sums the shared core keeps.
//! Its parameter `cap` turns RFC 6356's per-path Reno cap off (`user-lia:cap=false`), to show how
//! parameters are declared and checked.
//!
//! ```sh
//! cargo run --release -p mpquic --example custom_controller                 # user-lia, 32 MB
//! cargo run --release -p mpquic --example custom_controller -- user-lia:cap=false
//! cargo run --release -p mpquic --example custom_controller -- lia 200M --json   # the built-in
//! ```
//!
//! The client sends `SIZE` bytes of a seeded hash stream over two paths (127.0.0.1 and
//! 127.0.0.2, packets spread round-robin); the server hashes what it receives, and the run fails
//! unless the hashes match, both paths carried data and the connection ran the controller asked
//! for. `--json` prints goodput and the process's CPU seconds, which `benches/loopback.py
//! --custom` compares between `user-lia` and the built-in `lia`.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::process::ExitCode;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use mpquic::mpquic_cc::coupled::{Algorithm, Core, Coupled, Coupling, Slot};
use mpquic::mpquic_cc::{register, RegisterError, Registration};
use mpquic::{Client, Congestion, Identity, Options, PathSpec, Scheduler, Server, Trust};

type Result<T, E = Box<dyn std::error::Error + Send + Sync>> = std::result::Result<T, E>;

/// LIA (RFC 6356 section 3), in bytes: per ACK of `bytes` on path `r` in congestion avoidance,
/// `min(MSS * bytes * max_k(w_k / rtt_k^2) / (sum_k w_k / rtt_k)^2, MSS * bytes / w_r)`.
/// Slow start, the halving on loss and CE (once per round) and everything else are the shared
/// core's defaults.
#[derive(Debug, Clone)]
struct UserLia {
    /// Whether the increase is capped at Reno's on the path (RFC 6356's second term).
    cap: bool,
}

impl Algorithm for UserLia {
    /// No per-path state of its own.
    type Path = ();

    fn name(&self) -> &'static str {
        "user-lia"
    }

    /// The core keeps `sum(w / rtt)` and `max(w / rtt^2)` up to date: O(1) per ACK.
    fn coupling(&self) -> Coupling {
        Coupling::Rates
    }

    fn ca_increase(&self, core: &Core<()>, path: Slot, bytes: u64) -> f64 {
        let p = core.path(path);
        let sums = core.sums();
        let step = p.mss_f() * bytes as f64;
        let reno = step / p.cwnd();
        if sums.rate_sum() <= 0.0 {
            return reno; // no RTT sample on any path yet
        }
        let coupled = step * sums.max_rate_per_rtt() / (sums.rate_sum() * sums.rate_sum());
        if self.cap {
            coupled.min(reno)
        } else {
            coupled
        }
    }
}

/// Register `user-lia` once per process (the tests share one).
fn register_user_lia() -> Result<(), RegisterError> {
    static REGISTERED: OnceLock<Result<(), RegisterError>> = OnceLock::new();
    REGISTERED
        .get_or_init(|| {
            register(Registration::new("user-lia", &["cap"], |params| {
                let cap = params.get_or("cap", true, |_| true, "expected true or false")?;
                Ok(Box::new(Coupled::new(UserLia { cap })))
            }))
        })
        .clone()
}

/// The two paths' addresses: both are loopback on Linux, and distinct to QUIC.
const ADDRESSES: [IpAddr; 2] =
    [IpAddr::V4(Ipv4Addr::new(127, 0, 0, 1)), IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2))];
const SERVER_NAME: &str = "custom.example";
const CHUNK: usize = 64 << 10;

/// What a run measured.
#[derive(Debug)]
struct Outcome {
    controller: &'static str,
    bytes: u64,
    seconds: f64,
    cpu_s: Option<f64>,
    /// Bytes the client sent on each path.
    per_path: Vec<u64>,
}

#[tokio::main]
async fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let json = args.iter().any(|a| a == "--json");
    let mut positional = args.iter().filter(|a| !a.starts_with("--"));
    let controller = positional.next().map_or("user-lia", String::as_str);
    let size = positional.next().map_or(Ok(32 << 20), |s| parse_size(s));
    let outcome = async {
        register_user_lia()?;
        run(controller.parse()?, size?).await
    };
    match outcome.await {
        Ok(o) => {
            print(&o, json);
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("custom_controller: error: {e}");
            ExitCode::FAILURE
        }
    }
}

/// `123`, `64K`, `32M` or `1G` (powers of 1000, as `mpquic demo --size` reads them).
fn parse_size(s: &str) -> Result<u64> {
    let (digits, scale) = match s.chars().last() {
        Some('K' | 'k') => (&s[..s.len() - 1], 1_000),
        Some('M' | 'm') => (&s[..s.len() - 1], 1_000_000),
        Some('G' | 'g') => (&s[..s.len() - 1], 1_000_000_000),
        _ => (s, 1),
    };
    Ok(digits.parse::<u64>().map_err(|e| format!("bad size `{s}`: {e}"))? * scale)
}

fn print(o: &Outcome, json: bool) {
    let mbps = o.bytes as f64 * 8.0 / o.seconds / 1e6;
    if json {
        let cpu = o.cpu_s.map_or("null".into(), |c| format!("{c:.4}"));
        println!(
            r#"{{"controller":"{}","bytes":{},"seconds":{:.4},"goodput_mbps":{mbps:.1},"cpu_s":{cpu},"per_path":{:?}}}"#,
            o.controller, o.bytes, o.seconds, o.per_path
        );
    } else {
        println!(
            "{}: {} bytes verified in {:.2} s ({mbps:.0} Mbit/s), per path {:?}",
            o.controller, o.bytes, o.seconds, o.per_path
        );
    }
}

/// One verified transfer of `size` bytes from a client to a server over both paths.
async fn run(congestion: Congestion, size: u64) -> Result<Outcome> {
    let options = Options { congestion, scheduler: Scheduler::RoundRobin, ..Options::default() };
    let identity = Identity::self_signed(&[SERVER_NAME.into()])?;
    let trust = Trust::Roots(identity.chain.clone());
    let server =
        Server::bind(&ADDRESSES.map(|ip| SocketAddr::new(ip, 0)), &identity, options.clone())?;
    let port = server.local_addr()?.port();
    let receiving = tokio::spawn(receive(server));

    let cpu_before = cpu_seconds();
    let start = Instant::now();
    let client = Client::new(&trust, ADDRESSES[0])?;
    let paths = ADDRESSES.map(|ip| PathSpec::new(Some(ip), SocketAddr::new(ip, port)));
    let (conn, failed) =
        client.connect(SERVER_NAME, &paths, &options, Duration::from_secs(5)).await?;
    if let Some(failure) = failed.first() {
        return Err(failure.to_string().into());
    }
    let mut send = conn.connection().open_uni().await?;
    let mut data = seeded_stream();
    let mut sent = blake3::Hasher::new();
    let mut chunk = vec![0; CHUNK];
    let mut left = size;
    while left > 0 {
        let n = left.min(CHUNK as u64) as usize;
        data.fill(&mut chunk[..n]);
        sent.update(&chunk[..n]);
        send.write_all(&chunk[..n]).await?;
        left -= n as u64;
    }
    send.finish()?;
    let (received, hash) = receiving.await??;
    let seconds = start.elapsed().as_secs_f64();
    let cpu_s = cpu_seconds().zip(cpu_before).map(|(after, before)| after - before);
    let report = conn.report();
    conn.connection().close(0u32.into(), b"done");
    client.wait_idle().await;

    if received != size || hash != sent.finalize() {
        return Err(
            format!("the server got {received} bytes that do not match what was sent").into()
        );
    }
    let per_path: Vec<u64> = report.paths.iter().map(|p| p.bytes_sent).collect();
    if per_path.iter().filter(|&&b| b > 0).count() < 2 {
        return Err(format!("the data went over one path only: {per_path:?}").into());
    }
    Ok(Outcome { controller: report.controller, bytes: size, seconds, cpu_s, per_path })
}

/// The bytes the client sends: a hash stream no bug could produce by accident.
fn seeded_stream() -> blake3::OutputReader {
    blake3::Hasher::new().update(b"custom_controller").finalize_xof()
}

/// Accept one connection and one stream; return how many bytes it carried and their hash.
async fn receive(server: Server) -> Result<(u64, blake3::Hash)> {
    let accepting = server.accept().await.ok_or("the server endpoint closed")?;
    let conn = accepting.established().await?;
    let mut recv = conn.connection().accept_uni().await?;
    let mut hasher = blake3::Hasher::new();
    let mut total = 0u64;
    let mut buf = vec![0; CHUNK];
    while let Some(n) = recv.read(&mut buf).await? {
        hasher.update(&buf[..n]);
        total += n as u64;
    }
    Ok((total, hasher.finalize()))
}

/// CPU seconds this process has used (user + system), for `--json`.
fn cpu_seconds() -> Option<f64> {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::uninit();
    // SAFETY: getrusage fills the struct it is given; RUSAGE_SELF is always valid.
    let ok = unsafe { libc::getrusage(libc::RUSAGE_SELF, usage.as_mut_ptr()) } == 0;
    // SAFETY: getrusage succeeded, so the struct is initialized.
    let usage = ok.then(|| unsafe { usage.assume_init() })?;
    let seconds = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    Some(seconds(usage.ru_utime) + seconds(usage.ru_stime))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(flavor = "multi_thread")]
    async fn a_user_controller_moves_verified_bytes_over_two_paths() {
        register_user_lia().unwrap();
        for spec in ["user-lia", "user-lia:cap=false"] {
            let outcome =
                run(spec.parse().unwrap(), 8 << 20).await.unwrap_or_else(|e| panic!("{spec}: {e}"));
            assert_eq!(outcome.controller, "user-lia");
            assert_eq!(outcome.bytes, 8 << 20);
        }
    }

    #[test]
    fn its_name_and_parameters_are_checked_like_a_builtins() {
        register_user_lia().unwrap();
        assert_eq!("USER-LIA".parse::<Congestion>().unwrap().name(), "user-lia");
        let err = "user-lia:beta=2".parse::<Congestion>().unwrap_err().to_string();
        assert!(err.contains("no parameter `beta` (it has: cap)"), "{err}");
        let err = "user-lia:cap=maybe".parse::<Congestion>().unwrap_err().to_string();
        assert!(err.contains("bad value `maybe`"), "{err}");
        // A name is registered once; a built-in's or the transport's cannot be taken.
        let again =
            Registration::new("lia", &[], |_| Ok(Box::new(Coupled::new(UserLia { cap: true }))));
        assert_eq!(register(again), Err(RegisterError::Taken("lia".into())));
    }
}
