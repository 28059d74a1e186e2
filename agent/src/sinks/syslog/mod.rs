//! The syslog sink: events as syslog messages, to the local daemon or a remote collector.
//!
//! ```toml
//! [[sink]]
//! type = "syslog"
//! address = "unix:///dev/log"    # udp://host:514, tcp://host:601, tls://host:6514
//! facility = "daemon"            # user, daemon, local0 … local7, …
//! app_name = "zpulse"            # TAG / APP-NAME
//! # hostname = "nas1"            # RFC 5424 HOSTNAME; default: the event's host
//! # max_message_bytes = 1200     # default: 2048 local, 1200 udp, 8096 tcp and tls
//! # enterprise_number = 32473    # SD-IDs zpulse@N and zpulse-data@N
//! # format = "rfc3164"           # local sockets only: rfc3164 (Linux default) | rfc5424
//! # framing = "octet-counting"   # tcp and tls only: octet-counting (default) | lf
//! # [sink.tls]                   # tls:// only
//! # ca = "/etc/zpulse/ca.pem"    # default: the system CA bundle
//! # cert = "/etc/zpulse/agent.pem"  # a client certificate (mutual TLS), with `key`
//! # key = "/etc/zpulse/agent.key"
//! ```
//!
//! Which format goes where (docs/syslog.md says the same for users):
//!
//! * **Local socket, Linux** (`/dev/log`): the hostless RFC 3164 dialect of glibc's
//!   `syslog(3)`. journald and rsyslog's imuxsock parse it; neither parses RFC 5424 there.
//! * **Local socket, FreeBSD** (`/var/run/log`): RFC 5424, as FreeBSD's own libc sends it. The
//!   choice is the `format` setting, whose default alone depends on the OS, so both paths
//!   compile and are tested on Linux.
//! * **Remote** (UDP, TCP, TLS): RFC 5424 with structured data; TCP and TLS frame each
//!   message with RFC 6587 octet counting, or with a LF (`framing = "lf"`) for receivers that
//!   read only that. TLS verifies the server and, given `cert` and `key`, presents a client
//!   certificate to receivers that require one.
//!
//! Severity: critical → crit, warning → warning, info → info; a cleared warning or critical
//! finding → notice ([`format::syslog_severity`]). MSGID is the check; MSG is the readable
//! [`format::message_text`]; SD carries the identity and every figure.
//!
//! Delivery is best effort, as syslog is: a message that cannot be sent now (daemon gone,
//! connection refused, waiting out a reconnect backoff) is dropped and counted in
//! [`SinkStats::dropped`], never queued or retried, so a dead log host cannot stall the agent.

pub mod format;
pub mod transport;

#[cfg(test)]
mod tests;

pub use format::{Dialect, EXAMPLE_ENTERPRISE_NUMBER, Facility, Formatter};
pub use transport::{Address, Framing, Timing};

use super::{Sink, SinkError, SinkStats, Stamped};
use crate::base::clock::{Clock, system_clock};
use jiff::Timestamp;
use jiff::tz::TimeZone;
use serde::Deserialize;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;
use transport::Transport;

/// Default size limits, framing excluded. UDP: what crosses an unknown path without
/// fragmenting (RFC 5426). TCP/TLS: rsyslog's default `maxMessageSize`, which its "8k" means
/// 8096 bytes, not the 8192 of RFC 5425: rsyslog cuts a longer octet-counted message and
/// parses the rest of the frame as a second, garbage message (seen in `tests/syslog.rs`).
/// Local: what FreeBSD's libc caps at, well inside journald's and rsyslog's limits.
pub const DEFAULT_MAX_UDP: usize = 1200;
pub const DEFAULT_MAX_TCP: usize = 8096;
pub const DEFAULT_MAX_LOCAL: usize = 2048;
/// Every RFC 5424 receiver must accept 480 octets; smaller could not hold a header.
pub const MIN_MAX_BYTES: usize = 480;
/// The largest UDP payload over IPv4.
pub const MAX_DATAGRAM: usize = 65_507;
/// A generous bound for streams; receivers cut far sooner (rsyslog 8k, syslog-ng 64k).
pub const MAX_STREAM: usize = 1 << 20;

/// One `[[sink]]` of type `syslog`. Every key but `address` has a default.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SyslogConfig {
    /// `unix:///dev/log`, `udp://host:514`, `tcp://host:601`, `tls://host:6514`.
    pub address: String,
    #[serde(default = "default_facility")]
    pub facility: String,
    #[serde(default = "default_app_name")]
    pub app_name: String,
    /// RFC 5424 HOSTNAME; default: the event's `host` (the agent's hostname).
    #[serde(default)]
    pub hostname: Option<String>,
    /// Largest message in bytes, framing excluded; default by transport (see the constants).
    #[serde(default)]
    pub max_message_bytes: Option<usize>,
    /// The private enterprise number in the SD-IDs. The default, 32473, is IANA's example
    /// number (RFC 5612): valid syntax, but no one's; a site with its own PEN sets it here.
    #[serde(default = "default_enterprise_number")]
    pub enterprise_number: u32,
    /// Local sockets only: `rfc3164` (default on Linux) or `rfc5424` (default on FreeBSD).
    #[serde(default)]
    pub format: Option<Dialect>,
    /// `tcp://` and `tls://` only: octet counting (default) or LF after each message.
    #[serde(default)]
    pub framing: Option<Framing>,
    /// `tls://` only.
    #[serde(default)]
    pub tls: Option<TlsConfig>,
}

pub use super::tls_client::TlsConfig;

fn default_facility() -> String {
    "daemon".into()
}

fn default_app_name() -> String {
    "zpulse".into()
}

fn default_enterprise_number() -> u32 {
    EXAMPLE_ENTERPRISE_NUMBER
}

impl SyslogConfig {
    /// Defaults for everything but the address.
    pub fn new(address: impl Into<String>) -> SyslogConfig {
        SyslogConfig {
            address: address.into(),
            facility: default_facility(),
            app_name: default_app_name(),
            hostname: None,
            max_message_bytes: None,
            enterprise_number: default_enterprise_number(),
            format: None,
            framing: None,
            tls: None,
        }
    }
}

impl super::spec::SinkKind for SyslogConfig {
    const TYPE: &'static str = "syslog";
    fn resolve_paths(&mut self, base: &Path) {
        if let Some(tls) = self.tls.as_mut() {
            let files = [&mut tls.ca, &mut tls.cert, &mut tls.key];
            super::spec::resolve_relative(base, files.into_iter().flatten());
        }
    }
    /// Checks the address, facility and names, and reads the TLS files; connects nowhere.
    fn plan(&self) -> Result<Box<dyn super::spec::Planned>, String> {
        Ok(Box::new(SyslogSink::new(self.clone())?))
    }
}

impl super::spec::Planned for SyslogSink {
    fn name(&self) -> String {
        Sink::name(self)
    }
    fn start(self: Box<Self>) -> Result<Box<dyn Sink>, String> {
        Ok(self)
    }
}

/// The sink. Built from a checked config; connects on the first event.
pub struct SyslogSink {
    address: Address,
    formatter: Formatter,
    transport: Transport,
    stats: SinkStats,
}

impl SyslogSink {
    pub fn new(config: SyslogConfig) -> Result<SyslogSink, String> {
        SyslogSink::with_timing(config, Timing::default(), system_clock())
    }

    /// With other timeouts and backoff, read against `clock` (tests).
    pub fn with_timing(
        config: SyslogConfig,
        timing: Timing,
        clock: Arc<dyn Clock>,
    ) -> Result<SyslogSink, String> {
        let address = Address::parse(&config.address)?;
        let facility = Facility::parse(&config.facility).map_err(|e| format!("facility: {e}"))?;
        check_app_name(&config.app_name)?;
        if let Some(host) = &config.hostname {
            check_hostname(host)?;
        }
        if config.enterprise_number == 0 {
            return Err(
                "enterprise_number: 0 is reserved; give your IANA private enterprise \
                        number (default 32473, IANA's example)"
                    .into(),
            );
        }
        let dialect = match (config.format, address.is_local()) {
            (Some(Dialect::Rfc3164Local), false) => {
                return Err(format!(
                    "format: rfc3164 is for local sockets; {address} gets RFC 5424"
                ));
            }
            (Some(d), _) => d,
            (None, true) if cfg!(target_os = "freebsd") => Dialect::Rfc5424,
            (None, true) => Dialect::Rfc3164Local,
            (None, false) => Dialect::Rfc5424,
        };
        let (default_max, ceiling) = match address {
            Address::Unix(_) => (DEFAULT_MAX_LOCAL, MAX_DATAGRAM),
            Address::Udp { .. } => (DEFAULT_MAX_UDP, MAX_DATAGRAM),
            Address::Tcp { .. } | Address::Tls { .. } => (DEFAULT_MAX_TCP, MAX_STREAM),
        };
        let max_bytes = config.max_message_bytes.unwrap_or(default_max);
        if !(MIN_MAX_BYTES..=ceiling).contains(&max_bytes) {
            return Err(format!(
                "max_message_bytes: {max_bytes}: give {MIN_MAX_BYTES} to {ceiling} for {address}"
            ));
        }
        let tls = match (&address, &config.tls) {
            (Address::Tls { .. }, Some(t)) if t.server_name.is_some() => {
                return Err(
                    "tls.server_name: not a syslog setting; the server's certificate must name \
                     the host of `address`"
                        .into(),
                );
            }
            (Address::Tls { .. }, Some(t)) => Some(t.client_config()?),
            (Address::Tls { .. }, None) => {
                Some(super::tls_client::client_config(None, None, None)?)
            }
            (_, Some(_)) => {
                return Err(format!("tls: only for tls:// addresses, not {address}"));
            }
            (_, None) => None,
        };
        let framing = match (&address, config.framing) {
            (Address::Tcp { .. } | Address::Tls { .. }, framing) => framing.unwrap_or_default(),
            (_, Some(_)) => {
                return Err(format!(
                    "framing: only for tcp:// and tls:// addresses; {address} sends one \
                     message per datagram"
                ));
            }
            (_, None) => Framing::default(),
        };
        let transport = Transport::new(&address, tls, framing, timing, clock)?;
        let formatter = Formatter {
            dialect,
            facility,
            app_name: config.app_name,
            hostname: config.hostname,
            fallback_hostname: system_hostname(),
            pid: std::process::id(),
            enterprise_number: config.enterprise_number,
            max_bytes,
        };
        Ok(SyslogSink {
            address,
            formatter,
            transport,
            stats: SinkStats::default(),
        })
    }

    /// Successful connects so far (reconnects show as more than 1).
    pub fn connects(&self) -> u64 {
        self.transport.connects()
    }

    /// How this sink writes messages.
    pub fn formatter(&self) -> &Formatter {
        &self.formatter
    }

    /// One event as this sink would send it, with the local offset of its time.
    pub fn format(&self, stamped: &Stamped) -> String {
        let offset = TimeZone::system().to_offset(event_timestamp(stamped));
        self.formatter.format(stamped.time, offset, &stamped.event)
    }
}

fn event_timestamp(s: &Stamped) -> Timestamp {
    format::timestamp(s.time)
}

/// TAG and APP-NAME in one rule: what RFC 3164 allows a tag (≤ 32 alphanumerics), plus `.`,
/// `_` and `-`, and nothing journald could misread (`[`, `:`, space).
fn check_app_name(name: &str) -> Result<(), String> {
    if name.is_empty()
        || name.len() > 32
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
    {
        return Err(format!(
            "app_name: '{name}': give 1 to 32 characters of A-Z a-z 0-9 . _ -"
        ));
    }
    Ok(())
}

fn check_hostname(host: &str) -> Result<(), String> {
    if host.is_empty()
        || host.len() > format::MAX_HOSTNAME
        || !host.chars().all(|c| matches!(c, '!'..='~'))
    {
        return Err(format!(
            "hostname: '{host}': give 1 to 255 printable ASCII characters without spaces"
        ));
    }
    Ok(())
}

/// The system's hostname, for events that come without one: Linux's procfs file, else none
/// (the agent fills every event's `host`, so this rarely matters).
fn system_hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

impl Sink for SyslogSink {
    fn name(&self) -> String {
        format!("syslog {}", self.address)
    }

    fn deliver(&mut self, batch: &[Stamped]) -> Result<(), SinkError> {
        // Cached by jiff (re-read every few minutes), so a batch costs no file read, and a
        // DST change or a new /etc/localtime is picked up without a restart.
        let tz = TimeZone::system();
        let mut dropped = 0u64;
        let mut error = String::new();
        for stamped in batch {
            let offset = tz.to_offset(event_timestamp(stamped));
            let msg = self.formatter.format(stamped.time, offset, &stamped.event);
            match self.transport.send(msg.as_bytes()) {
                Ok(()) => self.stats.delivered += 1,
                Err(e) => {
                    dropped += 1;
                    error = e;
                }
            }
        }
        self.stats.dropped += dropped;
        if dropped == 0 {
            Ok(())
        } else {
            Err(SinkError {
                sink: self.name(),
                message: format!("{dropped} of {} events dropped: {error}", batch.len()),
            })
        }
    }

    fn flush(&mut self, _deadline: Instant) -> Result<(), SinkError> {
        // Nothing is queued; only TLS may hold bytes, and its writes are bounded by the
        // socket timeout.
        self.transport.flush().map_err(|message| SinkError {
            sink: self.name(),
            message,
        })
    }

    fn stats(&self) -> SinkStats {
        self.stats.clone()
    }
}
