//! Whether a program runs in an image with nothing but itself: an x86-64
//! ELF executable with no program interpreter (PT_INTERP), i.e. statically
//! linked. A dynamically linked program names its loader there
//! (`/lib64/ld-linux-x86-64.so.2`), which an image without a libc lacks, so
//! it would fail at start with a bare "no such file or directory".
//!
//! Hand-written rather than a crate (goblin, object): three header fields
//! and one loop over program headers, read with bounds checks; nothing else
//! of the file is needed.

/// `EM_X86_64`: the only machine the images are built for (linux/amd64).
const MACHINE_X86_64: u16 = 62;
/// `PT_INTERP`: the segment naming the dynamic loader.
const PT_INTERP: u32 = 3;
/// `ET_EXEC` and `ET_DYN` (static-pie executables are ET_DYN too).
const RUNNABLE_TYPES: [u16; 2] = [2, 3];
/// Size of an ELF64 program header.
const PROGRAM_HEADER_SIZE: usize = 56;

/// Why a file is not a static x86-64 executable.
#[derive(Debug, PartialEq, Eq)]
pub enum NotStatic {
    /// Not ELF at all (a script, an archive, text).
    NotElf,
    /// 32-bit or big-endian ELF.
    NotElf64LittleEndian,
    /// ELF for another machine (its `e_machine`).
    OtherMachine(u16),
    /// An object file, a core dump: nothing to run (its `e_type`).
    NotExecutable(u16),
    /// The headers point past the end of the file.
    Truncated,
    /// Dynamically linked; the loader it asks for.
    Dynamic {
        /// The PT_INTERP path, e.g. `/lib64/ld-linux-x86-64.so.2`.
        interpreter: String,
    },
}

impl std::fmt::Display for NotStatic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::NotElf => f.write_str("is not an ELF executable (a script?)"),
            Self::NotElf64LittleEndian => {
                f.write_str("is not a 64-bit little-endian ELF executable")
            }
            Self::OtherMachine(machine) => {
                write!(
                    f,
                    "is built for another machine (ELF e_machine {machine}, not x86-64)"
                )
            }
            Self::NotExecutable(kind) => write!(f, "is not an executable (ELF e_type {kind})"),
            Self::Truncated => f.write_str("is a truncated ELF file"),
            Self::Dynamic { interpreter } => {
                write!(
                    f,
                    "is dynamically linked (it needs the loader {interpreter})"
                )
            }
        }
    }
}

/// Checks that `bytes` are a statically linked x86-64 ELF executable.
pub fn check_static_x86_64(bytes: &[u8]) -> Result<(), NotStatic> {
    if bytes.get(..4) != Some(b"\x7fELF".as_slice()) {
        return Err(NotStatic::NotElf);
    }
    // e_ident: EI_CLASS 2 (64-bit), EI_DATA 1 (little-endian).
    if bytes.get(4..6) != Some([2, 1].as_slice()) {
        return Err(NotStatic::NotElf64LittleEndian);
    }
    let kind = u16_at(bytes, 16)?;
    let machine = u16_at(bytes, 18)?;
    if machine != MACHINE_X86_64 {
        return Err(NotStatic::OtherMachine(machine));
    }
    if !RUNNABLE_TYPES.contains(&kind) {
        return Err(NotStatic::NotExecutable(kind));
    }
    let table = usize::try_from(u64_at(bytes, 32)?).map_err(|_| NotStatic::Truncated)?;
    let entry_size = usize::from(u16_at(bytes, 54)?);
    let count = usize::from(u16_at(bytes, 56)?);
    if entry_size < PROGRAM_HEADER_SIZE {
        return Err(NotStatic::Truncated);
    }
    for index in 0..count {
        let header = index
            .checked_mul(entry_size)
            .and_then(|offset| table.checked_add(offset))
            .ok_or(NotStatic::Truncated)?;
        if u32_at(bytes, header)? == PT_INTERP {
            let start =
                usize::try_from(u64_at(bytes, header + 8)?).map_err(|_| NotStatic::Truncated)?;
            let size =
                usize::try_from(u64_at(bytes, header + 32)?).map_err(|_| NotStatic::Truncated)?;
            let path = start
                .checked_add(size)
                .and_then(|end| bytes.get(start..end))
                .ok_or(NotStatic::Truncated)?;
            let path = path.split(|&byte| byte == 0).next().unwrap_or_default();
            return Err(NotStatic::Dynamic {
                interpreter: String::from_utf8_lossy(path).into_owned(),
            });
        }
    }
    Ok(())
}

fn field<const N: usize>(bytes: &[u8], offset: usize) -> Result<[u8; N], NotStatic> {
    offset
        .checked_add(N)
        .and_then(|end| bytes.get(offset..end))
        .and_then(|slice| slice.try_into().ok())
        .ok_or(NotStatic::Truncated)
}

fn u16_at(bytes: &[u8], offset: usize) -> Result<u16, NotStatic> {
    field(bytes, offset).map(u16::from_le_bytes)
}

fn u32_at(bytes: &[u8], offset: usize) -> Result<u32, NotStatic> {
    field(bytes, offset).map(u32::from_le_bytes)
}

fn u64_at(bytes: &[u8], offset: usize) -> Result<u64, NotStatic> {
    field(bytes, offset).map(u64::from_le_bytes)
}

/// Test executables made of headers alone: enough for the check, never run.
#[cfg(test)]
pub mod fake {
    use super::{PROGRAM_HEADER_SIZE, PT_INTERP};

    /// A static-pie x86-64 executable: one PT_LOAD, no PT_INTERP.
    pub fn static_executable() -> Vec<u8> {
        executable(None)
    }

    /// A dynamically linked one asking for `interpreter`.
    pub fn dynamic_executable(interpreter: &str) -> Vec<u8> {
        executable(Some(interpreter))
    }

    fn executable(interpreter: Option<&str>) -> Vec<u8> {
        const HEADER_SIZE: usize = 64;
        let count = 1 + usize::from(interpreter.is_some());
        let data_at = HEADER_SIZE + count * PROGRAM_HEADER_SIZE;
        let mut bytes = vec![0u8; HEADER_SIZE];
        bytes[..7].copy_from_slice(b"\x7fELF\x02\x01\x01");
        bytes[16..18].copy_from_slice(&3u16.to_le_bytes()); // ET_DYN
        bytes[18..20].copy_from_slice(&62u16.to_le_bytes()); // EM_X86_64
        bytes[20..24].copy_from_slice(&1u32.to_le_bytes());
        bytes[32..40].copy_from_slice(&(HEADER_SIZE as u64).to_le_bytes());
        bytes[52..54].copy_from_slice(&(HEADER_SIZE as u16).to_le_bytes());
        bytes[54..56].copy_from_slice(&(PROGRAM_HEADER_SIZE as u16).to_le_bytes());
        bytes[56..58].copy_from_slice(&(count as u16).to_le_bytes());
        let mut program_header = |kind: u32, offset: usize, size: usize| {
            let mut header = [0u8; PROGRAM_HEADER_SIZE];
            header[..4].copy_from_slice(&kind.to_le_bytes());
            header[8..16].copy_from_slice(&(offset as u64).to_le_bytes());
            header[32..40].copy_from_slice(&(size as u64).to_le_bytes());
            bytes.extend_from_slice(&header);
        };
        if let Some(interpreter) = interpreter {
            program_header(PT_INTERP, data_at, interpreter.len() + 1);
        }
        program_header(1, 0, data_at); // PT_LOAD
        if let Some(interpreter) = interpreter {
            bytes.extend_from_slice(interpreter.as_bytes());
            bytes.push(0);
        }
        bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_static_executable_passes() {
        assert_eq!(check_static_x86_64(&fake::static_executable()), Ok(()));
    }

    #[test]
    fn a_dynamic_executable_names_its_loader() {
        let bytes = fake::dynamic_executable("/lib64/ld-linux-x86-64.so.2");
        assert_eq!(
            check_static_x86_64(&bytes),
            Err(NotStatic::Dynamic {
                interpreter: "/lib64/ld-linux-x86-64.so.2".into()
            })
        );
    }

    #[test]
    fn debians_true_is_dynamic() {
        let bytes = std::fs::read("/bin/true").unwrap();
        assert!(
            matches!(check_static_x86_64(&bytes), Err(NotStatic::Dynamic { .. })),
            "{:?}",
            check_static_x86_64(&bytes)
        );
    }

    #[test]
    fn scripts_other_machines_and_object_files_are_named() {
        assert_eq!(check_static_x86_64(b"#!/bin/sh\n"), Err(NotStatic::NotElf));
        let mut arm = fake::static_executable();
        arm[18..20].copy_from_slice(&183u16.to_le_bytes());
        assert_eq!(check_static_x86_64(&arm), Err(NotStatic::OtherMachine(183)));
        let mut object = fake::static_executable();
        object[16..18].copy_from_slice(&1u16.to_le_bytes());
        assert_eq!(
            check_static_x86_64(&object),
            Err(NotStatic::NotExecutable(1))
        );
        let mut elf32 = fake::static_executable();
        elf32[4] = 1;
        assert_eq!(
            check_static_x86_64(&elf32),
            Err(NotStatic::NotElf64LittleEndian)
        );
    }

    #[test]
    fn every_truncation_is_an_error_not_a_panic() {
        let bytes = fake::dynamic_executable("/lib/ld-musl-x86_64.so.1");
        for end in 0..bytes.len() {
            assert!(
                check_static_x86_64(&bytes[..end]).is_err(),
                "prefix of {end} bytes"
            );
        }
        let mut huge_table = fake::static_executable();
        huge_table[32..40].copy_from_slice(&u64::MAX.to_le_bytes());
        assert_eq!(check_static_x86_64(&huge_table), Err(NotStatic::Truncated));
    }
}
