//! A service that embeds mpquic, as a crate outside mpquic's repository writes it: a digest
//! service. A client writes bytes on a stream and finishes it; the service answers with the
//! bytes' count and FNV-1a hash. `tests/two_paths.rs` runs it over two loopback paths.

use mpquic::{ConnectionReport, Server};

/// What a client gets back for its stream: (bytes read, FNV-1a 64 of them).
pub type Digest = (u64, u64);

/// The most a stream may send.
pub const MAX_REQUEST: usize = 64 << 20;

/// The FNV-1a 64 hash and length of `data`.
pub fn digest(data: &[u8]) -> Digest {
    let hash = data.iter().fold(0xcbf2_9ce4_8422_2325_u64, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    });
    (data.len() as u64, hash)
}

/// Accept one connection and answer each of its streams until the client closes it; the
/// server's report of the connection's paths.
pub async fn serve_one(
    server: &Server,
) -> Result<ConnectionReport, Box<dyn std::error::Error + Send + Sync>> {
    let accepting = server.accept().await.ok_or("the server endpoint closed")?;
    let conn = accepting.established().await?;
    while let Ok((mut send, mut recv)) = conn.connection().accept_bi().await {
        let data = recv.read_to_end(MAX_REQUEST).await?;
        let (len, hash) = digest(&data);
        send.write_all(&[len.to_be_bytes(), hash.to_be_bytes()].concat()).await?;
        send.finish()?;
    }
    Ok(conn.report())
}
