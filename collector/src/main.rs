//! `zpulse-collector serve | query | hosts | open`.

use clap::{Parser, Subcommand, ValueEnum};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{SystemTime, UNIX_EPOCH};
use zpulse_collector::config::{Config, DEFAULT_CONFIG, parse_duration};
use zpulse_collector::server::{Server, log};
use zpulse_collector::store::{Filter, Store, parse_severity};
use zpulse_collector::{alert, query};

#[derive(Parser)]
#[command(
    name = "zpulse-collector",
    version,
    about = "Receives zpulse events over Fluent Forward, stores them in SQLite, answers queries",
    after_help = "Exit status: 0 done (also when the reader of the output went away, as in \
                  `hosts | head`, and for serve stopped by SIGTERM/SIGINT); 1 a failure: an ack \
                  or unack of an unknown host, check or subject, or not done at every \
                  Alertmanager, a configuration refused, a database missing or unreadable, a \
                  listener that cannot be bound; 2 a command line that does not parse."
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Clone, Copy, ValueEnum, PartialEq, Eq)]
enum Format {
    /// Columns for people.
    Table,
    /// For programs.
    Json,
}

/// `ack --reason`: a silence says why.
fn reason_arg(text: &str) -> Result<String, String> {
    if text.trim().is_empty() {
        return Err("say why".into());
    }
    Ok(text.to_string())
}

/// `--since`, `--until`: the one duration grammar of the config file and the agent.
fn duration_arg(text: &str) -> Result<std::time::Duration, String> {
    parse_duration(text)
}

#[derive(clap::Args)]
struct DbArgs {
    /// The database (default: the config file's `db`, else /var/lib/zpulse-collector/events.db;
    /// on FreeBSD /var/db/zpulse-collector/events.db).
    #[arg(long, value_name = "FILE")]
    db: Option<PathBuf>,
    /// The config file (default: /etc/zpulse-collector/zpulse-collector.toml when it exists;
    /// on FreeBSD /usr/local/etc/zpulse-collector/zpulse-collector.toml).
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// table for people, or json.
    #[arg(long, value_enum, default_value = "table")]
    format: Format,
}

/// One finding, who acts on it, and where it is stored (`ack`, `unack`).
#[derive(clap::Args)]
struct FindingArgs {
    /// The host the finding is about, as `hosts` lists it.
    host: String,
    /// The check that raised it (`pool-health`, `special-fill`, …).
    check: String,
    /// What it is about, as `open` lists it (`tank`, `tank/special`, …).
    subject: String,
    /// Who (default: $SUDO_USER, else $USER).
    #[arg(long, value_name = "NAME")]
    by: Option<String>,
    /// The database (default: the config file's `db`).
    #[arg(long, value_name = "FILE")]
    db: Option<PathBuf>,
    /// The config file, for its database and its Alertmanagers (default: the system's, when
    /// it exists).
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
}

impl FindingArgs {
    fn key(&self) -> (&str, &str, &str) {
        (&self.host, &self.check, &self.subject)
    }
}

#[derive(Subcommand)]
enum Cmd {
    /// Receive Forward events and store them.
    Serve {
        /// Forward listener, `host:port` (default 127.0.0.1:24224; beyond loopback only with
        /// client authentication or `insecure = true`).
        #[arg(long, value_name = "ADDR")]
        listen: Option<String>,
        /// The database, created when missing (default: the config file's `db`, else
        /// /var/lib/zpulse-collector/events.db; on FreeBSD /var/db/zpulse-collector/events.db).
        #[arg(long, value_name = "FILE")]
        db: Option<PathBuf>,
        /// The config file, read again on SIGHUP (default:
        /// /etc/zpulse-collector/zpulse-collector.toml when it exists; on FreeBSD
        /// /usr/local/etc/zpulse-collector/zpulse-collector.toml).
        #[arg(long, value_name = "FILE")]
        config: Option<PathBuf>,
        /// Serve the read-only web page at `host:port`.
        #[arg(long, value_name = "ADDR")]
        http: Option<String>,
    },
    /// Stored events, newest first.
    Query {
        #[command(flatten)]
        db: DbArgs,
        /// Only this host's events.
        #[arg(long, value_name = "NAME")]
        host: Option<String>,
        /// Only this check's events.
        #[arg(long, value_name = "NAME")]
        check: Option<String>,
        /// This severity or worse: info, warning, critical.
        #[arg(long, value_name = "LEVEL")]
        severity: Option<String>,
        /// Only events newer than this: 90s, 15m, 1h, 7d.
        #[arg(long, value_name = "DURATION", value_parser = duration_arg)]
        since: Option<std::time::Duration>,
        /// finding, metrics, agent, zevent (kernel events) or foreign (repeatable).
        #[arg(long, value_name = "KIND")]
        kind: Vec<String>,
        /// At most this many events, newest first.
        #[arg(long, value_name = "N", default_value_t = 100)]
        limit: usize,
    },
    /// Every host: last seen, agent version, open findings.
    Hosts {
        #[command(flatten)]
        db: DbArgs,
    },
    /// Acknowledges one finding: marked on the page, in `open` and `/api/open`, and
    /// silenced at each Alertmanager (for good, or `--until`).
    Ack {
        #[command(flatten)]
        finding: FindingArgs,
        /// Why (Alertmanager's silence comment; shown with the finding).
        #[arg(long, short = 'm', value_name = "TEXT", value_parser = reason_arg)]
        reason: String,
        /// For this long only: 90s, 15m, 1h, 7d.
        #[arg(long, value_name = "DURATION", value_parser = duration_arg)]
        until: Option<std::time::Duration>,
    },
    /// Removes an ack, and expires its Alertmanager silences.
    Unack {
        #[command(flatten)]
        finding: FindingArgs,
    },
    /// Reads the configuration as `serve` would (TLS files included) and says what is wrong,
    /// with file and line; exits 0 when `serve` would take it.
    CheckConfig {
        /// Default: the system's config file (FreeBSD /usr/local/etc/zpulse-collector, else
        /// /etc/zpulse-collector), when it exists.
        #[arg(long, value_name = "FILE")]
        config: Option<PathBuf>,
        /// As `serve --listen` would override it.
        #[arg(long, value_name = "ADDR")]
        listen: Option<String>,
        /// As `serve --db` would override it.
        #[arg(long, value_name = "FILE")]
        db: Option<PathBuf>,
    },
    /// Open findings, worst first.
    Open {
        #[command(flatten)]
        db: DbArgs,
        /// Only this host's findings.
        #[arg(long, value_name = "NAME")]
        host: Option<String>,
    },
}

/// Exit status, as for the agent (zpulse-collector(8), docs/commands.md): 0 done, 1 a
/// failure (the message says what), 2 a command line that does not parse — clap's, before
/// anything runs, so every option's value is checked by its parser.
fn main() -> ExitCode {
    match run(Cli::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("zpulse-collector: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Who runs the command: the user behind sudo, else the user.
fn invoking_user() -> String {
    ["SUDO_USER", "USER", "LOGNAME"]
        .iter()
        .find_map(|v| std::env::var(v).ok().filter(|u| !u.is_empty()))
        .unwrap_or_else(|| "unknown".into())
}

/// The store to ack in, and the config (for its Alertmanagers). An unknown host, check or
/// subject is refused, naming which.
fn finding_store(
    db: Option<PathBuf>,
    config: Option<&Path>,
    key: (&str, &str, &str),
) -> Result<(Store, Config), String> {
    let config = load_config(config)?;
    let db = db.unwrap_or_else(|| config.db.clone());
    if !db.exists() {
        return Err(format!("{}: no database there", db.display()));
    }
    let store = Store::open(&db)?;
    let (host, check, subject) = key;
    if store.finding(key)?.is_none() {
        let p = query::printable;
        let why = if store.host(host)?.is_none() {
            format!("no host {} in {}", p(host), db.display())
        } else if !store
            .findings(Some(host), false)?
            .iter()
            .any(|f| f.check == check)
        {
            format!("host {} has no finding of check {}", p(host), p(check))
        } else {
            format!(
                "host {} has no finding of {} about {}",
                p(host),
                p(check),
                p(subject)
            )
        };
        return Err(why);
    }
    Ok((store, config))
}

fn now_s() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

fn load_config(path: Option<&Path>) -> Result<Config, String> {
    match path {
        Some(p) => Config::load(p),
        None if Path::new(DEFAULT_CONFIG).exists() => Config::load(Path::new(DEFAULT_CONFIG)),
        None => Ok(Config::default()),
    }
}

/// The database to read, and the config it came from (for its thresholds). A `--db` given
/// without `--config` reads the default config only when it exists.
fn open_db(a: &DbArgs) -> Result<(Store, Config), String> {
    let config = load_config(a.config.as_deref())?;
    let db = a.db.clone().unwrap_or_else(|| config.db.clone());
    Ok((Store::open_read_only(&db)?, config))
}

/// Writes to stdout. A reader that went away (`hosts | head`) ends the output quietly:
/// what it did not read, it did not want.
fn emit(text: &str) -> Result<(), String> {
    use std::io::Write as _;
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        Err(e) => Err(format!("stdout: {e}")),
    }
}

fn emit_json(v: &serde_json::Value) -> Result<(), String> {
    emit(&format!(
        "{}\n",
        serde_json::to_string_pretty(v).unwrap_or_default()
    ))
}

fn run(cli: Cli) -> Result<(), String> {
    match cli.cmd {
        Cmd::Serve {
            listen,
            db,
            config,
            http,
        } => {
            // The command line wins over the file, now and at every reload.
            let resolve = move || -> Result<Config, String> {
                let mut c = load_config(config.as_deref())?;
                if let Some(l) = &listen {
                    c.listen = l.clone();
                }
                if let Some(d) = &db {
                    c.db = d.clone();
                }
                if http.is_some() {
                    c.http = http.clone();
                }
                Ok(c)
            };
            Ok(serve(resolve()?, resolve)?)
        }
        Cmd::Query {
            db,
            host,
            check,
            severity,
            since,
            kind,
            limit,
        } => {
            let (store, _) = open_db(&db)?;
            let since_ts = since.map(|s| (now_s() - s.as_secs() as i64) * 1_000_000_000);
            let f = Filter {
                host,
                check,
                min_severity: severity.as_deref().map(parse_severity).transpose()?,
                kinds: (!kind.is_empty()).then_some(kind),
                since_ts,
                limit,
                oldest_first: false,
                bounded: false,
            };
            let rows = store.events(&f)?;
            Ok(match db.format {
                Format::Json => emit(&format!("{}\n", query::events_json(&rows, true))),
                Format::Table => emit(&query::events_table(&rows)),
            }?)
        }
        Cmd::Hosts { db } => {
            let (store, config) = open_db(&db)?;
            let rows = store.hosts()?;
            let skew = config.max_clock_skew.as_secs() as i64;
            Ok(match db.format {
                Format::Json => emit_json(&query::hosts_json(&rows, skew, query::Audience::Admin)),
                Format::Table => emit(&query::hosts_table(&rows, now_s(), skew)),
            }?)
        }
        Cmd::Ack {
            finding,
            reason,
            until,
        } => ack(finding, reason, until),
        Cmd::Unack { finding } => unack(finding),
        Cmd::CheckConfig { config, listen, db } => {
            let mut c = load_config(config.as_deref())?;
            if let Some(l) = listen {
                c.listen = l;
            }
            if let Some(d) = db {
                c.db = d;
            }
            // What `serve` checks of a command line's overrides.
            c.check()?;
            if let Some(t) = &c.tls {
                zpulse_collector::tls::server_config(t)?;
            }
            c.alerting.endpoints()?;
            emit(&format!(
                "ok: forward {}, database {}{}\n",
                c.listen,
                c.db.display(),
                c.http
                    .as_ref()
                    .map_or(String::new(), |h| format!(", page {h}"))
            ))?;
            Ok(())
        }
        Cmd::Open { db, host } => {
            let rows = open_db(&db)?.0.open_findings(host.as_deref())?;
            Ok(match db.format {
                Format::Json => emit_json(&query::findings_json(&rows)),
                Format::Table => emit(&query::findings_table(&rows, now_s())),
            }?)
        }
    }
}

/// `ack`: the finding marked, its silences made at each Alertmanager.
fn ack(f: FindingArgs, reason: String, until: Option<std::time::Duration>) -> Result<(), String> {
    let key = f.key();
    let now = now_s();
    let until = until.map(|d| now + d.as_secs() as i64);
    let (mut store, config) = finding_store(f.db.clone(), f.config.as_deref(), key)?;
    let ack = zpulse_collector::store::Ack {
        by: f.by.clone().unwrap_or_else(invoking_user),
        reason,
        at: now,
        until,
    };
    // A second ack of the same finding replaces the first, silences included.
    if let Some(old) = store.unack(key, &ack.by, now)? {
        for e in alert::expire_silences(&config.alerting, &old) {
            eprintln!("zpulse-collector: the earlier ack's silence stays: {e}");
        }
    }
    // The silences first, then the ack with them in one write: the alerter, which makes
    // the silences an Alertmanager missed, never sees the ack without those made here.
    let (made, failed) = alert::create_silences(&config.alerting, key, &ack)?;
    let silences = serde_json::to_string(&made).map_err(|e| e.to_string())?;
    store.ack(key, &ack, &silences)?;
    let p = query::printable;
    emit(&format!(
        "{} {} {}: {}\n",
        p(&f.host),
        p(&f.check),
        p(&f.subject),
        p(&query::ack_words(&ack))
    ))?;
    for (url, id) in &made {
        emit(&format!("silence {id} at {url}\n"))?;
    }
    if !failed.is_empty() {
        return Err(format!(
            "acknowledged in the collector, but no silence at {} yet (the running \
             collector makes it when that Alertmanager answers again)",
            failed.join("; ")
        ));
    }
    Ok(())
}

/// `unack`: the ack removed, its silences expired.
fn unack(f: FindingArgs) -> Result<(), String> {
    let key = f.key();
    let (mut store, config) = finding_store(f.db.clone(), f.config.as_deref(), key)?;
    let p = query::printable;
    let Some(silences) = store.unack(key, &f.by.clone().unwrap_or_else(invoking_user), now_s())?
    else {
        return Err(format!(
            "{} {} {} is not acknowledged",
            p(&f.host),
            p(&f.check),
            p(&f.subject)
        ));
    };
    let failed = alert::expire_silences(&config.alerting, &silences);
    emit(&format!(
        "unacknowledged {} {} {}\n",
        p(&f.host),
        p(&f.check),
        p(&f.subject)
    ))?;
    if !failed.is_empty() {
        return Err(format!("silences not expired: {}", failed.join("; ")));
    }
    Ok(())
}

/// Runs the server until SIGTERM/SIGINT. SIGHUP reads the configuration again and builds the
/// new listener completely (TLS files read, address bound) before it takes over: any error
/// is logged and the running one stays. Connections already open keep their rules; the
/// writer and the database stay. The web page keeps its address until a restart.
fn serve(c: Config, resolve: impl Fn() -> Result<Config, String>) -> Result<(), String> {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    let mut signals = signal_hook::iterator::Signals::new([SIGTERM, SIGINT, SIGHUP])
        .map_err(|e| format!("signals: {e}"))?;
    if let Some(parent) = c.db.parent()
        && !parent.as_os_str().is_empty()
    {
        std::fs::create_dir_all(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
    }
    let http = c.http.clone();
    let page = zpulse_collector::http::Page::from_config(&c);
    let db = c.db.clone();
    let tls = match &c.tls {
        None => "plain TCP",
        Some(t) if t.require_client_cert => "TLS, client certificate required",
        Some(t) if t.client_ca.is_some() => "TLS, client certificates accepted",
        Some(_) => "TLS",
    };
    let auth = if c.requires_auth() {
        ", key handshake required"
    } else {
        ""
    };
    let insecure = if c.insecure { ", insecure = true" } else { "" };
    let mut alerting = c.alerting.clone();
    if alerting.public_url.is_none() {
        alerting.public_url = c.http.as_ref().map(|h| format!("http://{h}"));
    }
    let mut server = Server::start(c)?;
    if !alerting.alertmanagers.is_empty() {
        log(format!(
            "alerting to {} (each gets every alert; changes within a second, all every {:?})",
            alerting.alertmanagers.join(", "),
            alerting.resend_every
        ));
    }
    zpulse_collector::alert::spawn(alerting, db.clone())?;
    log(format!(
        "forward listening on {} ({tls}{auth}{insecure}), database {}",
        server.addr,
        db.display()
    ));
    if let Some(h) = http {
        let addr = zpulse_collector::http::start(&h, page, server.stats.clone())?;
        log(format!("http listening on {addr}"));
    }
    for sig in signals.forever() {
        if sig != SIGHUP {
            log(format!(
                "signal {sig}: storing what is queued, then exiting"
            ));
            break;
        }
        match resolve().and_then(|next| server.reload(next)) {
            Ok(()) => log(format!("reloaded: forward listening on {}", server.addr)),
            Err(e) => log(format!(
                "reload refused, the running configuration stays: {e}"
            )),
        }
    }
    server.stop();
    log("stopped");
    Ok(())
}
