//! The zpulse collector: a Fluent Forward receiver ([`server`]) that stores events from many
//! hosts in SQLite ([`store`], metric records as [`timeseries`]), answers queries ([`query`]) and serves a read-only web page
//! ([`http`]).

pub mod alert;
pub mod charts;
pub mod clock;
pub mod config;
pub mod http;
pub mod http_client;
pub mod query;
pub mod server;
pub mod store;
pub mod timeseries;
pub mod tls;
