//! Opening the device: choosing a backend, checking the interface version, reading the
//! topology, binding every GPU's address space — and the process-wide calls.

// `ioctl_unchecked` is an `unsafe fn` forwarding its caller's promise about the addresses.
#![allow(unsafe_code)]

use crate::backend::{Backend, BackendKind, DevKfd, RenderNode, KFD_DEVICE_PATH};
use crate::error::{Errno, Error, Result};
use crate::event::{EventPage, RetainedEventPage};
use crate::gpu::{Apertures, Gpu};
use crate::queue::DoorbellPage;
use crate::topology::Topology;
#[cfg(feature = "model")]
use kfd_sys::gpu::Preset;
use kfd_sys::*;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, Weak};

/// The `/dev/kfd` interface version (`GET_VERSION`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct InterfaceVersion {
    /// Major version; 1 on every kernel so far.
    pub major: u32,
    /// Minor version: 11 on Linux 6.1, 17 on 6.12, 18 on current mainline.
    pub minor: u32,
}

impl InterfaceVersion {
    /// Whether the interface is at least `1.minor`.
    pub fn at_least(self, minor: u32) -> bool {
        self.major > 1 || (self.major == 1 && self.minor >= minor)
    }
}

impl std::fmt::Display for InterfaceVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

/// How the event page and doorbell pages reach the process (facts §7.4, §7.5, c-clients.md).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum PagePath {
    /// Discrete GPUs take the user-buffer path, APUs the kernel-page path; decided from the
    /// first GPU's memory banks (VRAM present = discrete).
    #[default]
    Auto,
    /// dGPU path: the thunk allocates the event page (a 32 KiB GTT buffer mapped on every GPU)
    /// and hands its handle to the first `CREATE_EVENT`; doorbell pages are `DOORBELL`
    /// buffers, CPU-mapped through `/dev/kfd` and mapped on the GPU.
    UserBuffers,
    /// APU path: the kernel allocates the event page and the thunk maps it through
    /// `/dev/kfd`; doorbell pages are plain `/dev/kfd` mappings.
    KernelPages,
}

#[derive(Debug)]
pub(crate) enum BackendChoice {
    Auto,
    Device {
        path: PathBuf,
    },
    #[cfg(feature = "model")]
    Model(Box<kfd_model::ModelConfig>),
    #[cfg(feature = "model")]
    ModelInstance(kfd_model::Model),
    Custom(Arc<dyn Backend>),
}

/// What [`Kfd::open_with`] opens.
///
/// ```
/// # #[cfg(feature = "model")] {
/// use thunk::{Kfd, OpenOptions, Preset};
/// let kfd = Kfd::open_with(OpenOptions::model(Preset::Gfx90a, 2))?;
/// assert_eq!(kfd.gpus().len(), 2);
/// # }
/// # Ok::<(), thunk::Error>(())
/// ```
#[derive(Debug)]
pub struct OpenOptions {
    backend: BackendChoice,
    topology_root: Option<PathBuf>,
    page_path: PagePath,
}

impl OpenOptions {
    /// The real device if [`KFD_DEVICE_PATH`] exists, else (feature `model`) one gfx900 of the
    /// model — what [`Kfd::open`] does.
    pub fn auto() -> Self {
        Self::with(BackendChoice::Auto)
    }

    pub(crate) fn with(backend: BackendChoice) -> Self {
        OpenOptions {
            backend,
            topology_root: None,
            page_path: PagePath::Auto,
        }
    }

    /// The KFD device at `path` (normally `/dev/kfd`), with real system calls.
    pub fn device(path: impl Into<PathBuf>) -> Self {
        Self::with(BackendChoice::Device { path: path.into() })
    }

    /// A new model of `gpus` GPUs of `preset`, Linux 6.12 behaviour. (A configuration beyond
    /// a preset, or a second process on an existing model:
    /// [`crate::model_access::OpenOptionsModelExt`].)
    #[cfg(feature = "model")]
    pub fn model(preset: Preset, gpus: u32) -> Self {
        Self::with(BackendChoice::Model(Box::new(
            kfd_model::ModelConfig::new(preset).with_gpus(gpus),
        )))
    }

    /// Any backend.
    pub fn backend(backend: Arc<dyn Backend>) -> Self {
        Self::with(BackendChoice::Custom(backend))
    }

    /// From the environment: `KFD_DEVICE=<path>` opens that device; otherwise `KFD_MODEL_PRESET=<preset>`
    /// and `KFD_MODEL_GPUS=<n>` pick the model (feature `model`); otherwise [`OpenOptions::auto`].
    pub fn from_env() -> Result<Self> {
        if let Some(path) = std::env::var_os("KFD_DEVICE").filter(|p| !p.is_empty()) {
            return Ok(Self::device(path));
        }
        #[cfg(feature = "model")]
        {
            let preset = std::env::var("KFD_MODEL_PRESET")
                .ok()
                .filter(|s| !s.is_empty());
            let gpus = std::env::var("KFD_MODEL_GPUS")
                .ok()
                .filter(|s| !s.is_empty());
            if preset.is_some() || gpus.is_some() {
                let preset = match preset {
                    Some(p) => p
                        .parse::<Preset>()
                        .map_err(|m| Error::invalid("open", format!("KFD_MODEL_PRESET: {m}")))?,
                    None => Preset::Gfx900,
                };
                let gpus = match gpus {
                    Some(g) => g.trim().parse::<u32>().map_err(|_| {
                        Error::invalid("open", format!("KFD_MODEL_GPUS={g:?} is not a number"))
                    })?,
                    None => 1,
                };
                return Ok(Self::model(preset, gpus));
            }
        }
        Ok(Self::auto())
    }

    /// Reads the topology from `root` instead of the backend's own (for a device:
    /// `/sys/devices/virtual/kfd/kfd/topology`).
    pub fn topology_root(mut self, root: impl Into<PathBuf>) -> Self {
        self.topology_root = Some(root.into());
        self
    }

    /// How the event and doorbell pages are set up.
    pub fn page_path(mut self, path: PagePath) -> Self {
        self.page_path = path;
        self
    }

    /// Opens.
    pub fn open(self) -> Result<Kfd> {
        // A real kernel has one KFD process per address space: a second open of the device
        // while the first is in use gets the same process, and so does the thunk.
        let device = self.device_path();
        let mut sessions = lock(&DEVICE_SESSIONS);
        sessions.retain(|(_, s)| s.strong_count() > 0);
        if let Some(path) = &device {
            if let Some(session) = sessions
                .iter()
                .filter(|(p, _)| p == path)
                .find_map(|(_, s)| s.upgrade())
            {
                log::debug!(target: "thunk::open", "{} is already open in this process; sharing it", path.display());
                return Ok(Kfd { session });
            }
        }
        let (backend, model) = self.make_backend()?;
        let kfd = Kfd::from_backend(backend, model, self.topology_root, self.page_path)?;
        if let Some(path) = device {
            sessions.push((path, Arc::downgrade(&kfd.session)));
        }
        Ok(kfd)
    }

    /// The device file this opens, if it opens one.
    fn device_path(&self) -> Option<PathBuf> {
        match &self.backend {
            BackendChoice::Device { path } => Some(path.clone()),
            BackendChoice::Auto
                if Path::new(KFD_DEVICE_PATH).exists() || !cfg!(feature = "model") =>
            {
                Some(PathBuf::from(KFD_DEVICE_PATH))
            }
            _ => None,
        }
    }

    #[cfg(feature = "model")]
    fn make_backend(&self) -> Result<(Arc<dyn Backend>, Option<kfd_model::Model>)> {
        use crate::backend::ModelBackend;
        let model_err =
            |e: Errno| Error::new("open", e, "the in-process model could not be started");
        let from_model = |b: ModelBackend| {
            let m = b.model().clone();
            (Arc::new(b) as Arc<dyn Backend>, Some(m))
        };
        match &self.backend {
            BackendChoice::Auto if !Path::new(KFD_DEVICE_PATH).exists() => {
                log::info!(target: "thunk::open", "{KFD_DEVICE_PATH} does not exist; using the in-process model (gfx900)");
                let cfg = kfd_model::ModelConfig::new(Preset::Gfx900);
                Ok(from_model(ModelBackend::new(cfg).map_err(model_err)?))
            }
            BackendChoice::Model(cfg) => Ok(from_model(
                ModelBackend::new((**cfg).clone()).map_err(model_err)?,
            )),
            BackendChoice::ModelInstance(m) => {
                Ok(from_model(ModelBackend::on(m).map_err(model_err)?))
            }
            _ => self.make_device_backend().map(|b| (b, None)),
        }
    }

    #[cfg(not(feature = "model"))]
    fn make_backend(&self) -> Result<(Arc<dyn Backend>, Option<()>)> {
        self.make_device_backend().map(|b| (b, None))
    }

    fn make_device_backend(&self) -> Result<Arc<dyn Backend>> {
        let path = match &self.backend {
            BackendChoice::Custom(b) => return Ok(b.clone()),
            BackendChoice::Device { path } => path.clone(),
            _ => PathBuf::from(KFD_DEVICE_PATH),
        };
        let root = self
            .topology_root
            .clone()
            .unwrap_or_else(|| PathBuf::from(KFD_SYSFS_TOPOLOGY_ROOT));
        log::info!(target: "thunk::open", "using the device {}", path.display());
        let dev = DevKfd::open(&path, &root).map_err(|e| {
            Error::new(
                "open",
                e,
                format!("cannot open {} read-write", path.display()),
            )
        })?;
        Ok(Arc::new(dev))
    }
}

/// Device sessions open in this process, by device path.
static DEVICE_SESSIONS: Mutex<Vec<(PathBuf, Weak<Session>)>> = Mutex::new(Vec::new());

/// One GPU's per-process state.
pub(crate) struct GpuState {
    pub gpu_id: u32,
    /// Index of the node in the topology.
    pub node: usize,
    /// The process doorbell page, mapped on first use and shared by every queue.
    pub doorbells: OnceLock<DoorbellPage>,
    pub doorbell_init: Mutex<()>,
    pub render: Box<dyn RenderNode>,
    /// Buffers of destroyed queues kept for the next queue (see `pool`).
    pub buffer_pool: Mutex<crate::pool::BufferPool>,
}

impl std::fmt::Debug for GpuState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GpuState")
            .field("gpu_id", &format_args!("{:#x}", self.gpu_id))
            .field("node", &self.node)
            .field("render_minor", &self.render.minor())
            .finish_non_exhaustive()
    }
}

/// Everything one open of `/dev/kfd` owns. Every object ([`Gpu`], [`crate::Memory`],
/// [`crate::Event`], queues) holds an `Arc` of it, so the device stays open until the last of
/// them is gone and nothing can outlive what it needs. Fields drop in order: the pages first,
/// the backend (the file, or the model process) last.
pub(crate) struct Session {
    pub event_page: Mutex<Option<EventPage>>,
    pub gpus: Vec<GpuState>,
    pub topology: Topology,
    pub version: InterfaceVersion,
    pub user_pages: bool,
    #[cfg(feature = "model")]
    pub model: Option<kfd_model::Model>,
    pub backend: Arc<dyn Backend>,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("backend", &self.backend.describe())
            .field("version", &self.version)
            .field("gpus", &self.gpus)
            .finish_non_exhaustive()
    }
}

pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Session {
    /// A typed [`SafeIoctl`]: the argument struct's own bytes are the buffer (no copy).
    #[inline]
    pub fn ioctl<R: SafeIoctl>(&self, args: &mut R::Arg) -> core::result::Result<i32, Errno> {
        self.backend.call::<R>(args)
    }

    /// A typed ioctl whose argument carries addresses.
    ///
    /// # Safety
    ///
    /// As [`Backend::ioctl`]: the addresses in `args` are memory the caller owns for the
    /// call's effects and their lifetime.
    #[inline]
    pub unsafe fn ioctl_unchecked<R: Ioctl>(
        &self,
        args: &mut R::Arg,
    ) -> core::result::Result<i32, Errno> {
        // SAFETY: forwarded from the caller's contract.
        unsafe { self.backend.call_unchecked::<R>(args) }
    }

    /// The state of GPU `gpu_id`.
    pub fn gpu_index(&self, gpu_id: u32) -> Option<usize> {
        self.gpus.iter().position(|g| g.gpu_id == gpu_id)
    }

    /// The topology node of GPU `index`.
    pub fn node(&self, index: usize) -> &crate::topology::Node {
        // `GpuState::node` is an index into `topology.nodes` made when the session was built.
        &self.topology.nodes[self.gpus[index].node]
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        // Doorbell buffers are ours to free; the kernel frees the rest when the process goes.
        for g in &mut self.gpus {
            if let Some(page) = g.doorbells.take() {
                page.release(self.backend.as_ref(), g.gpu_id);
            }
        }
        // Pooled queue buffers too: the model keeps no process after close, and on a device
        // a re-open in this process shares the kernel's process, which would keep them.
        for g in &self.gpus {
            for entry in lock(&g.buffer_pool).drain() {
                entry.buf.free(self, &entry.mapped_on);
            }
        }
        let page = lock(&self.event_page).take();
        if let (Some(page), BackendKind::Device) = (page, self.backend.kind()) {
            // A real kernel keeps one process per address space across close and re-open, and
            // with it the event page; keep the page mapped for the next open in this process.
            RetainedEventPage::retain(page);
        }
        log::debug!(target: "thunk::open", "closed {}", self.backend.describe());
    }
}

/// An open `/dev/kfd` (or model): the process's view of the driver. Cheap to clone; the
/// device closes when the last `Kfd` and every object made from it are dropped.
///
/// ```
/// let kfd = thunk::Kfd::open()?;
/// assert_eq!(kfd.version().major, 1);
/// for gpu in kfd.gpus() {
///     println!("{} gpu_id {:#x}", gpu.node().name, gpu.id());
/// }
/// # Ok::<(), thunk::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct Kfd {
    pub(crate) session: Arc<Session>,
}

impl Kfd {
    /// Opens the real device if `/dev/kfd` exists, and otherwise (feature `model`, on by
    /// default) the in-process model of one gfx900. The choice is logged (target
    /// `thunk::open`).
    pub fn open() -> Result<Kfd> {
        OpenOptions::auto().open()
    }

    /// Opens what `options` name.
    pub fn open_with(options: OpenOptions) -> Result<Kfd> {
        options.open()
    }

    fn from_backend(
        backend: Arc<dyn Backend>,
        #[cfg(feature = "model")] model: Option<kfd_model::Model>,
        #[cfg(not(feature = "model"))] _model: Option<()>,
        topology_root: Option<PathBuf>,
        page_path: PagePath,
    ) -> Result<Kfd> {
        let mut v = kfd_ioctl_get_version_args::default();
        backend
            .call::<GetVersion>(&mut v)
            .map_err(|e| Error::ioctl("GET_VERSION", e, backend.describe()))?;
        let version = InterfaceVersion {
            major: v.major_version,
            minor: v.minor_version,
        };
        if version.major != KFD_IOCTL_MAJOR_VERSION {
            return Err(Error::new(
                "GET_VERSION",
                Errno::ENOTTY,
                format!(
                    "{} speaks KFD interface {version}; this thunk speaks major version {}",
                    backend.describe(),
                    KFD_IOCTL_MAJOR_VERSION
                ),
            ));
        }
        let root = topology_root.unwrap_or_else(|| backend.topology_root().to_owned());
        let topology = Topology::read(&root)?;
        let mut gpus = Vec::new();
        for (i, node) in topology
            .nodes
            .iter()
            .enumerate()
            .filter(|(_, n)| n.is_gpu())
        {
            let minor = node.render_minor()?;
            let render = match backend.open_render_node(minor) {
                Ok(r) => r,
                Err(e) => {
                    log::warn!(target: "thunk::open", "gpu {:#x}: cannot open renderD{minor} ({e}); the GPU is left out", node.gpu_id);
                    continue;
                }
            };
            let mut a = kfd_ioctl_acquire_vm_args {
                drm_fd: render.fd() as u32,
                gpu_id: node.gpu_id,
            };
            backend.call::<AcquireVm>(&mut a).map_err(|e| {
                Error::ioctl(
                    "ACQUIRE_VM",
                    e,
                    format_args!("gpu {:#x} via renderD{minor}", node.gpu_id),
                )
            })?;
            gpus.push(GpuState {
                gpu_id: node.gpu_id,
                node: i,
                doorbells: OnceLock::new(),
                doorbell_init: Mutex::new(()),
                render,
                buffer_pool: Mutex::new(crate::pool::BufferPool::default()),
            });
        }
        let user_pages = match page_path {
            PagePath::UserBuffers => true,
            PagePath::KernelPages => false,
            PagePath::Auto => gpus
                .first()
                .is_some_and(|g| topology.nodes.get(g.node).is_some_and(|n| n.is_dgpu())),
        };
        if user_pages && gpus.is_empty() {
            return Err(Error::new(
                "open",
                Errno::ENODEV,
                "the user-buffer page path needs at least one usable GPU",
            ));
        }
        let names: Vec<String> = gpus
            .iter()
            .filter_map(|g| topology.nodes.get(g.node))
            .map(|n| n.gfx_target_name().unwrap_or_else(|| n.name.clone()))
            .collect();
        log::info!(
            target: "thunk::open",
            "opened {}: KFD interface {version}, {} GPU(s) [{}], {} pages",
            backend.describe(),
            gpus.len(),
            names.join(", "),
            if user_pages { "user-buffer (dGPU)" } else { "kernel (APU)" }
        );
        Ok(Kfd {
            session: Arc::new(Session {
                event_page: Mutex::new(None),
                gpus,
                topology,
                version,
                user_pages,
                #[cfg(feature = "model")]
                model,
                backend,
            }),
        })
    }

    /// The interface version.
    pub fn version(&self) -> InterfaceVersion {
        self.session.version
    }

    /// Asks the driver for its interface version again (one `GET_VERSION` ioctl).
    pub fn query_version(&self) -> Result<InterfaceVersion> {
        let mut v = kfd_ioctl_get_version_args::default();
        self.session
            .ioctl::<GetVersion>(&mut v)
            .map_err(|e| Error::ioctl("GET_VERSION", e, ""))?;
        Ok(InterfaceVersion {
            major: v.major_version,
            minor: v.minor_version,
        })
    }

    /// The topology read at open.
    pub fn topology(&self) -> &Topology {
        &self.session.topology
    }

    /// Reads the topology again from the same root.
    pub fn reread_topology(&self) -> Result<Topology> {
        Topology::read(&self.session.topology.root)
    }

    /// The usable GPUs (render node opened, address space acquired), in node order.
    pub fn gpus(&self) -> Vec<Gpu> {
        (0..self.session.gpus.len())
            .map(|index| Gpu::new(self.session.clone(), index))
            .collect()
    }

    /// The `index`th usable GPU.
    pub fn gpu(&self, index: usize) -> Option<Gpu> {
        (index < self.session.gpus.len()).then(|| Gpu::new(self.session.clone(), index))
    }

    /// The GPU with topology id `gpu_id`.
    pub fn gpu_by_id(&self, gpu_id: u32) -> Option<Gpu> {
        self.session
            .gpu_index(gpu_id)
            .map(|index| Gpu::new(self.session.clone(), index))
    }

    /// The backend serving this process.
    pub fn backend(&self) -> &dyn Backend {
        self.session.backend.as_ref()
    }

    /// Whether the event and doorbell pages take the dGPU (user-buffer) path.
    pub fn uses_user_pages(&self) -> bool {
        self.session.user_pages
    }

    /// An ioctl the thunk does not wrap, on this process's `/dev/kfd`, for requests safe code
    /// may issue ([`SafeIoctl`]): `R` names the request code and the
    /// argument type together (`kfd.ioctl::<kfd_sys::GetVersion>(&mut args)`), and the
    /// argument struct's bytes are the buffer.
    pub fn ioctl<R: SafeIoctl>(&self, args: &mut R::Arg) -> Result<i32> {
        self.session
            .ioctl::<R>(args)
            .map_err(|e| Error::ioctl(R::NAME, e, "raw request"))
    }

    /// As [`Kfd::ioctl`], for any request, including those whose argument carries user
    /// addresses the kernel writes or hands to the GPU (`USERPTR` buffers, output arrays, SVM
    /// ranges…).
    ///
    /// # Safety
    ///
    /// Every address inside `args` must be memory the caller owns for everything the kernel
    /// and the GPU do with it and for as long as they do: an output array until the call
    /// returns, memory a queue or a GPU mapping reaches until the queue is destroyed or the
    /// buffer freed; no Rust reference may point into what they write meanwhile.
    pub unsafe fn ioctl_unchecked<R: Ioctl>(&self, args: &mut R::Arg) -> Result<i32> {
        // SAFETY: forwarded from the caller's contract.
        unsafe { self.session.ioctl_unchecked::<R>(args) }
            .map_err(|e| Error::ioctl(R::NAME, e, "raw request"))
    }

    /// The apertures (LDS, scratch, GPUVM) of every GPU of the process
    /// (`GET_PROCESS_APERTURES_NEW`).
    pub fn apertures(&self) -> Result<Vec<Apertures>> {
        const OP: &str = "GET_PROCESS_APERTURES_NEW";
        let mut a = kfd_ioctl_get_process_apertures_new_args::default();
        // SAFETY: the array pointer is still 0: the kernel only counts the nodes.
        unsafe {
            self.session
                .ioctl_unchecked::<GetProcessAperturesNew>(&mut a)
        }
        .map_err(|e| Error::ioctl(OP, e, "counting nodes"))?;
        let n = (a.num_of_nodes as usize).min(self.session.gpus.len().max(1) * 2 + 8);
        let mut list = vec![kfd_process_device_apertures::default(); n];
        a.kfd_process_device_apertures_ptr = list.as_mut_ptr() as u64;
        a.num_of_nodes = n as u32;
        // SAFETY: the array pointer is `list`, `num_of_nodes` entries, alive and not otherwise
        // borrowed until the call returns; the kernel writes at most that many.
        unsafe {
            self.session
                .ioctl_unchecked::<GetProcessAperturesNew>(&mut a)
        }
        .map_err(|e| Error::ioctl(OP, e, ""))?;
        let got = (a.num_of_nodes as usize).min(n);
        Ok(list.iter().take(got).map(Apertures::from_raw).collect())
    }

    /// Whether XNACK (GPU page-fault retry) is on for the process (`SET_XNACK_MODE` with -1).
    pub fn xnack_mode(&self) -> Result<bool> {
        let mut a = kfd_ioctl_set_xnack_mode_args { xnack_enabled: -1 };
        self.session
            .ioctl::<SetXnackMode>(&mut a)
            .map_err(|e| Error::ioctl("SET_XNACK_MODE", e, "query"))?;
        Ok(a.xnack_enabled > 0)
    }

    /// Turns XNACK on or off for the process; fails while the process has queues (`EBUSY`) or
    /// on parts without per-process XNACK (`EPERM`).
    pub fn set_xnack_mode(&self, enabled: bool) -> Result<()> {
        let mut a = kfd_ioctl_set_xnack_mode_args {
            xnack_enabled: i32::from(enabled),
        };
        self.session
            .ioctl::<SetXnackMode>(&mut a)
            .map_err(|e| Error::ioctl("SET_XNACK_MODE", e, format_args!("enable = {enabled}")))?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_comparison() {
        let v = InterfaceVersion {
            major: 1,
            minor: 17,
        };
        assert!(v.at_least(17));
        assert!(!v.at_least(18));
        assert_eq!(v.to_string(), "1.17");
    }
}
