//! Resuming a transfer from the part of it the receiver already holds.
//!
//! The receiver cuts the file into fixed chunks (`chunk_size`, known to both sides from the
//! file's size) and offers the BLAKE3 hash of each whole chunk of its partial copy. The sender
//! hashes its own chunks in order and answers with the offset of the first one that differs (or
//! the end of the offer): the data it sends starts there. The prefix is thus checked against
//! the sender's data chunk by chunk before it is kept, and the hash after the data is still the
//! whole file's, so the receiver verifies what it stores end to end: a partial copy corrupted
//! on disk, or one of other data under the same name, is re-sent from the first chunk that
//! differs, never kept.

use anyhow::{bail, Context, Result};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// The smallest chunk: small files lose little of a partial copy to a chunk left unfinished.
const MIN_CHUNK: u64 = 1 << 20;
/// The largest chunk: the sender holds one chunk in memory while it checks the offer.
const MAX_CHUNK: u64 = 16 << 20;
/// About this many chunks per file (more for files beyond `MAX_CHUNK` times as many bytes):
/// an offer of 4096 hashes is 128 KiB.
const TARGET_CHUNKS: u64 = 4096;
/// Hashes are read from the wire in groups of this many (never all at once on a peer's word).
const READ_HASHES: usize = 1024;

/// The chunk size of a file of `size` bytes: a power of two from 1 to 16 MiB.
pub fn chunk_size(size: u64) -> u64 {
    size.div_ceil(TARGET_CHUNKS).next_power_of_two().clamp(MIN_CHUNK, MAX_CHUNK)
}

/// What a receiver holds of a file: the hash of each whole chunk of its partial copy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Offer {
    chunk: u64,
    hashes: Vec<[u8; 32]>,
}

impl Offer {
    /// Nothing held: the sender starts from the beginning.
    pub fn empty(size: u64) -> Self {
        Offer { chunk: chunk_size(size), hashes: Vec::new() }
    }

    /// The hashes of the whole chunks among the first `held` bytes of `copy`, the receiver's
    /// partial copy of a file of `size` bytes (read from its start).
    pub async fn of_copy(
        copy: &mut (impl AsyncRead + Unpin),
        held: u64,
        size: u64,
    ) -> Result<Self> {
        let chunk = chunk_size(size);
        let mut hashes = Vec::new();
        let mut buf = vec![0u8; chunk.min(held) as usize];
        for _ in 0..held.min(size) / chunk {
            copy.read_exact(&mut buf).await.context("reading the partial file")?;
            hashes.push(*blake3::hash(&buf).as_bytes());
        }
        Ok(Offer { chunk, hashes })
    }

    /// The bytes the offer covers.
    pub fn bytes(&self) -> u64 {
        self.hashes.len() as u64 * self.chunk
    }

    /// Send the offer.
    pub async fn write(&self, send: &mut (impl AsyncWrite + Unpin)) -> Result<()> {
        let mut bytes = Vec::with_capacity(12 + 32 * self.hashes.len());
        bytes.extend_from_slice(&self.chunk.to_be_bytes());
        bytes.extend_from_slice(&(self.hashes.len() as u32).to_be_bytes());
        self.hashes.iter().for_each(|hash| bytes.extend_from_slice(hash));
        send.write_all(&bytes).await.context("sending the resume offer")?;
        Ok(())
    }

    /// Read the receiver's offer for a file of `size` bytes; one that does not fit the file
    /// (another chunk size, more chunks than the file has) is an error.
    pub async fn read(recv: &mut (impl AsyncRead + Unpin), size: u64) -> Result<Self> {
        let mut fixed = [0u8; 12];
        recv.read_exact(&mut fixed).await.context("reading the resume offer")?;
        let chunk = u64::from_be_bytes(fixed[..8].try_into().expect("8 bytes"));
        let count = u32::from_be_bytes(fixed[8..].try_into().expect("4 bytes")) as u64;
        if chunk != chunk_size(size) || count > size / chunk {
            bail!("a resume offer that does not fit the file ({count} chunks of {chunk} bytes)");
        }
        let mut hashes = Vec::new();
        let mut left = count as usize;
        while left > 0 {
            let mut group = vec![0u8; 32 * left.min(READ_HASHES)];
            recv.read_exact(&mut group).await.context("reading the resume offer")?;
            hashes.extend(group.chunks_exact(32).map(|h| <[u8; 32]>::try_from(h).expect("32")));
            left -= group.len() / 32;
        }
        Ok(Offer { chunk, hashes })
    }

    /// Read where the sender's data starts and check it is a chunk boundary within the offer.
    pub async fn read_start(&self, recv: &mut (impl AsyncRead + Unpin)) -> Result<u64> {
        let mut start = [0u8; 8];
        recv.read_exact(&mut start).await.context("reading where the data starts")?;
        let start = u64::from_be_bytes(start);
        if start % self.chunk != 0 || start > self.bytes() {
            bail!("the sender resumes at byte {start}, not at a chunk it was offered");
        }
        Ok(start)
    }

    /// The sender's side: check the offered chunks against `source` (read from its start) and
    /// return where the data to send starts. `source` has then been read up to that point, or
    /// one chunk past it, that chunk kept in the answer to be sent first.
    pub async fn answer(&self, source: &mut (impl AsyncRead + Unpin)) -> Result<Resume> {
        let mut seen = blake3::Hasher::new();
        let mut buf = vec![0u8; if self.hashes.is_empty() { 0 } else { self.chunk as usize }];
        for (i, hash) in self.hashes.iter().enumerate() {
            source
                .read_exact(&mut buf)
                .await
                .context("reading the source (was it truncated while sending?)")?;
            if blake3::hash(&buf).as_bytes() != hash {
                let start = i as u64 * self.chunk;
                return Ok(Resume { start, offered: self.bytes(), seen, unsent: buf });
            }
            seen.update(&buf);
        }
        Ok(Resume { start: self.bytes(), offered: self.bytes(), seen, unsent: Vec::new() })
    }
}

/// Where a resumed transfer's data starts, as the sender found it.
pub struct Resume {
    /// The first byte to send.
    pub start: u64,
    /// The bytes the receiver offered.
    pub offered: u64,
    /// The hash state over the bytes before `start`.
    pub seen: blake3::Hasher,
    /// Bytes read from the source past `start` (the chunk that differed), to send first.
    pub unsent: Vec<u8>,
}

impl Resume {
    /// Tell the receiver where the data starts.
    pub async fn write_start(&self, send: &mut (impl AsyncWrite + Unpin)) -> Result<()> {
        send.write_all(&self.start.to_be_bytes()).await.context("sending where the data starts")?;
        Ok(())
    }
}

/// What a client says about a resumed file, if anything: how much of it was kept, or that the
/// receiver's partial copy differed from the sender's data (and from where).
pub fn note(name: &str, start: u64, offered: u64, size: u64) -> Option<String> {
    if start < offered {
        Some(format!(
            "mpquic: {name}: the partial copy differs from the sender's data from byte {start} \
             on: sending the rest again from there"
        ))
    } else if start > 0 {
        Some(format!(
            "mpquic: {name}: resuming at byte {start} of {size} (the part before checked)"
        ))
    } else {
        None
    }
}

/// The hash state over the first `len` bytes of `copy` (read from its start): what a resumed
/// transfer's receiver kept, hashed from its own copy so the final check covers it too.
pub async fn hash_prefix(copy: &mut (impl AsyncRead + Unpin), len: u64) -> Result<blake3::Hasher> {
    let mut hasher = blake3::Hasher::new();
    let mut buf = vec![0u8; 256 * 1024];
    let mut left = len;
    while left > 0 {
        let n = buf.len().min(left as usize);
        copy.read_exact(&mut buf[..n]).await.context("reading the partial file")?;
        hasher.update(&buf[..n]);
        left -= n as u64;
    }
    Ok(hasher)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block_on<T>(f: impl std::future::Future<Output = T>) -> T {
        tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(f)
    }

    fn data(len: usize, seed: u8) -> Vec<u8> {
        (0..len).map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed)).collect()
    }

    #[test]
    fn chunks_are_1_to_16_mib_and_about_4096_per_file() {
        assert_eq!(chunk_size(0), 1 << 20);
        assert_eq!(chunk_size(1 << 30), 1 << 20);
        assert_eq!(chunk_size(8 << 30), 2 << 20);
        assert_eq!(chunk_size(u64::MAX / 2), 16 << 20);
    }

    /// The offer a receiver holding `held` bytes of `copy` makes, through the wire, and the
    /// sender's answer from `source`: (start, the bytes it sends, the whole file's hash).
    fn resume(copy: &[u8], held: u64, source: &[u8]) -> (u64, Vec<u8>, blake3::Hash) {
        block_on(async {
            let size = source.len() as u64;
            let offer = Offer::of_copy(&mut &copy[..], held, size).await.unwrap();
            let mut wire = Vec::new();
            offer.write(&mut wire).await.unwrap();
            let read = Offer::read(&mut &wire[..], size).await.unwrap();
            assert_eq!(read, offer);
            let mut rest = source;
            let answer = read.answer(&mut rest).await.unwrap();
            let mut wire = Vec::new();
            answer.write_start(&mut wire).await.unwrap();
            assert_eq!(offer.read_start(&mut &wire[..]).await.unwrap(), answer.start);
            let sent = [&answer.unsent[..], rest].concat();
            let mut whole = answer.seen.clone();
            whole.update(&sent);
            (answer.start, sent, whole.finalize())
        })
    }

    #[test]
    fn a_matching_prefix_is_kept_to_its_last_whole_chunk() {
        let source = data(5 * (1 << 20) + 123, 1);
        let held = 3 * (1 << 20) + 5000;
        let (start, sent, whole) = resume(&source[..held], held as u64, &source);
        assert_eq!(start, 3 << 20);
        assert_eq!(sent, source[3 << 20..]);
        assert_eq!(whole, blake3::hash(&source), "the whole file's hash");
        let prefix = block_on(hash_prefix(&mut &source[..], start)).unwrap();
        assert_eq!(prefix.finalize(), blake3::hash(&source[..start as usize]));
    }

    #[test]
    fn a_corrupted_byte_or_other_data_resends_from_the_chunk_that_differs() {
        let source = data(4 << 20, 2);
        let mut copy = source.clone();
        copy[(2 << 20) + 77] ^= 1;
        let (start, sent, whole) = resume(&copy, copy.len() as u64, &source);
        assert_eq!(start, 2 << 20);
        assert_eq!(sent, source[2 << 20..]);
        assert_eq!(whole, blake3::hash(&source));
        let (start, sent, _) = resume(&data(4 << 20, 3), 4 << 20, &source);
        assert_eq!((start, sent.len()), (0, source.len()), "another file: from the start");
        assert_eq!(note("f", 0, 4 << 20, 4 << 20).unwrap().split(": ").nth(1), Some("f"));
    }

    #[test]
    fn offers_that_do_not_fit_and_starts_off_the_offer_are_refused() {
        block_on(async {
            let offer = Offer::of_copy(&mut &data(3 << 20, 4)[..], 3 << 20, 3 << 20).await.unwrap();
            let mut wire = Vec::new();
            offer.write(&mut wire).await.unwrap();
            assert!(Offer::read(&mut &wire[..], (3 << 20) - 1).await.is_err(), "too many chunks");
            assert!(Offer::read(&mut &wire[..], 8 << 30).await.is_err(), "another chunk size");
            assert!(Offer::read(&mut &wire[..wire.len() - 1], 3 << 20).await.is_err());
            for bad in [1u64, (4 << 20) as u64] {
                let err = offer.read_start(&mut &bad.to_be_bytes()[..]).await.unwrap_err();
                assert!(err.to_string().contains("not at a chunk it was offered"), "{err}");
            }
        });
    }
}
