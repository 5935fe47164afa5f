//! An object-fetch service over multipath QUIC: one server, many clients, each client connected
//! over two paths, fetching objects by name and checking them against the server's manifest.
//!
//! It runs by itself on loopback: the server listens on 127.0.0.1 and 127.0.0.2 (one port), and
//! every client opens one path to each address. The server's certificate is self-signed and the
//! clients trust it as their CA, so the handshake verifies it as it would a real one. At the end,
//! the server prints each connection's per-path statistics from `MultipathConnection::report`.
//!
//! ```sh
//! cargo run --release -p mpquic --example object_fetch            # AMP, the library's default
//! cargo run --release -p mpquic --example object_fetch -- xmp:beta=4
//! RUST_LOG=mpquic=debug cargo run --release -p mpquic --example object_fetch
//! ```
//!
//! The protocol: one bidirectional stream per request; the client writes an object's name and
//! finishes its side, the server answers with the object's bytes (or resets the stream with
//! `NOT_FOUND`). The object `manifest` lists every other object as `name size blake3-hex` lines.
//! The process exits non-zero if any client fails, any object does not match the manifest, or a
//! connection did not carry data over both of its paths.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use futures_util::future::join_all;
use mpquic::noq::{RecvStream, SendStream, VarInt};
use mpquic::{
    Client, ConnectionReport, Identity, MultipathConnection, Options, PathSpec, Scheduler, Server,
    Trust,
};

type Result<T, E = Box<dyn std::error::Error + Send + Sync>> = std::result::Result<T, E>;
/// The server's objects by name.
type Objects = HashMap<String, Vec<u8>>;

/// The two paths' addresses: both are loopback on Linux, and distinct to QUIC.
const ADDRESSES: [IpAddr; 2] =
    [IpAddr::V4(Ipv4Addr::new(127, 0, 0, 1)), IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2))];
/// The name in the server's certificate, which clients check.
const SERVER_NAME: &str = "objects.example";
const CLIENTS: usize = 4;
/// Objects of 16 KiB, 32 KiB, ... 2 MiB.
const OBJECTS: u32 = 8;
const MAX_NAME: usize = 256;
const MAX_OBJECT: usize = 16 << 20;
/// The application error code of a reset stream: no object of that name.
const NOT_FOUND: u32 = 1;

#[tokio::main]
async fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .init();
    let controller = std::env::args().nth(1).unwrap_or_else(|| "amp".into());
    match run(&controller, CLIENTS).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("object_fetch: error: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Start the server and `clients` clients, wait for every fetch, print the server's view of
/// each connection's paths.
async fn run(controller: &str, clients: usize) -> Result<()> {
    let options = Options {
        congestion: controller.parse()?,
        // Spread packets evenly: in the stack's own order, the second path carries only what
        // overflows the first one's window (20-30% of the bytes here).
        scheduler: Scheduler::RoundRobin,
        ..Options::default()
    };
    let identity = Identity::self_signed(&[SERVER_NAME.into()])?;
    let trust = Trust::Roots(identity.chain.clone());
    let listen = ADDRESSES.map(|ip| SocketAddr::new(ip, 0));
    let server = Server::bind(&listen, &identity, options.clone())?;
    let port = server.local_addr()?.port();
    let serving = tokio::spawn(serve(server, Arc::new(objects()), clients));

    let (mut fetched, mut failures) = (0, Vec::new());
    let results = join_all((0..clients).map(|_| fetch_all(&trust, port, &options))).await;
    for (i, result) in results.into_iter().enumerate() {
        match result {
            Ok(bytes) => fetched += bytes,
            Err(e) => failures.push(format!("client {i}: {e}")),
        }
    }
    if !failures.is_empty() {
        return Err(failures.join("; ").into());
    }
    for report in serving.await?? {
        print_report(&report);
        let used = report.paths.iter().filter(|p| p.bytes_sent > 0).count();
        if used < 2 {
            return Err(
                format!("a connection sent over {used} path(s), not 2 (report above)").into()
            );
        }
    }
    println!("{clients} clients fetched {fetched} bytes, every object matching the manifest");
    Ok(())
}

/// The server's objects, the manifest among them.
fn objects() -> Objects {
    let mut objects = HashMap::new();
    let mut manifest = String::new();
    for i in 0..OBJECTS {
        let name = format!("object-{i}");
        let mut data = vec![0; 16 << (10 + i)];
        // Content that no bug could produce by accident: a hash stream seeded by the name.
        blake3::Hasher::new().update(name.as_bytes()).finalize_xof().fill(&mut data);
        manifest += &format!("{name} {} {}\n", data.len(), blake3::hash(&data));
        objects.insert(name, data);
    }
    objects.insert("manifest".into(), manifest.into_bytes());
    objects
}

/// Accept `clients` connections and serve each in its own task; return each connection's
/// report once its client has closed it. A long-running service would accept until shutdown.
async fn serve(
    server: Server,
    objects: Arc<Objects>,
    clients: usize,
) -> Result<Vec<ConnectionReport>> {
    let mut connections = tokio::task::JoinSet::new();
    for _ in 0..clients {
        let accepting = server.accept().await.ok_or("the server endpoint closed")?;
        let objects = objects.clone();
        connections.spawn(async move {
            let conn = accepting.established().await?;
            // One request per stream; accepting ends when the client closes the connection.
            while let Ok((send, recv)) = conn.connection().accept_bi().await {
                tokio::spawn(answer(send, recv, objects.clone()));
            }
            Ok::<_, mpquic::Error>(conn.report())
        });
    }
    let mut reports = Vec::new();
    while let Some(report) = connections.join_next().await {
        reports.push(report??);
    }
    Ok(reports)
}

/// Read a name, send the object. Errors end only this request; the client sees them.
async fn answer(mut send: SendStream, mut recv: RecvStream, objects: Arc<Objects>) {
    let Ok(name) = recv.read_to_end(MAX_NAME).await else { return };
    match objects.get(String::from_utf8_lossy(&name).as_ref()) {
        Some(object) => {
            if send.write_all(object).await.is_ok() {
                let _ = send.finish();
            }
        }
        None => {
            let _ = send.reset(VarInt::from_u32(NOT_FOUND));
        }
    }
}

/// One client: connect over both paths, fetch the manifest, then every object in it at once,
/// and check each against the manifest. Returns the bytes fetched.
async fn fetch_all(trust: &Trust, port: u16, options: &Options) -> Result<usize> {
    let client = Client::new(trust, ADDRESSES[0])?;
    let paths = ADDRESSES.map(|ip| PathSpec::new(Some(ip), SocketAddr::new(ip, port)));
    let (conn, failed) =
        client.connect(SERVER_NAME, &paths, options, Duration::from_secs(5)).await?;
    if let Some(failure) = failed.first() {
        return Err(failure.to_string().into());
    }
    let manifest = String::from_utf8(fetch(&conn, "manifest").await?)?;
    let checks = join_all(manifest.lines().map(|entry| fetch_verified(&conn, entry))).await;
    conn.connection().close(0u32.into(), b"done");
    // Let the close reach the server before the endpoint goes away.
    client.wait_idle().await;
    checks.into_iter().sum()
}

/// Fetch the object a manifest line names and check its size and hash.
async fn fetch_verified(conn: &MultipathConnection, entry: &str) -> Result<usize> {
    let [name, size, hash] = entry.split(' ').collect::<Vec<_>>()[..] else {
        return Err(format!("bad manifest line `{entry}`").into());
    };
    let data = fetch(conn, name).await?;
    let got = format!("{} {}", data.len(), blake3::hash(&data));
    if got != format!("{size} {hash}") {
        return Err(format!("{name}: got {got}, the manifest says {size} {hash}").into());
    }
    Ok(data.len())
}

/// One request: the name out, the object back.
async fn fetch(conn: &MultipathConnection, name: &str) -> Result<Vec<u8>> {
    let request = async {
        let (mut send, mut recv) = conn.connection().open_bi().await?;
        send.write_all(name.as_bytes()).await?;
        send.finish()?;
        Ok::<_, Box<dyn std::error::Error + Send + Sync>>(recv.read_to_end(MAX_OBJECT).await?)
    };
    request.await.map_err(|e| format!("fetching {name}: {e}").into())
}

/// The server's side of a connection, one line per path (what it sent: the objects).
fn print_report(report: &ConnectionReport) {
    let client = report.paths.first().and_then(|p| p.remote).map_or("?".into(), |a| a.to_string());
    println!(
        "connection from {client} ({}, exact ECN counts: {})",
        report.controller, report.exact_ecn
    );
    println!(
        "  path  local        remote            sent MB  share  RTT p50/p99 ms  cwnd KB  CE  lost"
    );
    for p in &report.paths {
        let ms = |v: Option<f64>| v.map_or("-".into(), |v| format!("{v:.2}"));
        println!(
            "  {:<4}  {:<11}  {:<16}  {:>7.2}  {:>4.0}%  {:>6}/{:<7}  {:>7}  {:>2}  {:>4}",
            p.id,
            p.local.map_or("?".into(), |a| a.to_string()),
            p.remote.map_or("?".into(), |a| a.to_string()),
            p.bytes_sent as f64 / 1e6,
            p.share * 100.0,
            ms(p.rtt_p50_ms),
            ms(p.rtt_p99_ms),
            p.cwnd / 1000,
            p.ce_marked.unwrap_or(0),
            p.lost_packets,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(flavor = "multi_thread")]
    async fn every_client_fetches_every_object_over_two_paths() {
        for controller in ["amp", "xmp", "cubic"] {
            run(controller, CLIENTS).await.unwrap_or_else(|e| panic!("{controller}: {e}"));
        }
    }

    #[tokio::test]
    async fn a_bad_controller_spec_stops_the_service_with_the_reason() {
        let err = run("vegas", 1).await.unwrap_err().to_string();
        assert!(err.contains("unknown controller `vegas`"), "{err}");
    }
}
