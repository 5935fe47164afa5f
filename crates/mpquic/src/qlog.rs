//! qlog traces (JSON-SEQ, loadable in qvis) with the controller's own events in them.
//!
//! noq writes the transport's events; this module gives it the writer and appends mpquic's
//! controller notices to the same file as custom events named `mpquic:<kind>` (e.g.
//! `mpquic:suppressed`, `mpquic:window_reduced`), on the same time axis.
//!
//! noq may write one record in several `write` calls, so our events are only inserted between
//! records: a record is complete when the bytes written so far end with the line feed that
//! closes every JSON-SEQ record (compact JSON has no raw line feed inside).

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use mpquic_cc::Notice;
use noq::{ConnectionId, QlogConfig, QlogFactory, Side};

use crate::congestion::SharedController;

/// JSON-SEQ record separator.
const RS: u8 = 0x1e;

/// Writes one connection's trace file; shared by noq's writer and our notice sink.
struct Trace {
    file: BufWriter<File>,
    /// Bytes of a record noq has not finished writing.
    partial: Vec<u8>,
    /// Our records waiting for noq to finish its current one (or to write its header).
    deferred: Vec<u8>,
    /// Whether noq's first record, the trace header, is out (ours must follow it).
    header_written: bool,
    start: Instant,
}

impl Trace {
    fn lock(trace: &Mutex<Trace>) -> MutexGuard<'_, Trace> {
        trace.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn write_notice(&mut self, at: Instant, notice: &Notice) -> io::Result<()> {
        let data = serde_json::to_value(notice).map_err(io::Error::other)?;
        self.write_event(at, notice.kind(), data)
    }

    /// Append the custom event `mpquic:<name>` at time `at`.
    /// Every `mpquic:*` event's data names its kind, as the notices' do.
    fn write_event(
        &mut self,
        at: Instant,
        name: &str,
        mut data: serde_json::Value,
    ) -> io::Result<()> {
        if let Some(fields) = data.as_object_mut() {
            fields.entry("kind").or_insert_with(|| name.into());
        }
        let record = serde_json::json!({
            "time": at.saturating_duration_since(self.start).as_secs_f64() * 1000.0,
            "name": format!("mpquic:{name}"),
            "data": data,
        });
        self.deferred.push(RS);
        serde_json::to_writer(&mut self.deferred, &record).map_err(io::Error::other)?;
        self.deferred.push(b'\n');
        if self.partial.is_empty() && self.header_written {
            self.file.write_all(&self.deferred)?;
            self.deferred.clear();
        }
        Ok(())
    }
}

/// noq's side of a trace.
struct NoqWriter(Arc<Mutex<Trace>>);

impl Write for NoqWriter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let mut trace = Trace::lock(&self.0);
        trace.partial.extend_from_slice(buf);
        if trace.partial.ends_with(b"\n") {
            let Trace { file, partial, deferred, header_written, .. } = &mut *trace;
            file.write_all(partial)?;
            partial.clear();
            *header_written = true;
            file.write_all(deferred)?;
            deferred.clear();
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Trace::lock(&self.0).file.flush()
    }
}

impl Drop for NoqWriter {
    fn drop(&mut self) {
        let mut trace = Trace::lock(&self.0);
        let Trace { file, partial, deferred, .. } = &mut *trace;
        let _ = file.write_all(partial).and_then(|_| file.write_all(deferred));
        partial.clear();
        deferred.clear();
        let _ = file.flush();
    }
}

/// Creates one connection's trace file in a directory and routes its controller's notices into
/// it. One factory serves one connection (as the congestion controller factory does).
pub(crate) struct ConnectionQlog {
    dir: PathBuf,
    label: String,
    controller: Option<Arc<SharedController>>,
    configuration: serde_json::Value,
    events: QlogEvents,
}

/// Where the connection writes its own `mpquic:*` events (path failures), once noq has opened
/// the trace.
#[derive(Clone, Default)]
pub(crate) struct QlogEvents(Arc<Mutex<Option<Arc<Mutex<Trace>>>>>);

impl QlogEvents {
    /// Append the custom event `mpquic:<name>` now; nothing if the trace is not open.
    pub fn write(&self, name: &str, data: serde_json::Value) {
        let trace = self.0.lock().unwrap_or_else(|p| p.into_inner()).clone();
        if let Some(trace) = trace {
            if let Err(e) = Trace::lock(&trace).write_event(Instant::now(), name, data) {
                tracing::warn!("qlog: cannot write {name} event: {e}");
            }
        }
    }
}

impl ConnectionQlog {
    /// Traces go to `dir` (created if missing) as `<label>-<side>-<cid>.sqlog`. The trace opens
    /// with an `mpquic:configured` event carrying `configuration` (what ran, for the reader).
    pub fn new(
        dir: PathBuf,
        label: impl Into<String>,
        controller: Option<Arc<SharedController>>,
        configuration: serde_json::Value,
    ) -> Self {
        ConnectionQlog {
            dir,
            label: label.into(),
            controller,
            configuration,
            events: QlogEvents::default(),
        }
    }

    /// The handle through which the connection adds its own events to the trace.
    pub fn events(&self) -> QlogEvents {
        self.events.clone()
    }
}

impl QlogFactory for ConnectionQlog {
    fn for_connection(
        &self,
        side: Side,
        _remote: SocketAddr,
        initial_dst_cid: ConnectionId,
        now: Instant,
    ) -> Option<QlogConfig> {
        let side = if side.is_client() { "client" } else { "server" };
        let path = self.dir.join(format!("{}-{side}-{initial_dst_cid}.sqlog", self.label));
        let file = std::fs::create_dir_all(&self.dir)
            .and_then(|_| File::create(&path))
            .inspect_err(|e| tracing::warn!("qlog disabled: cannot create {}: {e}", path.display()))
            .ok()?;
        tracing::debug!(path = %path.display(), "writing qlog");
        let trace = Arc::new(Mutex::new(Trace {
            file: BufWriter::new(file),
            partial: Vec::new(),
            deferred: Vec::new(),
            header_written: false,
            start: now,
        }));
        if let Err(e) =
            Trace::lock(&trace).write_event(now, "configured", self.configuration.clone())
        {
            tracing::warn!("qlog: cannot write to {}: {e}", path.display());
        }
        *self.events.0.lock().unwrap_or_else(|p| p.into_inner()) = Some(trace.clone());
        if let Some(controller) = &self.controller {
            let trace = trace.clone();
            controller.set_notice_sink(Box::new(move |at, notice| {
                if let Err(e) = Trace::lock(&trace).write_notice(at, notice) {
                    tracing::warn!("qlog: cannot write controller event: {e}");
                }
            }));
        }
        let mut config = QlogConfig::new(Box::new(NoqWriter(trace)));
        config.start_time(now).title(Some(format!("mpquic {}", self.label)));
        Some(config)
    }
}
