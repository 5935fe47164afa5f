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
//! temporary file beside the target (`files::PartialFile`) and renames it only once the hash
//! matched: a failed transfer never leaves a file that looks complete.

use anyhow::{anyhow, bail, Context, Result};
use mpquic::noq;
use noq::{RecvStream, SendStream};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use crate::errors::one_line;

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

/// Check that a name is one plain path component, so a peer cannot write outside the directory,
/// and printable, so it cannot forge log lines or send escape sequences to a terminal. (Hidden
/// names are refused too: they include the receivers' temporaries.)
pub fn check_name(name: &str) -> Result<()> {
    let plain = !name.is_empty()
        && name.len() <= MAX_NAME
        && !name.starts_with('.')
        && !name.contains(['/', '\\'])
        && !name.chars().any(char::is_control);
    if !plain {
        bail!(
            "invalid file name {name:?}: must be a plain file name (no path, not hidden, no control characters)"
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
        Err(e) => (1u8, one_line(e)),
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

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn parse(bytes: &[u8]) -> Result<Request> {
        let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
        runtime.block_on(Request::read(&mut &bytes[..]))
    }

    fn valid_name() -> impl Strategy<Value = String> {
        "[a-zA-Z0-9_][a-zA-Z0-9_.-]{0,40}"
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
                let name = match &request { Request::Put { name, .. } | Request::Get { name } => name };
                prop_assert!(check_name(name).is_ok());
            }
        }

        /// Every valid request survives encoding and parsing; every strict prefix is an error.
        #[test]
        fn requests_round_trip_and_truncation_fails(
            name in valid_name(),
            size in any::<u64>(),
            put in any::<bool>(),
        ) {
            let request = if put { Request::Put { name, size } } else { Request::Get { name } };
            let bytes = request.encode();
            prop_assert_eq!(parse(&bytes).unwrap(), request);
            for cut in 0..bytes.len() {
                prop_assert!(parse(&bytes[..cut]).is_err());
            }
        }
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
        assert!(check_name(&"x".repeat(MAX_NAME)).is_ok());
        assert!(check_name(&"x".repeat(MAX_NAME + 1)).is_err());
        assert!(check_name("report-2026.tar.gz").is_ok());
    }
}
