//! Writes the seed corpora of the `transfer` and `resume` targets with the CLI's own encoders:
//! real requests, replies, listings and resume offers, each behind the byte its target reads
//! first. Run from `fuzz/`: `cargo +nightly run --example seeds` (it overwrites the seeds).

use std::fs;
use std::path::Path;

use anyhow::anyhow;
use mpquic_cli::exit::{IntegrityFailed, Refused};
use mpquic_cli::resume::{Offer, Resume};
use mpquic_cli::transfer::{encode_listing, encode_reply, Listing, Request};

fn main() -> anyhow::Result<()> {
    transfer(Path::new("corpus/transfer"))?;
    resume(Path::new("corpus/resume"))?;
    Ok(())
}

/// The target's first byte: 0 request, 1 reply, 2 listing, 3 path.
fn transfer(dir: &Path) -> anyhow::Result<()> {
    fs::create_dir_all(dir)?;
    let requests = [
        ("request-put", Request::Put { name: "run.bin".into(), size: 1 << 30, resume: false }),
        (
            "request-put-resume",
            Request::Put { name: "data/2026/run.bin".into(), size: 5 << 20, resume: true },
        ),
        ("request-get-resume", Request::Get { name: "sub/b.bin".into(), resume: true }),
        ("request-stream", Request::Stream { name: "timed".into() }),
        ("request-list-root", Request::List { dir: String::new(), tree: false }),
        ("request-tree", Request::List { dir: "data".into(), tree: true }),
        ("request-mkdir", Request::MakeDir { dir: "data/empty".into() }),
    ];
    for (file, request) in requests {
        write(dir, file, 0, &request.encode())?;
    }
    write(dir, "reply-ok", 1, &encode_reply(&Ok(())))?;
    let refused: anyhow::Result<()> = Err(Refused("no such file `x.bin`".into()).into());
    write(dir, "reply-refused", 1, &encode_reply(&refused))?;
    let failed: anyhow::Result<()> = Err(anyhow!(IntegrityFailed("integrity check failed".into())));
    write(dir, "reply-integrity", 1, &encode_reply(&failed))?;
    let files = vec![("a.bin".to_string(), 5), ("sub/b.bin".to_string(), 1 << 40)];
    let listing = Listing { files, empty_dirs: vec!["empty".into(), "sub/none".into()] };
    write(dir, "listing", 2, &encode_listing(&listing, true))?;
    write(dir, "path", 3, b"data/2026/run.bin")
}

/// The target's input: the file's size, then the receiver's offer and the sender's start.
fn resume(dir: &Path) -> anyhow::Result<()> {
    fs::create_dir_all(dir)?;
    let runtime = tokio::runtime::Builder::new_current_thread().build()?;
    let size = (3 << 20) + 1000;
    let copy: Vec<u8> = (0..size).map(|i| (i % 251) as u8).collect();
    for (file, held) in [("offer-none", 0), ("offer-two-chunks", 2 << 20)] {
        let wire = runtime.block_on(async {
            let offer = Offer::of_copy(&mut &copy[..], held, size).await?;
            let answer: Resume = offer.answer(&mut &copy[..]).await?;
            let mut wire = size.to_be_bytes().to_vec();
            offer.write(&mut wire).await?;
            answer.write_start(&mut wire).await?;
            anyhow::Ok(wire)
        })?;
        fs::write(dir.join(file), wire)?;
    }
    Ok(())
}

fn write(dir: &Path, file: &str, which: u8, bytes: &[u8]) -> anyhow::Result<()> {
    fs::write(dir.join(file), [&[which][..], bytes].concat())?;
    Ok(())
}
