//! The file-transfer protocol: one bidirectional QUIC stream per file.
//!
//! ```text
//! request  = "MPQ1" op:u8 name_len:u16 name
//!   op 'P' (put):  size:u64 data[size] blake3[32]      -> reply
//!   op 'G' (get):                                      -> reply, and on OK: size:u64 data[size] blake3[32]
//!   op 'U' (resumable put): size:u64 -> reply, and on OK: offer;
//!                  then start:u64 data[start..size] blake3[32] -> reply
//!   op 'D' (resumable get): -> reply, and on OK: size:u64; then offer ->
//!                  start:u64 data[start..size] blake3[32]
//!   op 'S' (stream): data blake3[32] FIN               -> reply
//!   op 'L' (list):                                     -> reply, and on OK: entry* FIN
//!   op 'T' (tree):  as 'L', empty directories too: entries named "path/" (size 0)
//!   op 'M' (make directory):                           -> reply
//! entry    = size:u64 name_len:u16 name
//! offer    = chunk:u64 count:u32 blake3[32]*count   (the receiver's, see `resume`)
//! reply    = status:u8 (0 ok, 1 refused, 2 integrity check failed) msg_len:u16 msg
//! ```
//!
//! A name is a relative path: plain components joined by `/` (`check_path`); the first
//! servers took a single component only, which is still what a single file is sent as. A list
//! names a directory (empty: the server's own) and answers with every regular file beneath it,
//! as paths relative to it. Each file is its own stream, so many run at once over one
//! connection. New request types are new ops: an older server refuses them by name ("unknown
//! request type"). 'T' and 'M' carry empty directories, as `rsync -r` and `scp -r` do: a
//! client that meets a server from before them lists with 'L' (no empty directories) and
//! reports the 'M' it refuses.
//!
//! 'U' and 'D' resume: the receiver keeps an interrupted transfer's partial file and offers the
//! hashes of the whole chunks it holds; the sender checks them against its own data and sends
//! from the first chunk that differs (`resume`). The trailing hash is still the whole file's, so
//! the receiver verifies everything it stores, the prefix it kept included. 'P' and 'G' stay as
//! they were (`--no-resume`, and what older peers speak); an older server refuses 'U' and 'D' as
//! unknown request types, which the client reports with a hint.
//!
//! The hash travels after the data, so both sides hash while streaming. A receiver writes to a
//! temporary file beside the target (`files::PartialFile`) and renames it only once the hash
//! matched: a failed transfer never leaves a file that looks complete.
//!
//! A stream (`mpquic send --time`) has no size: the sender sends until it stops, then the hash
//! of what it sent, then ends the QUIC stream (FIN); the receiver holds back the last 32 bytes
//! until the FIN says they were the hash. A stream cut off (a reset, a lost connection) never
//! reaches a FIN, so it fails like a short sized transfer. Only a sink (`serve --sink`) takes
//! streams: a measurement, verified and discarded; a server storing files refuses them, having
//! no size to check against its free space. Servers from before 'S' refuse it as an unknown
//! request type, which the sender reports.

use anyhow::{anyhow, bail, Context, Result};
use mpquic::noq;
use noq::{RecvStream, SendStream};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use crate::errors::one_line;
use crate::exit::{IntegrityFailed, Refused};
use crate::files::PartialFile;
use crate::ratelimit::{self, ByteRate};

const MAGIC: &[u8; 4] = b"MPQ1";
const CHUNK: usize = 256 * 1024;
/// Path components (file and directory names) are at most this many bytes.
const MAX_NAME: usize = 255;
/// Paths are at most this many bytes.
const MAX_PATH: usize = 4096;
/// A listing of more entries than this is refused (the client reads it all into memory).
pub const MAX_LISTING: usize = 1_000_000;

/// What a client asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Request {
    /// Store `name` (the data follows).
    Put {
        /// Target file name.
        name: String,
        /// The file's size.
        size: u64,
        /// Resumable ('U'): the receiver offers what it holds before the data follows.
        resume: bool,
    },
    /// Send `name` back.
    Get {
        /// File name.
        name: String,
        /// Resumable ('D'): the sender waits for the receiver's offer before the data.
        resume: bool,
    },
    /// Data of no announced size, for a sink: it ends with its hash and the stream's end.
    Stream {
        /// The transfer's name (reports name it; nothing is stored).
        name: String,
    },
    /// List the regular files beneath a directory.
    List {
        /// The directory's path; empty for the server's directory itself.
        dir: String,
        /// 'T': the empty directories beneath it too.
        tree: bool,
    },
    /// Make a directory (and its parents), as an empty directory of a sent tree arrives.
    MakeDir {
        /// The directory's path.
        dir: String,
    },
}

/// What a listing holds: the regular files (path, size) and, in a tree listing, the empty
/// directories.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Listing {
    /// The regular files.
    pub files: Vec<(String, u64)>,
    /// The directories beneath which no file is listed (a tree listing's only).
    pub empty_dirs: Vec<String>,
}

/// Check that a path is relative and made of plain components (`check_name`), and return them.
pub fn check_path(path: &str) -> Result<Vec<&str>> {
    if path.len() > MAX_PATH {
        bail!("file name too long (a path of {} bytes, at most {MAX_PATH})", path.len());
    }
    path.split('/').map(|c| check_name(c).map(|()| c)).collect()
}

/// Check that a name is one plain path component, so a peer cannot write outside the directory,
/// and printable, so it cannot forge log lines or send escape sequences to a terminal. (Hidden
/// names are refused too: they include the receivers' temporaries.)
pub fn check_name(name: &str) -> Result<()> {
    if name.len() > MAX_NAME {
        bail!(
            "file name too long ({} bytes, at most {MAX_NAME} in each part of a path)",
            name.len()
        );
    }
    let plain = !name.is_empty()
        && !name.starts_with('.')
        && !name.contains(['/', '\\'])
        && !name.chars().any(char::is_control);
    if !plain {
        bail!(
            "invalid file name {name:?}: each part of a path must be a plain name (not empty, not hidden, no `..`, no control characters)"
        );
    }
    Ok(())
}

impl Request {
    /// Send the request header.
    pub async fn write(&self, send: &mut SendStream) -> Result<()> {
        send.write_all(&self.encode()).await?;
        Ok(())
    }

    /// The request header's bytes.
    pub fn encode(&self) -> Vec<u8> {
        let (op, name) = match self {
            Request::Put { name, resume: false, .. } => (b'P', name),
            Request::Put { name, resume: true, .. } => (b'U', name),
            Request::Get { name, resume: false } => (b'G', name),
            Request::Get { name, resume: true } => (b'D', name),
            Request::Stream { name } => (b'S', name),
            Request::List { dir, tree: false } => (b'L', dir),
            Request::List { dir, tree: true } => (b'T', dir),
            Request::MakeDir { dir } => (b'M', dir),
        };
        let mut header = Vec::with_capacity(7 + name.len() + 8);
        header.extend_from_slice(MAGIC);
        header.push(op);
        header.extend_from_slice(&(name.len() as u16).to_be_bytes());
        header.extend_from_slice(name.as_bytes());
        if let Request::Put { size, .. } = self {
            header.extend_from_slice(&size.to_be_bytes());
        }
        header
    }

    /// Read a request header; any malformed input is an error, never a panic.
    pub async fn read(recv: &mut (impl AsyncRead + Unpin)) -> Result<Self> {
        let mut fixed = [0u8; 7];
        recv.read_exact(&mut fixed).await.context("reading request header")?;
        if &fixed[..4] != MAGIC {
            bail!("not an mpquic transfer request");
        }
        let name_len = u16::from_be_bytes([fixed[5], fixed[6]]) as usize;
        if name_len > MAX_PATH {
            bail!("file name too long ({name_len} bytes)");
        }
        let mut name = vec![0u8; name_len];
        recv.read_exact(&mut name).await.context("reading file name")?;
        let name = String::from_utf8(name).map_err(|_| anyhow!("file name is not UTF-8"))?;
        if !(matches!(fixed[4], b'L' | b'T') && name.is_empty()) {
            check_path(&name)?;
        }
        match fixed[4] {
            op @ (b'P' | b'U') => {
                let mut size = [0u8; 8];
                recv.read_exact(&mut size).await.context("reading file size")?;
                Ok(Request::Put { name, size: u64::from_be_bytes(size), resume: op == b'U' })
            }
            op @ (b'G' | b'D') => Ok(Request::Get { name, resume: op == b'D' }),
            b'S' => Ok(Request::Stream { name }),
            op @ (b'L' | b'T') => Ok(Request::List { dir: name, tree: op == b'T' }),
            b'M' => Ok(Request::MakeDir { dir: name }),
            op => bail!("unknown request type {op:#x}"),
        }
    }
}

/// Send the reply: `Ok(())` or an error message, its status saying whether the data failed
/// its check (peers from before status 2 read any non-zero status as an error).
pub async fn write_reply<T>(send: &mut SendStream, result: &Result<T>) -> Result<()> {
    send.write_all(&encode_reply(result)).await?;
    Ok(())
}

/// The reply's bytes; the message is cut to what its length field holds.
pub fn encode_reply<T>(result: &Result<T>) -> Vec<u8> {
    let (status, msg) = match result {
        Ok(_) => (0u8, String::new()),
        Err(e) if e.chain().any(|c| c.is::<IntegrityFailed>()) => (2u8, one_line(e)),
        Err(e) => (1u8, one_line(e)),
    };
    let msg = &msg.as_bytes()[..msg.len().min(u16::MAX as usize)];
    let mut reply = vec![status];
    reply.extend_from_slice(&(msg.len() as u16).to_be_bytes());
    reply.extend_from_slice(msg);
    reply
}

/// Read the peer's reply; an error reply becomes an error naming the peer's reason.
pub async fn read_reply(recv: &mut RecvStream) -> Result<()> {
    let mut fixed = [0u8; 3];
    recv.read_exact(&mut fixed).await.context("the peer closed the stream without replying")?;
    let mut msg = vec![0u8; u16::from_be_bytes([fixed[1], fixed[2]]) as usize];
    recv.read_exact(&mut msg).await.context("reading the peer's reply")?;
    reply_result(fixed[0], &msg)
}

/// What a reply of `status` with the message `msg` says: `Ok(())`, or an error naming the
/// peer's reason. (Apart from `read_reply`, which reads them from a QUIC stream, so that its
/// read errors keep the stream's error types that `exit` classifies.) The reason is printed, so
/// its control characters are escaped, as names are refused (`check_name`): a peer cannot
/// forge lines or send escape sequences to the user's terminal.
pub fn reply_result(status: u8, msg: &[u8]) -> Result<()> {
    let msg = printable(&String::from_utf8_lossy(msg));
    match status {
        0 => Ok(()),
        2 => Err(IntegrityFailed(format!("peer: {msg}")).into()),
        _ => Err(Refused(msg).into()),
    }
}

/// `text` with its control characters escaped as Rust writes them (`\n`, `\0`, `\u{1b}`).
fn printable(text: &str) -> String {
    text.chars()
        .map(|c| if c.is_control() { c.escape_debug().collect() } else { c.to_string() })
        .collect()
}

/// Send a listing's entries (after the OK reply), its empty directories with `tree`; the
/// caller ends the stream.
pub async fn write_listing(send: &mut SendStream, listing: &Listing, tree: bool) -> Result<()> {
    send.write_all(&encode_listing(listing, tree)).await.context("sending the listing")?;
    Ok(())
}

/// A listing's entries as bytes: the files, then (with `tree`) each empty directory as an
/// entry named "dir/".
pub fn encode_listing(listing: &Listing, tree: bool) -> Vec<u8> {
    let dirs = listing.empty_dirs.iter().filter(|_| tree).map(|dir| (format!("{dir}/"), 0));
    let mut bytes = Vec::new();
    for (name, size) in listing.files.iter().cloned().chain(dirs) {
        bytes.extend_from_slice(&size.to_be_bytes());
        bytes.extend_from_slice(&(name.len() as u16).to_be_bytes());
        bytes.extend_from_slice(name.as_bytes());
    }
    bytes
}

/// Read a listing's entries up to the stream's end; every name is checked as a request's is.
pub async fn read_listing(recv: &mut (impl AsyncRead + Unpin)) -> Result<Listing> {
    let mut listing = Listing::default();
    let mut fixed = [0u8; 10];
    loop {
        match recv.read(&mut fixed[..1]).await.context("reading the listing")? {
            0 => return Ok(listing),
            _ => recv.read_exact(&mut fixed[1..]).await.context("reading the listing")?,
        };
        if listing.files.len() + listing.empty_dirs.len() == MAX_LISTING {
            bail!("the listing has more than {MAX_LISTING} files: list a directory within");
        }
        let size = u64::from_be_bytes(fixed[..8].try_into().expect("8 bytes"));
        let mut name = vec![0u8; u16::from_be_bytes([fixed[8], fixed[9]]) as usize];
        recv.read_exact(&mut name).await.context("reading the listing")?;
        let name = String::from_utf8(name).map_err(|_| anyhow!("a listed name is not UTF-8"))?;
        match name.strip_suffix('/') {
            Some(dir) => {
                check_path(dir)?;
                listing.empty_dirs.push(dir.to_owned());
            }
            None => {
                check_path(&name)?;
                listing.files.push((name, size));
            }
        }
    }
}

/// Stream `size` bytes from `source` followed by their BLAKE3 hash, calling `progress` with
/// each chunk's length; each chunk waits for its share of `rate`, if capped.
pub async fn send_body(
    source: &mut (impl AsyncRead + Unpin),
    size: u64,
    send: &mut SendStream,
    rate: Option<&ByteRate>,
    progress: impl FnMut(u64),
) -> Result<()> {
    send_rest(source, size, blake3::Hasher::new(), send, rate, progress).await
}

/// Stream the `left` bytes of `source` that follow what `hasher` has seen, then the hash of it
/// all (the whole file's, when resuming); as `send_body` otherwise.
pub async fn send_rest(
    source: &mut (impl AsyncRead + Unpin),
    left: u64,
    mut hasher: blake3::Hasher,
    send: &mut SendStream,
    rate: Option<&ByteRate>,
    mut progress: impl FnMut(u64),
) -> Result<()> {
    let mut buf = vec![0u8; CHUNK];
    let mut left = left;
    while left > 0 {
        let n = source
            .read(&mut buf[..CHUNK.min(left as usize)])
            .await
            .context("reading the source")?;
        if n == 0 {
            bail!("the source ended {left} bytes early (was it truncated while sending?)");
        }
        hasher.update(&buf[..n]);
        ratelimit::take(rate, n as u64, &mut progress).await;
        send.write_all(&buf[..n]).await.context("sending data")?;
        left -= n as u64;
        progress(n as u64);
    }
    send.write_all(hasher.finalize().as_bytes()).await.context("sending the hash")?;
    Ok(())
}

/// Stream data from `source` until `stop` resolves (or the source ends), followed by the BLAKE3
/// hash of what was sent; calls `progress` with each written part's length. Returns the bytes
/// sent and why they ended: `stop`'s answer, or "end of data". The caller ends the stream.
pub async fn send_until(
    source: &mut (impl AsyncRead + Unpin),
    send: &mut (impl AsyncWrite + Unpin),
    stop: impl std::future::Future<Output = &'static str>,
    mut progress: impl FnMut(u64),
) -> Result<(u64, &'static str)> {
    let mut stop = std::pin::pin!(stop);
    let mut hasher = blake3::Hasher::new();
    let mut buf = vec![0u8; CHUNK];
    let mut sent = 0u64;
    let ended_by = 'sending: loop {
        let n = source.read(&mut buf).await.context("reading the source")?;
        if n == 0 {
            break "end of data";
        }
        let mut done = 0;
        while done < n {
            tokio::select! {
                biased;
                reason = &mut stop => break 'sending reason,
                // Cancel-safe: when `stop` wins, nothing of this write was sent (nor hashed).
                written = send.write(&buf[done..n]) => {
                    let written = written.context("sending data")?;
                    hasher.update(&buf[done..done + written]);
                    done += written;
                    sent += written as u64;
                    progress(written as u64);
                }
            }
        }
    };
    send.write_all(hasher.finalize().as_bytes()).await.context("sending the hash")?;
    Ok((sent, ended_by))
}

/// Receive a stream (data, its hash, the stream's end) into `sink`; returns the data's length.
/// Fails if the stream is cut off before its end or the hash does not match.
pub async fn receive_stream(
    recv: &mut (impl AsyncRead + Unpin),
    sink: &mut (impl AsyncWrite + Unpin),
    mut progress: impl FnMut(u64),
) -> Result<u64> {
    const HASH: usize = 32;
    let mut hasher = blake3::Hasher::new();
    // The last HASH bytes read are held at the front until more data (or the end) follows.
    let mut buf = vec![0u8; HASH + CHUNK];
    let mut held = 0;
    let mut received = 0u64;
    loop {
        let n = recv.read(&mut buf[held..]).await.context("receiving data")?;
        if n == 0 {
            break;
        }
        let total = held + n;
        let data = total.saturating_sub(HASH);
        hasher.update(&buf[..data]);
        sink.write_all(&buf[..data]).await.context("writing data")?;
        buf.copy_within(data..total, 0);
        held = total - data;
        received += data as u64;
        progress(data as u64);
    }
    if held < HASH {
        bail!("the stream ended without its hash");
    }
    let expected: [u8; HASH] = buf[..HASH].try_into().expect("HASH bytes");
    if hasher.finalize() != blake3::Hash::from_bytes(expected) {
        return Err(hash_mismatch());
    }
    sink.flush().await.context("writing data")?;
    Ok(received)
}

/// The error of data whose hash does not match the sender's.
fn hash_mismatch() -> anyhow::Error {
    IntegrityFailed(
        "integrity check failed: the data's BLAKE3 hash does not match the sender's".into(),
    )
    .into()
}

/// Receive `size` bytes and the trailing hash into `sink`; fails if the hash does not match.
/// Each chunk read waits for its share of `rate`, if capped, before the next is read.
pub async fn receive_body(
    recv: &mut RecvStream,
    size: u64,
    sink: &mut (impl AsyncWrite + Unpin),
    rate: Option<&ByteRate>,
    progress: impl FnMut(u64),
) -> Result<()> {
    receive_rest(recv, size, blake3::Hasher::new(), sink, rate, progress).await
}

/// Receive the `left` bytes that follow what `hasher` has seen (a resumed file's verified
/// prefix, hashed from the receiver's own copy) and the trailing hash, which must be the hash
/// of it all; as `receive_body` otherwise.
pub async fn receive_rest(
    recv: &mut RecvStream,
    left: u64,
    mut hasher: blake3::Hasher,
    sink: &mut (impl AsyncWrite + Unpin),
    rate: Option<&ByteRate>,
    mut progress: impl FnMut(u64),
) -> Result<()> {
    let mut buf = vec![0u8; CHUNK];
    let mut left = left;
    while left > 0 {
        let want = CHUNK.min(left as usize);
        let n = recv
            .read(&mut buf[..want])
            .await
            .context("receiving data")?
            .ok_or_else(|| anyhow!("the sender stopped {left} bytes before the end"))?;
        hasher.update(&buf[..n]);
        sink.write_all(&buf[..n]).await.context("writing data")?;
        left -= n as u64;
        progress(n as u64);
        ratelimit::take(rate, n as u64, &mut progress).await;
    }
    let mut expected = [0u8; 32];
    recv.read_exact(&mut expected).await.context("receiving the hash")?;
    if hasher.finalize() != blake3::Hash::from_bytes(expected) {
        return Err(hash_mismatch());
    }
    sink.flush().await.context("writing data")?;
    Ok(())
}

/// Receive the rest of a file into `partial` (`left` bytes after what `seen` has hashed) and
/// check it. Data that fails its check discards the partial file (something in it is wrong);
/// any other failure keeps a resumable one for the next transfer.
pub async fn receive_into(
    recv: &mut RecvStream,
    partial: &mut PartialFile,
    left: u64,
    seen: blake3::Hasher,
    rate: Option<&ByteRate>,
    progress: impl FnMut(u64),
) -> Result<()> {
    let received = receive_rest(recv, left, seen, partial.file(), rate, progress).await;
    if received.as_ref().is_err_and(|e| e.chain().any(|c| c.is::<IntegrityFailed>())) {
        partial.discard();
    }
    received
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::time::Duration;

    fn parse(bytes: &[u8]) -> Result<Request> {
        let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
        runtime.block_on(Request::read(&mut &bytes[..]))
    }

    fn valid_name() -> impl Strategy<Value = String> {
        "[a-zA-Z0-9_][a-zA-Z0-9_.-]{0,40}(/[a-zA-Z0-9_][a-zA-Z0-9_.-]{0,20}){0,3}"
    }

    proptest! {
        /// Whatever arrives, the parser answers (a request or an error) and never panics.
        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..600)) {
            let _ = parse(&bytes);
        }

        /// Arbitrary bytes after a valid prefix: the fields past the magic are fuzzed too.
        #[test]
        fn arbitrary_fields_never_panic(
            op in any::<u8>(),
            len in any::<u16>(),
            rest in proptest::collection::vec(any::<u8>(), 0..400),
        ) {
            let mut bytes = MAGIC.to_vec();
            bytes.push(op);
            bytes.extend_from_slice(&len.to_be_bytes());
            bytes.extend_from_slice(&rest);
            if let Ok(request) = parse(&bytes) {
                let name = match &request {
                    Request::Put { name, .. } | Request::Get { name, .. } | Request::Stream { name } => name,
                    Request::List { dir, .. } | Request::MakeDir { dir } => dir,
                };
                // Only a list may name the empty path: the server's directory.
                let root_list = name.is_empty() && matches!(request, Request::List { .. });
                prop_assert!(root_list || check_path(name).is_ok());
            }
        }

        /// Every valid request survives encoding and parsing; every strict prefix is an error.
        #[test]
        fn requests_round_trip_and_truncation_fails(
            name in valid_name(),
            size in any::<u64>(),
            op in 0..8u8,
        ) {
            let request = match op {
                0 => Request::Put { name, size, resume: false },
                1 => Request::Get { name, resume: false },
                4 => Request::Put { name, size, resume: true },
                5 => Request::Get { name, resume: true },
                2 => Request::Stream { name },
                6 => Request::List { dir: name, tree: true },
                7 => Request::MakeDir { dir: name },
                _ => Request::List { dir: name, tree: false },
            };
            let bytes = request.encode();
            prop_assert_eq!(parse(&bytes).unwrap(), request);
            for cut in 0..bytes.len() {
                prop_assert!(parse(&bytes[..cut]).is_err());
            }
        }
    }

    /// The stream `send_until` writes for `data` when nothing stops it.
    fn stream_of(data: &[u8]) -> (Vec<u8>, u64, &'static str) {
        let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
        runtime.block_on(async {
            let (mut writer, mut reader) = tokio::io::duplex(CHUNK);
            let send = async {
                let mut source = data;
                let sent = send_until(&mut source, &mut writer, std::future::pending(), |_| {});
                let sent = sent.await;
                drop(writer);
                sent
            };
            let mut wire = Vec::new();
            let (sent, read) = tokio::join!(send, reader.read_to_end(&mut wire));
            read.unwrap();
            let (sent, why) = sent.unwrap();
            (wire, sent, why)
        })
    }

    fn receive(wire: &[u8]) -> Result<u64> {
        let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
        runtime.block_on(receive_stream(&mut &wire[..], &mut tokio::io::sink(), |_| {}))
    }

    #[test]
    fn a_stream_carries_its_data_and_hash_to_its_end() {
        let data: Vec<u8> = (0..3 * CHUNK + 17).map(|i| (i * 7) as u8).collect();
        let (wire, sent, why) = stream_of(&data);
        assert_eq!((sent, why), (data.len() as u64, "end of data"));
        assert_eq!(wire.len(), data.len() + 32);
        assert_eq!(&wire[data.len()..], blake3::hash(&data).as_bytes());
        assert_eq!(receive(&wire).unwrap(), data.len() as u64);
        // An empty stream is its hash alone.
        let (wire, sent, _) = stream_of(&[]);
        assert_eq!((wire.len(), sent), (32, 0));
        assert_eq!(receive(&wire).unwrap(), 0);
    }

    #[test]
    fn a_stream_cut_short_or_altered_fails() {
        let data: Vec<u8> = (0..CHUNK + 100).map(|i| (i * 13) as u8).collect();
        let (wire, _, _) = stream_of(&data);
        for cut in [0, 31, 32, 1000, wire.len() - 1] {
            let err = receive(&wire[..cut]).unwrap_err().to_string();
            assert!(err.contains("without its hash") || err.contains("integrity"), "{cut}: {err}");
        }
        let mut flipped = wire.clone();
        flipped[500] ^= 1;
        assert!(receive(&flipped).unwrap_err().to_string().contains("integrity"));
    }

    #[test]
    fn a_stream_stops_when_told_and_hashes_only_what_went_out() {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap();
        let (wire, sent, why) = runtime.block_on(async {
            // A pipe smaller than a chunk, drained slowly: the stop comes in mid-write.
            let (mut writer, mut reader) = tokio::io::duplex(1000);
            let endless = &mut tokio::io::repeat(0x5a);
            let stop = async {
                tokio::time::sleep(Duration::from_millis(50)).await;
                "time"
            };
            let send = async {
                let r = send_until(endless, &mut writer, stop, |_| {}).await;
                drop(writer);
                r
            };
            let drain = async {
                let mut wire = Vec::new();
                let mut buf = [0u8; 100];
                loop {
                    match reader.read(&mut buf).await.unwrap() {
                        0 => break wire,
                        n => wire.extend_from_slice(&buf[..n]),
                    }
                    tokio::time::sleep(Duration::from_millis(1)).await;
                }
            };
            let (sent, wire) = tokio::join!(send, drain);
            let (sent, why) = sent.unwrap();
            (wire, sent, why)
        });
        assert_eq!(why, "time");
        assert!(sent > 0 && sent < CHUNK as u64, "{sent} bytes before the stop");
        assert_eq!(wire.len() as u64, sent + 32);
        assert_eq!(receive(&wire).unwrap(), sent);
    }

    #[test]
    fn names_that_could_escape_or_forge_are_refused() {
        for bad in [
            "",
            ".",
            "..",
            ".hidden",
            "a/b",
            "a\\b",
            "nul\0",
            "line\nfeed",
            "esc\x1b[2J",
            "tab\t",
            "del\x7f",
        ] {
            let err = check_name(bad).unwrap_err().to_string();
            assert!(err.starts_with("invalid file name"), "{bad:?}: {err}");
            assert!(!err.contains(['\n', '\x1b', '\t']), "the name is escaped: {err:?}");
        }
        for bad in ["/etc/passwd", "a/../b", "a//b", "a/", "a/.hidden/b", "sub/\x1b[2J"] {
            let err = check_path(bad).unwrap_err().to_string();
            assert!(err.starts_with("invalid file name"), "{bad:?}: {err}");
        }
        assert_eq!(check_path("data/2026/run.bin").unwrap(), ["data", "2026", "run.bin"]);
        assert!(check_path(&["x"; 3000].join("/")).is_err(), "too long a path");
        assert!(check_name(&"x".repeat(MAX_NAME)).is_ok());
        assert!(check_name(&"x".repeat(MAX_NAME + 1)).is_err());
        assert!(check_name("report-2026.tar.gz").is_ok());
    }

    /// A peer's reason is printed on one line: its control characters arrive escaped.
    /// (A NUL, found by the `transfer` fuzz target; its input is fuzz/corpus/transfer/
    /// reply-control-characters.)
    #[test]
    fn a_reply_cannot_send_control_characters_to_the_terminal() {
        assert!(reply_result(0, b"").is_ok());
        let err = reply_result(1, b"no such file `x.b\0\0\0 in`\n\x1b[2Jforged").unwrap_err();
        assert_eq!(err.to_string(), "peer: no such file `x.b\\0\\0\\0 in`\\n\\u{1b}[2Jforged");
        assert!(err.is::<Refused>());
        let err = reply_result(2, "\u{9b}31m é".as_bytes()).unwrap_err();
        assert_eq!(err.to_string(), "peer: \\u{9b}31m é");
        assert!(err.is::<IntegrityFailed>());
    }

    #[test]
    fn a_listing_round_trips_and_a_bad_name_in_it_fails() {
        let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
        let entry = |name: &str, size: u64| {
            let mut bytes = size.to_be_bytes().to_vec();
            bytes.extend_from_slice(&(name.len() as u16).to_be_bytes());
            bytes.extend_from_slice(name.as_bytes());
            bytes
        };
        let mut wire = entry("a.bin", 5);
        wire.extend(entry("sub/b.bin", 1 << 40));
        wire.extend(entry("sub/empty/", 0));
        let listing = runtime.block_on(read_listing(&mut &wire[..])).unwrap();
        assert_eq!(listing.files, [("a.bin".to_string(), 5), ("sub/b.bin".to_string(), 1 << 40)]);
        assert_eq!(listing.empty_dirs, ["sub/empty"]);
        assert!(runtime.block_on(read_listing(&mut &wire[..wire.len() - 1])).is_err());
        wire.extend(entry("../escape", 1));
        assert!(runtime.block_on(read_listing(&mut &wire[..])).is_err());
    }
}
