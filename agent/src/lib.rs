//! The zpulse agent as a library: everything the `zpulse` binary does, testable in-process.
//!
//! # A brief overview
//!
//! The modules follow the data, from the kernel to the places it leaves the agent:
//!
//! * [`base`] is the bottom layer every other module may use and that uses none of them:
//!   log lines ([`base::log`]), the injected clock ([`base::clock`]), host facts
//!   ([`base::host`], [`base::selfstat`]), reading a regular file without blocking on a FIFO
//!   ([`base::files`]) and config key lines ([`base::keys`]).
//! * [`sources`] read the kernel, or a capture of it, into a [`zpulse_proto::Snapshot`]:
//!   [`sources::System`] is what is read (the live Linux or FreeBSD system, a Linux root, a
//!   capture) and keeps what does not change between readings; [`sources::snapshot`] takes one
//!   reading. Two snapshots make a `zpulse_proto::Sample` (rates), in the proto crate.
//! * [`capture`] writes and reads the capture layout (`zpulse capture`, `replay`):
//!   [`capture::capture_into`], [`capture::load`], [`capture::series`], and
//!   [`capture::Reader`], which reads captures as the live agent reads its system.
//! * [`plugins`] is the plugin host: [`plugins::PluginHost`] loads the check plugins from shared
//!   objects and runs them on every sample and kernel event, contained (budget, failures,
//!   floods), with [`plugins::PluginInfo`] saying what became of each.
//! * [`config`] reads `zpulse.toml` into a [`config::Config`] (with its
//!   [`config::PluginSettings`] and sink tables), with file, line and key in every error.
//! * [`sinks`] is where events leave the agent: the [`sinks::Sink`] trait and its kinds
//!   ([`sinks::stdout`], [`sinks::syslog`], [`sinks::forward`], [`sinks::prometheus`]),
//!   planned from the config by [`sinks::build`].
//! * [`history`] keeps every snapshot `zpulse run` takes on local disk
//!   ([`history::Writer`]) and reads a window of it back ([`history::read`]).
//! * [`daemon`] is `zpulse run`: [`daemon::run`] with its [`daemon::Options`] wires the sampler,
//!   the kernel-event reader, the plugin host, the sinks and the history, and reloads on SIGHUP.
//! * [`baseline`] turns a window of snapshots into `zpulse report`'s model
//!   ([`baseline::Builder`] → [`baseline::Baseline`]) and renders it as a page or text.
//! * [`report`] renders snapshots and samples for people and programs ([`report::Format`]).
//! * [`cli`] is the command line ([`cli::Cli`]): one duration grammar, one exit-status
//!   convention (docs/commands.md).
//!
//! Invariant: nothing in this crate starts a process. Parsers are pure functions of bytes;
//! only the thin readers in [`sources`] touch the file system or the kernel.

pub mod base;
pub mod baseline;
pub mod capture;
pub mod cli;
pub mod config;
pub mod daemon;
pub mod history;
pub mod plugins;
pub mod report;
pub mod sinks;
pub mod sources;
