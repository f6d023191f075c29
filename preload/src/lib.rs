//! # kfd-preload — the model behind `/dev/kfd` for unmodified C programs
//!
//! An `LD_PRELOAD` shim: loaded into a process, it answers that process's use of an AMD GPU
//! from an in-process [`kfd_model`] instance, so Debian's libhsakmt, `rocminfo` and
//! kfdtest-style programs run without a GPU:
//!
//! ```sh
//! cargo build --release -p kfd-preload
//! KFD_MODEL_PRESET=gfx90a KFD_MODEL_GPUS=2 \
//!     LD_PRELOAD=target/release/libkfd_preload.so rocminfo
//! ```
//!
//! What it answers, for the process it is loaded into only:
//!
//! - `open("/dev/kfd")` and `open("/dev/dri/renderD<minor>")` of the modelled GPUs, with
//!   `ioctl` (every KFD ioctl through the model's chardev; `DRM_IOCTL_VERSION` and the
//!   `AMDGPU_INFO` queries of libdrm_amdgpu, see [`drm`]), `mmap` (doorbell, event and MMIO
//!   pages, VRAM/GTT buffers: the model's memory mapped at the address asked for), `fstat`,
//!   `close`, `close_range`, and every way a descriptor is duplicated or passed — `dup`,
//!   `dup2`, `dup3`, `fcntl(F_DUPFD*)`, `recvmsg` with `SCM_RIGHTS`, a reopen of
//!   `/proc/self/fd/N`, `fork` — naming the same file as in the kernel (see `shim`'s
//!   `OpenFile`). Nothing is ever created on the real `/dev`:
//!   `mknod`, `mkdir`, `chown`, `chmod`, `unlink` of those nodes are answered by the shim.
//! - the sysfs the clients read — the KFD topology, `/sys/class/drm` (`card<N>` and
//!   `renderD<minor>` with amdgpu's device files and hwmon, for rocm-smi),
//!   `/sys/dev/char/226:*`, `/sys/module/amdgpu` — redirected into a tree written once per
//!   process in `$TMPDIR`, else `/dev/shm` (see [`tree`]), for `open`, `openat`, `fopen`, `opendir`, `stat`, `statx`,
//!   `access`, `readlink`, `realpath` and their `64`, `__x*` and fortified variants;
//! - `/proc/modules` with an `amdgpu` line (for `lsmod | grep amdgpu` in `rocminfo`'s child,
//!   without building a model there).
//!
//! Everything else goes straight to libc; the model is built only when a process first opens
//! `/dev/kfd` or a render node, and the tree only when a served path is first touched. A
//! process that never does either pays one prefix check per path call and one atomic load per
//! descriptor call.
//!
//! Configuration is read from the environment ([`config`]): `KFD_MODEL_PRESET`,
//! `KFD_MODEL_GPUS`, `KFD_MODEL_KERNEL`, `KFD_MODEL_LOG` (a `RUST_LOG`-style filter over the
//! model's `kfd::*`/`hw::*` targets and the shim's `preload`), `KFD_MODEL_LOG_FILE`, and
//! `KFD_RUN_SUMMARY` (where the shader counters go at exit, see [`summary`]; `kfd run` reads
//! them).
//!
//! ## Organisation
//!
//! The pure parts are ordinary, tested Rust: [`config`] (environment), [`paths`] (which
//! paths are served and where they land, without allocating), [`drm`] (DRM answers built from
//! the topology), [`tree`] (the files served), [`logger`] (a `log` backend writing with one
//! `write(2)` per record). The interposed functions (`hooks`), the libc functions behind them
//! (`real`, resolved once with `dlsym(RTLD_NEXT)`) and the per-process state (`shim`: the
//! model, its one `kfd_process`, the descriptor table, a re-entry guard) are built only into
//! the library, not into unit tests.
//!
//! ```
//! use kfd_preload::config::ShimConfig;
//! use kfd_preload::paths::{classify, PathClass};
//!
//! let cfg = ShimConfig::from_lookup(|var| match var {
//!     "KFD_MODEL_PRESET" => Some("gfx1030".to_owned()),
//!     "KFD_MODEL_GPUS" => Some("2".to_owned()),
//!     _ => None,
//! })
//! .unwrap();
//! assert_eq!(classify(b"/dev/kfd", cfg.gpus), PathClass::Kfd);
//! assert_eq!(classify(b"/dev/dri/renderD129", cfg.gpus), PathClass::RenderNode(129));
//! assert_eq!(classify(b"/etc/hostname", cfg.gpus), PathClass::Other);
//! ```

pub mod config;
pub mod drm;
pub mod logger;
pub mod paths;
pub mod summary;
pub mod tree;

#[cfg(not(test))]
mod hooks;
#[cfg(not(test))]
mod real;
#[cfg(not(test))]
mod shim;
