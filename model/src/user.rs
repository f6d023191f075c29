//! User memory as the kernel sees it: `copy_from_user` / `copy_to_user`.
//!
//! ioctl arguments carry user pointers (the event array of `WAIT_EVENTS`, the GPU id array of
//! `MAP_MEMORY_TO_GPU`, the CU mask …). The model runs in the address space of its client, so
//! user memory is this process's memory; it is read and written with `process_vm_readv` /
//! `process_vm_writev` on our own pid, which report an unmapped or protected address as
//! `EFAULT` instead of faulting — exactly the kernel's contract.

// Unsafe here: writes into this process, PROCMAP_QUERY, mincore/madvise, a fork handler.
#![allow(unsafe_code)]

use crate::errno::{Errno, KResult};
use kfd_sys::{FromBytes, Immutable, IntoBytes};
use nix::sys::uio::{process_vm_readv, process_vm_writev, RemoteIoVec};
use nix::unistd::Pid;
use std::io::{IoSlice, IoSliceMut};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Once;

/// Access to the calling process's memory.
pub trait UserAccess: Send + Sync {
    /// `copy_from_user`: fills `buf` from `addr`, or `EFAULT`.
    fn read(&self, addr: u64, buf: &mut [u8]) -> KResult<()>;
    /// `copy_to_user`: stores `data` at `addr`, or `EFAULT`.
    fn write(&self, addr: u64, data: &[u8]) -> KResult<()>;
}

static PID: AtomicU32 = AtomicU32::new(0);
static ATFORK: Once = Once::new();

extern "C" fn forget_pid_in_child() {
    PID.store(0, Ordering::Relaxed);
}

/// This process's id, cached: every ioctl checks it (a forked child may not use its parent's
/// `/dev/kfd`) and every user-memory copy names it, and `getpid` is a system call. A fork
/// handler clears the cache in the child.
pub fn current_pid() -> u32 {
    let cached = PID.load(Ordering::Relaxed);
    if cached != 0 {
        return cached;
    }
    ATFORK.call_once(|| {
        // SAFETY: registers a child handler that only stores to an atomic, which is
        // async-signal-safe as a fork handler must be.
        let r = unsafe { libc::pthread_atfork(None, None, Some(forget_pid_in_child)) };
        if r != 0 {
            log::warn!(target: crate::layer::HOST_USER, "pthread_atfork failed ({r}); the pid is not cached");
        }
    });
    let pid = std::process::id();
    PID.store(pid, Ordering::Relaxed);
    pid
}

/// This process's own memory, read and written as the kernel does (`EFAULT` for an address
/// that is not mapped so, never a fault).
#[derive(Debug, Clone, Copy, Default)]
pub struct SelfProcess;

fn remote(addr: u64, len: usize) -> KResult<RemoteIoVec> {
    let base = usize::try_from(addr).map_err(|_| Errno::EFAULT)?;
    base.checked_add(len).ok_or(Errno::EFAULT)?;
    Ok(RemoteIoVec { base, len })
}

impl SelfProcess {
    /// `copy_from_user`: fills `buf` from `addr`, or `EFAULT`. Only `buf` is written.
    pub fn read(&self, addr: u64, buf: &mut [u8]) -> KResult<()> {
        if buf.is_empty() {
            return Ok(());
        }
        let len = buf.len();
        let r = [remote(addr, len)?];
        let mut l = [IoSliceMut::new(buf)];
        match process_vm_readv(Pid::from_raw(current_pid() as i32), &mut l, &r) {
            Ok(n) if n == len => Ok(()),
            _ => Err(Errno::EFAULT),
        }
    }

    /// `copy_to_user`: stores `data` at `addr`, or `EFAULT` when the range is not mapped
    /// writable.
    ///
    /// # Safety
    ///
    /// `addr..addr + data.len()` is written behind the compiler's back, wherever it is in this
    /// process: it must be memory the caller may write — no Rust reference (other than to
    /// atomics or cells) into it is live, and it holds no value whose validity these bytes
    /// could break — or not be mapped writable at all (then the call is `EFAULT` and writes
    /// nothing).
    pub unsafe fn write(&self, addr: u64, data: &[u8]) -> KResult<()> {
        if data.is_empty() {
            return Ok(());
        }
        let r = [remote(addr, data.len())?];
        let l = [IoSlice::new(data)];
        match process_vm_writev(Pid::from_raw(current_pid() as i32), &l, &r) {
            Ok(n) if n == data.len() => Ok(()),
            _ => Err(Errno::EFAULT),
        }
    }
}

/// The memory of a client process that [`crate::Model::open`] made: [`SelfProcess`], written
/// only through addresses that came with [`crate::Process::ioctl`] (in the argument bytes or in
/// memory they handed to a queue), whose caller promised they are its memory to write.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct ClientMemory;

impl UserAccess for ClientMemory {
    fn read(&self, addr: u64, buf: &mut [u8]) -> KResult<()> {
        SelfProcess.read(addr, buf)
    }

    fn write(&self, addr: u64, data: &[u8]) -> KResult<()> {
        // SAFETY: a `ClientMemory` is only the user memory of a process that `Model::open`
        // made (or, in unit tests, of the test's own buffers), and the driver writes it only
        // at addresses taken from that process's ioctl arguments or from memory they handed
        // to its queues, which the caller of the unsafe `Process::ioctl` promised are its own
        // to write (`Process::call` passes none).
        unsafe { SelfProcess.write(addr, data) }
    }
}

/// The largest array an ioctl copies in from user memory. The kernel copies such arrays
/// (MAP_MEMORY_TO_GPU's GPU ids, WAIT_EVENTS's event data) into a `kmalloc_array` buffer, and
/// `kmalloc` fails above `KMALLOC_MAX_SIZE` (4 MiB with 4 KiB pages), so a larger count is
/// `ENOMEM` there too — never a multi-gigabyte allocation in the model.
pub const MAX_USER_ARRAY_BYTES: usize = 4 << 20;

/// Typed helpers over [`UserAccess`].
pub trait UserAccessExt: UserAccess {
    /// Reads one `T` from user memory.
    fn read_value<T: FromBytes + IntoBytes>(&self, addr: u64) -> KResult<T> {
        let mut value = T::new_zeroed();
        self.read(addr, value.as_mut_bytes())?;
        Ok(value)
    }

    /// Reads `count` `T`s from user memory; `ENOMEM` when the kernel could not allocate the
    /// array (more than [`MAX_USER_ARRAY_BYTES`]), before anything is allocated or read.
    fn read_array<T: FromBytes + IntoBytes + Clone>(
        &self,
        addr: u64,
        count: usize,
    ) -> KResult<Vec<T>> {
        count
            .checked_mul(core::mem::size_of::<T>())
            .filter(|&bytes| bytes <= MAX_USER_ARRAY_BYTES)
            .ok_or(Errno::ENOMEM)?;
        let mut out = vec![T::new_zeroed(); count];
        self.read(addr, out.as_mut_slice().as_mut_bytes())?;
        Ok(out)
    }

    /// Writes one `T` to user memory.
    fn write_value<T: IntoBytes + Immutable>(&self, addr: u64, value: &T) -> KResult<()> {
        self.write(addr, value.as_bytes())
    }

    /// Writes a slice of `T` to user memory.
    fn write_array<T: IntoBytes + Immutable>(&self, addr: u64, values: &[T]) -> KResult<()> {
        self.write(addr, values.as_bytes())
    }
}

impl<U: UserAccess + ?Sized> UserAccessExt for U {}

/// Whether `[addr, addr+len)` lies inside readable and writable mappings of this process,
/// the check `USERPTR` registration does where the kernel pins the pages. It costs one
/// `PROCMAP_QUERY` per mapping the range spans (Linux 6.11+), not a read of the whole
/// `/proc/self/maps` — which grows with every range a client reserves, so that registering
/// many ranges would cost quadratic time; older kernels fall back to reading it.
pub fn is_user_range_mapped_rw(addr: u64, len: u64) -> bool {
    let Some(end) = addr.checked_add(len).filter(|_| len > 0) else {
        return false;
    };
    match query_range_rw(addr, end) {
        Some(answer) => answer,
        None => maps_range_rw(addr, end),
    }
}

/// `struct procmap_query` of `linux/fs.h` (104 bytes).
#[repr(C)]
#[derive(Default)]
struct ProcmapQuery {
    size: u64,
    query_flags: u64,
    query_addr: u64,
    vma_start: u64,
    vma_end: u64,
    vma_flags: u64,
    vma_page_size: u64,
    vma_offset: u64,
    inode: u64,
    dev_major: u32,
    dev_minor: u32,
    vma_name_size: u32,
    build_id_size: u32,
    vma_name_addr: u64,
    build_id_addr: u64,
}

/// `PROCMAP_QUERY`: `_IOWR('f', 17, struct procmap_query)`.
const PROCMAP_QUERY: u32 = 0xC068_6611;
/// `PROCMAP_QUERY_VMA_READABLE`.
const PROCMAP_QUERY_VMA_READABLE: u64 = 0x01;
/// `PROCMAP_QUERY_VMA_WRITABLE`.
const PROCMAP_QUERY_VMA_WRITABLE: u64 = 0x02;

/// The range check through `PROCMAP_QUERY`; `None` when the kernel has no such ioctl.
fn query_range_rw(addr: u64, end: u64) -> Option<bool> {
    use std::os::fd::AsRawFd;
    let maps = std::fs::File::open("/proc/self/maps").ok()?;
    let mut covered = addr;
    while covered < end {
        let mut q = ProcmapQuery {
            size: core::mem::size_of::<ProcmapQuery>() as u64,
            query_addr: covered,
            ..Default::default()
        };
        // SAFETY: PROCMAP_QUERY reads and writes exactly one `struct procmap_query`, which `q`
        // is (its size field says so); no name or build-id buffers are passed (sizes 0).
        let r = unsafe { libc::ioctl(maps.as_raw_fd(), PROCMAP_QUERY as _, &mut q) };
        if r != 0 {
            return match std::io::Error::last_os_error().raw_os_error() {
                // Nothing mapped at `covered`.
                Some(libc::ENOENT) => Some(false),
                _ => None,
            };
        }
        let rw = PROCMAP_QUERY_VMA_READABLE | PROCMAP_QUERY_VMA_WRITABLE;
        if q.vma_flags & rw != rw || q.vma_start > covered || q.vma_end <= covered {
            return Some(false);
        }
        covered = q.vma_end;
    }
    Some(true)
}

/// The range check by reading `/proc/self/maps` whole.
fn maps_range_rw(addr: u64, end: u64) -> bool {
    let Ok(maps) = std::fs::read_to_string("/proc/self/maps") else {
        return false;
    };
    let mut covered = addr;
    for line in maps.lines() {
        let mut parts = line.split_whitespace();
        let (Some(range), Some(perms)) = (parts.next(), parts.next()) else {
            continue;
        };
        let Some((lo, hi)) = range.split_once('-') else {
            continue;
        };
        let (Ok(lo), Ok(hi)) = (u64::from_str_radix(lo, 16), u64::from_str_radix(hi, 16)) else {
            continue;
        };
        if lo <= covered && covered < hi {
            if !perms.starts_with("rw") {
                return false;
            }
            covered = hi;
            if covered >= end {
                return true;
            }
        }
    }
    false
}

/// Page runs of this address space that a USERPTR registration populated (start → end, merged,
/// disjoint). A re-registration of them skips the residency check; `munmap` forgets them
/// ([`forget_populated`]). A stale entry (memory dropped some other way, as by
/// `MADV_DONTNEED`) only means its pages fault in on use again: populating changes no content.
static POPULATED: std::sync::Mutex<std::collections::BTreeMap<u64, u64>> =
    std::sync::Mutex::new(std::collections::BTreeMap::new());

fn populated() -> std::sync::MutexGuard<'static, std::collections::BTreeMap<u64, u64>> {
    POPULATED.lock().unwrap_or_else(|e| e.into_inner())
}

/// The parts of `[start, end)` outside the runs of `map`.
fn uncovered(map: &std::collections::BTreeMap<u64, u64>, start: u64, end: u64) -> Vec<(u64, u64)> {
    let mut out = Vec::new();
    let mut cur = start;
    let first = map.range(..=start).next_back().map_or(start, |(&s, _)| s);
    for (&s, &e) in map.range(first..end) {
        if e <= cur {
            continue;
        }
        if s > cur {
            out.push((cur, s.min(end)));
        }
        cur = cur.max(e);
        if cur >= end {
            break;
        }
    }
    if cur < end {
        out.push((cur, end));
    }
    out
}

/// Removes `[start, end)` from the runs of `map` (splitting a run it cuts).
fn remove_run(map: &mut std::collections::BTreeMap<u64, u64>, start: u64, end: u64) {
    let first = map.range(..start).next_back().map_or(start, |(&s, _)| s);
    let hit: Vec<(u64, u64)> = map
        .range(first..end)
        .filter(|&(_, &e)| e > start)
        .map(|(&s, &e)| (s, e))
        .collect();
    for (s, e) in hit {
        map.remove(&s);
        if s < start {
            map.insert(s, start);
        }
        if e > end {
            map.insert(end, e);
        }
    }
}

/// Adds `[start, end)` to the runs of `map`, merging it with the runs it touches.
fn add_run(map: &mut std::collections::BTreeMap<u64, u64>, start: u64, end: u64) {
    let (mut s, mut e) = (start, end);
    let first = map.range(..=start).next_back().map_or(start, |(&k, _)| k);
    let touched: Vec<(u64, u64)> = map
        .range(first..=end)
        .filter(|&(_, &re)| re >= start)
        .map(|(&k, &v)| (k, v))
        .collect();
    for (k, v) in touched {
        map.remove(&k);
        s = s.min(k);
        e = e.max(v);
    }
    map.insert(s, e);
}

/// The CPU unmapped `[addr, addr+len)`: a later registration there populates again.
pub fn forget_populated(addr: u64, len: u64) {
    let mut map = populated();
    if !map.is_empty() {
        remove_run(&mut map, addr, addr.saturating_add(len));
    }
}

/// `hmm_range_fault` for a USERPTR registration (amdgpu's `amdgpu_ttm_tt_get_user_pages`): the
/// range's pages are faulted in, for writing (KFD registers user memory writable), when the
/// buffer is made, so the GPU's and the CPU's later accesses find them present. Pages already
/// resident are left alone (found with `mincore`, and not looked at again while a registration
/// of them stands in the cache above); the others are populated run by run with
/// `MADV_POPULATE_WRITE`. A host kernel without it (before 5.14: `EINVAL`) leaves the
/// pages to fault in on use. `EFAULT` when the range cannot be populated.
pub fn populate_user_range_for_write(addr: u64, len: u64) -> KResult<()> {
    const PAGE: u64 = 4096;
    let end = addr.checked_add(len).ok_or(Errno::EINVAL)?;
    if len == 0 || addr % PAGE != 0 {
        return Err(Errno::EINVAL);
    }
    let todo = uncovered(&populated(), addr, end.next_multiple_of(PAGE));
    for (s, e) in todo {
        populate_run(s, e - s)?;
    }
    add_run(&mut populated(), addr, end.next_multiple_of(PAGE));
    Ok(())
}

/// [`populate_user_range_for_write`] of one run the cache does not know populated.
fn populate_run(addr: u64, len: u64) -> KResult<()> {
    const PAGE: u64 = 4096;
    let pages = len.div_ceil(PAGE) as usize;
    // mincore sets bit 0 of a page's byte when it is resident (the other bits are 0). A short
    // run is populated without looking first: populating a resident page costs no more.
    let mut resident = vec![0u8; pages];
    let looked = pages <= 16 || {
        // SAFETY: mincore only reads the page tables of the range and writes one byte per page
        // into `resident`, which has exactly that many; an unmapped range is an ENOMEM return.
        let r = unsafe {
            libc::mincore(
                addr as *mut libc::c_void,
                len as usize,
                resident.as_mut_ptr(),
            )
        };
        r == 0
    };
    if !looked {
        return Err(Errno::EFAULT);
    }
    let mut page = 0;
    while let Some(first) = find_byte(&resident[page..], 0) {
        let start_page = page + first;
        let run = find_byte(&resident[start_page..], 1).unwrap_or(pages - start_page);
        let start = addr + start_page as u64 * PAGE;
        // SAFETY: MADV_POPULATE_WRITE faults the pages of a mapping the caller registered as
        // its own user memory (write-faulting them as a store would); it changes no content.
        let r = unsafe {
            libc::madvise(
                start as *mut libc::c_void,
                run * PAGE as usize,
                libc::MADV_POPULATE_WRITE,
            )
        };
        if r != 0 {
            let e = std::io::Error::last_os_error().raw_os_error();
            if e == Some(libc::EINVAL) {
                log::debug!(target: crate::layer::MEMORY, "MADV_POPULATE_WRITE is not supported here: user pages fault in on use");
                return Ok(());
            }
            log::debug!(target: crate::layer::MEMORY, "populating user pages at {start:#x}: errno {e:?}");
            return Err(Errno::EFAULT);
        }
        page = start_page + run;
    }
    Ok(())
}

/// The index of the first byte of `bytes` equal to `value` (libc's `memchr`: a scan of a
/// million pages' residency must stay cheap in a debug build too).
fn find_byte(bytes: &[u8], value: u8) -> Option<usize> {
    // SAFETY: memchr reads at most `bytes.len()` bytes from the slice's start and returns a
    // pointer into it or null.
    let p = unsafe { libc::memchr(bytes.as_ptr().cast(), i32::from(value), bytes.len()) };
    (!p.is_null()).then(|| p as usize - bytes.as_ptr() as usize)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[test]
    fn the_pid_cache_is_cleared_in_a_forked_child() {
        let parent = current_pid();
        assert_eq!(parent, std::process::id());
        // SAFETY: the child only runs async-signal-safe code (an atomic load and store, getpid,
        // _exit) before it exits; the parent waits for it.
        let child = unsafe { libc::fork() };
        assert!(child >= 0, "fork failed");
        if child == 0 {
            // SAFETY: getpid and _exit are async-signal-safe.
            unsafe {
                let me = libc::getpid() as u32;
                libc::_exit(if current_pid() == me && me != parent {
                    0
                } else {
                    1
                });
            }
        }
        let mut status = 0;
        // SAFETY: waits for the child created above; `status` is a valid out pointer.
        let r = unsafe { libc::waitpid(child, &mut status, 0) };
        assert_eq!(r, child);
        assert!(
            libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
            "the child saw the parent's pid"
        );
        assert_eq!(current_pid(), parent);
    }

    #[test]
    fn copies_and_faults_like_the_kernel() {
        let src: [u32; 4] = [1, 2, 3, 4];
        let got: [u32; 4] = ClientMemory.read_value(src.as_ptr() as u64).unwrap();
        assert_eq!(got, src);
        let mut dst = [0u32; 2];
        ClientMemory
            .write_array(dst.as_mut_ptr() as u64, &[7u32, 8])
            .unwrap();
        assert_eq!(dst, [7, 8]);
        let mut word = [0u8; 4];
        // SAFETY: `word` is a local array with no reference into it live across the call.
        unsafe { SelfProcess.write(word.as_mut_ptr() as u64, &[1, 2, 3, 4]) }.unwrap();
        assert_eq!(word, [1, 2, 3, 4]);
        // SAFETY: nothing is mapped at 0x10 (below mmap_min_addr): the write is EFAULT.
        assert_eq!(unsafe { SelfProcess.write(0x10, &[1]) }, Err(Errno::EFAULT));
        assert_eq!(ClientMemory.read_value::<u64>(0x10), Err(Errno::EFAULT));
        assert_eq!(ClientMemory.write_value(0x10, &1u64), Err(Errno::EFAULT));
        assert_eq!(
            ClientMemory.read_value::<u64>(u64::MAX - 3),
            Err(Errno::EFAULT)
        );
        assert_eq!(ClientMemory.read_array::<u32>(0, 0), Ok(vec![]));
        // Counts the kernel could not kmalloc: ENOMEM without allocating or reading.
        assert_eq!(
            ClientMemory.read_array::<u32>(src.as_ptr() as u64, (4 << 20) / 4 + 1),
            Err(Errno::ENOMEM)
        );
        assert_eq!(
            ClientMemory.read_array::<u64>(src.as_ptr() as u64, usize::MAX),
            Err(Errno::ENOMEM)
        );
    }

    #[test]
    fn mapped_range_check() {
        let v = vec![0u8; 3 * 4096];
        assert!(is_user_range_mapped_rw(v.as_ptr() as u64, v.len() as u64));
        assert!(!is_user_range_mapped_rw(0x1000, 4096));
        assert!(!is_user_range_mapped_rw(v.as_ptr() as u64, 0));
        // Code is mapped read-execute, not writable.
        assert!(!is_user_range_mapped_rw(
            is_user_range_mapped_rw as fn(u64, u64) -> bool as usize as u64,
            16
        ));
    }

    #[test]
    fn procmap_query_and_the_maps_file_agree() {
        const PAGE: usize = 4096;
        // SAFETY: a fresh private anonymous mapping of 4 pages that this test owns; the middle
        // page is made read-only and the last unmapped, leaving rw | r | rw | hole.
        let base = unsafe {
            let p = libc::mmap(
                std::ptr::null_mut(),
                4 * PAGE,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            );
            assert_ne!(p, libc::MAP_FAILED);
            assert_eq!(
                libc::mprotect(p.cast::<u8>().add(PAGE).cast(), PAGE, libc::PROT_READ),
                0
            );
            assert_eq!(libc::munmap(p.cast::<u8>().add(3 * PAGE).cast(), PAGE), 0);
            p as u64
        };
        let page = PAGE as u64;
        let cases = [
            (base, page, true),
            (base, 2 * page, false),
            (base + page, page, false),
            (base + 2 * page, page, true),
            (base + 2 * page, 2 * page, false),
            (base + 3 * page, page, false),
        ];
        for (addr, len, want) in cases {
            let end = addr + len;
            assert_eq!(
                maps_range_rw(addr, end),
                want,
                "maps file, {addr:#x}+{len:#x}"
            );
            if let Some(q) = query_range_rw(addr, end) {
                assert_eq!(q, want, "PROCMAP_QUERY, {addr:#x}+{len:#x}");
            }
            assert_eq!(is_user_range_mapped_rw(addr, len), want);
        }
        // SAFETY: unmaps the three pages still mapped above.
        unsafe { libc::munmap(base as *mut libc::c_void, 3 * PAGE) };
    }

    #[test]
    fn populated_runs_merge_split_and_report_gaps() {
        let mut m = BTreeMap::new();
        add_run(&mut m, 0x1000, 0x3000);
        add_run(&mut m, 0x5000, 0x6000);
        assert_eq!(
            uncovered(&m, 0, 0x7000),
            [(0, 0x1000), (0x3000, 0x5000), (0x6000, 0x7000)]
        );
        assert_eq!(uncovered(&m, 0x1000, 0x3000), []);
        assert_eq!(uncovered(&m, 0x2000, 0x5800), [(0x3000, 0x5000)]);
        add_run(&mut m, 0x3000, 0x5000);
        assert_eq!(m.into_iter().collect::<Vec<_>>(), [(0x1000, 0x6000)]);
        let mut m = BTreeMap::from([(0x1000, 0x6000)]);
        remove_run(&mut m, 0x2000, 0x3000);
        assert_eq!(
            m.clone().into_iter().collect::<Vec<_>>(),
            [(0x1000, 0x2000), (0x3000, 0x6000)]
        );
        remove_run(&mut m, 0, 0x4000);
        assert_eq!(m.into_iter().collect::<Vec<_>>(), [(0x4000, 0x6000)]);
    }
}
