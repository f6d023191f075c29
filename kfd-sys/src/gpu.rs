//! The GPU facts every layer reads from one place: graphics versions, the generation they
//! belong to, and the parts the model knows ([`Preset`]) with their numbers.
//!
//! Each fact is written once. Adding a part means one [`Preset`] variant and one row of
//! [`Preset::facts`]; every other place that depends on the part matches [`Preset`] or
//! [`Generation`] exhaustively, so the compiler names each one that must learn about it.
//! Data only: tables and the version arithmetic, no other logic.

use core::fmt;
use core::str::FromStr;

/// The graphics generations the stack speaks: one MQD layout, one PM4 packet form and one
/// SDMA packet form each.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Generation {
    /// GC 9.x (Vega, CDNA): `v9_mqd`, SDMA 4.
    Gfx9,
    /// GC 10.x (RDNA 1–2): `v10_compute_mqd`, SDMA 5.
    Gfx10,
    /// GC 11.x (RDNA 3): `v11_compute_mqd`, SDMA 6.
    Gfx11,
}

impl Generation {
    /// Every generation, oldest first.
    pub const ALL: [Generation; 3] = [Generation::Gfx9, Generation::Gfx10, Generation::Gfx11];

    /// The generation of GC major version `major`, `None` for one this stack does not know
    /// (gfx8 and older, gfx12 and newer): never a guess.
    pub const fn of_major(major: u8) -> Option<Generation> {
        match major {
            9 => Some(Generation::Gfx9),
            10 => Some(Generation::Gfx10),
            11 => Some(Generation::Gfx11),
            _ => None,
        }
    }

    /// The GC major version.
    pub const fn major(self) -> u8 {
        match self {
            Generation::Gfx9 => 9,
            Generation::Gfx10 => 10,
            Generation::Gfx11 => 11,
        }
    }
}

impl fmt::Display for Generation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "gfx{}", self.major())
    }
}

/// A `major.minor.stepping` graphics version.
///
/// Two numberings use it: the **GC IP version** (the kernel's `KFD_GC_VERSION`, e.g. 9.4.2 for
/// MI200), on which the MQD builders key, and the **gfx target version** that sysfs publishes
/// as `gfx_target_version` (e.g. 9.0.10 = gfx90a for the same MI200), on which the topology
/// formulas key. Both share the major number, which selects the [`Generation`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct GfxVersion {
    /// Major version (9, 10, 11 …).
    pub major: u8,
    /// Minor version.
    pub minor: u8,
    /// Stepping.
    pub stepping: u8,
}

impl GfxVersion {
    /// `major.minor.stepping`.
    pub const fn new(major: u8, minor: u8, stepping: u8) -> Self {
        GfxVersion {
            major,
            minor,
            stepping,
        }
    }

    /// From the sysfs encoding `major×10000 + minor×100 + stepping` (90010 = gfx90a).
    pub const fn from_target_version(value: u32) -> Self {
        GfxVersion {
            major: ((value / 10000) % 256) as u8,
            minor: ((value / 100) % 100) as u8,
            stepping: (value % 100) as u8,
        }
    }

    /// The sysfs encoding `major×10000 + minor×100 + stepping`.
    pub const fn target_version(self) -> u32 {
        self.major as u32 * 10000 + self.minor as u32 * 100 + self.stepping as u32
    }

    /// The generation of this version, `None` for a major version the stack does not know.
    pub const fn generation(self) -> Option<Generation> {
        Generation::of_major(self.major)
    }
}

impl fmt::Display for GfxVersion {
    /// The LLVM target spelling: `gfx900`, `gfx90a`, `gfx1030`, `gfx1100`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "gfx{}{:x}{:x}", self.major, self.minor, self.stepping)
    }
}

/// Which doorbell assignment a part uses (the kernel's `amdgpu_doorbell_index` tables).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DoorbellAssignment {
    /// Vega 10 (`AMDGPU_DOORBELL64`): SDMA at 0xF0, 0xF2.
    Vega10,
    /// Vega 20 and later: SDMA every 0xA from 0x100.
    Vega20,
}

/// The memory type of a part's VRAM, as the DRM device information reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum VramType {
    /// High-bandwidth memory (`AMDGPU_VRAM_TYPE_HBM`).
    Hbm,
    /// GDDR6 (`AMDGPU_VRAM_TYPE_GDDR6`).
    Gddr6,
}

/// What a GPU cache holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CacheContents {
    /// Data (vector L1, scalar data, GL1, L2, L3).
    Data,
    /// Instructions (the SQC's instruction cache).
    Instruction,
}

/// Which compute units one instance of a cache serves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CacheSharing {
    /// Each group of this many consecutive CUs of a shader array has its own instance (the
    /// last group of an array may be smaller); amdkfd's `num_cu_shared` of a level-1 cache.
    CusOfArray(u32),
    /// One instance serves every CU of the GPU (L2, L3).
    WholeGpu,
}

/// One kind of cache of a part: a row of amdkfd's per-ASIC cache table (`kfd_crat.c`), which
/// the topology turns into one sysfs cache per instance.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CacheFacts {
    /// Cache level (1, 2, 3).
    pub level: u32,
    /// What it holds.
    pub contents: CacheContents,
    /// Size of one instance, KiB.
    pub size_kib: u32,
    /// Line size, bytes.
    pub line_bytes: u32,
    /// Which CUs one instance serves.
    pub sharing: CacheSharing,
}

impl CacheFacts {
    const fn new(
        level: u32,
        contents: CacheContents,
        size_kib: u32,
        line_bytes: u32,
        sharing: CacheSharing,
    ) -> Self {
        CacheFacts {
            level,
            contents,
            size_kib,
            line_bytes,
            sharing,
        }
    }
}

/// The xnack and sramecc target features a part has (LLVM's target ID features), each `None`
/// when the part does not support it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TargetFeatures {
    /// Whether the part supports `sramecc` (and whether the modelled board has it on: the
    /// Instinct boards ship with ECC on, so their target ID says `sramecc+`, and the driver
    /// reports RAS with SRAM and memory EDC — see [`TargetFeatures::ecc_on`]).
    pub sramecc: Option<bool>,
    /// Whether the part supports `xnack` (and whether it is on by default).
    pub xnack: Option<bool>,
}

impl TargetFeatures {
    /// Whether the board runs with ECC (RAS) on: amdkfd then sets the node's SRAM EDC,
    /// memory EDC and RAS-event capability bits, from which ROCr takes the agent's `sramecc+`.
    pub const fn ecc_on(self) -> bool {
        matches!(self.sramecc, Some(true))
    }

    /// The target ID as rocminfo prints it (`gfx90a:sramecc-:xnack-`, or the bare name for a
    /// part without either feature), as a `Display`.
    pub const fn target_id(self, gfx_name: &str) -> TargetId<'_> {
        TargetId {
            gfx_name,
            features: self,
        }
    }
}

/// A target ID: a gfx name and its feature states (see [`TargetFeatures::target_id`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TargetId<'a> {
    gfx_name: &'a str,
    features: TargetFeatures,
}

impl fmt::Display for TargetId<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.gfx_name)?;
        for (name, state) in [
            ("sramecc", self.features.sramecc),
            ("xnack", self.features.xnack),
        ] {
            if let Some(on) = state {
                write!(f, ":{name}{}", if on { '+' } else { '-' })?;
            }
        }
        Ok(())
    }
}

/// Everything fixed about one modelled part: identity, versions, and the numbers its
/// topology node, DRM device information and queues are built from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PresetFacts {
    /// The LLVM target name (`gfx900`).
    pub gfx_name: &'static str,
    /// The chip's code name, the topology node's `name` (`vega10`).
    pub chip: &'static str,
    /// The board the preset stands for.
    pub board: &'static str,
    /// The marketing name libdrm's `amdgpu.ids` gives the board (what rocminfo prints).
    pub marketing_name: &'static str,
    /// The target ID features (`xnack`, `sramecc`) and their state on the modelled board.
    pub features: TargetFeatures,
    /// The caches, in amdkfd's table order (its per-ASIC `kfd_gpu_cache_info` rows).
    pub caches: &'static [CacheFacts],
    /// The GC IP version (`KFD_GC_VERSION`).
    pub gc: GfxVersion,
    /// The generation of [`PresetFacts::gc`] (checked at compile time to agree with it).
    pub generation: Generation,
    /// The SDMA IP version.
    pub sdma: GfxVersion,
    /// `gfx_target_version` in sysfs (`major×10000 + minor×100 + stepping`).
    pub gfx_target_version: u64,
    /// PCI device id.
    pub device_id: u64,
    /// The PCI revision that makes libdrm's `amdgpu.ids` name [`PresetFacts::board`].
    pub pci_revision: u32,
    /// The DRM `external_rev` of the device information.
    pub external_revision: u32,
    /// The DRM `AMDGPU_FAMILY_*` of the part (141 AI for gfx9, 143 NV for Navi 1x/2x).
    pub drm_family: u32,
    /// VRAM memory type.
    pub vram_type: VramType,
    /// Doorbell assignment.
    pub doorbells: DoorbellAssignment,
    /// Compute units.
    pub cus: u64,
    /// SIMDs per CU.
    pub simd_per_cu: u64,
    /// Shader arrays (`array_count`).
    pub array_count: u64,
    /// Shader arrays per shader engine.
    pub simd_arrays_per_engine: u64,
    /// CUs per shader array.
    pub cu_per_simd_array: u64,
    /// Waves per SIMD.
    pub max_waves_per_simd: u64,
    /// Wave size (64 or 32).
    pub wave_front_size: u64,
    /// GDS size in KiB.
    pub gds_kib: u64,
    /// PCIe SDMA engines.
    pub num_sdma_engines: u64,
    /// xGMI SDMA engines.
    pub num_sdma_xgmi_engines: u64,
    /// Queues per SDMA engine.
    pub num_sdma_queues_per_engine: u64,
    /// HQDs KFD may use.
    pub num_cp_queues: u64,
    /// XCCs (compute partitions' dies).
    pub num_xcc: u64,
    /// Engine clock in MHz.
    pub clock_mhz: u64,
    /// VRAM in bytes.
    pub vram: u64,
    /// VRAM bus width in bits.
    pub vram_width: u32,
    /// VRAM clock in MHz.
    pub vram_clk: u32,
    /// L2 cache in KiB.
    pub l2_kib: u32,
    /// L3 (Infinity Cache) in KiB.
    pub l3_kib: u32,
    /// MEC firmware version.
    pub fw_version: u64,
    /// SDMA firmware version.
    pub sdma_fw_version: u64,
    /// First `gpu_id` the model gives GPUs of this part.
    pub gpu_id_base: u32,
}

/// Declares the presets once: each line is a variant and its facts row, and the enum,
/// [`Preset::ALL`] and [`Preset::facts`] are generated from it, so a new part is one line here
/// plus its row (and whatever exhaustive matches elsewhere the compiler then points at).
macro_rules! presets {
    ($( $(#[$doc:meta])* $variant:ident => $facts:ident, )+) => {
        /// A GPU part the model knows. Its facts are [`Preset::facts`].
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum Preset {
            $( $(#[$doc])* $variant, )+
        }

        impl Preset {
            /// Every preset, in declaration order.
            pub const ALL: &'static [Preset] = &[$( Preset::$variant, )+];

            /// The facts of the part: the one table row a new preset needs.
            pub const fn facts(self) -> &'static PresetFacts {
                match self {
                    $( Preset::$variant => &$facts, )+
                }
            }
        }
    };
}

presets! {
    /// Vega 10 (Radeon Instinct MI25): GC 9.0.1, 64 CUs, 24 HQDs, SDMA 4.0 with 2 queues/engine.
    Gfx900 => GFX900,
    /// Aldebaran (Instinct MI210): GC 9.4.2, 104 CUs, the 21-dword MAP_PROCESS, VMIDs 3–15.
    Gfx90a => GFX90A,
    /// Aqua Vanjaram (Instinct MI300X): GC 9.4.3, 304 CUs over 8 XCCs.
    Gfx942 => GFX942,
    /// Navi 21 (Radeon RX 6900 XT): GC 10.3.0, 80 CUs in wave32, only 8 HQDs for KFD.
    Gfx1030 => GFX1030,
}

const GIB: u64 = 1 << 30;

use CacheContents::{Data, Instruction};
use CacheSharing::{CusOfArray, WholeGpu};

// The cache tables below follow amdkfd's per-ASIC tables (kfd_crat.c: vega10, aldebaran,
// sienna_cichlid; GC 9.4.3 reads its sizes from IP discovery) and AMD's published cache sizes.

/// Vega 10: a 16 KiB vector L1 per CU, scalar instruction (32 KiB) and data (16 KiB) caches per
/// 3 CUs, a 4 MiB L2; 64-byte lines throughout.
const VEGA10_CACHES: &[CacheFacts] = &[
    CacheFacts::new(1, Data, 16, 64, CusOfArray(1)),
    CacheFacts::new(1, Instruction, 32, 64, CusOfArray(3)),
    CacheFacts::new(1, Data, 16, 64, CusOfArray(3)),
    CacheFacts::new(2, Data, 4096, 64, WholeGpu),
];

/// Aldebaran: as Vega 10 with the scalar caches per 2 CUs and an 8 MiB L2 of 128-byte lines.
const ALDEBARAN_CACHES: &[CacheFacts] = &[
    CacheFacts::new(1, Data, 16, 64, CusOfArray(1)),
    CacheFacts::new(1, Instruction, 32, 64, CusOfArray(2)),
    CacheFacts::new(1, Data, 16, 64, CusOfArray(2)),
    CacheFacts::new(2, Data, 8192, 128, WholeGpu),
];

/// Aqua Vanjaram (MI300X, CDNA3): a 32 KiB vector L1 per CU, a 64 KiB instruction and a 16 KiB
/// scalar cache per 2 CUs, 4 MiB L2 (per XCC, as amdkfd reports it), 256 MiB Infinity Cache.
const AQUA_VANJARAM_CACHES: &[CacheFacts] = &[
    CacheFacts::new(1, Data, 32, 128, CusOfArray(1)),
    CacheFacts::new(1, Instruction, 64, 64, CusOfArray(2)),
    CacheFacts::new(1, Data, 16, 64, CusOfArray(2)),
    CacheFacts::new(2, Data, 4096, 128, WholeGpu),
    CacheFacts::new(3, Data, 262144, 64, WholeGpu),
];

/// Navi 21: a 16 KiB vector L0 per CU (level 1 to KFD), scalar caches per 2 CUs, a 128 KiB GL1
/// per shader array (10 CUs), a 4 MiB L2 and a 128 MiB Infinity Cache.
const SIENNA_CICHLID_CACHES: &[CacheFacts] = &[
    CacheFacts::new(1, Data, 16, 128, CusOfArray(1)),
    CacheFacts::new(1, Instruction, 32, 64, CusOfArray(2)),
    CacheFacts::new(1, Data, 16, 64, CusOfArray(2)),
    CacheFacts::new(1, Data, 128, 128, CusOfArray(10)),
    CacheFacts::new(2, Data, 4096, 128, WholeGpu),
    CacheFacts::new(3, Data, 131072, 64, WholeGpu),
];

const GFX900: PresetFacts = PresetFacts {
    gfx_name: "gfx900",
    chip: "vega10",
    board: "Radeon Instinct MI25",
    marketing_name: "AMD Radeon Instinct MI25",
    features: TargetFeatures {
        sramecc: None,
        xnack: Some(false),
    },
    caches: VEGA10_CACHES,
    gc: GfxVersion::new(9, 0, 1),
    generation: Generation::Gfx9,
    sdma: GfxVersion::new(4, 0, 0),
    gfx_target_version: 90000,
    device_id: 0x6860,
    pci_revision: 0x00,
    external_revision: 0x01,
    drm_family: 141,
    vram_type: VramType::Hbm,
    doorbells: DoorbellAssignment::Vega10,
    cus: 64,
    simd_per_cu: 4,
    array_count: 4,
    simd_arrays_per_engine: 1,
    cu_per_simd_array: 16,
    max_waves_per_simd: 10,
    wave_front_size: 64,
    gds_kib: 64,
    num_sdma_engines: 2,
    num_sdma_xgmi_engines: 0,
    num_sdma_queues_per_engine: 2,
    num_cp_queues: 24,
    num_xcc: 1,
    clock_mhz: 1500,
    vram: 16 * GIB,
    vram_width: 2048,
    vram_clk: 945,
    l2_kib: 4096,
    l3_kib: 0,
    fw_version: 446,
    sdma_fw_version: 430,
    gpu_id_base: 0x4f3a,
};

const GFX90A: PresetFacts = PresetFacts {
    gfx_name: "gfx90a",
    chip: "aldebaran",
    board: "Instinct MI210",
    marketing_name: "AMD Instinct MI210",
    features: TargetFeatures {
        sramecc: Some(true),
        xnack: Some(false),
    },
    caches: ALDEBARAN_CACHES,
    gc: GfxVersion::new(9, 4, 2),
    generation: Generation::Gfx9,
    sdma: GfxVersion::new(4, 4, 0),
    gfx_target_version: 90010,
    device_id: 0x740f,
    pci_revision: 0x02,
    external_revision: 0x01,
    drm_family: 141,
    vram_type: VramType::Hbm,
    doorbells: DoorbellAssignment::Vega20,
    cus: 104,
    simd_per_cu: 4,
    array_count: 8,
    simd_arrays_per_engine: 1,
    cu_per_simd_array: 14,
    max_waves_per_simd: 8,
    wave_front_size: 64,
    gds_kib: 0,
    num_sdma_engines: 2,
    num_sdma_xgmi_engines: 3,
    num_sdma_queues_per_engine: 8,
    num_cp_queues: 24,
    num_xcc: 1,
    clock_mhz: 1700,
    vram: 64 * GIB,
    vram_width: 4096,
    vram_clk: 1600,
    l2_kib: 8192,
    l3_kib: 0,
    fw_version: 78,
    sdma_fw_version: 8,
    gpu_id_base: 0x8a1c,
};

const GFX942: PresetFacts = PresetFacts {
    gfx_name: "gfx942",
    chip: "aqua_vanjaram",
    board: "Instinct MI300X",
    marketing_name: "AMD Instinct MI300X",
    features: TargetFeatures {
        sramecc: Some(true),
        xnack: Some(false),
    },
    caches: AQUA_VANJARAM_CACHES,
    gc: GfxVersion::new(9, 4, 3),
    generation: Generation::Gfx9,
    sdma: GfxVersion::new(4, 4, 2),
    gfx_target_version: 90402,
    device_id: 0x74a1,
    pci_revision: 0x00,
    external_revision: 0x01,
    drm_family: 141,
    vram_type: VramType::Hbm,
    doorbells: DoorbellAssignment::Vega20,
    cus: 304,
    simd_per_cu: 4,
    array_count: 32,
    simd_arrays_per_engine: 1,
    cu_per_simd_array: 10,
    max_waves_per_simd: 8,
    wave_front_size: 64,
    gds_kib: 0,
    num_sdma_engines: 2,
    num_sdma_xgmi_engines: 14,
    num_sdma_queues_per_engine: 8,
    num_cp_queues: 24,
    num_xcc: 8,
    clock_mhz: 2100,
    vram: 192 * GIB,
    vram_width: 8192,
    vram_clk: 1300,
    l2_kib: 4096,
    l3_kib: 262144,
    fw_version: 177,
    sdma_fw_version: 19,
    gpu_id_base: 0xc2d5,
};

const GFX1030: PresetFacts = PresetFacts {
    gfx_name: "gfx1030",
    chip: "sienna_cichlid",
    board: "Radeon RX 6900 XT",
    marketing_name: "AMD Radeon RX 6900 XT",
    features: TargetFeatures {
        sramecc: None,
        xnack: None,
    },
    caches: SIENNA_CICHLID_CACHES,
    gc: GfxVersion::new(10, 3, 0),
    generation: Generation::Gfx10,
    sdma: GfxVersion::new(5, 2, 0),
    gfx_target_version: 100300,
    device_id: 0x73bf,
    pci_revision: 0xC0,
    external_revision: 0x28,
    drm_family: 143,
    vram_type: VramType::Gddr6,
    doorbells: DoorbellAssignment::Vega20,
    cus: 80,
    simd_per_cu: 2,
    array_count: 8,
    simd_arrays_per_engine: 2,
    cu_per_simd_array: 10,
    max_waves_per_simd: 16,
    wave_front_size: 32,
    gds_kib: 0,
    num_sdma_engines: 4,
    num_sdma_xgmi_engines: 0,
    num_sdma_queues_per_engine: 8,
    num_cp_queues: 8,
    num_xcc: 1,
    clock_mhz: 2250,
    vram: 16 * GIB,
    vram_width: 256,
    vram_clk: 1000,
    l2_kib: 4096,
    l3_kib: 131072,
    fw_version: 115,
    sdma_fw_version: 83,
    gpu_id_base: 0x2b61,
};

impl Preset {
    /// The gfx name (`gfx900`, …).
    pub const fn name(self) -> &'static str {
        self.facts().gfx_name
    }

    /// The generation.
    pub const fn generation(self) -> Generation {
        self.facts().generation
    }

    /// The graphics/compute IP version (GC major, minor, stepping).
    pub const fn gc_version(self) -> (u32, u32, u32) {
        let v = self.facts().gc;
        (v.major as u32, v.minor as u32, v.stepping as u32)
    }

    /// The SDMA IP version.
    pub const fn sdma_version(self) -> (u32, u32, u32) {
        let v = self.facts().sdma;
        (v.major as u32, v.minor as u32, v.stepping as u32)
    }
}

// Every row's generation is the one its GC version names, and its cache table agrees with its
// L2 and L3 sizes.
const _: () = {
    let mut i = 0;
    while i < Preset::ALL.len() {
        let f = Preset::ALL[i].facts();
        assert!(
            f.generation.major() == f.gc.major,
            "generation disagrees with GC version"
        );
        let (mut l2, mut l3) = (0, 0);
        let mut c = 0;
        while c < f.caches.len() {
            match f.caches[c].level {
                2 => l2 += f.caches[c].size_kib,
                3 => l3 += f.caches[c].size_kib,
                _ => {}
            }
            c += 1;
        }
        assert!(
            l2 == f.l2_kib && l3 == f.l3_kib,
            "cache table disagrees with l2_kib/l3_kib"
        );
        i += 1;
    }
};

impl fmt::Display for Preset {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A name that is no [`Preset`]; it keeps up to 32 bytes of the name for its message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UnknownPreset {
    name: [u8; 32],
    len: u8,
    truncated: bool,
}

impl UnknownPreset {
    fn new(name: &str) -> Self {
        let mut len = name.len().min(32);
        while !name.is_char_boundary(len) {
            len -= 1;
        }
        let mut buf = [0; 32];
        buf[..len].copy_from_slice(&name.as_bytes()[..len]);
        UnknownPreset {
            name: buf,
            len: len as u8,
            truncated: len < name.len(),
        }
    }

    /// The (possibly shortened) name that was asked for.
    pub fn name(&self) -> &str {
        core::str::from_utf8(&self.name[..usize::from(self.len)]).unwrap_or("")
    }
}

impl fmt::Display for UnknownPreset {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let more = if self.truncated { "…" } else { "" };
        write!(
            f,
            "unknown GPU preset '{}{more}'; choose one of",
            self.name()
        )?;
        for (i, p) in Preset::ALL.iter().enumerate() {
            f.write_str(if i == 0 { " " } else { ", " })?;
            f.write_str(p.name())?;
        }
        Ok(())
    }
}

impl core::error::Error for UnknownPreset {}

impl FromStr for Preset {
    type Err = UnknownPreset;

    /// A preset by its gfx name, case-insensitive.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Preset::ALL
            .iter()
            .copied()
            .find(|p| p.name().eq_ignore_ascii_case(s.trim()))
            .ok_or_else(|| UnknownPreset::new(s))
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use std::format;

    #[test]
    fn generations_of_known_majors_only() {
        assert_eq!(Generation::of_major(9), Some(Generation::Gfx9));
        assert_eq!(Generation::of_major(11), Some(Generation::Gfx11));
        assert_eq!(Generation::of_major(8), None);
        assert_eq!(Generation::of_major(12), None);
        assert_eq!(
            GfxVersion::from_target_version(90010).generation(),
            Some(Generation::Gfx9)
        );
    }

    #[test]
    fn target_ids_as_rocminfo_prints_them() {
        let id = |p: Preset| format!("{}", p.facts().features.target_id(p.name()));
        // rocminfo 5.2.3 under the shim: amdgcn-amd-amdhsa--gfx900:xnack-, --gfx90a:sramecc+:xnack-
        // (MI210 ships with ECC on),
        // --gfx1030.
        assert_eq!(id(Preset::Gfx900), "gfx900:xnack-");
        assert_eq!(id(Preset::Gfx90a), "gfx90a:sramecc+:xnack-");
        assert_eq!(id(Preset::Gfx942), "gfx942:sramecc+:xnack-");
        assert_eq!(id(Preset::Gfx1030), "gfx1030");
        let on = TargetFeatures {
            sramecc: Some(true),
            xnack: Some(true),
        };
        assert_eq!(
            format!("{}", on.target_id("gfx90a")),
            "gfx90a:sramecc+:xnack+"
        );
    }

    #[test]
    fn cache_tables_follow_amdkfd() {
        // vega10_cache_info: TCP per CU, SQC instruction and data per 3 CUs, L2 4 MiB.
        let v = Preset::Gfx900.facts().caches;
        assert_eq!(v.len(), 4);
        assert_eq!(v[0], CacheFacts::new(1, Data, 16, 64, CusOfArray(1)));
        assert_eq!(
            (v[1].contents, v[1].size_kib, v[1].sharing),
            (Instruction, 32, CusOfArray(3))
        );
        assert_eq!(
            (v[3].level, v[3].size_kib, v[3].sharing),
            (2, 4096, WholeGpu)
        );
        // aldebaran_cache_info: scalar caches per 2 CUs, 8 MiB L2 of 128-byte lines.
        let a = Preset::Gfx90a.facts().caches;
        assert_eq!(
            (a[2].sharing, a[3].size_kib, a[3].line_bytes),
            (CusOfArray(2), 8192, 128)
        );
        // sienna_cichlid_cache_info: a GL1 per shader array of 10 CUs and a 128 MiB L3.
        let n = Preset::Gfx1030.facts().caches;
        assert_eq!((n[3].size_kib, n[3].sharing), (128, CusOfArray(10)));
        assert_eq!((n[5].level, n[5].size_kib), (3, 131072));
        for &p in Preset::ALL {
            let f = p.facts();
            // Every level-1 group fits a shader array; every part has its L1 per CU.
            assert_eq!(f.caches[0].sharing, CusOfArray(1), "{p}");
            for c in f.caches {
                if let CusOfArray(n) = c.sharing {
                    assert!(n >= 1 && u64::from(n) <= f.cu_per_simd_array, "{p}");
                }
            }
            assert!(f.marketing_name.starts_with("AMD "), "{p}");
        }
    }

    #[test]
    fn preset_rows() {
        assert_eq!(Preset::Gfx90a.gc_version(), (9, 4, 2));
        assert_eq!(Preset::Gfx1030.generation(), Generation::Gfx10);
        assert_eq!(Preset::Gfx942.facts().gfx_target_version, 90402);
        assert_eq!("GFX90A".parse::<Preset>(), Ok(Preset::Gfx90a));
        let e = "gfx8".parse::<Preset>().unwrap_err();
        assert_eq!(
            format!("{e}"),
            "unknown GPU preset 'gfx8'; choose one of gfx900, gfx90a, gfx942, gfx1030"
        );
        let long = "x".repeat(40);
        assert_eq!(long.parse::<Preset>().unwrap_err().name().len(), 32);
        for &p in Preset::ALL {
            assert_eq!(p.name().parse::<Preset>(), Ok(p));
            // The gfx name is the LLVM spelling of the sysfs target version.
            let t = GfxVersion::from_target_version(p.facts().gfx_target_version as u32);
            assert_eq!(format!("{t}"), p.name());
            assert_eq!(t.generation(), Some(p.generation()), "{p}");
        }
    }
}
