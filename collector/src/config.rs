//! `zpulse-collector.toml`: every key has a default; the command line overrides the file.
//! `packaging/conf/zpulse-collector.toml` is the annotated sample with every key;
//! docs/collector.md and zpulse-collector(8) explain them.
//!
//! Safe by default: the listener is on loopback. Listening beyond loopback needs a shared
//! key, per-client keys, or TLS with required client certificates, unless `insecure = true`.
//!
//! Identity: a per-client key (`[clients]`) and a client certificate (`[tls.clients]`, by
//! the certificate's CN or DNS SAN) each name the hosts they may write records for; the
//! fleet-wide `shared_key` allows any host.

use crate::store::Retention;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The database and the config file where the system keeps such files: FreeBSD's `/var/db`
/// and `/usr/local/etc` (hier(7); the port's rc.d script and sample use the same), else the
/// FHS's `/var/lib` and `/etc`. The command line's subcommands find the database through
/// them when given no `--db`.
pub const DEFAULT_DB: &str = default_paths(cfg!(target_os = "freebsd")).0;
pub const DEFAULT_CONFIG: &str = default_paths(cfg!(target_os = "freebsd")).1;

/// (database, config file) on FreeBSD or elsewhere.
pub const fn default_paths(freebsd: bool) -> (&'static str, &'static str) {
    if freebsd {
        (
            "/var/db/zpulse-collector/events.db",
            "/usr/local/etc/zpulse-collector/zpulse-collector.toml",
        )
    } else {
        (
            "/var/lib/zpulse-collector/events.db",
            "/etc/zpulse-collector/zpulse-collector.toml",
        )
    }
}
pub const DEFAULT_LISTEN: &str = "127.0.0.1:24224";

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    pub listen: String,
    /// Allows listening beyond loopback without any client authentication.
    pub insecure: bool,
    pub db: PathBuf,
    pub http: Option<String>,
    /// Read access to the web page and `/api/*`: `Authorization: Bearer TOKEN` (or
    /// `?token=`). `None`: open to whoever reaches `http`, which must then be loopback
    /// (behind a reverse proxy) unless `insecure`.
    pub http_token: Option<String>,
    pub self_hostname: String,
    /// The fleet-wide key: whoever has it may write records for any host.
    pub shared_key: Option<String>,
    /// Per-client keys, by the hostname sent in PING.
    pub clients: BTreeMap<String, Client>,
    pub users: BTreeMap<String, String>,
    pub max_connections: usize,
    /// Connections from one peer address at once, at most.
    pub max_connections_per_peer: usize,
    pub max_frame_bytes: usize,
    pub max_inflated_bytes: usize,
    /// Entries in one event message, at most (the agent sends 1000 by default; its
    /// `batch_max_events` must not exceed this).
    pub max_entries: usize,
    /// Entries decoded per second per connection, on average (bursts up to `max_entries`):
    /// past it, the connection is read more slowly (TCP pushes back on the sender).
    pub max_entries_per_second: u32,
    /// A record larger than this is not stored (counted and logged).
    pub max_record_bytes: usize,
    /// A message whose tag is longer is refused.
    pub max_tag_bytes: usize,
    /// Bytes of unfinished messages held for all connections together: past it, the
    /// connection that would exceed it is closed (its agent resends after reconnecting).
    pub max_buffered_bytes: usize,
    /// Decoded rows waiting to be stored, all connections together (estimated bytes):
    /// a connection waits for room, for at most `read_timeout`, then is closed.
    pub max_inflight_bytes: usize,
    /// The database's write-ahead log past which the writer copies it into the database and
    /// starts it again before its next transaction; also the size SQLite cuts it back to.
    pub max_wal_bytes: u64,
    /// A message that started must complete within this.
    pub read_timeout: Duration,
    /// A new connection must send something valid within this — a complete Forward message
    /// with entries, or (when clients authenticate) a handshake that passes — whatever
    /// bytes trickle in meanwhile (keep-alives do not count), or it is closed. Until then
    /// it is *unproven*: unproven connections hold at most half of `max_connections`, and
    /// a peer address holding more of them than a newcomer's gives up its oldest.
    pub first_message_timeout: Duration,
    /// A connection that completes no message but keep-alives for this long is closed.
    pub idle_timeout: Duration,
    /// A host whose event times differ from the receive time by more is flagged.
    pub max_clock_skew: Duration,
    pub retention: Retention,
    pub tls: Option<Tls>,
    pub alerting: crate::alert::Alerting,
}

/// A per-client key and the hosts it may write records for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Client {
    pub key: String,
    pub hosts: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Tls {
    pub cert: PathBuf,
    pub key: PathBuf,
    /// CA certificates that sign client certificates; absent: clients are not asked for one.
    pub client_ca: Option<PathBuf>,
    /// Refuse TLS clients without a certificate signed by `client_ca`.
    pub require_client_cert: bool,
    /// A client certificate's name (its CN or a DNS SAN) → the hosts it may write. A
    /// certificate whose names are all absent here may write for those names themselves.
    pub clients: BTreeMap<String, Vec<String>>,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            listen: DEFAULT_LISTEN.into(),
            insecure: false,
            db: DEFAULT_DB.into(),
            http: None,
            http_token: None,
            self_hostname: "zpulse-collector".into(),
            shared_key: None,
            clients: BTreeMap::new(),
            users: BTreeMap::new(),
            max_connections: 256,
            max_connections_per_peer: 32,
            max_frame_bytes: 8 << 20,
            max_inflated_bytes: 32 << 20,
            max_entries: 5_000,
            max_entries_per_second: 20_000,
            max_record_bytes: 64 << 10,
            max_tag_bytes: 128,
            max_buffered_bytes: 128 << 20,
            max_inflight_bytes: 128 << 20,
            max_wal_bytes: 64 << 20,
            read_timeout: Duration::from_secs(30),
            first_message_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(300),
            max_clock_skew: Duration::from_secs(300),
            retention: Retention::default(),
            tls: None,
            alerting: crate::alert::Alerting::default(),
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    listen: Option<String>,
    insecure: Option<bool>,
    db: Option<PathBuf>,
    http: Option<String>,
    http_token: Option<String>,
    self_hostname: Option<String>,
    shared_key: Option<String>,
    #[serde(default)]
    clients: BTreeMap<String, ClientFile>,
    #[serde(default)]
    users: BTreeMap<String, String>,
    max_connections: Option<usize>,
    max_connections_per_peer: Option<usize>,
    max_frame_bytes: Option<usize>,
    max_inflated_bytes: Option<usize>,
    max_entries: Option<usize>,
    max_entries_per_second: Option<u32>,
    max_record_bytes: Option<usize>,
    max_tag_bytes: Option<usize>,
    max_buffered_bytes: Option<usize>,
    max_inflight_bytes: Option<usize>,
    max_wal_bytes: Option<u64>,
    read_timeout: Option<String>,
    first_message_timeout: Option<String>,
    idle_timeout: Option<String>,
    max_clock_skew: Option<String>,
    retention: Option<RetentionFile>,
    tls: Option<TlsFile>,
    alerting: Option<crate::alert::AlertingFile>,
}

/// `nas1 = "key"` (may write for `nas1`) or `nas1 = { key = "…", hosts = ["nas1", …] }`.
#[derive(Deserialize)]
#[serde(untagged)]
enum ClientFile {
    Key(String),
    Full(ClientTable),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ClientTable {
    key: String,
    hosts: Option<Vec<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TlsFile {
    cert: PathBuf,
    key: PathBuf,
    client_ca: Option<PathBuf>,
    #[serde(default)]
    require_client_cert: bool,
    #[serde(default)]
    clients: BTreeMap<String, Vec<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RetentionFile {
    max_age: Option<String>,
    max_bytes: Option<u64>,
    dedup_window: Option<String>,
}

impl Config {
    /// Reads a config file; relative paths in it are taken from its directory. An error
    /// says `FILE:LINE: what` (the line of the key, when the key is known).
    pub fn load(path: &Path) -> Result<Config, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        Config::parse(&text, path.parent().unwrap_or(Path::new(".")))
            .map_err(|e| format!("{}:{e}", path.display()))
    }

    /// Parses a config file's text; an error starts with the line (`LINE: what`) or, when no
    /// line can be told, ` what`.
    pub fn parse(text: &str, base: &Path) -> Result<Config, String> {
        Config::parse_unplaced(text, base).map_err(|e| match e {
            Placed::At(offset, what) => format!("{}: {what}", line_of(text, offset)),
            Placed::Key(what) => match key_line(text, &what) {
                Some(line) => format!("{line}: {what}"),
                None => format!(" {what}"),
            },
        })
    }

    fn parse_unplaced(text: &str, base: &Path) -> Result<Config, Placed> {
        let f: File = toml::from_str(text).map_err(|e: toml::de::Error| {
            let what = e.message().trim_end().to_owned();
            match e.span() {
                Some(span) => Placed::At(span.start, what),
                None => Placed::Key(what),
            }
        })?;
        Config::resolve(f, base).map_err(Placed::Key)
    }

    fn resolve(f: File, base: &Path) -> Result<Config, String> {
        let mut c = Config::default();
        let dur = |key: &str, v: &Option<String>, d: Duration| match v {
            Some(s) => parse_duration(s).map_err(|e| format!("{key}: {e}")),
            None => Ok(d),
        };
        if let Some(v) = f.listen {
            c.listen = v;
        }
        c.insecure = f.insecure.unwrap_or(false);
        if let Some(v) = f.db {
            c.db = base.join(v);
        }
        c.http = f.http;
        c.http_token = f.http_token;
        if let Some(v) = f.self_hostname {
            c.self_hostname = v;
        }
        c.shared_key = f.shared_key;
        c.clients = f
            .clients
            .into_iter()
            .map(|(name, cf)| {
                let client = match cf {
                    ClientFile::Key(key) => Client {
                        key,
                        hosts: vec![name.clone()],
                    },
                    ClientFile::Full(ClientTable { key, hosts }) => Client {
                        key,
                        hosts: hosts.unwrap_or_else(|| vec![name.clone()]),
                    },
                };
                (name, client)
            })
            .collect();
        c.users = f.users;
        c.max_connections = f.max_connections.unwrap_or(c.max_connections);
        c.max_connections_per_peer = f
            .max_connections_per_peer
            .unwrap_or(c.max_connections_per_peer);
        c.max_frame_bytes = f.max_frame_bytes.unwrap_or(c.max_frame_bytes);
        c.max_inflated_bytes = f.max_inflated_bytes.unwrap_or(c.max_inflated_bytes);
        c.max_entries = f.max_entries.unwrap_or(c.max_entries);
        c.max_entries_per_second = f.max_entries_per_second.unwrap_or(c.max_entries_per_second);
        c.max_record_bytes = f.max_record_bytes.unwrap_or(c.max_record_bytes);
        c.max_tag_bytes = f.max_tag_bytes.unwrap_or(c.max_tag_bytes);
        c.max_buffered_bytes = f.max_buffered_bytes.unwrap_or(c.max_buffered_bytes);
        c.max_inflight_bytes = f.max_inflight_bytes.unwrap_or(c.max_inflight_bytes);
        c.max_wal_bytes = f.max_wal_bytes.unwrap_or(c.max_wal_bytes);
        c.read_timeout = dur("read_timeout", &f.read_timeout, c.read_timeout)?;
        c.first_message_timeout = dur(
            "first_message_timeout",
            &f.first_message_timeout,
            c.first_message_timeout,
        )?;
        c.idle_timeout = dur("idle_timeout", &f.idle_timeout, c.idle_timeout)?;
        c.max_clock_skew = dur("max_clock_skew", &f.max_clock_skew, c.max_clock_skew)?;
        if let Some(r) = f.retention {
            if let Some(a) = r.max_age {
                c.retention.max_age = if a == "forever" {
                    None
                } else {
                    Some(parse_duration(&a).map_err(|e| format!("retention.max_age: {e}"))?)
                };
            }
            c.retention.max_bytes = r.max_bytes;
            c.retention.dedup_window = dur(
                "retention.dedup_window",
                &r.dedup_window,
                c.retention.dedup_window,
            )?;
        }
        c.tls = f.tls.map(|t| Tls {
            cert: base.join(t.cert),
            key: base.join(t.key),
            client_ca: t.client_ca.map(|p| base.join(p)),
            require_client_cert: t.require_client_cert,
            clients: t.clients,
        });
        if let Some(a) = f.alerting {
            c.alerting = a.resolve(base)?;
        }
        c.check()?;
        Ok(c)
    }

    pub fn check(&self) -> Result<(), String> {
        if self.max_connections == 0 || self.max_connections_per_peer == 0 {
            return Err("max_connections, max_connections_per_peer: at least 1".into());
        }
        if self.max_frame_bytes < 1024 {
            return Err("max_frame_bytes: at least 1024".into());
        }
        if self.max_entries == 0 || self.max_entries_per_second == 0 {
            return Err("max_entries, max_entries_per_second: at least 1".into());
        }
        if self.max_record_bytes < 256 || self.max_tag_bytes < 8 {
            return Err("max_record_bytes: at least 256; max_tag_bytes: at least 8".into());
        }
        if self.read_timeout.is_zero()
            || self.idle_timeout.is_zero()
            || self.first_message_timeout.is_zero()
        {
            return Err("read_timeout, idle_timeout, first_message_timeout: more than 0s".into());
        }
        if self.self_hostname.is_empty() {
            return Err("self_hostname: empty".into());
        }
        if let Some(t) = &self.tls
            && t.require_client_cert
            && t.client_ca.is_none()
        {
            return Err("tls.require_client_cert needs tls.client_ca".into());
        }
        self.check_exposure()
    }

    /// Refuses a listener beyond loopback that anyone could write to, and a web page beyond
    /// loopback that anyone could read, unless `insecure = true`.
    fn check_exposure(&self) -> Result<(), String> {
        if self.insecure {
            return Ok(());
        }
        if !self.authenticates_clients() && !is_loopback(&self.listen)? {
            return Err(format!(
                "listen {}: beyond loopback, but clients are not authenticated. Set shared_key, \
                 [clients] keys, or [tls] with client_ca and require_client_cert = true \
                 (or insecure = true to accept anyone who can connect)",
                self.listen
            ));
        }
        if let Some(h) = &self.http
            && self.http_token.is_none()
            && !is_loopback(h)?
        {
            return Err(format!(
                "http {h}: beyond loopback without http_token. Set http_token, keep the page on \
                 127.0.0.1 behind a reverse proxy, or set insecure = true"
            ));
        }
        Ok(())
    }

    /// Whether clients must handshake.
    pub fn requires_auth(&self) -> bool {
        self.shared_key.is_some() || !self.clients.is_empty() || !self.users.is_empty()
    }

    /// Whether every client must prove who it is: a key handshake or a required client
    /// certificate. (User passwords alone are not enough: the handshake still needs a key.)
    pub fn authenticates_clients(&self) -> bool {
        self.shared_key.is_some()
            || !self.clients.is_empty()
            || self
                .tls
                .as_ref()
                .is_some_and(|t| t.require_client_cert && t.client_ca.is_some())
    }
}

/// Where an error is: a byte offset (a syntax or type error), or a key its text starts with
/// (`alerting.min_severity: …`, found after parsing).
enum Placed {
    At(usize, String),
    Key(String),
}

/// 1-based line of a byte offset.
fn line_of(text: &str, offset: usize) -> usize {
    text.as_bytes()[..offset.min(text.len())]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

/// The line of the key an error names first (`retention.max_age: …`, `listen 0.0.0.0:1: …`):
/// the key's own line in its table, from the document's spans.
fn key_line(text: &str, what: &str) -> Option<usize> {
    let path = what.split([':', ' ', ',']).next()?;
    let doc = toml::de::DeTable::parse(text).ok()?;
    let mut table = doc.get_ref();
    let mut keys = path.split('.').peekable();
    while let Some(key) = keys.next() {
        let (k, v) = table.iter().find(|(k, _)| k.get_ref() == key)?;
        if keys.peek().is_none() {
            return Some(line_of(text, k.span().start));
        }
        match v.get_ref() {
            toml::de::DeValue::Table(t) => table = t,
            _ => return Some(line_of(text, k.span().start)),
        }
    }
    None
}

/// Whether every address `addr` resolves to is a loopback address.
pub fn is_loopback(addr: &str) -> Result<bool, String> {
    let addrs: Vec<SocketAddr> = addr
        .to_socket_addrs()
        .map_err(|e| format!("{addr}: {e}"))?
        .collect();
    Ok(!addrs.is_empty() && addrs.iter().all(|a| is_loopback_ip(a.ip())))
}

fn is_loopback_ip(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => v4.is_loopback(),
        IpAddr::V6(v6) => {
            v6.is_loopback() || v6.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback())
        }
    }
}

/// Durations in the collector's config and command line: the grammar the agent uses too
/// (`90s`, `1.5h`, `7d`, `2w`, `250ms`; a bare number is seconds).
pub use zpulse_proto::sdk::config::parse_duration;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("90"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_duration("1h"), Ok(Duration::from_secs(3600)));
        assert_eq!(parse_duration("7d"), Ok(Duration::from_secs(7 * 86400)));
        assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
        assert!(parse_duration("h").is_err());
        assert!(parse_duration("3y").is_err());
        assert!(parse_duration("99999999999999999999w").is_err());
        // The agent's grammar, so `1.5h` and `2w` mean the same in both.
        assert_eq!(parse_duration("1.5h"), Ok(Duration::from_secs(5400)));
        assert_eq!(parse_duration("2w"), Ok(Duration::from_secs(14 * 86400)));
    }

    #[test]
    fn file() {
        let c = Config::parse(
            "listen = \"127.0.0.1:1\"\ndb = \"x.db\"\nshared_key = \"k\"\nidle_timeout = \"1m\"\n\
             [retention]\nmax_age = \"1d\"\nmax_bytes = 1000000\n[clients]\nnas1 = \"k2\"\n",
            Path::new("/etc/z"),
        )
        .unwrap();
        assert_eq!(c.db, PathBuf::from("/etc/z/x.db"));
        assert_eq!(c.idle_timeout, Duration::from_secs(60));
        assert_eq!(c.retention.max_age, Some(Duration::from_secs(86400)));
        assert!(c.requires_auth());
        let e = Config::parse("lisen = \"x\"", Path::new(".")).unwrap_err();
        assert!(e.contains("lisen"), "{e}");
        // The short form of a client may write for its own name; the long one for its list.
        assert_eq!(c.clients["nas1"].hosts, ["nas1"]);
        let c = Config::parse(
            "[clients]\nnas1 = { key = \"k\", hosts = [\"nas1\", \"nas1-jail\"] }\n",
            Path::new("."),
        )
        .unwrap();
        assert_eq!(c.clients["nas1"].key, "k");
        assert_eq!(c.clients["nas1"].hosts, ["nas1", "nas1-jail"]);
    }

    #[test]
    fn errors_name_the_line_and_unknown_keys_are_refused() {
        let err = |text: &str| Config::parse(text, Path::new(".")).unwrap_err();
        // An unknown key, at any depth: refused, on its line.
        let e = err("db = \"x.db\"\n\nlisen = \"127.0.0.1:1\"\n");
        assert!(e.starts_with("3: ") && e.contains("lisen"), "{e}");
        let e = err("[retention]\nmax_age = \"1d\"\nmax_agee = \"2d\"\n");
        assert!(e.starts_with("3: ") && e.contains("max_agee"), "{e}");
        let e = err("[alerting]\nresend_every = \"1m\"\nalertmanagers = [\"http://a:1\"]\n");
        assert!(e.starts_with("3: ") && e.contains("alertmanagers"), "{e}");
        let e = err("[clients]\nnas1 = { key = \"k\", host = [\"x\"] }\n");
        assert!(e.starts_with("2: "), "{e}");
        // A value refused after parsing: the line of its key.
        let e = err("\n[alerting]\nmin_severity = \"loud\"\n");
        assert!(e.starts_with("3: alerting.min_severity"), "{e}");
        let e = err("# open\nlisten = \"0.0.0.0:24224\"\n");
        assert!(e.starts_with("2: listen"), "{e}");
        // The file's name leads, as compilers write it.
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("c.toml");
        std::fs::write(&file, "\nmax_connections = \"many\"\n").unwrap();
        let e = Config::load(&file).unwrap_err();
        assert!(e.starts_with(&format!("{}:2: ", file.display())), "{e}");
    }

    #[test]
    fn default_paths_per_system() {
        assert_eq!(
            default_paths(true),
            (
                "/var/db/zpulse-collector/events.db",
                "/usr/local/etc/zpulse-collector/zpulse-collector.toml"
            )
        );
        assert_eq!(
            default_paths(false),
            (
                "/var/lib/zpulse-collector/events.db",
                "/etc/zpulse-collector/zpulse-collector.toml"
            )
        );
    }

    #[test]
    fn listening_beyond_loopback_needs_authentication() {
        // The default is loopback, and needs nothing.
        let c = Config::parse("", Path::new(".")).unwrap();
        assert_eq!(c.listen, "127.0.0.1:24224");
        for open in ["0.0.0.0:24224", "[::]:24224", "192.0.2.1:24224"] {
            let e = Config::parse(&format!("listen = \"{open}\""), Path::new(".")).unwrap_err();
            assert!(
                e.contains("beyond loopback") && e.contains("insecure"),
                "{e}"
            );
            // Any of the three ways to authenticate, or the explicit escape hatch, is enough.
            for ok in [
                "shared_key = \"k\"",
                "[clients]\nnas1 = \"k\"",
                "insecure = true",
                "[tls]\ncert = \"c\"\nkey = \"k\"\nclient_ca = \"ca\"\nrequire_client_cert = true",
            ] {
                Config::parse(&format!("listen = \"{open}\"\n{ok}"), Path::new("."))
                    .unwrap_or_else(|e| panic!("{open} with {ok}: {e}"));
            }
            // TLS without required client certificates authenticates nobody.
            let e = Config::parse(
                &format!(
                    "listen = \"{open}\"\n[tls]\ncert = \"c\"\nkey = \"k\"\nclient_ca = \"ca\""
                ),
                Path::new("."),
            )
            .unwrap_err();
            assert!(e.contains("beyond loopback"), "{e}");
        }
        for lo in ["127.0.0.1:1", "[::1]:1", "localhost:1"] {
            Config::parse(&format!("listen = \"{lo}\""), Path::new("."))
                .unwrap_or_else(|e| panic!("{lo}: {e}"));
        }
        // The page: beyond loopback only with a token.
        let e = Config::parse("http = \"0.0.0.0:8024\"", Path::new(".")).unwrap_err();
        assert!(e.contains("http_token"), "{e}");
        Config::parse(
            "http = \"0.0.0.0:8024\"\nhttp_token = \"t\"",
            Path::new("."),
        )
        .unwrap();
        let e = Config::parse(
            "[tls]\ncert = \"c\"\nkey = \"k\"\nrequire_client_cert = true",
            Path::new("."),
        )
        .unwrap_err();
        assert!(e.contains("client_ca"), "{e}");
    }
}
