//! The `/dev/kfd` mmap offset encoding.
//!
//! An mmap offset on the KFD file descriptor is not a file position but a tag:
//! bits **`[63:62]` type**, bits **`[61:46]` gpu id** (the 16-bit topology hash), bits `[45:0]` a
//! type-specific value. `CREATE_QUEUE` returns such an offset for the doorbell page (with the
//! queue's byte offset inside the page in the low bits) and `CREATE_EVENT` one for the event
//! page. These names mirror the kernel's `kfd_priv.h`, which is where the encoding lives.

/// Position of the type field.
pub const KFD_MMAP_TYPE_SHIFT: u32 = 62;
/// Mask of the type field.
pub const KFD_MMAP_TYPE_MASK: u64 = 0x3 << KFD_MMAP_TYPE_SHIFT;
/// The process doorbell page of a GPU.
pub const KFD_MMAP_TYPE_DOORBELL: u64 = 0x3 << KFD_MMAP_TYPE_SHIFT;
/// The signal event page (no GPU id needed).
pub const KFD_MMAP_TYPE_EVENTS: u64 = 0x2 << KFD_MMAP_TYPE_SHIFT;
/// Reserved memory (APU).
pub const KFD_MMAP_TYPE_RESERVED_MEM: u64 = 0x1 << KFD_MMAP_TYPE_SHIFT;
/// The MMIO remap page (one 4 KiB page).
pub const KFD_MMAP_TYPE_MMIO: u64 = 0x0 << KFD_MMAP_TYPE_SHIFT;

/// Width of the gpu id hash in the offset.
pub const KFD_GPU_ID_HASH_WIDTH: u32 = 16;
/// Position of the gpu id field.
pub const KFD_MMAP_GPU_ID_SHIFT: u32 = 46;
/// Mask of the gpu id field.
pub const KFD_MMAP_GPU_ID_MASK: u64 = ((1 << KFD_GPU_ID_HASH_WIDTH) - 1) << KFD_MMAP_GPU_ID_SHIFT;
/// Mask of the type-specific value.
pub const KFD_MMAP_OFFSET_VALUE_MASK: u64 = (1 << KFD_MMAP_GPU_ID_SHIFT) - 1;

/// `KFD_MMAP_GPU_ID(gpu_id)`: the gpu id placed in its field (excess bits dropped).
pub const fn KFD_MMAP_GPU_ID(gpu_id: u32) -> u64 {
    ((gpu_id as u64) << KFD_MMAP_GPU_ID_SHIFT) & KFD_MMAP_GPU_ID_MASK
}

/// `KFD_MMAP_GET_GPU_ID(offset)`: the gpu id field of an offset.
pub const fn KFD_MMAP_GET_GPU_ID(offset: u64) -> u32 {
    ((offset & KFD_MMAP_GPU_ID_MASK) >> KFD_MMAP_GPU_ID_SHIFT) as u32
}

/// Bytes per doorbell on SOC15 parts (gfx9 and later): doorbells are 64-bit.
pub const KFD_DOORBELL_SIZE_SOC15: u64 = 8;
/// Doorbells in one process's slice.
pub const KFD_DOORBELLS_PER_PROCESS: u64 = 1024;
/// Size of the process doorbell slice a doorbell mmap must cover exactly (8 KiB on SOC15).
pub const KFD_DOORBELL_PROCESS_SLICE_SIZE_SOC15: u64 =
    KFD_DOORBELL_SIZE_SOC15 * KFD_DOORBELLS_PER_PROCESS;
/// Size of the full signal event page: [`crate::KFD_SIGNAL_EVENT_LIMIT`] slots of 8 bytes.
pub const KFD_SIGNAL_EVENT_PAGE_SIZE: u64 = crate::KFD_SIGNAL_EVENT_LIMIT as u64 * 8;
/// The value of an unsignalled event slot.
pub const KFD_UNSIGNALED_EVENT_SLOT: u64 = u64::MAX;

/// The four kinds of mmap offset.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum KfdMmapType {
    /// [`KFD_MMAP_TYPE_MMIO`].
    Mmio = 0,
    /// [`KFD_MMAP_TYPE_RESERVED_MEM`].
    ReservedMem = 1,
    /// [`KFD_MMAP_TYPE_EVENTS`].
    Events = 2,
    /// [`KFD_MMAP_TYPE_DOORBELL`].
    Doorbell = 3,
}

impl KfdMmapType {
    /// The type of an offset (every bit pattern of the 2-bit field is a type).
    pub const fn of(offset: u64) -> Self {
        match (offset & KFD_MMAP_TYPE_MASK) >> KFD_MMAP_TYPE_SHIFT {
            0 => Self::Mmio,
            1 => Self::ReservedMem,
            2 => Self::Events,
            _ => Self::Doorbell,
        }
    }

    /// The type field as it sits in an offset.
    pub const fn bits(self) -> u64 {
        (self as u64) << KFD_MMAP_TYPE_SHIFT
    }
}

/// A decoded `/dev/kfd` mmap offset.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct KfdMmapOffset {
    /// What is mapped.
    pub kind: KfdMmapType,
    /// The GPU (16-bit hash; 0 for the event page).
    pub gpu_id: u32,
    /// The type-specific value in bits `[45:0]` (for a doorbell: the queue's byte offset).
    pub value: u64,
}

impl KfdMmapOffset {
    /// Splits an offset into its fields.
    pub const fn decode(offset: u64) -> Self {
        Self {
            kind: KfdMmapType::of(offset),
            gpu_id: KFD_MMAP_GET_GPU_ID(offset),
            value: offset & KFD_MMAP_OFFSET_VALUE_MASK,
        }
    }

    /// Packs the fields; a `gpu_id` wider than 16 bits or a `value` wider than 46 bits is
    /// truncated the way the kernel's macros truncate it.
    pub const fn encode(&self) -> u64 {
        self.kind.bits() | KFD_MMAP_GPU_ID(self.gpu_id) | (self.value & KFD_MMAP_OFFSET_VALUE_MASK)
    }

    /// The doorbell offset `CREATE_QUEUE` returns for a queue whose doorbell sits at
    /// `byte_offset` inside the process slice of `gpu_id`.
    pub const fn doorbell(gpu_id: u32, byte_offset: u64) -> Self {
        Self {
            kind: KfdMmapType::Doorbell,
            gpu_id,
            value: byte_offset,
        }
    }

    /// The event page offset.
    pub const fn events(value: u64) -> Self {
        Self {
            kind: KfdMmapType::Events,
            gpu_id: 0,
            value,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn type_values_match_the_facts() {
        assert_eq!(KFD_MMAP_TYPE_DOORBELL, 0xC000_0000_0000_0000);
        assert_eq!(KFD_MMAP_TYPE_EVENTS, 0x8000_0000_0000_0000);
        assert_eq!(KFD_MMAP_TYPE_RESERVED_MEM, 0x4000_0000_0000_0000);
        assert_eq!(KFD_MMAP_TYPE_MMIO, 0);
        assert_eq!(KFD_MMAP_GPU_ID_MASK, 0x3FFF_C000_0000_0000);
        assert_eq!(KFD_DOORBELL_PROCESS_SLICE_SIZE_SOC15, 8192);
        assert_eq!(KFD_SIGNAL_EVENT_PAGE_SIZE, 32768);
    }

    #[test]
    fn doorbell_offset_of_a_queue() {
        // gpu 0x1234, doorbell 3 (byte 24) of the slice.
        let off = KfdMmapOffset::doorbell(0x1234, 24).encode();
        assert_eq!(off, 0xC000_0000_0000_0000 | (0x1234u64 << 46) | 24);
        // libhsakmt maps the page and indexes into it.
        assert_eq!(off & !(KFD_DOORBELL_PROCESS_SLICE_SIZE_SOC15 - 1), off - 24);
        assert_eq!(off & (KFD_DOORBELL_PROCESS_SLICE_SIZE_SOC15 - 1), 24);
    }

    #[test]
    fn gpu_id_is_truncated_like_the_kernel_macro() {
        assert_eq!(KFD_MMAP_GET_GPU_ID(KFD_MMAP_GPU_ID(0x1_ABCD)), 0xABCD);
    }

    proptest! {
        #[test]
        fn decode_encode_round_trip(offset: u64) {
            prop_assert_eq!(KfdMmapOffset::decode(offset).encode(), offset);
        }

        #[test]
        fn encode_decode_round_trip(kind in 0u8..4, gpu_id in 0u32..0x1_0000, value in 0u64..(1 << 46)) {
            let kind = KfdMmapType::of(u64::from(kind) << KFD_MMAP_TYPE_SHIFT);
            let off = KfdMmapOffset { kind, gpu_id, value };
            prop_assert_eq!(KfdMmapOffset::decode(off.encode()), off);
        }
    }
}
