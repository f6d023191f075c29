//! `kfd_topology`: the nodes the driver reports, built from a preset, and written out as a
//! sysfs-format tree (`generation_id`, `system_properties`, `nodes/N/{gpu_id,name,properties,
//! mem_banks,caches,io_links,p2p_links}`) exactly as C clients read it.
//!
//! Node 0 is the CPU; nodes 1.. are the GPUs. Every value is fixed per preset (no reading of
//! the host), so the same preset always produces the same tree and the same `gpu_id`s.

// Unsafe here: `sysinfo(2)` fills a libc struct.
#![allow(unsafe_code)]

use crate::config::{ModelConfig, Preset};
use kfd_sys::gpu::{CacheContents, CacheSharing, PresetFacts};
use kfd_sys::sysfs::{self, cache, io_link, mem_bank, node};
use mqd::{topology_sizes, GfxVersion, TopologyInputs, TopologySizes};
use std::fmt::Write as _;
use std::io;
use std::path::Path;

/// The `properties` of one node: the shared sysfs record.
pub use kfd_sys::sysfs::NodeProperties;

/// One memory bank of a node: the shared sysfs record.
pub use kfd_sys::sysfs::{HeapType, MemBank};

/// One cache of a node: the shared sysfs record.
pub type Cache = kfd_sys::sysfs::Cache<Vec<u8>>;

/// One io link of a node: the shared sysfs record.
pub use kfd_sys::sysfs::IoLink;

/// A topology node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    /// 0 for the CPU node.
    pub gpu_id: u32,
    /// Contents of the `name` file.
    pub name: String,
    /// Contents of `properties`.
    pub properties: NodeProperties,
    /// `mem_banks/M`.
    pub mem_banks: Vec<MemBank>,
    /// `caches/C`.
    pub caches: Vec<Cache>,
    /// `io_links/L`.
    pub io_links: Vec<IoLink>,
}

impl Node {
    /// Whether this is a GPU node.
    pub fn is_gpu(&self) -> bool {
        self.gpu_id != 0
    }

    /// Compute units of the node (SIMDs / SIMDs per CU).
    pub fn cu_count(&self) -> u64 {
        self.properties
            .simd_count
            .checked_div(self.properties.simd_per_cu)
            .unwrap_or(0)
    }

    /// Local memory (the sum of the VRAM banks).
    pub fn vram_size(&self) -> u64 {
        self.mem_banks
            .iter()
            .filter(|b| b.heap_type != HeapType::System)
            .map(|b| b.size_in_bytes)
            .sum()
    }
}

/// The whole topology of a model instance.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Topology {
    /// `generation_id`.
    pub generation_id: u32,
    /// `system_properties`: platform_oem, platform_id, platform_rev.
    pub platform: (u64, u64, u64),
    /// Node 0 (CPU) then the GPUs.
    pub nodes: Vec<Node>,
}

/// The fixed description of one GPU part: its row of the shared preset table.
fn part(preset: Preset) -> &'static PresetFacts {
    preset.facts()
}

/// The queue buffer sizes the topology requires (facts §9.9, computed by `mqd`).
fn queue_sizes(spec: &PresetFacts) -> TopologySizes {
    let inputs = TopologyInputs {
        gfx_target_version: GfxVersion::from_target_version(spec.gfx_target_version as u32),
        simd_count: (spec.cus * spec.simd_per_cu) as u32,
        simd_per_cu: spec.simd_per_cu as u32,
        num_xcc: spec.num_xcc as u32,
        array_count: spec.array_count as u32,
        simd_arrays_per_engine: spec.simd_arrays_per_engine as u32,
        vgpr_per_cu: None,
    };
    // Every preset's numbers are small; the formulas cannot overflow for them.
    topology_sizes(&inputs).unwrap_or(TopologySizes {
        ctl_stack_size: 0,
        wg_data_size: 0,
        cwsr_size: 0,
        debug_memory_size: 0,
        eop_buffer_size: 4096,
    })
}

/// `HSA_CAP_*` bits every modelled GPU reports.
const GPU_CAPABILITY: u32 = (sysfs::HSA_CAP_DOORBELL_TYPE_2_0
    << sysfs::HSA_CAP_DOORBELL_TYPE_TOTALBITS_SHIFT)
    | sysfs::HSA_CAP_AQL_QUEUE_DOUBLE_MAP
    | sysfs::HSA_CAP_TRAP_DEBUG_SUPPORT
    | sysfs::HSA_CAP_TRAP_DEBUG_WAVE_LAUNCH_TRAP_OVERRIDE_SUPPORTED
    | sysfs::HSA_CAP_TRAP_DEBUG_WAVE_LAUNCH_MODE_SUPPORTED
    | sysfs::HSA_CAP_TRAP_DEBUG_FIRMWARE_SUPPORTED
    // Every modelled part is GC 9.0.1 or newer, where amdkfd supports the SVM API.
    | sysfs::HSA_CAP_SVMAPI_SUPPORTED;

/// The capability bits of a board with ECC on (amdkfd: SRAM EDC for the GFX RAS block,
/// memory EDC for UMC, RAS event notification when any RAS block is on); ROCr reads SRAM EDC
/// as the agent's `sramecc+`.
const fn ras_capability(features: kfd_sys::gpu::TargetFeatures) -> u32 {
    if features.ecc_on() {
        sysfs::HSA_CAP_SRAM_EDCSUPPORTED
            | sysfs::HSA_CAP_MEM_EDCSUPPORTED
            | sysfs::HSA_CAP_RASEVENTNOTIFY
    } else {
        0
    }
}

/// Cores, clock and memory of the modelled host CPU.
const CPU_CORES: u64 = 16;
const CPU_CLOCK_MHZ: u64 = 3000;
/// The most system memory the CPU node reports unless configured otherwise.
pub const MAX_SYSTEM_MEMORY: u64 = 64 << 30;

/// The host's RAM (`sysinfo`'s total), page aligned, at most [`MAX_SYSTEM_MEMORY`]: what the
/// CPU node reports by default, so allocations sized from the topology fit the host.
pub fn host_system_memory() -> u64 {
    let mut info = std::mem::MaybeUninit::<libc::sysinfo>::zeroed();
    // SAFETY: sysinfo fills the struct it is given; it is zero-initialised, so it is valid
    // whatever the call does.
    let info = unsafe {
        libc::sysinfo(info.as_mut_ptr());
        info.assume_init()
    };
    let total = (info.totalram as u64).saturating_mul(u64::from(info.mem_unit.max(1)));
    let total = total & !(crate::hw::mem::PAGE_SIZE as u64 - 1);
    if total == 0 {
        // No answer: a small machine's worth rather than a promise the host cannot keep.
        return 4 << 30;
    }
    total.min(MAX_SYSTEM_MEMORY)
}

impl Topology {
    /// The topology of `config`: a CPU node followed by `config.gpus` GPU nodes.
    pub fn from_config(config: &ModelConfig) -> Topology {
        let spec = part(config.preset);
        let gpus = config.gpus as usize;
        let mut nodes = Vec::with_capacity(gpus + 1);
        let system_memory = config.system_memory.unwrap_or_else(host_system_memory);
        nodes.push(cpu_node(gpus, system_memory));
        for index in 0..gpus {
            nodes.push(gpu_node(spec, index, gpus, config.preset));
        }
        Topology {
            generation_id: 1,
            platform: (0x414d44, 0x2020204d5359, 1),
            nodes,
        }
    }

    /// The GPU nodes.
    pub fn gpus(&self) -> impl Iterator<Item = &Node> {
        self.nodes.iter().filter(|n| n.is_gpu())
    }

    /// The node of a GPU id.
    pub fn gpu(&self, gpu_id: u32) -> Option<&Node> {
        self.gpus().find(|n| n.gpu_id == gpu_id)
    }

    /// The queue buffer sizes a preset's GPUs require (what `CREATE_QUEUE` validates).
    pub fn queue_sizes(preset: Preset) -> TopologySizes {
        queue_sizes(part(preset))
    }

    /// Writes the tree under `root` (which becomes the `topology` directory), creating it.
    pub fn write_sysfs(&self, root: &Path) -> io::Result<()> {
        std::fs::create_dir_all(root.join(sysfs::KFD_SYSFS_NODES))?;
        std::fs::write(
            root.join(sysfs::KFD_SYSFS_GENERATION_ID),
            format!("{}\n", self.generation_id),
        )?;
        let (oem, id, rev) = self.platform;
        let mut sys = String::new();
        for (k, v) in sysfs::system::ALL.iter().zip([oem, id, rev]) {
            let _ = writeln!(sys, "{k} {v}");
        }
        std::fs::write(root.join(sysfs::KFD_SYSFS_SYSTEM_PROPERTIES), sys)?;
        for (i, n) in self.nodes.iter().enumerate() {
            let dir = root.join(sysfs::KFD_SYSFS_NODES).join(i.to_string());
            std::fs::create_dir_all(&dir)?;
            std::fs::write(
                dir.join(sysfs::KFD_SYSFS_NODE_GPU_ID),
                format!("{}\n", n.gpu_id),
            )?;
            std::fs::write(
                dir.join(sysfs::KFD_SYSFS_NODE_NAME),
                format!("{}\n", n.name),
            )?;
            std::fs::write(dir.join(sysfs::KFD_SYSFS_PROPERTIES), n.properties_text())?;
            write_entries(
                &dir.join(sysfs::KFD_SYSFS_MEM_BANKS),
                n.mem_banks.iter().map(mem_bank_text),
            )?;
            write_entries(
                &dir.join(sysfs::KFD_SYSFS_CACHES),
                n.caches.iter().map(cache_text),
            )?;
            write_entries(
                &dir.join(sysfs::KFD_SYSFS_IO_LINKS),
                n.io_links.iter().map(io_link_text),
            )?;
            std::fs::create_dir_all(dir.join(sysfs::KFD_SYSFS_P2P_LINKS))?;
        }
        Ok(())
    }
}

fn write_entries(dir: &Path, texts: impl Iterator<Item = String>) -> io::Result<()> {
    std::fs::create_dir_all(dir)?;
    for (i, text) in texts.enumerate() {
        let entry = dir.join(i.to_string());
        std::fs::create_dir_all(&entry)?;
        std::fs::write(entry.join(sysfs::KFD_SYSFS_PROPERTIES), text)?;
    }
    Ok(())
}

fn lines(pairs: &[(&str, u64)]) -> String {
    let mut s = String::new();
    for (k, v) in pairs {
        let _ = writeln!(s, "{k} {v}");
    }
    s
}

impl Node {
    /// The `properties` file, one `key value` per line in the kernel's order.
    pub fn properties_text(&self) -> String {
        let p = &self.properties;
        let mut pairs = vec![
            (node::CPU_CORES_COUNT, p.cpu_cores_count),
            (node::SIMD_COUNT, p.simd_count),
            (node::MEM_BANKS_COUNT, self.mem_banks.len() as u64),
            (node::CACHES_COUNT, self.caches.len() as u64),
            (node::IO_LINKS_COUNT, self.io_links.len() as u64),
            (node::P2P_LINKS_COUNT, 0),
            (node::CPU_CORE_ID_BASE, p.cpu_core_id_base),
            (node::SIMD_ID_BASE, p.simd_id_base),
            (node::MAX_WAVES_PER_SIMD, p.max_waves_per_simd),
            (node::LDS_SIZE_IN_KB, p.lds_size_in_kb),
            (node::GDS_SIZE_IN_KB, p.gds_size_in_kb),
            (node::NUM_GWS, p.num_gws),
            (node::WAVE_FRONT_SIZE, p.wave_front_size),
            (node::ARRAY_COUNT, p.array_count),
            (node::SIMD_ARRAYS_PER_ENGINE, p.simd_arrays_per_engine),
            (node::CU_PER_SIMD_ARRAY, p.cu_per_simd_array),
            (node::SIMD_PER_CU, p.simd_per_cu),
            (node::MAX_SLOTS_SCRATCH_CU, p.max_slots_scratch_cu),
            (node::GFX_TARGET_VERSION, p.gfx_target_version),
            (node::VENDOR_ID, p.vendor_id),
            (node::DEVICE_ID, p.device_id),
            (node::LOCATION_ID, p.location_id),
            (node::DOMAIN, p.domain),
            (node::DRM_RENDER_MINOR, p.drm_render_minor),
            (node::HIVE_ID, p.hive_id),
            (node::NUM_SDMA_ENGINES, p.num_sdma_engines),
            (node::NUM_SDMA_XGMI_ENGINES, p.num_sdma_xgmi_engines),
            (
                node::NUM_SDMA_QUEUES_PER_ENGINE,
                p.num_sdma_queues_per_engine,
            ),
            (node::NUM_CP_QUEUES, p.num_cp_queues),
        ];
        if self.is_gpu() {
            pairs.extend([
                (node::MAX_ENGINE_CLK_FCOMPUTE, p.max_engine_clk_fcompute),
                (node::LOCAL_MEM_SIZE, p.local_mem_size),
                (node::FW_VERSION, p.fw_version),
                (node::CAPABILITY, p.capability),
                (node::CAPABILITY2, p.capability2),
                (node::DEBUG_PROP, p.debug_prop),
                (node::SDMA_FW_VERSION, p.sdma_fw_version),
                (node::UNIQUE_ID, p.unique_id),
                (node::NUM_XCC, p.num_xcc),
            ]);
        }
        pairs.push((node::MAX_ENGINE_CLK_CCOMPUTE, p.max_engine_clk_ccompute));
        if self.is_gpu() {
            pairs.extend([
                (node::CTL_STACK_SIZE, p.ctl_stack_size),
                (node::CWSR_SIZE, p.cwsr_size),
                (node::EOP_BUFFER_SIZE, p.eop_buffer_size),
            ]);
        }
        lines(&pairs)
    }
}

/// The `properties` text of a memory bank.
fn mem_bank_text(bank: &MemBank) -> String {
    lines(
        &mem_bank::ALL
            .iter()
            .copied()
            .zip(bank.values())
            .collect::<Vec<_>>(),
    )
}

/// The `properties` text of a cache.
fn cache_text(c: &Cache) -> String {
    let mut s = lines(
        &cache::ALL[..8]
            .iter()
            .copied()
            .zip(c.values().map(u64::from))
            .collect::<Vec<_>>(),
    );
    let map: Vec<String> = c.sibling_map.iter().map(|b| b.to_string()).collect();
    let _ = writeln!(s, "{} {}", cache::SIBLING_MAP, map.join(","));
    s
}

/// The `properties` text of an io link.
fn io_link_text(link: &IoLink) -> String {
    lines(
        &io_link::ALL
            .iter()
            .copied()
            .zip(link.values().map(u64::from))
            .collect::<Vec<_>>(),
    )
}

fn pcie_link(from: u32, to: u32) -> IoLink {
    IoLink {
        link_type: sysfs::HSA_IOLINK_TYPE_PCIEXPRESS,
        version_major: 4,
        version_minor: 0,
        node_from: from,
        node_to: to,
        weight: 20,
        min_latency: 0,
        max_latency: 0,
        min_bandwidth: 312,
        max_bandwidth: 32000,
        recommended_transfer_size: 0,
        flags: sysfs::HSA_IOLINK_FLAGS_ENABLED,
    }
}

fn cpu_node(gpus: usize, system_memory: u64) -> Node {
    Node {
        gpu_id: 0,
        name: String::new(),
        properties: NodeProperties {
            cpu_cores_count: CPU_CORES,
            max_engine_clk_ccompute: CPU_CLOCK_MHZ,
            ..Default::default()
        },
        mem_banks: vec![MemBank {
            heap_type: HeapType::System,
            size_in_bytes: system_memory,
            flags: 0,
            width: 64,
            mem_clk_max: 3200,
        }],
        caches: vec![Cache {
            processor_id_low: 0,
            level: 3,
            size_kib: 32768,
            cache_line_size: 64,
            cache_lines_per_tag: 1,
            association: 16,
            latency: 50,
            cache_type: sysfs::HSA_CACHE_TYPE_DATA | sysfs::HSA_CACHE_TYPE_CPU,
            sibling_map: vec![1; CPU_CORES as usize],
        }],
        io_links: (1..=gpus as u32).map(|g| pcie_link(0, g)).collect(),
    }
}

fn gpu_node(spec: &PresetFacts, index: usize, gpus: usize, preset: Preset) -> Node {
    let node_id = index as u32 + 1;
    let sizes = queue_sizes(spec);
    let simd_count = spec.cus * spec.simd_per_cu;
    let properties = NodeProperties {
        simd_count,
        simd_id_base: 0x8000_0000 + 0x1000 * index as u64,
        max_waves_per_simd: spec.max_waves_per_simd,
        lds_size_in_kb: 64,
        gds_size_in_kb: spec.gds_kib,
        num_gws: 64,
        wave_front_size: spec.wave_front_size,
        array_count: spec.array_count,
        simd_arrays_per_engine: spec.simd_arrays_per_engine,
        cu_per_simd_array: spec.cu_per_simd_array,
        simd_per_cu: spec.simd_per_cu,
        max_slots_scratch_cu: 32,
        gfx_target_version: spec.gfx_target_version,
        vendor_id: 0x1002,
        device_id: spec.device_id,
        location_id: (0x03 + index as u64) << 8,
        domain: 0,
        drm_render_minor: 128 + index as u64,
        hive_id: if spec.num_sdma_xgmi_engines > 0 && gpus > 1 {
            0x4b46_4400_0000_0001
        } else {
            0
        },
        num_sdma_engines: spec.num_sdma_engines,
        num_sdma_xgmi_engines: spec.num_sdma_xgmi_engines,
        num_sdma_queues_per_engine: spec.num_sdma_queues_per_engine,
        num_cp_queues: spec.num_cp_queues,
        max_engine_clk_fcompute: spec.clock_mhz,
        local_mem_size: spec.vram,
        fw_version: spec.fw_version,
        capability: u64::from(GPU_CAPABILITY | ras_capability(spec.features)),
        capability2: 0,
        debug_prop: 0x400 | (6 << 4) | 6,
        sdma_fw_version: spec.sdma_fw_version,
        unique_id: 0x6b66_6452_5300_0000 | ((preset as u64) << 8) | index as u64,
        num_xcc: spec.num_xcc,
        max_engine_clk_ccompute: CPU_CLOCK_MHZ,
        ctl_stack_size: u64::from(sizes.ctl_stack_size),
        cwsr_size: u64::from(sizes.cwsr_size),
        eop_buffer_size: u64::from(sizes.eop_buffer_size),
        ..Default::default()
    };
    let caches = gpu_caches(spec, properties.simd_id_base as u32);
    let mut io_links = vec![pcie_link(node_id, 0)];
    if properties.hive_id != 0 {
        for peer in (1..=gpus as u32).filter(|&p| p != node_id) {
            io_links.push(IoLink {
                link_type: sysfs::HSA_IOLINK_TYPE_XGMI,
                weight: 15,
                min_bandwidth: 50_000,
                max_bandwidth: 50_000,
                ..pcie_link(node_id, peer)
            });
        }
    }
    Node {
        gpu_id: spec.gpu_id_base + index as u32,
        name: spec.chip.to_owned(),
        properties,
        mem_banks: vec![MemBank {
            heap_type: HeapType::FrameBufferPublic,
            size_in_bytes: spec.vram,
            flags: 0,
            width: spec.vram_width,
            mem_clk_max: spec.vram_clk,
        }],
        caches,
        io_links,
    }
}

/// Bits per shader array in a sibling map (amdkfd writes a 32-bit CU bitmap per array).
const SIBLING_BITS_PER_ARRAY: usize = 32;

/// Active CUs in each shader array: the part's CUs spread over its arrays, the first arrays
/// taking one more when they do not divide evenly (a harvested part).
fn active_cus_per_array(spec: &PresetFacts) -> Vec<usize> {
    let arrays = spec.array_count.max(1) as usize;
    let cus = spec.cus as usize;
    (0..arrays)
        .map(|a| (cus / arrays + usize::from(a < cus % arrays)).min(SIBLING_BITS_PER_ARRAY))
        .collect()
}

/// The GPU's caches as amdkfd lists them from its per-ASIC table: for a level-1 row one
/// cache per group of CUs in each shader array, for L2/L3 one cache across the GPU; each with
/// the first CU it serves as `processor_id_low` and a sibling map relative to that CU.
/// Associativity, latency and lines per tag stay 0, as the driver leaves them for GPUs.
fn gpu_caches(spec: &PresetFacts, simd_id_base: u32) -> Vec<Cache> {
    let active = active_cus_per_array(spec);
    let mut caches = Vec::new();
    for row in spec.caches {
        let cache_type = sysfs::HSA_CACHE_TYPE_HSACU
            | match row.contents {
                CacheContents::Data => sysfs::HSA_CACHE_TYPE_DATA,
                CacheContents::Instruction => sysfs::HSA_CACHE_TYPE_INSTRUCTION,
            };
        let cache = |first_cu: usize, sibling_map: Vec<u8>| Cache {
            processor_id_low: simd_id_base + first_cu as u32,
            level: row.level,
            size_kib: row.size_kib,
            cache_line_size: row.line_bytes,
            cache_lines_per_tag: 0,
            association: 0,
            latency: 0,
            cache_type,
            sibling_map,
        };
        match row.sharing {
            CacheSharing::CusOfArray(n) => {
                let n = n.max(1) as usize;
                let mut first_cu = 0;
                for &in_array in &active {
                    for k in (0..in_array).step_by(n) {
                        let group = n.min(in_array - k);
                        let mut map = vec![0u8; SIBLING_BITS_PER_ARRAY];
                        map[..group].fill(1);
                        caches.push(cache(first_cu + k, map));
                    }
                    first_cu += in_array;
                }
            }
            CacheSharing::WholeGpu => {
                let mut map = vec![0u8; SIBLING_BITS_PER_ARRAY * active.len()];
                for (a, &in_array) in active.iter().enumerate() {
                    let at = a * SIBLING_BITS_PER_ARRAY;
                    map[at..at + in_array].fill(1);
                }
                caches.push(cache(0, map));
            }
        }
    }
    caches
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Vec<(String, u64)> {
        text.lines()
            .filter_map(|l| {
                let (k, v) = l.split_once(' ')?;
                Some((k.to_owned(), v.parse().ok()?))
            })
            .collect()
    }

    fn cpu_memory(config: &ModelConfig) -> u64 {
        let t = Topology::from_config(config);
        t.nodes[0].mem_banks.iter().map(|b| b.size_in_bytes).sum()
    }

    #[test]
    fn system_memory_is_what_the_host_has_at_most() {
        let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap();
        let kib: u64 = meminfo
            .lines()
            .find_map(|l| l.strip_prefix("MemTotal:"))
            .and_then(|v| v.trim().strip_suffix("kB"))
            .and_then(|v| v.trim().parse().ok())
            .expect("MemTotal in /proc/meminfo");
        let reported = cpu_memory(&ModelConfig::new(Preset::Gfx900));
        assert_eq!(reported, (kib * 1024).min(MAX_SYSTEM_MEMORY) & !4095);
        assert_eq!(
            cpu_memory(&ModelConfig::new(Preset::Gfx900).with_system_memory(1 << 40)),
            1 << 40,
            "a configured size is reported as is"
        );
    }

    #[test]
    fn gpu_ids_are_stable_and_distinct() {
        let a = Topology::from_config(&ModelConfig::new(Preset::Gfx900).with_gpus(2));
        let b = Topology::from_config(&ModelConfig::new(Preset::Gfx900).with_gpus(2));
        assert_eq!(a, b);
        let ids: Vec<u32> = a.gpus().map(|n| n.gpu_id).collect();
        assert_eq!(ids.len(), 2);
        assert_ne!(ids[0], ids[1]);
        assert!(
            ids.iter().all(|&id| id != 0 && id <= 0xFFFF),
            "gpu ids are 16-bit hashes"
        );
    }

    #[test]
    fn hqd_counts_follow_the_facts() {
        let hqds = |p| {
            Topology::from_config(&ModelConfig::new(p)).nodes[1]
                .properties
                .num_cp_queues
        };
        assert_eq!(hqds(Preset::Gfx900), 24);
        assert_eq!(hqds(Preset::Gfx90a), 24);
        assert_eq!(hqds(Preset::Gfx1030), 8);
    }

    /// Facts §9.9 worked by hand for the gfx900 preset (64 CUs, 4 arrays of 1 per engine):
    /// wave_num = min(64×40, 4×512) = 2048; ctl = ALIGN(40 + 2048×8 + 8, 4K) = 0x5000;
    /// wg = ALIGN(64 × (0x40000 + 0x4000 + 0x10000 + 0x1000), 4K) = 0x1540000.
    #[test]
    fn queue_sizes_follow_the_formulas() {
        let t = Topology::from_config(&ModelConfig::new(Preset::Gfx900));
        let p = &t.nodes[1].properties;
        assert_eq!(p.ctl_stack_size, 0x5000);
        assert_eq!(p.cwsr_size, 0x5000 + 0x154_0000);
        assert_eq!(p.eop_buffer_size, 4096);
        // gfx1030: 80 CUs, wave_num 2560, ctl = ALIGN(40 + 2560×12 + 8) = 0x8000 → capped 0x7000.
        let t = Topology::from_config(&ModelConfig::new(Preset::Gfx1030));
        assert_eq!(t.nodes[1].properties.ctl_stack_size, 0x7000);
    }

    #[test]
    fn sysfs_tree_has_every_file_c_clients_read() {
        let dir = tempfile::tempdir().unwrap();
        let cfg = ModelConfig::new(Preset::Gfx90a).with_gpus(2);
        let t = Topology::from_config(&cfg);
        t.write_sysfs(dir.path()).unwrap();
        let root = dir.path();
        assert_eq!(
            std::fs::read_to_string(root.join("generation_id")).unwrap(),
            "1\n"
        );
        let sys = parse(&std::fs::read_to_string(root.join("system_properties")).unwrap());
        assert_eq!(sys.len(), 3);
        for (i, n) in t.nodes.iter().enumerate() {
            let nd = root.join("nodes").join(i.to_string());
            let gpu_id: u32 = std::fs::read_to_string(nd.join("gpu_id"))
                .unwrap()
                .trim()
                .parse()
                .unwrap();
            assert_eq!(gpu_id, n.gpu_id);
            let props = parse(&std::fs::read_to_string(nd.join("properties")).unwrap());
            let get = |k: &str| props.iter().find(|(key, _)| key == k).map(|(_, v)| *v);
            assert_eq!(get("mem_banks_count"), Some(n.mem_banks.len() as u64));
            assert_eq!(get("caches_count"), Some(n.caches.len() as u64));
            assert_eq!(get("io_links_count"), Some(n.io_links.len() as u64));
            for m in 0..n.mem_banks.len() {
                let text =
                    std::fs::read_to_string(nd.join(format!("mem_banks/{m}/properties"))).unwrap();
                assert_eq!(parse(&text).len(), mem_bank::ALL.len());
            }
            for c in 0..n.caches.len() {
                let text =
                    std::fs::read_to_string(nd.join(format!("caches/{c}/properties"))).unwrap();
                // Relative to processor_id_low: its first entry is the first sharer.
                assert!(text.contains("sibling_map 1,"), "{text}");
            }
            if n.is_gpu() {
                assert_eq!(get("gfx_target_version"), Some(90010));
                assert_eq!(get("simd_count"), Some(416));
                assert_eq!(get("drm_render_minor"), Some(127 + i as u64));
                // ROCr requires one cache with the HSACU bit per GPU node.
                assert!(n
                    .caches
                    .iter()
                    .any(|c| c.cache_type & sysfs::HSA_CACHE_TYPE_HSACU != 0));
                // Two GPUs of an xGMI part: a PCIe link to the CPU and an xGMI link to the peer.
                assert_eq!(n.io_links.len(), 2);
                assert_eq!(n.io_links[1].link_type, sysfs::HSA_IOLINK_TYPE_XGMI);
                for key in node::ALL {
                    assert!(get(key).is_some(), "GPU node lacks {key}");
                }
            } else {
                assert_eq!(get("cpu_cores_count"), Some(CPU_CORES));
                assert_eq!(n.io_links.len(), 2);
            }
        }
    }

    fn ones(map: &[u8]) -> usize {
        map.iter().filter(|&&b| b == 1).count()
    }

    #[test]
    fn vega10_caches_follow_the_kernel_table() {
        // kfd_crat.c vega10_cache_info: TCP L1 16 KiB per CU, SQC instruction 32 KiB and
        // scalar data 16 KiB per 3 CUs, L2 4 MiB across the GPU; 64-byte lines.
        let t = Topology::from_config(&ModelConfig::new(Preset::Gfx900));
        let gpu = t.gpus().next().unwrap();
        let base = gpu.properties.simd_id_base as u32;
        let c = &gpu.caches;
        // 64 TCPs, then per shader array of 16 CUs six SQC groups (five of 3, one of 1) of
        // each kind, then the L2.
        assert_eq!(c.len(), 64 + 24 + 24 + 1);
        for (i, tcp) in c[..64].iter().enumerate() {
            assert_eq!((tcp.level, tcp.size_kib, tcp.cache_line_size), (1, 16, 64));
            assert_eq!(tcp.processor_id_low, base + i as u32);
            assert_eq!(tcp.sibling_map.len(), 32);
            assert_eq!((tcp.sibling_map[0], ones(&tcp.sibling_map)), (1, 1));
            assert_eq!(
                tcp.cache_type,
                sysfs::HSA_CACHE_TYPE_DATA | sysfs::HSA_CACHE_TYPE_HSACU
            );
        }
        let sqc_i = &c[64..88];
        assert!(sqc_i.iter().all(|s| s.size_kib == 32
            && s.cache_type == sysfs::HSA_CACHE_TYPE_INSTRUCTION | sysfs::HSA_CACHE_TYPE_HSACU));
        let sharing: Vec<usize> = sqc_i[..6].iter().map(|s| ones(&s.sibling_map)).collect();
        assert_eq!(sharing, [3, 3, 3, 3, 3, 1]);
        let firsts: Vec<u32> = sqc_i[..7]
            .iter()
            .map(|s| s.processor_id_low - base)
            .collect();
        assert_eq!(firsts, [0, 3, 6, 9, 12, 15, 16]);
        assert!(c[88..112].iter().all(|s| s.size_kib == 16 && s.level == 1));
        let l2 = &c[112];
        assert_eq!((l2.level, l2.size_kib, l2.cache_line_size), (2, 4096, 64));
        assert_eq!((l2.processor_id_low, ones(&l2.sibling_map)), (base, 64));
        assert_eq!(l2.sibling_map.len(), 4 * 32);
        // amdkfd leaves associativity and latency unset for a GPU's caches.
        assert!(c.iter().all(|x| x.association == 0 && x.latency == 0));
    }

    #[test]
    fn every_preset_has_one_l1_per_cu_and_its_l2_across_the_gpu() {
        for &p in Preset::ALL {
            let t = Topology::from_config(&ModelConfig::new(p));
            let gpu = t.gpus().next().unwrap();
            let f = p.facts();
            let per_cu = gpu
                .caches
                .iter()
                .filter(|c| {
                    c.level == 1 && ones(&c.sibling_map) == 1 && c.size_kib == f.caches[0].size_kib
                })
                .count() as u64;
            assert!(per_cu >= f.cus, "{p}: {per_cu} single-CU L1s");
            let l2: Vec<_> = gpu.caches.iter().filter(|c| c.level == 2).collect();
            assert_eq!(l2.len(), 1, "{p}");
            assert_eq!(ones(&l2[0].sibling_map) as u64, f.cus, "{p}");
            assert_eq!(l2[0].size_kib, f.l2_kib, "{p}");
            let l3: Vec<_> = gpu.caches.iter().filter(|c| c.level == 3).collect();
            assert_eq!(l3.len(), usize::from(f.l3_kib > 0), "{p}");
            // Every level-1 instance serves CUs of one shader array.
            for c in gpu.caches.iter().filter(|c| c.level == 1) {
                assert!(
                    (1..=f.cu_per_simd_array as usize).contains(&ones(&c.sibling_map)),
                    "{p}"
                );
            }
        }
        // Navi 21's GL1: one per shader array of 10 CUs.
        let t = Topology::from_config(&ModelConfig::new(Preset::Gfx1030));
        let gl1 = t
            .gpus()
            .next()
            .unwrap()
            .caches
            .iter()
            .filter(|c| c.size_kib == 128)
            .count();
        assert_eq!(gl1, 8);
    }
}
