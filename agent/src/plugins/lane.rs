//! A lane: one thread that runs the calls of the plugins of one file, one after the other.
//!
//! Why one thread per file, not per plugin: waking a sleeping thread, most often on the other
//! CPU, and being woken by it when it is done cost as much as the shipped checks' own work.
//! Measured on the bench's lab capture (`perf stat` of the `checks` and `sample` phases,
//! 1,000 intervals each, interleaved runs on a 2-CPU VM): with a thread per plugin, the seven
//! checks made 10.4–11.1 context switches an interval and added a median 783 µs (10 runs) and
//! 315 µs (8 runs, the machine faster) to the sample; with one lane, 1.9–2.0 switches and
//! 487 µs and 272 µs. The plugins of one file (a bundle) share its author, its build and its
//! code, so they share a lane: a sample costs the bundle one wake-up and one reply. Plugins of
//! different files never share one, and a lane whose call in hand outruns the budget is split
//! ([`Lane::take_queued_except`]): the call's plugin keeps the thread, its bundle-mates go on
//! on a new one.
//!
//! Why a queue under a mutex and not a channel: a blocking receive on a crossbeam (or std)
//! channel spins and calls `sched_yield` several times before it sleeps, which idle threads
//! did after every sample (about 39 context switches a sample, measured the same way, when
//! each plugin had a channel of its own). An idle lane sleeps on a condition variable at
//! once, and the host wakes it with one `futex` call per batch of jobs.
//!
//! Before it wakes the one lane at work in a sample, the host moves the lane's thread to its
//! own CPU ([`placement`](super::placement), [`Place`]): the plugins then read the sample from
//! the caches it was written into.
//!
//! A lane tells the host only when its queue runs dry (one message a batch, on the host's
//! channel), and keeps each call's outcome in its `finished` list until the host takes it, so
//! the outcomes of the calls before one that hangs are there for the host at its deadline.

use super::placement::Placement;
use crossbeam_channel::Sender;
use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock};
use std::time::Instant;

/// Where a lane's thread runs the jobs posted to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Place {
    /// On the poster's CPU, while the poster waits (see [`placement`](super::placement)).
    WithCaller,
    /// Wherever the scheduler puts it: for lanes posted to together, which would otherwise
    /// share one CPU.
    Anywhere,
}

/// A job for the plugin numbered `owner`, posted at `posted` (the budget runs from then).
pub(super) struct Queued<T> {
    pub owner: usize,
    pub posted: Instant,
    pub job: T,
}

/// The call a lane has in hand: whose, and when it was posted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct InHand {
    pub owner: usize,
    pub posted: Instant,
}

struct Queue<T, R> {
    jobs: VecDeque<Queued<T>>,
    in_hand: Option<InHand>,
    /// Outcomes not yet taken by the host: (owner, outcome).
    finished: Vec<(usize, R)>,
    /// False once the host closed the lane: its thread ends when the queue is empty.
    open: bool,
}

struct Inner<T, R> {
    queue: Mutex<Queue<T, R>>,
    posted: Condvar,
    /// The lane thread's, set as it starts.
    placement: OnceLock<Placement>,
}

impl<T, R> Inner<T, R> {
    /// Nothing panics while holding the lock (pushes, pops, flags), so poisoning is ignored.
    fn lock(&self) -> MutexGuard<'_, Queue<T, R>> {
        self.queue.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The host's end of a lane.
pub(super) struct Lane<T, R> {
    inner: Arc<Inner<T, R>>,
}

impl<T: Send + 'static, R: Send + 'static> Lane<T, R> {
    /// Starts a lane's thread, named `name`, which runs each job with `work` and, whenever
    /// its queue runs dry, sends `id` to `done`. An outcome is filed under its job's owner.
    pub fn spawn(
        id: usize,
        name: String,
        stack_size: usize,
        done: Sender<usize>,
        mut work: impl FnMut(T) -> Option<R> + Send + 'static,
    ) -> std::io::Result<Lane<T, R>> {
        let inner = Arc::new(Inner {
            queue: Mutex::new(Queue {
                jobs: VecDeque::new(),
                in_hand: None,
                finished: Vec::new(),
                open: true,
            }),
            posted: Condvar::new(),
            placement: OnceLock::new(),
        });
        let theirs = Arc::clone(&inner);
        std::thread::Builder::new()
            .name(name)
            .stack_size(stack_size)
            .spawn(move || {
                // The agent's signals go to the agent's threads (see `signals`).
                super::signals::block_in_this_thread();
                let _ = theirs.placement.set(Placement::of_current_thread());
                // However the thread ends, its id is not touched afterwards.
                let _retire = Retire(&theirs);
                while let Some(Queued { owner, job, .. }) = next(&theirs) {
                    let outcome = work(job);
                    let mut queue = theirs.lock();
                    queue.in_hand = None;
                    if let Some(outcome) = outcome {
                        queue.finished.push((owner, outcome));
                    }
                    let dry = queue.jobs.is_empty();
                    drop(queue);
                    // A host that is gone has posted what it meant to (its stops): go on
                    // until the queue is empty and the lane closed.
                    if dry {
                        let _ = done.send(id);
                    }
                }
            })?;
        Ok(Lane { inner })
    }

    /// Queues `jobs` behind the lane's others and wakes its thread once, on the caller's CPU.
    pub fn post(&self, jobs: impl IntoIterator<Item = Queued<T>>) {
        self.post_placed(jobs, Place::WithCaller);
    }

    /// [`Lane::post`], the thread woken where `place` says.
    pub fn post_placed(&self, jobs: impl IntoIterator<Item = Queued<T>>, place: Place) {
        let mut queue = self.inner.lock();
        let before = queue.jobs.len();
        queue.jobs.extend(jobs);
        let any = queue.jobs.len() > before;
        drop(queue);
        if any {
            if let Some(placement) = self.inner.placement.get() {
                match place {
                    Place::WithCaller => {
                        placement.follow_caller();
                    }
                    Place::Anywhere => placement.release(),
                }
            }
            self.inner.posted.notify_one();
        }
    }

    /// Lets the lane's thread run on any CPU again: for a lane left to a hung call.
    pub fn release_placement(&self) {
        if let Some(placement) = self.inner.placement.get() {
            placement.release();
        }
    }

    /// The outcomes finished since the last call, in the order they finished.
    pub fn take_finished(&self, into: &mut Vec<(usize, R)>) {
        into.append(&mut self.inner.lock().finished);
    }

    /// The call the lane is running, if any.
    pub fn in_hand(&self) -> Option<InHand> {
        self.inner.lock().in_hand
    }

    /// Takes the queued jobs of every plugin but `owner`, in their order: for a new lane,
    /// when `owner`'s call in hand has outrun the budget.
    pub fn take_queued_except(&self, owner: usize) -> Vec<Queued<T>> {
        let mut queue = self.inner.lock();
        let mut others = Vec::new();
        let mut theirs = VecDeque::new();
        for q in queue.jobs.drain(..) {
            if q.owner == owner {
                theirs.push_back(q);
            } else {
                others.push(q);
            }
        }
        queue.jobs = theirs;
        others
    }

    /// The thread ends once it has run what is queued (a call that never returns keeps it).
    pub fn close(&self) {
        self.inner.lock().open = false;
        self.inner.posted.notify_one();
    }
}

/// Retires the lane thread's placement when the thread ends, unwinding or not.
struct Retire<'i, T, R>(&'i Inner<T, R>);

impl<T, R> Drop for Retire<'_, T, R> {
    fn drop(&mut self) {
        if let Some(placement) = self.0.placement.get() {
            placement.retire();
        }
    }
}

/// The next job, sleeping until one is posted, marked as in hand; `None` once the lane is
/// closed and empty.
fn next<T, R>(inner: &Inner<T, R>) -> Option<Queued<T>> {
    let mut queue = inner.lock();
    loop {
        if let Some(job) = queue.jobs.pop_front() {
            queue.in_hand = Some(InHand {
                owner: job.owner,
                posted: job.posted,
            });
            return Some(job);
        }
        if !queue.open {
            return None;
        }
        queue = inner.posted.wait(queue).unwrap_or_else(|p| p.into_inner());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plugins::placement;
    use std::time::Duration;

    fn queued(owner: usize, job: u32) -> Queued<u32> {
        Queued {
            owner,
            posted: Instant::now(),
            job,
        }
    }

    /// A lane that doubles each job; `gate` holds it inside job 0 until a message arrives.
    fn doubling(done: Sender<usize>, gate: crossbeam_channel::Receiver<()>) -> Lane<u32, u32> {
        Lane::spawn(7, "lane-test".into(), 1 << 16, done, move |job| {
            if job == 0 {
                let _ = gate.recv();
            }
            Some(job * 2)
        })
        .unwrap()
    }

    #[test]
    fn a_batch_runs_in_order_and_is_reported_once_when_the_queue_runs_dry() {
        let (done_tx, done_rx) = crossbeam_channel::unbounded();
        let (_open, gate) = crossbeam_channel::bounded(0);
        let lane = doubling(done_tx, gate);
        for round in 0..50u32 {
            lane.post((1..=3).map(|owner| queued(owner, round * 10 + owner as u32)));
            assert_eq!(done_rx.recv_timeout(Duration::from_secs(10)), Ok(7));
            let mut got = Vec::new();
            lane.take_finished(&mut got);
            let want: Vec<(usize, u32)> = (1..=3)
                .map(|owner| (owner, (round * 10 + owner as u32) * 2))
                .collect();
            assert_eq!(got, want, "round {round}");
            assert!(done_rx.try_recv().is_err(), "one message a batch");
        }
        lane.close();
    }

    #[test]
    fn outcomes_before_a_call_in_hand_are_there_and_the_queued_ones_can_move() {
        let (done_tx, done_rx) = crossbeam_channel::unbounded();
        let (open, gate) = crossbeam_channel::bounded(0);
        let lane = doubling(done_tx.clone(), gate);
        // Owner 1 finishes, owner 2 is held in job 0, owners 3 and 2 (again) wait behind it.
        lane.post([queued(1, 5), queued(2, 0), queued(3, 6), queued(2, 8)]);
        let deadline = Instant::now() + Duration::from_secs(10);
        while lane.in_hand().map(|h| h.owner) != Some(2) {
            assert!(Instant::now() < deadline, "job 0 never started");
            std::thread::yield_now();
        }
        let mut got = Vec::new();
        lane.take_finished(&mut got);
        assert_eq!(got, [(1, 10)], "finished before the call in hand");
        assert!(done_rx.try_recv().is_err(), "the queue is not dry");

        let moved = lane.take_queued_except(2);
        let moved: Vec<(usize, u32)> = moved.into_iter().map(|q| (q.owner, q.job)).collect();
        assert_eq!(
            moved,
            [(3, 6)],
            "the others' jobs move; owner 2's stays behind its call"
        );

        open.send(()).unwrap();
        assert_eq!(done_rx.recv_timeout(Duration::from_secs(10)), Ok(7));
        let mut got = Vec::new();
        lane.take_finished(&mut got);
        assert_eq!(got, [(2, 0), (2, 16)]);
        lane.close();
    }

    #[test]
    fn each_post_moves_the_lane_to_the_posters_cpu() {
        let (done_tx, done_rx) = crossbeam_channel::unbounded();
        let (_open, gate) = crossbeam_channel::bounded(0);
        let lane = doubling(done_tx, gate);
        let usable = placement::tests::usable_cpus();
        // The first post may come before the thread has said where it is: after it, it has.
        lane.post([queued(1, 1)]);
        assert_eq!(done_rx.recv_timeout(Duration::from_secs(10)), Ok(7));
        let theirs = lane
            .inner
            .placement
            .get()
            .expect("the lane thread's placement");
        for (round, &cpu) in usable.iter().rev().chain(&usable).enumerate() {
            placement::tests::hold_current_thread_to(cpu);
            lane.post([queued(1, round as u32 + 1)]);
            assert_eq!(done_rx.recv_timeout(Duration::from_secs(10)), Ok(7));
            assert_eq!(theirs.allowed(), [cpu], "round {round}");
        }
        lane.post_placed([queued(1, 99)], Place::Anywhere);
        assert_eq!(done_rx.recv_timeout(Duration::from_secs(10)), Ok(7));
        assert_eq!(theirs.allowed(), usable, "posted anywhere: every CPU");
        placement::tests::hold_current_thread_to(usable[0]);
        lane.post([queued(1, 100)]);
        assert_eq!(done_rx.recv_timeout(Duration::from_secs(10)), Ok(7));
        assert_eq!(theirs.allowed(), [usable[0]]);
        lane.release_placement();
        assert_eq!(theirs.allowed(), usable, "released: anywhere again");
        let mut got = Vec::new();
        lane.take_finished(&mut got);
        assert_eq!(got.len(), 3 + 2 * usable.len());
        lane.close();
    }

    #[test]
    fn a_closed_lane_runs_what_was_queued_then_ends() {
        let (done_tx, done_rx) = crossbeam_channel::unbounded();
        let (_open, gate) = crossbeam_channel::bounded(0);
        let lane = doubling(done_tx, gate);
        lane.post([queued(1, 4)]);
        lane.close();
        assert_eq!(done_rx.recv_timeout(Duration::from_secs(10)), Ok(7));
        // The thread ended: its sender is dropped, so the channel disconnects.
        assert!(matches!(
            done_rx.recv_timeout(Duration::from_secs(10)),
            Err(crossbeam_channel::RecvTimeoutError::Disconnected)
        ));
        // Its id may belong to another thread by now: nothing places it any more.
        let placement = lane.inner.placement.get().expect("the thread's placement");
        assert!(placement.retired());
        assert_eq!(placement.follow_caller(), None);
        let mut got = Vec::new();
        lane.take_finished(&mut got);
        assert_eq!(got, [(1, 8)]);
    }
}
