//! `mpquic demo`: a server and a client in one process, one path per loopback address.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context, Result};
use mpquic::{Client, Identity, PathSpec, Server, Trust};

use crate::args::{ensure_local, DemoArgs};
use crate::client::GeneratedData;
use crate::output::{process_cpu_seconds, progress_bar, TransferResult};
use crate::serve::{serve_connection, Policy, Reporting, Store};
use crate::transfer::{read_reply, send_body, Request};

/// Loopback addresses 127.0.0.1 ..= 127.0.0.n.
fn loopback(n: u8) -> Vec<IpAddr> {
    (1..=n).map(|i| IpAddr::V4(Ipv4Addr::new(127, 0, 0, i))).collect()
}

pub async fn demo(args: DemoArgs) -> Result<TransferResult> {
    let ips = loopback(args.paths);
    for &ip in &ips {
        ensure_local(ip).context("the demo needs the loopback range 127.0.0.0/8 (Linux has it)")?;
    }
    let mut options = args.transport.options()?;
    // Loopback does not congest: under the stack's order path 0 would carry everything.
    options.scheduler = args.transport.scheduler.unwrap_or(mpquic::Scheduler::RoundRobin);
    let names: Vec<String> = ips.iter().map(|ip| ip.to_string()).collect();
    let listen: Vec<SocketAddr> = ips.iter().map(|&ip| SocketAddr::new(ip, 0)).collect();
    let server = Server::bind(&listen, &Identity::self_signed(&names)?, options.clone())?;
    let port = server.local_addr()?.port();
    // The demo's server takes connections from this process only (it listens on loopback for
    // the few seconds of the demo), so it accepts its client anonymously.
    let policy = Arc::new(Policy::new(Store::Sink));
    tokio::spawn(async move {
        while let Some(accepting) = server.accept().await {
            if let Ok(conn) = accepting.established().await {
                tokio::spawn(serve_connection(conn, policy.clone(), Reporting::Silent, |_| {}));
            }
        }
    });

    // The demo's server made its certificate a moment ago, in this process: the client checks
    // the handshake's signatures but cannot check a chain to a CA, as --insecure would not either.
    let client = Client::new(&Trust::InsecureAnyCertificate, ips[0])?;
    let paths: Vec<PathSpec> =
        ips.iter().map(|&ip| PathSpec::new(Some(ip), SocketAddr::new(ip, port))).collect();
    if !args.json {
        eprintln!(
            "mpquic demo: {} over {} loopback paths, controller {}, scheduler {}",
            crate::output::human_bytes(args.size),
            paths.len(),
            options.congestion,
            options.scheduler
        );
    }
    let (conn, failures) =
        client.connect("127.0.0.1", &paths, &options, options.idle_timeout).await?;
    for failure in failures {
        eprintln!("mpquic: warning: {failure}");
    }
    let started = Instant::now();
    let cpu_before = process_cpu_seconds();
    let (mut send, mut recv) = conn.connection().open_bi().await?;
    Request::Put { name: "demo.bin".into(), size: args.size, resume: false }
        .write(&mut send)
        .await?;
    let bar = progress_bar(args.size, args.json);
    send_body(&mut GeneratedData::new(1), args.size, &mut send, None, |n| bar.inc(n)).await?;
    send.finish()?;
    read_reply(&mut recv).await?;
    bar.finish_and_clear();
    let mut result =
        TransferResult::new("send", "demo.bin".into(), args.size, started.elapsed(), conn.report());
    result.cpu_s = process_cpu_seconds().zip(cpu_before).map(|(after, before)| after - before);
    conn.connection().close(0u32.into(), b"done");
    Ok(result)
}
