//! What the shim models, read from the environment once per process.
//!
//! | variable | meaning | default |
//! |---|---|---|
//! | `KFD_MODEL_PRESET` | GPU part: `gfx900`, `gfx90a`, `gfx942`, `gfx1030` | `gfx900` |
//! | `KFD_MODEL_GPUS` | number of GPUs, 1–64 | `1` |
//! | `KFD_MODEL_KERNEL` | driver behaviour: `6.1` or `6.12` | `6.12` |
//! | `KFD_MODEL_LOG` | log filter: `level` or `target=level`, comma separated | `warn` |
//! | `KFD_MODEL_LOG_FILE` | append the log here instead of stderr | — |
//! | `KFD_RUN_SUMMARY` | at exit, append the shader counters here as one JSON line ([`crate::summary`]; `kfd run` sets it) | — |
//! | `KFD_MODEL_FAULTS` | faults to inject ([`kfd_model::faults`]); a malformed list makes every open of `/dev/kfd` fail with `EINVAL` | — |
//! | `KFD_MODEL_NO_SYSTEM_MEM_LIMIT` | `1`: the driver's `amdgpu.no_system_mem_limit=1` | `0` |

use core::fmt;
use kfd_model::faults::FAULTS_ENV;
use kfd_model::{Fault, KernelVersion, ModelConfig, Preset};
use log::LevelFilter;

/// Environment variable naming the GPU preset.
pub const ENV_PRESET: &str = "KFD_MODEL_PRESET";
/// Environment variable naming the number of GPUs.
pub const ENV_GPUS: &str = "KFD_MODEL_GPUS";
/// Environment variable naming the kernel behaviour.
pub const ENV_KERNEL: &str = "KFD_MODEL_KERNEL";
/// Environment variable holding the log filter.
pub const ENV_LOG: &str = "KFD_MODEL_LOG";
/// Environment variable naming the log file.
pub const ENV_LOG_FILE: &str = "KFD_MODEL_LOG_FILE";
/// Environment variable naming the file the exit summary is appended to.
pub const ENV_RUN_SUMMARY: &str = "KFD_RUN_SUMMARY";

/// Environment variable setting `amdgpu.no_system_mem_limit`.
pub const ENV_NO_SYSTEM_MEM_LIMIT: &str = "KFD_MODEL_NO_SYSTEM_MEM_LIMIT";

/// Most GPUs one model instance holds (render minors 128–191).
pub const MAX_GPUS: u32 = 64;

/// A configuration variable that does not parse.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    /// The variable.
    pub variable: &'static str,
    /// Its value.
    pub value: String,
    /// What is wrong and what is accepted.
    pub reason: String,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}={:?}: {}", self.variable, self.value, self.reason)
    }
}

impl std::error::Error for ConfigError {}

/// Which log records are written: a default level and per-target levels.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogFilter {
    /// Level for targets no directive names.
    pub default: LevelFilter,
    /// `(target prefix, level)`, most specific first.
    pub directives: Vec<(String, LevelFilter)>,
}

impl Default for LogFilter {
    fn default() -> Self {
        LogFilter {
            default: LevelFilter::Warn,
            directives: Vec::new(),
        }
    }
}

fn parse_level(s: &str) -> Option<LevelFilter> {
    s.trim().parse::<LevelFilter>().ok()
}

impl LogFilter {
    /// Parses `warn`, `kfd::ioctl=trace`, `hw=debug,kfd=info,error` (the `RUST_LOG` shape
    /// without regular expressions). The most specific matching target prefix wins.
    pub fn parse(spec: &str) -> Result<LogFilter, String> {
        let mut filter = LogFilter::default();
        for part in spec.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            match part.split_once('=') {
                Some((target, level)) => {
                    let level = parse_level(level).ok_or_else(|| {
                        format!(
                            "'{level}' is not a log level (off, error, warn, info, debug, trace)"
                        )
                    })?;
                    let target = target.trim();
                    if target.is_empty() {
                        return Err(format!("'{part}' names no target"));
                    }
                    filter.directives.push((target.to_owned(), level));
                }
                None => match parse_level(part) {
                    Some(level) => filter.default = level,
                    // A bare target means "everything from it".
                    None => filter
                        .directives
                        .push((part.to_owned(), LevelFilter::Trace)),
                },
            }
        }
        filter
            .directives
            .sort_by_key(|d| core::cmp::Reverse(d.0.len()));
        Ok(filter)
    }

    /// The level in force for `target`.
    pub fn level_for(&self, target: &str) -> LevelFilter {
        self.directives
            .iter()
            .find(|(prefix, _)| {
                target == prefix
                    || target
                        .strip_prefix(prefix.as_str())
                        .is_some_and(|rest| rest.starts_with("::"))
            })
            .map_or(self.default, |(_, level)| *level)
    }

    /// The most verbose level any target gets (what `log::set_max_level` is told).
    pub fn max_level(&self) -> LevelFilter {
        self.directives
            .iter()
            .map(|(_, l)| *l)
            .fold(self.default, Ord::max)
    }
}

/// Everything the shim reads from the environment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShimConfig {
    /// The GPU part.
    pub preset: Preset,
    /// How many GPUs.
    pub gpus: u32,
    /// Kernel behaviour.
    pub kernel: KernelVersion,
    /// Log filter.
    pub log: LogFilter,
    /// Log file (stderr when `None`).
    pub log_file: Option<String>,
    /// Where the exit summary goes (none when `None`).
    pub summary_file: Option<String>,
    /// Faults to inject into every GPU, or why `KFD_MODEL_FAULTS` could not be read (then
    /// the model is not built: opening `/dev/kfd` fails, as a driver that refused to load).
    pub faults: Result<Vec<Fault>, ConfigError>,
    /// `amdgpu.no_system_mem_limit`.
    pub no_system_mem_limit: bool,
}

impl Default for ShimConfig {
    fn default() -> Self {
        ShimConfig {
            preset: Preset::Gfx900,
            gpus: 1,
            kernel: KernelVersion::Linux6_12,
            log: LogFilter::default(),
            log_file: None,
            summary_file: None,
            faults: Ok(Vec::new()),
            no_system_mem_limit: false,
        }
    }
}

impl ShimConfig {
    /// Reads the configuration through `get` (a variable's value, `None` when unset or empty).
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Result<ShimConfig, ConfigError> {
        let get = |name: &str| get(name).filter(|v| !v.trim().is_empty());
        let err = |variable: &'static str, value: &str, reason: String| ConfigError {
            variable,
            value: value.to_owned(),
            reason,
        };
        let mut cfg = ShimConfig::default();
        if let Some(v) = get(ENV_PRESET) {
            cfg.preset = v
                .parse::<Preset>()
                .map_err(|e| err(ENV_PRESET, &v, e.to_string()))?;
        }
        if let Some(v) = get(ENV_GPUS) {
            cfg.gpus = v
                .trim()
                .parse::<u32>()
                .ok()
                .filter(|n| (1..=MAX_GPUS).contains(n))
                .ok_or_else(|| {
                    err(
                        ENV_GPUS,
                        &v,
                        format!("expected a number of GPUs from 1 to {MAX_GPUS}"),
                    )
                })?;
        }
        if let Some(v) = get(ENV_KERNEL) {
            cfg.kernel = match v.trim() {
                "6.1" => KernelVersion::Linux6_1,
                "6.12" => KernelVersion::Linux6_12,
                _ => return Err(err(ENV_KERNEL, &v, "expected 6.1 or 6.12".to_owned())),
            };
        }
        if let Some(v) = get(ENV_LOG) {
            cfg.log = LogFilter::parse(&v).map_err(|e| err(ENV_LOG, &v, e))?;
        }
        cfg.log_file = get(ENV_LOG_FILE);
        cfg.summary_file = get(ENV_RUN_SUMMARY);
        if let Some(v) = get(FAULTS_ENV) {
            cfg.faults = Fault::parse_list(&v).map_err(|e| err(FAULTS_ENV, &v, e));
        }
        if let Some(v) = get(ENV_NO_SYSTEM_MEM_LIMIT) {
            cfg.no_system_mem_limit = match v.trim() {
                "0" => false,
                "1" => true,
                _ => {
                    return Err(err(
                        ENV_NO_SYSTEM_MEM_LIMIT,
                        &v,
                        "expected 0 or 1".to_owned(),
                    ))
                }
            };
        }
        Ok(cfg)
    }

    /// Reads the configuration from the process environment.
    pub fn from_env() -> Result<ShimConfig, ConfigError> {
        ShimConfig::from_lookup(|name| std::env::var(name).ok())
    }

    /// The model configuration this describes (without faults when they did not parse).
    pub fn model_config(&self) -> ModelConfig {
        let faults = self.faults.as_deref().unwrap_or_default();
        faults.iter().fold(
            ModelConfig::new(self.preset)
                .with_gpus(self.gpus)
                .with_kernel(self.kernel)
                .with_no_system_mem_limit(self.no_system_mem_limit),
            |config, f| config.with_fault(*f),
        )
    }

    /// The render minors of the modelled GPUs (`128 + index`, as the model's topology).
    pub fn render_minors(&self) -> core::ops::Range<u32> {
        128..128 + self.gpus
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn cfg(vars: &[(&str, &str)]) -> Result<ShimConfig, ConfigError> {
        let map: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        ShimConfig::from_lookup(|k| map.get(k).cloned())
    }

    #[test]
    fn defaults_are_one_gfx900_on_linux_6_12() {
        let c = cfg(&[]).unwrap();
        assert_eq!(c.preset, Preset::Gfx900);
        assert_eq!(c.gpus, 1);
        assert_eq!(c.kernel, KernelVersion::Linux6_12);
        assert_eq!(c.log.default, LevelFilter::Warn);
        assert_eq!(c.log_file, None);
        assert_eq!(c.summary_file, None);
        assert!(!c.no_system_mem_limit);
        assert_eq!(c.render_minors(), 128..129);
        let m = c.model_config();
        assert_eq!((m.preset, m.gpus), (Preset::Gfx900, 1));
    }

    #[test]
    fn every_variable_is_read() {
        let c = cfg(&[
            (ENV_PRESET, "GFX90A"),
            (ENV_GPUS, "4"),
            (ENV_KERNEL, "6.1"),
            (ENV_LOG, "kfd::ioctl=trace,info"),
            (ENV_LOG_FILE, "/tmp/x.log"),
            (ENV_RUN_SUMMARY, "/tmp/summary.jsonl"),
            (ENV_NO_SYSTEM_MEM_LIMIT, "1"),
        ])
        .unwrap();
        assert!(c.no_system_mem_limit && c.model_config().no_system_mem_limit);
        assert_eq!(c.preset, Preset::Gfx90a);
        assert_eq!(c.gpus, 4);
        assert_eq!(c.kernel, KernelVersion::Linux6_1);
        assert_eq!(c.log.default, LevelFilter::Info);
        assert_eq!(c.log_file.as_deref(), Some("/tmp/x.log"));
        assert_eq!(c.summary_file.as_deref(), Some("/tmp/summary.jsonl"));
        assert_eq!(c.render_minors(), 128..132);
        assert_eq!(c.model_config().kernel, KernelVersion::Linux6_1);
        let c = cfg(&[(FAULTS_ENV, "hiq-full, slow-engine=100us")]).unwrap();
        let both = vec![
            Fault::HiqFull,
            Fault::SlowEngine(std::time::Duration::from_micros(100)),
        ];
        assert_eq!(c.faults, Ok(both.clone()));
        assert_eq!(c.model_config().faults, both);
    }

    #[test]
    fn malformed_faults_keep_the_rest_and_say_what_is_accepted() {
        let c = cfg(&[(ENV_PRESET, "gfx90a"), (FAULTS_ENV, "garbage")]).unwrap();
        assert_eq!(c.preset, Preset::Gfx90a);
        let e = c.faults.clone().unwrap_err();
        assert_eq!(e.variable, FAULTS_ENV);
        let line = e.to_string();
        assert!(
            line.starts_with("KFD_MODEL_FAULTS=\"garbage\": unknown fault 'garbage'"),
            "{line}"
        );
        assert!(
            line.contains("hiq-full") && line.contains("vm-fault=VA+LEN"),
            "{line}"
        );
        assert!(c.model_config().faults.is_empty());
    }

    #[test]
    fn bad_values_name_the_variable_and_the_choices() {
        let e = cfg(&[(ENV_PRESET, "gfx1100")]).unwrap_err();
        assert_eq!(e.variable, ENV_PRESET);
        assert!(
            e.to_string().contains("gfx900, gfx90a, gfx942, gfx1030"),
            "{e}"
        );
        for bad in ["0", "65", "two", "-1"] {
            let e = cfg(&[(ENV_GPUS, bad)]).unwrap_err();
            assert_eq!(e.variable, ENV_GPUS, "{bad}");
            assert!(e.to_string().contains("1 to 64"));
        }
        assert_eq!(cfg(&[(ENV_GPUS, "64")]).unwrap().gpus, 64);
        assert_eq!(
            cfg(&[(ENV_KERNEL, "5.15")]).unwrap_err().variable,
            ENV_KERNEL
        );
        assert_eq!(cfg(&[(ENV_LOG, "kfd=loud")]).unwrap_err().variable, ENV_LOG);
        assert_eq!(
            cfg(&[(ENV_NO_SYSTEM_MEM_LIMIT, "yes")])
                .unwrap_err()
                .variable,
            ENV_NO_SYSTEM_MEM_LIMIT
        );
        // Empty counts as unset.
        assert_eq!(cfg(&[(ENV_PRESET, " ")]).unwrap().preset, Preset::Gfx900);
    }

    #[test]
    fn log_filter_picks_the_most_specific_target() {
        let f = LogFilter::parse("kfd=info, kfd::ioctl=trace ,hw::cp=off,error").unwrap();
        assert_eq!(f.level_for("kfd::ioctl"), LevelFilter::Trace);
        assert_eq!(f.level_for("kfd::ioctl::sub"), LevelFilter::Trace);
        assert_eq!(f.level_for("kfd::dqm"), LevelFilter::Info);
        assert_eq!(
            f.level_for("kfdx"),
            LevelFilter::Error,
            "prefix only at :: boundaries"
        );
        assert_eq!(f.level_for("hw::cp"), LevelFilter::Off);
        assert_eq!(f.level_for("hw::sdma"), LevelFilter::Error);
        assert_eq!(f.max_level(), LevelFilter::Trace);
        let bare = LogFilter::parse("preload").unwrap();
        assert_eq!(bare.level_for("preload"), LevelFilter::Trace);
        assert_eq!(bare.level_for("kfd::ioctl"), LevelFilter::Warn);
        assert!(LogFilter::parse("=debug").is_err());
        assert_eq!(LogFilter::parse("").unwrap(), LogFilter::default());
    }
}
