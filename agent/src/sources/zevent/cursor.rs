//! The kept cursor: the last kernel event the agent handled, so that a restart neither
//! repeats events nor loses them. A small text file in the state directory:
//!
//! ```text
//! zpulse zevent cursor 1
//! boot 5d0c6e3c-0b0e-4f7b-9c39-3c1b0d2e5a10
//! eid 1207
//! time 1764806400.000123456
//! ```
//!
//! `boot` is the boot the queue belongs to ([`super::boot_id`]); `time` the kernel's time of
//! event `eid`, which tells a reloaded module's new queue (whose ids start again at 1) from
//! the same one. Written whole to a temporary file beside it and renamed over it, so a crash
//! leaves the old cursor or the new one, never half of either.

use std::io::Write as _;
use std::path::Path;
use zpulse_proto::event::EventTime;

const HEADER: &str = "zpulse zevent cursor 1";
/// A cursor file is four short lines; anything larger is not one.
const MAX_BYTES: u64 = 4096;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cursor {
    pub boot_id: String,
    pub eid: u64,
    pub time: EventTime,
}

impl Cursor {
    pub fn to_text(&self) -> String {
        format!(
            "{HEADER}\nboot {}\neid {}\ntime {}.{:09}\n",
            self.boot_id, self.eid, self.time.seconds, self.time.nanos
        )
    }

    /// Parses [`Cursor::to_text`]; the error says which line is wrong.
    pub fn parse(text: &str) -> Result<Cursor, String> {
        let mut lines = text.lines();
        if lines.next() != Some(HEADER) {
            return Err(format!(
                "not a zpulse zevent cursor (its first line is not {HEADER:?})"
            ));
        }
        let mut field = |name: &str| -> Result<String, String> {
            let line = lines.next().ok_or_else(|| format!("no `{name}` line"))?;
            line.strip_prefix(name)
                .and_then(|rest| rest.strip_prefix(' '))
                .map(|v| v.trim().to_owned())
                .ok_or_else(|| format!("expected `{name} …`, found {line:?}"))
        };
        let boot_id = field("boot")?;
        if boot_id.chars().any(char::is_control) || boot_id.len() > 256 {
            return Err("boot: not a boot id".into());
        }
        let eid = field("eid")?;
        let eid = eid
            .parse::<u64>()
            .map_err(|_| format!("eid: {eid:?} is not an event id"))?;
        let time = field("time")?;
        let bad = || format!("time: {time:?} is not seconds.nanoseconds");
        let (s, n) = time.split_once('.').ok_or_else(bad)?;
        let (seconds, nanos) = (s.parse::<u32>(), n.parse::<u32>());
        let (Ok(seconds), Ok(nanos)) = (seconds, nanos) else {
            return Err(bad());
        };
        if n.len() != 9 || nanos > 999_999_999 {
            return Err(bad());
        }
        Ok(Cursor {
            boot_id,
            eid,
            time: EventTime { seconds, nanos },
        })
    }

    /// Reads the kept cursor: `Ok(None)` when there is none yet, `Err` (with the path) when
    /// the file is there but not a cursor, or not a regular file.
    pub fn load(path: &Path) -> Result<Option<Cursor>, String> {
        match crate::sources::root::read_regular(path, MAX_BYTES) {
            Ok(bytes) => {
                let text = String::from_utf8(bytes)
                    .map_err(|_| format!("{}: not text", path.display()))?;
                Cursor::parse(&text)
                    .map(Some)
                    .map_err(|e| format!("{}: {e}", path.display()))
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(format!("{}: {e}", path.display())),
        }
    }

    /// Replaces the kept cursor atomically. The temporary file is created new (never
    /// through a link planted in its place) with mode 0600.
    pub fn store(&self, path: &Path) -> Result<(), String> {
        use std::os::unix::fs::OpenOptionsExt;
        let name = path
            .file_name()
            .ok_or_else(|| format!("{}: not a file name", path.display()))?;
        let tmp = path.with_file_name(format!(".{}.tmp", name.to_string_lossy()));
        let _ = std::fs::remove_file(&tmp);
        let write = || -> std::io::Result<()> {
            let mut f = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .custom_flags(libc::O_NOFOLLOW)
                .open(&tmp)?;
            f.write_all(self.to_text().as_bytes())?;
            f.sync_data()?;
            std::fs::rename(&tmp, path)
        };
        write().map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            format!("{}: cannot keep the event cursor: {e}", path.display())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cursor() -> Cursor {
        Cursor {
            boot_id: "5d0c6e3c-0b0e-4f7b-9c39-3c1b0d2e5a10".into(),
            eid: 1207,
            time: EventTime {
                seconds: 1_764_806_400,
                nanos: 123_456,
            },
        }
    }

    #[test]
    fn a_cursor_reads_back_what_was_written() {
        let c = cursor();
        assert_eq!(
            c.to_text(),
            "zpulse zevent cursor 1\nboot 5d0c6e3c-0b0e-4f7b-9c39-3c1b0d2e5a10\neid 1207\n\
             time 1764806400.000123456\n"
        );
        assert_eq!(Cursor::parse(&c.to_text()).unwrap(), c);
    }

    #[test]
    fn a_damaged_cursor_is_refused_with_its_line() {
        for (text, says) in [
            ("", "first line"),
            ("zpulse zevent cursor 1\n", "no `boot`"),
            (
                "zpulse zevent cursor 1\nboot x\neid -1\ntime 1.000000000\n",
                "eid",
            ),
            ("zpulse zevent cursor 1\nboot x\neid 1\ntime 1.5\n", "time"),
            (
                "zpulse zevent cursor 1\nboot x\neid 1\ntime 1.9999999999\n",
                "time",
            ),
            (
                "zpulse zevent cursor 1\nboot\u{1b}x\neid 1\ntime 1.000000000\n",
                "boot",
            ),
            ("zpulse zevent cursor 1\nbootx\n", "expected `boot"),
        ] {
            let e = Cursor::parse(text).unwrap_err();
            assert!(e.contains(says), "{text:?}: {e}");
        }
    }

    #[test]
    fn stored_atomically_and_never_through_a_link() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("zevent-cursor");
        assert_eq!(Cursor::load(&path).unwrap(), None);
        cursor().store(&path).unwrap();
        assert_eq!(Cursor::load(&path).unwrap(), Some(cursor()));
        // A link planted where the temporary file goes is replaced, not written through.
        let victim = dir.path().join("victim");
        std::fs::write(&victim, b"keep").unwrap();
        std::os::unix::fs::symlink(&victim, dir.path().join(".zevent-cursor.tmp")).unwrap();
        let mut next = cursor();
        next.eid = 1300;
        next.store(&path).unwrap();
        assert_eq!(std::fs::read(&victim).unwrap(), b"keep");
        assert_eq!(Cursor::load(&path).unwrap().unwrap().eid, 1300);
        // A FIFO in the cursor's place is an error, not a hang.
        let fifo = dir.path().join("fifo");
        crate::sources::root::make_fifo(&fifo);
        assert!(Cursor::load(&fifo).is_err());
        // Garbage is an error naming the file.
        std::fs::write(&path, b"\xff\xfe").unwrap();
        assert!(Cursor::load(&path).unwrap_err().contains("zevent-cursor"));
    }
}
