//! Fuzz the thunk's sysfs topology parser (`thunk::Topology::read`).
//!
//! The thunk exposes no parser of a single `properties` text, only the reader of a whole
//! tree, so each input builds a tree in a temporary directory (on tmpfs where there is one):
//! optionally the tree the model writes for one of its presets, then edits chosen by the input
//! — files replaced by arbitrary bytes, single `key value` lines changed or added, files or
//! directories removed. The tree is then read and every derived value of every node is
//! computed (GPU generation, queue sizes, render minor, VRAM, CU count).
//!
//! Checks: nothing panics; errors display; an unedited model tree reads back as the model
//! describes it (GPU ids, CU counts, VRAM, render minors, and the queue buffer sizes the
//! driver model validates `CREATE_QUEUE` against).
#![no_main]

use arbitrary::Arbitrary;
use kfd_model::topology::Topology as ModelTopology;
use kfd_model::{ModelConfig, Preset};
use libfuzzer_sys::fuzz_target;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use thunk::Topology;

#[derive(Arbitrary, Debug)]
struct Input {
    /// Start from the model's tree of this preset and GPU count.
    base: Option<(u8, u8)>,
    edits: Vec<Edit>,
}

#[derive(Arbitrary, Debug)]
enum Edit {
    /// The whole file becomes these bytes.
    Replace { file: File, bytes: Vec<u8> },
    /// One `key value` line: the `line`-th existing key gets `value`, or `key` is appended.
    SetKey {
        file: File,
        line: u8,
        key: Option<String>,
        value: String,
    },
    /// The file (or its directory, for `properties`) disappears.
    Remove { file: File, whole_dir: bool },
}

#[derive(Arbitrary, Debug, Clone, Copy)]
struct File {
    kind: u8,
    node: u8,
    entry: u8,
}

impl File {
    fn path(self, root: &Path) -> PathBuf {
        let node = root.join("nodes").join((self.node % 4).to_string());
        let entry = (self.entry % 3).to_string();
        match self.kind % 9 {
            0 => root.join("generation_id"),
            1 => root.join("system_properties"),
            2 => node.join("gpu_id"),
            3 => node.join("name"),
            4 => node.join("properties"),
            5 => node.join("mem_banks").join(entry).join("properties"),
            6 => node.join("caches").join(entry).join("properties"),
            7 => node.join("io_links").join(entry).join("properties"),
            _ => node.join("p2p_links").join(entry).join("properties"),
        }
    }
}

/// A fresh directory per fuzzing process, on tmpfs when available.
fn scratch() -> &'static PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let shm = Path::new("/dev/shm");
        let base = if shm.is_dir() {
            shm.to_owned()
        } else {
            std::env::temp_dir()
        };
        base.join(format!("kfd-fuzz-topology-{}", std::process::id()))
    })
}

fn apply(root: &Path, e: &Edit) {
    match e {
        Edit::Replace { file, bytes } => {
            let p = file.path(root);
            if let Some(dir) = p.parent() {
                let _ = std::fs::create_dir_all(dir);
            }
            let _ = std::fs::write(&p, &bytes[..bytes.len().min(8192)]);
        }
        Edit::SetKey {
            file,
            line,
            key,
            value,
        } => {
            let p = file.path(root);
            let text = std::fs::read_to_string(&p).unwrap_or_default();
            let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
            match key {
                Some(k) => lines.push(format!("{k} {value}")),
                None if !lines.is_empty() => {
                    let i = *line as usize % lines.len();
                    let k = lines[i].split_whitespace().next().unwrap_or("").to_owned();
                    lines[i] = format!("{k} {value}");
                }
                None => return,
            }
            if let Some(dir) = p.parent() {
                let _ = std::fs::create_dir_all(dir);
            }
            let _ = std::fs::write(&p, lines.join("\n") + "\n");
        }
        Edit::Remove { file, whole_dir } => {
            let p = file.path(root);
            if *whole_dir {
                if let Some(dir) = p.parent() {
                    let _ = std::fs::remove_dir_all(dir);
                }
            } else {
                let _ = std::fs::remove_file(&p);
            }
        }
    }
}

/// Everything the thunk derives from a node; errors are displayed, never unwrapped.
fn exercise(t: &Topology) {
    let mut sink = String::new();
    for n in &t.nodes {
        let _ = (
            n.is_gpu(),
            n.gfx_version(),
            n.gfx_target_name(),
            n.cu_count(),
        );
        let _ = (n.num_xcc(), n.vram_size(), n.is_dgpu());
        for r in [n.generation().map(|_| ()), n.sdma_gen().map(|_| ())] {
            if let Err(e) = r {
                sink.push_str(&e.to_string());
            }
        }
        match n.render_minor() {
            Ok(m) => sink.push_str(&m.to_string()),
            Err(e) => sink.push_str(&e.to_string()),
        }
        match n.queue_sizes() {
            Ok(q) => {
                let _ = q.context_save_area_size();
            }
            Err(e) => sink.push_str(&e.to_string()),
        }
        for c in &n.caches {
            let _ = c.is_hsacu();
        }
    }
    for g in t.gpus() {
        assert!(t.gpu(g.gpu_id).is_some());
    }
    std::hint::black_box(sink);
}

/// An unedited model tree must read back as the model describes it.
fn compare_with_model(t: &Topology, model: &ModelTopology, preset: Preset) {
    let want: Vec<u32> = model.gpus().map(|n| n.gpu_id).collect();
    let got: Vec<u32> = t.gpus().map(|n| n.gpu_id).collect();
    assert_eq!(got, want, "GPU ids");
    let sizes = ModelTopology::queue_sizes(preset);
    for (mine, theirs) in t.gpus().zip(model.gpus()) {
        assert_eq!(mine.cu_count(), theirs.cu_count(), "CU count");
        assert_eq!(mine.vram_size(), theirs.vram_size(), "VRAM");
        assert_eq!(
            u64::from(mine.render_minor().expect("render minor")),
            theirs.properties.drm_render_minor
        );
        let q = mine.queue_sizes().expect("queue sizes of a model GPU");
        assert_eq!(
            (q.ctl_stack_size, q.cwsr_size, q.eop_buffer_size),
            (sizes.ctl_stack_size, sizes.cwsr_size, sizes.eop_buffer_size),
            "queue sizes the thunk derives vs. the ones the model validates against"
        );
    }
}

fuzz_target!(|input: Input| {
    let root = scratch();
    let _ = std::fs::remove_dir_all(root);
    if std::fs::create_dir_all(root).is_err() {
        return;
    }
    let mut model = None;
    if let Some((preset, gpus)) = input.base {
        let preset = Preset::ALL[preset as usize % Preset::ALL.len()];
        let cfg = ModelConfig::new(preset).with_gpus(1 + u32::from(gpus % 3));
        let topo = ModelTopology::from_config(&cfg);
        topo.write_sysfs(root).expect("the model writes its tree");
        model = Some((topo, preset));
    }
    for e in input.edits.iter().take(16) {
        apply(root, e);
    }
    match Topology::read(root) {
        Ok(t) => {
            exercise(&t);
            if let (Some((m, preset)), true) = (&model, input.edits.is_empty()) {
                compare_with_model(&t, m, *preset);
            }
        }
        Err(e) => {
            assert!(
                model.is_none() || !input.edits.is_empty(),
                "the model's own tree fails to read: {e}"
            );
            let _ = e.to_string();
        }
    }
});
