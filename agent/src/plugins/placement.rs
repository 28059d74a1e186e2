//! Where a lane's thread runs: on the CPU of the thread that posts to it.
//!
//! Why: the host makes the sample, posts it to a lane and waits; the plugins then read the
//! sample the host has just written. Left to the scheduler, the lane's thread wakes on the
//! other, idle CPU, and every cache line of the sample and of the outcomes crosses between
//! the two. Measured on the bench's lab capture (`perf stat`, 3,000 live intervals with the
//! seven shipped checks, 2-CPU VM): 367–371 µs an interval with the lane wherever the
//! scheduler put it, 309 µs with the whole process pinned to one CPU, 293–297 µs with the
//! calls made on the host's own thread (no isolation: not an option). So before it wakes a
//! lane, the host moves the lane's thread to the CPU it is running on: the thread wakes there
//! and runs while the host waits, with the sample still in that CPU's caches.
//!
//! Only a lane that is alone at work in a sample follows the host (the shipped checks are one
//! file, so one lane): lanes posted to together are let run wherever the scheduler puts them,
//! since on one CPU two heavy plugin files would share it, and each other's budget.
//!
//! A lane pinned this way keeps a CPU only while the host keeps posting to it: every batch
//! moves it to the poster's CPU of the moment, and a lane left to a hung call gets the whole
//! set of CPUs back ([`Placement::release`]), so a call that spins is not held to one CPU.
//! Nothing here is needed for correctness: every failure (an offline CPU, a cpuset that
//! refuses, a platform without these calls) leaves the thread where the scheduler puts it.
//!
//! This is one of the agent's modules with `unsafe` (the plugin host's, beside `perms`, `load`
//! and `worker`): `sched_getcpu`, the thread id and the affinity calls, which std does not
//! offer. rustix offers them safely, but its `sched_getcpu` reads the vDSO with its own ELF
//! parser, which crashes the process under valgrind (how the bench counts instructions); the C
//! library's does not.

use std::mem::MaybeUninit;
use std::sync::Mutex;

/// A lane thread's identity for the affinity calls, and the CPUs it may run on when not
/// placed.
pub(super) struct Placement {
    thread: os::Tid,
    /// The thread's affinity when it started (the process's, inherited), restored on release.
    free: Option<os::Mask>,
    held: Mutex<Held>,
}

struct Held {
    /// The CPU the thread is held to now, if any: a post from the same CPU costs no call.
    on: Option<usize>,
    /// False once the thread is ending ([`Placement::retire`]): its id may then be given to
    /// another thread, of any process, which no call here may touch. Every call is made
    /// under this lock, so the thread cannot end during one.
    alive: bool,
}

impl Placement {
    /// The calling thread's placement (a lane thread calls it as it starts, and
    /// [`Placement::retire`] as it ends).
    pub fn of_current_thread() -> Placement {
        let thread = os::current_thread();
        Placement {
            thread,
            free: os::affinity(thread),
            held: Mutex::new(Held {
                on: None,
                alive: true,
            }),
        }
    }

    fn held(&self) -> std::sync::MutexGuard<'_, Held> {
        self.held.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Holds the thread to the CPU the caller runs on, unless it is held there already.
    /// Returns the CPU it is held to.
    pub fn follow_caller(&self) -> Option<usize> {
        let cpu = os::current_cpu()?;
        let mut held = self.held();
        if !held.alive {
            return None;
        }
        if held.on == Some(cpu) {
            return Some(cpu);
        }
        held.on = pin(self.thread, cpu).then_some(cpu);
        held.on
    }

    /// Lets the thread run wherever it could when it started.
    pub fn release(&self) {
        let mut held = self.held();
        if held.alive
            && held.on.is_some()
            && let Some(free) = &self.free
            && os::set_affinity(self.thread, free)
        {
            held.on = None;
        }
    }

    /// The thread is ending: no call touches its id from now on.
    pub fn retire(&self) {
        self.held().alive = false;
    }

    /// Whether [`Placement::retire`] was called (tests).
    #[cfg(test)]
    pub fn retired(&self) -> bool {
        !self.held().alive
    }

    /// The CPUs the thread may run on now (tests).
    #[cfg(test)]
    pub fn allowed(&self) -> Vec<usize> {
        os::affinity(self.thread).map_or_else(Vec::new, |m| cpus(&m))
    }
}

/// Holds `thread` to `cpu` alone.
fn pin(thread: os::Tid, cpu: usize) -> bool {
    if cpu >= libc::CPU_SETSIZE as usize {
        return false;
    }
    // SAFETY: an all-zero mask (an array of integers) is the empty set.
    let mut mask: os::Mask = unsafe { MaybeUninit::zeroed().assume_init() };
    // SAFETY: cpu is below CPU_SETSIZE, so its bit is inside the mask.
    unsafe { libc::CPU_SET(cpu, &mut mask) };
    os::set_affinity(thread, &mask)
}

#[cfg(test)]
fn cpus(mask: &os::Mask) -> Vec<usize> {
    (0..libc::CPU_SETSIZE as usize)
        // SAFETY: every index is below CPU_SETSIZE, so its bit is inside the mask.
        .filter(|&c| unsafe { libc::CPU_ISSET(c, mask) })
        .collect()
}

#[cfg(target_os = "linux")]
mod os {
    use std::mem::{MaybeUninit, size_of};

    pub type Tid = libc::pid_t;
    pub type Mask = libc::cpu_set_t;

    pub fn current_thread() -> Tid {
        // SAFETY: gettid has no preconditions and cannot fail.
        unsafe { libc::gettid() }
    }

    pub fn current_cpu() -> Option<usize> {
        // SAFETY: sched_getcpu has no preconditions; it returns -1 on failure.
        usize::try_from(unsafe { libc::sched_getcpu() }).ok()
    }

    pub fn affinity(thread: Tid) -> Option<Mask> {
        let mut mask = MaybeUninit::<Mask>::zeroed();
        // SAFETY: the mask is a cpu_set_t of the size passed, which the kernel fills.
        let rc = unsafe { libc::sched_getaffinity(thread, size_of::<Mask>(), mask.as_mut_ptr()) };
        // SAFETY: zeroed is a valid cpu_set_t (an array of integers), filled on success.
        (rc == 0).then(|| unsafe { mask.assume_init() })
    }

    pub fn set_affinity(thread: Tid, mask: &Mask) -> bool {
        // SAFETY: the mask is a valid cpu_set_t of the size passed; the kernel only reads it.
        unsafe { libc::sched_setaffinity(thread, size_of::<Mask>(), mask) == 0 }
    }
}

#[cfg(target_os = "freebsd")]
mod os {
    use std::mem::{MaybeUninit, size_of};

    pub type Tid = libc::c_int;
    pub type Mask = libc::cpuset_t;

    pub fn current_thread() -> Tid {
        // SAFETY: pthread_getthreadid_np has no preconditions and cannot fail.
        unsafe { libc::pthread_getthreadid_np() }
    }

    pub fn current_cpu() -> Option<usize> {
        // SAFETY: sched_getcpu (in libc since 2021: FreeBSD 13.1, 14.0) has no preconditions;
        // it returns -1 on failure.
        usize::try_from(unsafe { libc::sched_getcpu() }).ok()
    }

    pub fn affinity(thread: Tid) -> Option<Mask> {
        let mut mask = MaybeUninit::<Mask>::zeroed();
        // SAFETY: the mask is a cpuset_t of the size passed, which the kernel fills.
        let rc = unsafe {
            libc::cpuset_getaffinity(
                libc::CPU_LEVEL_WHICH,
                libc::CPU_WHICH_TID,
                libc::id_t::from(thread),
                size_of::<Mask>(),
                mask.as_mut_ptr(),
            )
        };
        // SAFETY: zeroed is a valid cpuset_t (an array of integers), filled on success.
        (rc == 0).then(|| unsafe { mask.assume_init() })
    }

    pub fn set_affinity(thread: Tid, mask: &Mask) -> bool {
        // SAFETY: the mask is a valid cpuset_t of the size passed; the kernel only reads it.
        unsafe {
            libc::cpuset_setaffinity(
                libc::CPU_LEVEL_WHICH,
                libc::CPU_WHICH_TID,
                libc::id_t::from(thread),
                size_of::<Mask>(),
                mask,
            ) == 0
        }
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    /// Holds the calling thread to `cpu` (the test's poster).
    pub fn hold_current_thread_to(cpu: usize) {
        assert!(
            pin(os::current_thread(), cpu),
            "cannot hold this thread to CPU {cpu}"
        );
    }

    /// The CPUs this process may use.
    pub fn usable_cpus() -> Vec<usize> {
        Placement::of_current_thread().allowed()
    }

    #[test]
    fn a_thread_follows_its_caller_from_cpu_to_cpu_and_is_freed_again() {
        let usable = usable_cpus();
        assert!(!usable.is_empty(), "sched_getaffinity said no CPU");
        let (tx, rx) = std::sync::mpsc::channel();
        let (_hold, wait) = std::sync::mpsc::channel::<()>();
        let lane = std::thread::spawn(move || {
            tx.send(Placement::of_current_thread()).unwrap();
            let _ = wait.recv();
        });
        let placement = rx.recv().unwrap();
        assert_eq!(placement.allowed(), usable, "a new thread may run anywhere");
        for &cpu in usable.iter().rev() {
            hold_current_thread_to(cpu);
            assert_eq!(placement.follow_caller(), Some(cpu));
            assert_eq!(placement.allowed(), [cpu], "held to the caller's CPU");
        }
        placement.release();
        assert_eq!(placement.allowed(), usable, "released to where it started");
        drop(_hold);
        lane.join().unwrap();
    }

    #[test]
    fn a_retired_thread_is_never_touched_again() {
        let usable = usable_cpus();
        let me = Placement::of_current_thread();
        me.retire();
        hold_current_thread_to(usable[usable.len() - 1]);
        assert_eq!(me.follow_caller(), None);
        // Still held to the CPU the test set, not moved by the retired placement.
        assert_eq!(me.allowed(), [usable[usable.len() - 1]]);
        me.release();
        assert_eq!(me.allowed(), [usable[usable.len() - 1]]);
    }

    #[test]
    fn a_cpu_beyond_the_mask_is_refused_and_changes_nothing() {
        let me = Placement::of_current_thread();
        let before = me.allowed();
        assert!(!pin(os::current_thread(), libc::CPU_SETSIZE as usize));
        assert!(!pin(os::current_thread(), usize::MAX));
        assert_eq!(me.allowed(), before);
    }
}
