//! The gfx9 SH (compute) registers SET_SH_REG writes, by the names the register database
//! (and umr) gives them.
//!
//! Addresses are register dword addresses; SET_SH_REG carries them as dword offsets from
//! [`SH_REG_BASE`] (`0x2C00`). Checked against the gfx9.0 register header
//! (`gc_9_0_offset.h`: `mmCOMPUTE_DISPATCH_INITIATOR` = `0x0e00` … `mmCOMPUTE_USER_DATA_15` =
//! `0x0e4f` in GC segment 0, which starts at dword `0x2000`); the absolute values
//! (`COMPUTE_PGM_LO` = `0x2E0C`, `COMPUTE_USER_DATA_0` = `0x2E40`) are the ones the older
//! absolute headers give too. Only gfx9.0 is checked: gfx10/gfx11 (and gfx90a's
//! COMPUTE_PGM_RSRC3) are not verified here and must be checked before they share this table.
//!
//! ```
//! use pm4::regs::{ShReg, sh_reg_name};
//! assert_eq!(ShReg::COMPUTE_PGM_LO.offset(), 0x20C);
//! assert_eq!(sh_reg_name(0x2E40), Some("COMPUTE_USER_DATA_0"));
//! assert_eq!(sh_reg_name(0x2E30), None);
//! ```

pub use crate::user::SH_REG_BASE;

/// An SH register by its dword address.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ShReg(pub u32);

impl ShReg {
    /// The dword offset from [`SH_REG_BASE`] SET_SH_REG carries (wraps for addresses below
    /// the base, which are not SH registers).
    pub const fn offset(self) -> u32 {
        self.0.wrapping_sub(SH_REG_BASE)
    }

    /// The register at `offset` dwords from [`SH_REG_BASE`].
    pub const fn from_offset(offset: u16) -> ShReg {
        ShReg(SH_REG_BASE + offset as u32)
    }

    /// Its name, if it is a known compute register.
    pub const fn name(self) -> Option<&'static str> {
        sh_reg_name(self.0)
    }

    /// `COMPUTE_USER_DATA_i` (i < 16).
    pub const fn compute_user_data(i: u8) -> Option<ShReg> {
        if i < 16 {
            Some(ShReg(Self::COMPUTE_USER_DATA_0.0 + i as u32))
        } else {
            None
        }
    }
}

macro_rules! sh_regs {
    ($( $name:ident = $addr:literal, )+) => {
        impl ShReg {
            $(
                #[doc = concat!("`mm", stringify!($name), "`.")]
                pub const $name: ShReg = ShReg($addr);
            )+
        }

        /// Every named register, in address order.
        pub const ALL: &[ShReg] = &[$( ShReg::$name, )+];

        /// The name of the SH register at dword address `addr`, if known.
        pub const fn sh_reg_name(addr: u32) -> Option<&'static str> {
            match addr {
                $( $addr => Some(stringify!($name)), )+
                _ => None,
            }
        }
    };
}

sh_regs! {
    COMPUTE_DISPATCH_INITIATOR = 0x2E00,
    COMPUTE_DIM_X = 0x2E01,
    COMPUTE_DIM_Y = 0x2E02,
    COMPUTE_DIM_Z = 0x2E03,
    COMPUTE_START_X = 0x2E04,
    COMPUTE_START_Y = 0x2E05,
    COMPUTE_START_Z = 0x2E06,
    COMPUTE_NUM_THREAD_X = 0x2E07,
    COMPUTE_NUM_THREAD_Y = 0x2E08,
    COMPUTE_NUM_THREAD_Z = 0x2E09,
    COMPUTE_PIPELINESTAT_ENABLE = 0x2E0A,
    COMPUTE_PERFCOUNT_ENABLE = 0x2E0B,
    COMPUTE_PGM_LO = 0x2E0C,
    COMPUTE_PGM_HI = 0x2E0D,
    COMPUTE_DISPATCH_PKT_ADDR_LO = 0x2E0E,
    COMPUTE_DISPATCH_PKT_ADDR_HI = 0x2E0F,
    COMPUTE_DISPATCH_SCRATCH_BASE_LO = 0x2E10,
    COMPUTE_DISPATCH_SCRATCH_BASE_HI = 0x2E11,
    COMPUTE_PGM_RSRC1 = 0x2E12,
    COMPUTE_PGM_RSRC2 = 0x2E13,
    COMPUTE_VMID = 0x2E14,
    COMPUTE_RESOURCE_LIMITS = 0x2E15,
    COMPUTE_STATIC_THREAD_MGMT_SE0 = 0x2E16,
    COMPUTE_STATIC_THREAD_MGMT_SE1 = 0x2E17,
    COMPUTE_TMPRING_SIZE = 0x2E18,
    COMPUTE_STATIC_THREAD_MGMT_SE2 = 0x2E19,
    COMPUTE_STATIC_THREAD_MGMT_SE3 = 0x2E1A,
    COMPUTE_RESTART_X = 0x2E1B,
    COMPUTE_RESTART_Y = 0x2E1C,
    COMPUTE_RESTART_Z = 0x2E1D,
    COMPUTE_THREAD_TRACE_ENABLE = 0x2E1E,
    COMPUTE_MISC_RESERVED = 0x2E1F,
    COMPUTE_DISPATCH_ID = 0x2E20,
    COMPUTE_THREADGROUP_ID = 0x2E21,
    COMPUTE_RELAUNCH = 0x2E22,
    COMPUTE_WAVE_RESTORE_ADDR_LO = 0x2E23,
    COMPUTE_WAVE_RESTORE_ADDR_HI = 0x2E24,
    COMPUTE_STATIC_THREAD_MGMT_SE4 = 0x2E25,
    COMPUTE_STATIC_THREAD_MGMT_SE5 = 0x2E26,
    COMPUTE_STATIC_THREAD_MGMT_SE6 = 0x2E27,
    COMPUTE_STATIC_THREAD_MGMT_SE7 = 0x2E28,
    COMPUTE_USER_DATA_0 = 0x2E40,
    COMPUTE_USER_DATA_1 = 0x2E41,
    COMPUTE_USER_DATA_2 = 0x2E42,
    COMPUTE_USER_DATA_3 = 0x2E43,
    COMPUTE_USER_DATA_4 = 0x2E44,
    COMPUTE_USER_DATA_5 = 0x2E45,
    COMPUTE_USER_DATA_6 = 0x2E46,
    COMPUTE_USER_DATA_7 = 0x2E47,
    COMPUTE_USER_DATA_8 = 0x2E48,
    COMPUTE_USER_DATA_9 = 0x2E49,
    COMPUTE_USER_DATA_10 = 0x2E4A,
    COMPUTE_USER_DATA_11 = 0x2E4B,
    COMPUTE_USER_DATA_12 = 0x2E4C,
    COMPUTE_USER_DATA_13 = 0x2E4D,
    COMPUTE_USER_DATA_14 = 0x2E4E,
    COMPUTE_USER_DATA_15 = 0x2E4F,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The gc_9_0_offset.h values (GC segment 0 relative) plus the segment base 0x2000.
    #[test]
    fn offsets_match_the_gfx9_register_header() {
        const GC_SEG0: u32 = 0x2000;
        let header: &[(ShReg, u32)] = &[
            (ShReg::COMPUTE_DISPATCH_INITIATOR, 0x0e00),
            (ShReg::COMPUTE_DIM_X, 0x0e01),
            (ShReg::COMPUTE_START_X, 0x0e04),
            (ShReg::COMPUTE_START_Z, 0x0e06),
            (ShReg::COMPUTE_NUM_THREAD_X, 0x0e07),
            (ShReg::COMPUTE_NUM_THREAD_Z, 0x0e09),
            (ShReg::COMPUTE_PGM_LO, 0x0e0c),
            (ShReg::COMPUTE_PGM_HI, 0x0e0d),
            (ShReg::COMPUTE_PGM_RSRC1, 0x0e12),
            (ShReg::COMPUTE_PGM_RSRC2, 0x0e13),
            (ShReg::COMPUTE_RESOURCE_LIMITS, 0x0e15),
            (ShReg::COMPUTE_TMPRING_SIZE, 0x0e18),
            (ShReg::COMPUTE_STATIC_THREAD_MGMT_SE4, 0x0e25),
            (ShReg::COMPUTE_USER_DATA_0, 0x0e40),
            (ShReg::COMPUTE_USER_DATA_15, 0x0e4f),
        ];
        for &(reg, rel) in header {
            assert_eq!(reg.0, GC_SEG0 + rel, "{:?}", reg.name());
        }
        // SET_SH_REG offsets (what amdgpu/ROCr packets carry).
        assert_eq!(ShReg::COMPUTE_PGM_LO.offset(), 0x20C);
        assert_eq!(ShReg::COMPUTE_PGM_RSRC1.offset(), 0x212);
        assert_eq!(ShReg::COMPUTE_USER_DATA_0.offset(), 0x240);
        assert_eq!(ShReg::from_offset(0x207), ShReg::COMPUTE_NUM_THREAD_X);
    }

    #[test]
    fn names_round_trip_and_are_unique() {
        for (i, r) in ALL.iter().enumerate() {
            let name = r.name().expect("every listed register has a name");
            assert!(name.starts_with("COMPUTE_"));
            assert!(ALL[i + 1..].iter().all(|o| o.0 != r.0), "{name} twice");
        }
        assert_eq!(ALL.len(), 41 + 16);
        for i in 0..16u8 {
            assert_eq!(
                ShReg::compute_user_data(i).unwrap().0,
                0x2E40 + u32::from(i)
            );
        }
        assert_eq!(
            ShReg::compute_user_data(7).unwrap().name(),
            Some("COMPUTE_USER_DATA_7")
        );
        assert_eq!(ShReg::compute_user_data(16), None);
        assert_eq!(sh_reg_name(0x2E29), None);
        assert_eq!(sh_reg_name(0x2BFF), None);
    }
}
