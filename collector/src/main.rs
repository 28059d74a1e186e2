//! `zpulse-collector serve | query | hosts | open`.

use clap::{Parser, Subcommand, ValueEnum};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{SystemTime, UNIX_EPOCH};
use zpulse_collector::config::{Config, DEFAULT_CONFIG, parse_duration};
use zpulse_collector::query;
use zpulse_collector::server::{Server, log};
use zpulse_collector::store::{Filter, Store, parse_severity};

#[derive(Parser)]
#[command(
    name = "zpulse-collector",
    version,
    about = "Receives zpulse events over Fluent Forward, stores them in SQLite, answers queries",
    after_help = "Exit status: 0 success (also when the reader of the output went away, as in \
                  `hosts | head`, and for serve stopped by SIGTERM/SIGINT); 2 any error: bad \
                  usage, a configuration refused, a database missing or unreadable, a \
                  listener that cannot be bound."
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Clone, Copy, ValueEnum, PartialEq, Eq)]
enum Format {
    Table,
    Json,
}

#[derive(clap::Args)]
struct DbArgs {
    /// The database (default: the config file's `db`, else /var/lib/zpulse-collector/events.db).
    #[arg(long)]
    db: Option<PathBuf>,
    /// The config file (default: /etc/zpulse-collector/zpulse-collector.toml when it exists).
    #[arg(long)]
    config: Option<PathBuf>,
    #[arg(long, value_enum, default_value = "table")]
    format: Format,
}

#[derive(Subcommand)]
enum Cmd {
    /// Receive Forward events and store them.
    Serve {
        /// Forward listener, `host:port` (default 127.0.0.1:24224; beyond loopback only with
        /// client authentication or `insecure = true`).
        #[arg(long)]
        listen: Option<String>,
        #[arg(long)]
        db: Option<PathBuf>,
        #[arg(long)]
        config: Option<PathBuf>,
        /// Serve the read-only web page at `host:port`.
        #[arg(long)]
        http: Option<String>,
    },
    /// Stored events, newest first.
    Query {
        #[command(flatten)]
        db: DbArgs,
        #[arg(long)]
        host: Option<String>,
        #[arg(long)]
        check: Option<String>,
        /// This severity or worse: info, warning, critical.
        #[arg(long)]
        severity: Option<String>,
        /// Only events newer than this: 90s, 15m, 1h, 7d.
        #[arg(long)]
        since: Option<String>,
        /// finding, metrics, agent or foreign (repeatable).
        #[arg(long)]
        kind: Vec<String>,
        #[arg(long, default_value_t = 100)]
        limit: usize,
    },
    /// Every host: last seen, agent version, open findings.
    Hosts {
        #[command(flatten)]
        db: DbArgs,
    },
    /// Silences one finding on the page and in alerting (for good, or `--until`).
    Ack {
        host: String,
        check: String,
        subject: String,
        /// For this long only: 90s, 15m, 1h, 7d.
        #[arg(long)]
        until: Option<String>,
        /// The database (default: the config file's `db`).
        #[arg(long)]
        db: Option<PathBuf>,
        #[arg(long)]
        config: Option<PathBuf>,
    },
    /// Open findings, worst first.
    Open {
        #[command(flatten)]
        db: DbArgs,
        #[arg(long)]
        host: Option<String>,
    },
}

fn main() -> ExitCode {
    match run(Cli::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("zpulse-collector: {e}");
            ExitCode::from(2)
        }
    }
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
            serve(resolve()?, resolve)
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
            let since_ts = match since {
                Some(s) => Some(
                    (now_s()
                        - parse_duration(&s)
                            .map_err(|e| format!("--since: {e}"))?
                            .as_secs() as i64)
                        * 1_000_000_000,
                ),
                None => None,
            };
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
            match db.format {
                Format::Json => emit(&format!("{}\n", query::events_json(&rows, true))),
                Format::Table => emit(&query::events_table(&rows)),
            }
        }
        Cmd::Hosts { db } => {
            let (store, config) = open_db(&db)?;
            let rows = store.hosts()?;
            let skew = config.max_clock_skew.as_secs() as i64;
            match db.format {
                Format::Json => emit_json(&query::hosts_json(&rows, skew, query::Audience::Admin)),
                Format::Table => emit(&query::hosts_table(&rows, now_s(), skew)),
            }
        }
        Cmd::Ack {
            host,
            check,
            subject,
            until,
            db,
            config,
        } => {
            let db = match db {
                Some(d) => d,
                None => load_config(config.as_deref())?.db,
            };
            let now = now_s();
            let until = until
                .map(|u| parse_duration(&u).map(|d| now + d.as_secs() as i64))
                .transpose()
                .map_err(|e| format!("--until: {e}"))?;
            if !db.exists() {
                return Err(format!("{}: no database there", db.display()));
            }
            Store::open(&db)?.ack(&host, &check, &subject, until, now)?;
            emit(&format!(
                "acknowledged {} {} {}{}\n",
                query::printable(&host),
                query::printable(&check),
                query::printable(&subject),
                until.map_or(String::new(), |u| format!(" until {}", query::utc(u)))
            ))
        }
        Cmd::Open { db, host } => {
            let rows = open_db(&db)?.0.open_findings(host.as_deref())?;
            match db.format {
                Format::Json => emit_json(&query::findings_json(&rows)),
                Format::Table => emit(&query::findings_table(&rows, now_s())),
            }
        }
    }
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
    let alerting = c.alerting.clone();
    let mut server = Server::start(c)?;
    if let Some(am) = &alerting.alertmanager {
        log(format!(
            "alerting to {am} every {:?}",
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
