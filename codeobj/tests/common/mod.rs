//! Builds the test inputs from `tests/src/` once per test run, with Debian's clang-15, lld-15,
//! llvm-15 and hipcc; a missing tool is a failure, or a skip with a message where the
//! workspace's policy allows one (`kfd_testkit`; `make test` installs them through
//! scripts/ensure-deps.sh).

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// The compiled inputs.
pub struct Built {
    /// Keeps the directory alive for the whole run.
    _dir: tempfile::TempDir,
    pub dir: PathBuf,
    /// devlib.cl linked as a shared code object (gfx900).
    pub devlib: PathBuf,
    /// kernels.cl linked with its calls into devlib left undefined (gfx900).
    pub kernels: PathBuf,
    /// kernels.cl for gfx90a:xnack- (the wrong target for a gfx900 agent).
    pub kernels_gfx90a: PathBuf,
    /// kernels.cl as code object v3 and v5 (the others are v4, clang-15's default).
    pub kernels_v3: PathBuf,
    /// See `kernels_v3`.
    pub kernels_v5: PathBuf,
    /// kernels.cl compiled only (`ET_REL`).
    pub kernels_object: PathBuf,
    /// relocs.s assembled.
    pub relocs_object: PathBuf,
    /// program.hip for gfx900 and gfx90a:xnack-, if hipcc is installed.
    pub program: Option<PathBuf>,
    /// program.hip as a shared library for gfx900, if hipcc is installed.
    pub program_library: Option<PathBuf>,
}

/// Whether tool `name` is there (`kfd_testkit::tool`: missing, a failure unless skipping is
/// allowed).
pub fn tool(name: &str) -> bool {
    kfd_testkit::tool(name).is_some()
}

fn src(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/src")
        .join(name)
}

pub fn run(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("tool output is UTF-8")
}

fn clang_cl(source: &str, mcpu: &str, out: &Path) {
    clang_cl_version(source, mcpu, 4, out);
}

/// `kfd_testkit`'s OpenCL command with `-c`: a relocatable object at `out`.
fn clang_cl_version(source: &str, mcpu: &str, version: u32, out: &Path) {
    let version = format!("-mcode-object-version={version}");
    let extra = [version.as_str(), "-fvisibility=default"];
    let object = kfd_testkit::opencl_to_object(&src(source), mcpu, &extra);
    std::fs::write(out, object).expect("write object");
}

fn link_shared(input: &Path, out: &Path, allow_undefined: bool) {
    let extra: &[&str] = if allow_undefined {
        &["--allow-shlib-undefined"]
    } else {
        &[]
    };
    let object = std::fs::read(input).expect("read object");
    std::fs::write(out, kfd_testkit::link_shared(&object, extra)).expect("write code object");
}

static BUILT: OnceLock<Option<Built>> = OnceLock::new();

/// The inputs, or `None` (after printing why) when the LLVM tools are missing.
pub fn built() -> Option<&'static Built> {
    BUILT
        .get_or_init(|| {
            kfd_testkit::tools(&[
                "clang-15",
                "ld.lld-15",
                "llvm-readelf-15",
                "llvm-objdump-15",
                "llvm-nm-15",
                "llvm-mc-15",
            ])?;
            let dir = tempfile::tempdir().expect("temp dir");
            let p = |n: &str| dir.path().join(n);
            clang_cl("devlib.cl", "gfx900", &p("devlib.o"));
            link_shared(&p("devlib.o"), &p("devlib.co"), false);
            clang_cl("kernels.cl", "gfx900", &p("kernels.o"));
            link_shared(&p("kernels.o"), &p("kernels.co"), true);
            clang_cl("kernels.cl", "gfx90a:xnack-", &p("kernels-gfx90a.o"));
            link_shared(&p("kernels-gfx90a.o"), &p("kernels-gfx90a.co"), true);
            for version in [3, 5] {
                let object = p(&format!("kernels-v{version}.o"));
                clang_cl_version("kernels.cl", "gfx900", version, &object);
                link_shared(&object, &p(&format!("kernels-v{version}.co")), true);
            }
            let relocs = kfd_testkit::assemble_object(&src("relocs.s"), "gfx900");
            std::fs::write(p("relocs.o"), relocs).expect("write relocs.o");
            let program = if tool("hipcc") {
                run(Command::new("hipcc")
                    .args([
                        "--offload-arch=gfx900",
                        "--offload-arch=gfx90a:xnack-",
                        "-o",
                    ])
                    .arg(p("program"))
                    .arg(src("program.hip")));
                run(Command::new("hipcc")
                    .args(["-shared", "-fPIC", "--offload-arch=gfx900", "-o"])
                    .arg(p("libprogram.so"))
                    .arg(src("program.hip")));
                Some(p("program"))
            } else {
                None
            };
            Some(Built {
                dir: dir.path().to_path_buf(),
                devlib: p("devlib.co"),
                kernels: p("kernels.co"),
                kernels_gfx90a: p("kernels-gfx90a.co"),
                kernels_v3: p("kernels-v3.co"),
                kernels_v5: p("kernels-v5.co"),
                kernels_object: p("kernels.o"),
                relocs_object: p("relocs.o"),
                program_library: program.as_ref().map(|_| p("libprogram.so")),
                program,
                _dir: dir,
            })
        })
        .as_ref()
}

/// Reads a file the build produced.
pub fn read(path: &Path) -> Vec<u8> {
    std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}
