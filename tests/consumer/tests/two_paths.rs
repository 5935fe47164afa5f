//! The embedded library over two loopback paths (127.0.0.1 and 127.0.0.2), checking what only
//! mpquic's patched QUIC stack does, so that the test fails if a dependent of mpquic receives the
//! registry's unpatched `noq-proto` instead of `mpquic-noq-proto`:
//!
//! - the resolved stack is the fork (this crate's lock file);
//! - the scheduler hook (patch 2, `send_rank`): round-robin gives each path a tenth or more;
//! - per-path ACK placement (patch 3): the server acknowledges path 1's packets on path 1, so
//!   the client's path 1 receives about what path 0 does (unpatched, they all ride path 0);
//! - exact CE counting (patch 1, `on_ecn_counts`): every path's report has a CE count.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::Duration;

use mpquic::{Client, Identity, Options, PathSpec, Scheduler, Server, Trust};
use mpquic_consumer::{digest, serve_one};

type Result<T, E = Box<dyn std::error::Error + Send + Sync>> = std::result::Result<T, E>;

const ADDRESSES: [IpAddr; 2] =
    [IpAddr::V4(Ipv4Addr::new(127, 0, 0, 1)), IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2))];
const NAME: &str = "digest.example";
/// Long enough for many round trips on both paths, short enough for a debug build.
const SIZE: usize = 8 << 20;

#[test]
fn the_lock_file_resolves_the_patched_stack() {
    let lock = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.lock"))
        .expect("this crate's Cargo.lock (cargo writes it on the first build)");
    let packages: Vec<&str> =
        lock.lines().filter_map(|l| l.strip_prefix("name = \"")?.strip_suffix('"')).collect();
    for fork in ["mpquic-noq-proto", "mpquic-noq"] {
        assert!(packages.contains(&fork), "{fork} is not in the lock file: {packages:?}");
    }
    for registry in ["noq-proto", "noq"] {
        assert!(!packages.contains(&registry), "the registry's {registry} reached a dependent");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_paths_with_the_patched_stack() -> Result<()> {
    tokio::time::timeout(Duration::from_secs(120), transfer()).await?
}

async fn transfer() -> Result<()> {
    let options = Options {
        congestion: "lia".parse()?,
        scheduler: Scheduler::RoundRobin,
        ..Options::default()
    };
    let identity = Identity::self_signed(&[NAME.into()])?;
    let listen = ADDRESSES.map(|ip| SocketAddr::new(ip, 0));
    let server = Server::bind(&listen, &identity, options.clone())?;
    let port = server.local_addr()?.port();
    let serving = tokio::spawn(async move { serve_one(&server).await });

    let client = Client::new(&Trust::Roots(identity.chain.clone()), ADDRESSES[0])?;
    let paths = ADDRESSES.map(|ip| PathSpec::new(Some(ip), SocketAddr::new(ip, port)));
    let (conn, failed) = client.connect(NAME, &paths, &options, Duration::from_secs(5)).await?;
    assert!(failed.is_empty(), "paths that did not open: {failed:?}");
    let data: Vec<u8> = (0..SIZE).map(|i| (i * 7 + i / 4099) as u8).collect();
    let (mut send, mut recv) = conn.connection().open_bi().await?;
    send.write_all(&data).await?;
    send.finish()?;
    let answer = recv.read_to_end(16).await?;
    let (len, hash) = digest(&data);
    assert_eq!(answer, [len.to_be_bytes(), hash.to_be_bytes()].concat(), "the digest");

    let report = conn.report();
    conn.connection().close(0u32.into(), b"done");
    client.wait_idle().await;
    serving.await??;
    assert_eq!(report.paths.len(), 2, "{report:?}");
    let (p0, p1) = (&report.paths[0], &report.paths[1]);
    // Shown with --nocapture: the margins over the checks below.
    for p in [p0, p1] {
        eprintln!(
            "path {}: share {:.3}, received {} B, CE {:?}",
            p.id, p.share, p.bytes_received, p.ce_marked
        );
    }
    for path in [p0, p1] {
        assert!(
            path.share >= 0.10,
            "round-robin gave path {} {:.3}: {report:?}",
            path.id,
            path.share
        );
        assert!(path.ce_exact && path.ce_marked.is_some(), "no exact CE count: {report:?}");
    }
    assert!(
        p1.bytes_received * 4 >= p0.bytes_received,
        "path 1's ACKs did not come back on path 1 ({} bytes, path 0 {}): {report:?}",
        p1.bytes_received,
        p0.bytes_received
    );
    Ok(())
}
