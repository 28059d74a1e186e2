//! `zpulse-collector.toml`: every key has a default; the command line overrides the file.
//!
//! ```toml
//! listen = "0.0.0.0:24224"
//! db = "/var/lib/zpulse-collector/events.db"
//! http = "127.0.0.1:8024"            # the read-only web page; absent: none
//! self_hostname = "collector"        # the name in PONG; must differ from the agents'
//! shared_key = "secret"              # absent: no handshake
//! max_connections = 256
//! max_frame_bytes = 8388608
//! max_inflated_bytes = 33554432
//! max_buffered_bytes = 268435456   # unfinished messages of all connections together
//! read_timeout = "30s"               # a message that started must complete within this
//! idle_timeout = "5m"                # a connection with nothing to say is closed
//! [clients]                          # per-client keys, by the hostname sent in PING
//! nas1 = "another-secret"
//! [users]                            # optional user authentication (HELO auth salt)
//! alice = "password"
//! [retention]
//! max_age = "30d"
//! max_bytes = 10737418240
//! dedup_window = "7d"
//! [tls]
//! cert = "/etc/zpulse-collector/cert.pem"
//! key = "/etc/zpulse-collector/key.pem"
//! ```

use crate::store::Retention;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

pub const DEFAULT_DB: &str = "/var/lib/zpulse-collector/events.db";
pub const DEFAULT_CONFIG: &str = "/etc/zpulse-collector/zpulse-collector.toml";

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    pub listen: String,
    pub db: PathBuf,
    pub http: Option<String>,
    pub self_hostname: String,
    pub shared_key: Option<String>,
    pub clients: BTreeMap<String, String>,
    pub users: BTreeMap<String, String>,
    pub max_connections: usize,
    pub max_frame_bytes: usize,
    pub max_inflated_bytes: usize,
    /// Bytes of unfinished messages held for all connections together: past it, the
    /// connection that would exceed it is closed (its agent resends after reconnecting).
    pub max_buffered_bytes: usize,
    pub read_timeout: Duration,
    pub idle_timeout: Duration,
    pub retention: Retention,
    pub tls: Option<Tls>,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Tls {
    pub cert: PathBuf,
    pub key: PathBuf,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            listen: "0.0.0.0:24224".into(),
            db: DEFAULT_DB.into(),
            http: None,
            self_hostname: "zpulse-collector".into(),
            shared_key: None,
            clients: BTreeMap::new(),
            users: BTreeMap::new(),
            max_connections: 256,
            max_frame_bytes: 8 << 20,
            max_inflated_bytes: 32 << 20,
            max_buffered_bytes: 256 << 20,
            read_timeout: Duration::from_secs(30),
            idle_timeout: Duration::from_secs(300),
            retention: Retention::default(),
            tls: None,
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    listen: Option<String>,
    db: Option<PathBuf>,
    http: Option<String>,
    self_hostname: Option<String>,
    shared_key: Option<String>,
    #[serde(default)]
    clients: BTreeMap<String, String>,
    #[serde(default)]
    users: BTreeMap<String, String>,
    max_connections: Option<usize>,
    max_frame_bytes: Option<usize>,
    max_inflated_bytes: Option<usize>,
    max_buffered_bytes: Option<usize>,
    read_timeout: Option<String>,
    idle_timeout: Option<String>,
    retention: Option<RetentionFile>,
    tls: Option<Tls>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RetentionFile {
    max_age: Option<String>,
    max_bytes: Option<u64>,
    dedup_window: Option<String>,
}

impl Config {
    /// Reads a config file; relative paths in it are taken from its directory.
    pub fn load(path: &Path) -> Result<Config, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        Config::parse(&text, path.parent().unwrap_or(Path::new(".")))
            .map_err(|e| format!("{}: {e}", path.display()))
    }

    pub fn parse(text: &str, base: &Path) -> Result<Config, String> {
        let f: File = toml::from_str(text).map_err(|e| e.to_string())?;
        let mut c = Config::default();
        let dur = |key: &str, v: &Option<String>, d: Duration| match v {
            Some(s) => parse_duration(s).map_err(|e| format!("{key}: {e}")),
            None => Ok(d),
        };
        if let Some(v) = f.listen {
            c.listen = v;
        }
        if let Some(v) = f.db {
            c.db = base.join(v);
        }
        c.http = f.http;
        if let Some(v) = f.self_hostname {
            c.self_hostname = v;
        }
        c.shared_key = f.shared_key;
        c.clients = f.clients;
        c.users = f.users;
        c.max_connections = f.max_connections.unwrap_or(c.max_connections);
        c.max_frame_bytes = f.max_frame_bytes.unwrap_or(c.max_frame_bytes);
        c.max_inflated_bytes = f.max_inflated_bytes.unwrap_or(c.max_inflated_bytes);
        c.max_buffered_bytes = f.max_buffered_bytes.unwrap_or(c.max_buffered_bytes);
        c.read_timeout = dur("read_timeout", &f.read_timeout, c.read_timeout)?;
        c.idle_timeout = dur("idle_timeout", &f.idle_timeout, c.idle_timeout)?;
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
        });
        c.check()?;
        Ok(c)
    }

    pub fn check(&self) -> Result<(), String> {
        if self.max_connections == 0 {
            return Err("max_connections: at least 1".into());
        }
        if self.max_frame_bytes < 1024 {
            return Err("max_frame_bytes: at least 1024".into());
        }
        if self.read_timeout.is_zero() || self.idle_timeout.is_zero() {
            return Err("read_timeout, idle_timeout: more than 0s".into());
        }
        if self.self_hostname.is_empty() {
            return Err("self_hostname: empty".into());
        }
        Ok(())
    }

    /// Whether clients must handshake.
    pub fn requires_auth(&self) -> bool {
        self.shared_key.is_some() || !self.clients.is_empty() || !self.users.is_empty()
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
    }
}
