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
    about = "Receives zpulse events over Fluent Forward, stores them in SQLite, answers queries"
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

fn open_db(a: &DbArgs) -> Result<Store, String> {
    let db = match &a.db {
        Some(d) => d.clone(),
        None => load_config(a.config.as_deref())?.db,
    };
    Store::open_read_only(&db)
}

fn print_json(v: &serde_json::Value) {
    println!("{}", serde_json::to_string_pretty(v).unwrap_or_default());
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
            let store = open_db(&db)?;
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
            };
            let rows = store.events(&f)?;
            match db.format {
                Format::Json => print_json(&query::events_json(&rows)),
                Format::Table => print!("{}", query::events_table(&rows)),
            }
            Ok(())
        }
        Cmd::Hosts { db } => {
            let rows = open_db(&db)?.hosts()?;
            match db.format {
                Format::Json => print_json(&query::hosts_json(&rows)),
                Format::Table => print!("{}", query::hosts_table(&rows, now_s())),
            }
            Ok(())
        }
        Cmd::Open { db, host } => {
            let rows = open_db(&db)?.open_findings(host.as_deref())?;
            match db.format {
                Format::Json => print_json(&query::findings_json(&rows)),
                Format::Table => print!("{}", query::findings_table(&rows, now_s())),
            }
            Ok(())
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
    let mut server = Server::start(c)?;
    log(format!(
        "forward listening on {} ({tls}{auth}{insecure}), database {}",
        server.addr,
        db.display()
    ));
    if let Some(h) = http {
        let addr = zpulse_collector::http::start(&h, db.clone(), server.stats.clone())?;
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
