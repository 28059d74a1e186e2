//! The collector's outgoing HTTP: one request per connection (`Connection: close`), plain or
//! TLS (rustls: a CA file or the system's bundle, optionally a client certificate), with
//! basic or bearer authorization. What alerting needs to talk to Alertmanager and webhooks,
//! and nothing more: no redirects, no keep-alive, bounded replies, a timeout on every step.

use crate::tls::certificates;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{PrivateKeyDer, ServerName};
use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// Connect, write and read, each at most this long.
pub const TIMEOUT: Duration = Duration::from_secs(10);
/// A reply larger than this is cut (Alertmanager's answers are a few hundred bytes).
const MAX_REPLY: u64 = 1 << 20;

/// Where system CA bundles are, first found wins: Debian/Ubuntu, RHEL, FreeBSD, others.
const SYSTEM_BUNDLES: &[&str] = &[
    "/etc/ssl/certs/ca-certificates.crt",
    "/etc/pki/tls/certs/ca-bundle.crt",
    "/usr/local/share/certs/ca-root-nss.crt",
    "/etc/ssl/cert.pem",
];

/// An `http://` or `https://` URL: `host:port` (the port defaulted by scheme) and a path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Url {
    pub tls: bool,
    /// `host:port`, as connected to.
    pub authority: String,
    /// The host alone (the TLS server name and the `Host` header's name).
    pub host: String,
    /// Without a trailing `/`; empty for the root.
    pub path: String,
}

impl Url {
    pub fn parse(url: &str) -> Result<Url, String> {
        let (tls, rest) = if let Some(r) = url.strip_prefix("https://") {
            (true, r)
        } else if let Some(r) = url.strip_prefix("http://") {
            (false, r)
        } else {
            return Err(format!(
                "{url:?}: give http://HOST:PORT or https://HOST[:PORT]"
            ));
        };
        let (authority, path) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, ""),
        };
        if authority.is_empty() || authority.contains('@') {
            return Err(format!(
                "{url:?}: give http://HOST:PORT or https://HOST[:PORT] (credentials go in their \
                 own settings)"
            ));
        }
        // `[::1]:9093`, `host:9093`, `host`.
        let has_port = match authority.rfind(']') {
            Some(close) => authority[close..].contains(':'),
            None => authority.contains(':'),
        };
        if !has_port && !tls {
            return Err(format!("{url:?}: give http://HOST:PORT"));
        }
        let authority = if has_port {
            authority.to_owned()
        } else {
            format!("{authority}:443")
        };
        let host = match authority.rfind(':') {
            Some(i) => authority[..i].trim_start_matches('[').trim_end_matches(']'),
            None => &authority,
        }
        .to_owned();
        if path.contains(['\r', '\n', ' ']) {
            return Err(format!("{url:?}: the path has spaces or line breaks"));
        }
        Ok(Url {
            tls,
            authority,
            host,
            path: path.trim_end_matches('/').to_owned(),
        })
    }
}

/// How to authorize requests.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Auth {
    Basic { user: String, password: String },
    Bearer(String),
}

impl Auth {
    fn header(&self) -> String {
        match self {
            Auth::Basic { user, password } => {
                format!("Basic {}", base64(format!("{user}:{password}").as_bytes()))
            }
            Auth::Bearer(token) => format!("Bearer {token}"),
        }
    }
}

/// RFC 4648 base64 with padding (for basic authorization only).
fn base64(bytes: &[u8]) -> String {
    const ABC: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for (i, shift) in [18, 12, 6, 0].into_iter().enumerate() {
            if i <= chunk.len() {
                out.push(ABC[(n >> shift) as usize & 63] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// TLS settings of an endpoint: PEM files. Without `ca`, the system's bundle is trusted.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TlsFiles {
    pub ca: Option<PathBuf>,
    pub cert: Option<PathBuf>,
    pub key: Option<PathBuf>,
}

impl TlsFiles {
    /// Reads every file; an error names the setting (`what` is its prefix) and the file.
    pub fn client_config(&self, what: &str) -> Result<Arc<rustls::ClientConfig>, String> {
        let mut roots = rustls::RootCertStore::empty();
        let ca = match &self.ca {
            Some(ca) => ca.clone(),
            None => SYSTEM_BUNDLES
                .iter()
                .map(PathBuf::from)
                .find(|p| p.is_file())
                .ok_or_else(|| format!("{what}_ca: not set, and no system CA bundle found"))?,
        };
        for c in certificates(&ca, &format!("{what}_ca"))? {
            // A system bundle may hold a certificate webpki cannot parse: skip it there.
            if let Err(e) = roots.add(c)
                && self.ca.is_some()
            {
                return Err(format!("{what}_ca {}: {e}", ca.display()));
            }
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| format!("TLS: {e}"))?
            .with_root_certificates(roots);
        let config = match (&self.cert, &self.key) {
            (None, None) => builder.with_no_client_auth(),
            (Some(cert), Some(key)) => {
                let certs = certificates(cert, &format!("{what}_cert"))?;
                let key = PrivateKeyDer::from_pem_file(key)
                    .map_err(|e| format!("{what}_key {}: {e}", key.display()))?;
                builder
                    .with_client_auth_cert(certs, key)
                    .map_err(|e| format!("{what}_cert: {e}"))?
            }
            _ => return Err(format!("{what}_cert and {what}_key: give both or neither")),
        };
        Ok(Arc::new(config))
    }
}

/// An endpoint to send to: its URL, its TLS client (for `https://`) and authorization.
#[derive(Clone)]
pub struct Endpoint {
    pub url: Url,
    tls: Option<Arc<rustls::ClientConfig>>,
    auth: Option<Auth>,
}

impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Endpoint({:?})", self.url)
    }
}

/// A reply: status code and body.
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub body: Vec<u8>,
}

impl Reply {
    pub fn ok(&self) -> bool {
        (200..300).contains(&self.status)
    }
}

impl Endpoint {
    /// `tls` is read only for an `https://` URL.
    pub fn new(
        url: &str,
        tls: &TlsFiles,
        auth: Option<Auth>,
        what: &str,
    ) -> Result<Endpoint, String> {
        let url = Url::parse(url).map_err(|e| format!("{what}: {e}"))?;
        let tls = if url.tls {
            Some(tls.client_config(what)?)
        } else {
            None
        };
        Ok(Endpoint { url, tls, auth })
    }

    /// Sends one request (`path` is appended to the URL's path) and reads the reply.
    pub fn request(
        &self,
        method: &str,
        path: &str,
        body: Option<&[u8]>,
        headers: &[(&str, String)],
    ) -> Result<Reply, String> {
        let name = &self.url.authority;
        let addr = name
            .to_socket_addrs()
            .map_err(|e| format!("{name}: {e}"))?
            .next()
            .ok_or_else(|| format!("{name}: no address"))?;
        let tcp = TcpStream::connect_timeout(&addr, TIMEOUT).map_err(|e| format!("{name}: {e}"))?;
        tcp.set_read_timeout(Some(TIMEOUT))
            .and_then(|()| tcp.set_write_timeout(Some(TIMEOUT)))
            .map_err(|e| format!("{name}: {e}"))?;
        let mut head = format!(
            "{method} {}{path} HTTP/1.1\r\nHost: {name}\r\nConnection: close\r\n\
             User-Agent: zpulse-collector\r\nAccept: application/json\r\n",
            if self.url.path.is_empty() && path.is_empty() {
                "/"
            } else {
                &self.url.path
            },
        );
        if let Some(b) = body {
            head.push_str(&format!(
                "Content-Type: application/json\r\nContent-Length: {}\r\n",
                b.len()
            ));
        }
        if let Some(a) = &self.auth {
            head.push_str(&format!("Authorization: {}\r\n", a.header()));
        }
        for (k, v) in headers {
            head.push_str(&format!("{k}: {v}\r\n"));
        }
        head.push_str("\r\n");
        let reply = match &self.tls {
            None => exchange(tcp, head.as_bytes(), body, name)?,
            Some(config) => {
                let server = ServerName::try_from(self.url.host.clone())
                    .map_err(|e| format!("{name}: {e}"))?;
                let conn = rustls::ClientConnection::new(config.clone(), server)
                    .map_err(|e| format!("{name}: TLS: {e}"))?;
                exchange(
                    rustls::StreamOwned::new(conn, tcp),
                    head.as_bytes(),
                    body,
                    name,
                )?
            }
        };
        parse_reply(&reply).ok_or_else(|| format!("{name}: no HTTP status in the reply"))
    }
}

fn exchange(
    mut s: impl Read + Write,
    head: &[u8],
    body: Option<&[u8]>,
    name: &str,
) -> Result<Vec<u8>, String> {
    s.write_all(head)
        .and_then(|()| s.write_all(body.unwrap_or_default()))
        .and_then(|()| s.flush())
        .map_err(|e| format!("{name}: {e}"))?;
    let mut reply = Vec::new();
    // A peer that closes without TLS close_notify, or a read error after the reply came,
    // still leaves what was read.
    if let Err(e) = s.take(MAX_REPLY).read_to_end(&mut reply)
        && reply.is_empty()
    {
        return Err(format!("{name}: {e}"));
    }
    Ok(reply)
}

/// Status and body of an HTTP/1.1 reply (chunked or not).
fn parse_reply(reply: &[u8]) -> Option<Reply> {
    let split = reply.windows(4).position(|w| w == b"\r\n\r\n")?;
    let head = std::str::from_utf8(&reply[..split]).ok()?;
    let status = head.split_whitespace().nth(1)?.parse().ok()?;
    let raw = &reply[split + 4..];
    let chunked = head.lines().any(|l| {
        l.split_once(':').is_some_and(|(k, v)| {
            k.trim().eq_ignore_ascii_case("transfer-encoding")
                && v.trim().eq_ignore_ascii_case("chunked")
        })
    });
    let body = if chunked { dechunk(raw) } else { raw.to_vec() };
    Some(Reply { status, body })
}

/// A chunked body's data (RFC 9112 §7.1); what cannot be read ends it.
fn dechunk(mut raw: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    while let Some(eol) = raw.windows(2).position(|w| w == b"\r\n") {
        let size = std::str::from_utf8(&raw[..eol])
            .ok()
            .and_then(|s| usize::from_str_radix(s.split(';').next()?.trim(), 16).ok());
        let Some(size) = size.filter(|&n| n > 0) else {
            break;
        };
        let start = eol + 2;
        let Some(data) = raw.get(start..start + size) else {
            break;
        };
        out.extend_from_slice(data);
        raw = raw.get(start + size + 2..).unwrap_or_default();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls() {
        let u = Url::parse("https://am.example/alertmanager/").unwrap();
        assert_eq!(
            (
                u.tls,
                u.authority.as_str(),
                u.host.as_str(),
                u.path.as_str()
            ),
            (true, "am.example:443", "am.example", "/alertmanager")
        );
        let u = Url::parse("http://[::1]:9093").unwrap();
        assert_eq!((u.host.as_str(), u.path.as_str()), ("::1", ""));
        assert!(Url::parse("http://am.example").is_err());
        assert!(Url::parse("ftp://x:1").is_err());
        assert!(Url::parse("http://user:pw@x:1").is_err());
    }

    #[test]
    fn base64_of_rfc_4648_vectors() {
        // RFC 4648 §10.
        for (plain, coded) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ] {
            assert_eq!(base64(plain.as_bytes()), coded);
        }
    }

    #[test]
    fn replies() {
        let r = parse_reply(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}").unwrap();
        assert_eq!((r.status, r.body.as_slice()), (200, b"{}".as_slice()));
        let r = parse_reply(
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n4\r\n{\"a\"\r\n2\r\n:1\r\n1\r\n}\r\n0\r\n\r\n",
        )
        .unwrap();
        assert_eq!(r.body, b"{\"a\":1}");
        assert!(parse_reply(b"garbage").is_none());
    }
}
