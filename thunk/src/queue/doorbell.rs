//! The process doorbell page of a GPU, mapped once and shared by all its queues.

use crate::backend::Backend;
use crate::error::{Error, Result};
use crate::kfd::{lock, Session};
use crate::memory::{alloc_raw, free_raw, map_raw, MemoryKind};
use crate::va::{map_kfd_over, Access, VaRange};
use kfd_sys::*;

/// The process doorbell page of one GPU.
#[derive(Debug)]
pub(crate) struct DoorbellPage {
    pub(super) range: VaRange,
    /// The DOORBELL buffer on the user-buffer path.
    handle: Option<u64>,
}

impl DoorbellPage {
    /// Unmaps and frees the DOORBELL buffer (the CPU range unmaps on drop).
    pub(crate) fn release(self, backend: &dyn Backend, gpu_id: u32) {
        let Some(handle) = self.handle else { return };
        let ids = [gpu_id];
        let mut u = kfd_ioctl_unmap_memory_from_gpu_args {
            handle,
            device_ids_array_ptr: ids.as_ptr() as u64,
            n_devices: 1,
            n_success: 0,
        };
        if let Err(e) = backend.call::<UnmapMemoryFromGpu>(&mut u) {
            log::warn!(target: "thunk::queue", "unmapping doorbell buffer {handle:#x}: {e}");
        }
        let mut f = kfd_ioctl_free_memory_of_gpu_args { handle };
        if let Err(e) = backend.call::<FreeMemoryOfGpu>(&mut f) {
            log::warn!(target: "thunk::queue", "freeing doorbell buffer {handle:#x}: {e}");
        }
    }
}

/// Maps the doorbell page of GPU `index` if it is not mapped yet.
pub(super) fn ensure_doorbells(
    session: &Session,
    index: usize,
    doorbell_offset: u64,
) -> Result<()> {
    let state = session
        .gpus
        .get(index)
        .ok_or_else(|| Error::invalid("doorbell", format!("no GPU with index {index}")))?;
    if state.doorbells.get().is_some() {
        return Ok(());
    }
    let _guard = lock(&state.doorbell_init);
    if state.doorbells.get().is_some() {
        return Ok(());
    }
    let page = if session.user_pages {
        let buf = alloc_raw(
            session,
            index,
            MemoryKind::Doorbell,
            KFD_DOORBELL_PROCESS_SLICE_SIZE_SOC15,
            KFD_IOC_ALLOC_MEM_FLAGS_DOORBELL | KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE,
            true,
        )?;
        if let Err(e) = map_raw(session, buf.handle, &[state.gpu_id], true) {
            let _ = free_raw(session, buf.handle);
            return Err(e);
        }
        DoorbellPage {
            range: buf.range,
            handle: Some(buf.handle),
        }
    } else {
        let size = KFD_DOORBELL_PROCESS_SLICE_SIZE_SOC15;
        let mut range = VaRange::reserve(size, size)?;
        map_kfd_over(
            session.backend.as_ref(),
            &mut range,
            Access::ReadWrite,
            doorbell_offset & !(size - 1),
        )
        .map_err(|e| {
            Error::new(
                "mmap",
                e,
                format!(
                    "cannot map the doorbell page of gpu {:#x} (offset {:#x})",
                    state.gpu_id,
                    doorbell_offset & !(size - 1)
                ),
            )
        })?;
        DoorbellPage {
            range,
            handle: None,
        }
    };
    log::debug!(target: "thunk::queue", "doorbell page of gpu {:#x} at {:#x}", state.gpu_id, page.range.addr());
    // Cannot already be set: `doorbell_init` is held.
    let _ = state.doorbells.set(page);
    Ok(())
}
