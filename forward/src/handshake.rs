//! The shared-key handshake (`HELO` / `PING` / `PONG`), for both sides.
//!
//! It happens only when the server has a shared key:
//!
//! 1. server → `["HELO", {nonce, auth, keepalive}]`: `nonce` random bytes; `auth` a salt for
//!    user authentication (empty: none);
//! 2. client → `["PING", hostname, salt, hex(sha512(salt‖hostname‖nonce‖key)), user,
//!    hex(sha512(auth‖user‖password))]`;
//! 3. server → `["PONG", ok, reason, hostname, hex(sha512(salt‖server_hostname‖nonce‖key))]`.
//!
//! The client must check the `PONG` digest too ([`Pong::verify`]): that is what proves the
//! server knows the key (mutual authentication). Digests cover the bytes exactly as sent; the
//! salt goes out as a `str` of hex digits because a `bin`/`str` mismatch has broken Fluent Bit
//! handshakes. The two hostnames must differ (Fluentd and the Node server refuse "same
//! hostname", a sign of a loop). The random bytes (nonce, salt) are the caller's: this module
//! does no I/O.

use super::msgpack::{
    write_array_len, write_bin, write_bool, write_map_len, write_str, write_str_bytes,
};
use sha2::{Digest, Sha512};

/// The server's greeting.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Helo {
    /// Random bytes, new for each connection.
    pub nonce: Vec<u8>,
    /// Salt for user authentication; empty when the server has no user table.
    pub auth: Vec<u8>,
    /// `false`: the server takes one request per connection.
    pub keepalive: bool,
}

impl Helo {
    /// `["HELO", {"nonce": bin, "auth": bin, "keepalive": bool}]`.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(64 + self.nonce.len() + self.auth.len());
        write_array_len(&mut out, 2);
        write_str(&mut out, "HELO");
        write_map_len(&mut out, 3);
        write_str(&mut out, "nonce");
        write_bin(&mut out, &self.nonce);
        write_str(&mut out, "auth");
        write_bin(&mut out, &self.auth);
        write_str(&mut out, "keepalive");
        write_bool(&mut out, self.keepalive);
        out
    }

    /// Whether the server also asks for a username and password.
    pub fn requires_user(&self) -> bool {
        !self.auth.is_empty()
    }
}

/// The client's answer to `HELO`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ping {
    /// The client's hostname (Fluentd's `self_hostname`).
    pub hostname: String,
    /// The salt as sent (a `str` from zpulse; other clients may send `bin`).
    pub salt: Vec<u8>,
    /// Lower-case hex SHA-512 of salt ‖ hostname ‖ nonce ‖ shared key.
    pub shared_key_digest: String,
    /// Empty without user authentication.
    pub username: String,
    /// Lower-case hex SHA-512 of auth salt ‖ username ‖ password; empty without a user.
    pub password_digest: String,
}

impl Ping {
    /// Client side: answers `helo`. `salt` is fresh per connection: [`salt_text`] of 16
    /// random bytes. `user` is `(username, password)` when the server asks for one.
    pub fn answer(
        helo: &Helo,
        hostname: &str,
        salt: &str,
        shared_key: &str,
        user: Option<(&str, &str)>,
    ) -> Ping {
        let (username, password_digest) = match user {
            Some((name, password)) => {
                (name.to_owned(), password_digest(&helo.auth, name, password))
            }
            None => (String::new(), String::new()),
        };
        Ping {
            hostname: hostname.to_owned(),
            salt: salt.as_bytes().to_vec(),
            shared_key_digest: shared_key_digest(
                salt.as_bytes(),
                hostname,
                &helo.nonce,
                shared_key,
            ),
            username,
            password_digest,
        }
    }

    /// `["PING", hostname, salt, digest, username, password_digest]`.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(256);
        write_array_len(&mut out, 6);
        write_str(&mut out, "PING");
        write_str(&mut out, &self.hostname);
        if std::str::from_utf8(&self.salt).is_ok() {
            write_str_bytes(&mut out, &self.salt);
        } else {
            write_bin(&mut out, &self.salt);
        }
        write_str(&mut out, &self.shared_key_digest);
        write_str(&mut out, &self.username);
        write_str(&mut out, &self.password_digest);
        out
    }

    /// Server side: checks this `PING` against the `helo` it answers and returns the `PONG`
    /// to send (refusing ones carry the reason). `password_of` looks a user up; it is asked
    /// only when `helo` required user authentication.
    pub fn check(
        &self,
        helo: &Helo,
        server_hostname: &str,
        shared_key: &str,
        password_of: &dyn Fn(&str) -> Option<String>,
    ) -> Pong {
        let refuse = |reason: &str| Pong {
            ok: false,
            reason: reason.to_owned(),
            hostname: server_hostname.to_owned(),
            shared_key_digest: String::new(),
        };
        if self.hostname == server_hostname {
            return refuse("same hostname between input and output: invalid configuration");
        }
        let expected = shared_key_digest(&self.salt, &self.hostname, &helo.nonce, shared_key);
        if !same(&expected, &self.shared_key_digest) {
            return refuse("shared key mismatch");
        }
        if helo.requires_user() {
            let ok = !self.username.is_empty()
                && password_of(&self.username).is_some_and(|password| {
                    same(
                        &password_digest(&helo.auth, &self.username, &password),
                        &self.password_digest,
                    )
                });
            if !ok {
                return refuse("username/password mismatch");
            }
        }
        Pong {
            ok: true,
            reason: String::new(),
            hostname: server_hostname.to_owned(),
            shared_key_digest: shared_key_digest(
                &self.salt,
                server_hostname,
                &helo.nonce,
                shared_key,
            ),
        }
    }
}

/// The server's verdict.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pong {
    pub ok: bool,
    /// Why not, when `ok` is false.
    pub reason: String,
    /// The server's hostname.
    pub hostname: String,
    /// Lower-case hex SHA-512 of salt ‖ server hostname ‖ nonce ‖ shared key.
    pub shared_key_digest: String,
}

impl Pong {
    /// `["PONG", ok, reason, hostname, digest]`.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(192);
        write_array_len(&mut out, 5);
        write_str(&mut out, "PONG");
        write_bool(&mut out, self.ok);
        write_str(&mut out, &self.reason);
        write_str(&mut out, &self.hostname);
        write_str(&mut out, &self.shared_key_digest);
        out
    }

    /// Client side: accepts this `PONG` only if the server said yes *and* proved it knows the
    /// key, for the `ping` this client sent after `helo`.
    pub fn verify(&self, ping: &Ping, helo: &Helo, shared_key: &str) -> Result<(), String> {
        if !self.ok {
            return Err(format!("the server refused the handshake: {}", self.reason));
        }
        if self.hostname == ping.hostname {
            return Err(format!(
                "the server calls itself {:?}, as this agent does: set a different self_hostname",
                self.hostname
            ));
        }
        let expected = shared_key_digest(&ping.salt, &self.hostname, &helo.nonce, shared_key);
        if !same(&expected, &self.shared_key_digest) {
            return Err("the server's PONG digest does not match the shared key: \
                        it does not know the key (or is not the server configured)"
                .into());
        }
        Ok(())
    }
}

/// Lower-case hex SHA-512 of salt ‖ hostname ‖ nonce ‖ shared key.
pub fn shared_key_digest(salt: &[u8], hostname: &str, nonce: &[u8], shared_key: &str) -> String {
    let mut h = Sha512::new();
    h.update(salt);
    h.update(hostname.as_bytes());
    h.update(nonce);
    h.update(shared_key.as_bytes());
    hex(&h.finalize())
}

/// Lower-case hex SHA-512 of auth salt ‖ username ‖ password.
pub fn password_digest(auth_salt: &[u8], username: &str, password: &str) -> String {
    let mut h = Sha512::new();
    h.update(auth_salt);
    h.update(username.as_bytes());
    h.update(password.as_bytes());
    hex(&h.finalize())
}

/// The salt as zpulse sends it: 32 lower-case hex digits of 16 random bytes.
pub fn salt_text(random: [u8; 16]) -> String {
    hex(&random)
}

fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for &b in bytes {
        s.push(DIGITS[usize::from(b >> 4)] as char);
        s.push(DIGITS[usize::from(b & 0x0f)] as char);
    }
    s
}

/// Compares digests without stopping at the first difference, so the time taken does not
/// tell an attacker how many leading characters they guessed.
fn same(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .fold(0u8, |acc, (x, y)| acc | (x ^ y))
            == 0
}
