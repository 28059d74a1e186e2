//! A kernel double for tests above the ioctl layer: answers POOL_CONFIGS with one packed
//! nvlist, and POOL_STATS and OBJSET_STATS per name with a reply or an errno, the way `put_nvlist` does
//! (ENOMEM with the needed size when the caller's buffer is too small).

use super::Platform;
use super::layout::CmdBuffer;
use super::layout::Request;
use super::protocol::Ioctl;
use std::collections::BTreeMap;

pub struct FakeKernel {
    pub configs: Vec<u8>,
    /// Pool name → the packed reply, or the errno the ioctl fails with.
    pub stats: BTreeMap<String, Result<Vec<u8>, i32>>,
    /// Dataset name → the packed OBJSET_STATS reply, or the errno; ENOENT when not listed.
    pub objsets: BTreeMap<String, Result<Vec<u8>, i32>>,
}

impl Ioctl for FakeKernel {
    fn platform(&self) -> Platform {
        Platform::Linux
    }

    fn call(&mut self, request: Request, cmd: &mut CmdBuffer) -> Result<(), i32> {
        let p = self.platform();
        let bytes = cmd.bytes_mut();
        let word = |off: usize| {
            let mut b = [0u8; 8];
            b.copy_from_slice(&bytes[off..off + 8]);
            u64::from_ne_bytes(b)
        };
        let (dst, size) = (word(p.nvlist_dst()), word(p.nvlist_dst_size()));
        let end = bytes.iter().position(|&b| b == 0).unwrap_or(0);
        let name = String::from_utf8_lossy(&bytes[..end]).into_owned();
        let reply = match request {
            Request::PoolConfigs => {
                bytes[p.cookie()..p.cookie() + 8].copy_from_slice(&1u64.to_ne_bytes());
                self.configs.clone()
            }
            Request::PoolStats | Request::ObjsetStats => {
                let replies = if request == Request::PoolStats {
                    &self.stats
                } else {
                    &self.objsets
                };
                match replies.get(&name) {
                    Some(Ok(r)) => r.clone(),
                    Some(Err(errno)) => return Err(*errno),
                    None => return Err(libc::ENOENT),
                }
            }
            _ => return Err(libc::ENOTTY),
        };
        bytes[p.nvlist_dst_size()..p.nvlist_dst_size() + 8]
            .copy_from_slice(&(reply.len() as u64).to_ne_bytes());
        if reply.len() as u64 > size {
            return Err(libc::ENOMEM);
        }
        let dst = dst as usize as *mut u8;
        // SAFETY: test double of the kernel's copyout: `dst` is the live buffer of `size`
        // bytes the protocol allocated for this call, and the reply fits (checked above).
        unsafe { std::ptr::copy_nonoverlapping(reply.as_ptr(), dst, reply.len()) };
        Ok(())
    }
}

/// A kernel double of `fm.c`'s queue for one cursor: the events after it, ENOMEM with
/// the needed size for a small buffer (the cursor stays), the dropped count once.
pub struct FakeQueue {
    pub events: Vec<(u64, Vec<u8>)>,
    /// Index of the event the cursor is on; `None` before the first.
    pub cursor: Option<usize>,
    pub dropped: u64,
    /// Each call: the request, `zc_guid` and the descriptor at both `zc_cleanup_fd` offsets.
    pub calls: Vec<(Request, u64, i32, i32)>,
    pub fail: Option<i32>,
}

impl Ioctl for FakeQueue {
    fn platform(&self) -> Platform {
        Platform::Linux
    }

    fn call(&mut self, request: Request, cmd: &mut CmdBuffer) -> Result<(), i32> {
        let p = self.platform();
        let bytes = cmd.bytes_mut();
        let word = |b: &[u8], o: usize| u64::from_ne_bytes(b[o..o + 8].try_into().unwrap());
        let int = |b: &[u8], o: usize| i32::from_ne_bytes(b[o..o + 4].try_into().unwrap());
        let [fd_a, fd_b] = p.cleanup_fd_offsets();
        let guid = word(bytes, p.guid());
        self.calls
            .push((request, guid, int(bytes, fd_a), int(bytes, fd_b)));
        if let Some(e) = self.fail {
            return Err(e);
        }
        match request {
            Request::EventsSeek => match self.events.iter().position(|(eid, _)| *eid == guid) {
                Some(i) => {
                    self.cursor = Some(i);
                    Ok(())
                }
                None => Err(libc::ENOENT),
            },
            Request::EventsNext => {
                let next = self.cursor.map_or(0, |i| i + 1);
                let Some((_, reply)) = self.events.get(next) else {
                    return Err(libc::ENOENT);
                };
                let size = word(bytes, p.nvlist_dst_size());
                bytes[p.nvlist_dst_size()..p.nvlist_dst_size() + 8]
                    .copy_from_slice(&(reply.len() as u64).to_ne_bytes());
                if reply.len() as u64 > size {
                    return Err(libc::ENOMEM);
                }
                let dst = word(bytes, p.nvlist_dst()) as usize as *mut u8;
                // SAFETY: test double of copyout into the live buffer of `size` bytes
                // the protocol passed; the reply fits (checked above).
                unsafe { std::ptr::copy_nonoverlapping(reply.as_ptr(), dst, reply.len()) };
                let dropped = std::mem::take(&mut self.dropped);
                bytes[p.cookie()..p.cookie() + 8].copy_from_slice(&dropped.to_ne_bytes());
                self.cursor = Some(next);
                Ok(())
            }
            _ => Err(libc::ENOTTY),
        }
    }
}

impl FakeQueue {
    /// A queue holding `events` (id, packed bytes), the cursor before the first.
    pub fn new(events: Vec<(u64, Vec<u8>)>) -> FakeQueue {
        FakeQueue {
            events,
            cursor: None,
            dropped: 0,
            calls: Vec::new(),
            fail: None,
        }
    }
}
