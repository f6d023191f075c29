//! GPU targets on the command line: `--gfx gfx9|gfx10|gfx11`, or a part the model knows
//! (`gfx900`, `gfx90a`, `gfx942`, `gfx1030`), or `--gfx 9.4.2` for an exact GC IP version.
//! A target fixes the generation ([`Generation`]: the MQD and PM4 layouts) and the SDMA
//! layouts ([`SdmaGen`]).

use std::fmt;
use std::str::FromStr;

use kfd_model::Preset;
use kfd_sys::gpu::{Generation, GfxVersion};
use pm4::SdmaGen;

/// A GPU target: a name, the GC IP version it stands for and that version's generation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Target {
    /// GC IP version (`KFD_GC_VERSION`); for a bare generation, `major.0.0`.
    pub gc: GfxVersion,
    /// The generation of `gc` (a target exists only for a generation the stack knows).
    pub generation: Generation,
    /// The model preset of that name, if it is one.
    pub preset: Option<Preset>,
}

impl Target {
    /// The target of a model preset.
    pub fn of_preset(preset: Preset) -> Self {
        let facts = preset.facts();
        Target {
            gc: facts.gc,
            generation: facts.generation,
            preset: Some(preset),
        }
    }

    /// The target of GC version `gc`; `None` for a generation without layouts here.
    pub fn of_gc(gc: GfxVersion) -> Option<Self> {
        Some(Target {
            gc,
            generation: gc.generation()?,
            preset: None,
        })
    }

    /// The target of a whole generation (GC `major.0.0`).
    pub fn of_generation(generation: Generation) -> Self {
        Target {
            gc: GfxVersion::new(generation.major(), 0, 0),
            generation,
            preset: None,
        }
    }

    /// The generation: its MQD and PM4 packet layouts.
    pub fn generation(&self) -> Generation {
        self.generation
    }

    /// The SDMA packet layouts (SDMA 4 on gfx9, 5 on gfx10, 6 on gfx11).
    pub fn sdma(&self) -> SdmaGen {
        self.generation.into()
    }
}

impl Default for Target {
    /// gfx9, what `--gfx` means when it is not given.
    fn default() -> Self {
        Target::of_generation(Generation::Gfx9)
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
        if let Some(generation) = Generation::ALL
            .into_iter()
            .find(|g| name == g.to_string() || name == g.major().to_string())
        {
            return Ok(Target::of_generation(generation));
        }
        let parts: Vec<&str> = name.split('.').collect();
        if let [major, minor, stepping] = parts.as_slice() {
            let parse = |p: &str| p.parse::<u8>().ok();
            if let (Some(major), Some(minor), Some(stepping)) =
                (parse(major), parse(minor), parse(stepping))
            {
                if let Some(target) = Target::of_gc(GfxVersion::new(major, minor, stepping)) {
                    return Ok(target);
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
        assert_eq!(
            (t.generation(), t.sdma()),
            (Generation::Gfx9, SdmaGen::Sdma4)
        );
        let t: Target = "GFX10".parse().unwrap();
        assert_eq!(
            (t.generation(), t.sdma()),
            (Generation::Gfx10, SdmaGen::Sdma5)
        );
        let t: Target = "11.0.3".parse().unwrap();
        assert_eq!(
            (t.generation(), t.sdma()),
            (Generation::Gfx11, SdmaGen::Sdma6)
        );
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
