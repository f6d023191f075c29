//! The GPU targets the crate decodes for.

use core::fmt;
use core::str::FromStr;

/// A supported GFX9 target. RDNA and later are refused by [`Target::from_str`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Target {
    /// Vega 10 (GCN5).
    Gfx900,
    /// Vega 20 (GCN5 with the dot-product instructions).
    Gfx906,
    /// MI100 (CDNA1: AGPRs as a separate file, MFMA).
    Gfx908,
    /// MI200 (CDNA2: unified VGPR/AGPR file, packed FP32, 64-bit DPP).
    Gfx90a,
}

impl Target {
    /// All supported targets.
    pub const ALL: [Target; 4] = [
        Target::Gfx900,
        Target::Gfx906,
        Target::Gfx908,
        Target::Gfx90a,
    ];

    /// The `gfx…` name, as `--mcpu` spells it.
    pub const fn name(self) -> &'static str {
        match self {
            Target::Gfx900 => "gfx900",
            Target::Gfx906 => "gfx906",
            Target::Gfx908 => "gfx908",
            Target::Gfx90a => "gfx90a",
        }
    }

    /// This target's bit in a row's target mask.
    pub const fn bit(self) -> u8 {
        match self {
            Target::Gfx900 => 1,
            Target::Gfx906 => 2,
            Target::Gfx908 => 4,
            Target::Gfx90a => 8,
        }
    }

    /// Index 0..4, for per-target lookup tables.
    pub const fn index(self) -> usize {
        match self {
            Target::Gfx900 => 0,
            Target::Gfx906 => 1,
            Target::Gfx908 => 2,
            Target::Gfx90a => 3,
        }
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Why a `gfx…` name was not accepted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TargetError {
    /// An RDNA (gfx10xx) or later (gfx11xx…) target: a different encoding, not decoded here.
    Unsupported(String),
    /// Not a known `gfx…` name.
    Unknown(String),
}

impl fmt::Display for TargetError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TargetError::Unsupported(n) => write!(
                f,
                "{n} is an RDNA-or-later target; only GFX9 (gfx900, gfx906, gfx908, gfx90a) is supported"
            ),
            TargetError::Unknown(n) => write!(f, "{n} is not a known gfx target"),
        }
    }
}

impl std::error::Error for TargetError {}

impl FromStr for Target {
    type Err = TargetError;

    /// Parses `gfx900`, `gfx906`, `gfx908`, `gfx90a`; a target-feature suffix
    /// (`gfx90a:xnack+`) is ignored. `gfx10…`/`gfx11…`/`gfx12…` are refused.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let base = s.split(':').next().unwrap_or(s).to_ascii_lowercase();
        match base.as_str() {
            "gfx900" => Ok(Target::Gfx900),
            "gfx906" => Ok(Target::Gfx906),
            "gfx908" => Ok(Target::Gfx908),
            "gfx90a" => Ok(Target::Gfx90a),
            b if b.starts_with("gfx1") && b.len() >= 7 => {
                Err(TargetError::Unsupported(s.to_string()))
            }
            _ => Err(TargetError::Unknown(s.to_string())),
        }
    }
}
