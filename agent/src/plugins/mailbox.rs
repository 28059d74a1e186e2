//! A one-job mailbox from the host to one plugin's worker thread.
//!
//! Why not a channel: a blocking receive on a crossbeam (or std) channel spins, then calls
//! `sched_yield` several times before it sleeps. Seven idle workers doing that on two cores
//! after every sample cost about 39 context switches per sample (measured with `perf stat`
//! on the bench's `checks` phase), most of the plugins' CPU time beyond their own work. A
//! worker here sleeps on a condition variable at once, and the host wakes it with one
//! `futex` call when it posts a job.

use std::sync::{Arc, Condvar, Mutex, MutexGuard};

struct Slot<T> {
    job: Option<T>,
    /// False once the [`Post`] is dropped: the worker ends after the job in hand.
    open: bool,
}

struct Shared<T> {
    slot: Mutex<Slot<T>>,
    posted: Condvar,
}

impl<T> Shared<T> {
    /// The slot. Nothing panics while holding it (a take, a put, a flag), so poisoning is
    /// ignored.
    fn lock(&self) -> MutexGuard<'_, Slot<T>> {
        self.slot.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The host's end: posts at most one job at a time; dropping it closes the mailbox.
pub(super) struct Post<T>(Arc<Shared<T>>);

/// The worker's end.
pub(super) struct Inbox<T>(Arc<Shared<T>>);

/// An empty, open mailbox.
pub(super) fn mailbox<T>() -> (Post<T>, Inbox<T>) {
    let shared = Arc::new(Shared {
        slot: Mutex::new(Slot {
            job: None,
            open: true,
        }),
        posted: Condvar::new(),
    });
    (Post(Arc::clone(&shared)), Inbox(shared))
}

impl<T> Post<T> {
    /// Leaves `job` for the worker, or gives it back if the previous one is still untaken.
    pub fn try_send(&self, job: T) -> Result<(), T> {
        let mut slot = self.0.lock();
        if slot.job.is_some() {
            return Err(job);
        }
        slot.job = Some(job);
        drop(slot);
        self.0.posted.notify_one();
        Ok(())
    }
}

impl<T> Drop for Post<T> {
    fn drop(&mut self) {
        self.0.lock().open = false;
        self.0.posted.notify_one();
    }
}

impl<T> Inbox<T> {
    /// The next job, sleeping until one is posted; `None` once the host has dropped its end
    /// and no job is left.
    pub fn recv(&self) -> Option<T> {
        let mut slot = self.0.lock();
        loop {
            if let Some(job) = slot.job.take() {
                return Some(job);
            }
            if !slot.open {
                return None;
            }
            slot = self.0.posted.wait(slot).unwrap_or_else(|p| p.into_inner());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_job_at_a_time_and_the_second_is_given_back() {
        let (post, inbox) = mailbox();
        assert!(post.try_send(1).is_ok());
        assert_eq!(post.try_send(2), Err(2));
        assert_eq!(inbox.recv(), Some(1));
        assert!(post.try_send(3).is_ok());
        assert_eq!(inbox.recv(), Some(3));
    }

    #[test]
    fn a_sleeping_worker_is_woken_by_each_post_and_by_the_close() {
        let (post, inbox) = mailbox::<u32>();
        let (done_tx, done_rx) = crossbeam_channel::unbounded();
        let worker = std::thread::spawn(move || {
            let mut got = Vec::new();
            while let Some(job) = inbox.recv() {
                got.push(job);
                done_tx.send(()).unwrap();
            }
            got
        });
        // As the host does: the next job once the worker said it is done with the last.
        for job in 0..100 {
            post.try_send(job).unwrap();
            done_rx.recv().unwrap();
        }
        drop(post);
        assert_eq!(worker.join().unwrap(), (0..100).collect::<Vec<_>>());
    }

    #[test]
    fn a_job_posted_before_the_close_is_still_delivered() {
        let (post, inbox) = mailbox();
        post.try_send("last").unwrap();
        drop(post);
        assert_eq!(inbox.recv(), Some("last"));
        assert_eq!(inbox.recv(), None);
    }
}
