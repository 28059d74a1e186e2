//! `[[sink]] type = "forward"`: the Forward sink's settings.
//!
//! ```toml
//! [[sink]]
//! type = "forward"
//! address = "collector.example.net:24224"  # required; the port defaults to 24224
//! shared_key = "secret"                    # HELO/PING/PONG handshake; default: none
//! self_hostname = "nas1"                   # name in the handshake; default: the system's
//! gzip = false                             # CompressedPackedForward
//! metrics = false                          # also each reading's metrics (zpulse.series)
//! spool_dir = "/var/lib/zpulse/spool/forward-collector.example.net_24224"
//! spool_max_bytes = 268435456              # 256 MiB; the oldest batches go when full
//! batch_max_events = 1000
//! batch_max_bytes = 1048576                # entries per message, before compression
//! ack_timeout = "30s"                      # then reconnect and resend
//! connect_timeout = "10s"                  # TCP connect, TLS and key handshakes
//! [sink.tls]                               # present: TLS; every key optional
//! ca = "/etc/zpulse/collector-ca.pem"      # default: the system's CA bundle
//! cert = "/etc/zpulse/agent.pem"           # client certificate chain, with `key`
//! key = "/etc/zpulse/agent.key"
//! server_name = "collector.example.net"    # default: the address's host
//! ```
//!
//! Durations are text (`"500ms"`, `"30s"`, `"5m"`) or a number of seconds.

use serde::{Deserialize, Deserializer};
use std::path::{Path, PathBuf};
use std::time::Duration;
use zpulse_forward::DEFAULT_PORT;

/// The Forward sink's settings. Every key but `address` has a default.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ForwardConfig {
    /// `host:port`, `host` (port 24224) or `[v6addr]:port`.
    pub address: String,
    /// TLS around the connection; `None`: plain TCP.
    #[serde(default)]
    pub tls: Option<TlsConfig>,
    /// The server's shared key: the agent then expects `HELO`, answers `PING`, and checks
    /// the server's `PONG` digest.
    #[serde(default)]
    pub shared_key: Option<String>,
    /// This host's name in the handshake; default: the system's hostname.
    #[serde(default)]
    pub self_hostname: Option<String>,
    /// Send CompressedPackedForward (gzip).
    #[serde(default)]
    pub gzip: bool,
    /// Also send each reading's metrics, one `zpulse.series` record per reading (the
    /// Prometheus exposition's series; see `zpulse_forward::series`).
    #[serde(default)]
    pub metrics: bool,
    /// Where unacked batches wait; default: one directory per address under
    /// `/var/lib/zpulse/spool` (`/var/db/zpulse/spool` on FreeBSD).
    #[serde(default)]
    pub spool_dir: Option<PathBuf>,
    #[serde(default = "defaults::spool_max_bytes")]
    pub spool_max_bytes: u64,
    #[serde(default = "defaults::batch_max_events")]
    pub batch_max_events: usize,
    /// Encoded entries per message, before compression. One event larger than this still
    /// goes, alone.
    #[serde(default = "defaults::batch_max_bytes")]
    pub batch_max_bytes: usize,
    #[serde(default = "defaults::ack_timeout", deserialize_with = "duration")]
    pub ack_timeout: Duration,
    #[serde(default = "defaults::connect_timeout", deserialize_with = "duration")]
    pub connect_timeout: Duration,
}

pub use crate::sinks::tls_client::TlsConfig;

mod defaults {
    use std::time::Duration;
    pub fn spool_max_bytes() -> u64 {
        256 << 20
    }
    pub fn batch_max_events() -> usize {
        1000
    }
    pub fn batch_max_bytes() -> usize {
        1 << 20
    }
    pub fn ack_timeout() -> Duration {
        Duration::from_secs(30)
    }
    pub fn connect_timeout() -> Duration {
        Duration::from_secs(10)
    }
}

fn duration<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
    zpulse_proto::sdk::config::duration::deserialize(d)
}

impl ForwardConfig {
    /// Every default, sending to `address`.
    pub fn new(address: impl Into<String>) -> ForwardConfig {
        ForwardConfig {
            address: address.into(),
            tls: None,
            shared_key: None,
            self_hostname: None,
            gzip: false,
            metrics: false,
            spool_dir: None,
            spool_max_bytes: defaults::spool_max_bytes(),
            batch_max_events: defaults::batch_max_events(),
            batch_max_bytes: defaults::batch_max_bytes(),
            ack_timeout: defaults::ack_timeout(),
            connect_timeout: defaults::connect_timeout(),
        }
    }

    /// The checks that serde's types do not make; the error names the key.
    pub fn check(&self) -> Result<(), String> {
        split_address(&self.address)?;
        if self.shared_key.as_deref() == Some("") {
            return Err("shared_key: empty; leave it out for no handshake".into());
        }
        if let Some(name) = &self.self_hostname
            && (name.is_empty() || name.len() > 255 || name.chars().any(char::is_whitespace))
        {
            return Err("self_hostname: give a name of 1 to 255 characters without spaces".into());
        }
        if self.spool_max_bytes < 1 << 20 {
            return Err("spool_max_bytes: give at least 1048576 (1 MiB)".into());
        }
        if !(1..=1_000_000).contains(&self.batch_max_events) {
            return Err("batch_max_events: give a number from 1 to 1000000".into());
        }
        if !(1024..=64 << 20).contains(&self.batch_max_bytes) {
            return Err("batch_max_bytes: give 1024 to 67108864 bytes".into());
        }
        if self.batch_max_bytes as u64 > self.spool_max_bytes / 4 {
            return Err(
                "batch_max_bytes: at most a quarter of spool_max_bytes, so the spool holds \
                 several batches"
                    .into(),
            );
        }
        for (key, d) in [
            ("ack_timeout", self.ack_timeout),
            ("connect_timeout", self.connect_timeout),
        ] {
            if d < Duration::from_millis(10) || d > Duration::from_secs(3600) {
                return Err(format!("{key}: give a duration between 10ms and 1h"));
            }
        }
        if let Some(tls) = &self.tls
            && tls.cert.is_some() != tls.key.is_some()
        {
            return Err("tls: give both cert and key for a client certificate, or neither".into());
        }
        Ok(())
    }

    /// The spool directory: the configured one, or one per address under the OS's default.
    pub fn spool_dir(&self) -> PathBuf {
        if let Some(dir) = &self.spool_dir {
            return dir.clone();
        }
        let base = if cfg!(target_os = "freebsd") {
            "/var/db/zpulse/spool"
        } else {
            "/var/lib/zpulse/spool"
        };
        let name: String = self
            .address
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '.' || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        Path::new(base).join(format!("forward-{name}"))
    }
}

impl crate::sinks::spec::SinkKind for ForwardConfig {
    const TYPE: &'static str = "forward";
    fn resolve_paths(&mut self, base: &Path) {
        let (spool_dir, tls) = (&mut self.spool_dir, &mut self.tls);
        let files = tls
            .iter_mut()
            .flat_map(|tls| [&mut tls.ca, &mut tls.cert, &mut tls.key]);
        crate::sinks::spec::resolve_relative(base, spool_dir.iter_mut().chain(files.flatten()));
    }
    fn check(&self) -> Result<(), String> {
        ForwardConfig::check(self)
    }
    /// Nothing is opened: the spool waits for [`crate::sinks::spec::Planned::start`].
    fn plan(&self) -> Result<Box<dyn crate::sinks::spec::Planned>, String> {
        Ok(Box::new(super::ForwardSink::prepare(self.clone())?))
    }
}

impl crate::sinks::spec::Planned for super::Prepared {
    fn name(&self) -> String {
        super::Prepared::name(self)
    }
    fn start(self: Box<Self>) -> Result<Box<dyn crate::sinks::Sink>, String> {
        Ok(Box::new(super::Prepared::start(*self)?))
    }
}

/// `host:port`, `host`, `[v6]:port`, `[v6]` or a bare IPv6 address → host and port.
pub fn split_address(address: &str) -> Result<(String, u16), String> {
    let bad = |why: &str| format!("address {address:?}: {why}; write host:port");
    let port = |p: &str| {
        p.parse::<u16>()
            .ok()
            .filter(|&p| p > 0)
            .ok_or_else(|| bad("bad port"))
    };
    let (host, port) = if let Some(rest) = address.strip_prefix('[') {
        let (host, after) = rest.split_once(']').ok_or_else(|| bad("no closing ]"))?;
        match after {
            "" => (host, DEFAULT_PORT),
            p => (
                host,
                port(p.strip_prefix(':').ok_or_else(|| bad("text after ]"))?)?,
            ),
        }
    } else {
        match address.rsplit_once(':') {
            // More than one colon: an IPv6 address without brackets or port.
            Some((host, _)) if host.contains(':') => (address, DEFAULT_PORT),
            Some((host, p)) => (host, port(p)?),
            None => (address, DEFAULT_PORT),
        }
    };
    if host.is_empty() || host.chars().any(char::is_whitespace) {
        return Err(bad("no host"));
    }
    Ok((host.to_owned(), port))
}
