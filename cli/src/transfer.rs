//! The file-transfer protocol: one bidirectional QUIC stream per file.
//!
//! ```text
//! request  = "MPQ1" op:u8 name_len:u16 name
//!   op 'P' (put):  size:u64 data[size] blake3[32]      -> reply
//!   op 'G' (get):                                      -> reply, and on OK: size:u64 data[size] blake3[32]
//! reply    = status:u8 (0 ok, 1 error) msg_len:u16 msg
//! ```
//!
//! The hash travels after the data, so both sides hash while streaming. A receiver writes to a
//! hidden temporary file beside the target and renames it only once the hash matched: a failed
//! transfer never leaves a file that looks complete.

use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context, Result};
use mpquic::noq;
use noq::{RecvStream, SendStream};
use tokio::fs::File;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

const MAGIC: &[u8; 4] = b"MPQ1";
const CHUNK: usize = 256 * 1024;
/// File names are single path components of at most this many bytes.
const MAX_NAME: usize = 255;

/// What a client asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Request {
    /// Store `name` (the data follows).
    Put {
        /// Target file name.
        name: String,
        /// Bytes that follow.
        size: u64,
    },
    /// Send `name` back.
    Get {
        /// File name.
        name: String,
    },
}

/// Check that a name is one plain path component, so a peer cannot write outside the directory.
pub fn check_name(name: &str) -> Result<()> {
    let plain = !name.is_empty()
        && name.len() <= MAX_NAME
        && name != "."
        && name != ".."
        && !name.starts_with('.')
        && !name.contains(['/', '\\', '\0']);
    if !plain {
        bail!("invalid file name {name:?}: must be a plain file name (no path, not hidden)");
    }
    Ok(())
}

impl Request {
    /// Send the request header.
    pub async fn write(&self, send: &mut SendStream) -> Result<()> {
        let (op, name) = match self {
            Request::Put { name, .. } => (b'P', name),
            Request::Get { name } => (b'G', name),
        };
        let mut header = Vec::with_capacity(7 + name.len() + 8);
        header.extend_from_slice(MAGIC);
        header.push(op);
        header.extend_from_slice(&(name.len() as u16).to_be_bytes());
        header.extend_from_slice(name.as_bytes());
        if let Request::Put { size, .. } = self {
            header.extend_from_slice(&size.to_be_bytes());
        }
        send.write_all(&header).await?;
        Ok(())
    }

    /// Read a request header; any malformed input is an error, never a panic.
    pub async fn read(recv: &mut RecvStream) -> Result<Self> {
        let mut fixed = [0u8; 7];
        recv.read_exact(&mut fixed).await.context("reading request header")?;
        if &fixed[..4] != MAGIC {
            bail!("not an mpquic transfer request");
        }
        let name_len = u16::from_be_bytes([fixed[5], fixed[6]]) as usize;
        if name_len > MAX_NAME {
            bail!("file name too long ({name_len} bytes)");
        }
        let mut name = vec![0u8; name_len];
        recv.read_exact(&mut name).await.context("reading file name")?;
        let name = String::from_utf8(name).map_err(|_| anyhow!("file name is not UTF-8"))?;
        check_name(&name)?;
        match fixed[4] {
            b'P' => {
                let mut size = [0u8; 8];
                recv.read_exact(&mut size).await.context("reading file size")?;
                Ok(Request::Put { name, size: u64::from_be_bytes(size) })
            }
            b'G' => Ok(Request::Get { name }),
            op => bail!("unknown request type {op:#x}"),
        }
    }
}

/// Send the reply: `Ok(())` or an error message.
pub async fn write_reply(send: &mut SendStream, result: &Result<()>) -> Result<()> {
    let (status, msg) = match result {
        Ok(()) => (0u8, String::new()),
        Err(e) => (1u8, format!("{e:#}")),
    };
    let msg = &msg.as_bytes()[..msg.len().min(u16::MAX as usize)];
    let mut reply = vec![status];
    reply.extend_from_slice(&(msg.len() as u16).to_be_bytes());
    reply.extend_from_slice(msg);
    send.write_all(&reply).await?;
    Ok(())
}

/// Read the peer's reply; an error reply becomes an error naming the peer's reason.
pub async fn read_reply(recv: &mut RecvStream) -> Result<()> {
    let mut fixed = [0u8; 3];
    recv.read_exact(&mut fixed).await.context("the peer closed the stream without replying")?;
    let mut msg = vec![0u8; u16::from_be_bytes([fixed[1], fixed[2]]) as usize];
    recv.read_exact(&mut msg).await.context("reading the peer's reply")?;
    match fixed[0] {
        0 => Ok(()),
        _ => Err(anyhow!("peer: {}", String::from_utf8_lossy(&msg))),
    }
}

/// Stream `size` bytes from `source` followed by their BLAKE3 hash, calling `progress` with
/// each chunk's length.
pub async fn send_body(
    source: &mut (impl AsyncRead + Unpin),
    size: u64,
    send: &mut SendStream,
    mut progress: impl FnMut(u64),
) -> Result<()> {
    let mut hasher = blake3::Hasher::new();
    let mut buf = vec![0u8; CHUNK];
    let mut left = size;
    while left > 0 {
        let n = source
            .read(&mut buf[..CHUNK.min(left as usize)])
            .await
            .context("reading the source")?;
        if n == 0 {
            bail!("the source ended {left} bytes early (was it truncated while sending?)");
        }
        hasher.update(&buf[..n]);
        send.write_all(&buf[..n]).await.context("sending data")?;
        left -= n as u64;
        progress(n as u64);
    }
    send.write_all(hasher.finalize().as_bytes()).await.context("sending the hash")?;
    Ok(())
}

/// Receive `size` bytes and the trailing hash into `sink`; fails if the hash does not match.
pub async fn receive_body(
    recv: &mut RecvStream,
    size: u64,
    sink: &mut (impl AsyncWrite + Unpin),
    mut progress: impl FnMut(u64),
) -> Result<()> {
    let mut hasher = blake3::Hasher::new();
    let mut buf = vec![0u8; CHUNK];
    let mut left = size;
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
    }
    let mut expected = [0u8; 32];
    recv.read_exact(&mut expected).await.context("receiving the hash")?;
    if hasher.finalize() != blake3::Hash::from_bytes(expected) {
        bail!("integrity check failed: the data's BLAKE3 hash does not match the sender's");
    }
    sink.flush().await.context("writing data")?;
    Ok(())
}

/// A file being received: written under a hidden temporary name, renamed when complete.
pub struct PartialFile {
    temp: PathBuf,
    target: PathBuf,
    file: Option<File>,
}

impl PartialFile {
    /// Start writing what will become `target`.
    pub async fn create(target: &Path) -> Result<Self> {
        let dir = target.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
        let file_name =
            target.file_name().ok_or_else(|| anyhow!("{} is not a file path", target.display()))?;
        let temp = dir.join(format!(
            ".{}.mpquic-part-{}",
            file_name.to_string_lossy(),
            std::process::id()
        ));
        let file = File::create(&temp)
            .await
            .with_context(|| format!("cannot create {}", temp.display()))?;
        Ok(PartialFile { temp, target: target.to_owned(), file: Some(file) })
    }

    /// The open temporary file.
    pub fn file(&mut self) -> &mut File {
        self.file.as_mut().expect("file is open until commit")
    }

    /// Flush to disk and give the file its real name.
    pub async fn commit(mut self) -> Result<()> {
        let file = self.file.take().expect("file is open until commit");
        file.sync_all().await.with_context(|| format!("cannot write {}", self.temp.display()))?;
        drop(file);
        tokio::fs::rename(&self.temp, &self.target)
            .await
            .with_context(|| format!("cannot rename into {}", self.target.display()))?;
        Ok(())
    }
}

impl Drop for PartialFile {
    fn drop(&mut self) {
        // Not committed: remove the partial data so nothing half-written remains.
        if self.file.take().is_some() {
            let _ = std::fs::remove_file(&self.temp);
        }
    }
}
