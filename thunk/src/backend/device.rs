//! The real device: system calls on `/dev/kfd` and `/dev/dri/renderD*`.
#![allow(unsafe_code)]

use super::{check_arg_len, Backend, BackendKind, MapTarget, RenderNode};
use crate::error::Errno;
use std::fs::{File, OpenOptions};
use std::os::fd::{AsFd, AsRawFd};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// Where the KFD character device lives.
pub const KFD_DEVICE_PATH: &str = "/dev/kfd";

/// `ioctl` retries on these, as libhsakmt does (the driver returns them for interrupted waits
/// and transient eviction).
const RETRY: [i32; 2] = [libc::EINTR, libc::EAGAIN];

/// `/dev/kfd` opened read-write, with the sysfs topology it describes.
#[derive(Debug)]
pub struct DevKfd {
    file: File,
    path: PathBuf,
    topology_root: PathBuf,
}

impl DevKfd {
    /// Opens the KFD device at `path` (normally [`KFD_DEVICE_PATH`]) and uses the topology
    /// under `topology_root` (normally [`kfd_sys::KFD_SYSFS_TOPOLOGY_ROOT`]).
    pub fn open(path: &Path, topology_root: &Path) -> Result<DevKfd, Errno> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(path)
            .map_err(|e| Errno(e.raw_os_error().unwrap_or(libc::EIO)))?;
        Ok(DevKfd {
            file,
            path: path.to_owned(),
            topology_root: topology_root.to_owned(),
        })
    }

    /// The device path.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// Maps the device file at a KFD mmap offset over `target`.
///
/// # Safety
///
/// `target` is address space the caller owns with no Rust references into it.
unsafe fn map_fixed(target: MapTarget, fd: impl AsFd, offset: u64) -> Result<(), Errno> {
    // KFD offsets use the top bits (type in [63:62]); the kernel takes them as unsigned, the
    // C prototype as a signed off_t of the same bits.
    // SAFETY: forwarded from the caller's contract.
    unsafe { super::map_fixed(target, fd, offset as libc::off_t) }
}

impl Backend for DevKfd {
    fn kind(&self) -> BackendKind {
        BackendKind::Device
    }

    fn describe(&self) -> String {
        self.path.display().to_string()
    }

    unsafe fn ioctl(&self, request: u32, arg: &mut [u8]) -> Result<i32, Errno> {
        check_arg_len(request, arg)?;
        loop {
            // SAFETY: `arg` is a live, writable buffer at least as long as the size the request
            // code tells the kernel to copy in and out (checked above); the addresses inside
            // it are the caller's memory (this function's contract).
            let r = unsafe {
                libc::ioctl(
                    self.file.as_raw_fd(),
                    request as libc::Ioctl,
                    arg.as_mut_ptr(),
                )
            };
            if r >= 0 {
                return Ok(r);
            }
            let e = nix::errno::Errno::last_raw();
            if !RETRY.contains(&e) {
                return Err(Errno(e));
            }
        }
    }

    unsafe fn mmap(&self, target: MapTarget, offset: u64) -> Result<(), Errno> {
        // SAFETY: forwarded from the caller's contract.
        unsafe { map_fixed(target, &self.file, offset) }
    }

    fn open_render_node(&self, minor: u32) -> Result<Box<dyn RenderNode>, Errno> {
        // The kernel binds a process's GPU address space to the render file of its first
        // ACQUIRE_VM for as long as the process lives (one KFD process per address space), and
        // refuses another file with EBUSY. So a render node is opened once per process and kept:
        // a later open of /dev/kfd in the same process acquires through the same file.
        let mut files = RENDER_FILES.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, f)) = files.iter().find(|(m, _)| *m == minor) {
            return Ok(Box::new(DevRenderNode {
                file: f.clone(),
                minor,
            }));
        }
        let path = PathBuf::from(format!("/dev/dri/renderD{minor}"));
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(&path)
            .map_err(|e| Errno(e.raw_os_error().unwrap_or(libc::EIO)))?;
        let file = Arc::new(file);
        files.push((minor, file.clone()));
        Ok(Box::new(DevRenderNode { file, minor }))
    }

    fn topology_root(&self) -> &Path {
        &self.topology_root
    }
}

/// Render nodes opened by this process, by minor (see [`DevKfd::open_render_node`]).
static RENDER_FILES: Mutex<Vec<(u32, Arc<File>)>> = Mutex::new(Vec::new());

/// A real render node.
#[derive(Debug)]
struct DevRenderNode {
    file: Arc<File>,
    minor: u32,
}

impl RenderNode for DevRenderNode {
    fn minor(&self) -> u32 {
        self.minor
    }

    fn fd(&self) -> i32 {
        self.file.as_raw_fd()
    }

    unsafe fn mmap(&self, target: MapTarget, offset: u64) -> Result<(), Errno> {
        // SAFETY: forwarded from the caller's contract.
        unsafe { map_fixed(target, self.file.as_ref(), offset) }
    }
}
