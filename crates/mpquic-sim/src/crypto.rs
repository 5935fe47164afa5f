//! A null "TLS" for the simulator: a three-message handshake that carries QUIC transport
//! parameters in the clear, and packet protection that encrypts nothing.
//!
//! Why: the simulator runs the real `noq-proto` state machines, and with rustls they spend a
//! large share of their time in AES-GCM and header protection. None of that changes what the
//! congestion controllers see: this suite keeps the wire sizes of the real thing (a 16-byte
//! AEAD tag per packet, a 16-byte header-protection sample), so packet sizes, pacing, windows
//! and queueing are the same as with `TLS13_AES_128_GCM_SHA256`. What it does change:
//!
//! - the handshake bytes are shorter (no certificates or key shares), so the handshake packets
//!   are smaller; the handshake still takes the same number of round trips (1 RTT for the
//!   client to send 1-RTT data, the server confirming one flight later);
//! - nothing is secret and the tag is a constant: a misrouted packet is detected only by the
//!   connection-id routing, and a corrupted one is not detected. The simulator neither misroutes
//!   nor corrupts packets.
//! - it is fully deterministic: no ephemeral keys, no random nonces.
//!
//! It must never be used outside the simulator; it is not exported by any network-facing crate.

use std::any::Any;
use std::sync::Arc;

use bytes::BytesMut;
use noq_proto::crypto::{
    self, CryptoError, ExportKeyingMaterialError, HandshakeTokenKey, HeaderKey, HmacKey, KeyPair,
    Keys, PacketKey, UnsupportedVersion,
};
use noq_proto::transport_parameters::TransportParameters;
use noq_proto::{ConnectError, ConnectionId, PathId, Side, TransportError};

/// Length of the fake AEAD tag: the same as AES-128-GCM's, so packets have their real sizes.
const TAG_LEN: usize = 16;
/// Header-protection sample size of AES-based header protection.
const SAMPLE_LEN: usize = 16;

const MSG_CLIENT_HELLO: u8 = 1;
const MSG_SERVER_HELLO: u8 = 2;
const MSG_SERVER_FINISHED: u8 = 3;
const MSG_CLIENT_FINISHED: u8 = 4;

/// Packet protection that leaves the payload as it is and appends a tag naming the key
/// generation (initial = 1, handshake = 2, 1-RTT = 3, then one more per key update).
///
/// The generation check matters: with real keys, a packet protected with another key phase
/// fails to decrypt and is dropped; the stack's key-update logic relies on that (a packet that
/// decrypted under the wrong keys would be taken as an invalid key update and close the
/// connection).
struct NullPacketKey {
    generation: u64,
}

impl PacketKey for NullPacketKey {
    fn encrypt(&self, _path_id: PathId, _packet: u64, buf: &mut [u8], _header_len: usize) {
        let len = buf.len();
        let tag = &mut buf[len - TAG_LEN..];
        tag[..8].copy_from_slice(&self.generation.to_le_bytes());
        tag[8..].fill(0);
    }

    fn decrypt(
        &self,
        _path_id: PathId,
        _packet: u64,
        _header: &[u8],
        payload: &mut BytesMut,
    ) -> Result<(), CryptoError> {
        let len = payload.len();
        if len < TAG_LEN {
            return Err(CryptoError);
        }
        let tag = &payload[len - TAG_LEN..];
        if tag[..8] != self.generation.to_le_bytes() || tag[8..].iter().any(|&b| b != 0) {
            return Err(CryptoError);
        }
        payload.truncate(len - TAG_LEN);
        Ok(())
    }

    fn tag_len(&self) -> usize {
        TAG_LEN
    }

    fn confidentiality_limit(&self) -> u64 {
        u64::MAX
    }

    fn integrity_limit(&self) -> u64 {
        u64::MAX
    }
}

/// Header protection that protects nothing.
struct NullHeaderKey;

impl HeaderKey for NullHeaderKey {
    fn decrypt(&self, _pn_offset: usize, _packet: &mut [u8]) {}

    fn encrypt(&self, _pn_offset: usize, _packet: &mut [u8]) {}

    fn sample_size(&self) -> usize {
        SAMPLE_LEN
    }
}

const GEN_INITIAL: u64 = 1;
const GEN_HANDSHAKE: u64 = 2;
const GEN_ONE_RTT: u64 = 3;

fn packet_keys(generation: u64) -> KeyPair<Box<dyn PacketKey>> {
    KeyPair {
        local: Box::new(NullPacketKey { generation }),
        remote: Box::new(NullPacketKey { generation }),
    }
}

fn null_keys(generation: u64) -> Keys {
    Keys {
        header: KeyPair { local: Box::new(NullHeaderKey), remote: Box::new(NullHeaderKey) },
        packet: packet_keys(generation),
    }
}

fn message(kind: u8, body: &[u8], out: &mut Vec<u8>) {
    out.push(kind);
    out.extend_from_slice(&(body.len() as u32).to_be_bytes());
    out.extend_from_slice(body);
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stage {
    /// Client: ClientHello not written yet. Server: ClientHello not read yet.
    Start,
    /// Client: waiting for ServerHello. Server: must write ServerHello.
    Hello,
    /// Client: must switch to Handshake keys. Server: must write ServerFinished.
    HandshakeKeys,
    /// Client: waiting for ServerFinished. Server: waiting for ClientFinished.
    WaitFinished,
    /// Client: must write ClientFinished.
    WriteFinished,
    /// Both sides: done.
    Done,
}

/// One side of the null handshake.
struct NullSession {
    side: Side,
    stage: Stage,
    local_params: Vec<u8>,
    peer_params: Option<Vec<u8>>,
    got_handshake_data: bool,
    inbox: Vec<u8>,
    /// Generation of the last 1-RTT keys handed out.
    one_rtt_generation: u64,
}

impl NullSession {
    fn new(side: Side, params: &TransportParameters) -> Self {
        let mut local_params = Vec::new();
        params.write(&mut local_params);
        NullSession {
            side,
            stage: Stage::Start,
            local_params,
            peer_params: None,
            got_handshake_data: false,
            inbox: Vec::new(),
            one_rtt_generation: GEN_ONE_RTT,
        }
    }

    fn take_message(&mut self) -> Option<(u8, Vec<u8>)> {
        if self.inbox.len() < 5 {
            return None;
        }
        let len = u32::from_be_bytes(self.inbox[1..5].try_into().unwrap()) as usize;
        if self.inbox.len() < 5 + len {
            return None;
        }
        let kind = self.inbox[0];
        let body = self.inbox[5..5 + len].to_vec();
        self.inbox.drain(..5 + len);
        Some((kind, body))
    }
}

fn violation(msg: &'static str) -> TransportError {
    TransportError::new(noq_proto::TransportErrorCode::PROTOCOL_VIOLATION, msg.to_owned())
}

impl crypto::Session for NullSession {
    fn initial_keys(&self, _dst_cid: ConnectionId, _side: Side) -> Keys {
        null_keys(GEN_INITIAL)
    }

    fn handshake_data(&self) -> Option<Box<dyn Any>> {
        self.got_handshake_data.then(|| Box::new(()) as Box<dyn Any>)
    }

    fn peer_identity(&self) -> Option<Box<dyn Any>> {
        None
    }

    fn early_crypto(&self) -> Option<(Box<dyn HeaderKey>, Box<dyn PacketKey>)> {
        None
    }

    fn early_data_accepted(&self) -> Option<bool> {
        match self.side {
            Side::Client => Some(false),
            Side::Server => None,
        }
    }

    fn is_handshaking(&self) -> bool {
        self.stage != Stage::Done
    }

    fn read_handshake(&mut self, buf: &[u8]) -> Result<bool, TransportError> {
        self.inbox.extend_from_slice(buf);
        let mut became_ready = false;
        while let Some((kind, body)) = self.take_message() {
            match (self.side, self.stage, kind) {
                (Side::Server, Stage::Start, MSG_CLIENT_HELLO) => {
                    self.peer_params = Some(body);
                    self.stage = Stage::Hello;
                    became_ready = true;
                }
                (Side::Client, Stage::Hello, MSG_SERVER_HELLO) => {
                    self.stage = Stage::HandshakeKeys;
                    became_ready = true;
                }
                (Side::Client, Stage::WaitFinished, MSG_SERVER_FINISHED) => {
                    self.peer_params = Some(body);
                    self.stage = Stage::WriteFinished;
                }
                (Side::Server, Stage::WaitFinished, MSG_CLIENT_FINISHED) => {
                    self.stage = Stage::Done;
                }
                _ => return Err(violation("unexpected null-handshake message")),
            }
        }
        if became_ready && !self.got_handshake_data {
            self.got_handshake_data = true;
            return Ok(true);
        }
        Ok(false)
    }

    fn transport_parameters(&self) -> Result<Option<TransportParameters>, TransportError> {
        match &self.peer_params {
            None => Ok(None),
            Some(bytes) => Ok(Some(TransportParameters::read(self.side, &mut bytes.as_slice())?)),
        }
    }

    fn write_handshake(&mut self, buf: &mut Vec<u8>) -> Option<Keys> {
        match (self.side, self.stage) {
            (Side::Client, Stage::Start) => {
                message(MSG_CLIENT_HELLO, &self.local_params, buf);
                self.stage = Stage::Hello;
                None
            }
            (Side::Client, Stage::HandshakeKeys) => {
                self.stage = Stage::WaitFinished;
                Some(null_keys(GEN_HANDSHAKE))
            }
            (Side::Client, Stage::WriteFinished) => {
                message(MSG_CLIENT_FINISHED, &[], buf);
                self.stage = Stage::Done;
                Some(null_keys(GEN_ONE_RTT))
            }
            (Side::Server, Stage::Hello) => {
                message(MSG_SERVER_HELLO, &[], buf);
                self.stage = Stage::HandshakeKeys;
                Some(null_keys(GEN_HANDSHAKE))
            }
            (Side::Server, Stage::HandshakeKeys) => {
                message(MSG_SERVER_FINISHED, &self.local_params, buf);
                self.stage = Stage::WaitFinished;
                Some(null_keys(GEN_ONE_RTT))
            }
            _ => None,
        }
    }

    fn next_1rtt_keys(&mut self) -> Option<KeyPair<Box<dyn PacketKey>>> {
        self.one_rtt_generation += 1;
        Some(packet_keys(self.one_rtt_generation))
    }

    fn is_valid_retry(&self, _orig_dst_cid: ConnectionId, _header: &[u8], payload: &[u8]) -> bool {
        payload.len() >= TAG_LEN
    }

    fn export_keying_material(
        &self,
        output: &mut [u8],
        _label: &[u8],
        _context: &[u8],
    ) -> Result<(), ExportKeyingMaterialError> {
        output.fill(0);
        Ok(())
    }
}

/// The client side of the null handshake.
#[derive(Debug, Default)]
pub struct NullClientConfig;

impl crypto::ClientConfig for NullClientConfig {
    fn start_session(
        &self,
        _version: u32,
        _server_name: &str,
        params: &TransportParameters,
    ) -> Result<Box<dyn crypto::Session>, ConnectError> {
        Ok(Box::new(NullSession::new(Side::Client, params)))
    }
}

/// The server side of the null handshake.
#[derive(Debug, Default)]
pub struct NullServerConfig;

impl crypto::ServerConfig for NullServerConfig {
    fn initial_keys(
        &self,
        _version: u32,
        _dst_cid: ConnectionId,
    ) -> Result<Keys, UnsupportedVersion> {
        Ok(null_keys(GEN_INITIAL))
    }

    fn retry_tag(&self, _version: u32, _orig_dst_cid: ConnectionId, _packet: &[u8]) -> [u8; 16] {
        [0; 16]
    }

    fn start_session(
        &self,
        _version: u32,
        params: &TransportParameters,
    ) -> Box<dyn crypto::Session> {
        Box::new(NullSession::new(Side::Server, params))
    }
}

/// A keyed, non-cryptographic MAC (FNV-1a based) for stateless-reset tokens.
#[derive(Debug)]
pub struct NullHmacKey {
    key: u64,
}

impl NullHmacKey {
    /// A key derived from the scenario seed.
    pub fn new(key: u64) -> Arc<Self> {
        Arc::new(NullHmacKey { key })
    }
}

fn fnv1a(seed: u64, data: &[u8]) -> u64 {
    let mut h = 0xcbf2_9ce4_8422_2325 ^ seed;
    for &b in data {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

impl HmacKey for NullHmacKey {
    fn sign(&self, data: &[u8], signature_out: &mut [u8]) {
        for (i, chunk) in signature_out.chunks_mut(8).enumerate() {
            let h = fnv1a(self.key.wrapping_add(i as u64), data).to_le_bytes();
            chunk.copy_from_slice(&h[..chunk.len()]);
        }
    }

    fn signature_len(&self) -> usize {
        32
    }

    fn verify(&self, data: &[u8], signature: &[u8]) -> Result<(), CryptoError> {
        let mut expected = vec![0; signature.len()];
        self.sign(data, &mut expected);
        if expected == signature {
            Ok(())
        } else {
            Err(CryptoError)
        }
    }
}

/// Token "sealing" that only appends a zero tag (tokens are not used by the simulator's
/// servers, which send no NEW_TOKEN frames and never ask for a retry).
#[derive(Debug, Default)]
pub struct NullTokenKey;

impl HandshakeTokenKey for NullTokenKey {
    fn seal(&self, _token_nonce: u128, data: &mut Vec<u8>) -> Result<(), CryptoError> {
        data.extend_from_slice(&[0; TAG_LEN]);
        Ok(())
    }

    fn open<'a>(&self, _token_nonce: u128, data: &'a mut [u8]) -> Result<&'a [u8], CryptoError> {
        if data.len() < TAG_LEN {
            return Err(CryptoError);
        }
        let len = data.len() - TAG_LEN;
        Ok(&data[..len])
    }
}
