//! TLS 1.3 for mpquic endpoints: certificates verified by default, self-signed only on request.
//!
//! Both directions use the same tools: a server proves itself with an [`Identity`] that a
//! client's [`Trust`] verifies; a server may also demand that clients prove themselves
//! ([`ClientAuth::Required`], mutual TLS), each with its own [`Identity`] issued by a CA the
//! server names. rustls' `WebPkiClientVerifier` does the checking.

use std::path::Path;
use std::sync::Arc;

use noq::crypto::rustls::{QuicClientConfig, QuicServerConfig};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{verify_tls13_signature, CryptoProvider};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::server::WebPkiClientVerifier;
use rustls::{DigitallySignedStruct, RootCertStore, SignatureScheme};

/// The ALPN protocol mpquic peers speak.
pub const ALPN: &[u8] = b"mpquic/1";

/// A TLS setup problem, with the file it concerns.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// A certificate or key file could not be read or parsed.
    #[error("cannot read {what} from {path}: {reason}")]
    File {
        /// "certificate", "private key" or "CA certificate".
        what: &'static str,
        /// The file.
        path: String,
        /// Why.
        reason: String,
    },
    /// rustls refused the configuration (e.g. key and certificate do not match).
    #[error("TLS configuration rejected: {0}")]
    Rustls(#[from] rustls::Error),
    /// Generating a self-signed certificate failed.
    #[error("cannot generate a self-signed certificate: {0}")]
    Generate(#[from] rcgen::Error),
}

/// A certificate chain and its private key: a server's, or a client's for mutual TLS.
pub struct Identity {
    /// Leaf first.
    pub chain: Vec<CertificateDer<'static>>,
    /// The leaf's key.
    pub key: PrivateKeyDer<'static>,
}

impl Identity {
    /// Load PEM files.
    pub fn from_pem_files(cert: &Path, key: &Path) -> Result<Self, TlsError> {
        let file_error = |what, path: &Path, reason: String| TlsError::File {
            what,
            path: path.display().to_string(),
            reason,
        };
        let chain = CertificateDer::pem_file_iter(cert)
            .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
            .map_err(|e| file_error("certificate", cert, e.to_string()))?;
        if chain.is_empty() {
            return Err(file_error("certificate", cert, "no PEM certificate in it".into()));
        }
        let key = PrivateKeyDer::from_pem_file(key)
            .map_err(|e| file_error("private key", key, e.to_string()))?;
        Ok(Identity { chain, key })
    }

    /// A fresh self-signed certificate for `names` (DNS names or IP addresses).
    pub fn self_signed(names: &[String]) -> Result<Self, TlsError> {
        let certified = rcgen::generate_simple_self_signed(names.to_vec())?;
        Ok(Identity {
            chain: vec![certified.cert.der().clone()],
            key: PrivateKeyDer::Pkcs8(certified.signing_key.serialize_der().into()),
        })
    }

    /// A fresh self-signed certificate for `names`, as PEM text: (certificate, private key).
    /// Write both to files and give the certificate to clients as their CA.
    pub fn self_signed_pem(names: &[String]) -> Result<(String, String), TlsError> {
        let certified = rcgen::generate_simple_self_signed(names.to_vec())?;
        Ok((certified.cert.pem(), certified.signing_key.serialize_pem()))
    }

    /// The server-side crypto configuration, accepting any client (as HTTPS does).
    pub fn server_crypto(&self) -> Result<Arc<QuicServerConfig>, TlsError> {
        self.server_crypto_for(&ClientAuth::Anonymous)
    }

    /// The server-side crypto configuration, accepting the clients `clients` allows.
    pub fn server_crypto_for(
        &self,
        clients: &ClientAuth,
    ) -> Result<Arc<QuicServerConfig>, TlsError> {
        let builder = rustls::ServerConfig::builder_with_provider(provider())
            .with_protocol_versions(&[&rustls::version::TLS13])?;
        let builder = match clients {
            ClientAuth::Anonymous => builder.with_no_client_auth(),
            ClientAuth::Required(roots) => {
                let verifier = WebPkiClientVerifier::builder_with_provider(
                    Arc::new(root_store(roots)?),
                    provider(),
                )
                .build()
                .map_err(|e| rustls::Error::General(e.to_string()))?;
                builder.with_client_cert_verifier(verifier)
            }
        };
        let mut tls = builder.with_single_cert(self.chain.clone(), self.key.clone_key())?;
        tls.alpn_protocols = vec![ALPN.to_vec()];
        tls.max_early_data_size = 0;
        Ok(Arc::new(
            QuicServerConfig::try_from(tls).map_err(|e| rustls::Error::General(e.to_string()))?,
        ))
    }
}

/// A certificate and its private key as PEM text, ready to be written to files.
pub struct PemPair {
    /// The certificate.
    pub cert: String,
    /// Its private key: keep it secret (write it readable by its owner only).
    pub key: String,
}

/// What a certificate issued by a [`lab CA`](PemPair::new_lab_ca) is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CertRole {
    /// A server's certificate, for the names clients connect to.
    Server,
    /// A client's certificate, for servers that require mutual TLS.
    Client,
}

impl PemPair {
    /// A new certificate authority for a lab, named `name`: give its certificate to clients
    /// (`--ca`) and servers (`--client-ca`), and issue certificates from it with [`PemPair::issue`].
    pub fn new_lab_ca(name: &str) -> Result<Self, TlsError> {
        use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair, KeyUsagePurpose};
        let key = KeyPair::generate()?;
        let mut params = CertificateParams::new(Vec::<String>::new())?;
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.distinguished_name.push(DnType::CommonName, name);
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let cert = params.self_signed(&key)?;
        Ok(PemPair { cert: cert.pem(), key: key.serialize_pem() })
    }

    /// A certificate for `names` (DNS names or IP addresses; for a client, names of its
    /// choosing) issued by this CA.
    pub fn issue(&self, names: &[String], role: CertRole) -> Result<Self, TlsError> {
        use rcgen::{CertificateParams, DnType, ExtendedKeyUsagePurpose, Issuer, KeyPair};
        let issuer = Issuer::from_ca_cert_pem(&self.cert, KeyPair::from_pem(&self.key)?)?;
        let key = KeyPair::generate()?;
        let mut params = CertificateParams::new(names.to_vec())?;
        if let Some(first) = names.first() {
            params.distinguished_name.push(DnType::CommonName, first.as_str());
        }
        params.extended_key_usages = vec![match role {
            CertRole::Server => ExtendedKeyUsagePurpose::ServerAuth,
            CertRole::Client => ExtendedKeyUsagePurpose::ClientAuth,
        }];
        let cert = params.signed_by(&key, &issuer)?;
        Ok(PemPair { cert: cert.pem(), key: key.serialize_pem() })
    }
}

/// The name a certificate gives its holder: the subject's common name, or else its first DNS
/// name. For a server, the name of a client that proved itself with mutual TLS. `None` when the
/// certificate names no one (or does not parse).
pub fn certificate_name(cert: &CertificateDer<'_>) -> Option<String> {
    use x509_parser::prelude::{FromDer, GeneralName, X509Certificate};
    let (_, cert) = X509Certificate::from_der(cert).ok()?;
    let common_name = cert.subject().iter_common_name().find_map(|cn| cn.as_str().ok());
    let dns_name = || {
        let names = cert.subject_alternative_name().ok()??;
        names.value.general_names.iter().find_map(|name| match name {
            GeneralName::DNSName(dns) => Some(*dns),
            _ => None,
        })
    };
    common_name.or_else(dns_name).map(str::to_string)
}

/// Which clients a server accepts.
pub enum ClientAuth {
    /// Only clients presenting a certificate chain to one of these CAs (mutual TLS); the
    /// handshake of any other client fails.
    Required(Vec<CertificateDer<'static>>),
    /// Any client, unauthenticated.
    Anonymous,
}

impl ClientAuth {
    /// Require client certificates issued by the CA certificate(s) in a PEM file.
    pub fn from_ca_file(path: &Path) -> Result<Self, TlsError> {
        Ok(ClientAuth::Required(read_ca_file(path)?))
    }
}

/// The certificates of a CA file; an empty file is an error.
fn read_ca_file(path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let roots = CertificateDer::pem_file_iter(path)
        .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
        .map_err(|e| TlsError::File {
            what: "CA certificate",
            path: path.display().to_string(),
            reason: e.to_string(),
        })?;
    if roots.is_empty() {
        return Err(TlsError::File {
            what: "CA certificate",
            path: path.display().to_string(),
            reason: "no PEM certificate in it".into(),
        });
    }
    Ok(roots)
}

fn root_store(roots: &[CertificateDer<'static>]) -> Result<RootCertStore, TlsError> {
    let mut store = RootCertStore::empty();
    for root in roots {
        store.add(root.clone())?;
    }
    Ok(store)
}

/// How a client decides whether to trust a server.
///
/// In a lab, a server's self-signed certificate can be its clients' CA: the handshake still
/// verifies the certificate and the server's name, unlike [`Trust::InsecureAnyCertificate`].
///
/// ```
/// use mpquic::{Identity, Trust};
///
/// let identity = Identity::self_signed(&["objects.lab".into()])?;
/// // For the server: `Server::bind(&listen, &identity, options)`. For its clients:
/// let trust = Trust::Roots(identity.chain.clone());
/// # trust.client_crypto()?;
/// # Ok::<(), mpquic::TlsError>(())
/// ```
pub enum Trust {
    /// Verify the server's certificate against these roots.
    Roots(Vec<CertificateDer<'static>>),
    /// Accept any certificate. Labs only: anyone on the path can impersonate the server.
    InsecureAnyCertificate,
}

impl Trust {
    /// Trust the CA certificates in a PEM file.
    pub fn from_ca_file(path: &Path) -> Result<Self, TlsError> {
        Ok(Trust::Roots(read_ca_file(path)?))
    }

    /// Trust the operating system's root certificates.
    pub fn system() -> Result<Self, TlsError> {
        let loaded = rustls_native_certs::load_native_certs();
        if loaded.certs.is_empty() {
            return Err(TlsError::File {
                what: "system CA certificates",
                path: "the system trust store".into(),
                reason: loaded.errors.first().map_or("it is empty".into(), |e| e.to_string()),
            });
        }
        Ok(Trust::Roots(loaded.certs))
    }

    /// The client-side crypto configuration, without a client certificate.
    pub fn client_crypto(&self) -> Result<Arc<QuicClientConfig>, TlsError> {
        self.client_crypto_as(None)
    }

    /// The client-side crypto configuration, presenting `identity` to servers that ask for a
    /// client certificate.
    pub fn client_crypto_as(
        &self,
        identity: Option<&Identity>,
    ) -> Result<Arc<QuicClientConfig>, TlsError> {
        let builder = rustls::ClientConfig::builder_with_provider(provider())
            .with_protocol_versions(&[&rustls::version::TLS13])?;
        let builder = match self {
            Trust::Roots(roots) => builder.with_root_certificates(root_store(roots)?),
            Trust::InsecureAnyCertificate => builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(AcceptAnyCertificate(provider()))),
        };
        let mut tls = match identity {
            Some(id) => builder.with_client_auth_cert(id.chain.clone(), id.key.clone_key())?,
            None => builder.with_no_client_auth(),
        };
        tls.alpn_protocols = vec![ALPN.to_vec()];
        Ok(Arc::new(
            QuicClientConfig::try_from(tls).map_err(|e| rustls::Error::General(e.to_string()))?,
        ))
    }
}

fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// Skips certificate validation but still checks that the server holds the certificate's key.
#[derive(Debug)]
struct AcceptAnyCertificate(Arc<CryptoProvider>);

impl ServerCertVerifier for AcceptAnyCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        _message: &[u8],
        _cert: &CertificateDer<'_>,
        _dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        Err(rustls::Error::PeerIncompatible(rustls::PeerIncompatible::Tls12NotOffered))
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn der(pem: &str) -> CertificateDer<'static> {
        CertificateDer::from_pem_slice(pem.as_bytes()).unwrap()
    }

    #[test]
    fn a_certificate_is_named_by_its_common_name_else_its_first_dns_name() {
        let ca = PemPair::new_lab_ca("lab CA").unwrap();
        let client = ca.issue(&["alice.lab".into(), "other".into()], CertRole::Client).unwrap();
        assert_eq!(certificate_name(&der(&client.cert)).as_deref(), Some("alice.lab"));
        assert_eq!(certificate_name(&der(&ca.cert)).as_deref(), Some("lab CA"));
        let mut no_common_name = rcgen::CertificateParams::new(vec!["host.lab".into()]).unwrap();
        no_common_name.distinguished_name = rcgen::DistinguishedName::new();
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = no_common_name.self_signed(&key).unwrap();
        assert_eq!(certificate_name(cert.der()).as_deref(), Some("host.lab"));
        assert_eq!(certificate_name(&CertificateDer::from(vec![0x30, 0x03, 1, 2, 3])), None);
    }
}
