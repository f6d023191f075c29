//! What the workspace's tests share.
//!
//! **One policy for a missing tool.** Many tests compare against, or build their inputs with,
//! tools outside the workspace: LLVM 15 (`clang-15`, `ld.lld-15`, `llvm-mc-15`,
//! `llvm-objdump-15`, …), `hipcc`, `gcc`. `make test` installs them (`scripts/ensure-deps.sh`),
//! so a missing tool is a failure there — and everywhere else too, by default, with a message
//! that says how to install it: a test that quietly skips what it was written to check looks
//! the same as one that passed. A developer who knows a tool is missing and wants the rest of
//! the suite can set `KFD_SKIP_MISSING_TOOLS=1`: tests that can do without the tool then skip
//! with a message, and tests that cannot still fail with it. `make test` clears that variable.
//!
//! **One function per tool job.** The commands that build test inputs with those tools live in
//! [`build`] (re-exported here): [`opencl_to_code_object`], [`opencl_to_object`],
//! [`link_shared`], [`assemble`], [`assemble_object`]. They use [`require`] and, when the tool fails, panic with its
//! stderr.
#![forbid(unsafe_code)]

pub mod build;
pub use build::{
    assemble, assemble_object, link_shared, opencl_to_code_object, opencl_to_object, INCLUDE_DIR,
};

use std::path::{Path, PathBuf};

/// The environment variable that lets tests skip what needs a missing tool.
pub const SKIP_MISSING_TOOLS_ENV: &str = "KFD_SKIP_MISSING_TOOLS";

/// Whether [`SKIP_MISSING_TOOLS_ENV`] asks to skip (`1`, `yes`, `true`, `on`).
pub fn skipping_allowed() -> bool {
    skipping_allowed_by(std::env::var(SKIP_MISSING_TOOLS_ENV).ok().as_deref())
}

fn skipping_allowed_by(value: Option<&str>) -> bool {
    value.is_some_and(|v| {
        matches!(
            v.trim().to_ascii_lowercase().as_str(),
            "1" | "yes" | "true" | "on"
        )
    })
}

/// Where `name` is found: a path as given if it names a file, else the first directory of
/// `PATH` that holds an executable file of that name.
pub fn find(name: &str) -> Option<PathBuf> {
    find_in(name, std::env::var_os("PATH").as_deref())
}

fn find_in(name: &str, path: Option<&std::ffi::OsStr>) -> Option<PathBuf> {
    if name.contains('/') {
        return is_executable(Path::new(name)).then(|| PathBuf::from(name));
    }
    std::env::split_paths(path?)
        .map(|dir| dir.join(name))
        .find(|p| is_executable(p))
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    p.metadata()
        .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// What to say about a missing tool.
fn missing_message(names: &[&str]) -> String {
    format!(
        "{} not installed: `make deps` (scripts/ensure-deps.sh) installs it; set \
         {SKIP_MISSING_TOOLS_ENV}=1 to skip the tests that can do without",
        names.join(", ")
    )
}

/// The path of tool `name`. Missing, it is a test failure (a panic naming the tool and how to
/// install it), unless [`skipping_allowed`]: then it prints `SKIP: …` and returns `None`, and
/// the caller skips what needed the tool.
pub fn tool(name: &str) -> Option<PathBuf> {
    tools(&[name]).map(|mut v| v.remove(0))
}

/// [`tool`] for several tools at once: all of them, or (skipping allowed) `None` after one
/// message naming every missing one.
pub fn tools(names: &[&str]) -> Option<Vec<PathBuf>> {
    let found: Vec<Option<PathBuf>> = names.iter().map(|n| find(n)).collect();
    let missing: Vec<&str> = names
        .iter()
        .zip(&found)
        .filter(|(_, f)| f.is_none())
        .map(|(n, _)| *n)
        .collect();
    if missing.is_empty() {
        return Some(found.into_iter().flatten().collect());
    }
    let message = missing_message(&missing);
    if skipping_allowed() {
        eprintln!("SKIP: {message}");
        None
    } else {
        panic!("{message}");
    }
}

/// `path`, a file that Debian's `package` installs (a header, a library), under the same
/// policy as [`tool`]: missing, a failure, or with skipping allowed `None` after a message.
pub fn installed_file(path: &str, package: &str) -> Option<PathBuf> {
    if Path::new(path).exists() {
        return Some(PathBuf::from(path));
    }
    let message = missing_message(&[&format!("{path} (Debian's {package})")]);
    if skipping_allowed() {
        eprintln!("SKIP: {message}");
        None
    } else {
        panic!("{message}");
    }
}

/// The path of tool `name`, for a test that cannot do without it: missing, it is a failure
/// whatever [`SKIP_MISSING_TOOLS_ENV`] says.
pub fn require(name: &str) -> PathBuf {
    find(name).unwrap_or_else(|| panic!("{}", missing_message(&[name])))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skipping_needs_an_explicit_yes() {
        for yes in ["1", "yes", "TRUE", " on "] {
            assert!(skipping_allowed_by(Some(yes)), "{yes:?}");
        }
        for no in ["0", "", "no", "off", "maybe"] {
            assert!(!skipping_allowed_by(Some(no)), "{no:?}");
        }
        assert!(!skipping_allowed_by(None));
    }

    #[test]
    fn tools_are_found_on_the_given_path_only_when_executable() {
        let dir = std::env::temp_dir().join(format!("kfd-testkit-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let exe = dir.join("some-tool");
        let plain = dir.join("not-a-tool");
        std::fs::write(&exe, "#!/bin/sh\n").unwrap();
        std::fs::write(&plain, "").unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::set_permissions(&plain, std::fs::Permissions::from_mode(0o644)).unwrap();
        let path = std::env::join_paths(["/nonexistent".as_ref(), dir.as_path()]).unwrap();
        assert_eq!(find_in("some-tool", Some(&path)), Some(exe.clone()));
        assert_eq!(find_in("not-a-tool", Some(&path)), None);
        assert_eq!(find_in("absent", Some(&path)), None);
        assert_eq!(find_in("some-tool", None), None);
        assert_eq!(find_in(exe.to_str().unwrap(), None), Some(exe.clone()));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_message_says_how_to_install_and_how_to_skip() {
        let m = missing_message(&["clang-15", "ld.lld-15"]);
        assert!(m.starts_with("clang-15, ld.lld-15 not installed"), "{m}");
        assert!(
            m.contains("make deps") && m.contains(SKIP_MISSING_TOOLS_ENV),
            "{m}"
        );
    }
}
