//! A kernel double for tests above the ioctl layer: answers POOL_CONFIGS with one packed
//! nvlist and POOL_STATS per pool name with a reply or an errno, the way `put_nvlist` does
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
            Request::PoolStats => match self.stats.get(&name) {
                Some(Ok(r)) => r.clone(),
                Some(Err(errno)) => return Err(*errno),
                None => return Err(libc::ENOENT),
            },
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
