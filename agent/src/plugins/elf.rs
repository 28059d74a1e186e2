//! Is this file a complete ELF shared object for this machine? Checked before `dlopen`,
//! because the loader maps the file's segments and a segment that reaches past the end of a
//! truncated file is a SIGBUS in the agent the first time it is touched, not an error.
//!
//! The layout is the System V ABI's ELF format (`Elf64_Ehdr`/`Elf32_Ehdr`, `Elf*_Phdr`), as
//! `include/elf.h` of glibc or `sys/sys/elf_common.h` and `elf64.h` of FreeBSD define it.

/// The bytes read from the start of a plugin file: the header and, normally, every program
/// header (a shared object puts them right after the ELF header).
pub(super) const HEAD_BYTES: usize = 64 << 10;

const ET_DYN: u16 = 3;
const PT_LOAD: u32 = 1;
const ELFCLASS32: u8 = 1;
const ELFCLASS64: u8 = 2;
const ELFDATA2LSB: u8 = 1;
const ELFDATA2MSB: u8 = 2;

/// `e_machine` of the machine this agent was built for.
const fn this_machine() -> Option<u16> {
    if cfg!(target_arch = "x86_64") {
        Some(62) // EM_X86_64
    } else if cfg!(target_arch = "aarch64") {
        Some(183) // EM_AARCH64
    } else if cfg!(target_arch = "x86") {
        Some(3) // EM_386
    } else if cfg!(target_arch = "arm") {
        Some(40) // EM_ARM
    } else if cfg!(target_arch = "riscv64") {
        Some(243) // EM_RISCV
    } else if cfg!(target_arch = "powerpc64") {
        Some(21) // EM_PPC64
    } else {
        None
    }
}

/// Checks `head` (the first bytes of the file, up to [`HEAD_BYTES`]) of a file of `len`
/// bytes. `Err` says what is wrong in words for the operator.
pub(super) fn check(head: &[u8], len: u64) -> Result<(), String> {
    if head.len() < 16 || &head[..4] != b"\x7fELF" {
        return Err("not an ELF file (no ELF magic): not a shared object".into());
    }
    let wide = match head[4] {
        ELFCLASS64 => true,
        ELFCLASS32 => false,
        c => return Err(format!("ELF class {c} is unknown")),
    };
    let little = match head[5] {
        ELFDATA2LSB => true,
        ELFDATA2MSB => false,
        d => return Err(format!("ELF data encoding {d} is unknown")),
    };
    if wide != cfg!(target_pointer_width = "64") || little != cfg!(target_endian = "little") {
        return Err(format!(
            "built for another kind of machine ({}-bit, {} endian)",
            if wide { 64 } else { 32 },
            if little { "little" } else { "big" }
        ));
    }
    let read = Reader { head, little };
    let header_len = if wide { 64 } else { 52 };
    if head.len() < header_len {
        return Err(truncated(len));
    }
    let e_type = read.u16(16)?;
    let machine = read.u16(18)?;
    if e_type != ET_DYN {
        return Err(format!(
            "ELF type {e_type} is not a shared object (3): build it as a cdylib / with -shared"
        ));
    }
    if this_machine().is_some_and(|m| m != machine) {
        return Err(format!(
            "built for another architecture (ELF machine {machine})"
        ));
    }
    let (phoff, phentsize, phnum, shoff, shentsize, shnum) = if wide {
        (
            read.u64(32)?,
            u64::from(read.u16(54)?),
            u64::from(read.u16(56)?),
            read.u64(40)?,
            u64::from(read.u16(58)?),
            u64::from(read.u16(60)?),
        )
    } else {
        (
            u64::from(read.u32(28)?),
            u64::from(read.u16(42)?),
            u64::from(read.u16(44)?),
            u64::from(read.u32(32)?),
            u64::from(read.u16(46)?),
            u64::from(read.u16(48)?),
        )
    };
    let ph_min = if wide { 56 } else { 32 };
    if phnum == 0 || phentsize < ph_min {
        return Err("it has no program headers: not a loadable shared object".into());
    }
    let within = |offset: u64, size: u64| offset.checked_add(size).is_some_and(|end| end <= len);
    if !within(phoff, phentsize * phnum) {
        return Err(truncated(len));
    }
    if shnum > 0 && !within(shoff, shentsize * shnum) {
        return Err(truncated(len));
    }
    let mut loads = 0;
    for i in 0..phnum {
        let at = usize::try_from(phoff + i * phentsize).map_err(|_| truncated(len))?;
        if at + ph_min as usize > head.len() {
            return Err("its program headers are not at the start of the file".into());
        }
        let p_type = read.u32(at)?;
        if p_type != PT_LOAD {
            continue;
        }
        loads += 1;
        let (offset, filesz) = if wide {
            (read.u64(at + 8)?, read.u64(at + 32)?)
        } else {
            (u64::from(read.u32(at + 4)?), u64::from(read.u32(at + 16)?))
        };
        if !within(offset, filesz) {
            return Err(truncated(len));
        }
    }
    if loads == 0 {
        return Err("it has no loadable segment".into());
    }
    Ok(())
}

fn truncated(len: u64) -> String {
    format!("truncated: the ELF headers describe more than its {len} bytes")
}

struct Reader<'a> {
    head: &'a [u8],
    little: bool,
}

impl Reader<'_> {
    fn bytes<const N: usize>(&self, at: usize) -> Result<[u8; N], String> {
        self.head
            .get(at..at + N)
            .and_then(|b| b.try_into().ok())
            .ok_or_else(|| "its ELF header is cut short".to_string())
    }
    fn u16(&self, at: usize) -> Result<u16, String> {
        let b = self.bytes::<2>(at)?;
        Ok(if self.little {
            u16::from_le_bytes(b)
        } else {
            u16::from_be_bytes(b)
        })
    }
    fn u32(&self, at: usize) -> Result<u32, String> {
        let b = self.bytes::<4>(at)?;
        Ok(if self.little {
            u32::from_le_bytes(b)
        } else {
            u32::from_be_bytes(b)
        })
    }
    fn u64(&self, at: usize) -> Result<u64, String> {
        let b = self.bytes::<8>(at)?;
        Ok(if self.little {
            u64::from_le_bytes(b)
        } else {
            u64::from_be_bytes(b)
        })
    }
}

#[cfg(all(test, target_os = "linux", target_arch = "x86_64"))]
mod tests {
    use super::*;

    /// A real shared object of this system: zlib, which every Debian has (`zlib1g`).
    fn libz() -> Vec<u8> {
        std::fs::read("/usr/lib/x86_64-linux-gnu/libz.so.1").expect("zlib1g installed")
    }

    #[test]
    fn a_complete_shared_object_passes() {
        let so = libz();
        let head = &so[..so.len().min(HEAD_BYTES)];
        assert_eq!(check(head, so.len() as u64), Ok(()));
    }

    #[test]
    fn a_truncated_one_does_not() {
        let so = libz();
        for keep in [so.len() / 2, so.len() - 1, 100, 10, 0] {
            let cut = &so[..keep];
            let head = &cut[..cut.len().min(HEAD_BYTES)];
            assert!(check(head, keep as u64).is_err(), "kept {keep} bytes");
        }
    }

    #[test]
    fn text_and_executables_do_not() {
        assert!(
            check(b"#!/bin/sh\necho hi\n", 18)
                .unwrap_err()
                .contains("ELF magic")
        );
        let mut so = libz();
        so[16] = 2; // ET_EXEC
        let err = check(&so[..HEAD_BYTES.min(so.len())], so.len() as u64).unwrap_err();
        assert!(err.contains("not a shared object"), "{err}");
        let mut so = libz();
        so[18] = 183; // EM_AARCH64
        let err = check(&so[..HEAD_BYTES.min(so.len())], so.len() as u64).unwrap_err();
        assert!(err.contains("another architecture"), "{err}");
    }
}
