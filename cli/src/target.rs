//! GPU targets on the command line: `--gfx gfx9|gfx10|gfx11`, or a part the model knows
//! (`gfx900`, `gfx90a`, `gfx942`, `gfx1030`), or `--gfx 9.4.2` for an exact GC IP version.
//! A target fixes the PM4 layouts ([`GfxGen`]), the SDMA layouts ([`SdmaGen`]) and the MQD
//! generation.

use std::fmt;
use std::str::FromStr;

use kfd_model::Preset;
use mqd::{Generation, GfxVersion};
use pm4::{GfxGen, SdmaGen};

/// A GPU target: a name and the GC IP version it stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Target {
    /// GC IP version (`KFD_GC_VERSION`); for a bare generation, `major.0.0`.
    pub gc: GfxVersion,
    /// The model preset of that name, if it is one.
    pub preset: Option<Preset>,
}

impl Target {
    /// The target of a model preset.
    pub fn of_preset(preset: Preset) -> Self {
        let (major, minor, stepping) = preset.gc_version();
        Target {
            gc: GfxVersion::new(major as u8, minor as u8, stepping as u8),
            preset: Some(preset),
        }
    }

    /// The MQD generation.
    pub fn generation(&self) -> Generation {
        match self.gc.major {
            10 => Generation::Gfx10,
            11 => Generation::Gfx11,
            _ => Generation::Gfx9,
        }
    }

    /// The PM4 packet layouts.
    pub fn pm4(&self) -> GfxGen {
        match self.generation() {
            Generation::Gfx9 => GfxGen::Gfx9,
            Generation::Gfx10 => GfxGen::Gfx10,
            Generation::Gfx11 => GfxGen::Gfx11,
        }
    }

    /// The SDMA packet layouts (SDMA 4 on gfx9, 5 on gfx10, 6 on gfx11).
    pub fn sdma(&self) -> SdmaGen {
        match self.generation() {
            Generation::Gfx9 => SdmaGen::Sdma4,
            Generation::Gfx10 => SdmaGen::Sdma5,
            Generation::Gfx11 => SdmaGen::Sdma6,
        }
    }
}

impl Default for Target {
    fn default() -> Self {
        Target {
            gc: GfxVersion::new(9, 0, 0),
            preset: None,
        }
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.preset {
            Some(p) => write!(
                f,
                "{p} (GC {}.{}.{})",
                self.gc.major, self.gc.minor, self.gc.stepping
            ),
            None if self.gc.minor == 0 && self.gc.stepping == 0 => {
                write!(f, "{}", self.generation())
            }
            None => write!(
                f,
                "GC {}.{}.{} ({})",
                self.gc.major,
                self.gc.minor,
                self.gc.stepping,
                self.generation()
            ),
        }
    }
}

const TARGET_HELP: &str =
    "use gfx9, gfx10, gfx11, a model part (gfx900, gfx90a, gfx942, gfx1030) or a GC version like 9.4.2";

impl FromStr for Target {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let name = s.trim().to_ascii_lowercase();
        if let Ok(preset) = name.parse::<Preset>() {
            return Ok(Target::of_preset(preset));
        }
        let generation_only = |major: u8| Target {
            gc: GfxVersion::new(major, 0, 0),
            preset: None,
        };
        match name.as_str() {
            "gfx9" | "9" => return Ok(generation_only(9)),
            "gfx10" | "10" => return Ok(generation_only(10)),
            "gfx11" | "11" => return Ok(generation_only(11)),
            _ => {}
        }
        let parts: Vec<&str> = name.split('.').collect();
        if let [major, minor, stepping] = parts.as_slice() {
            let parse = |p: &str| p.parse::<u8>().ok();
            if let (Some(major), Some(minor), Some(stepping)) =
                (parse(major), parse(minor), parse(stepping))
            {
                if matches!(major, 9..=11) {
                    return Ok(Target {
                        gc: GfxVersion::new(major, minor, stepping),
                        preset: None,
                    });
                }
                return Err(format!(
                    "GC {major}.{minor}.{stepping} has no layouts here (GC 9, 10 and 11 do)"
                ));
            }
        }
        Err(format!("unknown GPU target '{s}'; {TARGET_HELP}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_versions_and_presets() {
        let t: Target = "gfx90a".parse().unwrap();
        assert_eq!(t.gc, GfxVersion::new(9, 4, 2));
        assert_eq!((t.pm4(), t.sdma()), (GfxGen::Gfx9, SdmaGen::Sdma4));
        let t: Target = "GFX10".parse().unwrap();
        assert_eq!(
            (t.generation(), t.sdma()),
            (Generation::Gfx10, SdmaGen::Sdma5)
        );
        let t: Target = "11.0.3".parse().unwrap();
        assert_eq!((t.pm4(), t.sdma()), (GfxGen::Gfx11, SdmaGen::Sdma6));
        assert_eq!(t.to_string(), "GC 11.0.3 (gfx11)");
        assert_eq!(
            "gfx1030".parse::<Target>().unwrap().to_string(),
            "gfx1030 (GC 10.3.0)"
        );
        assert!("gfx8"
            .parse::<Target>()
            .unwrap_err()
            .contains("gfx9, gfx10, gfx11"));
        assert!("12.0.0"
            .parse::<Target>()
            .unwrap_err()
            .contains("no layouts"));
    }
}
