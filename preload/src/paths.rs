//! Which paths the shim answers and where it sends them.
//!
//! Everything here works on the raw bytes of a C path (without its NUL) and never allocates:
//! it runs inside hooked `open`/`stat`/`access` calls of arbitrary programs.

/// `/dev/kfd`.
pub const DEV_KFD: &[u8] = b"/dev/kfd";
/// `/proc/modules`.
pub const PROC_MODULES: &[u8] = b"/proc/modules";
/// The directory of DRM device nodes.
pub const DEV_DRI: &[u8] = b"/dev/dri";
/// The render node name prefix inside [`DEV_DRI`] and `/sys/class/drm`.
pub const RENDER_PREFIX: &[u8] = b"renderD";
/// The DRM character-device major number.
pub const DRM_MAJOR: u32 = 226;

/// Where the redirected sysfs and `/dev/dri` paths land inside the shim's tree, by prefix.
/// The redirected path is `<tree root>` + `tree_prefix` + the rest after `prefix`.
const REDIRECTS: &[(&[u8], &[u8])] = &[
    (
        b"/sys/devices/virtual/kfd/kfd/topology",
        b"/sys/devices/virtual/kfd/kfd/topology",
    ),
    (
        b"/sys/class/kfd/kfd/topology",
        b"/sys/devices/virtual/kfd/kfd/topology",
    ),
    (b"/sys/module/amdgpu", b"/sys/module/amdgpu"),
    // The DRM class as a whole (card<N>, renderD<minor>): rocm-smi lists it to find the GPUs.
    (b"/sys/class/drm", b"/sys/class/drm"),
];

/// What a path is to the shim.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PathClass<'a> {
    /// `/dev/kfd`: answered by the model.
    Kfd,
    /// `/dev/dri/renderD<minor>` of a modelled GPU.
    RenderNode(u32),
    /// A path served from the shim's tree: `tree root` + `prefix` + `rest`.
    Redirect {
        /// Where inside the tree.
        prefix: &'static [u8],
        /// The part of the original path after the matched prefix (empty or starting `/`),
        /// or the whole tail for the per-minor DRM paths.
        rest: &'a [u8],
    },
    /// `/proc/modules`: the real list plus an `amdgpu` line.
    ProcModules,
    /// A descriptor's link in procfs (`/proc/self/fd/N`, `/proc/<pid>/fd/N`,
    /// `/proc/<pid>/task/<tid>/fd/N`, `/proc/thread-self/fd/N`, `/dev/fd/N`): opening it opens
    /// what the descriptor names anew, which for a device the shim stands for is a new open of
    /// that device (see [`device_behind_link`]).
    FdLink,
    /// Anything else: straight to libc.
    Other,
}

impl PathClass<'_> {
    /// Whether the shim handles this path (anything but [`PathClass::Other`]).
    pub fn is_ours(&self) -> bool {
        !matches!(self, PathClass::Other)
    }

    /// Whether answering it needs the shim's tree on disk.
    pub fn needs_tree(&self) -> bool {
        matches!(self, PathClass::Redirect { .. })
    }
}

/// `path` without `prefix` when `prefix` is a whole leading component sequence of it.
fn strip_dir_prefix<'a>(path: &'a [u8], prefix: &[u8]) -> Option<&'a [u8]> {
    let rest = path.strip_prefix(prefix)?;
    (rest.is_empty() || rest[0] == b'/').then_some(rest)
}

/// The minor of `renderD<minor>` at the start of `name` (up to the next `/`), if it is one of
/// the modelled ones, and what follows it.
fn render_minor(name: &[u8], gpus: u32) -> Option<(u32, &[u8])> {
    let digits_and_rest = name.strip_prefix(RENDER_PREFIX)?;
    let end = digits_and_rest
        .iter()
        .position(|&b| b == b'/')
        .unwrap_or(digits_and_rest.len());
    let (digits, rest) = digits_and_rest.split_at(end);
    let minor = parse_decimal(digits)?;
    is_modelled_minor(minor, gpus).then_some((minor, rest))
}

/// Whether `minor` is a render minor of one of `gpus` modelled GPUs (128, 129, …).
pub fn is_modelled_minor(minor: u32, gpus: u32) -> bool {
    minor >= 128 && minor - 128 < gpus
}

/// A plain decimal number without sign or leading zeros (as the kernel names nodes).
pub fn parse_decimal(digits: &[u8]) -> Option<u32> {
    if digits.is_empty() || digits.len() > 9 || (digits.len() > 1 && digits[0] == b'0') {
        return None;
    }
    digits.iter().try_fold(0u32, |acc, &b| {
        b.is_ascii_digit().then(|| acc * 10 + u32::from(b - b'0'))
    })
}

/// Classifies an absolute path for a model of `gpus` GPUs.
pub fn classify(path: &[u8], gpus: u32) -> PathClass<'_> {
    // Fast exit for everything the shim never answers.
    if !(path.starts_with(b"/dev/") || path.starts_with(b"/sys/") || path.starts_with(b"/proc/")) {
        return PathClass::Other;
    }
    if path == DEV_KFD {
        return PathClass::Kfd;
    }
    if is_fd_link(path) {
        return PathClass::FdLink;
    }
    if path == PROC_MODULES {
        return PathClass::ProcModules;
    }
    if let Some(rest) = strip_dir_prefix(path, DEV_DRI) {
        if let Some((minor, tail)) = rest
            .strip_prefix(b"/")
            .and_then(|name| render_minor(name, gpus))
        {
            if tail.is_empty() {
                return PathClass::RenderNode(minor);
            }
        }
        return PathClass::Redirect {
            prefix: DEV_DRI,
            rest,
        };
    }
    for &(prefix, tree_prefix) in REDIRECTS {
        if let Some(rest) = strip_dir_prefix(path, prefix) {
            return PathClass::Redirect {
                prefix: tree_prefix,
                rest,
            };
        }
    }
    if let Some(name) = path.strip_prefix(b"/sys/class/drm/") {
        if render_minor(name, gpus).is_some() {
            return PathClass::Redirect {
                prefix: b"/sys/class/drm/",
                rest: name,
            };
        }
    }
    if let Some(dev) = path.strip_prefix(b"/sys/dev/char/226:") {
        let end = dev.iter().position(|&b| b == b'/').unwrap_or(dev.len());
        if parse_decimal(&dev[..end]).is_some_and(|m| is_modelled_minor(m, gpus)) {
            return PathClass::Redirect {
                prefix: b"/sys/dev/char/226:",
                rest: dev,
            };
        }
    }
    PathClass::Other
}

/// `/proc/<self|thread-self|pid>[/task/<tid>]/fd/<n>` or `/dev/fd/<n>`.
pub fn is_fd_link(path: &[u8]) -> bool {
    let fd_number = |rest: &[u8]| {
        rest.strip_prefix(b"fd/")
            .is_some_and(|n| parse_decimal(n).is_some())
    };
    if let Some(n) = path.strip_prefix(b"/dev/fd/") {
        return parse_decimal(n).is_some();
    }
    let Some(rest) = path.strip_prefix(b"/proc/") else {
        return false;
    };
    let (who, rest) = rest.split_at(rest.iter().position(|&b| b == b'/').unwrap_or(rest.len()));
    let Some(rest) = rest.strip_prefix(b"/") else {
        return false;
    };
    let is_pid = |w: &[u8]| parse_decimal(w).is_some();
    match who {
        b"self" | b"thread-self" => fd_number(rest),
        w if is_pid(w) => {
            if let Some(task) = rest.strip_prefix(b"task/") {
                let end = task.iter().position(|&b| b == b'/').unwrap_or(task.len());
                is_pid(&task[..end]) && task.get(end + 1..).is_some_and(fd_number)
            } else {
                fd_number(rest)
            }
        }
        _ => false,
    }
}

/// The `memfd_create` name of the descriptor the shim hands out for `/dev/kfd`. The kernel
/// shows a memfd's name in its procfs link as `/memfd:<name> (deleted)`, so any process can
/// tell what a descriptor it inherited or received stands for.
pub const KFD_FILE_NAME: &[u8] = b"kfd-preload:kfd";
/// The `memfd_create` name prefix of a render node's descriptor; the minor follows.
pub const RENDER_FILE_PREFIX: &[u8] = b"kfd-preload:renderD";

/// The device a descriptor stands for, from the target of its procfs link
/// (`/memfd:kfd-preload:kfd (deleted)`): [`PathClass::Kfd`], [`PathClass::RenderNode`] of a
/// modelled minor, or [`PathClass::Other`] for anything else.
pub fn device_behind_link(target: &[u8], gpus: u32) -> PathClass<'static> {
    let Some(name) = target
        .strip_prefix(b"/memfd:")
        .map(|n| n.strip_suffix(b" (deleted)").unwrap_or(n))
    else {
        return PathClass::Other;
    };
    if name == KFD_FILE_NAME {
        return PathClass::Kfd;
    }
    match name
        .strip_prefix(RENDER_FILE_PREFIX)
        .and_then(parse_decimal)
    {
        Some(minor) if is_modelled_minor(minor, gpus) => PathClass::RenderNode(minor),
        _ => PathClass::Other,
    }
}

/// Writes `root` + `prefix` + `rest` + NUL into `buf`; `None` if it does not fit.
pub fn redirect_into<'b>(
    buf: &'b mut [u8],
    root: &[u8],
    prefix: &[u8],
    rest: &[u8],
) -> Option<&'b [u8]> {
    let len = root.len() + prefix.len() + rest.len();
    if len >= buf.len() {
        return None;
    }
    let mut at = 0;
    for part in [root, prefix, rest] {
        buf.get_mut(at..at + part.len())?.copy_from_slice(part);
        at += part.len();
    }
    *buf.get_mut(at)? = 0;
    buf.get(..=at)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn device_nodes() {
        assert_eq!(classify(b"/dev/kfd", 1), PathClass::Kfd);
        assert_eq!(classify(b"/dev/kfd/", 1), PathClass::Other);
        assert_eq!(classify(b"/dev/kfdx", 1), PathClass::Other);
        assert_eq!(
            classify(b"/dev/dri/renderD128", 1),
            PathClass::RenderNode(128)
        );
        assert_eq!(
            classify(b"/dev/dri/renderD131", 4),
            PathClass::RenderNode(131)
        );
        // Not modelled: served from the tree, where it does not exist (ENOENT).
        for p in [
            &b"/dev/dri/renderD129"[..],
            b"/dev/dri/renderD0128",
            b"/dev/dri/card0",
        ] {
            assert!(
                matches!(
                    classify(p, 1),
                    PathClass::Redirect {
                        prefix: DEV_DRI,
                        ..
                    }
                ),
                "{}",
                String::from_utf8_lossy(p)
            );
        }
        assert_eq!(
            classify(b"/dev/dri", 1),
            PathClass::Redirect {
                prefix: DEV_DRI,
                rest: b""
            }
        );
        assert_eq!(classify(b"/dev/drix", 1), PathClass::Other);
        assert_eq!(classify(b"/dev/null", 1), PathClass::Other);
        assert_eq!(classify(b"/proc/modules", 1), PathClass::ProcModules);
        assert_eq!(classify(b"/proc/modulesx", 1), PathClass::Other);
    }

    #[test]
    fn descriptor_links() {
        for p in [
            &b"/proc/self/fd/3"[..],
            b"/proc/thread-self/fd/17",
            b"/proc/1234/fd/0",
            b"/proc/1234/task/1240/fd/9",
            b"/dev/fd/5",
        ] {
            assert_eq!(
                classify(p, 1),
                PathClass::FdLink,
                "{}",
                String::from_utf8_lossy(p)
            );
        }
        for p in [
            &b"/proc/self/fd"[..],
            b"/proc/self/fd/",
            b"/proc/self/fd/03",
            b"/proc/self/fdinfo/3",
            b"/proc/x/fd/3",
            b"/proc/1234/task/fd/3",
            b"/proc/1234/task/12/fd/3/x",
            b"/dev/fd",
            b"/dev/fd/x",
        ] {
            assert_ne!(
                classify(p, 1),
                PathClass::FdLink,
                "{}",
                String::from_utf8_lossy(p)
            );
        }
    }

    #[test]
    fn devices_behind_descriptor_links() {
        assert_eq!(
            device_behind_link(b"/memfd:kfd-preload:kfd (deleted)", 1),
            PathClass::Kfd
        );
        assert_eq!(
            device_behind_link(b"/memfd:kfd-preload:renderD129 (deleted)", 2),
            PathClass::RenderNode(129)
        );
        for other in [
            &b"/memfd:kfd-preload:renderD129 (deleted)"[..],
            b"/memfd:kfd-preload:renderD12 (deleted)",
            b"/memfd:other (deleted)",
            b"/dev/kfd",
            b"socket:[1234]",
            b"",
        ] {
            assert_eq!(
                device_behind_link(other, 1),
                PathClass::Other,
                "{}",
                String::from_utf8_lossy(other)
            );
        }
    }

    #[test]
    fn sysfs_trees() {
        let topo = b"/sys/devices/virtual/kfd/kfd/topology";
        assert_eq!(
            classify(
                b"/sys/devices/virtual/kfd/kfd/topology/nodes/1/properties",
                1
            ),
            PathClass::Redirect {
                prefix: topo,
                rest: b"/nodes/1/properties"
            }
        );
        assert_eq!(
            classify(b"/sys/class/kfd/kfd/topology", 1),
            PathClass::Redirect {
                prefix: topo,
                rest: b""
            }
        );
        assert_eq!(
            classify(b"/sys/class/kfd/kfd/topologyx", 1),
            PathClass::Other
        );
        assert_eq!(
            classify(b"/sys/module/amdgpu/parameters/cwsr_enable", 1),
            PathClass::Redirect {
                prefix: b"/sys/module/amdgpu",
                rest: b"/parameters/cwsr_enable"
            }
        );
        assert_eq!(classify(b"/sys/module/amdgpu_x", 1), PathClass::Other);
        // The whole DRM class is the model's (rocm-smi lists it); a GPU the model lacks is
        // absent from the tree (ENOENT).
        for (path, rest) in [
            (
                &b"/sys/class/drm/renderD128/device/vendor"[..],
                &b"/renderD128/device/vendor"[..],
            ),
            (b"/sys/class/drm/renderD129", b"/renderD129"),
            (b"/sys/class/drm/card0", b"/card0"),
            (b"/sys/class/drm", b""),
        ] {
            assert_eq!(
                classify(path, 1),
                PathClass::Redirect {
                    prefix: b"/sys/class/drm",
                    rest
                }
            );
        }
        assert_eq!(classify(b"/sys/class/drmx", 1), PathClass::Other);
        assert_eq!(
            classify(b"/sys/dev/char/226:129/device/drm", 2),
            PathClass::Redirect {
                prefix: b"/sys/dev/char/226:",
                rest: b"129/device/drm"
            }
        );
        assert_eq!(classify(b"/sys/dev/char/226:0", 2), PathClass::Other);
        assert_eq!(classify(b"/sys/dev/char/1:3", 2), PathClass::Other);
        assert_eq!(
            classify(b"/sys/devices/system/node/node0", 1),
            PathClass::Other
        );
        assert_eq!(classify(b"relative/dev/kfd", 1), PathClass::Other);
        assert!(classify(b"/sys/module/amdgpu", 1).needs_tree());
        assert!(!classify(b"/dev/kfd", 1).needs_tree());
        assert!(classify(b"/dev/kfd", 1).is_ours());
        assert!(!classify(b"/etc/passwd", 1).is_ours());
    }

    #[test]
    fn redirected_paths_are_nul_terminated_and_bounded() {
        let mut buf = [0xAAu8; 64];
        let p = redirect_into(&mut buf, b"/tmp/t", b"/sys/module/amdgpu", b"/parameters").unwrap();
        assert_eq!(p, b"/tmp/t/sys/module/amdgpu/parameters\0");
        let mut small = [0u8; 10];
        assert_eq!(
            redirect_into(&mut small, b"/tmp/t", b"/abc", b""),
            None,
            "no room for NUL"
        );
        assert_eq!(
            redirect_into(&mut small, b"/tmp/t", b"/ab", b""),
            Some(&b"/tmp/t/ab\0"[..])
        );
    }

    #[test]
    fn decimal_minors() {
        assert_eq!(parse_decimal(b"128"), Some(128));
        assert_eq!(parse_decimal(b"0"), Some(0));
        assert_eq!(parse_decimal(b"012"), None);
        assert_eq!(parse_decimal(b""), None);
        assert_eq!(parse_decimal(b"12a"), None);
        assert_eq!(parse_decimal(b"9999999999"), None, "no overflow");
        assert!(is_modelled_minor(191, 64));
        assert!(!is_modelled_minor(192, 64));
        assert!(!is_modelled_minor(127, 64));
    }

    proptest! {
        /// Arbitrary bytes never panic, and only paths under the three roots are claimed.
        #[test]
        fn any_path_classifies_without_panic(path in proptest::collection::vec(any::<u8>(), 0..80), gpus in 1u32..=64) {
            let c = classify(&path, gpus);
            if c.is_ours() {
                prop_assert!(path.starts_with(b"/dev/") || path.starts_with(b"/sys/") || path.starts_with(b"/proc/"));
            }
            let mut buf = [0u8; 96];
            if let PathClass::Redirect { prefix, rest } = c {
                if let Some(out) = redirect_into(&mut buf, b"/r", prefix, rest) {
                    prop_assert_eq!(out.last(), Some(&0));
                }
            }
        }

        #[test]
        fn render_nodes_round_trip(index in 0u32..64) {
            let minor = 128 + index;
            let p = format!("/dev/dri/renderD{minor}");
            prop_assert_eq!(classify(p.as_bytes(), index + 1), PathClass::RenderNode(minor));
            prop_assert_ne!(classify(p.as_bytes(), index), PathClass::RenderNode(minor));
        }
    }
}
