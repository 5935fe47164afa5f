//! Streaming reader for qlog JSON-SEQ files (RFC 7464: each record is 0x1E, JSON, line feed).
//!
//! Records are read one at a time into a reused buffer, so memory does not grow with the file.
//! Every error names the file, the line (= record number; line 1 is the header) and the byte
//! offset where the record starts. A last record cut short (no closing line feed) is not an
//! error: the file is reported as partial and everything before it stays usable.

use std::borrow::Cow;
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Result};
use serde::Deserialize;
use serde_json::value::RawValue;

/// JSON-SEQ record separator.
const RS: u8 = 0x1e;

/// The header record's fields a report uses.
#[derive(Debug, Clone, Default)]
pub struct Header {
    /// `title` of the file (or of its trace).
    pub title: Option<String>,
    /// `trace.vantage_point.type` (client, server, network, unknown).
    pub vantage: Option<String>,
    /// `trace.common_fields.group_id` (the original destination connection ID here).
    pub group_id: Option<String>,
}

/// One event record, borrowing from the reader's buffer.
#[derive(Debug, Deserialize)]
pub struct RawEvent<'a> {
    /// Milliseconds since the trace's reference time.
    pub time: f64,
    /// `namespace:event`.
    #[serde(borrow)]
    pub name: Cow<'a, str>,
    /// The event's data, parsed later by whoever wants it.
    #[serde(borrow)]
    pub data: &'a RawValue,
}

/// Where reading stopped early because the last record was cut.
#[derive(Debug, Clone)]
pub struct Partial {
    /// Line (record number) of the cut record.
    pub line: u64,
    /// Byte offset where the cut record starts.
    pub offset: u64,
    /// Time of the last valid event, ms.
    pub last_time: f64,
}

/// Reads a qlog JSON-SEQ file record by record.
pub struct QlogReader<R> {
    inner: R,
    path: PathBuf,
    buf: Vec<u8>,
    /// Line number of the record in `buf` (1-based).
    line: u64,
    /// Byte offset of the record in `buf`.
    offset: u64,
    /// Byte offset after `buf`.
    consumed: u64,
    header: Header,
    partial: Option<Partial>,
    last_time: f64,
}

impl QlogReader<BufReader<File>> {
    /// Open `path` and read its header record.
    pub fn open(path: &Path) -> Result<Self> {
        let file = File::open(path).map_err(|e| anyhow!("cannot open {}: {e}", path.display()))?;
        QlogReader::new(BufReader::with_capacity(1 << 20, file), path)
    }
}

impl<R: BufRead> QlogReader<R> {
    /// Read the header from `inner`; `path` names the input in messages.
    pub fn new(inner: R, path: &Path) -> Result<Self> {
        let mut reader = QlogReader {
            inner,
            path: path.to_owned(),
            buf: Vec::with_capacity(64 * 1024),
            line: 0,
            offset: 0,
            consumed: 0,
            header: Header::default(),
            partial: None,
            last_time: 0.0,
        };
        reader.read_header()?;
        Ok(reader)
    }

    /// The file's header.
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// Bytes read so far.
    pub fn position(&self) -> u64 {
        self.consumed
    }

    /// Set once the last record turned out to be cut.
    pub fn partial(&self) -> Option<&Partial> {
        self.partial.as_ref()
    }

    /// Number of records read so far (the header included).
    pub fn records(&self) -> u64 {
        self.line
    }

    fn at(&self) -> String {
        format!("{} line {} (byte offset {})", self.path.display(), self.line, self.offset)
    }

    /// Read the next raw line into `buf`; false at the end of the file.
    fn next_line(&mut self) -> Result<bool> {
        loop {
            self.buf.clear();
            self.offset = self.consumed;
            let n = self.inner.read_until(b'\n', &mut self.buf).map_err(|e| {
                anyhow!("{}: read error at byte {}: {e}", self.path.display(), self.consumed)
            })?;
            if n == 0 {
                return Ok(false);
            }
            self.consumed += n as u64;
            self.line += 1;
            if self.buf.iter().any(|b| !b.is_ascii_whitespace()) {
                return Ok(true);
            }
        }
    }

    /// The record's JSON text: the line without its separator and line feed.
    fn body(&self) -> Result<&[u8]> {
        let Some(body) = self.buf.strip_prefix(&[RS]) else {
            bail!(
                "{}: not a qlog JSON-SEQ record (it must start with the record separator 0x1E){}",
                self.at(),
                if self.line == 1 && self.buf.starts_with(b"{") {
                    "; contained-JSON .qlog files are not supported, only JSON-SEQ (.sqlog)"
                } else {
                    ""
                }
            );
        };
        Ok(body.strip_suffix(b"\n").unwrap_or(body))
    }

    fn cut(&self) -> bool {
        !self.buf.ends_with(b"\n")
    }

    fn read_header(&mut self) -> Result<()> {
        if !self.next_line()? {
            bail!("{}: empty file, not a qlog", self.path.display());
        }
        let body = self.body()?;
        let value: serde_json::Value = serde_json::from_slice(body).map_err(|e| {
            anyhow!(
                "{}: the header record is not JSON{} ({e})",
                self.at(),
                if self.cut() { ": the file ends inside it" } else { "" }
            )
        })?;
        let schema = value.get("file_schema").and_then(|s| s.as_str());
        let trace = value.get("trace").filter(|t| t.is_object());
        let (Some(schema), Some(trace)) = (schema, trace) else {
            bail!(
                "{}: not a qlog JSON-SEQ header (needs \"file_schema\" and a \"trace\" object)",
                self.at()
            );
        };
        if !schema.contains("qlog:file:sequential") {
            bail!("{}: file_schema is {schema:?}, expected a sequential qlog", self.at());
        }
        let text = |v: Option<&serde_json::Value>| v.and_then(|v| v.as_str()).map(str::to_owned);
        self.header = Header {
            title: text(value.get("title")).or_else(|| text(trace.get("title"))),
            vantage: text(trace.pointer("/vantage_point/type")),
            group_id: text(trace.pointer("/common_fields/group_id")),
        };
        Ok(())
    }

    /// The next event, or `None` at the end (also after a cut last record: see `partial`).
    pub fn next_event(&mut self) -> Result<Option<RawEvent<'_>>> {
        if self.partial.is_some() || !self.next_line()? {
            return Ok(None);
        }
        self.body()?;
        let cut = self.cut();
        let at = (self.line, self.offset);
        // Disjoint field borrows: the event borrows `buf`, the bookkeeping writes other fields.
        let body = &self.buf[1..self.buf.len() - usize::from(!cut)];
        match serde_json::from_slice::<RawEvent<'_>>(body) {
            Ok(event) => {
                if cut {
                    // Valid JSON, but the record never got its line feed: the writer stopped.
                    self.partial =
                        Some(Partial { line: at.0, offset: at.1, last_time: event.time });
                }
                self.last_time = event.time;
                Ok(Some(event))
            }
            Err(_) if cut => {
                self.partial =
                    Some(Partial { line: at.0, offset: at.1, last_time: self.last_time });
                Ok(None)
            }
            Err(e) => Err(anyhow!(
                "{} line {} (byte offset {}): bad event record: {e}",
                self.path.display(),
                at.0,
                at.1
            )),
        }
    }
}
