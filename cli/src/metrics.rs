//! `serve --metrics`: the library's measures as Prometheus text over HTTP.

use std::net::SocketAddr;
use std::time::Duration;

use anyhow::{Context, Result};
use metrics_exporter_prometheus::PrometheusBuilder;

/// How often each connection samples its measures: a typical scrape interval's resolution
/// without measurable cost (one report per connection per second).
pub const INTERVAL: Duration = Duration::from_secs(1);

/// Serve the process's metrics at `http://addr/` (any path, `/metrics` by convention) from the
/// current tokio runtime.
pub fn serve(addr: SocketAddr) -> Result<()> {
    PrometheusBuilder::new()
        .with_http_listener(addr)
        .install()
        .with_context(|| format!("serving metrics on {addr}"))?;
    eprintln!("mpquic: metrics on http://{addr}/metrics");
    Ok(())
}
