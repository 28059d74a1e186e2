//! Keeping the agent's signals its own while plugins run inside it.
//!
//! A signal's disposition belongs to the whole process, so a C plugin that calls
//! `signal(SIGTERM, SIG_IGN)` (or installs a handler) would leave the agent deaf to SIGTERM
//! and stoppable only by SIGKILL. Two things keep SIGTERM, SIGINT and SIGHUP the agent's:
//!
//! * the dispositions the agent had when its first plugin host started ([`keep_agents`]) are
//!   put back after every plugin call, after loading (a library's initialisers run then)
//!   and whenever the host stops waiting for its plugins (a plugin hung in a call that
//!   changed them is not left to change them for good) — [`restore_agents`];
//! * plugin threads block the three signals ([`block_in_this_thread`]), so they are
//!   delivered to a thread of the agent, never run a handler on a plugin's thread, and a
//!   plugin that waits for them in its own thread (`sigwait`) does not take them away.
//!
//! Not contained, and said so in `docs/plugin-authoring.md`: the window between a plugin's
//! change and the restore (a signal arriving then is handled as the plugin said), other
//! signals, threads a plugin starts itself, and a plugin that ends the process (`abort`,
//! `_exit`, a crash).

use std::sync::OnceLock;

/// The signals the agent answers (`zpulse run`: exit, exit, reload).
const KEPT: [libc::c_int; 3] = [libc::SIGTERM, libc::SIGINT, libc::SIGHUP];

/// The flags that change how a handler runs. Not the others: the C library adds its own
/// (`SA_RESTORER` on Linux) to what it is given, so a disposition put back reads back with
/// flags it was not given.
const MEANINGFUL_FLAGS: libc::c_int =
    libc::SA_SIGINFO | libc::SA_RESETHAND | libc::SA_NODEFER | libc::SA_RESTART | libc::SA_ONSTACK;

/// A disposition as `sigaction(2)` gives it.
#[derive(Clone, Copy)]
struct Disposition(libc::sigaction);

// SAFETY: a `sigaction` is plain data (a handler address, flags, a mask): nothing in it is
// tied to a thread, and it is only read after being stored once.
unsafe impl Send for Disposition {}
// SAFETY: as above; shared read-only.
unsafe impl Sync for Disposition {}

static AGENTS: OnceLock<[Disposition; 3]> = OnceLock::new();

fn current(signal: libc::c_int) -> Disposition {
    // SAFETY: an all-zero `sigaction` is a valid value of the C struct (SIG_DFL, no flags,
    // an empty mask), and is only overwritten by the call.
    let mut old: libc::sigaction = unsafe { std::mem::zeroed() };
    // SAFETY: a null new action only reads the disposition into `old`, a valid pointer.
    unsafe { libc::sigaction(signal, std::ptr::null(), &mut old) };
    Disposition(old)
}

/// Remembers the agent's dispositions of SIGTERM, SIGINT and SIGHUP, once per process: at
/// the first plugin host's start, before any plugin is loaded (the daemon installs its
/// handlers before it starts the host; a later host must not take a plugin's change for the
/// agent's).
pub(super) fn keep_agents() {
    AGENTS.get_or_init(|| KEPT.map(current));
}

/// Puts back each of the agent's dispositions a plugin changed; the names of those it did.
pub(super) fn restore_agents() -> Vec<&'static str> {
    match AGENTS.get() {
        Some(agents) => restore(&KEPT, agents),
        None => Vec::new(),
    }
}

/// Puts back the disposition of each of `signals` that is not the one `kept` holds for it.
fn restore(signals: &[libc::c_int], kept: &[Disposition]) -> Vec<&'static str> {
    let mut restored = Vec::new();
    for (&signal, kept) in signals.iter().zip(kept) {
        let now = current(signal);
        if now.0.sa_sigaction == kept.0.sa_sigaction
            && now.0.sa_flags & MEANINGFUL_FLAGS == kept.0.sa_flags & MEANINGFUL_FLAGS
        {
            continue;
        }
        // SAFETY: `kept` is a disposition sigaction(2) itself returned for this signal; the
        // old one is not wanted (null).
        unsafe { libc::sigaction(signal, &kept.0, std::ptr::null_mut()) };
        restored.push(name(signal));
    }
    restored
}

fn name(signal: libc::c_int) -> &'static str {
    match signal {
        libc::SIGTERM => "SIGTERM",
        libc::SIGINT => "SIGINT",
        libc::SIGHUP => "SIGHUP",
        _ => "another signal",
    }
}

/// Blocks SIGTERM, SIGINT and SIGHUP in the calling thread (a plugin's): the kernel delivers
/// them to another thread, one of the agent's.
pub(super) fn block_in_this_thread() {
    // SAFETY: an all-zero sigset_t is a valid value, initialised by sigemptyset next.
    let mut set: libc::sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is a valid sigset_t for these calls, which only write into it; the
    // signal numbers are valid.
    unsafe {
        libc::sigemptyset(&mut set);
        for signal in KEPT {
            libc::sigaddset(&mut set, signal);
        }
    }
    // SAFETY: `set` is initialised; the old mask is not wanted (null). This thread's mask
    // only.
    unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) };
}

/// The warning for a plugin (or a plugin file's loading) that changed them.
pub(super) fn changed_warning(restored: &[&str]) -> String {
    format!(
        "changed the agent's handling of {}; restored (a plugin must not touch signal \
         dispositions: the agent must always stop on SIGTERM)",
        restored.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plugins_sig_ign_is_undone_and_named() {
        // SIGUSR2, which nothing else in the test process touches (the host's own restore,
        // run by other tests at the same time, handles the three the agent keeps).
        let signal = [libc::SIGUSR2];
        let kept = [current(libc::SIGUSR2)];
        assert_ne!(kept[0].0.sa_sigaction, libc::SIG_IGN);
        // What a plugin does: signal(SIGUSR2, SIG_IGN).
        // SAFETY: sets SIG_IGN for SIGUSR2 in this test process; put back by `restore`.
        unsafe { libc::signal(libc::SIGUSR2, libc::SIG_IGN) };
        assert_eq!(current(libc::SIGUSR2).0.sa_sigaction, libc::SIG_IGN);
        assert_eq!(restore(&signal, &kept), ["another signal"]);
        assert_eq!(
            current(libc::SIGUSR2).0.sa_sigaction,
            kept[0].0.sa_sigaction
        );
        // Nothing changed: nothing to say.
        assert!(restore(&signal, &kept).is_empty());
    }

    #[test]
    fn plugin_threads_block_the_agents_signals() {
        let mask = std::thread::spawn(|| {
            block_in_this_thread();
            // SAFETY: zeroed then written by pthread_sigmask (a null new set only reads).
            let mut now: libc::sigset_t = unsafe { std::mem::zeroed() };
            // SAFETY: reads this thread's mask into `now`.
            unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, std::ptr::null(), &mut now) };
            // SAFETY: `now` is an initialised sigset_t.
            KEPT.map(|s| unsafe { libc::sigismember(&now, s) } == 1)
        })
        .join()
        .unwrap();
        assert_eq!(mask, [true; 3]);
    }
}
