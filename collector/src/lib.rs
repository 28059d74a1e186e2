//! The zpulse collector: receives events from many agents over Fluent Forward, stores them in
//! SQLite, answers queries, serves a read-only web page and sends alerts (docs/collector.md).
//!
//! # A brief overview
//!
//! * [`server`]: the Forward receiver. [`server::Server`] accepts connections, authenticates
//!   them ([`server::Identity`]: a shared key, per-client keys or a client certificate, with
//!   [`tls`]), decodes messages within the limits of [`config::Config`], and acks a batch only
//!   after the writer committed it; [`server::Stats`] counts what it did.
//! * [`store`]: the SQLite database. [`store::Store`] stores batches ([`store::Batch`]) once
//!   by chunk id, keeps each host's summary and open findings current, acks findings
//!   ([`store::Ack`]) and answers [`store::Filter`]s with [`store::Row`]s,
//!   [`store::HostRow`]s and [`store::FindingRow`]s; [`timeseries`] keeps the charted figures
//!   of agents that send their metrics ([`timeseries::Reading`]).
//! * [`query`]: the command line's tables and JSON of those rows (`query`, `hosts`, `open`),
//!   escaped for a terminal.
//! * [`http`]: the web page and the JSON API ([`http::Page`], [`http::start`]), with
//!   [`charts`] drawing a host's figures as inline SVG.
//! * [`alert`]: Alertmanager alerts and silences and signed webhooks ([`alert::Alerting`],
//!   [`alert::spawn`]), over [`http_client`].
//! * [`clock`]: which hosts' clocks are off, judged from their heartbeats.
//! * [`config`]: `zpulse-collector.toml` ([`config::Config`]); the command line in `main.rs`
//!   overrides it.

pub mod alert;
pub mod charts;
pub mod clock;
pub mod config;
pub mod http;
pub mod http_client;
pub mod query;
mod record;
pub mod server;
pub mod store;
pub mod timeseries;
pub mod tls;
