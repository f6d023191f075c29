//! The system topology as amdkfd publishes it in sysfs, parsed into types.
//!
//! The tree (facts: c-clients.md) is `generation_id`, `system_properties` and `nodes/N/` with
//! `gpu_id`, `name`, `properties` and the numbered `mem_banks/`, `caches/`, `io_links/` and
//! `p2p_links/` entries, each with its own `properties`. A `properties` file holds one
//! `"<key> <value>"` per line, the value decimal (C clients read it with `"%s %llu"`), except
//! a cache's `sibling_map`, a comma-separated 0/1 list.
//!
//! Parsing never panics: a missing directory, a short file or a value that is not a number
//! is an [`Error`] naming the file and line. Keys the thunk does not know are kept in
//! [`Node::other_properties`].

use crate::error::{Errno, Error, Result};
use crate::va::align_up;
pub use kfd_sys::gpu::{Generation, GfxVersion};
use kfd_sys::sysfs;
use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

const OP: &str = "topology";

/// The whole topology.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Topology {
    /// Where it was read from.
    pub root: PathBuf,
    /// `generation_id`: bumped by the driver on every topology change.
    pub generation_id: u64,
    /// `system_properties`.
    pub system: SystemProperties,
    /// The nodes, by node number (CPU nodes have `gpu_id` 0).
    pub nodes: Vec<Node>,
}

/// `system_properties`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SystemProperties {
    /// `platform_oem`.
    pub platform_oem: u64,
    /// `platform_id`.
    pub platform_id: u64,
    /// `platform_rev`.
    pub platform_rev: u64,
}

/// One node: a CPU (`gpu_id` 0) or a GPU.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Node {
    /// The node number (the directory name under `nodes/`).
    pub index: u32,
    /// `gpu_id`: the 16-bit-hash id every ioctl names the GPU by; 0 for a CPU node.
    pub gpu_id: u32,
    /// `name` (`gfx900`, the marketing name, or empty for a CPU).
    pub name: String,
    /// `properties`.
    pub properties: NodeProperties,
    /// Keys of `properties` the record does not name, with their raw values.
    pub other_properties: BTreeMap<String, String>,
    /// `mem_banks/M`.
    pub mem_banks: Vec<MemBank>,
    /// `caches/C`.
    pub caches: Vec<Cache>,
    /// `io_links/L`.
    pub io_links: Vec<IoLink>,
    /// `p2p_links/L`.
    pub p2p_links: Vec<IoLink>,
}

/// The shared `properties` record of a node from its file, and the keys it does not name
/// with their raw values. The `*_count` keys are checked to be numbers and dropped: the
/// entries under the node's directories are what counts.
fn node_properties(
    p: Props,
) -> core::result::Result<(NodeProperties, BTreeMap<String, String>), String> {
    let mut other = p.pairs;
    let mut take = |key: &str| -> core::result::Result<u64, String> {
        match other.remove(key) {
            None => Ok(0),
            Some(v) => {
                parse_u64(&v).ok_or_else(|| format!("{key} has the non-numeric value {v:?}"))
            }
        }
    };
    macro_rules! read {
        ($($field:ident),* $(,)?) => {
            NodeProperties { $($field: take(stringify!($field))?,)* }
        };
    }
    let properties = read!(
        cpu_cores_count,
        simd_count,
        cpu_core_id_base,
        simd_id_base,
        max_waves_per_simd,
        lds_size_in_kb,
        gds_size_in_kb,
        num_gws,
        wave_front_size,
        array_count,
        simd_arrays_per_engine,
        cu_per_simd_array,
        simd_per_cu,
        max_slots_scratch_cu,
        gfx_target_version,
        vendor_id,
        device_id,
        location_id,
        domain,
        drm_render_minor,
        hive_id,
        num_sdma_engines,
        num_sdma_xgmi_engines,
        num_sdma_queues_per_engine,
        num_cp_queues,
        max_engine_clk_fcompute,
        local_mem_size,
        fw_version,
        capability,
        capability2,
        debug_prop,
        sdma_fw_version,
        unique_id,
        num_xcc,
        max_engine_clk_ccompute,
        ctl_stack_size,
        cwsr_size,
        eop_buffer_size,
    );
    for key in [
        sysfs::node::MEM_BANKS_COUNT,
        sysfs::node::CACHES_COUNT,
        sysfs::node::IO_LINKS_COUNT,
        sysfs::node::P2P_LINKS_COUNT,
    ] {
        take(key)?;
    }
    Ok((properties, other))
}

/// A node's `properties`: the shared sysfs record.
pub use kfd_sys::sysfs::NodeProperties;

/// The heap type and memory-bank record: the shared sysfs records.
pub use kfd_sys::sysfs::{HeapType, MemBank};

/// One cache of a node: the shared sysfs record.
pub type Cache = kfd_sys::sysfs::Cache<Vec<u8>>;

/// One io link (or p2p link): the shared sysfs record.
pub use kfd_sys::sysfs::IoLink;

/// The queue buffer sizes a GPU's topology requires (facts §9.9), in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QueueSizes {
    /// `ctl_stack_size`: the control stack at the start of each XCC's CWSR area.
    pub ctl_stack_size: u32,
    /// Work-group state save space after the control stack.
    pub wg_data_size: u32,
    /// `cwsr_size`: one XCC's CWSR area (`ctl_stack_size + wg_data_size`).
    pub cwsr_size: u32,
    /// Debugger memory per XCC after the CWSR areas.
    pub debug_memory_size: u32,
    /// `eop_buffer_size`: the EOP buffer of a compute queue.
    pub eop_buffer_size: u32,
    /// XCCs (at least 1).
    pub num_xcc: u32,
}

impl QueueSizes {
    /// The context save area a compute queue maps:
    /// `ALIGN((cwsr_size + debug_memory_size) × num_xcc, 4096)` (saturating: an absurd
    /// topology gives an allocation that fails, not an overflow).
    pub fn context_save_area_size(&self) -> u64 {
        let per_xcc = u64::from(self.cwsr_size) + u64::from(self.debug_memory_size);
        per_xcc
            .checked_mul(u64::from(self.num_xcc))
            .and_then(|v| align_up(v, 4096))
            .unwrap_or(u64::MAX)
    }
}

impl Node {
    /// Whether this is a GPU node.
    pub fn is_gpu(&self) -> bool {
        self.gpu_id != 0
    }

    /// The graphics target (`gfx_target_version` decoded), for GPU nodes.
    pub fn gfx_version(&self) -> Option<GfxVersion> {
        let v = u32::try_from(self.properties.gfx_target_version).ok()?;
        (v != 0).then(|| GfxVersion::from_target_version(v))
    }

    /// The LLVM target name (`gfx900`, `gfx90a`, `gfx1030`), for GPU nodes.
    pub fn gfx_target_name(&self) -> Option<String> {
        self.gfx_version().map(|v| v.to_string())
    }

    /// The graphics generation of the GPU; a CPU node or a generation this stack has no
    /// layouts for (gfx8 and older, gfx12 and newer) is an error, never a guess.
    pub fn generation(&self) -> Result<Generation> {
        self.gfx_version()
            .and_then(GfxVersion::generation)
            .ok_or_else(|| self.unsupported())
    }

    /// The SDMA packet generation of the GPU: SDMA 4 on gfx9, 5 on gfx10, 6 on gfx11.
    pub fn sdma_gen(&self) -> Result<pm4::SdmaGen> {
        Ok(self.generation()?.into())
    }

    fn unsupported(&self) -> Error {
        Error::new(
            OP,
            Errno::ENODEV,
            format!(
                "node {} (gfx_target_version {}) is not a GPU of generation gfx9, gfx10 or gfx11",
                self.index, self.properties.gfx_target_version
            ),
        )
    }

    /// Compute units: `simd_count / simd_per_cu` (0 for a CPU).
    pub fn cu_count(&self) -> u64 {
        self.properties
            .simd_count
            .checked_div(self.properties.simd_per_cu)
            .unwrap_or(0)
    }

    /// XCCs (compute dies); at least 1.
    pub fn num_xcc(&self) -> u32 {
        u32::try_from(self.properties.num_xcc.max(1)).unwrap_or(u32::MAX)
    }

    /// VRAM: the sum of the frame-buffer banks.
    pub fn vram_size(&self) -> u64 {
        self.mem_banks
            .iter()
            .filter(|b| b.heap_type.is_vram())
            .fold(0u64, |a, b| a.saturating_add(b.size_in_bytes))
    }

    /// Whether the GPU has its own VRAM (a discrete GPU), as opposed to an APU.
    pub fn is_dgpu(&self) -> bool {
        self.is_gpu() && self.vram_size() > 0
    }

    /// The render minor (`/dev/dri/renderD<minor>`).
    pub fn render_minor(&self) -> Result<u32> {
        u32::try_from(self.properties.drm_render_minor).map_err(|_| {
            Error::bad_answer(
                OP,
                format!(
                    "node {}: drm_render_minor {} is out of range",
                    self.index, self.properties.drm_render_minor
                ),
            )
        })
    }

    /// The queue buffer sizes the driver validates (facts §9.9). Where sysfs publishes
    /// `ctl_stack_size`, `cwsr_size` and `eop_buffer_size` (Linux 6.12+) those values are used,
    /// since they are what `CREATE_QUEUE` compares against; otherwise they come from the
    /// formulas. The debugger area always comes from the formula.
    pub fn queue_sizes(&self) -> Result<QueueSizes> {
        let p = &self.properties;
        let version = self.gfx_version().ok_or_else(|| self.unsupported())?;
        let small = |v: u64, name: &str| {
            u32::try_from(v).map_err(|_| {
                Error::bad_answer(
                    OP,
                    format!("node {}: {name} {v} is out of range", self.index),
                )
            })
        };
        let inputs = mqd::TopologyInputs {
            gfx_target_version: version,
            simd_count: small(p.simd_count, "simd_count")?,
            simd_per_cu: small(p.simd_per_cu, "simd_per_cu")?,
            num_xcc: self.num_xcc(),
            array_count: small(p.array_count, "array_count")?,
            simd_arrays_per_engine: small(p.simd_arrays_per_engine, "simd_arrays_per_engine")?,
            vgpr_per_cu: None,
        };
        let f = mqd::topology_sizes(&inputs).map_err(|e| {
            Error::bad_answer(
                OP,
                format!("node {}: cannot derive queue sizes: {e}", self.index),
            )
        })?;
        let or_formula = |v: u64, formula: u32, name: &str| -> Result<u32> {
            if v == 0 {
                Ok(formula)
            } else {
                small(v, name)
            }
        };
        let ctl_stack_size = or_formula(p.ctl_stack_size, f.ctl_stack_size, "ctl_stack_size")?;
        let cwsr_size = or_formula(p.cwsr_size, f.cwsr_size, "cwsr_size")?;
        Ok(QueueSizes {
            ctl_stack_size,
            wg_data_size: cwsr_size.saturating_sub(ctl_stack_size),
            cwsr_size,
            debug_memory_size: f.debug_memory_size,
            eop_buffer_size: or_formula(p.eop_buffer_size, f.eop_buffer_size, "eop_buffer_size")?,
            num_xcc: self.num_xcc(),
        })
    }
}

impl Topology {
    /// Reads the tree under `root` (normally [`kfd_sys::KFD_SYSFS_TOPOLOGY_ROOT`]).
    pub fn read(root: &Path) -> Result<Topology> {
        let generation_id = read_u64_file(&root.join(sysfs::KFD_SYSFS_GENERATION_ID))?;
        let sys = read_props(&root.join(sysfs::KFD_SYSFS_SYSTEM_PROPERTIES))?;
        let system = SystemProperties {
            platform_oem: sys.u64_or_zero(sysfs::system::PLATFORM_OEM)?,
            platform_id: sys.u64_or_zero(sysfs::system::PLATFORM_ID)?,
            platform_rev: sys.u64_or_zero(sysfs::system::PLATFORM_REV)?,
        };
        let nodes_dir = root.join(sysfs::KFD_SYSFS_NODES);
        let mut nodes = Vec::new();
        for (index, dir) in numbered_entries(&nodes_dir)? {
            nodes.push(read_node(index, &dir)?);
        }
        if nodes.is_empty() {
            return Err(Error::new(
                OP,
                Errno::ENODEV,
                format!("{} lists no nodes", nodes_dir.display()),
            ));
        }
        Ok(Topology {
            root: root.to_owned(),
            generation_id,
            system,
            nodes,
        })
    }

    /// The GPU nodes, in node order.
    pub fn gpus(&self) -> impl Iterator<Item = &Node> {
        self.nodes.iter().filter(|n| n.is_gpu())
    }

    /// The node of `gpu_id`.
    pub fn gpu(&self, gpu_id: u32) -> Option<&Node> {
        self.gpus().find(|n| n.gpu_id == gpu_id)
    }
}

fn io_error(path: &Path, e: &std::io::Error) -> Error {
    Error::new(
        OP,
        Errno(e.raw_os_error().unwrap_or(libc::EIO)),
        format!("cannot read {}: {e}", path.display()),
    )
}

fn read_text(path: &Path) -> Result<String> {
    fs::read_to_string(path).map_err(|e| io_error(path, &e))
}

fn parse_u64(s: &str) -> Option<u64> {
    let s = s.trim();
    match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => s.parse().ok(),
    }
}

fn read_u64_file(path: &Path) -> Result<u64> {
    let text = read_text(path)?;
    parse_u64(&text).ok_or_else(|| {
        Error::bad_answer(
            OP,
            format!("{} holds {:?}, not a number", path.display(), text.trim()),
        )
    })
}

/// A `properties` file: key → raw value, in file order for duplicates the last wins.
#[derive(Debug, Default)]
struct Props {
    path: PathBuf,
    pairs: BTreeMap<String, String>,
}

impl Props {
    fn u64_or_zero(&self, key: &str) -> Result<u64> {
        match self.pairs.get(key) {
            None => Ok(0),
            Some(v) => parse_u64(v).ok_or_else(|| {
                Error::bad_answer(
                    OP,
                    format!(
                        "{}: {key} has the non-numeric value {v:?}",
                        self.path.display()
                    ),
                )
            }),
        }
    }

    fn u32_or_zero(&self, key: &str) -> Result<u32> {
        let v = self.u64_or_zero(key)?;
        u32::try_from(v).map_err(|_| {
            Error::bad_answer(
                OP,
                format!("{}: {key} {v} does not fit 32 bits", self.path.display()),
            )
        })
    }
}

fn read_props(path: &Path) -> Result<Props> {
    let text = read_text(path)?;
    let mut pairs = BTreeMap::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let mut parts = line.splitn(2, char::is_whitespace);
        let (Some(key), Some(value)) = (parts.next(), parts.next()) else {
            return Err(Error::bad_answer(
                OP,
                format!(
                    "{} line {}: expected \"<key> <value>\", found {line:?}",
                    path.display(),
                    n + 1
                ),
            ));
        };
        pairs.insert(key.to_owned(), value.trim().to_owned());
    }
    Ok(Props {
        path: path.to_owned(),
        pairs,
    })
}

/// The numbered subdirectories of `dir`, sorted by number (a missing directory has none).
fn numbered_entries(dir: &Path) -> Result<Vec<(u32, PathBuf)>> {
    let entries = match fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(io_error(dir, &e)),
    };
    let mut out = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| io_error(dir, &e))?;
        if let Some(n) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<u32>().ok())
        {
            out.push((n, entry.path()));
        }
    }
    out.sort_by_key(|(n, _)| *n);
    Ok(out)
}

fn read_node(index: u32, dir: &Path) -> Result<Node> {
    let gpu_id_path = dir.join(sysfs::KFD_SYSFS_NODE_GPU_ID);
    let gpu_id = read_u64_file(&gpu_id_path)?;
    let gpu_id = u32::try_from(gpu_id).map_err(|_| {
        Error::bad_answer(
            OP,
            format!(
                "{}: gpu id {gpu_id} does not fit 32 bits",
                gpu_id_path.display()
            ),
        )
    })?;
    let name = match fs::read_to_string(dir.join(sysfs::KFD_SYSFS_NODE_NAME)) {
        Ok(s) => s.trim().to_owned(),
        Err(_) => String::new(),
    };
    let props_path = dir.join(sysfs::KFD_SYSFS_PROPERTIES);
    let props = read_props(&props_path)?;
    let (properties, other_properties) = node_properties(props)
        .map_err(|m| Error::bad_answer(OP, format!("{}: {m}", props_path.display())))?;
    let mut mem_banks = Vec::new();
    for (_, d) in numbered_entries(&dir.join(sysfs::KFD_SYSFS_MEM_BANKS))? {
        let p = read_props(&d.join(sysfs::KFD_SYSFS_PROPERTIES))?;
        use sysfs::mem_bank as k;
        mem_banks.push(MemBank {
            heap_type: HeapType::from_raw(p.u32_or_zero(k::HEAP_TYPE)?),
            size_in_bytes: p.u64_or_zero(k::SIZE_IN_BYTES)?,
            flags: p.u32_or_zero(k::FLAGS)?,
            width: p.u32_or_zero(k::WIDTH)?,
            mem_clk_max: p.u32_or_zero(k::MEM_CLK_MAX)?,
        });
    }
    let mut caches = Vec::new();
    for (_, d) in numbered_entries(&dir.join(sysfs::KFD_SYSFS_CACHES))? {
        let p = read_props(&d.join(sysfs::KFD_SYSFS_PROPERTIES))?;
        use sysfs::cache as k;
        let sibling_map = match p.pairs.get(k::SIBLING_MAP) {
            None => Vec::new(),
            Some(v) => v
                .split(',')
                .map(|b| b.trim())
                .filter(|b| !b.is_empty())
                .map(|b| b.parse::<u8>())
                .collect::<core::result::Result<Vec<_>, _>>()
                .map_err(|_| {
                    Error::bad_answer(
                        OP,
                        format!("{}: sibling_map {v:?} is not a 0/1 list", p.path.display()),
                    )
                })?,
        };
        caches.push(Cache {
            processor_id_low: p.u32_or_zero(k::PROCESSOR_ID_LOW)?,
            level: p.u32_or_zero(k::LEVEL)?,
            size_kib: p.u32_or_zero(k::SIZE)?,
            cache_line_size: p.u32_or_zero(k::CACHE_LINE_SIZE)?,
            cache_lines_per_tag: p.u32_or_zero(k::CACHE_LINES_PER_TAG)?,
            association: p.u32_or_zero(k::ASSOCIATION)?,
            latency: p.u32_or_zero(k::LATENCY)?,
            cache_type: p.u32_or_zero(k::TYPE)?,
            sibling_map,
        });
    }
    let io_links = read_links(&dir.join(sysfs::KFD_SYSFS_IO_LINKS))?;
    let p2p_links = read_links(&dir.join(sysfs::KFD_SYSFS_P2P_LINKS))?;
    Ok(Node {
        index,
        gpu_id,
        name,
        properties,
        other_properties,
        mem_banks,
        caches,
        io_links,
        p2p_links,
    })
}

fn read_links(dir: &Path) -> Result<Vec<IoLink>> {
    let mut links = Vec::new();
    for (_, d) in numbered_entries(dir)? {
        let p = read_props(&d.join(sysfs::KFD_SYSFS_PROPERTIES))?;
        use sysfs::io_link as k;
        links.push(IoLink {
            link_type: p.u32_or_zero(k::TYPE)?,
            version_major: p.u32_or_zero(k::VERSION_MAJOR)?,
            version_minor: p.u32_or_zero(k::VERSION_MINOR)?,
            node_from: p.u32_or_zero(k::NODE_FROM)?,
            node_to: p.u32_or_zero(k::NODE_TO)?,
            weight: p.u32_or_zero(k::WEIGHT)?,
            min_latency: p.u32_or_zero(k::MIN_LATENCY)?,
            max_latency: p.u32_or_zero(k::MAX_LATENCY)?,
            min_bandwidth: p.u32_or_zero(k::MIN_BANDWIDTH)?,
            max_bandwidth: p.u32_or_zero(k::MAX_BANDWIDTH)?,
            recommended_transfer_size: p.u32_or_zero(k::RECOMMENDED_TRANSFER_SIZE)?,
            flags: p.u32_or_zero(k::FLAGS)?,
        });
    }
    Ok(links)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(root: &Path, rel: &str, text: &str) {
        let p = root.join(rel);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, text).unwrap();
    }

    /// A hand-written two-node tree (a CPU and a gfx90a) with the 6.12 size keys.
    fn tree() -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        let r = d.path();
        write(r, "generation_id", "3\n");
        write(
            r,
            "system_properties",
            "platform_oem 1\nplatform_id 2\nplatform_rev 3\n",
        );
        write(r, "nodes/0/gpu_id", "0\n");
        write(
            r,
            "nodes/0/properties",
            "cpu_cores_count 16\nsimd_count 0\n",
        );
        write(r, "nodes/1/gpu_id", "35356\n");
        write(r, "nodes/1/name", "gfx90a\n");
        write(
            r,
            "nodes/1/properties",
            "simd_count 416\nsimd_per_cu 4\narray_count 8\nsimd_arrays_per_engine 1\n\
             gfx_target_version 90010\ndrm_render_minor 128\nnum_xcc 1\n\
             ctl_stack_size 36864\ncwsr_size 63508480\neop_buffer_size 4096\nfuture_key 7\n",
        );
        write(
            r,
            "nodes/1/mem_banks/0/properties",
            "heap_type 1\nsize_in_bytes 68719476736\nflags 0\nwidth 4096\nmem_clk_max 1600\n",
        );
        write(
            r,
            "nodes/1/caches/0/properties",
            "processor_id_low 0\nlevel 2\nsize 8192\ncache_line_size 128\ntype 9\nsibling_map 1,1,0\n",
        );
        write(
            r,
            "nodes/1/io_links/0/properties",
            "type 2\nnode_from 1\nnode_to 0\nweight 20\nmax_bandwidth 32000\nflags 1\n",
        );
        d
    }

    #[test]
    fn parses_a_hand_written_tree() {
        let d = tree();
        let t = Topology::read(d.path()).unwrap();
        assert_eq!(t.generation_id, 3);
        assert_eq!(t.system.platform_rev, 3);
        assert_eq!(t.nodes.len(), 2);
        assert!(!t.nodes[0].is_gpu());
        assert_eq!(t.nodes[0].properties.cpu_cores_count, 16);
        let g = t.gpu(35356).unwrap();
        assert_eq!(g.name, "gfx90a");
        assert_eq!(g.gfx_target_name().as_deref(), Some("gfx90a"));
        assert_eq!(g.generation().unwrap(), kfd_sys::gpu::Generation::Gfx9);
        assert_eq!(g.cu_count(), 104);
        assert_eq!(g.render_minor().unwrap(), 128);
        assert_eq!(g.vram_size(), 64 << 30);
        assert!(g.is_dgpu());
        assert_eq!(
            g.other_properties.get("future_key").map(String::as_str),
            Some("7")
        );
        assert_eq!(g.caches[0].sibling_map, vec![1, 1, 0]);
        assert!(g.caches[0].is_hsacu());
        assert_eq!(g.io_links[0].max_bandwidth, 32000);
        // Sizes: sysfs values win; the debugger area comes from the formula (facts §9.9:
        // wave_num 4096 × 32 = 0x20000).
        let s = g.queue_sizes().unwrap();
        assert_eq!(s.ctl_stack_size, 0x9000);
        assert_eq!(s.cwsr_size, 0x03C9_1000);
        assert_eq!(s.debug_memory_size, 0x2_0000);
        assert_eq!(s.eop_buffer_size, 4096);
        assert_eq!(s.context_save_area_size(), 0x03C9_1000 + 0x2_0000);
    }

    #[test]
    fn formulas_fill_in_what_an_older_kernel_does_not_publish() {
        let d = tree();
        write(
            d.path(),
            "nodes/1/properties",
            "simd_count 256\nsimd_per_cu 4\narray_count 4\nsimd_arrays_per_engine 1\n\
             gfx_target_version 90000\n",
        );
        let t = Topology::read(d.path()).unwrap();
        let s = t.gpu(35356).unwrap().queue_sizes().unwrap();
        // gfx900 with 64 CUs: facts §9.9 give 0x5000 / 0x1545000 / 0x10000.
        assert_eq!(
            (
                s.ctl_stack_size,
                s.cwsr_size,
                s.debug_memory_size,
                s.num_xcc
            ),
            (0x5000, 0x0154_5000, 0x1_0000, 1)
        );
    }

    #[test]
    fn absurd_sizes_saturate() {
        let s = QueueSizes {
            ctl_stack_size: u32::MAX,
            wg_data_size: 0,
            cwsr_size: u32::MAX,
            debug_memory_size: u32::MAX,
            eop_buffer_size: 4096,
            num_xcc: u32::MAX,
        };
        assert_eq!(s.context_save_area_size(), u64::MAX);
    }

    #[test]
    fn malformed_files_are_errors_not_panics() {
        let d = tree();
        write(d.path(), "nodes/1/properties", "simd_count lots\n");
        let e = Topology::read(d.path()).unwrap_err();
        assert!(
            e.to_string()
                .contains("simd_count has the non-numeric value"),
            "{e}"
        );
        let d = tree();
        write(d.path(), "nodes/1/properties", "lonely_key\n");
        let e = Topology::read(d.path()).unwrap_err();
        assert!(e.to_string().contains("line 1"), "{e}");
        let d = tree();
        write(d.path(), "nodes/1/gpu_id", "99999999999\n");
        assert!(Topology::read(d.path()).is_err());
        let d = tree();
        write(d.path(), "nodes/1/caches/0/properties", "sibling_map 1,x\n");
        assert!(Topology::read(d.path()).is_err());
        let e = Topology::read(Path::new("/nonexistent/topology")).unwrap_err();
        assert_eq!(e.errno(), Errno::ENOENT);
        let d = tree();
        fs::remove_dir_all(d.path().join("nodes")).unwrap();
        fs::create_dir(d.path().join("nodes")).unwrap();
        assert_eq!(Topology::read(d.path()).unwrap_err().errno(), Errno::ENODEV);
        // A GPU without simd_per_cu cannot have queue sizes, but says so.
        let d = tree();
        write(d.path(), "nodes/1/properties", "gfx_target_version 90000\n");
        let t = Topology::read(d.path()).unwrap();
        assert!(t.gpus().next().unwrap().queue_sizes().is_err());
    }
}
