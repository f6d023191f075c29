//! A GPU's buffer memory carved from a few large shared files ("arenas"), so that a process
//! with tens of thousands of live buffers holds a handful of file descriptors, not one per
//! buffer: the real driver's buffers are kernel objects, and its clients' descriptor tables do
//! not fill up with them (kfdtest's `KFDLocalMemoryTest.Fragmentation` keeps more buffers
//! than a process may have descriptors).
//!
//! An arena is a sparse [`DeviceMemory`] of [`ARENA_SIZE`] bytes (pages exist once touched);
//! a buffer is a page-aligned block of one, chosen best fit. A freed block's pages are
//! punched out of the file (`FALLOC_FL_PUNCH_HOLE`): they return to the host and the next
//! buffer there reads zeros, as a new buffer must. A request of a quarter of an arena or more
//! gets an arena of its own. An arena whose blocks are all free goes away, unless it is the
//! only one.
//!
//! A client maps a block through the arena's file at the block's offset (the render node's
//! mmap offset names the buffer, the model answers with the arena and the offset), so its view
//! and the model's are the same pages. A stale CPU mapping kept past `FREE_MEMORY_OF_GPU` (the
//! driver keeps such a buffer alive; libhsakmt unmaps first) would see the next buffer given
//! that block.

use crate::errno::{from_nix, Errno, KResult};
use crate::hw::mem::{page_align, DeviceMemory};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, MutexGuard};

/// Bytes of one shared arena (virtual: nothing is backed until touched).
pub const ARENA_SIZE: u64 = 1 << 30;

/// One arena and its free blocks.
struct Arena {
    mem: Arc<DeviceMemory>,
    /// Free blocks: offset → length (disjoint, coalesced).
    free: BTreeMap<u64, u64>,
    /// The same blocks by (length, offset), for the best fit.
    by_size: BTreeSet<(u64, u64)>,
    /// Whether it holds one large buffer (it goes away with it).
    dedicated: bool,
}

impl Arena {
    fn new(name: &str, len: u64, dedicated: bool) -> KResult<Arena> {
        let mem = Arc::new(DeviceMemory::new(name, len)?);
        let mut a = Arena {
            mem,
            free: BTreeMap::new(),
            by_size: BTreeSet::new(),
            dedicated,
        };
        a.insert_free(0, len);
        Ok(a)
    }

    fn len(&self) -> u64 {
        self.mem.len() as u64
    }

    fn all_free(&self) -> bool {
        self.free.get(&0) == Some(&self.len())
    }

    fn insert_free(&mut self, offset: u64, len: u64) {
        self.free.insert(offset, len);
        self.by_size.insert((len, offset));
    }

    fn remove_free(&mut self, offset: u64) -> Option<u64> {
        let len = self.free.remove(&offset)?;
        self.by_size.remove(&(len, offset));
        Some(len)
    }

    /// The best-fitting free block of at least `len` bytes, taken from its start.
    fn take(&mut self, len: u64) -> Option<u64> {
        let &(have, offset) = self.by_size.range((len, 0)..).next()?;
        self.remove_free(offset);
        if have > len {
            self.insert_free(offset + len, have - len);
        }
        Some(offset)
    }

    /// Gives `[offset, offset + len)` back, joined with its free neighbours.
    fn give(&mut self, offset: u64, len: u64) {
        let (mut start, mut end) = (offset, offset + len);
        if let Some((&before, &blen)) = self.free.range(..offset).next_back() {
            if before + blen == offset {
                self.remove_free(before);
                start = before;
            }
        }
        if let Some(alen) = self.remove_free(end) {
            end += alen;
        }
        self.insert_free(start, end - start);
    }
}

/// The arenas of one GPU.
pub struct DeviceHeap {
    name: String,
    arenas: Mutex<Vec<Arena>>,
}

impl std::fmt::Debug for DeviceHeap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "DeviceHeap({}, {} arena(s))",
            self.name,
            self.arenas().len()
        )
    }
}

/// A buffer's block of an arena; dropping it frees the block.
pub struct HeapBlock {
    heap: Arc<DeviceHeap>,
    mem: Arc<DeviceMemory>,
    offset: u64,
    len: u64,
}

impl std::fmt::Debug for HeapBlock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}+{:#x} ({:#x} bytes)",
            self.mem.name(),
            self.offset,
            self.len
        )
    }
}

impl HeapBlock {
    /// The arena it lies in.
    pub fn memory(&self) -> &Arc<DeviceMemory> {
        &self.mem
    }

    /// Its first byte in the arena.
    pub fn offset(&self) -> usize {
        self.offset as usize
    }
}

impl Drop for HeapBlock {
    fn drop(&mut self) {
        self.heap.free(&self.mem, self.offset, self.len);
    }
}

impl DeviceHeap {
    /// An empty heap; `name` names its arenas in logs (and in `/proc/self/maps`).
    pub fn new(name: &str) -> Arc<DeviceHeap> {
        Arc::new(DeviceHeap {
            name: name.to_owned(),
            arenas: Mutex::new(Vec::new()),
        })
    }

    fn arenas(&self) -> MutexGuard<'_, Vec<Arena>> {
        self.arenas.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// How many arenas (shared files) it holds now.
    pub fn arena_count(&self) -> usize {
        self.arenas().len()
    }

    /// A zero-filled block of `len` bytes (rounded up to pages).
    pub fn alloc(self: &Arc<Self>, len: u64) -> KResult<HeapBlock> {
        let len = page_align(len).filter(|&l| l > 0).ok_or(Errno::EINVAL)?;
        let mut arenas = self.arenas();
        let dedicated = len >= ARENA_SIZE / 4;
        if !dedicated {
            for a in arenas.iter_mut().filter(|a| !a.dedicated) {
                if let Some(offset) = a.take(len) {
                    return Ok(HeapBlock {
                        heap: self.clone(),
                        mem: a.mem.clone(),
                        offset,
                        len,
                    });
                }
            }
        }
        let n = arenas.len();
        let mut a = Arena::new(
            &format!("{}-{n}", self.name),
            if dedicated { len } else { ARENA_SIZE },
            dedicated,
        )?;
        let offset = a.take(len).ok_or(Errno::ENOMEM)?;
        let block = HeapBlock {
            heap: self.clone(),
            mem: a.mem.clone(),
            offset,
            len,
        };
        arenas.push(a);
        Ok(block)
    }

    fn free(&self, mem: &Arc<DeviceMemory>, offset: u64, len: u64) {
        if let Err(e) = punch_hole(mem, offset, len) {
            // The pages stay; zero them so the next buffer there reads zeros.
            log::debug!(target: crate::layer::MEM, "punching {:#x}+{len:#x} out of {}: {e}; zeroing it", offset, mem.name());
            let _ = mem.fill(offset as usize, len as usize, 0);
        }
        let mut arenas = self.arenas();
        let Some(i) = arenas.iter().position(|a| Arc::ptr_eq(&a.mem, mem)) else {
            return;
        };
        arenas[i].give(offset, len);
        if arenas[i].all_free() && (arenas[i].dedicated || arenas.len() > 1) {
            arenas.swap_remove(i);
        }
    }
}

/// Releases the pages of `[offset, offset + len)` of `mem`'s file: the host gets them back
/// and they read as zeros.
fn punch_hole(mem: &DeviceMemory, offset: u64, len: u64) -> KResult<()> {
    use nix::fcntl::{fallocate, FallocateFlags};
    let off = i64::try_from(offset).map_err(|_| Errno::EINVAL)?;
    let n = i64::try_from(len).map_err(|_| Errno::EINVAL)?;
    fallocate(
        std::os::fd::AsRawFd::as_raw_fd(&mem.fd()),
        FallocateFlags::FALLOC_FL_PUNCH_HOLE | FallocateFlags::FALLOC_FL_KEEP_SIZE,
        off,
        n,
    )
    .map_err(from_nix)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_fit_best_coalesce_and_read_zero_after_reuse() {
        let heap = DeviceHeap::new("test-heap");
        let a = heap.alloc(4096).unwrap();
        let b = heap.alloc(3 * 4096).unwrap();
        let c = heap.alloc(100).unwrap();
        assert!(Arc::ptr_eq(a.memory(), b.memory()) && Arc::ptr_eq(b.memory(), c.memory()));
        assert_eq!((a.offset(), b.offset(), c.offset()), (0, 4096, 4 * 4096));
        assert_eq!(heap.arena_count(), 1);
        a.memory().write(b.offset(), &[7; 16]).unwrap();
        let b_offset = b.offset();
        drop(b);
        // The hole of three pages is the best fit for two; the rest of it is then reused.
        let d = heap.alloc(2 * 4096).unwrap();
        assert_eq!(d.offset(), b_offset);
        let mut buf = [1u8; 16];
        d.memory().read(d.offset(), &mut buf).unwrap();
        assert_eq!(
            buf, [0; 16],
            "a freed block reads zero when given out again"
        );
        let e = heap.alloc(4096).unwrap();
        assert_eq!(e.offset(), b_offset + 2 * 4096);
        // A large request gets an arena of its own, which goes away with it.
        let big = heap.alloc(ARENA_SIZE / 2).unwrap();
        assert_eq!((big.offset(), heap.arena_count()), (0, 2));
        drop(big);
        assert_eq!(heap.arena_count(), 1);
        drop((a, c, d, e));
        assert_eq!(heap.arena_count(), 1, "the last shared arena stays");
    }
}
