//! The file `kfd co` and `kfd disasm` read: a regular file is memory-mapped (a 1.3 GB ROCm
//! library is then paged in only where the tools look: the bundle headers and the code
//! objects they list), anything else — a pipe, `/dev/stdin`, a device — is read into memory
//! only while it starts like a code object, and at most [`MAX_STREAMED_BYTES`].

use std::fs::File;
use std::io::Read;
use std::ops::Deref;
use std::path::Path;

use crate::error::{CliError, CliResult};

/// The most bytes read from input that is not a regular file (a pipe, a device): a HIP
/// program or library larger than this has to be saved to a file first.
pub const MAX_STREAMED_BYTES: u64 = 256 << 20;

/// Bytes a streamed input must show before `kfd` goes on reading it: enough for every magic
/// a container starts with (ELF, `__CLANG_OFFLOAD_BUNDLE__`, `CCOB`).
const MAGIC_BYTES: usize = 24;

/// The bytes of an input file.
pub enum CodeFile {
    /// A regular file, mapped read-only.
    Mapped(memmap2::Mmap),
    /// An empty regular file, or input read from a stream.
    Read(Vec<u8>),
}

impl Deref for CodeFile {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        match self {
            CodeFile::Mapped(map) => map,
            CodeFile::Read(bytes) => bytes,
        }
    }
}

/// Whether `head` (the first [`MAGIC_BYTES`], or all of a shorter input) starts like a code
/// object, bundle or HIP program.
fn starts_like_a_container(head: &[u8]) -> bool {
    let magics: [&[u8]; 3] = [
        b"\x7fELF",
        codeobj::bundle::OFFLOAD_BUNDLE_MAGIC,
        codeobj::bundle::COMPRESSED_BUNDLE_MAGIC,
    ];
    magics.iter().any(|m| head.starts_with(m))
}

/// Opens `path` for reading as a container.
pub fn open(path: &Path) -> CliResult<CodeFile> {
    let shown = path.display();
    let cannot = |e: std::io::Error| CliError::usage(format!("cannot read '{shown}': {e}"));
    let file = File::open(path).map_err(cannot)?;
    let meta = file.metadata().map_err(cannot)?;
    if meta.is_dir() {
        return Err(CliError::usage(format!("'{shown}' is a directory")));
    }
    if meta.is_file() {
        if meta.len() == 0 {
            return Ok(CodeFile::Read(Vec::new()));
        }
        #[allow(unsafe_code)]
        // SAFETY: a private read-only mapping of a file opened read-only; the bytes are read
        // as untrusted input only (every parser bounds-checks). The one hazard of a file
        // mapping — another process truncating or rewriting the file while `kfd` reads it —
        // changes what `kfd` sees, as with any file read during a write; it is the usual
        // contract of tools that map their input (ripgrep, the object crate's users).
        let map = unsafe { memmap2::Mmap::map(&file) }.map_err(cannot)?;
        return Ok(CodeFile::Mapped(map));
    }
    read_stream(file, &shown.to_string(), MAX_STREAMED_BYTES)
}

/// Reads a non-regular input: refused at once unless it starts like a container, and past
/// `cap` bytes.
fn read_stream(input: impl Read, shown: &str, cap: u64) -> CliResult<CodeFile> {
    let cannot = |e: std::io::Error| CliError::usage(format!("cannot read '{shown}': {e}"));
    let mut input = input.take(cap + 1);
    let mut bytes = Vec::new();
    while bytes.len() < MAGIC_BYTES {
        let mut chunk = [0u8; MAGIC_BYTES];
        let want = MAGIC_BYTES - bytes.len();
        match input.read(&mut chunk[..want]) {
            Ok(0) => break,
            Ok(n) => bytes.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(cannot(e)),
        }
    }
    if bytes.is_empty() {
        return Err(CliError::failure(format!(
            "'{shown}' is empty, not a code object, offload bundle or HIP program"
        )));
    }
    if !starts_like_a_container(&bytes) {
        return Err(CliError::failure(format!(
            "'{shown}' is not a code object, offload bundle or HIP program (it starts with {})",
            hex_head(&bytes)
        )));
    }
    input.read_to_end(&mut bytes).map_err(cannot)?;
    if bytes.len() as u64 > cap {
        return Err(CliError::usage(format!(
            "'{shown}' is not a regular file and gives more than {} MiB: save it to a file first",
            cap >> 20
        )));
    }
    Ok(CodeFile::Read(bytes))
}

fn hex_head(bytes: &[u8]) -> String {
    let shown: Vec<String> = bytes.iter().take(8).map(|b| format!("{b:02x}")).collect();
    shown.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_must_start_like_a_container() {
        const CAP: u64 = 1 << 20;
        let zeros = std::io::repeat(0);
        let e = read_stream(zeros, "/dev/zero", CAP).err().unwrap();
        assert!(e.message.contains("starts with 00 00 00 00"), "{e}");
        let e = read_stream(&b""[..], "empty", CAP).err().unwrap();
        assert!(e.message.contains("empty"), "{e}");
        // An endless stream that starts like an ELF file stops at the cap.
        let endless = std::io::Cursor::new(b"\x7fELF".to_vec()).chain(std::io::repeat(7));
        let e = read_stream(endless, "pipe", CAP).err().unwrap();
        assert!(e.message.contains("more than 1 MiB"), "{e}");
        let small = read_stream(&b"__CLANG_OFFLOAD_BUNDLE__\x00\x00"[..], "pipe", CAP).unwrap();
        assert_eq!(small.len(), 26);
        // A pipe that delivers the magic a byte at a time is still read.
        let slow = (&b"\x7fE"[..]).chain(&b"LF"[..]);
        assert_eq!(read_stream(slow, "pipe", CAP).unwrap().len(), 4);
    }
}
