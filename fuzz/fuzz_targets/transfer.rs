//! The file protocol as a peer sends it (`mpquic_cli::transfer`): a request header, a reply, a
//! listing, a path. The first byte chooses which; the rest is what arrives on the stream, read
//! from memory through the same async readers the CLI runs on QUIC streams.
//!
//! What is accepted must also be what the encoders write (nothing read past the frame, nothing
//! lost), names must pass `check_path`, and a peer's reply must print as one line of text.

#![no_main]

use std::sync::LazyLock;

use libfuzzer_sys::fuzz_target;
use mpquic_cli::errors::one_line;
use mpquic_cli::transfer::{check_path, encode_listing, read_listing, reply_result, Request};
use tokio::runtime::Runtime;

static RUNTIME: LazyLock<Runtime> = LazyLock::new(|| {
    tokio::runtime::Builder::new_current_thread().build().expect("a current-thread runtime")
});

fuzz_target!(|data: &[u8]| {
    let Some((&which, wire)) = data.split_first() else { return };
    match which % 4 {
        0 => request(wire),
        1 => reply(wire),
        2 => listing(wire),
        _ => path(wire),
    }
});

fn request(wire: &[u8]) {
    let mut rest = wire;
    let Ok(request) = RUNTIME.block_on(Request::read(&mut rest)) else { return };
    let header = &wire[..wire.len() - rest.len()];
    assert_eq!(request.encode(), header, "{request:?} is the header it was read from");
    let name = match &request {
        Request::Put { name, .. } | Request::Get { name, .. } | Request::Stream { name } => name,
        Request::MakeDir { dir } => dir,
        // Only a listing may name the empty path: the server's own directory.
        Request::List { dir, .. } if dir.is_empty() => return,
        Request::List { dir, .. } => dir,
    };
    check_path(name).expect("a request's name is a plain path");
}

/// A reply as `read_reply` frames it: status, message length, message.
fn reply(wire: &[u8]) {
    let [status, len @ ..] = wire.get(..3).unwrap_or_default() else { return };
    let len = u16::from_be_bytes([len[0], len[1]]) as usize;
    let Some(msg) = wire[3..].get(..len) else { return };
    match reply_result(*status, msg) {
        Ok(()) => assert_eq!(*status, 0),
        Err(e) => {
            assert_ne!(*status, 0);
            let line = one_line(&e);
            assert!(!line.contains(char::is_control), "the peer's text is printed: {line:?}");
        }
    }
}

fn listing(wire: &[u8]) {
    let Ok(listing) = RUNTIME.block_on(read_listing(&mut &wire[..])) else { return };
    // The encoding puts files before directories, so the bytes may be reordered, not changed.
    let again = encode_listing(&listing, true);
    assert_eq!(again.len(), wire.len(), "the listing is every byte of the stream");
    let read_again = RUNTIME.block_on(read_listing(&mut &again[..])).expect("our own listing reads");
    assert_eq!(read_again, listing, "a listing reads back as it was written");
    for name in listing.files.iter().map(|(name, _)| name).chain(&listing.empty_dirs) {
        check_path(name).expect("a listed name is a plain path");
    }
}

fn path(wire: &[u8]) {
    let Ok(text) = std::str::from_utf8(wire) else { return };
    match check_path(text) {
        Ok(parts) => {
            assert_eq!(parts.join("/"), text);
            assert!(!text.contains(char::is_control) && !text.starts_with('/'));
            assert!(parts.iter().all(|p| !p.is_empty() && !p.starts_with('.')));
        }
        Err(e) => assert!(!e.to_string().contains(char::is_control), "{e}"),
    }
}
