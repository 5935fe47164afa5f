//! Command-line arguments, and their translation into library options.

use std::net::{IpAddr, SocketAddr, ToSocketAddrs, UdpSocket};
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use clap::{Args, Parser, Subcommand};
use mpquic::{ClientAuth, Congestion, EcnPrecision, Identity, Options, PathSpec, Scheduler, Trust};

/// Send and receive files over multipath QUIC with coupled, ECN-driven congestion control.
#[derive(Parser, Debug)]
#[command(name = "mpquic", version, about, max_term_width = 100)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
    /// Log filter (tracing's EnvFilter syntax, e.g. `info` or `mpquic=debug`); RUST_LOG works too.
    #[arg(long, global = true, default_value = "warn")]
    pub log: String,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Receive files (and serve them for download) on one or more addresses.
    Serve(ServeArgs),
    /// Send files and directories (or generated data) to a server.
    Send(SendArgs),
    /// Download files (and with -r directories) from a server.
    Get(GetArgs),
    /// List the files a server holds (names and sizes), where it serves downloads.
    Ls(LsArgs),
    /// Partition/aggregate jobs: ask every --server (a worker) for the same file at once; a job
    /// ends with the last answer. Prints each job's completion time and the percentiles.
    Aggregate(AggregateArgs),
    /// Server and client in one process over loopback: a multipath transfer and its statistics.
    Demo(DemoArgs),
    /// Write certificates for a lab: a self-signed server certificate, a lab CA (--new-ca), or a
    /// server or client certificate issued by that CA (--ca-dir, --client). Keys are written 0600.
    Cert(CertArgs),
    /// Plot qlog traces (one or more runs side by side) into an HTML report with SVG plots.
    Report(crate::report::ReportArgs),
    /// Print a shell completion script, e.g. `mpquic completions bash > ~/.local/share/bash-completion/completions/mpquic`.
    Completions(CompletionsArgs),
}

/// The command line's definition, its `--help` ending with the exit codes.
pub fn command() -> clap::Command {
    use clap::CommandFactory;
    Cli::command().after_help(crate::exit::help())
}

#[derive(Args, Debug)]
pub struct CompletionsArgs {
    /// The shell to complete for.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

/// Write the completion script of `shell` for the whole command line to `out`.
pub fn write_completions(shell: clap_complete::Shell, out: &mut dyn std::io::Write) {
    clap_complete::generate(shell, &mut command(), "mpquic", out);
}

/// How a command moves its files: how many at once, how fast in all.
#[derive(Args, Debug, Clone, Copy)]
pub struct BatchArgs {
    /// Move up to N files at once, each on its own stream of the one connection.
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u32).range(1..=64), value_name = "N")]
    pub parallel: u32,
    /// Cap the file data sent or received, over all files of the command, at RATE bytes per
    /// second (like rsync's, not iperf3's bits: 50M is 50 MiB/s, about 420 Mbit/s; K, M, G
    /// are powers of 1024). The cap applies to what the tool reads and writes, not to QUIC's
    /// packets, so headers and retransmissions come on top. Not with a timed send (--time).
    #[arg(long, value_name = "RATE", value_parser = parse_rate)]
    pub bwlimit: Option<u64>,
    /// Start every file from its first byte: do not resume from the partial copy an
    /// interrupted transfer left, and keep none if this one is cut off (the first protocol,
    /// which servers from before resuming also speak). By default a file cut off is kept by
    /// its receiver, and the next send or get of the same name resumes it: the receiver offers
    /// the chunks it holds, the sender checks their hashes against its data and sends the rest.
    #[arg(long)]
    pub no_resume: bool,
}

impl BatchArgs {
    /// The cap, if one is asked for.
    pub fn limiter(&self) -> Option<crate::ratelimit::ByteRate> {
        crate::ratelimit::ByteRate::bwlimit(self.bwlimit)
    }
}

/// A receive window: a size (`parse_size`), more than 0.
fn parse_window(s: &str) -> Result<u64, String> {
    match parse_size(s)? {
        0 => Err("a window of 0 bytes would never let the peer send: give at least 1".into()),
        window => Ok(window),
    }
}

/// A rate in bytes per second: a size (`parse_size`) per second, more than 0.
fn parse_rate(s: &str) -> Result<u64, String> {
    match parse_size(s)? {
        0 => Err("a rate of 0 would never finish: give at least 1 (bytes per second)".into()),
        rate => Ok(rate),
    }
}

/// The help of `--cc`: every name the controller parser takes, from the library's one list
/// (`mpquic_cc::names`: the built-ins, the registered ones, the embedding program's included, and
/// the stack's own).
fn cc_help() -> String {
    let names = mpquic::mpquic_cc::names().join(", ");
    format!(
        "Congestion controller: {names}; with its parameters in the same string \
         (`amp:beta=4,tau=8`) or as --cc-param."
    )
}

/// The help of `--scheduler`: the built-ins' names (`Scheduler::ALL`) and the registered ones.
fn scheduler_help() -> String {
    let builtin = Scheduler::ALL.iter().map(Scheduler::name);
    let names: Vec<&str> = builtin.chain(mpquic::registered_schedulers()).collect();
    format!(
        "Packet scheduler: {} [default: {}; for `demo`, round-robin, since loopback never fills \
         path 0]. `{}` is the stack's order (the lowest path id with room first); `{}` is earliest \
         completion first, for paths of different RTTs.",
        names.join(", "),
        Scheduler::default().name(),
        Scheduler::Stack.name(),
        Scheduler::Ecf.name(),
    )
}

/// How the connection behaves: controller, scheduler, ECN precision, qlog.
#[derive(Args, Debug, Clone)]
pub struct TransportArgs {
    /// Congestion controller (the help lists every name: [`cc_help`]).
    #[arg(long, default_value = Congestion::default().name(), help = cc_help())]
    pub cc: String,
    /// Controller parameter as key=value (repeatable), e.g. --cc-param beta=4.
    #[arg(long = "cc-param", value_name = "KEY=VALUE")]
    pub cc_params: Vec<String>,
    /// Packet scheduler (the help lists every name: [`scheduler_help`]).
    #[arg(long, help = scheduler_help())]
    pub scheduler: Option<Scheduler>,
    /// ACK shaping for ECN: auto (GSO batches, the stack's ACK frequency; the controller gets the
    /// exact CE counts of every ACK frame either way) or per-packet (GSO off, an ACK per packet:
    /// a measurement option; `exact` is its old name).
    #[arg(long, default_value = "auto")]
    pub ecn: EcnPrecision,
    /// Write a qlog trace (JSON-SEQ, with mpquic controller events) per connection into DIR.
    #[arg(long, value_name = "DIR")]
    pub qlog: Option<PathBuf>,
    /// Close a connection (or path) silent for this many seconds.
    #[arg(long, default_value_t = 10.0, value_name = "SECS")]
    pub idle_timeout: f64,
    /// Detect failed paths (unanswered for 3 of their PTOs and at least 200 ms while another
    /// path answers), abandon them and re-open them when they answer. On by default; the flag
    /// is kept for scripts that ask for it.
    #[arg(long, conflicts_with = "no_failover")]
    pub failover: bool,
    /// Do not detect failed paths: a path that stops answering stays open until its idle
    /// timeout.
    #[arg(long)]
    pub no_failover: bool,
    /// Ask the peer to acknowledge within this many milliseconds (1-25, QUIC's ACK frequency
    /// extension; default: noq's 25). 1 is a data-center profile: at microsecond RTTs the
    /// default puts a 26 ms floor under loss recovery.
    #[arg(long, value_name = "MS")]
    pub max_ack_delay: Option<f64>,
    /// The connection's and each stream's receive window and the send buffer, in bytes (K, M,
    /// G are powers of 1024) [default: noq's 1.25 MB per stream]. What a sender may have
    /// unacknowledged on a stream is the peer's window, so the receiver's setting counts: a
    /// path whose bandwidth-delay product nears it is window-limited, and the `ecf`
    /// scheduler sees at most this much data waiting. Set it on both ends.
    #[arg(long, value_name = "SIZE", value_parser = parse_window)]
    pub receive_window: Option<u64>,
}

impl TransportArgs {
    pub fn options(&self) -> Result<Options> {
        // One string (`amp:beta=4`) or a name and --cc-params: the library's two parsers.
        let congestion = if self.cc_params.is_empty() {
            self.cc.parse::<Congestion>()?
        } else {
            Congestion::parse(&self.cc, self.cc_params.iter().map(String::as_str))?
        };
        if !(self.idle_timeout.is_finite() && self.idle_timeout > 0.0) {
            bail!("--idle-timeout must be a positive number of seconds");
        }
        let max_ack_delay = match self.max_ack_delay {
            Some(ms) if !(ms.is_finite() && ms > 0.0) => {
                bail!("--max-ack-delay must be a positive number of milliseconds")
            }
            ms => ms.map(|ms| Duration::from_secs_f64(ms / 1000.0)),
        };
        let options = Options {
            congestion,
            scheduler: self.scheduler.clone().unwrap_or_default(),
            ecn: self.ecn,
            qlog_dir: self.qlog.clone(),
            idle_timeout: Duration::from_secs_f64(self.idle_timeout),
            max_ack_delay,
            receive_window: self.receive_window,
            path_failure: (!self.no_failover).then(mpquic::PathFailure::default),
            ..Options::default()
        };
        options.validate()?;
        Ok(options)
    }
}

/// Which server, over which paths, trusting what.
#[derive(Args, Debug, Clone)]
pub struct ConnectArgs {
    /// Server address, HOST:PORT or IP:PORT (repeatable: one path per server address, or per
    /// --local x --server pair). A host name is resolved once, to the first address the system's
    /// resolver gives, and is the name the server's certificate must carry (see --server-name).
    #[arg(long = "server", short = 's', value_name = "HOST:PORT", required = true, value_parser = parse_server)]
    pub servers: Vec<ServerAddr>,
    /// Local address to send from (repeatable); paths go from every local to every server address.
    #[arg(long = "local", short = 'l', value_name = "IP")]
    pub locals: Vec<IpAddr>,
    /// An explicit path LOCAL_IP=SERVER:PORT (repeatable; SERVER an IP or a host name); replaces
    /// the --local x --server pairs.
    #[arg(long = "path", value_name = "LOCAL=SERVER", value_parser = parse_path)]
    pub paths: Vec<PathSpec>,
    /// A backup path LOCAL_IP=SERVER:PORT (repeatable), opened after the others: it carries
    /// data only while no other path can (RFC 10069 path status), and takes over when they
    /// fail.
    #[arg(long = "backup-path", value_name = "LOCAL=SERVER", value_parser = parse_backup_path)]
    pub backup_paths: Vec<PathSpec>,
    /// Paths per address pair: N > 1 opens several paths with the same addresses (link-sharing
    /// subflows, as in MPTCP-D's experiments).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=16), value_name = "N")]
    pub paths_per_pair: u32,
    /// Open the paths at these times, in seconds after the connection is established
    /// (repeatable, or comma-separated): one per path, in the order the paths are listed (each
    /// --path, or each --local x --server pair, repeated --paths-per-pair times, then each
    /// --backup-path). The first is 0
    /// (path 0 carries the handshake); the others must not decrease, e.g. `--path-delay 0,5,15`.
    /// A path opened during a transfer carries data as soon as it is validated. Default: every
    /// path opens with the connection. With --repeat the times start again on each connection (once with --same-connection).
    #[arg(long = "path-delay", value_name = "SECS", value_delimiter = ',', value_parser = parse_delay)]
    pub path_delays: Vec<Duration>,
    /// Name the server's certificate must carry (default: the first --server's host name, or its
    /// IP if it was given as one).
    #[arg(long)]
    pub server_name: Option<String>,
    /// Trust the CA certificate(s) in this PEM file (default: the system's roots).
    #[arg(long, value_name = "FILE", conflicts_with = "insecure")]
    pub ca: Option<PathBuf>,
    /// INSECURE: accept any server certificate. For labs only.
    #[arg(long)]
    pub insecure: bool,
    /// Present this client certificate (PEM) to servers that require one (serve --client-ca).
    #[arg(long, value_name = "FILE", requires = "client_key")]
    pub client_cert: Option<PathBuf>,
    /// The client certificate's private key (PEM).
    #[arg(long, value_name = "FILE", requires = "client_cert")]
    pub client_key: Option<PathBuf>,
    /// Give up connecting after this many seconds.
    #[arg(long, default_value_t = 5.0, value_name = "SECS")]
    pub timeout: f64,
    /// Print the result as one JSON object on stdout (no progress bar, no table).
    #[arg(long)]
    pub json: bool,
    /// Every SECS seconds, print each path's rate, RTT, CE marks, losses, window and state, and
    /// path events as they happen (JSON lines with --json).
    #[arg(long, value_name = "SECS", value_parser = parse_interval)]
    pub interval: Option<Duration>,
    #[command(flatten)]
    pub transport: TransportArgs,
}

/// A number of seconds that `allowed` accepts, or an error naming `what` and `rule`.
fn parse_seconds(
    s: &str,
    what: &str,
    allowed: fn(f64) -> bool,
    rule: &str,
) -> Result<Duration, String> {
    match s.trim().parse::<f64>() {
        Ok(secs) if secs.is_finite() && allowed(secs) => Ok(Duration::from_secs_f64(secs)),
        _ => Err(format!("bad {what} {s:?}: {rule}")),
    }
}

/// A reporting interval: at least 0.01 s.
pub fn parse_interval(s: &str) -> Result<Duration, String> {
    parse_seconds(s, "interval", |secs| secs >= 0.01, "a number of seconds, at least 0.01")
}

/// A path's delay after the connection (`--path-delay`): 0 or more seconds.
fn parse_delay(s: &str) -> Result<Duration, String> {
    parse_seconds(s, "path delay", |secs| secs >= 0.0, "a number of seconds, 0 or more")
}

/// How long a timed send runs (`send --time`): a positive number of seconds.
fn parse_time(s: &str) -> Result<Duration, String> {
    parse_seconds(s, "time", |secs| secs > 0.0, "a positive number of seconds")
}

fn parse_path(s: &str) -> Result<PathSpec, String> {
    let (local, remote) = s.split_once('=').ok_or("expected LOCAL_IP=SERVER:PORT")?;
    let local: IpAddr = local.parse().map_err(|e| format!("bad local address {local:?}: {e}"))?;
    Ok(PathSpec::new(Some(local), parse_server(remote)?.addr))
}

/// A server as the user named it: an address, and the host name it was resolved from, if any.
#[derive(Debug, Clone)]
pub struct ServerAddr {
    pub addr: SocketAddr,
    pub host: Option<String>,
}

impl ServerAddr {
    /// The name to check the server's certificate against: the host name, else the IP.
    pub fn tls_name(&self) -> String {
        self.host.clone().unwrap_or_else(|| self.addr.ip().to_string())
    }
}

impl std::fmt::Display for ServerAddr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.host {
            Some(host) => write!(f, "{host}:{} ({})", self.addr.port(), self.addr.ip()),
            None => write!(f, "{}", self.addr),
        }
    }
}

/// `IP:PORT` (`[IPv6]:PORT`) or `HOST:PORT`, the host resolved now by the system's resolver
/// (its first address, as `getaddrinfo` orders them).
fn parse_server(s: &str) -> Result<ServerAddr, String> {
    if let Ok(addr) = s.parse() {
        return Ok(ServerAddr { addr, host: None });
    }
    let (host, port) = s
        .rsplit_once(':')
        .ok_or_else(|| format!("expected HOST:PORT or IP:PORT (e.g. files.lab:4433), not {s:?}"))?;
    if host.contains(':') {
        return Err(format!("an IPv6 address takes brackets, e.g. [::1]:4433, not {s:?}"));
    }
    let port: u16 = port.parse().map_err(|_| format!("bad port {port:?} in {s:?}"))?;
    let addr = (host, port)
        .to_socket_addrs()
        .map_err(|e| format!("cannot resolve {host:?}: {e}"))?
        .next()
        .ok_or_else(|| format!("{host:?} resolves to no address"))?;
    Ok(ServerAddr { addr, host: Some(host.to_owned()) })
}

fn parse_backup_path(s: &str) -> Result<PathSpec, String> {
    parse_path(s).map(PathSpec::as_backup)
}

impl ConnectArgs {
    /// The paths to open, checked: local addresses must belong to this host.
    pub fn path_specs(&self) -> Result<Vec<PathSpec>> {
        let specs = if self.paths.is_empty() {
            let servers: Vec<SocketAddr> = self.servers.iter().map(|s| s.addr).collect();
            PathSpec::all_pairs(&self.locals, &servers)
        } else {
            self.paths.clone()
        };
        if specs.is_empty() {
            bail!("no path: the --local and --server addresses are of different IP families");
        }
        let specs: Vec<PathSpec> = specs
            .iter()
            .flat_map(|&s| std::iter::repeat_n(s, self.paths_per_pair as usize))
            .chain(self.backup_paths.iter().copied())
            .collect();
        for local in specs.iter().filter_map(|s| s.local) {
            ensure_local(local)?;
        }
        Ok(specs)
    }

    /// The paths to open, each with its delay after the connection is established
    /// (`--path-delay`; all 0 without it), checked: one delay per path, path 0's 0, none
    /// earlier than the one before.
    pub fn timed_paths(&self) -> Result<Vec<(PathSpec, Duration)>> {
        let specs = self.path_specs()?;
        let delays = &self.path_delays;
        if delays.is_empty() {
            return Ok(specs.into_iter().map(|s| (s, Duration::ZERO)).collect());
        }
        if delays.len() != specs.len() {
            let paths = specs.len();
            bail!(
                "--path-delay: one delay per path, in the order the paths are listed: {} given \
                 for {paths} path{}",
                delays.len(),
                if paths == 1 { "" } else { "s" }
            );
        }
        if !delays[0].is_zero() {
            bail!(
                "--path-delay: the first path's delay must be 0, not {:?}: path 0 carries the \
                 handshake, so it opens with the connection",
                delays[0]
            );
        }
        if let Some(i) = (1..delays.len()).find(|&i| delays[i] < delays[i - 1]) {
            bail!(
                "--path-delay: delays must not decrease (path {i} at {:?} after path {} at {:?})",
                delays[i],
                i - 1,
                delays[i - 1]
            );
        }
        Ok(specs.into_iter().zip(delays.iter().copied()).collect())
    }

    pub fn trust(&self) -> Result<Trust> {
        if self.insecure {
            eprintln!("mpquic: WARNING: --insecure: the server's certificate is not verified");
            return Ok(Trust::InsecureAnyCertificate);
        }
        Ok(match &self.ca {
            Some(path) => Trust::from_ca_file(path)?,
            None => Trust::system()?,
        })
    }

    /// The client certificate to present, if any.
    pub fn identity(&self) -> Result<Option<Identity>> {
        match (&self.client_cert, &self.client_key) {
            (Some(cert), Some(key)) => Ok(Some(Identity::from_pem_files(cert, key)?)),
            _ => Ok(None),
        }
    }

    /// A client endpoint trusting servers and presenting a certificate as these arguments say.
    pub fn client(&self, family: IpAddr) -> Result<mpquic::Client> {
        Ok(mpquic::Client::with_identity(&self.trust()?, self.identity()?.as_ref(), family)?)
    }

    /// The name the first server's certificate must carry.
    pub fn server_name(&self) -> String {
        self.name_for(&self.servers[0])
    }

    /// The name `server`'s certificate must carry: --server-name, else the server's own.
    pub fn name_for(&self, server: &ServerAddr) -> String {
        self.server_name.clone().unwrap_or_else(|| server.tls_name())
    }

    pub fn timeout(&self) -> Result<Duration> {
        if !(self.timeout.is_finite() && self.timeout > 0.0) {
            bail!("--timeout must be a positive number of seconds");
        }
        Ok(Duration::from_secs_f64(self.timeout))
    }
}

/// Fail clearly when `ip` is not an address of this host.
pub fn ensure_local(ip: IpAddr) -> Result<()> {
    UdpSocket::bind(SocketAddr::new(ip, 0))
        .map(drop)
        .with_context(|| format!("{ip} is not an address of this host"))
}

#[derive(Args, Debug)]
pub struct ServeArgs {
    /// Address to listen on, IP:PORT or HOST:PORT (repeatable; all share one port). A host
    /// name is resolved once, to its first address; with --insecure the certificate also names
    /// it.
    #[arg(long = "listen", value_name = "IP:PORT", required = true, value_parser = parse_server)]
    pub listen: Vec<ServerAddr>,
    /// Directory to store received files in and serve downloads from.
    #[arg(long, value_name = "DIR", required_unless_present = "sink")]
    pub dir: Option<PathBuf>,
    /// Verify received data and discard it (for measurements); downloads are refused. Only a
    /// sink takes timed sends (`send --time`).
    #[arg(long, conflicts_with = "dir")]
    pub sink: bool,
    /// Certificate chain (PEM).
    #[arg(long, value_name = "FILE", requires = "key", conflicts_with = "insecure")]
    pub cert: Option<PathBuf>,
    /// Private key (PEM).
    #[arg(long, value_name = "FILE", requires = "cert")]
    pub key: Option<PathBuf>,
    /// INSECURE: use a freshly generated self-signed certificate. For labs only.
    #[arg(long, required_unless_present = "cert")]
    pub insecure: bool,
    /// Print one JSON line per finished transfer on stdout.
    #[arg(long)]
    pub json: bool,
    /// Exit after this many transfers.
    #[arg(long, value_name = "N")]
    pub max_transfers: Option<u64>,
    /// Accept only clients presenting a certificate issued by a CA in this PEM file (mutual TLS;
    /// `mpquic cert --new-ca` makes one). Required unless --allow-anonymous.
    #[arg(long, value_name = "FILE")]
    pub client_ca: Option<PathBuf>,
    /// INSECURE: accept clients without a certificate: anyone who can reach the server may
    /// upload and download. For labs only.
    #[arg(long, conflicts_with = "client_ca")]
    pub allow_anonymous: bool,
    /// Refuse uploads; serve downloads only.
    #[arg(long, conflicts_with = "sink")]
    pub read_only: bool,
    /// Let an upload replace an existing file of the same name (default: refuse it).
    #[arg(long)]
    pub overwrite: bool,
    /// Close a stream whose request header has not arrived within this many seconds.
    #[arg(long, default_value_t = 10.0, value_name = "SECS")]
    pub header_timeout: f64,
    /// Close a connection that has had no transfer running for this many seconds (keep-alives
    /// do not count).
    #[arg(long, default_value_t = 30.0, value_name = "SECS")]
    pub idle_close: f64,
    /// On SIGTERM or Ctrl-C, let the transfers running finish for up to this many seconds:
    /// meanwhile new connections and requests are refused. Then it cuts off the rest (an
    /// upload keeps its partial copy: the client's next send resumes from it) and exits with 6;
    /// with every transfer finished, 0. A second signal ends at once (143, or 130 for Ctrl-C),
    /// partial copies kept alike. (0-RTT early data is never accepted: nothing is replayable.)
    #[arg(long, default_value_t = 30.0, value_name = "SECS")]
    pub drain: f64,
    /// Refuse new connections beyond this many open ones.
    #[arg(long, default_value_t = 256, value_parser = clap::value_parser!(u32).range(1..), value_name = "N")]
    pub max_connections: u32,
    /// Refuse new connections from an IP address that has this many open (a flood from one
    /// address leaves room for the others under --max-connections).
    #[arg(long, default_value_t = 32, value_parser = clap::value_parser!(u32).range(1..), value_name = "N")]
    pub max_connections_per_ip: u32,
    /// Serve at most this many streams of one connection at once; its further streams wait
    /// for one to end (a client's `--parallel` above it runs this many at a time).
    #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u32).range(1..), value_name = "N")]
    pub max_streams_per_connection: u32,
    /// Close a connection once its peer has opened this many paths in all, the first one
    /// included: a path is re-opened as a new one each time it fails and answers again (256
    /// lets one flap every 4 s for 17 minutes), and each keeps a few KiB of the server's memory
    /// for the connection's life, so a peer re-opening paths in a loop is cut off here.
    #[arg(long, default_value_t = 256, value_parser = clap::value_parser!(u32).range(2..), value_name = "N")]
    pub max_paths_opened: u32,
    /// End a transfer whose data has not moved for this many seconds (a peer that stopped
    /// reading a download or sending an upload), freeing its slot; an upload stays resumable.
    #[arg(long, default_value_t = 30.0, value_name = "SECS")]
    pub stall_timeout: f64,
    /// Refuse new transfers beyond this many running at once (over all connections).
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u32).range(1..), value_name = "N")]
    pub max_active_transfers: u32,
    /// Every SECS seconds, print each connection's per-path rate, RTT, CE marks, losses,
    /// window and state, and path events as they happen (JSON lines with --json).
    #[arg(long, value_name = "SECS", value_parser = parse_interval)]
    pub interval: Option<Duration>,
    /// With --json: each received transfer's result carries `received_series`, its payload
    /// bytes so far every MS milliseconds as [CLOCK_MONOTONIC ns, bytes] (the host's clock,
    /// shared by its processes: a testbed lines the receiver's rate up with its own samples).
    #[arg(long, value_name = "MS", requires = "json", value_parser = clap::value_parser!(u64).range(1..))]
    pub received_series: Option<u64>,
    /// Cap the file data sent and received, over all transfers of the server (uploads and
    /// downloads, every client's), at RATE bytes per second (like rsync's, not iperf3's bits:
    /// 50M is 50 MiB/s, about 420 Mbit/s; K, M, G are powers of 1024). The cap applies to what
    /// the server reads and writes, not to QUIC's packets, so headers and retransmissions come
    /// on top. Timed sends (send --time) into a --sink are not capped: they measure.
    #[arg(long, value_name = "RATE", value_parser = parse_rate)]
    pub bwlimit: Option<u64>,
    /// Serve Prometheus metrics over HTTP on this address (e.g. 127.0.0.1:9464; GET
    /// http://ADDR/metrics), sampled every second and summed over connections; per path
    /// (label `path`): mpquic_path_{sent,received}_bytes_total,
    /// mpquic_path_{sent,lost,ce_marked}_packets_total, mpquic_path_send_rate_bytes_per_second,
    /// mpquic_path_cwnd_bytes, mpquic_path_in_flight_bytes, mpquic_path_rtt_seconds,
    /// mpquic_path_inactive_milliseconds_total; per server: mpquic_connections,
    /// mpquic_connections_opened_total, mpquic_paths{state}, mpquic_paths_closed_total{reason},
    /// mpquic_failovers_total{event}, mpquic_{suppressions,releases,eliminations}_total.
    #[arg(long, value_name = "IP:PORT")]
    pub metrics: Option<SocketAddr>,
    #[command(flatten)]
    pub transport: TransportArgs,
}

impl ServeArgs {
    /// The addresses to listen on, as resolved.
    pub fn listen_addrs(&self) -> Vec<SocketAddr> {
        self.listen.iter().map(|a| a.addr).collect()
    }

    pub fn identity(&self) -> Result<Identity> {
        match (&self.cert, &self.key) {
            (Some(cert), Some(key)) => Ok(Identity::from_pem_files(cert, key)?),
            _ => {
                eprintln!(
                    "mpquic: WARNING: --insecure: serving with a self-signed certificate; clients cannot verify this server"
                );
                let mut names: Vec<String> = self
                    .listen
                    .iter()
                    .flat_map(|a| [a.addr.ip().to_string(), a.tls_name()])
                    .collect();
                names.push("localhost".into());
                names.sort();
                names.dedup();
                Ok(Identity::self_signed(&names)?)
            }
        }
    }

    /// Which clients to accept; anonymous ones only with a loud warning.
    pub fn client_auth(&self) -> Result<ClientAuth> {
        match &self.client_ca {
            Some(path) => Ok(ClientAuth::from_ca_file(path)?),
            None if !self.allow_anonymous => bail!(
                "serve needs --client-ca FILE (clients must present a certificate from that CA) or, for a lab, --allow-anonymous"
            ),
            None => {
                eprintln!(
                    "mpquic: WARNING: --allow-anonymous: any client that can reach this server may {}",
                    if self.read_only { "download every file in it" } else { "upload and download files" }
                );
                Ok(ClientAuth::Anonymous)
            }
        }
    }

    /// A positive number of seconds, named by its flag in the error.
    pub fn seconds(value: f64, flag: &str) -> Result<Duration> {
        if !(value.is_finite() && value > 0.0) {
            bail!("{flag} must be a positive number of seconds");
        }
        Ok(Duration::from_secs_f64(value))
    }
}

#[derive(Args, Debug)]
pub struct SendArgs {
    /// The files and directories to send. A directory goes with everything beneath it, under
    /// its own name (its relative paths kept); links inside it are refused, not followed, and so
    /// are hidden names (the server's name rules). Several files share one connection.
    #[arg(
        value_name = "PATH",
        required_unless_present_any = ["generate", "time"],
        conflicts_with_all = ["generate", "time"]
    )]
    pub files: Vec<PathBuf>,
    /// Send this many generated bytes instead of a file (e.g. 100M, 2G).
    #[arg(long, value_name = "SIZE", value_parser = parse_size, conflicts_with = "time")]
    pub generate: Option<u64>,
    /// Send generated data for this many seconds (a measurement, like iperf3's -t): an unsized
    /// stream that ends with its BLAKE3 hash, which a `serve --sink` server verifies and
    /// discards (a server storing files refuses it). The time is when the sender stops writing:
    /// what the stack still holds drains after it, within the reported FCT. Ctrl-C or SIGTERM
    /// ends it early, cleanly: the result reports what was sent and `ended_by`.
    #[arg(long, short = 't', value_name = "SECS", value_parser = parse_time)]
    pub time: Option<Duration>,
    /// Name to store a single file under on the server (default: the file's name).
    #[arg(long)]
    pub name: Option<String>,
    /// Send it this many times, one after the other, each over a new connection (its own
    /// handshake and paths) from the same socket, or with --same-connection over one: short-flow
    /// workloads without a process start-up per flow. Prints one result per transfer.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..), value_name = "N")]
    pub repeat: u32,
    /// With --repeat: send them all over the one connection, a new stream each (after the
    /// first, its paths are validated and their windows open): each result's FCT is then one
    /// transfer's on an established connection, and its counters add up over the transfers so
    /// far.
    #[arg(long, requires = "repeat")]
    pub same_connection: bool,
    #[command(flatten)]
    pub batch: BatchArgs,
    #[command(flatten)]
    pub connect: ConnectArgs,
}

#[derive(Args, Debug)]
pub struct GetArgs {
    /// The files' paths on the server (as `mpquic ls` lists them); with -r, directories too.
    #[arg(value_name = "NAME", required = true)]
    pub names: Vec<String>,
    /// Get directories and everything beneath them.
    #[arg(long, short = 'r')]
    pub recursive: bool,
    /// Where to write: for one file, its path (default: its name, in the current directory);
    /// for several or -r, the directory to write them into (default: the current one), each
    /// under its own name (a directory's relative paths kept).
    #[arg(long, short = 'o', value_name = "PATH")]
    pub output: Option<PathBuf>,
    /// Replace the local file if it exists (default: refuse).
    #[arg(long)]
    pub force: bool,
    #[command(flatten)]
    pub batch: BatchArgs,
    #[command(flatten)]
    pub connect: ConnectArgs,
}

#[derive(Args, Debug)]
pub struct LsArgs {
    /// The directory (or file) to list; default: all the server holds.
    #[arg(value_name = "DIR")]
    pub dir: Option<String>,
    #[command(flatten)]
    pub connect: ConnectArgs,
}

#[derive(Args, Debug)]
pub struct AggregateArgs {
    /// The file every worker answers with (served from each worker's `serve --dir`).
    #[arg(long, value_name = "NAME")]
    pub name: String,
    /// Jobs each job stream runs, one after the other.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..))]
    pub jobs: u32,
    /// Job streams running in parallel over the same connections.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub parallel: u32,
    /// Pause between the end of a stream's job and the start of its next, in milliseconds.
    #[arg(long, default_value_t = 0.0, value_name = "MS")]
    pub gap_ms: f64,
    /// The workers: one single-path connection to each --server, set up before the first job.
    #[command(flatten)]
    pub connect: ConnectArgs,
}

#[derive(Args, Debug)]
pub struct DemoArgs {
    /// Bytes to transfer (e.g. 300M).
    #[arg(long, default_value = "300M", value_parser = parse_size)]
    pub size: u64,
    /// Paths, one per loopback address 127.0.0.1 .. 127.0.0.N.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u8).range(1..=16))]
    pub paths: u8,
    /// Print the result as JSON.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub transport: TransportArgs,
}

#[derive(Args, Debug)]
pub struct CertArgs {
    /// Directory to write into: cert.pem and key.pem, or ca.pem and ca-key.pem with --new-ca.
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// DNS names or IP addresses the certificate is for (repeatable); for a client certificate,
    /// the client's name.
    #[arg(long = "name", required_unless_present = "new_ca")]
    pub names: Vec<String>,
    /// Create a lab certificate authority (ca.pem, ca-key.pem) to issue certificates from.
    #[arg(long, conflicts_with_all = ["ca_dir", "client"])]
    pub new_ca: bool,
    /// Issue the certificate from the CA in DIR (its ca.pem and ca-key.pem) instead of
    /// self-signing it.
    #[arg(long, value_name = "DIR")]
    pub ca_dir: Option<PathBuf>,
    /// Issue a client certificate (for send/get/aggregate --client-cert) instead of a server's.
    #[arg(long, requires = "ca_dir")]
    pub client: bool,
}

/// Parse sizes like `1500`, `64K`, `100M`, `2G` (powers of 1024; a trailing `B` or `iB` is fine).
pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let t = t.strip_suffix("iB").or_else(|| t.strip_suffix('B')).unwrap_or(t);
    let (digits, shift) = match t.chars().last().map(|c| c.to_ascii_uppercase()) {
        Some('K') => (&t[..t.len() - 1], 10),
        Some('M') => (&t[..t.len() - 1], 20),
        Some('G') => (&t[..t.len() - 1], 30),
        Some('T') => (&t[..t.len() - 1], 40),
        _ => (t, 0),
    };
    let n: u64 =
        digits.trim().parse().map_err(|_| format!("bad size {s:?} (e.g. 1500, 64K, 100M, 2G)"))?;
    n.checked_mul(1 << shift).ok_or_else(|| format!("size {s:?} is too large"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn servers_parse_as_addresses_or_resolved_host_names() {
        let ip = parse_server("10.0.1.2:4433").unwrap();
        assert_eq!((ip.addr, ip.host.as_deref()), ("10.0.1.2:4433".parse().unwrap(), None));
        assert_eq!(ip.tls_name(), "10.0.1.2");
        let v6 = parse_server("[::1]:4433").unwrap();
        assert_eq!(v6.addr, "[::1]:4433".parse().unwrap());
        let named = parse_server("localhost:4433").unwrap();
        assert!(named.addr.ip().is_loopback() && named.addr.port() == 4433, "{named}");
        assert_eq!(named.tls_name(), "localhost");
        for (bad, why) in [
            ("::1", "brackets"),
            ("localhost", "HOST:PORT"),
            ("localhost:x", "bad port"),
            ("localhost:70000", "bad port"),
            ("nosuch.invalid:4433", "cannot resolve"),
        ] {
            let error = parse_server(bad).unwrap_err();
            assert!(error.contains(why), "{bad}: {error}");
        }
    }

    #[test]
    fn sizes_parse_in_powers_of_1024() {
        assert_eq!(parse_size("1500"), Ok(1500));
        assert_eq!(parse_size("64K"), Ok(64 << 10));
        assert_eq!(parse_size("100M"), Ok(100 << 20));
        assert_eq!(parse_size("2GiB"), Ok(2 << 30));
        assert!(parse_size("12X").is_err());
        assert!(parse_size("99999999999T").is_err());
    }

    #[test]
    fn path_delays_are_seconds_of_zero_or_more() {
        assert_eq!(parse_delay("0"), Ok(Duration::ZERO));
        assert_eq!(parse_delay("0.25"), Ok(Duration::from_millis(250)));
        assert!(parse_delay("-1").is_err());
        assert!(parse_delay("inf").is_err());
        assert!(parse_delay("soon").is_err());
    }

    #[test]
    fn explicit_paths_parse() {
        let p = parse_path("127.0.0.2=127.0.0.1:4433").unwrap();
        assert_eq!(p.local, Some("127.0.0.2".parse().unwrap()));
        assert!(parse_path("127.0.0.2").is_err());
    }

    #[test]
    fn cli_definition_is_consistent() {
        command().debug_assert();
    }

    /// `--cc` takes a controller with its parameters in one string (as the testbed passes a
    /// scenario's), or a name and `--cc-param`s: the same controller either way.
    #[test]
    fn a_controller_is_one_string_or_a_name_and_its_params() {
        #[derive(clap::Parser)]
        struct T {
            #[command(flatten)]
            transport: TransportArgs,
        }
        let congestion = |args: &[&str]| {
            let t = <T as clap::Parser>::try_parse_from(["t"].iter().chain(args)).unwrap();
            t.transport.options().map(|o| o.congestion).map_err(|e| e.to_string())
        };
        let whole = congestion(&["--cc", "amp:beta=4,tau=8"]).unwrap();
        let split = congestion(&["--cc", "amp", "--cc-param", "beta=4", "--cc-param", "tau=8"]);
        assert_eq!(Ok(whole), split);
        assert_eq!(congestion(&[]), Ok(Congestion::default()), "AMP");
        assert!(congestion(&["--cc", "amp:alpha=1"]).unwrap_err().contains("alpha"));
    }

    /// What the testbed launches the CLI with, the choices written by their one formatter
    /// (`Congestion::spec`, the schedulers' and ECN precisions' names), reads back as the same
    /// choices: every controller name the parser knows, parametrised specs, every scheduler and
    /// ECN precision.
    #[test]
    fn the_formatted_choices_read_back_identically() {
        #[derive(clap::Parser)]
        struct T {
            #[command(flatten)]
            transport: TransportArgs,
        }
        let options = |args: &[&str]| {
            let t = <T as clap::Parser>::try_parse_from(["t"].iter().chain(args)).unwrap();
            t.transport.options().unwrap()
        };
        let names = mpquic::mpquic_cc::names();
        let mut specs: Vec<String> = names.into_iter().map(String::from).collect();
        specs.extend(
            ["amp:beta=8,tau=4,ssr=false,initial_window=shared", "mptcp-d:alpha=1.25,ese=false"]
                .map(String::from),
        );
        for text in specs {
            let congestion: Congestion = text.parse().unwrap();
            let read = options(&["--cc", &congestion.spec()]).congestion;
            assert_eq!(read, congestion, "{text} as {}", congestion.spec());
        }
        for scheduler in Scheduler::ALL {
            assert_eq!(options(&["--scheduler", scheduler.name()]).scheduler, scheduler);
        }
        for ecn in EcnPrecision::ALL {
            assert_eq!(options(&["--ecn", ecn.name()]).ecn, ecn);
        }
    }

    /// `--receive-window` reaches the library's options; a window the stack cannot carry is
    /// refused with the option's name, not at the first connection.
    #[test]
    fn a_receive_window_is_a_size_the_stack_can_carry() {
        #[derive(clap::Parser)]
        struct T {
            #[command(flatten)]
            transport: TransportArgs,
        }
        let window = |args: &[&str]| {
            let t = <T as clap::Parser>::try_parse_from(["t"].iter().chain(args))
                .map_err(|e| e.to_string())?;
            t.transport.options().map(|o| o.receive_window).map_err(|e| e.to_string())
        };
        assert_eq!(window(&[]), Ok(None), "noq's default");
        assert_eq!(window(&["--receive-window", "8M"]), Ok(Some(8 << 20)));
        assert!(window(&["--receive-window", "0"]).unwrap_err().contains("window of 0"));
        let huge = window(&["--receive-window", "8388608T"]).unwrap_err();
        assert!(huge.contains("receive window"), "{huge}");
    }

    #[test]
    fn rates_are_bytes_per_second_and_never_zero() {
        assert_eq!(parse_rate("50M"), Ok(50 << 20));
        assert_eq!(parse_rate("1500"), Ok(1500));
        assert!(parse_rate("0").is_err());
        assert!(parse_rate("fast").is_err());
    }
}
