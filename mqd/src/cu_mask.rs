//! CU masks (`AMDKFD_IOC_SET_CU_MASK`) and their distribution over shader engines into the
//! `compute_static_thread_mgmt_se*` words.
//!
//! The user mask numbers CUs round-robin: bit 0 is the first CU of SE0, bit 1 the first CU of
//! SE1, … then the first CU of shader array 1 of every SE (upper 16 bits of each SE word),
//! then the second CU of every array, and so on. Slots of CUs an array does not have are
//! skipped, and the mask is cut at the device's CU count. In WGP mode (gfx10 and later) two
//! mask bits describe one WGP of two CUs; the WGP is enabled when either bit is set.

use crate::error::MqdError;

/// The most bits a CU mask may carry; the kernel truncates longer masks to this.
pub const MAX_CU_MASK_BITS: u32 = 1024;
/// Shader engines an MQD can address (static-thread-management words).
pub const MAX_SHADER_ENGINES: usize = 8;
/// Shader arrays per engine an SE word can hold (one per 16-bit half).
pub const MAX_SH_PER_SE: usize = 2;
/// CUs per shader array an SE word half can hold.
pub const MAX_CU_PER_SH: u32 = 16;

const MASK_WORDS: usize = (MAX_CU_MASK_BITS / 32) as usize;

/// A validated CU mask of 32 to 1024 bits, stored inline (no allocation).
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct CuMask {
    words: [u32; MASK_WORDS],
    bits: u32,
}

impl CuMask {
    /// A mask of `bit_count` bits taken from `words` (little end first), as SET_CU_MASK
    /// passes it. `bit_count` must be a non-zero multiple of 32 and `words` must hold that
    /// many bits; more than 1024 bits are cut to 1024 like the kernel does.
    pub fn new(bit_count: u32, words: &[u32]) -> Result<Self, MqdError> {
        if bit_count == 0 || bit_count % 32 != 0 {
            return Err(MqdError::CuMaskLength(bit_count));
        }
        let needed = (bit_count / 32) as usize;
        if words.len() < needed {
            return Err(MqdError::CuMaskTooShort {
                bits: bit_count,
                words: words.len(),
            });
        }
        let bits = bit_count.min(MAX_CU_MASK_BITS);
        let mut mask = CuMask {
            words: [0; MASK_WORDS],
            bits,
        };
        for (dst, src) in mask.words.iter_mut().zip(words.iter()) {
            *dst = *src;
        }
        Ok(mask)
    }

    /// A mask of `words.len() × 32` bits.
    pub fn from_words(words: &[u32]) -> Result<Self, MqdError> {
        let bits = u32::try_from(words.len())
            .ok()
            .and_then(|n| n.checked_mul(32))
            .unwrap_or(!31);
        Self::new(bits, words)
    }

    /// A mask with the first `cu_count` CUs enabled in a `bit_count`-bit mask.
    pub fn first_cus(bit_count: u32, cu_count: u32) -> Result<Self, MqdError> {
        if bit_count == 0 || bit_count % 32 != 0 {
            return Err(MqdError::CuMaskLength(bit_count));
        }
        let mut mask = CuMask {
            words: [0; MASK_WORDS],
            bits: bit_count.min(MAX_CU_MASK_BITS),
        };
        for cu in 0..cu_count.min(mask.bits) {
            if let Some(word) = mask.words.get_mut((cu / 32) as usize) {
                *word |= 1 << (cu % 32);
            }
        }
        Ok(mask)
    }

    /// Number of bits (a multiple of 32, at most 1024).
    pub fn bit_count(&self) -> u32 {
        self.bits
    }

    /// The mask words in use.
    pub fn words(&self) -> &[u32] {
        &self.words[..(self.bits / 32) as usize]
    }

    /// Whether mask bit `index` is set (false past the end).
    pub fn bit(&self, index: u32) -> bool {
        index < self.bits
            && self
                .words
                .get((index / 32) as usize)
                .is_some_and(|w| w & (1 << (index % 32)) != 0)
    }

    /// Number of set bits.
    pub fn count_ones(&self) -> u32 {
        self.words().iter().map(|w| w.count_ones()).sum()
    }
}

impl core::fmt::Debug for CuMask {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "CuMask({} bits:", self.bits)?;
        for w in self.words() {
            write!(f, " {w:#010x}")?;
        }
        f.write_str(")")
    }
}

/// How the device's CUs are arranged: shader engines (SE), shader arrays (SH) per engine and
/// active CUs per array. Harvested parts may have fewer active CUs in some arrays.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ShaderLayout {
    shader_engines: u8,
    sh_per_se: u8,
    active_cus: [[u8; MAX_SH_PER_SE]; MAX_SHADER_ENGINES],
}

impl ShaderLayout {
    /// A layout with the same number of active CUs in every array (at most 8 SEs, 2 SHs per
    /// SE, 16 CUs per SH).
    pub fn uniform(shader_engines: u32, sh_per_se: u32, cu_per_sh: u32) -> Result<Self, MqdError> {
        let invalid = MqdError::InvalidShaderLayout {
            shader_engines,
            sh_per_se,
            cu_per_sh,
        };
        if shader_engines == 0
            || shader_engines as usize > MAX_SHADER_ENGINES
            || sh_per_se == 0
            || sh_per_se as usize > MAX_SH_PER_SE
            || cu_per_sh > MAX_CU_PER_SH
        {
            return Err(invalid);
        }
        let mut layout = ShaderLayout {
            shader_engines: shader_engines as u8,
            sh_per_se: sh_per_se as u8,
            active_cus: [[0; MAX_SH_PER_SE]; MAX_SHADER_ENGINES],
        };
        for se in layout.active_cus.iter_mut().take(shader_engines as usize) {
            for sh in se.iter_mut().take(sh_per_se as usize) {
                *sh = cu_per_sh as u8;
            }
        }
        Ok(layout)
    }

    /// The same layout with `cus` active CUs in array `sh` of engine `se` (a harvested array).
    pub fn with_active_cus(mut self, se: u32, sh: u32, cus: u32) -> Result<Self, MqdError> {
        let invalid = MqdError::InvalidShaderLayout {
            shader_engines: se + 1,
            sh_per_se: sh + 1,
            cu_per_sh: cus,
        };
        if se >= u32::from(self.shader_engines)
            || sh >= u32::from(self.sh_per_se)
            || cus > MAX_CU_PER_SH
        {
            return Err(invalid);
        }
        match self
            .active_cus
            .get_mut(se as usize)
            .and_then(|e| e.get_mut(sh as usize))
        {
            Some(slot) => *slot = cus as u8,
            None => return Err(invalid),
        }
        Ok(self)
    }

    /// Number of shader engines.
    pub fn shader_engines(&self) -> u32 {
        u32::from(self.shader_engines)
    }

    /// Shader arrays per engine.
    pub fn sh_per_se(&self) -> u32 {
        u32::from(self.sh_per_se)
    }

    /// Active CUs in array `sh` of engine `se` (0 outside the layout).
    pub fn active_cus(&self, se: u32, sh: u32) -> u32 {
        self.active_cus
            .get(se as usize)
            .and_then(|e| e.get(sh as usize))
            .map_or(0, |&n| u32::from(n))
    }

    /// Active CUs of the whole device.
    pub fn total_cus(&self) -> u32 {
        self.active_cus
            .iter()
            .flat_map(|e| e.iter())
            .map(|&n| u32::from(n))
            .sum()
    }

    /// Spreads `mask` over the shader engines: one word per SE (SH0 CUs in bits `[15:0]`,
    /// SH1 CUs in bits `[31:16]`), zero for SEs the layout does not have. `wgp_mode` (gfx10
    /// and later) consumes the mask two bits per WGP.
    pub fn distribute(&self, mask: &CuMask, wgp_mode: bool) -> [u32; MAX_SHADER_ENGINES] {
        let mut se_words = [0u32; MAX_SHADER_ENGINES];
        let step: u32 = if wgp_mode { 2 } else { 1 };
        let lanes: u32 = if wgp_mode { 0b11 } else { 0b1 };
        let limit = mask.bit_count().min(self.total_cus());
        let mut bit = 0u32;
        if limit == 0 {
            return se_words;
        }
        let mut cu = 0u32;
        while cu < MAX_CU_PER_SH {
            for sh in 0..self.sh_per_se() {
                for (se, word) in se_words
                    .iter_mut()
                    .enumerate()
                    .take(self.shader_engines as usize)
                {
                    if self.active_cus(se as u32, sh) <= cu {
                        continue;
                    }
                    let enabled = (0..step).any(|lane| mask.bit(bit + lane));
                    if enabled {
                        *word |= lanes << (cu + sh * 16);
                    }
                    bit += step;
                    if bit >= limit {
                        return se_words;
                    }
                }
            }
            cu += step;
        }
        se_words
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mask_length_rules() {
        assert_eq!(CuMask::new(33, &[0, 0]), Err(MqdError::CuMaskLength(33)));
        assert_eq!(CuMask::new(0, &[]), Err(MqdError::CuMaskLength(0)));
        assert_eq!(
            CuMask::new(96, &[1, 2]),
            Err(MqdError::CuMaskTooShort { bits: 96, words: 2 })
        );
        let long = [u32::MAX; 40];
        let mask = CuMask::new(40 * 32, &long).unwrap();
        assert_eq!(mask.bit_count(), 1024);
        assert_eq!(mask.words().len(), 32);
        assert_eq!(CuMask::from_words(&[]), Err(MqdError::CuMaskLength(0)));
        assert!(CuMask::from_words(&[5]).unwrap().bit(2));
        assert!(!CuMask::from_words(&[5]).unwrap().bit(1));
        assert!(!CuMask::from_words(&[5]).unwrap().bit(4000));
    }

    #[test]
    fn one_sh_per_se_round_robins_over_engines() {
        // 4 SE x 1 SH x 16 CU (a 64-CU gfx9): bit0->SE0 CU0, bit1->SE1 CU0, bit4->SE0 CU1.
        let layout = ShaderLayout::uniform(4, 1, 16).unwrap();
        let mask = CuMask::from_words(&[0b1_0011, 0]).unwrap();
        let se = layout.distribute(&mask, false);
        assert_eq!(se[..4], [0b11, 0b01, 0, 0]);
        assert_eq!(se[4..], [0; 4]);
    }

    #[test]
    fn two_sh_per_se_fill_upper_halves() {
        // 4 SE x 2 SH: bit4 -> SE0 bit16 (SH1 CU0), bit5 -> SE1 bit16, bit8 -> SE0 bit1.
        let layout = ShaderLayout::uniform(4, 2, 8).unwrap();
        let mask = CuMask::from_words(&[(1 << 4) | (1 << 5) | (1 << 8), 0]).unwrap();
        let se = layout.distribute(&mask, false);
        assert_eq!(se[..4], [(1 << 16) | (1 << 1), 1 << 16, 0, 0]);
    }

    #[test]
    fn all_ones_enables_exactly_the_active_cus() {
        let layout = ShaderLayout::uniform(4, 1, 16).unwrap();
        let mask = CuMask::from_words(&[u32::MAX, u32::MAX]).unwrap();
        assert_eq!(layout.distribute(&mask, false)[..4], [0xFFFF; 4]);
        // A harvested array: SE2 has only 14 CUs, so the user bits move on to the others.
        let harvested = layout.with_active_cus(2, 0, 14).unwrap();
        assert_eq!(harvested.total_cus(), 62);
        assert_eq!(
            harvested.distribute(&mask, false)[..4],
            [0xFFFF, 0xFFFF, 0x3FFF, 0xFFFF]
        );
        // The 16th CU of SE3 is the 62nd slot: bit 61 -> SE3 CU15; SE2 CU14 never exists.
        let only_61 = CuMask::from_words(&[0, 1 << 29]).unwrap();
        assert_eq!(
            harvested.distribute(&only_61, false)[..4],
            [0, 0, 0, 1 << 15]
        );
    }

    #[test]
    fn wgp_mode_takes_two_bits_per_wgp() {
        // gfx1030-like: 4 SE x 2 SH x 10 CU (5 WGPs per SH).
        let layout = ShaderLayout::uniform(4, 2, 10).unwrap();
        // Bits 0/1 -> SE0 SH0 WGP0 (CUs 0,1); bit 3 alone -> SE1 SH0 WGP0;
        // bits 8/9 -> slot 4 = SE0 SH1 WGP0 (bits 16,17).
        let mask = CuMask::from_words(&[0b11_0000_1011, 0, 0]).unwrap();
        let se = layout.distribute(&mask, true);
        assert_eq!(se[..4], [0b11 | (0b11 << 16), 0b11, 0, 0]);
        let all = CuMask::from_words(&[u32::MAX; 3]).unwrap();
        assert_eq!(layout.distribute(&all, true)[..4], [0x03FF_03FF; 4]);
    }

    #[test]
    fn mask_is_cut_at_the_device_cu_count() {
        // 2 SE x 1 SH x 2 CU = 4 CUs: bits beyond 4 are ignored.
        let layout = ShaderLayout::uniform(2, 1, 2).unwrap();
        let mask = CuMask::from_words(&[0xFFFF_FFF0]).unwrap();
        assert_eq!(layout.distribute(&mask, false), [0; 8]);
        let mask = CuMask::from_words(&[0b1001]).unwrap();
        assert_eq!(layout.distribute(&mask, false)[..2], [0b01, 0b10]);
    }

    #[test]
    fn invalid_layouts_are_errors() {
        assert!(ShaderLayout::uniform(9, 1, 8).is_err());
        assert!(ShaderLayout::uniform(4, 3, 8).is_err());
        assert!(ShaderLayout::uniform(4, 1, 17).is_err());
        assert!(ShaderLayout::uniform(0, 1, 8).is_err());
        let l = ShaderLayout::uniform(4, 1, 16).unwrap();
        assert!(l.with_active_cus(4, 0, 8).is_err());
        assert!(l.with_active_cus(0, 1, 8).is_err());
        assert!(l.with_active_cus(0, 0, 17).is_err());
    }
}
