//! The in-process model as a backend: one model process per backend, its device memory mapped
//! into this address space exactly where the thunk asks, its topology written as a sysfs tree
//! into a temporary directory.
#![allow(unsafe_code)]

use super::{Backend, BackendKind, MapTarget, RenderNode};
use crate::error::Errno;
use kfd_model::{tmpdirs, MapSource, Model, ModelConfig, Process};
use std::path::Path;

/// The model backend's sysfs trees are `kfd-model-topology-<pid>-XXXXXX` in
/// [`tmpdirs::base_dir`] (`$TMPDIR`, else `/dev/shm`).
pub const TOPOLOGY_DIR_PREFIX: &str = "kfd-model-topology-";

/// A process of the in-process model of amdkfd and the GPU.
#[derive(Debug)]
pub struct ModelBackend {
    process: Process,
    model: Model,
    // The sysfs tree lives as long as the backend; it is deleted on drop.
    sysfs: tempfile::TempDir,
}

impl ModelBackend {
    /// Builds a model from `config` and opens a process on it.
    pub fn new(config: ModelConfig) -> Result<ModelBackend, Errno> {
        let model = Model::new(config)?;
        Self::on(&model)
    }

    /// Opens another process on an existing model (as a second program would), with its own
    /// copy of the sysfs tree.
    pub fn on(model: &Model) -> Result<ModelBackend, Errno> {
        // Trees of processes that died without cleaning up (SIGKILL, a crash) go first.
        static SWEPT: std::sync::Once = std::sync::Once::new();
        SWEPT.call_once(|| {
            tmpdirs::sweep_dead(&tmpdirs::base_dir(), TOPOLOGY_DIR_PREFIX);
        });
        let sysfs = tmpdirs::create_registered(
            || {
                let dir = tempfile::Builder::new()
                    .prefix(&tmpdirs::own_prefix(TOPOLOGY_DIR_PREFIX))
                    .tempdir_in(tmpdirs::base_dir())?;
                model.write_sysfs(dir.path())?;
                Ok(dir)
            },
            |dir| dir.path(),
        )
        .map_err(|e| Errno(e.raw_os_error().unwrap_or(libc::EIO)))?;
        let process = model.open()?;
        Ok(ModelBackend {
            process,
            model: model.clone(),
            sysfs,
        })
    }

    /// The model (for inspection: processes, queues, the scheduler's counters).
    pub fn model(&self) -> &Model {
        &self.model
    }

    /// The model's process object behind this backend.
    pub fn process(&self) -> &Process {
        &self.process
    }
}

impl Drop for ModelBackend {
    fn drop(&mut self) {
        // The TempDir removes the tree right after this.
        tmpdirs::unregister(self.sysfs.path());
    }
}

/// Maps `source` over `target`.
///
/// # Safety
///
/// `target` is address space the caller owns with no Rust references into it.
unsafe fn map_source(target: MapTarget, source: &MapSource) -> Result<(), Errno> {
    if source.len < target.len.get() as u64 {
        return Err(Errno::EINVAL);
    }
    let offset = libc::off_t::try_from(source.offset).map_err(|_| Errno::EINVAL)?;
    // SAFETY: forwarded from the caller's contract; the source is the model's device memory
    // file, mapped shared.
    unsafe { super::map_fixed(target, source.memory.fd(), offset) }
}

impl Backend for ModelBackend {
    fn kind(&self) -> BackendKind {
        BackendKind::Model
    }

    fn describe(&self) -> String {
        let c = self.model.config();
        format!(
            "model: {} × {} ({:?}), pasid {:#x}",
            c.gpus,
            c.preset,
            c.kernel,
            self.process.pasid()
        )
    }

    #[inline]
    unsafe fn ioctl(&self, request: u32, arg: &mut [u8]) -> Result<i32, Errno> {
        // The model's chardev refuses a buffer shorter than the request's size (EFAULT) itself.
        // SAFETY: the model's contract is this one's, forwarded from the caller.
        unsafe { self.process.ioctl(request, arg) }
    }

    unsafe fn mmap(&self, target: MapTarget, offset: u64) -> Result<(), Errno> {
        let source = self.process.mmap(offset, target.len.get() as u64)?;
        // SAFETY: forwarded from the caller's contract.
        unsafe { map_source(target, &source) }
    }

    fn open_render_node(&self, minor: u32) -> Result<Box<dyn RenderNode>, Errno> {
        let node = self.model.open_render_node(minor)?;
        Ok(Box::new(ModelRenderNode { node }))
    }

    fn topology_root(&self) -> &Path {
        self.sysfs.path()
    }

    fn doorbell_rung(&self, gpu_id: u32) {
        self.model.doorbell_rung(gpu_id);
    }
}

/// A render node of the model.
#[derive(Debug)]
struct ModelRenderNode {
    node: kfd_model::RenderNode,
}

impl RenderNode for ModelRenderNode {
    fn minor(&self) -> u32 {
        self.node.minor()
    }

    fn fd(&self) -> i32 {
        self.node.fd
    }

    unsafe fn mmap(&self, target: MapTarget, offset: u64) -> Result<(), Errno> {
        let source = self.node.mmap(offset, target.len.get() as u64)?;
        // SAFETY: forwarded from the caller's contract.
        unsafe { map_source(target, &source) }
    }
}
