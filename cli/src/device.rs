//! Which GPU a subcommand runs on: the real `/dev/kfd` or the in-process model, chosen by
//! `--device`, `--model`/`--gpus`/`--kernel`, the thunk's environment variables
//! (`KFD_DEVICE`, `KFD_MODEL_PRESET`, `KFD_MODEL_GPUS`), or — with none of them — `/dev/kfd`
//! when it exists and a gfx900 model otherwise. Every subcommand that opens a device prints
//! the [`Source`] it got, so nobody mistakes the model's numbers for a GPU's.
//!
//! A model gets the faults of `KFD_MODEL_FAULTS` and of every `--fault SPEC`
//! ([`kfd_model::faults`]); a malformed one is a usage error that lists the accepted kinds.

use std::path::{Path, PathBuf};

use kfd_model::faults::FAULTS_ENV;
use kfd_model::{Fault, KernelVersion, ModelConfig, Preset};
use serde::Serialize;
use thunk::model_access::{KfdModelExt, OpenOptionsModelExt};
use thunk::{BackendKind, Kfd, OpenOptions};

use crate::error::{CliError, CliResult};

/// The model's kernel behaviour (`--kernel`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum KernelChoice {
    /// Linux 6.1 (Debian bookworm): KFD interface 1.11.
    #[value(name = "6.1")]
    Linux6_1,
    /// Linux 6.12: KFD interface 1.17, queue buffers checked against the GPU VM.
    #[default]
    #[value(name = "6.12")]
    Linux6_12,
}

impl KernelChoice {
    /// The model's kernel behaviour of this choice.
    pub fn version(self) -> KernelVersion {
        match self {
            KernelChoice::Linux6_1 => KernelVersion::Linux6_1,
            KernelChoice::Linux6_12 => KernelVersion::Linux6_12,
        }
    }
}

/// The most GPUs the model builds.
pub const MAX_MODEL_GPUS: u32 = 64;

/// Where to run: the options every device-using subcommand shares.
#[derive(Clone, Debug, Default, clap::Args)]
pub struct DeviceArgs {
    /// Run on the model of this GPU part: gfx900, gfx90a, gfx942 or gfx1030
    /// [default: /dev/kfd if it exists, else the model of a gfx900].
    #[arg(long, value_name = "PART", value_parser = parse_preset, conflicts_with = "device")]
    pub model: Option<Preset>,
    /// GPUs in the model (1 to 64).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=MAX_MODEL_GPUS as i64), conflicts_with = "device")]
    pub gpus: Option<u32>,
    /// Kernel whose behaviour the model follows.
    #[arg(long, value_enum, value_name = "VERSION", conflicts_with = "device")]
    pub kernel: Option<KernelChoice>,
    /// Open this KFD device file with real system calls (normally /dev/kfd).
    #[arg(long, value_name = "PATH")]
    pub device: Option<PathBuf>,
    /// Make the model misbehave on purpose: a fault such as hiq-full, scheduler-hang,
    /// slow-engine=100us or a comma-separated list (the KFD_MODEL_FAULTS syntax); repeatable.
    #[arg(long = "fault", value_name = "SPEC", value_parser = parse_faults, conflicts_with = "device")]
    pub faults: Vec<Vec<Fault>>,
}

/// `--fault` values: one fault or a comma-separated list.
pub fn parse_faults(s: &str) -> Result<Vec<Fault>, String> {
    let list = Fault::parse_list(s)?;
    if list.is_empty() {
        return Err("no fault named".into());
    }
    Ok(list)
}

/// The faults `KFD_MODEL_FAULTS` (read through `env`) and `--fault` name, in that order; a
/// malformed environment value is a usage error naming the variable and the accepted kinds.
pub fn model_faults(
    env: impl Fn(&str) -> Option<String>,
    flags: &[Vec<Fault>],
) -> CliResult<Vec<Fault>> {
    let mut faults = match env(FAULTS_ENV) {
        Some(spec) => Fault::parse_list(&spec)
            .map_err(|e| CliError::usage(format!("{FAULTS_ENV}={spec:?}: {e}")))?,
        None => Vec::new(),
    };
    faults.extend(flags.iter().flatten().copied());
    Ok(faults)
}

/// `--model` values.
pub fn parse_preset(s: &str) -> Result<Preset, String> {
    s.parse()
        .map_err(|e: kfd_sys::gpu::UnknownPreset| e.to_string())
}

/// What a subcommand opened, and why.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Source {
    /// `device` or `model`.
    pub kind: &'static str,
    /// `/dev/kfd`, or `model of 1 × gfx900 (Linux 6.12)`.
    pub description: String,
    /// What chose it (`--model`, `KFD_DEVICE`, `no /dev/kfd on this machine` …).
    pub reason: String,
}

impl Source {
    /// Whether this is the model.
    pub fn is_model(&self) -> bool {
        self.kind == "model"
    }

    /// One line: `the model of 1 × gfx900 (Linux 6.12) — no /dev/kfd on this machine`.
    pub fn line(&self) -> String {
        let what = if self.is_model() {
            format!("the {}", self.description)
        } else {
            format!("the GPU behind {}", self.description)
        };
        format!("{what} — {}", self.reason)
    }
}

/// What [`DeviceArgs`] resolve to before anything is opened.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Choice {
    /// A device file.
    Device {
        /// Its path.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// A new model.
    Model {
        /// Part.
        preset: Preset,
        /// GPUs.
        gpus: u32,
        /// Kernel behaviour.
        kernel: KernelChoice,
        /// Faults to inject (`KFD_MODEL_FAULTS`, `--fault`).
        faults: Vec<Fault>,
        /// Why.
        reason: String,
    },
}

impl DeviceArgs {
    /// The model of `preset`, as if `--model` had been given.
    pub fn model(preset: Preset) -> Self {
        DeviceArgs {
            model: Some(preset),
            ..Default::default()
        }
    }

    /// Decides what to open, reading the environment through `env` (`KFD_DEVICE`,
    /// `KFD_MODEL_PRESET`, `KFD_MODEL_GPUS`) and whether `/dev/kfd` exists through `exists`.
    pub fn choose(
        &self,
        env: impl Fn(&str) -> Option<String>,
        exists: impl Fn(&Path) -> bool,
    ) -> CliResult<Choice> {
        let set = |name: &str| env(name).filter(|v| !v.trim().is_empty());
        if let Some(path) = &self.device {
            return Ok(Choice::Device {
                path: path.clone(),
                reason: "--device".into(),
            });
        }
        let asked = self.model.is_some()
            || self.gpus.is_some()
            || self.kernel.is_some()
            || !self.faults.is_empty();
        if !asked {
            if let Some(path) = set("KFD_DEVICE") {
                return Ok(Choice::Device {
                    path: path.into(),
                    reason: "KFD_DEVICE".into(),
                });
            }
        }
        // Flags replace the environment as a whole: `--model gfx90a` is one GPU whatever
        // KFD_MODEL_GPUS says.
        let (env_preset, env_gpus) = if asked {
            (None, None)
        } else {
            (set("KFD_MODEL_PRESET"), set("KFD_MODEL_GPUS"))
        };
        let from_env = !asked && (env_preset.is_some() || env_gpus.is_some());
        if asked || from_env {
            let preset = match (self.model, &env_preset) {
                (Some(p), _) => p,
                (None, Some(p)) => parse_preset(p)
                    .map_err(|m| CliError::usage(format!("KFD_MODEL_PRESET: {m}")))?,
                (None, None) => Preset::Gfx900,
            };
            let gpus = match (self.gpus, &env_gpus) {
                (Some(g), _) => g,
                (None, Some(g)) => g
                    .trim()
                    .parse::<u32>()
                    .ok()
                    .filter(|g| (1..=MAX_MODEL_GPUS).contains(g))
                    .ok_or_else(|| {
                        CliError::usage(format!(
                            "KFD_MODEL_GPUS={g:?} is not a number from 1 to {MAX_MODEL_GPUS}"
                        ))
                    })?,
                (None, None) => 1,
            };
            let reason = if from_env {
                "KFD_MODEL_PRESET/KFD_MODEL_GPUS"
            } else if self.model.is_some() {
                "--model"
            } else if self.gpus.is_some() || self.kernel.is_some() {
                "--gpus/--kernel"
            } else {
                "--fault"
            };
            return Ok(Choice::Model {
                preset,
                gpus,
                kernel: self.kernel.unwrap_or_default(),
                faults: model_faults(&env, &self.faults)?,
                reason: reason.into(),
            });
        }
        let dev = Path::new(thunk::backend::KFD_DEVICE_PATH);
        if exists(dev) {
            Ok(Choice::Device {
                path: dev.to_owned(),
                reason: format!("{} exists", dev.display()),
            })
        } else {
            Ok(Choice::Model {
                preset: Preset::Gfx900,
                gpus: 1,
                kernel: KernelChoice::default(),
                faults: model_faults(&env, &self.faults)?,
                reason: format!("no {} on this machine", dev.display()),
            })
        }
    }

    /// Opens what the arguments and the environment name.
    pub fn open(&self) -> CliResult<(Kfd, Source)> {
        let choice = self.choose(|k| std::env::var(k).ok(), Path::exists)?;
        open_choice(&choice, |c| c)
    }

    /// Opens as [`DeviceArgs::open`] does, with `adjust` applied to a model's configuration
    /// (fault injection, no engine thread …).
    pub fn open_model_with(
        &self,
        adjust: impl FnOnce(ModelConfig) -> ModelConfig,
    ) -> CliResult<(Kfd, Source)> {
        let choice = self.choose(|k| std::env::var(k).ok(), Path::exists)?;
        open_choice(&choice, adjust)
    }
}

fn kernel_name(k: KernelVersion) -> &'static str {
    match k {
        KernelVersion::Linux6_1 => "Linux 6.1",
        KernelVersion::Linux6_12 => "Linux 6.12",
    }
}

fn open_choice(
    choice: &Choice,
    adjust: impl FnOnce(ModelConfig) -> ModelConfig,
) -> CliResult<(Kfd, Source)> {
    let (options, reason) = match choice {
        Choice::Device { path, reason } => (OpenOptions::device(path), reason),
        Choice::Model {
            preset,
            gpus,
            kernel,
            faults,
            reason,
        } => {
            let config = faults.iter().fold(
                ModelConfig::new(*preset)
                    .with_gpus(*gpus)
                    .with_kernel(kernel.version()),
                |config, f| config.with_fault(*f),
            );
            let config = adjust(config);
            (OpenOptions::model_config(config), reason)
        }
    };
    let kfd = Kfd::open_with(options).map_err(|e| open_error(choice, &e))?;
    let source = describe(&kfd, reason);
    Ok((kfd, source))
}

/// The [`Source`] of an open `kfd`.
pub fn describe(kfd: &Kfd, reason: &str) -> Source {
    match (kfd.backend().kind(), kfd.model()) {
        (BackendKind::Model, Some(model)) => {
            let c = model.config();
            let mut description = format!(
                "model of {} × {} ({})",
                c.gpus,
                c.preset,
                kernel_name(c.kernel)
            );
            if !c.faults.is_empty() {
                let names: Vec<String> = c.faults.iter().map(Fault::to_string).collect();
                description.push_str(&format!(" with injected faults: {}", names.join(", ")));
            }
            Source {
                kind: "model",
                description,
                reason: reason.to_owned(),
            }
        }
        (BackendKind::Model, None) => Source {
            kind: "model",
            description: kfd.backend().describe(),
            reason: reason.to_owned(),
        },
        (BackendKind::Device, _) => Source {
            kind: "device",
            description: kfd.backend().describe(),
            reason: reason.to_owned(),
        },
    }
}

/// A failed open as one line that says what to try: a missing or unreadable device is the
/// user's to fix (status 2 for a path that does not exist, 1 otherwise).
fn open_error(choice: &Choice, e: &thunk::Error) -> CliError {
    match choice {
        Choice::Device { path, .. } => {
            if let Some(what) = not_a_kfd_device(path, e) {
                return CliError::failure(format!(
                    "cannot open {}: not a KFD device ({what}); use --model gfx900 to run on the model",
                    path.display()
                ));
            }
            let hint = match e.errno() {
                thunk::Errno::EACCES | thunk::Errno::EPERM => {
                    "; add yourself to the 'render' and 'video' groups, or use --model gfx900"
                }
                thunk::Errno::ENOENT => "; use --model gfx900 to run on the model",
                _ => "",
            };
            let message = format!("cannot open {}: {e}{hint}", path.display());
            if e.errno() == thunk::Errno::ENOENT {
                CliError::usage(message)
            } else {
                CliError::failure(message)
            }
        }
        Choice::Model { preset, gpus, .. } => {
            CliError::failure(format!("cannot start the model of {gpus} × {preset}: {e}"))
        }
    }
}

/// Why `path` is no KFD device, when the failed open `e` shows it is not one: not a
/// character device at all, or one that does not know GET_VERSION.
fn not_a_kfd_device(path: &Path, e: &thunk::Error) -> Option<String> {
    use std::os::unix::fs::FileTypeExt;
    let kind = std::fs::metadata(path).ok()?.file_type();
    let what = if kind.is_dir() {
        "a directory"
    } else if kind.is_file() {
        "a regular file"
    } else if kind.is_fifo() {
        "a FIFO"
    } else if kind.is_socket() {
        "a socket"
    } else if kind.is_block_device() {
        "a block device"
    } else if kind.is_char_device() && e.errno() == thunk::Errno::ENOTTY {
        return Some(format!(
            "a character device that does not answer GET_VERSION: {}",
            e.errno()
        ));
    } else {
        return None;
    };
    Some(what.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |k| {
            pairs
                .iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| (*v).to_owned())
        }
    }

    #[test]
    fn the_choice_follows_flags_then_environment_then_the_machine() {
        let none = DeviceArgs::default();
        let model = |preset, gpus, reason: &str| Choice::Model {
            preset,
            gpus,
            kernel: KernelChoice::Linux6_12,
            faults: Vec::new(),
            reason: reason.into(),
        };
        assert_eq!(
            none.choose(env(&[]), |_| false).unwrap(),
            model(Preset::Gfx900, 1, "no /dev/kfd on this machine")
        );
        assert_eq!(
            none.choose(env(&[]), |_| true).unwrap(),
            Choice::Device {
                path: "/dev/kfd".into(),
                reason: "/dev/kfd exists".into()
            }
        );
        assert_eq!(
            none.choose(
                env(&[("KFD_MODEL_PRESET", "GFX90A"), ("KFD_MODEL_GPUS", "2")]),
                |_| true
            )
            .unwrap(),
            model(Preset::Gfx90a, 2, "KFD_MODEL_PRESET/KFD_MODEL_GPUS")
        );
        let flags = DeviceArgs {
            model: Some(Preset::Gfx1030),
            ..Default::default()
        };
        // A flag beats the environment.
        assert_eq!(
            flags
                .choose(
                    env(&[("KFD_DEVICE", "/dev/x"), ("KFD_MODEL_GPUS", "3")]),
                    |_| true
                )
                .unwrap(),
            model(Preset::Gfx1030, 1, "--model")
        );
        assert_eq!(
            none.choose(env(&[("KFD_DEVICE", "/dev/x")]), |_| false)
                .unwrap(),
            Choice::Device {
                path: "/dev/x".into(),
                reason: "KFD_DEVICE".into()
            }
        );
        let e = none
            .choose(env(&[("KFD_MODEL_GPUS", "0")]), |_| false)
            .unwrap_err();
        assert_eq!(e.code, 2);
        assert!(e.message.contains("KFD_MODEL_GPUS=\"0\""), "{e}");
        let e = none
            .choose(env(&[("KFD_MODEL_PRESET", "gfx8")]), |_| false)
            .unwrap_err();
        assert!(e.message.contains("unknown GPU preset 'gfx8'"), "{e}");
    }

    #[test]
    fn the_source_names_the_model_and_why() {
        let (kfd, source) = DeviceArgs {
            model: Some(Preset::Gfx90a),
            gpus: Some(2),
            kernel: Some(KernelChoice::Linux6_1),
            device: None,
            faults: Vec::new(),
        }
        .open()
        .unwrap();
        assert_eq!(kfd.gpus().len(), 2);
        assert_eq!(
            source,
            Source {
                kind: "model",
                description: "model of 2 × gfx90a (Linux 6.1)".into(),
                reason: "--model".into()
            }
        );
        assert_eq!(
            source.line(),
            "the model of 2 × gfx90a (Linux 6.1) — --model"
        );
        // Facts §7.1: Linux 6.1 speaks interface 1.11.
        assert_eq!(kfd.version().to_string(), "1.11");
    }

    #[test]
    fn a_missing_device_is_a_usage_error_with_a_hint() {
        let e = DeviceArgs {
            device: Some("/nonexistent/kfd".into()),
            ..Default::default()
        }
        .open()
        .unwrap_err();
        assert_eq!(e.code, 2, "{e}");
        assert!(
            e.message.starts_with("cannot open /nonexistent/kfd: "),
            "{e}"
        );
        assert!(e.message.contains("--model"), "{e}");
    }
}
