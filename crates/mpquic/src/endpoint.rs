//! Client and server endpoints that make multipath connections.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use noq::crypto::rustls::{QuicClientConfig, QuicServerConfig};
use noq::{ClientConfig, ServerConfig};

use crate::connection::{MultipathConnection, PathOpenError, PathSpec};
use crate::options::Options;
use crate::tls::{ClientAuth, Identity, TlsError, Trust};

/// Why an endpoint or a connection could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// TLS configuration.
    #[error(transparent)]
    Tls(#[from] TlsError),
    /// The UDP socket could not be bound.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// The OS error.
        source: std::io::Error,
    },
    /// Bad endpoint arguments.
    #[error("{0}")]
    Usage(String),
    /// The connection could not be started (bad address, endpoint closing).
    #[error("cannot connect to {addr}: {source}")]
    Connect {
        /// The server address.
        addr: SocketAddr,
        /// Why.
        source: noq::ConnectError,
    },
    /// The handshake or the connection failed.
    #[error("connection to {addr} failed: {source}")]
    Connection {
        /// The peer address.
        addr: SocketAddr,
        /// Why.
        source: noq::ConnectionError,
    },
    /// The peer did not answer in time.
    #[error(
        "no answer from {addr} within {timeout:?} (is a server running there, and reachable?)"
    )]
    Timeout {
        /// The peer address.
        addr: SocketAddr,
        /// How long we waited.
        timeout: Duration,
    },
}

/// Socket buffers asked for. One UDP socket carries every path of every connection of an
/// endpoint, and the kernel's default receive buffer (~208 KiB) overflows under incast long
/// before a switch queue does.
const SOCKET_BUFFER: usize = 8 << 20;

/// Bind a UDP socket with large buffers: beyond `net.core.[rw]mem_max` where the process may
/// (`SO_RCVBUFFORCE` needs CAP_NET_ADMIN, as in the testbeds), up to it otherwise.
fn bind_socket(addr: SocketAddr) -> std::io::Result<std::net::UdpSocket> {
    use socket2::{Domain, Protocol, Socket, Type};
    let socket = Socket::new(Domain::for_address(addr), Type::DGRAM, Some(Protocol::UDP))?;
    if addr.is_ipv6() {
        let _ = socket.set_only_v6(false);
    }
    socket.bind(&addr.into())?;
    for (force, fallback) in
        [(libc::SO_RCVBUFFORCE, libc::SO_RCVBUF), (libc::SO_SNDBUFFORCE, libc::SO_SNDBUF)]
    {
        if set_buffer(&socket, force).is_err() {
            if let Err(e) = set_buffer(&socket, fallback) {
                tracing::debug!(%e, "cannot enlarge a socket buffer");
            }
        }
    }
    tracing::debug!(recv = ?socket.recv_buffer_size(), send = ?socket.send_buffer_size(), %addr, "socket bound");
    Ok(socket.into())
}

fn set_buffer(socket: &socket2::Socket, option: libc::c_int) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    let size = SOCKET_BUFFER as libc::c_int;
    // SAFETY: a valid socket descriptor, a valid option, and a pointer to a c_int of the given length.
    let rc = unsafe {
        libc::setsockopt(
            socket.as_raw_fd(),
            libc::SOL_SOCKET,
            option,
            (&size as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// An endpoint on a socket from [`bind_socket`].
fn endpoint(addr: SocketAddr, server: Option<ServerConfig>) -> Result<noq::Endpoint, Error> {
    let bind_error = |source| Error::Bind { addr, source };
    let socket = bind_socket(addr).map_err(bind_error)?;
    noq::Endpoint::new(noq::EndpointConfig::default(), server, socket, Arc::new(noq::TokioRuntime))
        .map_err(bind_error)
}

fn unspecified(like: IpAddr) -> IpAddr {
    match like {
        IpAddr::V4(_) => IpAddr::V4(Ipv4Addr::UNSPECIFIED),
        IpAddr::V6(_) => IpAddr::V6(Ipv6Addr::UNSPECIFIED),
    }
}

/// Makes multipath connections to servers.
///
/// One client (one UDP socket) holds any number of connections; each connection opens its
/// paths from the [`PathSpec`]s it is given and runs its own coupled controller.
///
/// ```no_run
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// use std::net::{IpAddr, SocketAddr};
/// use std::time::Duration;
/// use mpquic::{Client, Options, PathSpec, Trust};
///
/// // Two paths: one from each of the client's interfaces to the server.
/// let locals: [IpAddr; 2] = ["10.0.1.1".parse()?, "10.0.2.1".parse()?];
/// let server: SocketAddr = "10.0.1.2:4433".parse()?;
/// let paths = PathSpec::all_pairs(&locals, &[server]);
///
/// let client = Client::new(&Trust::from_ca_file("ca.pem".as_ref())?, server.ip())?;
/// let options = Options { congestion: "amp".parse()?, ..Options::default() };
/// let (conn, failed) =
///     client.connect("files.lab", &paths, &options, Duration::from_secs(5)).await?;
/// for failure in &failed {
///     eprintln!("going on without a path: {failure}");
/// }
/// // Streams are noq's (quinn's); the stack spreads their packets over the paths.
/// let (mut send, mut recv) = conn.connection().open_bi().await?;
/// send.write_all(b"object-1").await?;
/// send.finish()?;
/// let object = recv.read_to_end(64 << 20).await?;
/// println!("{} bytes; per path: {:?}", object.len(), conn.report().paths);
/// conn.connection().close(0u32.into(), b"done");
/// client.wait_idle().await; // lets the close reach the server
/// # Ok(()) }
/// ```
pub struct Client {
    endpoint: noq::Endpoint,
    crypto: Arc<QuicClientConfig>,
    connections: AtomicU64,
}

impl Client {
    /// A client trusting servers per `trust`, sending from any local address of the family of
    /// `family` (paths choose their source address; the socket is bound to the unspecified one).
    pub fn new(trust: &Trust, family: IpAddr) -> Result<Self, Error> {
        Self::with_identity(trust, None, family)
    }

    /// As [`Client::new`], presenting `identity` to servers that require client certificates.
    pub fn with_identity(
        trust: &Trust,
        identity: Option<&Identity>,
        family: IpAddr,
    ) -> Result<Self, Error> {
        let crypto = trust.client_crypto_as(identity)?;
        let bind = SocketAddr::new(unspecified(family), 0);
        let endpoint = endpoint(bind, None)?;
        Ok(Client { endpoint, crypto, connections: AtomicU64::new(0) })
    }

    /// Connect over the first path, then open the others. `server_name` must match the
    /// server's certificate. Paths that fail to open are returned beside the connection, which
    /// goes on without them.
    pub async fn connect(
        &self,
        server_name: &str,
        paths: &[PathSpec],
        options: &Options,
        timeout: Duration,
    ) -> Result<(MultipathConnection, Vec<PathOpenError>), Error> {
        let first = *paths.first().ok_or_else(|| Error::Usage("no path to connect over".into()))?;
        let n = self.connections.fetch_add(1, Ordering::Relaxed);
        let transport = options.transport(&format!("client-{n}"));
        let mut config = ClientConfig::new(self.crypto.clone());
        config.transport_config(transport.config.clone());
        let addr = first.remote;
        let connecting = self
            .endpoint
            .connect_with(config, addr, server_name)
            .map_err(|source| Error::Connect { addr, source })?;
        let conn = match tokio::time::timeout(timeout, connecting).await {
            Ok(Ok(conn)) => conn,
            Ok(Err(source)) => return Err(Error::Connection { addr, source }),
            Err(_) => return Err(Error::Timeout { addr, timeout }),
        };
        let conn = MultipathConnection::new(conn, transport, options.congestion.name());
        let failures = conn.open_paths(&paths[1..]).await;
        Ok((conn, failures))
    }

    /// Wait until every connection has closed cleanly.
    pub async fn wait_idle(&self) {
        self.endpoint.wait_idle().await;
    }
}

/// Accepts multipath connections on one or more addresses.
///
/// Clients open a path to each address they reach the server at; all addresses share one
/// socket, so one port.
///
/// ```no_run
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// use std::net::SocketAddr;
/// use std::path::Path;
/// use mpquic::{Identity, Options, Server};
///
/// let identity = Identity::from_pem_files(Path::new("cert.pem"), Path::new("key.pem"))?;
/// let listen: [SocketAddr; 2] = ["10.0.1.2:4433".parse()?, "10.0.2.2:4433".parse()?];
/// let server = Server::bind(&listen, &identity, Options::default())?;
/// while let Some(accepting) = server.accept().await {
///     // Each handshake and connection in its own task: a slow client holds up no one.
///     tokio::spawn(async move {
///         let conn = accepting.established().await?;
///         while let Ok((mut send, mut recv)) = conn.connection().accept_bi().await {
///             let request = recv.read_to_end(1024).await?;
///             send.write_all(&request).await?; // an echo service
///             send.finish()?;
///         }
///         // The client has closed the connection: what each path carried.
///         println!("{:?}", conn.report());
///         Ok::<_, Box<dyn std::error::Error + Send + Sync>>(())
///     });
/// }
/// # Ok(()) }
/// ```
pub struct Server {
    endpoint: noq::Endpoint,
    crypto: Arc<QuicServerConfig>,
    options: Options,
    /// The addresses to serve; connections arriving at other local addresses are refused.
    listen: Vec<SocketAddr>,
    connections: AtomicU64,
}

impl Server {
    /// Listen on `listen` (one UDP socket serves them all, so they share one port), accepting
    /// any client.
    pub fn bind(
        listen: &[SocketAddr],
        identity: &Identity,
        options: Options,
    ) -> Result<Self, Error> {
        Self::bind_for(listen, identity, &ClientAuth::Anonymous, options)
    }

    /// As [`Server::bind`], accepting only the clients `clients` allows.
    pub fn bind_for(
        listen: &[SocketAddr],
        identity: &Identity,
        clients: &ClientAuth,
        options: Options,
    ) -> Result<Self, Error> {
        let first =
            *listen.first().ok_or_else(|| Error::Usage("no address to listen on".into()))?;
        if let Some(other) = listen.iter().find(|a| a.port() != first.port()) {
            return Err(Error::Usage(format!(
                "all listen addresses must share one port (one socket serves every path): {first} and {other} differ"
            )));
        }
        if let Some(other) = listen.iter().find(|a| a.is_ipv4() != first.is_ipv4()) {
            return Err(Error::Usage(format!(
                "listen addresses must be of one IP family: {first} and {other} differ"
            )));
        }
        let crypto = identity.server_crypto_for(clients)?;
        let bind = if listen.len() == 1 {
            first
        } else {
            SocketAddr::new(unspecified(first.ip()), first.port())
        };
        let mut config = ServerConfig::with_crypto(crypto.clone());
        config.transport_config(options.transport("server-default").config);
        let endpoint = endpoint(bind, Some(config))?;
        Ok(Server {
            endpoint,
            crypto,
            options,
            listen: listen.to_vec(),
            connections: AtomicU64::new(0),
        })
    }

    /// The bound socket address (its port, when 0 was asked for).
    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.endpoint.local_addr()
    }

    /// The next incoming connection; `None` once the endpoint is closed. Its handshake runs
    /// when [`Accepting::established`] is awaited, so each can be awaited in its own task.
    pub async fn accept(&self) -> Option<Accepting> {
        loop {
            let incoming = self.endpoint.accept().await?;
            let remote = incoming.remote_address();
            if let Some(local) = incoming.local_ip() {
                if self.listen.len() > 1 && !self.listen.iter().any(|a| a.ip() == local) {
                    tracing::debug!(%remote, %local, "refusing a connection to an address not served");
                    incoming.refuse();
                    continue;
                }
            }
            let n = self.connections.fetch_add(1, Ordering::Relaxed);
            let transport = self.options.transport(&format!("server-{n}"));
            let mut config = ServerConfig::with_crypto(self.crypto.clone());
            config.transport_config(transport.config.clone());
            return Some(Accepting {
                incoming,
                config: Arc::new(config),
                transport,
                controller_name: self.options.congestion.name(),
                remote,
                timeout: self.options.idle_timeout,
            });
        }
    }

    /// Stop accepting and close every connection.
    pub fn close(&self) {
        self.endpoint.close(0u32.into(), b"server shutting down");
    }

    /// Wait until every connection has closed.
    pub async fn wait_idle(&self) {
        self.endpoint.wait_idle().await;
    }
}

/// An incoming connection: its handshake starts when [`Accepting::established`] is awaited,
/// or it is turned away with [`Accepting::refuse`].
pub struct Accepting {
    incoming: noq::Incoming,
    config: Arc<ServerConfig>,
    transport: crate::options::Transport,
    controller_name: &'static str,
    remote: SocketAddr,
    timeout: Duration,
}

impl Accepting {
    /// The client's address.
    pub fn remote(&self) -> SocketAddr {
        self.remote
    }

    /// Turn the client away (it sees "connection refused"), e.g. when the server is full.
    pub fn refuse(self) {
        self.incoming.refuse();
    }

    /// Run the handshake.
    pub async fn established(self) -> Result<MultipathConnection, Error> {
        let (addr, timeout) = (self.remote, self.timeout);
        let connecting = self
            .incoming
            .accept_with(self.config)
            .map_err(|source| Error::Connection { addr, source })?;
        let conn = match tokio::time::timeout(timeout, connecting).await {
            Ok(Ok(conn)) => conn,
            Ok(Err(source)) => return Err(Error::Connection { addr, source }),
            Err(_) => return Err(Error::Timeout { addr, timeout }),
        };
        Ok(MultipathConnection::new(conn, self.transport, self.controller_name))
    }
}
