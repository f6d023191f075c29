//! `kfd info`: the topology of the real device or of the model — agents with their gfx
//! target, compute units, SIMDs, wave size, LDS, queues, memory banks, caches and io links —
//! plus the KFD interface version and the source, always printed first.
//!
//! Compared with rocminfo: one block per node, numbers with units, identical caches folded
//! into one line with a count (a real GPU lists one L1 per CU), PCI location decoded, the
//! queue buffer sizes the driver checks, and `--json` for scripts. When a device exists but
//! cannot be opened (permissions), the sysfs topology is still printed and the interface
//! version is reported as unknown, with the reason.

use std::collections::BTreeMap;
use std::path::Path;

use kfd_sys::gpu::PresetFacts;
use kfd_sys::sysfs;
use serde::Serialize;
use thunk::topology::{Cache, HeapType, IoLink, MemBank, Node};
use thunk::{Kfd, Topology};

use crate::device::{Choice, DeviceArgs, Source};
use crate::error::{CliError, CliResult};
use crate::output::{Out, Style, Tone};
use crate::units;

/// What `kfd info` was asked.
#[derive(Clone, Debug, clap::Args)]
pub struct InfoArgs {
    /// Where to look.
    #[command(flatten)]
    pub device: DeviceArgs,
    /// Only this node (its number in the topology).
    #[arg(long, value_name = "N")]
    pub node: Option<u32>,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

/// The whole report.
#[derive(Clone, Debug, Serialize)]
pub struct Info {
    /// Where the numbers come from.
    pub source: Source,
    /// KFD interface version (`GET_VERSION`), `None` when the device could not be opened.
    pub interface: Option<String>,
    /// Why the device could not be opened, if it could not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub open_error: Option<String>,
    /// Directory the topology was read from.
    pub topology_root: String,
    /// `generation_id`.
    pub generation_id: u64,
    /// `system_properties`.
    pub platform: Platform,
    /// The nodes.
    pub nodes: Vec<NodeInfo>,
    /// The host's memory, when the source is the model (whose VRAM is host memory).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host_memory: Option<HostMemory>,
}

/// The host's memory (`/proc/meminfo`), bytes.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct HostMemory {
    /// `MemTotal`.
    pub total_bytes: u64,
    /// `MemAvailable`.
    pub available_bytes: u64,
}

impl HostMemory {
    /// Reads `/proc/meminfo`; `None` where it cannot be read.
    pub fn read() -> Option<HostMemory> {
        let text = std::fs::read_to_string("/proc/meminfo").ok()?;
        let kib = |key: &str| -> Option<u64> {
            let line = text.lines().find(|l| l.starts_with(key))?;
            line[key.len()..].split_whitespace().next()?.parse().ok()
        };
        Some(HostMemory {
            total_bytes: kib("MemTotal:")? * 1024,
            available_bytes: kib("MemAvailable:")? * 1024,
        })
    }
}

/// `system_properties`.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Platform {
    /// `platform_oem`.
    pub oem: u64,
    /// `platform_id`.
    pub id: u64,
    /// `platform_rev`.
    pub rev: u64,
}

/// One node.
#[derive(Clone, Debug, Serialize)]
pub struct NodeInfo {
    /// Node number.
    pub node: u32,
    /// `cpu` or `gpu`.
    pub kind: &'static str,
    /// `name` from sysfs (the ASIC name on GPUs, empty on CPUs).
    pub name: String,
    /// CPU cores (CPU nodes).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpu: Option<CpuInfo>,
    /// The GPU's properties (GPU nodes).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gpu: Option<GpuInfo>,
    /// Memory banks.
    pub memory: Vec<BankInfo>,
    /// Caches, identical ones folded together.
    pub caches: Vec<CacheInfo>,
    /// IO links.
    pub io_links: Vec<LinkInfo>,
    /// Peer-to-peer links.
    pub p2p_links: Vec<LinkInfo>,
    /// `properties` keys this tool does not interpret, with their raw values.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub other_properties: BTreeMap<String, String>,
}

/// A CPU node's properties.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct CpuInfo {
    /// `cpu_cores_count`.
    pub cores: u64,
    /// `cpu_core_id_base`.
    pub core_id_base: u64,
    /// `max_engine_clk_ccompute`, MHz.
    pub clock_mhz: u64,
}

/// A GPU node's properties.
#[derive(Clone, Debug, Serialize)]
pub struct GpuInfo {
    /// `gpu_id`.
    pub gpu_id: u32,
    /// LLVM target (`gfx90a`) from `gfx_target_version`.
    pub gfx_target: Option<String>,
    /// `gfx_target_version`.
    pub gfx_target_version: u64,
    /// The board's marketing name, for a part the model knows (matched by PCI device id
    /// and gfx target version).
    pub marketing_name: Option<String>,
    /// The ISA as rocminfo prints it (`amdgcn-amd-amdhsa--gfx900:xnack-`), for a part the
    /// model knows.
    pub isa: Option<String>,
    /// Compute units.
    pub compute_units: u64,
    /// `simd_count`.
    pub simds: u64,
    /// `simd_per_cu`.
    pub simds_per_cu: u64,
    /// `wave_front_size`.
    pub wave_size: u64,
    /// `max_waves_per_simd`.
    pub max_waves_per_simd: u64,
    /// Shader engines (`array_count / simd_arrays_per_engine`).
    pub shader_engines: u64,
    /// `simd_arrays_per_engine`.
    pub arrays_per_engine: u64,
    /// `cu_per_simd_array`.
    pub cus_per_array: u64,
    /// Compute dies (`num_xcc`, at least 1).
    pub xccs: u32,
    /// `lds_size_in_kb`.
    pub lds_kib: u64,
    /// `gds_size_in_kb`.
    pub gds_kib: u64,
    /// `num_gws`.
    pub gws: u64,
    /// `max_slots_scratch_cu`.
    pub scratch_slots_per_cu: u64,
    /// `max_engine_clk_fcompute`, MHz.
    pub clock_mhz: u64,
    /// VRAM: the frame-buffer banks together, bytes.
    pub vram_bytes: u64,
    /// `AVAILABLE_MEMORY` for this process, bytes (when the GPU was opened).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub available_bytes: Option<u64>,
    /// `num_cp_queues`: hardware queue slots (HQDs) KFD may use.
    pub hqds: u64,
    /// `num_sdma_engines`.
    pub sdma_engines: u64,
    /// `num_sdma_xgmi_engines`.
    pub sdma_xgmi_engines: u64,
    /// `num_sdma_queues_per_engine`.
    pub sdma_queues_per_engine: u64,
    /// `fw_version` (MEC).
    pub mec_firmware: u64,
    /// `sdma_fw_version`.
    pub sdma_firmware: u64,
    /// `vendor_id`.
    pub vendor_id: u64,
    /// `device_id`.
    pub device_id: u64,
    /// PCI location `domain:bus:device.function`.
    pub pci: String,
    /// `drm_render_minor`.
    pub render_minor: u64,
    /// `hive_id` (xGMI hive; 0 when none).
    pub hive_id: u64,
    /// `unique_id`.
    pub unique_id: u64,
    /// `capability` bits.
    pub capability: u64,
    /// Their names.
    pub capabilities: Vec<String>,
    /// Queue buffer sizes the driver checks on `CREATE_QUEUE`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub queue_buffers: Option<QueueBuffers>,
    /// The process's GPUVM aperture, first and last address (when the GPU was opened).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gpuvm_aperture: Option<(u64, u64)>,
}

/// Queue buffer sizes (facts §9.9), bytes.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct QueueBuffers {
    /// EOP buffer of a compute queue.
    pub eop: u32,
    /// Control stack per XCC.
    pub ctl_stack: u32,
    /// CWSR area per XCC.
    pub cwsr: u32,
    /// The whole context save area a compute queue maps.
    pub context_save_area: u64,
}

/// A memory bank.
#[derive(Clone, Debug, Serialize)]
pub struct BankInfo {
    /// Heap (`system`, `vram public`, `vram private`, …).
    pub heap: String,
    /// Bytes.
    pub size_bytes: u64,
    /// Bus width, bits.
    pub width_bits: u32,
    /// Peak clock, MHz.
    pub clock_mhz: u32,
    /// `flags`.
    pub flags: u32,
}

/// One cache, or several identical ones.
#[derive(Clone, Debug, Serialize)]
pub struct CacheInfo {
    /// Level.
    pub level: u32,
    /// `data`, `instruction`, `cpu`, `hsacu`, joined by `+`.
    pub kind: String,
    /// KiB.
    pub size_kib: u32,
    /// Line size, bytes.
    pub line_bytes: u32,
    /// Associativity.
    pub associativity: u32,
    /// Latency, ns.
    pub latency_ns: u32,
    /// Processors sharing each instance (ones in `sibling_map`; the most, when it varies).
    pub shared_by: usize,
    /// The fewest processors sharing one instance (the last group of a shader array may be
    /// smaller).
    pub shared_by_min: usize,
    /// How many identical caches the node lists.
    pub instances: usize,
}

/// An io or p2p link.
#[derive(Clone, Debug, Serialize)]
pub struct LinkInfo {
    /// `PCIe`, `xGMI`, …
    pub kind: String,
    /// `version_major.version_minor`.
    pub version: String,
    /// `node_from`.
    pub from: u32,
    /// `node_to`.
    pub to: u32,
    /// `weight`.
    pub weight: u32,
    /// `min_bandwidth`, MB/s.
    pub min_bandwidth_mbs: u32,
    /// `max_bandwidth`, MB/s.
    pub max_bandwidth_mbs: u32,
    /// `min_latency`, ns.
    pub min_latency_ns: u32,
    /// `max_latency`, ns.
    pub max_latency_ns: u32,
}

/// Runs `kfd info`.
pub fn run(args: &InfoArgs, style: Style) -> CliResult<()> {
    let mut info = gather(&args.device)?;
    if let Some(n) = args.node {
        if !info.nodes.iter().any(|x| x.node == n) {
            let have: Vec<String> = info.nodes.iter().map(|x| x.node.to_string()).collect();
            return Err(CliError::usage(format!(
                "there is no node {n}; the topology has node(s) {}",
                have.join(", ")
            )));
        }
    }
    let mut out = Out::stdout();
    if args.json {
        if let Some(n) = args.node {
            info.nodes.retain(|x| x.node == n);
        }
        out.json(&info)?;
    } else {
        for line in render(&info, args.node, style) {
            out.line(&line)?;
        }
    }
    out.flush()
}

/// Opens what `device` names and collects the report. A device that exists but cannot be
/// opened still gives its sysfs topology.
pub fn gather(device: &DeviceArgs) -> CliResult<Info> {
    match device.open() {
        Ok((kfd, source)) => Ok(from_kfd(&kfd, source)),
        Err(e) => {
            let choice = device.choose(|k| std::env::var(k).ok(), Path::exists)?;
            let Choice::Device { path, reason } = choice else {
                return Err(e);
            };
            if !path.exists() {
                return Err(e);
            }
            let root = Path::new(sysfs::KFD_SYSFS_TOPOLOGY_ROOT);
            let topology = Topology::read(root).map_err(|_| e.clone())?;
            let source = Source {
                kind: "device",
                description: path.display().to_string(),
                reason,
            };
            let mut info = from_topology(&topology, source, None);
            info.open_error = Some(e.message);
            Ok(info)
        }
    }
}

/// The report of an open device.
pub fn from_kfd(kfd: &Kfd, source: Source) -> Info {
    let mut info = from_topology(kfd.topology(), source, Some(kfd.version().to_string()));
    if info.source.is_model() {
        info.host_memory = HostMemory::read();
    }
    for gpu in kfd.gpus() {
        let Some(entry) = info
            .nodes
            .iter_mut()
            .filter_map(|n| n.gpu.as_mut())
            .find(|g| g.gpu_id == gpu.id())
        else {
            continue;
        };
        entry.available_bytes = gpu.available_memory().ok();
        entry.gpuvm_aperture = gpu.apertures().ok().map(|a| a.gpuvm);
    }
    info
}

/// The report of a topology; `interface` is the KFD version when the device was opened.
pub fn from_topology(topology: &Topology, source: Source, interface: Option<String>) -> Info {
    Info {
        source,
        interface,
        open_error: None,
        topology_root: topology.root.display().to_string(),
        generation_id: topology.generation_id,
        platform: Platform {
            oem: topology.system.platform_oem,
            id: topology.system.platform_id,
            rev: topology.system.platform_rev,
        },
        nodes: topology.nodes.iter().map(node_info).collect(),
        host_memory: None,
    }
}

fn node_info(n: &Node) -> NodeInfo {
    let p = &n.properties;
    let cpu = (p.cpu_cores_count > 0).then_some(CpuInfo {
        cores: p.cpu_cores_count,
        core_id_base: p.cpu_core_id_base,
        clock_mhz: p.max_engine_clk_ccompute,
    });
    let part = known_part(p.device_id, p.gfx_target_version);
    let gpu = n.is_gpu().then(|| GpuInfo {
        gpu_id: n.gpu_id,
        gfx_target: n.gfx_target_name(),
        gfx_target_version: p.gfx_target_version,
        marketing_name: part.map(|f| f.marketing_name.to_owned()),
        isa: part.map(|f| format!("amdgcn-amd-amdhsa--{}", f.features.target_id(f.gfx_name))),
        compute_units: n.cu_count(),
        simds: p.simd_count,
        simds_per_cu: p.simd_per_cu,
        wave_size: p.wave_front_size,
        max_waves_per_simd: p.max_waves_per_simd,
        shader_engines: p
            .array_count
            .checked_div(p.simd_arrays_per_engine)
            .unwrap_or(0),
        arrays_per_engine: p.simd_arrays_per_engine,
        cus_per_array: p.cu_per_simd_array,
        xccs: n.num_xcc(),
        lds_kib: p.lds_size_in_kb,
        gds_kib: p.gds_size_in_kb,
        gws: p.num_gws,
        scratch_slots_per_cu: p.max_slots_scratch_cu,
        clock_mhz: p.max_engine_clk_fcompute,
        vram_bytes: n.vram_size(),
        available_bytes: None,
        hqds: p.num_cp_queues,
        sdma_engines: p.num_sdma_engines,
        sdma_xgmi_engines: p.num_sdma_xgmi_engines,
        sdma_queues_per_engine: p.num_sdma_queues_per_engine,
        mec_firmware: p.fw_version,
        sdma_firmware: p.sdma_fw_version,
        vendor_id: p.vendor_id,
        device_id: p.device_id,
        pci: pci_location(p.domain, p.location_id),
        render_minor: p.drm_render_minor,
        hive_id: p.hive_id,
        unique_id: p.unique_id,
        capability: p.capability,
        capabilities: capability_names(p.capability),
        queue_buffers: n.queue_sizes().ok().map(|q| QueueBuffers {
            eop: q.eop_buffer_size,
            ctl_stack: q.ctl_stack_size,
            cwsr: q.cwsr_size,
            context_save_area: q.context_save_area_size(),
        }),
        gpuvm_aperture: None,
    });
    NodeInfo {
        node: n.index,
        kind: if n.is_gpu() { "gpu" } else { "cpu" },
        name: n.name.clone(),
        cpu,
        gpu,
        memory: n.mem_banks.iter().map(bank_info).collect(),
        caches: fold_caches(&n.caches),
        io_links: n.io_links.iter().map(link_info).collect(),
        p2p_links: n.p2p_links.iter().map(link_info).collect(),
        other_properties: n.other_properties.clone(),
    }
}

/// The facts of the part with this PCI device id and `gfx_target_version`, if it is one of
/// the model's presets.
fn known_part(device_id: u64, gfx_target_version: u64) -> Option<&'static PresetFacts> {
    kfd_sys::gpu::Preset::ALL
        .iter()
        .map(|p| p.facts())
        .find(|f| f.device_id == device_id && f.gfx_target_version == gfx_target_version)
}

/// `location_id` is the PCI bus number and devfn (`bus << 8 | device << 3 | function`).
pub fn pci_location(domain: u64, location_id: u64) -> String {
    format!(
        "{:04x}:{:02x}:{:02x}.{}",
        domain & 0xffff,
        (location_id >> 8) & 0xff,
        (location_id >> 3) & 0x1f,
        location_id & 7
    )
}

/// The names of the `HSA_CAP_*` bits set in `capability`.
pub fn capability_names(capability: u64) -> Vec<String> {
    let c = (capability & 0xffff_ffff) as u32;
    let flags: [(u32, &str); 19] = [
        (sysfs::HSA_CAP_HOT_PLUGGABLE, "hot-pluggable"),
        (sysfs::HSA_CAP_ATS_PRESENT, "ATS"),
        (sysfs::HSA_CAP_SHARED_WITH_GRAPHICS, "shared with graphics"),
        (sysfs::HSA_CAP_QUEUE_SIZE_POW2, "queue size pow2"),
        (sysfs::HSA_CAP_QUEUE_SIZE_32BIT, "queue size 32-bit"),
        (sysfs::HSA_CAP_QUEUE_IDLE_EVENT, "queue idle event"),
        (sysfs::HSA_CAP_VA_LIMIT, "VA limit"),
        (sysfs::HSA_CAP_WATCH_POINTS_SUPPORTED, "watch points"),
        (sysfs::HSA_CAP_AQL_QUEUE_DOUBLE_MAP, "AQL double map"),
        (sysfs::HSA_CAP_TRAP_DEBUG_SUPPORT, "trap debug"),
        (
            sysfs::HSA_CAP_TRAP_DEBUG_WAVE_LAUNCH_TRAP_OVERRIDE_SUPPORTED,
            "wave launch trap override",
        ),
        (
            sysfs::HSA_CAP_TRAP_DEBUG_WAVE_LAUNCH_MODE_SUPPORTED,
            "wave launch mode",
        ),
        (
            sysfs::HSA_CAP_TRAP_DEBUG_PRECISE_MEMORY_OPERATIONS_SUPPORTED,
            "precise memory ops",
        ),
        (sysfs::HSA_CAP_MEM_EDCSUPPORTED, "memory EDC"),
        (sysfs::HSA_CAP_RASEVENTNOTIFY, "RAS events"),
        (sysfs::HSA_CAP_SRAM_EDCSUPPORTED, "SRAM EDC"),
        (sysfs::HSA_CAP_SVMAPI_SUPPORTED, "SVM"),
        (
            sysfs::HSA_CAP_FLAGS_COHERENTHOSTACCESS,
            "coherent host access",
        ),
        (
            sysfs::HSA_CAP_TRAP_DEBUG_FIRMWARE_SUPPORTED,
            "debug firmware",
        ),
    ];
    let mut names = Vec::new();
    let doorbell = (c & sysfs::HSA_CAP_DOORBELL_TYPE_TOTALBITS_MASK)
        >> sysfs::HSA_CAP_DOORBELL_TYPE_TOTALBITS_SHIFT;
    names.push(match doorbell {
        sysfs::HSA_CAP_DOORBELL_TYPE_PRE_1_0 => "doorbell pre-1.0".to_owned(),
        sysfs::HSA_CAP_DOORBELL_TYPE_1_0 => "doorbell 1.0".to_owned(),
        sysfs::HSA_CAP_DOORBELL_TYPE_2_0 => "doorbell 2.0".to_owned(),
        other => format!("doorbell type {other}"),
    });
    for (bit, name) in flags {
        if c & bit != 0 {
            names.push(name.to_owned());
        }
    }
    if c & sysfs::HSA_CAP_PER_QUEUE_RESET_SUPPORTED != 0 {
        names.push("per-queue reset".to_owned());
    }
    names
}

fn heap_name(h: HeapType) -> String {
    match h {
        HeapType::System => "system".into(),
        HeapType::FrameBufferPublic => "VRAM (CPU-visible)".into(),
        HeapType::FrameBufferPrivate => "VRAM (GPU-only)".into(),
        HeapType::Gds => "GDS".into(),
        HeapType::Lds => "LDS".into(),
        HeapType::Scratch => "scratch".into(),
        HeapType::Other(v) => format!("heap type {v}"),
    }
}

fn bank_info(b: &MemBank) -> BankInfo {
    BankInfo {
        heap: heap_name(b.heap_type),
        size_bytes: b.size_in_bytes,
        width_bits: b.width,
        clock_mhz: b.mem_clk_max,
        flags: b.flags,
    }
}

fn cache_kind(t: u32) -> String {
    let mut parts = Vec::new();
    for (bit, name) in [
        (sysfs::HSA_CACHE_TYPE_DATA, "data"),
        (sysfs::HSA_CACHE_TYPE_INSTRUCTION, "instruction"),
        (sysfs::HSA_CACHE_TYPE_CPU, "cpu"),
        (sysfs::HSA_CACHE_TYPE_HSACU, "hsacu"),
    ] {
        if t & bit != 0 {
            parts.push(name);
        }
    }
    if parts.is_empty() {
        "unknown".into()
    } else {
        parts.join("+")
    }
}

/// Caches in level order; a run of consecutive caches of the same level, kind, size and
/// geometry folds into one entry (amdkfd lists a table row's instances together, so a run is
/// one kind of cache: the vector L1s, the scalar instruction caches …), whose sharing may vary
/// at the end of a shader array.
fn fold_caches(caches: &[Cache]) -> Vec<CacheInfo> {
    let mut folded: Vec<CacheInfo> = Vec::new();
    for c in caches {
        let shared_by = c.sibling_map.iter().filter(|&&b| b != 0).count();
        let info = CacheInfo {
            level: c.level,
            kind: cache_kind(c.cache_type),
            size_kib: c.size_kib,
            line_bytes: c.cache_line_size,
            associativity: c.association,
            latency_ns: c.latency,
            shared_by,
            shared_by_min: shared_by,
            instances: 1,
        };
        let key = |f: &CacheInfo| {
            (
                f.level,
                f.kind.clone(),
                f.size_kib,
                f.line_bytes,
                f.associativity,
                f.latency_ns,
            )
        };
        match folded.last_mut() {
            Some(last) if key(last) == key(&info) => {
                last.instances += 1;
                last.shared_by = last.shared_by.max(shared_by);
                last.shared_by_min = last.shared_by_min.min(shared_by);
            }
            _ => folded.push(info),
        }
    }
    folded.sort_by_key(|c| c.level);
    folded
}

fn link_kind(t: u32) -> String {
    match t {
        sysfs::HSA_IOLINK_TYPE_HYPERTRANSPORT => "HyperTransport".into(),
        sysfs::HSA_IOLINK_TYPE_PCIEXPRESS => "PCIe".into(),
        sysfs::HSA_IOLINK_TYPE_AMBA => "AMBA".into(),
        sysfs::HSA_IOLINK_TYPE_MIPI => "MIPI".into(),
        sysfs::HSA_IOLINK_TYPE_QPI_1_1 => "QPI 1.1".into(),
        sysfs::HSA_IOLINK_TYPE_RAPID_IO => "RapidIO".into(),
        sysfs::HSA_IOLINK_TYPE_INFINIBAND => "InfiniBand".into(),
        sysfs::HSA_IOLINK_TYPE_XGMI => "xGMI".into(),
        sysfs::HSA_IOLINK_TYPE_XGOP => "XGOP".into(),
        sysfs::HSA_IOLINK_TYPE_GZ => "GZ".into(),
        sysfs::HSA_IOLINK_TYPE_ETHERNET_RDMA => "Ethernet RDMA".into(),
        other => format!("link type {other}"),
    }
}

fn link_info(l: &IoLink) -> LinkInfo {
    LinkInfo {
        kind: link_kind(l.link_type),
        version: format!("{}.{}", l.version_major, l.version_minor),
        from: l.node_from,
        to: l.node_to,
        weight: l.weight,
        min_bandwidth_mbs: l.min_bandwidth,
        max_bandwidth_mbs: l.max_bandwidth,
        min_latency_ns: l.min_latency,
        max_latency_ns: l.max_latency,
    }
}

/// The text report, one string per line: the header, then every node (or only node `only`).
pub fn render(info: &Info, only: Option<u32>, style: Style) -> Vec<String> {
    let mut lines = Vec::new();
    let cpus = info.nodes.iter().filter(|n| n.kind == "cpu").count();
    let gpus = info.nodes.len() - cpus;
    lines.push(format!(
        "{} {}",
        style.paint(Tone::Bold, "source:"),
        info.source.line()
    ));
    let interface = match (&info.interface, &info.open_error) {
        (Some(v), _) => format!("KFD interface {v}"),
        (None, Some(e)) => format!("KFD interface unknown ({e})"),
        (None, None) => "KFD interface unknown".to_owned(),
    };
    let root = if info.source.is_model() {
        String::new()
    } else {
        format!(" ({})", info.topology_root)
    };
    lines.push(format!(
        "{interface} · topology generation {}{root} · {} node(s): {cpus} CPU, {gpus} GPU",
        info.generation_id,
        info.nodes.len()
    ));
    if let Some(h) = info.host_memory {
        let vram: u64 = info
            .nodes
            .iter()
            .filter_map(|n| n.gpu.as_ref())
            .map(|g| g.vram_bytes)
            .sum();
        lines.push(format!(
            "host memory {} of {} available · the modelled VRAM ({} in all) is host memory \
             where it is touched",
            units::bytes(h.available_bytes),
            units::bytes(h.total_bytes),
            units::bytes(vram)
        ));
    }
    for n in info
        .nodes
        .iter()
        .filter(|n| only.is_none_or(|o| o == n.node))
    {
        lines.push(String::new());
        render_node(n, style, &mut lines);
    }
    lines
}

fn field(style: Style, name: &str, value: String) -> String {
    format!(
        "  {} {value}",
        style.paint(Tone::Dim, &format!("{name:<12}"))
    )
}

fn render_node(n: &NodeInfo, style: Style, lines: &mut Vec<String>) {
    let heading = style.paint(Tone::Bold, &format!("node {}", n.node));
    match (&n.gpu, &n.cpu) {
        (Some(g), _) => {
            let target = g.gfx_target.clone().unwrap_or_else(|| "gfx?".into());
            let name = if n.name.is_empty() || n.name == target {
                String::new()
            } else {
                format!(" ({})", n.name)
            };
            lines.push(format!(
                "{heading} · GPU {}{name} · gpu_id {:#06x} · renderD{} · PCI {} [{:04x}:{:04x}]",
                style.paint(Tone::Name, &target),
                g.gpu_id,
                g.render_minor,
                g.pci,
                g.vendor_id,
                g.device_id
            ));
            if let (Some(marketing), Some(isa)) = (&g.marketing_name, &g.isa) {
                lines.push(field(style, "name", format!("{marketing} · ISA {isa}")));
            }
            gpu_compute_lines(g, style, lines);
        }
        (None, Some(c)) => lines.push(format!(
            "{heading} · CPU · {} cores at {} MHz",
            c.cores, c.clock_mhz
        )),
        (None, None) => lines.push(format!(
            "{heading} · {}",
            if n.name.is_empty() {
                "no CPU cores, no GPU"
            } else {
                &n.name
            }
        )),
    }
    memory_lines(n, style, lines);
    if let Some(g) = &n.gpu {
        gpu_queue_lines(g, style, lines);
    }
    link_lines(n, style, lines);
    if let Some(g) = &n.gpu {
        lines.push(field(style, "capability", g.capabilities.join(", ")));
    }
}

fn size_or_none(kib: u64) -> String {
    if kib == 0 {
        "none".into()
    } else {
        units::kib(kib)
    }
}

fn gpu_compute_lines(g: &GpuInfo, style: Style, lines: &mut Vec<String>) {
    let xcc = if g.xccs > 1 {
        format!(" on {} XCCs", g.xccs)
    } else {
        String::new()
    };
    lines.push(field(
        style,
        "compute",
        format!(
            "{} CUs × {} SIMDs = {} SIMDs{xcc}, wave{}, {} waves/SIMD, {} MHz",
            g.compute_units,
            g.simds_per_cu,
            g.simds,
            g.wave_size,
            g.max_waves_per_simd,
            g.clock_mhz
        ),
    ));
    lines.push(field(
        style,
        "layout",
        format!(
            "{} shader engine(s) × {} array(s) × {} CUs",
            g.shader_engines, g.arrays_per_engine, g.cus_per_array
        ),
    ));
    lines.push(field(
        style,
        "LDS",
        format!(
            "{} per work-group · GDS {} · {} GWS · {} scratch slots/CU",
            size_or_none(g.lds_kib),
            size_or_none(g.gds_kib),
            g.gws,
            g.scratch_slots_per_cu
        ),
    ));
}

fn gpu_queue_lines(g: &GpuInfo, style: Style, lines: &mut Vec<String>) {
    if let Some(avail) = g.available_bytes {
        lines.push(field(
            style,
            "available",
            format!(
                "{} of {} VRAM for this process",
                units::bytes(avail),
                units::bytes(g.vram_bytes)
            ),
        ));
    }
    if let Some((lo, hi)) = g.gpuvm_aperture {
        lines.push(field(style, "GPUVM", format!("{lo:#x} – {hi:#x}")));
    }
    lines.push(field(
        style,
        "queues",
        format!(
            "{} HQDs for KFD · SDMA {} engine(s) × {} queues, {} xGMI engine(s)",
            g.hqds, g.sdma_engines, g.sdma_queues_per_engine, g.sdma_xgmi_engines
        ),
    ));
    if let Some(q) = g.queue_buffers {
        lines.push(field(
            style,
            "queue bufs",
            format!(
                "EOP {} · control stack {} · CWSR {} per XCC · context save area {}",
                units::bytes(q.eop.into()),
                units::bytes(q.ctl_stack.into()),
                units::bytes(q.cwsr.into()),
                units::bytes(q.context_save_area)
            ),
        ));
    }
    lines.push(field(
        style,
        "firmware",
        format!("MEC {} · SDMA {}", g.mec_firmware, g.sdma_firmware),
    ));
    if g.hive_id != 0 {
        lines.push(field(style, "xGMI hive", format!("{:#x}", g.hive_id)));
    }
}

fn memory_lines(n: &NodeInfo, style: Style, lines: &mut Vec<String>) {
    for (i, b) in n.memory.iter().enumerate() {
        let name = if i == 0 { "memory" } else { "" };
        let clock = if b.clock_mhz > 0 {
            format!(", {} MHz", b.clock_mhz)
        } else {
            String::new()
        };
        lines.push(field(
            style,
            name,
            format!(
                "{} {} ({}-bit{clock})",
                b.heap,
                units::bytes(b.size_bytes),
                b.width_bits
            ),
        ));
    }
    for (i, c) in n.caches.iter().enumerate() {
        let name = if i == 0 { "caches" } else { "" };
        let unit = if n.kind == "gpu" { "CU(s)" } else { "core(s)" };
        let count = if c.instances > 1 {
            format!(" ×{}", c.instances)
        } else {
            String::new()
        };
        lines.push(field(
            style,
            name,
            format!(
                "L{} {} {}{count}, {} B lines{}{}, shared by {} {unit}",
                c.level,
                units::kib(c.size_kib.into()),
                c.kind,
                c.line_bytes,
                // amdkfd leaves these 0 for a GPU's caches: unknown, not 0.
                if c.associativity > 0 {
                    format!(", {}-way", c.associativity)
                } else {
                    String::new()
                },
                if c.latency_ns > 0 {
                    format!(", {} ns", c.latency_ns)
                } else {
                    String::new()
                },
                if c.shared_by_min < c.shared_by {
                    format!("{}–{}", c.shared_by_min, c.shared_by)
                } else {
                    c.shared_by.to_string()
                }
            ),
        ));
    }
}

fn link_lines(n: &NodeInfo, style: Style, lines: &mut Vec<String>) {
    for (links, title) in [(&n.io_links, "io links"), (&n.p2p_links, "p2p links")] {
        for (i, l) in links.iter().enumerate() {
            let name = if i == 0 { title } else { "" };
            let bandwidth = if l.min_bandwidth_mbs == l.max_bandwidth_mbs {
                format!("{} MB/s", l.max_bandwidth_mbs)
            } else {
                format!("{}–{} MB/s", l.min_bandwidth_mbs, l.max_bandwidth_mbs)
            };
            lines.push(field(
                style,
                name,
                format!(
                    "→ node {} {} {}, weight {}, {bandwidth}",
                    l.to, l.kind, l.version, l.weight
                ),
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pci_location_decodes_bus_device_function() {
        // bus 0x03, device 0x1f, function 5.
        assert_eq!(pci_location(0, 0x03 << 8 | 0x1f << 3 | 5), "0000:03:1f.5");
        assert_eq!(pci_location(0x1_0002, 0x300), "0002:03:00.0");
    }

    #[test]
    fn capability_bits_have_names() {
        let c = (sysfs::HSA_CAP_DOORBELL_TYPE_2_0 << sysfs::HSA_CAP_DOORBELL_TYPE_TOTALBITS_SHIFT)
            | sysfs::HSA_CAP_AQL_QUEUE_DOUBLE_MAP
            | sysfs::HSA_CAP_PER_QUEUE_RESET_SUPPORTED;
        assert_eq!(
            capability_names(c.into()),
            ["doorbell 2.0", "AQL double map", "per-queue reset"]
        );
        assert_eq!(capability_names(0), ["doorbell pre-1.0"]);
    }

    #[test]
    fn identical_caches_fold_with_a_count() {
        let l1 = Cache {
            processor_id_low: 0,
            level: 1,
            size_kib: 16,
            cache_line_size: 64,
            cache_lines_per_tag: 1,
            association: 4,
            latency: 1,
            cache_type: sysfs::HSA_CACHE_TYPE_DATA | sysfs::HSA_CACHE_TYPE_HSACU,
            sibling_map: vec![1, 0, 0],
        };
        let l2 = Cache {
            level: 2,
            size_kib: 4096,
            sibling_map: vec![1, 1, 1],
            ..l1.clone()
        };
        let other_l1 = Cache {
            processor_id_low: 1,
            sibling_map: vec![0, 1, 0],
            ..l1.clone()
        };
        let folded = fold_caches(&[l2, l1, other_l1]);
        assert_eq!(folded.len(), 2);
        assert_eq!(
            (folded[0].level, folded[0].instances, folded[0].shared_by),
            (1, 2, 1)
        );
        assert_eq!(folded[0].kind, "data+hsacu");
        assert_eq!(
            (folded[1].level, folded[1].instances, folded[1].shared_by),
            (2, 1, 3)
        );
    }
}
