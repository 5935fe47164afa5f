//! The resume handshake (`mpquic_cli::resume`): the receiver's offer of chunk hashes, which the
//! sender reads for a file of its size, then the sender's start, which the receiver checks
//! against its offer. Input: the file's size (8 bytes, big-endian), then the stream.
//!
//! An accepted offer fits the file, is exactly the bytes it was read from, and an accepted
//! start is a chunk boundary within it.

#![no_main]

use std::sync::LazyLock;

use libfuzzer_sys::fuzz_target;
use mpquic_cli::resume::{chunk_size, Offer};
use tokio::runtime::Runtime;

static RUNTIME: LazyLock<Runtime> = LazyLock::new(|| {
    tokio::runtime::Builder::new_current_thread().build().expect("a current-thread runtime")
});

fuzz_target!(|data: &[u8]| {
    let Some((size, wire)) = data.split_first_chunk::<8>() else { return };
    let size = u64::from_be_bytes(*size);
    RUNTIME.block_on(handshake(size, wire));
});

async fn handshake(size: u64, wire: &[u8]) {
    let mut rest = wire;
    let Ok(offer) = Offer::read(&mut rest, size).await else { return };
    assert!(offer.bytes() <= size, "the offer fits the file");
    let mut written = Vec::new();
    offer.write(&mut written).await.expect("writing to memory");
    assert_eq!(written, wire[..wire.len() - rest.len()], "the offer is the bytes read");
    if let Ok(start) = offer.read_start(&mut rest).await {
        assert!(start <= offer.bytes() && start % chunk_size(size) == 0);
    }
}
