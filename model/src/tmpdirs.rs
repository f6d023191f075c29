//! The per-process directories the model's users write under `$TMPDIR` (the sysfs trees of
//! the thunk's model backend and of the LD_PRELOAD shim), and their cleanup.
//!
//! A directory is named `<prefix><pid>-<anything>`, so that a later process can sweep what a
//! dead one left ([`sweep_dead`]), and is [`register`]ed while it lives, so that a signal
//! handler can remove it before the process dies ([`remove_registered`]). One implementation
//! for both users.

// Unsafe here: `getuid(2)` through libc.
#![allow(unsafe_code)]

use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// Where the trees go: `$TMPDIR` when it is set; otherwise `/dev/shm` when this user may
/// write there (tmpfs: a tree stands in for sysfs, which lives in memory, and a GPU's few
/// hundred cache directories then cost no disk I/O); otherwise the system's temporary
/// directory.
pub fn base_dir() -> PathBuf {
    if std::env::var_os("TMPDIR").is_some_and(|t| !t.is_empty()) {
        return std::env::temp_dir();
    }
    let shm = Path::new("/dev/shm");
    let writable = nix::unistd::access(
        shm,
        nix::unistd::AccessFlags::W_OK | nix::unistd::AccessFlags::X_OK,
    )
    .is_ok();
    if shm.is_dir() && writable {
        shm.to_owned()
    } else {
        std::env::temp_dir()
    }
}

/// Directories of this process that [`remove_registered`] removes.
static LIVE: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// `<prefix><pid>-`: the start of this process's directory names.
pub fn own_prefix(prefix: &str) -> String {
    format!("{prefix}{}-", std::process::id())
}

/// The process id in a directory name `<prefix><pid>-…`, if it has that shape.
pub fn owner_pid(name: &str, prefix: &str) -> Option<u32> {
    let (pid, _) = name.strip_prefix(prefix)?.split_once('-')?;
    pid.parse().ok().filter(|&p| p != 0)
}

fn process_is_alive(pid: u32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
}

/// Removes the directories `<prefix><pid>-…` in `base` that this user owns and whose process
/// no longer exists; returns how many it removed. Errors are skipped: another process may be
/// sweeping the same directory.
pub fn sweep_dead(base: &Path, prefix: &str) -> usize {
    let Ok(entries) = std::fs::read_dir(base) else {
        return 0;
    };
    // SAFETY: getuid has no preconditions and cannot fail.
    let uid = unsafe { libc::getuid() };
    let mut removed = 0;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(|n| owner_pid(n, prefix)) else {
            continue;
        };
        // Not through symlinks: only real directories this user made.
        let Ok(meta) = std::fs::symlink_metadata(entry.path()) else {
            continue;
        };
        let owned = std::os::unix::fs::MetadataExt::uid(&meta) == uid;
        if owned
            && meta.is_dir()
            && !process_is_alive(pid)
            && std::fs::remove_dir_all(entry.path()).is_ok()
        {
            removed += 1;
        }
    }
    removed
}

fn live() -> std::sync::MutexGuard<'static, Vec<PathBuf>> {
    LIVE.lock().unwrap_or_else(|e| e.into_inner())
}

/// Records `path` as a directory of this process, to remove if a signal ends it.
pub fn register(path: &Path) {
    live().push(path.to_owned());
}

/// Makes a directory with `create` (which may also fill it) and registers it as one step:
/// [`remove_registered`] waits for both, so a signal can neither find the directory made but
/// unregistered nor remove it while `create` is still writing into it.
pub fn create_registered<T>(
    create: impl FnOnce() -> std::io::Result<T>,
    path: impl Fn(&T) -> &Path,
) -> std::io::Result<T> {
    let mut live = live();
    let made = create()?;
    live.push(path(&made).to_owned());
    Ok(made)
}

/// Forgets `path` (its owner removes it).
pub fn unregister(path: &Path) {
    live().retain(|p| p != path);
}

/// Removes every registered directory (for a signal handler's thread, not for the handler
/// itself: it takes a lock and calls the file system); returns how many it removed.
pub fn remove_registered() -> usize {
    let paths = std::mem::take(&mut *live());
    paths
        .iter()
        .filter(|p| std::fs::remove_dir_all(p).is_ok())
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_carry_the_owner_pid() {
        assert_eq!(owner_pid("kfd-x-123-abc", "kfd-x-"), Some(123));
        assert_eq!(owner_pid("kfd-x-123", "kfd-x-"), None);
        assert_eq!(owner_pid("kfd-x-abc-1", "kfd-x-"), None);
        assert_eq!(owner_pid("kfd-y-123-abc", "kfd-x-"), None);
        assert_eq!(owner_pid("kfd-x-0-abc", "kfd-x-"), None);
        let own = own_prefix("kfd-x-");
        assert_eq!(
            owner_pid(&format!("{own}tail"), "kfd-x-"),
            Some(std::process::id())
        );
    }

    /// The pid of a process that has exited (and been reaped).
    fn dead_pid() -> u32 {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        pid
    }

    #[test]
    fn only_dead_processes_directories_are_swept() {
        let base = tempfile::tempdir().unwrap();
        let dead = base.path().join(format!("kfd-t-{}-aaa", dead_pid()));
        let alive = base.path().join(format!("{}bbb", own_prefix("kfd-t-")));
        let other = base.path().join(format!("other-{}-ccc", dead_pid()));
        for d in [&dead, &alive, &other] {
            std::fs::create_dir_all(d.join("sub")).unwrap();
        }
        assert_eq!(sweep_dead(base.path(), "kfd-t-"), 1);
        assert!(!dead.exists());
        assert!(alive.exists() && other.exists());
        assert_eq!(sweep_dead(base.path(), "kfd-t-"), 0);
    }

    #[test]
    fn registered_directories_are_removed_and_unregistered_ones_kept() {
        let base = tempfile::tempdir().unwrap();
        let (a, b) = (base.path().join("a"), base.path().join("b"));
        for d in [&a, &b] {
            std::fs::create_dir_all(d.join("x")).unwrap();
            register(d);
        }
        unregister(&b);
        let c = create_registered(
            || std::fs::create_dir(base.path().join("c")).map(|()| base.path().join("c")),
            |p| p.as_path(),
        )
        .unwrap();
        assert!(c.is_dir());
        // Other tests of this binary may register too: count only ours.
        remove_registered();
        assert!(!a.exists() && !c.exists());
        assert!(b.exists());
    }
}
