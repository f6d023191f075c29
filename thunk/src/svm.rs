//! Shared virtual memory (`AMDKFD_IOC_SVM`): host memory the GPUs reach at the same address,
//! with attributes — where it should live, which GPUs may access it, flags, migration
//! granularity — and prefetching between system memory and a GPU's VRAM.
//!
//! [`SvmMemory`] owns its pages (anonymous memory the thunk maps), which is what makes the API
//! safe: nothing else in the program holds a reference into memory the GPU writes, and the CPU
//! reads and writes it through bounds-checked copies. Dropping it takes every GPU's access away
//! before the pages are unmapped. [`Kfd::svm_set_attributes_unchecked`] is the raw form for
//! memory the caller owns. [`Kfd::smi_events`] opens a GPU's SMI event file, where the driver
//! reports page faults, migrations, queue evictions and unmaps as text lines.
#![allow(unsafe_code)]

use crate::error::{Errno, Error, Result};
use crate::kfd::Kfd;
use crate::va::{VaRange, PAGE_SIZE};
use kfd_sys::*;

/// Where a range lives or should live.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SvmLocation {
    /// System memory (`KFD_IOCTL_SVM_LOCATION_SYSMEM`).
    System,
    /// The VRAM of the GPU with this gpu_id.
    Gpu(u32),
    /// No preference (`KFD_IOCTL_SVM_LOCATION_UNDEFINED`); also what a query over ranges that
    /// disagree returns.
    Undefined,
}

impl SvmLocation {
    fn raw(self) -> u32 {
        match self {
            SvmLocation::System => KFD_IOCTL_SVM_LOCATION_SYSMEM,
            SvmLocation::Gpu(id) => id,
            SvmLocation::Undefined => KFD_IOCTL_SVM_LOCATION_UNDEFINED,
        }
    }

    fn from_raw(v: u32) -> Self {
        match v {
            KFD_IOCTL_SVM_LOCATION_SYSMEM => SvmLocation::System,
            KFD_IOCTL_SVM_LOCATION_UNDEFINED => SvmLocation::Undefined,
            id => SvmLocation::Gpu(id),
        }
    }
}

/// How one GPU may reach a range.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SvmAccess {
    /// It may access it, and the driver may migrate it for that GPU.
    Access,
    /// It accesses it where it is, without migrating it.
    InPlace,
    /// It may not access it.
    None,
}

/// One attribute to set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SvmAttribute {
    /// Where the range should live (`PREFERRED_LOC`).
    PreferredLocation(SvmLocation),
    /// Move the range now (`PREFETCH_LOC`); [`SvmLocation::Undefined`] is refused.
    Prefetch(SvmLocation),
    /// How GPU `gpu_id` may reach it (`ACCESS`, `ACCESS_IN_PLACE`, `NO_ACCESS`).
    Access(u32, SvmAccess),
    /// Flags to set (`KFD_IOCTL_SVM_FLAG_*`).
    SetFlags(u32),
    /// Flags to clear.
    ClearFlags(u32),
    /// Migration granularity: log2 of the page count (clamped to 0x3F by the driver).
    Granularity(u8),
}

impl SvmAttribute {
    fn raw(self) -> kfd_ioctl_svm_attribute {
        let (r#type, value) = match self {
            SvmAttribute::PreferredLocation(l) => (KFD_IOCTL_SVM_ATTR_PREFERRED_LOC, l.raw()),
            SvmAttribute::Prefetch(l) => (KFD_IOCTL_SVM_ATTR_PREFETCH_LOC, l.raw()),
            SvmAttribute::Access(gpu, SvmAccess::Access) => (KFD_IOCTL_SVM_ATTR_ACCESS, gpu),
            SvmAttribute::Access(gpu, SvmAccess::InPlace) => {
                (KFD_IOCTL_SVM_ATTR_ACCESS_IN_PLACE, gpu)
            }
            SvmAttribute::Access(gpu, SvmAccess::None) => (KFD_IOCTL_SVM_ATTR_NO_ACCESS, gpu),
            SvmAttribute::SetFlags(f) => (KFD_IOCTL_SVM_ATTR_SET_FLAGS, f),
            SvmAttribute::ClearFlags(f) => (KFD_IOCTL_SVM_ATTR_CLR_FLAGS, f),
            SvmAttribute::Granularity(g) => (KFD_IOCTL_SVM_ATTR_GRANULARITY, u32::from(g)),
        };
        kfd_ioctl_svm_attribute { r#type, value }
    }
}

/// The attributes of a span, as the driver combines them over the ranges it holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SvmAttributes {
    /// The preferred location, if every range agrees.
    pub preferred_location: SvmLocation,
    /// The prefetch location, if every range agrees.
    pub prefetch_location: SvmLocation,
    /// The flags every range has.
    pub flags_set: u32,
    /// The flags no range has.
    pub flags_clear: u32,
    /// The smallest granularity.
    pub granularity: u8,
    /// Each GPU of the process and the access every range grants it.
    pub access: Vec<(u32, SvmAccess)>,
}

/// `AMDKFD_IOC_SVM` with its attributes after the header; the request's size field covers them
/// (as libhsakmt sends it). Returns the attributes as the driver left them.
///
/// # Safety
///
/// `[start, start+size)` must be memory the caller owns for everything the GPUs do with it
/// (SET_ATTR hands it to them) until its access is taken away or the memory unmapped.
unsafe fn svm_ioctl(
    kfd: &Kfd,
    op: u32,
    start: u64,
    size: u64,
    attrs: &[kfd_ioctl_svm_attribute],
) -> core::result::Result<Vec<kfd_ioctl_svm_attribute>, Errno> {
    let header = core::mem::size_of::<kfd_ioctl_svm_args>();
    let attr_len = core::mem::size_of::<kfd_ioctl_svm_attribute>();
    let request =
        with_size(AMDKFD_IOC_SVM, header + std::mem::size_of_val(attrs)).ok_or(Errno::EINVAL)?;
    let head = kfd_ioctl_svm_args {
        start_addr: start,
        size,
        op,
        nattr: attrs.len() as u32,
        attrs: [],
    };
    let mut bytes = head.as_bytes().to_vec();
    for a in attrs {
        bytes.extend_from_slice(a.as_bytes());
    }
    // SAFETY: `bytes` is the whole argument the request's size names; the range is the
    // caller's to hand over (this function's contract).
    unsafe { kfd.session.backend.ioctl(request, &mut bytes) }?;
    Ok(bytes[header..]
        .chunks_exact(attr_len)
        .filter_map(|c| kfd_ioctl_svm_attribute::read_from_bytes(c).ok())
        .collect())
}

impl Kfd {
    /// Host memory for SVM: `len` bytes (rounded up to pages) of zeroed anonymous memory the
    /// GPUs reach at the same address once [`SvmMemory::set_attributes`] gives them access.
    pub fn svm_alloc(&self, len: u64) -> Result<SvmMemory> {
        let range = VaRange::anonymous_rw(len, PAGE_SIZE)?;
        Ok(SvmMemory {
            kfd: self.clone(),
            range,
        })
    }

    /// SET_ATTR on memory the caller owns.
    ///
    /// # Safety
    ///
    /// `[addr, addr+len)` must stay mapped and be the GPUs' to read and write for as long as
    /// any GPU has access to it; no Rust reference may point into it meanwhile.
    pub unsafe fn svm_set_attributes_unchecked(
        &self,
        addr: u64,
        len: u64,
        attrs: &[SvmAttribute],
    ) -> Result<()> {
        let raw: Vec<_> = attrs.iter().map(|a| a.raw()).collect();
        // SAFETY: forwarded from the caller's contract.
        unsafe { svm_ioctl(self, KFD_IOCTL_SVM_OP_SET_ATTR, addr, len, &raw) }
            .map(|_| ())
            .map_err(|e| Error::ioctl("SVM SET_ATTR", e, format_args!("[{addr:#x}, +{len:#x})")))
    }

    /// GET_ATTR over any span: the attributes the driver holds there (defaults where it
    /// holds no range).
    pub fn svm_attributes(&self, addr: u64, len: u64) -> Result<SvmAttributes> {
        let gpus: Vec<u32> = self.session.gpus.iter().map(|g| g.gpu_id).collect();
        let mut raw = vec![
            SvmAttribute::PreferredLocation(SvmLocation::Undefined).raw(),
            SvmAttribute::Prefetch(SvmLocation::Undefined).raw(),
            SvmAttribute::SetFlags(0).raw(),
            SvmAttribute::ClearFlags(0).raw(),
            SvmAttribute::Granularity(0).raw(),
        ];
        raw.extend(
            gpus.iter()
                .map(|&g| SvmAttribute::Access(g, SvmAccess::Access).raw()),
        );
        // SAFETY: GET_ATTR hands nothing to the GPUs and writes only into `raw`'s copy.
        let out = unsafe { svm_ioctl(self, KFD_IOCTL_SVM_OP_GET_ATTR, addr, len, &raw) }
            .map_err(|e| Error::ioctl("SVM GET_ATTR", e, format_args!("[{addr:#x}, +{len:#x})")))?;
        if out.len() != raw.len() {
            return Err(Error::bad_answer(
                "SVM GET_ATTR",
                "attributes missing from the answer",
            ));
        }
        let access = gpus
            .iter()
            .zip(&out[5..])
            .map(|(&g, a)| {
                let kind = match a.r#type {
                    KFD_IOCTL_SVM_ATTR_ACCESS => SvmAccess::Access,
                    KFD_IOCTL_SVM_ATTR_ACCESS_IN_PLACE => SvmAccess::InPlace,
                    _ => SvmAccess::None,
                };
                (g, kind)
            })
            .collect();
        Ok(SvmAttributes {
            preferred_location: SvmLocation::from_raw(out[0].value),
            prefetch_location: SvmLocation::from_raw(out[1].value),
            flags_set: out[2].value,
            flags_clear: out[3].value,
            granularity: out[4].value.min(u32::from(u8::MAX)) as u8,
            access,
        })
    }
}

/// Host memory shared with the GPUs through the SVM API. The thunk owns the pages; the CPU
/// reaches them through bounds-checked copies and atomics.
#[derive(Debug)]
pub struct SvmMemory {
    kfd: Kfd,
    range: VaRange,
}

impl SvmMemory {
    /// The address, the same for the CPU and every GPU.
    pub fn addr(&self) -> u64 {
        self.range.addr()
    }

    /// Size in bytes (whole pages).
    pub fn len(&self) -> u64 {
        self.range.len()
    }

    /// Never true: the memory has at least one page.
    pub fn is_empty(&self) -> bool {
        self.range.len() == 0
    }

    fn span(&self, op: &'static str, offset: u64, len: u64) -> Result<u64> {
        let end = offset.checked_add(len);
        if offset % PAGE_SIZE != 0 || len % PAGE_SIZE != 0 || end.is_none_or(|e| e > self.len()) {
            return Err(Error::invalid(
                op,
                format!(
                    "[{offset:#x}, +{len:#x}) is not whole pages inside {:#x} bytes",
                    self.len()
                ),
            ));
        }
        Ok(self.addr() + offset)
    }

    /// Sets attributes on the whole memory.
    pub fn set_attributes(&self, attrs: &[SvmAttribute]) -> Result<()> {
        self.set_attributes_at(0, self.len(), attrs)
    }

    /// Sets attributes on `[offset, offset+len)` (whole pages): the driver splits its ranges
    /// there.
    pub fn set_attributes_at(&self, offset: u64, len: u64, attrs: &[SvmAttribute]) -> Result<()> {
        let addr = self.span("SVM SET_ATTR", offset, len)?;
        // SAFETY: the pages are this value's own mapping, alive until drop, which first takes
        // every GPU's access away; the CPU touches them only through raw copies.
        unsafe { self.kfd.svm_set_attributes_unchecked(addr, len, attrs) }
    }

    /// The attributes of the whole memory.
    pub fn attributes(&self) -> Result<SvmAttributes> {
        self.kfd.svm_attributes(self.addr(), self.len())
    }

    /// The attributes of `[offset, offset+len)` (whole pages).
    pub fn attributes_at(&self, offset: u64, len: u64) -> Result<SvmAttributes> {
        let addr = self.span("SVM GET_ATTR", offset, len)?;
        self.kfd.svm_attributes(addr, len)
    }

    /// Moves the memory to `location` now (`PREFETCH_LOC`).
    pub fn prefetch(&self, location: SvmLocation) -> Result<()> {
        self.set_attributes(&[SvmAttribute::Prefetch(location)])
    }

    /// Copies bytes out at `offset`.
    pub fn read(&self, offset: u64, buf: &mut [u8]) -> Result<()> {
        self.range.read(offset, buf)
    }

    /// Copies bytes in at `offset`.
    pub fn write(&self, offset: u64, data: &[u8]) -> Result<()> {
        self.range.write(offset, data)
    }

    /// Loads the 32-bit word at `offset` (acquire).
    pub fn load_u32(&self, offset: u64) -> Result<u32> {
        Ok(self
            .range
            .atomic_u32(offset)?
            .load(std::sync::atomic::Ordering::Acquire))
    }

    /// Stores the 32-bit word at `offset` (release).
    pub fn store_u32(&self, offset: u64, value: u32) -> Result<()> {
        self.range
            .atomic_u32(offset)?
            .store(value, std::sync::atomic::Ordering::Release);
        Ok(())
    }
}

impl Drop for SvmMemory {
    fn drop(&mut self) {
        // Take every GPU's access away before the pages go, so no GPU reaches them after.
        let none: Vec<SvmAttribute> = self
            .kfd
            .session
            .gpus
            .iter()
            .map(|g| SvmAttribute::Access(g.gpu_id, SvmAccess::None))
            .chain([SvmAttribute::Prefetch(SvmLocation::System)])
            .collect();
        if let Err(e) = self.set_attributes(&none) {
            log::warn!(target: "thunk::memory", "taking GPU access from SVM memory {:#x}: {e}", self.addr());
        }
    }
}

/// A GPU's SMI event file (`AMDKFD_IOC_SMI_EVENTS`): the driver queues a text line per event
/// the mask enables — `"<id in hex> <text>"`, the text in the kernel's format for that event
/// (`KFD_SMI_EVENT_*`).
#[derive(Debug)]
pub struct SmiEvents {
    fd: std::os::fd::OwnedFd,
}

impl Kfd {
    /// Opens the SMI event file of GPU `gpu_id`; no event is enabled yet.
    pub fn smi_events(&self, gpu_id: u32) -> Result<SmiEvents> {
        use std::os::fd::FromRawFd;
        let mut a = kfd_ioctl_smi_events_args {
            gpuid: gpu_id,
            anon_fd: 0,
        };
        self.ioctl::<SmiEvents_>(&mut a)?;
        let fd = i32::try_from(a.anon_fd)
            .ok()
            .filter(|&fd| fd >= 0)
            .ok_or_else(|| Error::bad_answer("SMI_EVENTS", "no file descriptor"))?;
        // SAFETY: the driver handed this new descriptor to the caller, which owns it now.
        let fd = unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) };
        Ok(SmiEvents { fd })
    }
}

use kfd_sys::SmiEvents as SmiEvents_;

impl SmiEvents {
    /// Enables exactly the events `ids` (`KFD_SMI_EVENT_*`, 1-based).
    pub fn enable(&self, ids: &[u32]) -> Result<()> {
        let mask = ids
            .iter()
            .filter(|&&i| (1..=64).contains(&i))
            .fold(0u64, |m, &i| m | KFD_SMI_EVENT_MASK_FROM_INDEX(i));
        match nix::unistd::write(&self.fd, &mask.to_ne_bytes()) {
            Ok(8) => Ok(()),
            Ok(n) => Err(Error::bad_answer(
                "SMI mask write",
                format!("{n} of 8 bytes taken"),
            )),
            Err(e) => Err(Error::new(
                "SMI mask write",
                crate::error::from_nix(e),
                "write",
            )),
        }
    }

    /// The lines queued since the last call (none: empty), oldest first.
    pub fn read_lines(&self) -> Result<Vec<String>> {
        use std::os::fd::AsRawFd;
        let mut text = Vec::new();
        let mut buf = [0u8; 1024];
        loop {
            match nix::unistd::read(self.fd.as_raw_fd(), &mut buf) {
                Ok(0) | Err(nix::errno::Errno::EAGAIN) => break,
                Ok(n) => text.extend_from_slice(&buf[..n]),
                Err(e) => return Err(Error::new("SMI read", crate::error::from_nix(e), "read")),
            }
        }
        Ok(String::from_utf8_lossy(&text)
            .lines()
            .map(str::to_owned)
            .collect())
    }
}
