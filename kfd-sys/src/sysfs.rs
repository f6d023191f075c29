//! The sysfs topology vocabulary: `linux/kfd_sysfs.h` (capability bits, heap, cache and link
//! types) and the names of the files and property keys under
//! `/sys/devices/virtual/kfd/kfd/topology`.
//!
//! Each `properties` file holds one `"<key> <decimal value>"` per line; C clients parse it with
//! `"%s %llu"`. The key modules below list every key in the order the kernel prints them.

// --- node capability bits (`capability`) ----------------------------------------------------

/// The node may be hot-unplugged.
pub const HSA_CAP_HOT_PLUGGABLE: u32 = 0x0000_0001;
/// An ATS/PRI translation agent (IOMMUv2) is present.
pub const HSA_CAP_ATS_PRESENT: u32 = 0x0000_0002;
/// The GPU also renders the desktop.
pub const HSA_CAP_SHARED_WITH_GRAPHICS: u32 = 0x0000_0004;
/// Queue sizes must be powers of two.
pub const HSA_CAP_QUEUE_SIZE_POW2: u32 = 0x0000_0008;
/// Queue sizes must be below 4 GiB.
pub const HSA_CAP_QUEUE_SIZE_32BIT: u32 = 0x0000_0010;
/// Queue idle notification.
pub const HSA_CAP_QUEUE_IDLE_EVENT: u32 = 0x0000_0020;
/// Limited VA range.
pub const HSA_CAP_VA_LIMIT: u32 = 0x0000_0040;
/// Watch points available.
pub const HSA_CAP_WATCH_POINTS_SUPPORTED: u32 = 0x0000_0080;
/// log2 of the number of watch points.
pub const HSA_CAP_WATCH_POINTS_TOTALBITS_MASK: u32 = 0x0000_0f00;
/// Shift of [`HSA_CAP_WATCH_POINTS_TOTALBITS_MASK`].
pub const HSA_CAP_WATCH_POINTS_TOTALBITS_SHIFT: u32 = 8;
/// Doorbell type field.
pub const HSA_CAP_DOORBELL_TYPE_TOTALBITS_MASK: u32 = 0x0000_3000;
/// Shift of [`HSA_CAP_DOORBELL_TYPE_TOTALBITS_MASK`].
pub const HSA_CAP_DOORBELL_TYPE_TOTALBITS_SHIFT: u32 = 12;
/// Doorbell type: pre-1.0.
pub const HSA_CAP_DOORBELL_TYPE_PRE_1_0: u32 = 0x0;
/// Doorbell type: 1.0 (32-bit).
pub const HSA_CAP_DOORBELL_TYPE_1_0: u32 = 0x1;
/// Doorbell type: 2.0 (64-bit, SOC15).
pub const HSA_CAP_DOORBELL_TYPE_2_0: u32 = 0x2;
/// AQL queues need a double VA map.
pub const HSA_CAP_AQL_QUEUE_DOUBLE_MAP: u32 = 0x0000_4000;
/// Debug trap supported.
pub const HSA_CAP_TRAP_DEBUG_SUPPORT: u32 = 0x0000_8000;
/// Wave launch trap override supported.
pub const HSA_CAP_TRAP_DEBUG_WAVE_LAUNCH_TRAP_OVERRIDE_SUPPORTED: u32 = 0x0001_0000;
/// Wave launch mode supported.
pub const HSA_CAP_TRAP_DEBUG_WAVE_LAUNCH_MODE_SUPPORTED: u32 = 0x0002_0000;
/// Precise memory operations supported.
pub const HSA_CAP_TRAP_DEBUG_PRECISE_MEMORY_OPERATIONS_SUPPORTED: u32 = 0x0004_0000;
/// Old user mode depends on this bit being 0.
pub const HSA_CAP_RESERVED_WAS_SRAM_EDCSUPPORTED: u32 = 0x0008_0000;
/// DRAM/HBM ECC active.
pub const HSA_CAP_MEM_EDCSUPPORTED: u32 = 0x0010_0000;
/// RAS event notification.
pub const HSA_CAP_RASEVENTNOTIFY: u32 = 0x0020_0000;
/// ASIC revision field.
pub const HSA_CAP_ASIC_REVISION_MASK: u32 = 0x03c0_0000;
/// Shift of [`HSA_CAP_ASIC_REVISION_MASK`].
pub const HSA_CAP_ASIC_REVISION_SHIFT: u32 = 22;
/// SRAM ECC active.
pub const HSA_CAP_SRAM_EDCSUPPORTED: u32 = 0x0400_0000;
/// The SVM API is supported.
pub const HSA_CAP_SVMAPI_SUPPORTED: u32 = 0x0800_0000;
/// Device memory is coherently accessible by the host.
pub const HSA_CAP_FLAGS_COHERENTHOSTACCESS: u32 = 0x1000_0000;
/// Firmware supports trap debugging.
pub const HSA_CAP_TRAP_DEBUG_FIRMWARE_SUPPORTED: u32 = 0x2000_0000;
/// Precise ALU operations supported.
pub const HSA_CAP_TRAP_DEBUG_PRECISE_ALU_OPERATIONS_SUPPORTED: u32 = 0x4000_0000;
/// Per-queue reset supported.
pub const HSA_CAP_PER_QUEUE_RESET_SUPPORTED: u32 = 0x8000_0000;
/// Bits still reserved (the set shrinks as bits are assigned: 0xe00f8000 in Linux 6.1).
pub const HSA_CAP_RESERVED: u32 = 0x000f_8000;

/// `capability2`: per-SDMA-queue reset supported.
pub const HSA_CAP2_PER_SDMA_QUEUE_RESET_SUPPORTED: u32 = 0x0000_0001;
/// `capability2`: reserved bits.
pub const HSA_CAP2_RESERVED: u32 = 0xffff_fffe;

// --- node debug properties (`debug_prop`) ---------------------------------------------------

/// Lowest usable bit of the watch address mask.
pub const HSA_DBG_WATCH_ADDR_MASK_LO_BIT_MASK: u64 = 0x0000_000f;
/// Shift of [`HSA_DBG_WATCH_ADDR_MASK_LO_BIT_MASK`].
pub const HSA_DBG_WATCH_ADDR_MASK_LO_BIT_SHIFT: u32 = 0;
/// Highest usable bit of the watch address mask.
pub const HSA_DBG_WATCH_ADDR_MASK_HI_BIT_MASK: u64 = 0x0000_03f0;
/// Shift of [`HSA_DBG_WATCH_ADDR_MASK_HI_BIT_MASK`].
pub const HSA_DBG_WATCH_ADDR_MASK_HI_BIT_SHIFT: u32 = 4;
/// Dispatch info (TTMPs) is always valid.
pub const HSA_DBG_DISPATCH_INFO_ALWAYS_VALID: u64 = 0x0000_0400;
/// Watch points are exclusive to one process.
pub const HSA_DBG_WATCHPOINTS_EXCLUSIVE: u64 = 0x0000_0800;
/// Reserved bits.
pub const HSA_DBG_RESERVED: u64 = 0xffff_ffff_ffff_f000;

// --- memory banks ---------------------------------------------------------------------------

/// System memory.
pub const HSA_MEM_HEAP_TYPE_SYSTEM: u32 = 0;
/// CPU-visible VRAM.
pub const HSA_MEM_HEAP_TYPE_FB_PUBLIC: u32 = 1;
/// CPU-invisible VRAM.
pub const HSA_MEM_HEAP_TYPE_FB_PRIVATE: u32 = 2;
/// Global data share.
pub const HSA_MEM_HEAP_TYPE_GPU_GDS: u32 = 3;
/// Local data share.
pub const HSA_MEM_HEAP_TYPE_GPU_LDS: u32 = 4;
/// Scratch.
pub const HSA_MEM_HEAP_TYPE_GPU_SCRATCH: u32 = 5;

/// Memory bank flag: hot-pluggable.
pub const HSA_MEM_FLAGS_HOT_PLUGGABLE: u32 = 0x0000_0001;
/// Memory bank flag: non-volatile.
pub const HSA_MEM_FLAGS_NON_VOLATILE: u32 = 0x0000_0002;
/// Memory bank flags: reserved.
pub const HSA_MEM_FLAGS_RESERVED: u32 = 0xffff_fffc;

// --- caches ---------------------------------------------------------------------------------

/// Data cache.
pub const HSA_CACHE_TYPE_DATA: u32 = 0x0000_0001;
/// Instruction cache.
pub const HSA_CACHE_TYPE_INSTRUCTION: u32 = 0x0000_0002;
/// CPU cache.
pub const HSA_CACHE_TYPE_CPU: u32 = 0x0000_0004;
/// Cache of an HSA compute unit (ROCr requires one per GPU node).
pub const HSA_CACHE_TYPE_HSACU: u32 = 0x0000_0008;
/// Cache type: reserved bits.
pub const HSA_CACHE_TYPE_RESERVED: u32 = 0xffff_fff0;

// --- io links -------------------------------------------------------------------------------

/// Undefined link.
pub const HSA_IOLINK_TYPE_UNDEFINED: u32 = 0;
/// HyperTransport.
pub const HSA_IOLINK_TYPE_HYPERTRANSPORT: u32 = 1;
/// PCI Express.
pub const HSA_IOLINK_TYPE_PCIEXPRESS: u32 = 2;
/// AMBA.
pub const HSA_IOLINK_TYPE_AMBA: u32 = 3;
/// MIPI.
pub const HSA_IOLINK_TYPE_MIPI: u32 = 4;
/// QPI 1.1.
pub const HSA_IOLINK_TYPE_QPI_1_1: u32 = 5;
/// Reserved.
pub const HSA_IOLINK_TYPE_RESERVED1: u32 = 6;
/// Reserved.
pub const HSA_IOLINK_TYPE_RESERVED2: u32 = 7;
/// RapidIO.
pub const HSA_IOLINK_TYPE_RAPID_IO: u32 = 8;
/// InfiniBand.
pub const HSA_IOLINK_TYPE_INFINIBAND: u32 = 9;
/// Reserved.
pub const HSA_IOLINK_TYPE_RESERVED3: u32 = 10;
/// xGMI.
pub const HSA_IOLINK_TYPE_XGMI: u32 = 11;
/// XGOP.
pub const HSA_IOLINK_TYPE_XGOP: u32 = 12;
/// GZ.
pub const HSA_IOLINK_TYPE_GZ: u32 = 13;
/// Ethernet RDMA.
pub const HSA_IOLINK_TYPE_ETHERNET_RDMA: u32 = 14;
/// Other RDMA.
pub const HSA_IOLINK_TYPE_RDMA_OTHER: u32 = 15;
/// Other.
pub const HSA_IOLINK_TYPE_OTHER: u32 = 16;

/// Link flag: enabled.
pub const HSA_IOLINK_FLAGS_ENABLED: u32 = 1 << 0;
/// Link flag: not coherent.
pub const HSA_IOLINK_FLAGS_NON_COHERENT: u32 = 1 << 1;
/// Link flag: no 32-bit atomics.
pub const HSA_IOLINK_FLAGS_NO_ATOMICS_32_BIT: u32 = 1 << 2;
/// Link flag: no 64-bit atomics.
pub const HSA_IOLINK_FLAGS_NO_ATOMICS_64_BIT: u32 = 1 << 3;
/// Link flag: no peer-to-peer DMA.
pub const HSA_IOLINK_FLAGS_NO_PEER_TO_PEER_DMA: u32 = 1 << 4;
/// Link flags: reserved bits.
pub const HSA_IOLINK_FLAGS_RESERVED: u32 = 0xffff_ffe0;

// --- files and directories ------------------------------------------------------------------

/// Where C clients (libhsakmt) read the topology; never `/sys/class/kfd`.
pub const KFD_SYSFS_TOPOLOGY_ROOT: &str = "/sys/devices/virtual/kfd/kfd/topology";
/// The same tree through the class symlink, which some tools use.
pub const KFD_SYSFS_CLASS_TOPOLOGY_ROOT: &str = "/sys/class/kfd/kfd/topology";
/// Under the root: a counter bumped on every topology change.
pub const KFD_SYSFS_GENERATION_ID: &str = "generation_id";
/// Under the root: platform properties (see [`system`]).
pub const KFD_SYSFS_SYSTEM_PROPERTIES: &str = "system_properties";
/// Under the root: one numbered directory per node.
pub const KFD_SYSFS_NODES: &str = "nodes";
/// In a node: the GPU id (0 for a CPU node).
pub const KFD_SYSFS_NODE_GPU_ID: &str = "gpu_id";
/// In a node: the name (`gfx900`, or the CPU model).
pub const KFD_SYSFS_NODE_NAME: &str = "name";
/// In a node and its sub-entries: the key/value file.
pub const KFD_SYSFS_PROPERTIES: &str = "properties";
/// In a node: numbered memory banks.
pub const KFD_SYSFS_MEM_BANKS: &str = "mem_banks";
/// In a node: numbered caches.
pub const KFD_SYSFS_CACHES: &str = "caches";
/// In a node: numbered io links.
pub const KFD_SYSFS_IO_LINKS: &str = "io_links";
/// In a node: numbered peer-to-peer links.
pub const KFD_SYSFS_P2P_LINKS: &str = "p2p_links";

/// Keys of `system_properties`.
pub mod system {
    /// Platform OEM id.
    pub const PLATFORM_OEM: &str = "platform_oem";
    /// Platform id.
    pub const PLATFORM_ID: &str = "platform_id";
    /// Platform revision.
    pub const PLATFORM_REV: &str = "platform_rev";
    /// Every key, in print order.
    pub const ALL: &[&str] = &[PLATFORM_OEM, PLATFORM_ID, PLATFORM_REV];
}

/// Keys of `nodes/N/properties`.
pub mod node {
    /// CPU cores of the node (0 for a GPU).
    pub const CPU_CORES_COUNT: &str = "cpu_cores_count";
    /// SIMDs of the node (0 for a CPU).
    pub const SIMD_COUNT: &str = "simd_count";
    /// Entries under `mem_banks/`.
    pub const MEM_BANKS_COUNT: &str = "mem_banks_count";
    /// Entries under `caches/`.
    pub const CACHES_COUNT: &str = "caches_count";
    /// Entries under `io_links/`.
    pub const IO_LINKS_COUNT: &str = "io_links_count";
    /// Entries under `p2p_links/`.
    pub const P2P_LINKS_COUNT: &str = "p2p_links_count";
    /// First CPU core id.
    pub const CPU_CORE_ID_BASE: &str = "cpu_core_id_base";
    /// First SIMD id.
    pub const SIMD_ID_BASE: &str = "simd_id_base";
    /// Waves per SIMD.
    pub const MAX_WAVES_PER_SIMD: &str = "max_waves_per_simd";
    /// LDS per work-group, KiB.
    pub const LDS_SIZE_IN_KB: &str = "lds_size_in_kb";
    /// GDS, KiB.
    pub const GDS_SIZE_IN_KB: &str = "gds_size_in_kb";
    /// Global wave sync entries.
    pub const NUM_GWS: &str = "num_gws";
    /// Wave size (64 or 32).
    pub const WAVE_FRONT_SIZE: &str = "wave_front_size";
    /// Shader arrays.
    pub const ARRAY_COUNT: &str = "array_count";
    /// Shader arrays per shader engine.
    pub const SIMD_ARRAYS_PER_ENGINE: &str = "simd_arrays_per_engine";
    /// CUs per shader array.
    pub const CU_PER_SIMD_ARRAY: &str = "cu_per_simd_array";
    /// SIMDs per CU.
    pub const SIMD_PER_CU: &str = "simd_per_cu";
    /// Scratch wave slots per CU.
    pub const MAX_SLOTS_SCRATCH_CU: &str = "max_slots_scratch_cu";
    /// `major*10000 + minor*100 + stepping`, e.g. 90000 for gfx900.
    pub const GFX_TARGET_VERSION: &str = "gfx_target_version";
    /// PCI vendor id.
    pub const VENDOR_ID: &str = "vendor_id";
    /// PCI device id.
    pub const DEVICE_ID: &str = "device_id";
    /// PCI bus/device/function.
    pub const LOCATION_ID: &str = "location_id";
    /// PCI domain.
    pub const DOMAIN: &str = "domain";
    /// Minor of `/dev/dri/renderD<minor>`.
    pub const DRM_RENDER_MINOR: &str = "drm_render_minor";
    /// xGMI hive id.
    pub const HIVE_ID: &str = "hive_id";
    /// PCIe SDMA engines.
    pub const NUM_SDMA_ENGINES: &str = "num_sdma_engines";
    /// xGMI SDMA engines.
    pub const NUM_SDMA_XGMI_ENGINES: &str = "num_sdma_xgmi_engines";
    /// User queues per SDMA engine.
    pub const NUM_SDMA_QUEUES_PER_ENGINE: &str = "num_sdma_queues_per_engine";
    /// HQDs available to KFD.
    pub const NUM_CP_QUEUES: &str = "num_cp_queues";
    /// Peak GPU clock, MHz.
    pub const MAX_ENGINE_CLK_FCOMPUTE: &str = "max_engine_clk_fcompute";
    /// Local memory size (reported 0; see the memory banks).
    pub const LOCAL_MEM_SIZE: &str = "local_mem_size";
    /// MEC firmware version.
    pub const FW_VERSION: &str = "fw_version";
    /// `HSA_CAP_*` bits.
    pub const CAPABILITY: &str = "capability";
    /// `HSA_CAP2_*` bits.
    pub const CAPABILITY2: &str = "capability2";
    /// `HSA_DBG_*` bits.
    pub const DEBUG_PROP: &str = "debug_prop";
    /// SDMA firmware version.
    pub const SDMA_FW_VERSION: &str = "sdma_fw_version";
    /// Unique id of the GPU.
    pub const UNIQUE_ID: &str = "unique_id";
    /// XCCs (compute dies) of the GPU.
    pub const NUM_XCC: &str = "num_xcc";
    /// Peak CPU clock, MHz.
    pub const MAX_ENGINE_CLK_CCOMPUTE: &str = "max_engine_clk_ccompute";
    /// Control stack size a compute queue must pass to `CREATE_QUEUE`.
    pub const CTL_STACK_SIZE: &str = "ctl_stack_size";
    /// Minimum CWSR area size per XCC.
    pub const CWSR_SIZE: &str = "cwsr_size";
    /// Minimum EOP buffer size.
    pub const EOP_BUFFER_SIZE: &str = "eop_buffer_size";

    /// Every key, in print order.
    pub const ALL: &[&str] = &[
        CPU_CORES_COUNT,
        SIMD_COUNT,
        MEM_BANKS_COUNT,
        CACHES_COUNT,
        IO_LINKS_COUNT,
        P2P_LINKS_COUNT,
        CPU_CORE_ID_BASE,
        SIMD_ID_BASE,
        MAX_WAVES_PER_SIMD,
        LDS_SIZE_IN_KB,
        GDS_SIZE_IN_KB,
        NUM_GWS,
        WAVE_FRONT_SIZE,
        ARRAY_COUNT,
        SIMD_ARRAYS_PER_ENGINE,
        CU_PER_SIMD_ARRAY,
        SIMD_PER_CU,
        MAX_SLOTS_SCRATCH_CU,
        GFX_TARGET_VERSION,
        VENDOR_ID,
        DEVICE_ID,
        LOCATION_ID,
        DOMAIN,
        DRM_RENDER_MINOR,
        HIVE_ID,
        NUM_SDMA_ENGINES,
        NUM_SDMA_XGMI_ENGINES,
        NUM_SDMA_QUEUES_PER_ENGINE,
        NUM_CP_QUEUES,
        MAX_ENGINE_CLK_FCOMPUTE,
        LOCAL_MEM_SIZE,
        FW_VERSION,
        CAPABILITY,
        CAPABILITY2,
        DEBUG_PROP,
        SDMA_FW_VERSION,
        UNIQUE_ID,
        NUM_XCC,
        MAX_ENGINE_CLK_CCOMPUTE,
        CTL_STACK_SIZE,
        CWSR_SIZE,
        EOP_BUFFER_SIZE,
    ];
}

/// Keys of `nodes/N/mem_banks/M/properties`.
pub mod mem_bank {
    /// `HSA_MEM_HEAP_TYPE_*`.
    pub const HEAP_TYPE: &str = "heap_type";
    /// Bank size in bytes.
    pub const SIZE_IN_BYTES: &str = "size_in_bytes";
    /// `HSA_MEM_FLAGS_*`.
    pub const FLAGS: &str = "flags";
    /// Bus width in bits.
    pub const WIDTH: &str = "width";
    /// Peak memory clock, MHz.
    pub const MEM_CLK_MAX: &str = "mem_clk_max";
    /// Every key, in print order.
    pub const ALL: &[&str] = &[HEAP_TYPE, SIZE_IN_BYTES, FLAGS, WIDTH, MEM_CLK_MAX];
}

/// Keys of `nodes/N/caches/C/properties`.
pub mod cache {
    /// First processor id sharing the cache.
    pub const PROCESSOR_ID_LOW: &str = "processor_id_low";
    /// Cache level (1, 2, 3).
    pub const LEVEL: &str = "level";
    /// Size in KiB.
    pub const SIZE: &str = "size";
    /// Line size in bytes.
    pub const CACHE_LINE_SIZE: &str = "cache_line_size";
    /// Lines per tag.
    pub const CACHE_LINES_PER_TAG: &str = "cache_lines_per_tag";
    /// Associativity.
    pub const ASSOCIATION: &str = "association";
    /// Latency in ns.
    pub const LATENCY: &str = "latency";
    /// `HSA_CACHE_TYPE_*` bits.
    pub const TYPE: &str = "type";
    /// Comma-separated 0/1 list of the CUs or cores sharing the cache.
    pub const SIBLING_MAP: &str = "sibling_map";
    /// Every key, in print order.
    pub const ALL: &[&str] = &[
        PROCESSOR_ID_LOW,
        LEVEL,
        SIZE,
        CACHE_LINE_SIZE,
        CACHE_LINES_PER_TAG,
        ASSOCIATION,
        LATENCY,
        TYPE,
        SIBLING_MAP,
    ];
}

/// Keys of `nodes/N/io_links/L/properties` (and `p2p_links`).
pub mod io_link {
    /// `HSA_IOLINK_TYPE_*`.
    pub const TYPE: &str = "type";
    /// Link version, major.
    pub const VERSION_MAJOR: &str = "version_major";
    /// Link version, minor.
    pub const VERSION_MINOR: &str = "version_minor";
    /// Source node.
    pub const NODE_FROM: &str = "node_from";
    /// Destination node.
    pub const NODE_TO: &str = "node_to";
    /// Relative weight (distance).
    pub const WEIGHT: &str = "weight";
    /// Minimum latency, ns.
    pub const MIN_LATENCY: &str = "min_latency";
    /// Maximum latency, ns.
    pub const MAX_LATENCY: &str = "max_latency";
    /// Minimum bandwidth, MB/s.
    pub const MIN_BANDWIDTH: &str = "min_bandwidth";
    /// Maximum bandwidth, MB/s.
    pub const MAX_BANDWIDTH: &str = "max_bandwidth";
    /// Recommended transfer size.
    pub const RECOMMENDED_TRANSFER_SIZE: &str = "recommended_transfer_size";
    /// `HSA_IOLINK_FLAGS_*`.
    pub const FLAGS: &str = "flags";
    /// Every key, in print order.
    pub const ALL: &[&str] = &[
        TYPE,
        VERSION_MAJOR,
        VERSION_MINOR,
        NODE_FROM,
        NODE_TO,
        WEIGHT,
        MIN_LATENCY,
        MAX_LATENCY,
        MIN_BANDWIDTH,
        MAX_BANDWIDTH,
        RECOMMENDED_TRANSFER_SIZE,
        FLAGS,
    ];
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capability_bits_partition_the_word() {
        let assigned = HSA_CAP_HOT_PLUGGABLE
            | HSA_CAP_ATS_PRESENT
            | HSA_CAP_SHARED_WITH_GRAPHICS
            | HSA_CAP_QUEUE_SIZE_POW2
            | HSA_CAP_QUEUE_SIZE_32BIT
            | HSA_CAP_QUEUE_IDLE_EVENT
            | HSA_CAP_VA_LIMIT
            | HSA_CAP_WATCH_POINTS_SUPPORTED
            | HSA_CAP_WATCH_POINTS_TOTALBITS_MASK
            | HSA_CAP_DOORBELL_TYPE_TOTALBITS_MASK
            | HSA_CAP_AQL_QUEUE_DOUBLE_MAP
            | HSA_CAP_MEM_EDCSUPPORTED
            | HSA_CAP_RASEVENTNOTIFY
            | HSA_CAP_ASIC_REVISION_MASK
            | HSA_CAP_SRAM_EDCSUPPORTED
            | HSA_CAP_SVMAPI_SUPPORTED
            | HSA_CAP_FLAGS_COHERENTHOSTACCESS
            | HSA_CAP_TRAP_DEBUG_FIRMWARE_SUPPORTED
            | HSA_CAP_TRAP_DEBUG_PRECISE_ALU_OPERATIONS_SUPPORTED
            | HSA_CAP_PER_QUEUE_RESET_SUPPORTED;
        // The reserved mask still counts the debug bits 15-19 as reserved, as the kernel does.
        assert_eq!(assigned & HSA_CAP_RESERVED, 0);
        assert_eq!(assigned | HSA_CAP_RESERVED, u32::MAX);
    }

    #[test]
    fn key_lists_have_no_duplicates() {
        for list in [
            system::ALL,
            node::ALL,
            mem_bank::ALL,
            cache::ALL,
            io_link::ALL,
        ] {
            for (i, k) in list.iter().enumerate() {
                assert!(!list[i + 1..].contains(k), "{k} listed twice");
            }
        }
    }
}

/// The `properties` of one io link (or p2p link) of a node: the record the driver model
/// writes and the thunk reads, defined once. Field order is the key order of [`io_link::ALL`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IoLink {
    /// `type` (`HSA_IOLINK_TYPE_*`: 2 PCIe, 11 xGMI …).
    pub link_type: u32,
    /// `version_major`.
    pub version_major: u32,
    /// `version_minor`.
    pub version_minor: u32,
    /// `node_from`.
    pub node_from: u32,
    /// `node_to`.
    pub node_to: u32,
    /// `weight`: relative distance.
    pub weight: u32,
    /// `min_latency`, ns.
    pub min_latency: u32,
    /// `max_latency`, ns.
    pub max_latency: u32,
    /// `min_bandwidth`, MB/s.
    pub min_bandwidth: u32,
    /// `max_bandwidth`, MB/s.
    pub max_bandwidth: u32,
    /// `recommended_transfer_size`.
    pub recommended_transfer_size: u32,
    /// `flags` (`HSA_IOLINK_FLAGS_*`).
    pub flags: u32,
}

impl IoLink {
    /// The values in the key order of [`io_link::ALL`].
    pub const fn values(&self) -> [u32; 12] {
        [
            self.link_type,
            self.version_major,
            self.version_minor,
            self.node_from,
            self.node_to,
            self.weight,
            self.min_latency,
            self.max_latency,
            self.min_bandwidth,
            self.max_bandwidth,
            self.recommended_transfer_size,
            self.flags,
        ]
    }
}

const _: () = assert!(
    io_link::ALL.len() == 12,
    "IoLink::values lists every io_link key"
);

/// The heap a memory bank belongs to (`HSA_MEM_HEAP_TYPE_*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum HeapType {
    /// System memory.
    System,
    /// VRAM visible to the CPU.
    FrameBufferPublic,
    /// VRAM not visible to the CPU.
    FrameBufferPrivate,
    /// Global data share.
    Gds,
    /// Local data share.
    Lds,
    /// Scratch.
    Scratch,
    /// A value without a name here.
    Other(u32),
}

impl HeapType {
    /// From the sysfs value.
    pub const fn from_raw(v: u32) -> Self {
        match v {
            HSA_MEM_HEAP_TYPE_SYSTEM => HeapType::System,
            HSA_MEM_HEAP_TYPE_FB_PUBLIC => HeapType::FrameBufferPublic,
            HSA_MEM_HEAP_TYPE_FB_PRIVATE => HeapType::FrameBufferPrivate,
            HSA_MEM_HEAP_TYPE_GPU_GDS => HeapType::Gds,
            HSA_MEM_HEAP_TYPE_GPU_LDS => HeapType::Lds,
            HSA_MEM_HEAP_TYPE_GPU_SCRATCH => HeapType::Scratch,
            other => HeapType::Other(other),
        }
    }

    /// The sysfs value.
    pub const fn raw(self) -> u32 {
        match self {
            HeapType::System => HSA_MEM_HEAP_TYPE_SYSTEM,
            HeapType::FrameBufferPublic => HSA_MEM_HEAP_TYPE_FB_PUBLIC,
            HeapType::FrameBufferPrivate => HSA_MEM_HEAP_TYPE_FB_PRIVATE,
            HeapType::Gds => HSA_MEM_HEAP_TYPE_GPU_GDS,
            HeapType::Lds => HSA_MEM_HEAP_TYPE_GPU_LDS,
            HeapType::Scratch => HSA_MEM_HEAP_TYPE_GPU_SCRATCH,
            HeapType::Other(v) => v,
        }
    }

    /// Whether this is device memory (VRAM).
    pub const fn is_vram(self) -> bool {
        matches!(
            self,
            HeapType::FrameBufferPublic | HeapType::FrameBufferPrivate
        )
    }
}

/// The `properties` of one memory bank of a node: the record the driver model writes and
/// the thunk reads, defined once.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemBank {
    /// `heap_type`.
    pub heap_type: HeapType,
    /// `size_in_bytes`.
    pub size_in_bytes: u64,
    /// `flags` (`HSA_MEM_FLAGS_*`).
    pub flags: u32,
    /// `width`: bus width in bits.
    pub width: u32,
    /// `mem_clk_max`: peak clock, MHz.
    pub mem_clk_max: u32,
}

impl MemBank {
    /// The values in the key order of [`mem_bank::ALL`].
    pub const fn values(&self) -> [u64; 5] {
        [
            self.heap_type.raw() as u64,
            self.size_in_bytes,
            self.flags as u64,
            self.width as u64,
            self.mem_clk_max as u64,
        ]
    }
}

const _: () = assert!(
    mem_bank::ALL.len() == 5,
    "MemBank::values lists every mem_bank key"
);

/// The `properties` of one node (field names are the sysfs keys; absent keys read 0): the
/// record the driver model writes and the thunk reads, defined once. The `*_count` keys are
/// not fields: they are the number of entries under `mem_banks/`, `caches/`, `io_links/`
/// and `p2p_links/`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NodeProperties {
    /// CPU cores (0 for a GPU).
    pub cpu_cores_count: u64,
    /// SIMDs (0 for a CPU).
    pub simd_count: u64,
    /// First CPU core id.
    pub cpu_core_id_base: u64,
    /// First SIMD id.
    pub simd_id_base: u64,
    /// Waves per SIMD.
    pub max_waves_per_simd: u64,
    /// LDS per work-group, KiB.
    pub lds_size_in_kb: u64,
    /// GDS, KiB.
    pub gds_size_in_kb: u64,
    /// Global wave sync entries.
    pub num_gws: u64,
    /// Wave size (64 or 32).
    pub wave_front_size: u64,
    /// Shader arrays.
    pub array_count: u64,
    /// Shader arrays per shader engine.
    pub simd_arrays_per_engine: u64,
    /// CUs per shader array.
    pub cu_per_simd_array: u64,
    /// SIMDs per CU.
    pub simd_per_cu: u64,
    /// Scratch wave slots per CU.
    pub max_slots_scratch_cu: u64,
    /// `major×10000 + minor×100 + stepping` (90010 = gfx90a).
    pub gfx_target_version: u64,
    /// PCI vendor id.
    pub vendor_id: u64,
    /// PCI device id.
    pub device_id: u64,
    /// PCI bus/device/function.
    pub location_id: u64,
    /// PCI domain.
    pub domain: u64,
    /// Minor of `/dev/dri/renderD<minor>`.
    pub drm_render_minor: u64,
    /// xGMI hive id.
    pub hive_id: u64,
    /// PCIe SDMA engines.
    pub num_sdma_engines: u64,
    /// xGMI SDMA engines.
    pub num_sdma_xgmi_engines: u64,
    /// User queues per SDMA engine.
    pub num_sdma_queues_per_engine: u64,
    /// Hardware queue descriptors available to KFD.
    pub num_cp_queues: u64,
    /// Peak GPU clock, MHz.
    pub max_engine_clk_fcompute: u64,
    /// Local memory size (0 on current kernels; see the memory banks).
    pub local_mem_size: u64,
    /// MEC firmware version.
    pub fw_version: u64,
    /// `HSA_CAP_*` bits.
    pub capability: u64,
    /// `HSA_CAP2_*` bits.
    pub capability2: u64,
    /// `HSA_DBG_*` bits.
    pub debug_prop: u64,
    /// SDMA firmware version.
    pub sdma_fw_version: u64,
    /// Unique id of the GPU.
    pub unique_id: u64,
    /// Compute dies (XCCs); 0 or 1 on single-die parts.
    pub num_xcc: u64,
    /// Peak CPU clock, MHz.
    pub max_engine_clk_ccompute: u64,
    /// Control stack size compute queues must pass (6.12+; 0 when absent).
    pub ctl_stack_size: u64,
    /// Minimum CWSR area per XCC (6.12+; 0 when absent).
    pub cwsr_size: u64,
    /// Minimum EOP buffer (6.12+; 0 when absent).
    pub eop_buffer_size: u64,
}
