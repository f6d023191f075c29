//! Target IDs: a processor plus the `xnack` and `sramecc` feature settings, parsed from strings
//! (`amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-`) and from ELF `e_flags`, and the rule that says
//! whether a code object's target runs on an agent's.

use crate::error::{Error, Result};
use std::fmt;
use std::str::FromStr;

/// `e_flags` mask of the processor (`EF_AMDGPU_MACH`).
pub const EF_AMDGPU_MACH: u32 = 0x0ff;
/// Code object v3: the `xnack` feature is on.
pub const EF_AMDGPU_FEATURE_XNACK_V3: u32 = 0x100;
/// Code object v3: the `sramecc` feature is on.
pub const EF_AMDGPU_FEATURE_SRAMECC_V3: u32 = 0x200;
/// Code object v4+: mask of the two-bit `xnack` setting.
pub const EF_AMDGPU_FEATURE_XNACK_V4: u32 = 0x300;
/// Code object v4+: mask of the two-bit `sramecc` setting.
pub const EF_AMDGPU_FEATURE_SRAMECC_V4: u32 = 0xc00;

/// `EF_AMDGPU_MACH_AMDGCN_*` values and the processor names they stand for (amd_hsa_elf.h and
/// AMDGPUUsage's processor table; the gfx940 and gfx11 rows checked against the `e_flags`
/// clang-15 writes for `-mcpu=gfx940` … `gfx1103`).
const MACHINES: &[(u32, &str)] = &[
    (0x020, "gfx600"),
    (0x021, "gfx601"),
    (0x022, "gfx700"),
    (0x023, "gfx701"),
    (0x024, "gfx702"),
    (0x025, "gfx703"),
    (0x026, "gfx704"),
    (0x028, "gfx801"),
    (0x029, "gfx802"),
    (0x02a, "gfx803"),
    (0x02b, "gfx810"),
    (0x02c, "gfx900"),
    (0x02d, "gfx902"),
    (0x02e, "gfx904"),
    (0x02f, "gfx906"),
    (0x030, "gfx908"),
    (0x031, "gfx909"),
    (0x032, "gfx90c"),
    (0x033, "gfx1010"),
    (0x034, "gfx1011"),
    (0x035, "gfx1012"),
    (0x036, "gfx1030"),
    (0x037, "gfx1031"),
    (0x038, "gfx1032"),
    (0x039, "gfx1033"),
    (0x03a, "gfx602"),
    (0x03b, "gfx705"),
    (0x03c, "gfx805"),
    (0x03d, "gfx1035"),
    (0x03e, "gfx1034"),
    (0x03f, "gfx90a"),
    (0x040, "gfx940"),
    (0x041, "gfx1100"),
    (0x042, "gfx1013"),
    (0x044, "gfx1103"),
    (0x045, "gfx1036"),
    (0x046, "gfx1101"),
    (0x047, "gfx1102"),
];

/// The first `EF_AMDGPU_MACH` value of an amdgcn processor (below are R600 parts and 0, none).
pub const EF_AMDGPU_MACH_AMDGCN_FIRST: u32 = 0x020;

/// The processor name of an `EF_AMDGPU_MACH_*` value, if it is one this crate knows.
pub fn processor_name(mach: u32) -> Option<&'static str> {
    MACHINES.iter().find(|(m, _)| *m == mach).map(|(_, n)| *n)
}

/// The `EF_AMDGPU_MACH_*` value of a processor name.
pub fn processor_mach(name: &str) -> Option<u32> {
    MACHINES.iter().find(|(_, n)| *n == name).map(|(m, _)| *m)
}

/// What a [`TargetId`] names as its processor when the code object's `EF_AMDGPU_MACH` is an
/// amdgcn value this crate has no name for (a processor newer than its table): the number,
/// as `EF_AMDGPU_MACH 0x04c`.
pub fn unnamed_processor(mach: u32) -> String {
    format!("EF_AMDGPU_MACH {mach:#05x}")
}

/// One target feature's setting in a target ID.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FeatureSetting {
    /// The processor does not have the feature (v4 `e_flags` value 0).
    Unsupported,
    /// Either setting: code built so runs with the feature on or off (absent from the string).
    Any,
    /// The feature is off (`feature-`).
    Off,
    /// The feature is on (`feature+`).
    On,
}

impl FeatureSetting {
    fn from_v4_bits(bits: u32) -> Self {
        match bits {
            0 => FeatureSetting::Unsupported,
            1 => FeatureSetting::Any,
            2 => FeatureSetting::Off,
            _ => FeatureSetting::On,
        }
    }

    /// Does code built with `self` run on an agent whose setting is `agent`?
    /// `Any` (and a feature the processor lacks) matches everything; `On`/`Off` must be equal.
    pub fn runs_on(self, agent: FeatureSetting) -> bool {
        match self {
            FeatureSetting::Unsupported | FeatureSetting::Any => true,
            FeatureSetting::On | FeatureSetting::Off => self == agent,
        }
    }

    fn is_specific(self) -> bool {
        matches!(self, FeatureSetting::On | FeatureSetting::Off)
    }

    fn suffix(self) -> Option<char> {
        match self {
            FeatureSetting::On => Some('+'),
            FeatureSetting::Off => Some('-'),
            _ => None,
        }
    }
}

/// Which code object version an ELF header's `EI_ABIVERSION` announces.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum CodeObjectVersion {
    /// `ELFABIVERSION_AMDGPU_HSA_V3` (1).
    V3,
    /// `ELFABIVERSION_AMDGPU_HSA_V4` (2).
    V4,
    /// `ELFABIVERSION_AMDGPU_HSA_V5` (3).
    V5,
    /// `ELFABIVERSION_AMDGPU_HSA_V6` (4): v5's layout, plus a generic-processor version in
    /// `e_flags` bits 24–31.
    V6,
}

impl CodeObjectVersion {
    /// The version of an `EI_ABIVERSION` byte of an `ELFOSABI_AMDGPU_HSA` file.
    pub fn from_abi_version(abi: u8) -> Result<Self> {
        match abi {
            1 => Ok(CodeObjectVersion::V3),
            2 => Ok(CodeObjectVersion::V4),
            3 => Ok(CodeObjectVersion::V5),
            4 => Ok(CodeObjectVersion::V6),
            other => Err(Error::Unsupported(format!(
                "code object ABI version {other} (v3 = 1, v4 = 2, v5 = 3, v6 = 4 are read)"
            ))),
        }
    }
}

/// A target ID: processor and the `sramecc`/`xnack` settings.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TargetId {
    /// Processor name, e.g. `gfx90a`.
    pub processor: String,
    /// The `sramecc` setting.
    pub sramecc: FeatureSetting,
    /// The `xnack` setting.
    pub xnack: FeatureSetting,
}

impl TargetId {
    /// A target ID with both features `Any`.
    pub fn new(processor: &str) -> Self {
        TargetId {
            processor: processor.to_string(),
            sramecc: FeatureSetting::Any,
            xnack: FeatureSetting::Any,
        }
    }

    /// The target ID an AMDGPU ELF header's `e_flags` describes, for a code object `version`.
    /// An amdgcn processor missing from this crate's table is named by its number
    /// ([`unnamed_processor`]); an R600 or zero `EF_AMDGPU_MACH` is refused.
    pub fn from_e_flags(e_flags: u32, version: CodeObjectVersion) -> Result<Self> {
        let mach = e_flags & EF_AMDGPU_MACH;
        let processor = match processor_name(mach) {
            Some(name) => name.to_string(),
            None if mach >= EF_AMDGPU_MACH_AMDGCN_FIRST => unnamed_processor(mach),
            None => {
                return Err(Error::Unsupported(format!(
                    "EF_AMDGPU_MACH {mach:#x} is not an amdgcn processor (those start at {EF_AMDGPU_MACH_AMDGCN_FIRST:#x})"
                )))
            }
        };
        let (xnack, sramecc) = match version {
            // v3 has one bit per feature; a clear bit is read as "any" (v3 had no off/any split).
            CodeObjectVersion::V3 => {
                let bit = |mask| {
                    if e_flags & mask != 0 {
                        FeatureSetting::On
                    } else {
                        FeatureSetting::Any
                    }
                };
                (
                    bit(EF_AMDGPU_FEATURE_XNACK_V3),
                    bit(EF_AMDGPU_FEATURE_SRAMECC_V3),
                )
            }
            _ => (
                FeatureSetting::from_v4_bits((e_flags & EF_AMDGPU_FEATURE_XNACK_V4) >> 8),
                FeatureSetting::from_v4_bits((e_flags & EF_AMDGPU_FEATURE_SRAMECC_V4) >> 10),
            ),
        };
        Ok(TargetId {
            processor,
            sramecc,
            xnack,
        })
    }

    /// Whether the processor is one this crate names (not [`unnamed_processor`]).
    pub fn is_named(&self) -> bool {
        processor_mach(&self.processor).is_some()
    }

    /// Does code built for `self` (a code object's target) run on `agent`? Same processor, and
    /// each feature either `Any`/unsupported in the code object or equal to the agent's.
    pub fn runs_on(&self, agent: &TargetId) -> bool {
        self.processor == agent.processor
            && self.xnack.runs_on(agent.xnack)
            && self.sramecc.runs_on(agent.sramecc)
    }

    /// Does code built for `self` match what a tool was asked for (`kfd co --target`,
    /// `kfd disasm --gfx`)? Unlike [`TargetId::runs_on`], whose agent has every feature
    /// decided, a feature the query leaves open matches any setting: `gfx90a` finds
    /// `gfx90a:xnack-` and `gfx90a:xnack+`, `gfx90a:xnack-` finds `gfx90a:xnack-` and `gfx90a`.
    pub fn matches_query(&self, query: &TargetId) -> bool {
        let feature = |code: FeatureSetting, asked: FeatureSetting| {
            asked == FeatureSetting::Any || code.runs_on(asked)
        };
        self.processor == query.processor
            && feature(self.xnack, query.xnack)
            && feature(self.sramecc, query.sramecc)
    }

    /// How many features are pinned to on/off: a loader prefers the most specific match.
    pub fn specificity(&self) -> usize {
        usize::from(self.xnack.is_specific()) + usize::from(self.sramecc.is_specific())
    }
}

impl fmt::Display for TargetId {
    /// The canonical form: processor, then `sramecc` and `xnack` (alphabetical), when pinned.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.processor)?;
        if let Some(c) = self.sramecc.suffix() {
            write!(f, ":sramecc{c}")?;
        }
        if let Some(c) = self.xnack.suffix() {
            write!(f, ":xnack{c}")?;
        }
        Ok(())
    }
}

impl FromStr for TargetId {
    type Err = Error;

    /// Parses `gfx90a:sramecc+:xnack-`, or the same after an `amdgcn-amd-amdhsa--` triple.
    fn from_str(s: &str) -> Result<Self> {
        let bad = || Error::InvalidTargetId(s.to_string());
        let id = match s.rsplit_once("--") {
            Some((triple, id)) if triple.starts_with("amdgcn-") => id,
            Some(_) => return Err(bad()),
            None => s,
        };
        let mut parts = id.split(':');
        let processor = parts.next().ok_or_else(bad)?;
        let valid_processor = processor.len() > 3
            && processor.starts_with("gfx")
            && processor[3..].bytes().all(|b| b.is_ascii_alphanumeric());
        if !valid_processor {
            return Err(bad());
        }
        let mut target = TargetId::new(processor);
        let (mut saw_xnack, mut saw_sramecc) = (false, false);
        for feature in parts {
            let (name, setting) = if let Some(name) = feature.strip_suffix('+') {
                (name, FeatureSetting::On)
            } else if let Some(name) = feature.strip_suffix('-') {
                (name, FeatureSetting::Off)
            } else {
                return Err(bad());
            };
            let (slot, seen) = match name {
                "xnack" => (&mut target.xnack, &mut saw_xnack),
                "sramecc" => (&mut target.sramecc, &mut saw_sramecc),
                _ => return Err(bad()),
            };
            if *seen {
                return Err(bad());
            }
            *seen = true;
            *slot = setting;
        }
        Ok(target)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_prints_canonically() {
        let t: TargetId = "amdgcn-amd-amdhsa--gfx90a:xnack-:sramecc+".parse().unwrap();
        assert_eq!(t.processor, "gfx90a");
        assert_eq!(t.xnack, FeatureSetting::Off);
        assert_eq!(t.sramecc, FeatureSetting::On);
        assert_eq!(t.to_string(), "gfx90a:sramecc+:xnack-");
        assert_eq!("gfx900".parse::<TargetId>().unwrap().to_string(), "gfx900");
        for bad in [
            "",
            "gfx",
            "sm_80",
            "gfx900:xnack",
            "gfx900:xnack+:xnack-",
            "gfx900:foo+",
            "x86_64--gfx900",
        ] {
            assert!(bad.parse::<TargetId>().is_err(), "{bad:?} parsed");
        }
    }

    #[test]
    fn matching_rules() {
        let agent: TargetId = "gfx90a:sramecc+:xnack-".parse().unwrap();
        for (co, runs) in [
            ("gfx90a", true),
            ("gfx90a:xnack-", true),
            ("gfx90a:xnack+", false),
            ("gfx90a:sramecc-", false),
            ("gfx90a:sramecc+:xnack-", true),
            ("gfx900", false),
        ] {
            assert_eq!(
                co.parse::<TargetId>().unwrap().runs_on(&agent),
                runs,
                "{co}"
            );
        }
    }

    #[test]
    fn e_flags_v4_and_v3() {
        // 0x12c: gfx900 (0x2c), xnack any (0x100), sramecc unsupported: what ld.lld-15 writes.
        let t = TargetId::from_e_flags(0x12c, CodeObjectVersion::V4).unwrap();
        assert_eq!(
            (t.processor.as_str(), t.xnack, t.sramecc),
            ("gfx900", FeatureSetting::Any, FeatureSetting::Unsupported)
        );
        // 0x63f: gfx90a, xnack off (0x200), sramecc any (0x400).
        let t = TargetId::from_e_flags(0x63f, CodeObjectVersion::V4).unwrap();
        assert_eq!(t.to_string(), "gfx90a:xnack-");
        assert_eq!(t.sramecc, FeatureSetting::Any);
        let t = TargetId::from_e_flags(0xf2f, CodeObjectVersion::V4).unwrap();
        assert_eq!(t.to_string(), "gfx906:sramecc+:xnack+");
        let t = TargetId::from_e_flags(0x12f, CodeObjectVersion::V3).unwrap();
        assert_eq!(t.to_string(), "gfx906:xnack+");
        // An amdgcn value past the table is named by its number, features still read.
        let t = TargetId::from_e_flags(0x64c, CodeObjectVersion::V5).unwrap();
        assert_eq!(t.to_string(), "EF_AMDGPU_MACH 0x04c:xnack-");
        assert!(!t.is_named());
        let t = TargetId::from_e_flags(0x540, CodeObjectVersion::V4).unwrap();
        assert_eq!((t.to_string().as_str(), t.is_named()), ("gfx940", true));
        // R600 values and 0 are not amdgcn.
        assert!(TargetId::from_e_flags(0x001, CodeObjectVersion::V4).is_err());
        assert!(TargetId::from_e_flags(0x000, CodeObjectVersion::V4).is_err());
    }

    #[test]
    fn queries_leave_open_features_open() {
        let xnack_off: TargetId = "gfx90a:xnack-".parse().unwrap();
        let xnack_on: TargetId = "gfx90a:xnack+".parse().unwrap();
        let generic: TargetId = "gfx90a".parse().unwrap();
        let bare: TargetId = "gfx90a".parse().unwrap();
        assert!(xnack_off.matches_query(&bare) && xnack_on.matches_query(&bare));
        assert!(xnack_off.matches_query(&xnack_off) && !xnack_on.matches_query(&xnack_off));
        assert!(generic.matches_query(&xnack_off));
        let full: TargetId = "gfx90a:sramecc+:xnack-".parse().unwrap();
        assert!(xnack_off.matches_query(&full) && !xnack_on.matches_query(&full));
        assert!(!xnack_off.matches_query(&"gfx900".parse().unwrap()));
        // The loader's rule stays strict: an agent has xnack on or off.
        assert!(!xnack_off.runs_on(&bare));
    }
}
