//! One thread per sink, fed by a bounded channel. The plugin stage hands each batch to every
//! sink without waiting: a sink whose queue is full loses that batch for itself alone (and
//! counts it), so a slow collector never holds back sampling or the other sinks.

use crate::daemon::log;
use crate::plugins::Level;
use crate::sinks::{Reading, Sink, SinkStats, Stamped};
use crossbeam_channel::{Receiver, RecvTimeoutError, Sender, TrySendError, bounded};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Batches a sink may have waiting before new ones are dropped for it. At one batch per
/// sample that is over an hour at the default interval; the Forward sink's own spool holds
/// far more once a batch has reached it.
const QUEUE_BATCHES: usize = 512;
/// How often an idle sink thread gets a chance to retry (Forward resends from its spool).
const IDLE_TICK: Duration = Duration::from_secs(1);

enum Job {
    Batch(Vec<Stamped>),
    /// For sinks that export figures (Prometheus): rendered on the sink's thread.
    Reading(Reading),
    /// Deliver what is queued, flush until the deadline (when `flush`), then end the thread.
    Close {
        deadline: Instant,
        flush: bool,
    },
}

/// A sink on its own thread.
pub struct SinkWorker {
    name: String,
    jobs: Sender<Job>,
    stats: Arc<Mutex<SinkStats>>,
    /// Batches refused because the queue was full (events in them).
    overflow: Arc<AtomicU64>,
    wants_readings: bool,
    /// What the sinks this one replaced (same name, earlier generations) had delivered and
    /// lost: the heartbeat's counters are the sink's, not the generation's.
    carried: SinkReport,
    thread: Option<JoinHandle<()>>,
}

/// What the heartbeat reports of one sink.
#[derive(Debug, Clone, PartialEq)]
pub struct SinkReport {
    pub name: String,
    pub queued_batches: usize,
    pub stats: SinkStats,
    pub overflow: u64,
}

impl SinkWorker {
    pub fn start(mut sink: Box<dyn Sink>) -> SinkWorker {
        let name = sink.name();
        let wants_readings = sink.wants_readings();
        let (jobs, rx): (Sender<Job>, Receiver<Job>) = bounded(QUEUE_BATCHES);
        let stats = Arc::new(Mutex::new(sink.stats()));
        let shared = Arc::clone(&stats);
        let thread_name = name.clone();
        let thread = std::thread::Builder::new()
            .name(format!("sink {name}"))
            .spawn(move || {
                let publish = |sink: &dyn Sink| {
                    if let Ok(mut s) = shared.lock() {
                        *s = sink.stats();
                    }
                };
                loop {
                    match rx.recv_timeout(IDLE_TICK) {
                        Ok(Job::Batch(batch)) => {
                            if let Err(e) = sink.deliver(&batch) {
                                log::log(Level::Warn, &thread_name, &e.to_string());
                            }
                        }
                        Ok(Job::Reading(reading)) => {
                            if let Err(e) = sink.observe(&reading) {
                                log::log(Level::Warn, &thread_name, &e.to_string());
                            }
                        }
                        Ok(Job::Close { deadline, flush }) => {
                            // Whatever was queued before the close goes first.
                            while let Ok(job) = rx.try_recv() {
                                if Instant::now() >= deadline {
                                    break;
                                }
                                match job {
                                    Job::Batch(batch) => {
                                        let _ = sink.deliver(&batch);
                                    }
                                    Job::Reading(reading) => {
                                        let _ = sink.observe(&reading);
                                    }
                                    Job::Close { .. } => break,
                                }
                            }
                            if flush && let Err(e) = sink.flush(deadline) {
                                log::log(Level::Warn, &thread_name, &e.to_string());
                            }
                            publish(sink.as_ref());
                            return;
                        }
                        Err(RecvTimeoutError::Timeout) => {
                            // An empty batch lets a sink with a backlog (spool) retry.
                            let _ = sink.deliver(&[]);
                        }
                        Err(RecvTimeoutError::Disconnected) => return,
                    }
                    publish(sink.as_ref());
                }
            })
            .ok();
        SinkWorker {
            carried: SinkReport {
                name: name.clone(),
                queued_batches: 0,
                stats: SinkStats::default(),
                overflow: 0,
            },
            name,
            jobs,
            stats,
            overflow: Arc::new(AtomicU64::new(0)),
            wants_readings,
            thread,
        }
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// Counts what `before` (the sink this one replaces) delivered and lost as this one's.
    pub fn carry(&mut self, before: &SinkReport) {
        self.carried.stats.delivered += before.stats.delivered;
        self.carried.stats.dropped += before.stats.dropped;
        self.carried.overflow += before.overflow;
    }

    /// Hands a batch over without blocking; a full queue drops it for this sink and counts.
    pub fn offer(&self, batch: Vec<Stamped>) {
        let n = batch.len() as u64;
        match self.jobs.try_send(Job::Batch(batch)) {
            Ok(()) => {}
            Err(TrySendError::Full(_)) | Err(TrySendError::Disconnected(_)) => {
                if self.overflow.fetch_add(n, Ordering::Relaxed) == 0 {
                    log::log(
                        Level::Warn,
                        &self.name,
                        "queue full: dropping events for this sink (reported in the heartbeat)",
                    );
                }
            }
        }
    }

    /// Hands a reading to a sink that wants them, without blocking; when its queue is full
    /// the reading is skipped (the sink still shows the previous one).
    pub fn offer_reading(&self, reading: &Reading) {
        if self.wants_readings {
            let _ = self.jobs.try_send(Job::Reading(reading.clone()));
        }
    }

    pub fn report(&self) -> SinkReport {
        let mut stats = self.stats.lock().map(|s| s.clone()).unwrap_or_default();
        stats.delivered += self.carried.stats.delivered;
        stats.dropped += self.carried.stats.dropped;
        SinkReport {
            name: self.name.clone(),
            queued_batches: self.jobs.len(),
            stats,
            overflow: self.overflow.load(Ordering::Relaxed) + self.carried.overflow,
        }
    }

    /// Delivers what is queued and flushes, waiting at most until `deadline`. Returns the
    /// sink's final report.
    pub fn close(self, deadline: Instant) -> SinkReport {
        self.finish(deadline, true)
    }

    /// Delivers what is queued (a Forward sink: into its spool) without waiting for the
    /// transport, and ends the sink, so that its successor can take over what it held.
    pub fn hand_over(self, deadline: Instant) -> SinkReport {
        self.finish(deadline, false)
    }

    fn finish(mut self, deadline: Instant, flush: bool) -> SinkReport {
        let _ = self
            .jobs
            .send_deadline(Job::Close { deadline, flush }, deadline);
        if let Some(thread) = self.thread.take() {
            // The thread honours the deadline in flush; give it a little slack to return.
            let until = deadline + Duration::from_millis(200);
            while !thread.is_finished() && Instant::now() < until {
                std::thread::sleep(Duration::from_millis(10));
            }
            if thread.is_finished() {
                let _ = thread.join();
            } else {
                log::log(Level::Warn, &self.name, "did not finish flushing in time");
            }
        }
        self.report()
    }
}
