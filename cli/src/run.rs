//! `kfd run -- PROGRAM ARGS…`: runs an unmodified ROCm program (HIP, OpenCL, libhsakmt,
//! rocminfo) on the model. The program gets the LD_PRELOAD shim (`libkfd_preload.so`), which
//! answers its `/dev/kfd`, render nodes and sysfs from a model inside the program's process;
//! the shim appends the model's shader counters to a file at exit (`KFD_RUN_SUMMARY`), and
//! `kfd run` prints them on stderr. The program's exit status passes through (a signal `n`
//! becomes `128 + n`, as shells report it).

use std::ffi::OsString;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::Command;

use kfd_model::Preset;
use serde::{Deserialize, Serialize};

use crate::error::{CliError, CliResult};
use crate::output::{Style, Tone};

/// The shim's file name.
pub const SHIM_NAME: &str = "libkfd_preload.so";
/// Environment variable naming the shim explicitly.
pub const ENV_PRELOAD_LIB: &str = "KFD_PRELOAD_LIB";
/// Environment variable the shim appends its exit summary to (`kfd_preload::config`).
pub const ENV_RUN_SUMMARY: &str = "KFD_RUN_SUMMARY";

/// What `kfd run` was asked.
#[derive(Clone, Debug, clap::Args)]
pub struct RunArgs {
    /// GPU part to model: gfx900, gfx90a, gfx942, gfx1030 (default: KFD_MODEL_PRESET, else
    /// gfx900); `--model` as in the other commands.
    #[arg(long, visible_alias = "model", value_name = "PART", value_parser = parse_preset)]
    pub preset: Option<Preset>,
    /// Number of modelled GPUs, 1–64 (default: KFD_MODEL_GPUS, else 1).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub gpus: Option<u32>,
    /// Write the model's log, layer by layer (ioctls, queues, dispatches), to FILE
    /// (KFD_MODEL_LOG chooses the detail; default kfd=debug,hw=debug).
    #[arg(long, value_name = "FILE")]
    pub trace: Option<PathBuf>,
    /// Print the summary on stderr as one line of JSON.
    #[arg(long)]
    pub json: bool,
    /// Print no summary.
    #[arg(long, short, conflicts_with = "json")]
    pub quiet: bool,
    /// The program and its arguments (after `--`; an option of `kfd run` before it that it
    /// does not know is an error, not a program name).
    #[arg(required = true, trailing_var_arg = true, value_name = "PROGRAM")]
    pub command: Vec<OsString>,
}

fn parse_preset(s: &str) -> Result<Preset, String> {
    crate::device::parse_preset(s)
}

/// One process's line of the shim's summary file.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
pub struct ProcessSummary {
    /// Its pid.
    pub pid: u32,
    /// The modelled part.
    pub preset: String,
    /// Modelled GPUs.
    pub gpus: u32,
    /// Kernel dispatches.
    pub dispatches: u64,
    /// Workgroups launched.
    pub workgroups: u64,
    /// Waves launched.
    pub waves: u64,
    /// Instructions the waves executed.
    pub instructions: u64,
    /// Waves stopped by a fault, trap or illegal instruction.
    pub faults: u64,
}

/// What `kfd run --json` prints.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RunSummary {
    /// The program as given.
    pub program: String,
    /// Its exit status (`128 + n` for signal `n`).
    pub status: u8,
    /// The signal that ended it, if one did.
    pub signal: Option<i32>,
    /// Processes that used the model (one line each in the summary file).
    pub processes: usize,
    /// Totals over those processes.
    pub dispatches: u64,
    /// Workgroups launched.
    pub workgroups: u64,
    /// Waves launched.
    pub waves: u64,
    /// Instructions executed.
    pub instructions: u64,
    /// Wave faults.
    pub faults: u64,
}

/// Parses the summary file's lines (one JSON object each; a malformed line is an error).
pub fn parse_summaries(text: &str) -> CliResult<Vec<ProcessSummary>> {
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            serde_json::from_str(l).map_err(|e| {
                CliError::failure(format!("the shim's summary line {l:?} does not parse: {e}"))
            })
        })
        .collect()
}

/// Where the shim is: `KFD_PRELOAD_LIB` when set, else next to the `kfd` binary (the same
/// cargo profile directory first, then the other of `debug` and `release`).
pub fn find_shim(exe: Option<&Path>, env: Option<OsString>) -> CliResult<PathBuf> {
    if let Some(p) = env.filter(|p| !p.is_empty()) {
        let p = PathBuf::from(p);
        return if p.is_file() {
            Ok(p)
        } else {
            Err(CliError::usage(format!(
                "{ENV_PRELOAD_LIB}={} is not a file",
                p.display()
            )))
        };
    }
    let mut looked = Vec::new();
    if let Some(dir) = exe.and_then(Path::parent) {
        // target/<profile>/kfd, or target/<profile>/deps/… for a test binary.
        let profile_dir = if dir.ends_with("deps") {
            dir.parent().unwrap_or(dir)
        } else {
            dir
        };
        looked.push(profile_dir.join(SHIM_NAME));
        if let Some(target) = profile_dir.parent() {
            for profile in ["debug", "release"] {
                let p = target.join(profile).join(SHIM_NAME);
                if !looked.contains(&p) {
                    looked.push(p);
                }
            }
        }
    }
    if let Some(found) = looked.iter().find(|p| p.is_file()) {
        return Ok(found.clone());
    }
    let places: Vec<String> = looked.iter().map(|p| p.display().to_string()).collect();
    Err(CliError::failure(format!(
        "the LD_PRELOAD shim {SHIM_NAME} is not built (looked in {}): build it with \
         `cargo build -p kfd-preload` (add --release for a release kfd), or set {ENV_PRELOAD_LIB}",
        if places.is_empty() {
            "no place: the kfd binary's path is unknown".to_owned()
        } else {
            places.join(", ")
        }
    )))
}

/// The program's path: as given when it holds a `/`, else the first match on `PATH`.
pub fn resolve_program(program: &OsString, path_var: Option<OsString>) -> CliResult<PathBuf> {
    let name = Path::new(program);
    let shown = name.display();
    if program.is_empty() {
        return Err(CliError::usage("the program name is empty"));
    }
    let candidate = if program.as_encoded_bytes().contains(&b'/') {
        if !name.exists() {
            return Err(CliError::usage(format!("program '{shown}' does not exist")));
        }
        name.to_path_buf()
    } else {
        let dirs = path_var.unwrap_or_default();
        std::env::split_paths(&dirs)
            .map(|d| d.join(name))
            .find(|p| p.is_file() && is_executable(p))
            .ok_or_else(|| CliError::usage(format!("program '{shown}' is not on PATH")))?
    };
    if candidate.is_dir() {
        return Err(CliError::usage(format!("'{shown}' is a directory")));
    }
    if !is_executable(&candidate) {
        return Err(CliError::usage(format!("'{shown}' is not executable")));
    }
    Ok(candidate)
}

fn is_executable(p: &Path) -> bool {
    std::fs::metadata(p).is_ok_and(|m| m.permissions().mode() & 0o111 != 0)
}

/// How the program is linked, as far as LD_PRELOAD is concerned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Linkage {
    /// An ELF program with an interpreter (`PT_INTERP`): the dynamic loader honours LD_PRELOAD.
    Dynamic,
    /// An ELF program without one: nothing loads the shim into it.
    Static,
    /// A script (`#!`): its interpreter is what runs.
    Script,
}

/// Reads the program's ELF header and program headers.
pub fn linkage(bytes: &[u8]) -> Result<Linkage, String> {
    use object::elf::{FileHeader64, PT_INTERP};
    use object::read::elf::{FileHeader, ProgramHeader};
    use object::Endianness;
    if bytes.starts_with(b"#!") {
        return Ok(Linkage::Script);
    }
    if !bytes.starts_with(&object::elf::ELFMAG) {
        return Err("not an ELF program or a script".into());
    }
    let header = FileHeader64::<Endianness>::parse(bytes)
        .map_err(|e| format!("not a 64-bit ELF program ({e})"))?;
    let endian = header
        .endian()
        .map_err(|e| format!("bad ELF header ({e})"))?;
    let headers = header
        .program_headers(endian, bytes)
        .map_err(|e| format!("bad ELF program headers ({e})"))?;
    if headers.iter().any(|h| h.p_type(endian) == PT_INTERP) {
        Ok(Linkage::Dynamic)
    } else {
        Ok(Linkage::Static)
    }
}

/// Runs `kfd run`; the result is the exit status to end with.
pub fn run(args: &RunArgs, style: Style) -> CliResult<u8> {
    let Some(program) = args.command.first() else {
        return Err(CliError::usage(
            "no program given (kfd run -- PROGRAM ARGS…)",
        ));
    };
    let path = resolve_program(program, std::env::var_os("PATH"))?;
    let shown = Path::new(program).display().to_string();
    // The first 64 KiB hold the ELF and program headers of any ordinary program.
    let head = read_head(&path, 64 << 10)
        .map_err(|e| CliError::usage(format!("cannot read '{shown}': {e}")))?;
    match linkage(&head) {
        Ok(Linkage::Dynamic | Linkage::Script) => {}
        Ok(Linkage::Static) => {
            return Err(CliError::usage(format!(
                "'{shown}' is statically linked: LD_PRELOAD cannot load the shim into it \
                 (kfd run needs a dynamically linked program)"
            )))
        }
        Err(why) => return Err(CliError::usage(format!("'{shown}': {why}"))),
    }
    let preset = args.preset.or_else(|| {
        std::env::var("KFD_MODEL_PRESET")
            .ok()
            .and_then(|p| crate::device::parse_preset(&p).ok())
    });
    if let Some(p) = preset {
        check_rocr_knows(p, &rocr_search_path())?;
    }
    let exe = std::env::current_exe().ok();
    let shim = find_shim(exe.as_deref(), std::env::var_os(ENV_PRELOAD_LIB))?;
    let shim = shim.canonicalize().unwrap_or(shim);

    let summary_path = summary_file()?;
    let mut cmd = Command::new(&path);
    cmd.arg0(program).args(&args.command[1..]);
    let mut preload = shim.into_os_string();
    if let Some(old) = std::env::var_os("LD_PRELOAD").filter(|o| !o.is_empty()) {
        preload.push(":");
        preload.push(old);
    }
    cmd.env("LD_PRELOAD", preload)
        .env(ENV_RUN_SUMMARY, &summary_path);
    if let Some(p) = args.preset {
        cmd.env("KFD_MODEL_PRESET", p.name());
    }
    if let Some(g) = args.gpus {
        cmd.env("KFD_MODEL_GPUS", g.to_string());
    }
    if let Some(trace) = &args.trace {
        cmd.env("KFD_MODEL_LOG_FILE", trace);
        if std::env::var_os("KFD_MODEL_LOG").is_none_or(|v| v.is_empty()) {
            cmd.env("KFD_MODEL_LOG", "kfd=debug,hw=debug");
        }
    }
    // SIGINT, SIGTERM and SIGHUP sent to `kfd` go to the program while it runs, and `kfd`
    // waits for it (`crate::signals`). `kfd` keeps them blocked in every thread and a program
    // inherits the mask: the program takes them again between fork and exec.
    let mut handled = nix::sys::signal::SigSet::empty();
    for signal in crate::signals::HANDLED {
        handled.add(signal);
    }
    #[allow(unsafe_code)]
    // SAFETY: the closure runs in the forked child before exec and calls only sigprocmask,
    // which is async-signal-safe; it allocates nothing and touches no lock (`handled` was
    // built before the fork and is copied in).
    unsafe {
        cmd.pre_exec(move || {
            nix::sys::signal::sigprocmask(
                nix::sys::signal::SigmaskHow::SIG_UNBLOCK,
                Some(&handled),
                None,
            )
            .map_err(std::io::Error::from)
        });
    }
    let forwarding = crate::signals::Forwarding::begin();
    let status = cmd.spawn().and_then(|mut child| {
        forwarding.started(child.id());
        child.wait()
    });
    drop(forwarding);
    let text = std::fs::read_to_string(&summary_path).unwrap_or_default();
    let _ = std::fs::remove_file(&summary_path);
    let status = status.map_err(|e| CliError::failure(format!("cannot start '{shown}': {e}")))?;
    let (code, signal) = match (status.code(), status.signal()) {
        (Some(c), _) => (c as u8, None),
        (None, Some(s)) => ((128 + s) as u8, Some(s)),
        (None, None) => (1, None),
    };
    let processes = parse_summaries(&text)?;
    let total = |f: fn(&ProcessSummary) -> u64| processes.iter().map(f).sum::<u64>();
    let summary = RunSummary {
        program: shown,
        status: code,
        signal,
        processes: processes.len(),
        dispatches: total(|p| p.dispatches),
        workgroups: total(|p| p.workgroups),
        waves: total(|p| p.waves),
        instructions: total(|p| p.instructions),
        faults: total(|p| p.faults),
    };
    if args.json {
        let line = serde_json::to_string(&summary)
            .map_err(|e| CliError::failure(format!("cannot format the summary: {e}")))?;
        eprintln!("{line}");
    } else if !args.quiet {
        for line in summary_lines(&summary, &processes, args, style) {
            eprintln!("{line}");
        }
    }
    Ok(code)
}

/// The text summary.
pub fn summary_lines(
    s: &RunSummary,
    processes: &[ProcessSummary],
    args: &RunArgs,
    style: Style,
) -> Vec<String> {
    let how = match s.signal {
        Some(sig) => format!("was killed by signal {sig} (status {})", s.status),
        None => format!("exited with status {}", s.status),
    };
    let on = match processes.first() {
        Some(p) => format!("{} × {}", p.gpus, p.preset),
        None => {
            let preset = args
                .preset
                .map(|p| p.name().to_owned())
                .or_else(|| std::env::var("KFD_MODEL_PRESET").ok())
                .unwrap_or_else(|| "gfx900".into());
            format!("{} × {preset}", args.gpus.unwrap_or(1))
        }
    };
    let mut lines = vec![style.paint(
        Tone::Bold,
        &format!("kfd run: {} {how}, on the model ({on})", s.program),
    )];
    if processes.is_empty() {
        lines.push(if s.signal.is_some() {
            "  no summary: the program ended without running its exit handlers".to_owned()
        } else {
            "  the program never opened /dev/kfd: no GPU work".to_owned()
        });
    } else {
        let faults = format!("{} faults", s.faults);
        lines.push(format!(
            "  {} dispatches · {} workgroups · {} waves · {} instructions · {}",
            s.dispatches,
            s.workgroups,
            s.waves,
            s.instructions,
            if s.faults > 0 {
                style.paint(Tone::Error, &faults)
            } else {
                faults
            }
        ));
        if processes.len() > 1 {
            lines.push(format!("  over {} processes", processes.len()));
        }
    }
    if let Some(t) = &args.trace {
        lines.push(format!("  model log written to {}", t.display()));
    }
    lines
}

/// ROCr's library name (what HIP and rocminfo load).
const ROCR_LIBRARY: &str = "libhsa-runtime64.so.1";

/// Where the dynamic loader looks for ROCr, in its order as far as `kfd run` can tell:
/// `LD_LIBRARY_PATH`, then ROCm's own prefix, then Debian's multiarch directory.
pub fn rocr_search_path() -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::env::var_os("LD_LIBRARY_PATH")
        .map(|v| std::env::split_paths(&v).collect())
        .unwrap_or_default();
    dirs.extend(
        [
            "/opt/rocm/lib",
            "/usr/lib/x86_64-linux-gnu",
            "/usr/lib64",
            "/usr/lib",
        ]
        .into_iter()
        .map(PathBuf::from),
    );
    dirs
}

/// The minor version of the ROCr library `libhsa-runtime64.so.1.MINOR.PATCH` the first of
/// `dirs` holds, and its path.
pub fn installed_rocr(dirs: &[PathBuf]) -> Option<(PathBuf, u32)> {
    dirs.iter().find_map(|d| {
        let link = d.join(ROCR_LIBRARY);
        let real = std::fs::canonicalize(&link).ok()?;
        let name = real.file_name()?.to_str()?;
        let minor = name
            .strip_prefix(ROCR_LIBRARY)?
            .strip_prefix('.')?
            .split('.')
            .next()?
            .parse()
            .ok()?;
        Some((link, minor))
    })
}

/// ROCr's first release that knows gfx942 (GC 9.4.3): ROCm 5.7's `libhsa-runtime64.so.1.11`.
const ROCR_MINOR_FOR_GFX942: u32 = 11;

/// Refuses a preset the installed ROCr cannot work with, before the program starts: ROCm 5.2
/// (Debian 12's ROCr 1.5) does not know gfx942 and HIP programs crash inside it after its
/// 'unrecognized id' message.
pub fn check_rocr_knows(preset: Preset, dirs: &[PathBuf]) -> CliResult<()> {
    if preset != Preset::Gfx942 {
        return Ok(());
    }
    match installed_rocr(dirs) {
        Some((path, minor)) if minor < ROCR_MINOR_FOR_GFX942 => Err(CliError::usage(format!(
            "the gfx942 preset needs ROCm 5.7 or later (ROCr {ROCR_LIBRARY}.{ROCR_MINOR_FOR_GFX942}); \
             the ROCr here, {} (1.{minor}; Debian 12 ships ROCm 5.2's 1.5), does not know gfx942 \
             (GC 9.4.3): rocminfo reports an unrecognized id and HIP programs crash. Use \
             --preset gfx90a, or point LD_LIBRARY_PATH at a newer ROCm",
            path.display()
        ))),
        _ => Ok(()),
    }
}

fn read_head(path: &Path, max: u64) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    let mut bytes = Vec::new();
    std::fs::File::open(path)?
        .take(max)
        .read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// A new, empty file for the shim's summary lines.
fn summary_file() -> CliResult<PathBuf> {
    let dir = std::env::temp_dir();
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    for n in 0..100u32 {
        let p = dir.join(format!("kfd-run-{}-{stamp}-{n}.jsonl", std::process::id()));
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&p)
        {
            Ok(_) => return Ok(p),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => {
                return Err(CliError::failure(format!(
                    "cannot create a summary file in {}: {e}",
                    dir.display()
                )))
            }
        }
    }
    Err(CliError::failure(format!(
        "cannot create a summary file in {}",
        dir.display()
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_lines_parse_and_a_bad_line_is_an_error() {
        let text = "{\"pid\":7,\"preset\":\"gfx90a\",\"gpus\":2,\"dispatches\":1,\"workgroups\":2,\"waves\":3,\"instructions\":4,\"faults\":5}\n\n";
        let p = parse_summaries(text).unwrap();
        assert_eq!(
            p,
            [ProcessSummary {
                pid: 7,
                preset: "gfx90a".into(),
                gpus: 2,
                dispatches: 1,
                workgroups: 2,
                waves: 3,
                instructions: 4,
                faults: 5
            }]
        );
        assert!(parse_summaries("{\"pid\":1}").is_err());
    }

    #[test]
    fn gfx942_needs_a_rocr_that_knows_it() {
        let dir = std::env::temp_dir().join(format!("kfd-run-rocr-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let real = dir.join("libhsa-runtime64.so.1.5.0");
        std::fs::write(&real, b"").unwrap();
        let _ = std::fs::remove_file(dir.join(ROCR_LIBRARY));
        std::os::unix::fs::symlink(&real, dir.join(ROCR_LIBRARY)).unwrap();
        let dirs = [dir.clone()];
        assert_eq!(installed_rocr(&dirs).map(|(_, m)| m), Some(5));
        let e = check_rocr_knows(Preset::Gfx942, &dirs).unwrap_err();
        assert!(e.message.contains("needs ROCm 5.7 or later"), "{e}");
        assert!(check_rocr_knows(Preset::Gfx90a, &dirs).is_ok());
        // ROCm 6.0's 1.12 knows it; no ROCr found at all is not kfd run's to judge.
        std::fs::remove_file(dir.join(ROCR_LIBRARY)).unwrap();
        let newer = dir.join("libhsa-runtime64.so.1.12.0");
        std::fs::write(&newer, b"").unwrap();
        std::os::unix::fs::symlink(&newer, dir.join(ROCR_LIBRARY)).unwrap();
        assert!(check_rocr_knows(Preset::Gfx942, &dirs).is_ok());
        assert!(check_rocr_knows(Preset::Gfx942, &[dir.join("none")]).is_ok());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn linkage_reads_pt_interp() {
        // This test binary is dynamically linked (cargo's default on Linux).
        let me = std::fs::read(std::env::current_exe().unwrap()).unwrap();
        assert_eq!(linkage(&me), Ok(Linkage::Dynamic));
        assert_eq!(linkage(b"#!/bin/sh\n"), Ok(Linkage::Script));
        assert!(linkage(b"hello").is_err());
        assert!(linkage(b"\x7fELF\x02\x01").is_err(), "truncated header");
    }

    #[test]
    fn the_shim_is_looked_for_beside_the_binary_then_in_the_other_profile() {
        let dir = std::env::temp_dir().join(format!("kfd-run-shim-{}", std::process::id()));
        let debug = dir.join("target/debug");
        let release = dir.join("target/release");
        std::fs::create_dir_all(&debug).unwrap();
        std::fs::create_dir_all(&release).unwrap();
        let exe = release.join("kfd");
        let e = find_shim(Some(&exe), None).unwrap_err();
        assert!(e.message.contains("cargo build -p kfd-preload"), "{e}");
        std::fs::write(debug.join(SHIM_NAME), b"").unwrap();
        assert_eq!(find_shim(Some(&exe), None).unwrap(), debug.join(SHIM_NAME));
        std::fs::write(release.join(SHIM_NAME), b"").unwrap();
        assert_eq!(
            find_shim(Some(&exe), None).unwrap(),
            release.join(SHIM_NAME)
        );
        let explicit = debug.join(SHIM_NAME).into_os_string();
        assert_eq!(
            find_shim(Some(&exe), Some(explicit)).unwrap(),
            debug.join(SHIM_NAME)
        );
        assert!(find_shim(Some(&exe), Some("/nonexistent/x.so".into())).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
