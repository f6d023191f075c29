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
//! The context (graphics state) registers SET_CONTEXT_REG writes are named too
//! ([`ContextReg`], [`context_reg_name`]): the commonly written DB_*, PA_SC_*/PA_CL_*/PA_SU_*,
//! SPI_*, SX_*, CB_* and VGT_* registers of gfx9.0, at dword addresses from
//! [`CONTEXT_REG_BASE`] (`0xA000`; `gc_9_0_offset.h` lists them with `BASE_IDX 1`, GC
//! segment 1, which starts at dword `0xA000`: `mmDB_RENDER_CONTROL` = `0x0000`,
//! `mmPA_CL_VPORT_XSCALE_2` = `0x011b`). Registers not in the table show by address.
//!
//! ```
//! use pm4::regs::{ShReg, sh_reg_name};
//! assert_eq!(ShReg::COMPUTE_PGM_LO.offset(), 0x20C);
//! assert_eq!(sh_reg_name(0x2E40), Some("COMPUTE_USER_DATA_0"));
//! assert_eq!(sh_reg_name(0x2E30), None);
//! ```

pub use crate::user::{CONTEXT_REG_BASE, SH_REG_BASE};

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

/// A context register by its dword address.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ContextReg(pub u32);

impl ContextReg {
    /// The dword offset from [`CONTEXT_REG_BASE`] SET_CONTEXT_REG carries (wraps for
    /// addresses below the base, which are not context registers).
    pub const fn offset(self) -> u32 {
        self.0.wrapping_sub(CONTEXT_REG_BASE)
    }

    /// The register at `offset` dwords from [`CONTEXT_REG_BASE`].
    pub const fn from_offset(offset: u16) -> ContextReg {
        ContextReg(CONTEXT_REG_BASE + offset as u32)
    }

    /// Its name, if it is in the table.
    pub const fn name(self) -> Option<&'static str> {
        context_reg_name(self.0)
    }
}

macro_rules! context_regs {
    ($( $name:ident = $addr:literal, )+) => {
        impl ContextReg {
            $(
                #[doc = concat!("`mm", stringify!($name), "`.")]
                pub const $name: ContextReg = ContextReg($addr);
            )+
        }

        /// Every named context register, in address order.
        pub const ALL_CONTEXT: &[ContextReg] = &[$( ContextReg::$name, )+];

        /// The name of the gfx9 context register at dword address `addr`, if known.
        pub const fn context_reg_name(addr: u32) -> Option<&'static str> {
            match addr {
                $( $addr => Some(stringify!($name)), )+
                _ => None,
            }
        }
    };
}

context_regs! {
    DB_RENDER_CONTROL = 0xA000,
    DB_COUNT_CONTROL = 0xA001,
    DB_DEPTH_VIEW = 0xA002,
    DB_RENDER_OVERRIDE = 0xA003,
    DB_RENDER_OVERRIDE2 = 0xA004,
    DB_HTILE_DATA_BASE = 0xA005,
    DB_HTILE_DATA_BASE_HI = 0xA006,
    DB_DEPTH_SIZE = 0xA007,
    DB_DEPTH_BOUNDS_MIN = 0xA008,
    DB_DEPTH_BOUNDS_MAX = 0xA009,
    DB_STENCIL_CLEAR = 0xA00A,
    DB_DEPTH_CLEAR = 0xA00B,
    PA_SC_SCREEN_SCISSOR_TL = 0xA00C,
    PA_SC_SCREEN_SCISSOR_BR = 0xA00D,
    DB_Z_INFO = 0xA00E,
    DB_STENCIL_INFO = 0xA00F,
    DB_Z_READ_BASE = 0xA010,
    DB_Z_READ_BASE_HI = 0xA011,
    DB_STENCIL_READ_BASE = 0xA012,
    DB_STENCIL_READ_BASE_HI = 0xA013,
    DB_Z_WRITE_BASE = 0xA014,
    DB_Z_WRITE_BASE_HI = 0xA015,
    DB_STENCIL_WRITE_BASE = 0xA016,
    DB_STENCIL_WRITE_BASE_HI = 0xA017,
    DB_DFSM_CONTROL = 0xA018,
    DB_Z_INFO2 = 0xA01A,
    DB_STENCIL_INFO2 = 0xA01B,
    PA_SC_WINDOW_OFFSET = 0xA080,
    PA_SC_WINDOW_SCISSOR_TL = 0xA081,
    PA_SC_WINDOW_SCISSOR_BR = 0xA082,
    PA_SC_EDGERULE = 0xA08C,
    PA_SU_HARDWARE_SCREEN_OFFSET = 0xA08D,
    CB_TARGET_MASK = 0xA08E,
    CB_SHADER_MASK = 0xA08F,
    PA_SC_GENERIC_SCISSOR_TL = 0xA090,
    PA_SC_GENERIC_SCISSOR_BR = 0xA091,
    PA_SC_VPORT_SCISSOR_0_TL = 0xA094,
    PA_SC_VPORT_SCISSOR_0_BR = 0xA095,
    PA_SC_VPORT_ZMIN_0 = 0xA0B4,
    PA_SC_VPORT_ZMAX_0 = 0xA0B5,
    PA_SC_RASTER_CONFIG = 0xA0D4,
    PA_SC_RASTER_CONFIG_1 = 0xA0D5,
    PA_SC_SCREEN_EXTENT_CONTROL = 0xA0D6,
    PA_SC_TILE_STEERING_OVERRIDE = 0xA0D7,
    VGT_MULTI_PRIM_IB_RESET_INDX = 0xA103,
    CB_BLEND_RED = 0xA105,
    CB_BLEND_GREEN = 0xA106,
    CB_BLEND_BLUE = 0xA107,
    CB_BLEND_ALPHA = 0xA108,
    CB_DCC_CONTROL = 0xA109,
    DB_STENCIL_CONTROL = 0xA10B,
    DB_STENCILREFMASK = 0xA10C,
    DB_STENCILREFMASK_BF = 0xA10D,
    PA_CL_VPORT_XSCALE = 0xA10F,
    PA_CL_VPORT_XOFFSET = 0xA110,
    PA_CL_VPORT_YSCALE = 0xA111,
    PA_CL_VPORT_YOFFSET = 0xA112,
    PA_CL_VPORT_ZSCALE = 0xA113,
    PA_CL_VPORT_ZOFFSET = 0xA114,
    PA_CL_PROG_NEAR_CLIP_Z = 0xA187,
    SPI_PS_INPUT_CNTL_0 = 0xA191,
    SPI_PS_INPUT_CNTL_1 = 0xA192,
    SPI_PS_INPUT_CNTL_2 = 0xA193,
    SPI_PS_INPUT_CNTL_3 = 0xA194,
    SPI_PS_INPUT_CNTL_4 = 0xA195,
    SPI_PS_INPUT_CNTL_5 = 0xA196,
    SPI_PS_INPUT_CNTL_6 = 0xA197,
    SPI_PS_INPUT_CNTL_7 = 0xA198,
    SPI_PS_INPUT_CNTL_8 = 0xA199,
    SPI_PS_INPUT_CNTL_9 = 0xA19A,
    SPI_PS_INPUT_CNTL_10 = 0xA19B,
    SPI_PS_INPUT_CNTL_11 = 0xA19C,
    SPI_PS_INPUT_CNTL_12 = 0xA19D,
    SPI_PS_INPUT_CNTL_13 = 0xA19E,
    SPI_PS_INPUT_CNTL_14 = 0xA19F,
    SPI_PS_INPUT_CNTL_15 = 0xA1A0,
    SPI_PS_INPUT_CNTL_16 = 0xA1A1,
    SPI_PS_INPUT_CNTL_17 = 0xA1A2,
    SPI_PS_INPUT_CNTL_18 = 0xA1A3,
    SPI_PS_INPUT_CNTL_19 = 0xA1A4,
    SPI_PS_INPUT_CNTL_20 = 0xA1A5,
    SPI_PS_INPUT_CNTL_21 = 0xA1A6,
    SPI_PS_INPUT_CNTL_22 = 0xA1A7,
    SPI_PS_INPUT_CNTL_23 = 0xA1A8,
    SPI_PS_INPUT_CNTL_24 = 0xA1A9,
    SPI_PS_INPUT_CNTL_25 = 0xA1AA,
    SPI_PS_INPUT_CNTL_26 = 0xA1AB,
    SPI_PS_INPUT_CNTL_27 = 0xA1AC,
    SPI_PS_INPUT_CNTL_28 = 0xA1AD,
    SPI_PS_INPUT_CNTL_29 = 0xA1AE,
    SPI_PS_INPUT_CNTL_30 = 0xA1AF,
    SPI_PS_INPUT_CNTL_31 = 0xA1B0,
    SPI_VS_OUT_CONFIG = 0xA1B1,
    SPI_PS_INPUT_ENA = 0xA1B3,
    SPI_PS_INPUT_ADDR = 0xA1B4,
    SPI_INTERP_CONTROL_0 = 0xA1B5,
    SPI_PS_IN_CONTROL = 0xA1B6,
    SPI_BARYC_CNTL = 0xA1B8,
    SPI_TMPRING_SIZE = 0xA1BA,
    SPI_SHADER_POS_FORMAT = 0xA1C3,
    SPI_SHADER_Z_FORMAT = 0xA1C4,
    SPI_SHADER_COL_FORMAT = 0xA1C5,
    SX_PS_DOWNCONVERT = 0xA1D5,
    SX_BLEND_OPT_EPSILON = 0xA1D6,
    SX_BLEND_OPT_CONTROL = 0xA1D7,
    CB_BLEND0_CONTROL = 0xA1E0,
    CB_BLEND1_CONTROL = 0xA1E1,
    CB_BLEND2_CONTROL = 0xA1E2,
    CB_BLEND3_CONTROL = 0xA1E3,
    CB_BLEND4_CONTROL = 0xA1E4,
    CB_BLEND5_CONTROL = 0xA1E5,
    CB_BLEND6_CONTROL = 0xA1E6,
    CB_BLEND7_CONTROL = 0xA1E7,
    CB_MRT0_EPITCH = 0xA1E8,
    CB_MRT1_EPITCH = 0xA1E9,
    CB_MRT2_EPITCH = 0xA1EA,
    CB_MRT3_EPITCH = 0xA1EB,
    CB_MRT4_EPITCH = 0xA1EC,
    CB_MRT5_EPITCH = 0xA1ED,
    CB_MRT6_EPITCH = 0xA1EE,
    CB_MRT7_EPITCH = 0xA1EF,
    PA_CL_POINT_X_RAD = 0xA1F5,
    PA_CL_POINT_Y_RAD = 0xA1F6,
    PA_CL_POINT_SIZE = 0xA1F7,
    PA_CL_POINT_CULL_RAD = 0xA1F8,
    VGT_DRAW_INITIATOR = 0xA1FC,
    VGT_IMMED_DATA = 0xA1FD,
    VGT_EVENT_ADDRESS_REG = 0xA1FE,
    DB_DEPTH_CONTROL = 0xA200,
    DB_EQAA = 0xA201,
    CB_COLOR_CONTROL = 0xA202,
    DB_SHADER_CONTROL = 0xA203,
    PA_CL_CLIP_CNTL = 0xA204,
    PA_SU_SC_MODE_CNTL = 0xA205,
    PA_CL_VTE_CNTL = 0xA206,
    PA_CL_VS_OUT_CNTL = 0xA207,
    PA_CL_NANINF_CNTL = 0xA208,
    PA_SU_LINE_STIPPLE_CNTL = 0xA209,
    PA_SU_LINE_STIPPLE_SCALE = 0xA20A,
    PA_SU_PRIM_FILTER_CNTL = 0xA20B,
    PA_SU_SMALL_PRIM_FILTER_CNTL = 0xA20C,
    PA_CL_OBJPRIM_ID_CNTL = 0xA20D,
    PA_CL_NGG_CNTL = 0xA20E,
    PA_SU_OVER_RASTERIZATION_CNTL = 0xA20F,
    PA_STEREO_CNTL = 0xA210,
    PA_SU_POINT_SIZE = 0xA280,
    PA_SU_POINT_MINMAX = 0xA281,
    PA_SU_LINE_CNTL = 0xA282,
    PA_SC_LINE_STIPPLE = 0xA283,
    VGT_OUTPUT_PATH_CNTL = 0xA284,
    VGT_GS_MODE = 0xA290,
    VGT_GS_ONCHIP_CNTL = 0xA291,
    PA_SC_MODE_CNTL_0 = 0xA292,
    PA_SC_MODE_CNTL_1 = 0xA293,
    VGT_ENHANCE = 0xA294,
    VGT_GS_PER_ES = 0xA295,
    VGT_ES_PER_GS = 0xA296,
    VGT_GS_PER_VS = 0xA297,
    VGT_GS_OUT_PRIM_TYPE = 0xA29B,
    IA_ENHANCE = 0xA29C,
    WD_ENHANCE = 0xA2A0,
    VGT_PRIMITIVEID_EN = 0xA2A1,
    VGT_PRIMITIVEID_RESET = 0xA2A3,
    VGT_EVENT_INITIATOR = 0xA2A4,
    VGT_GS_MAX_PRIMS_PER_SUBGROUP = 0xA2A5,
    VGT_DRAW_PAYLOAD_CNTL = 0xA2A6,
    VGT_INSTANCE_STEP_RATE_0 = 0xA2A8,
    VGT_INSTANCE_STEP_RATE_1 = 0xA2A9,
    VGT_ESGS_RING_ITEMSIZE = 0xA2AB,
    VGT_GSVS_RING_ITEMSIZE = 0xA2AC,
    VGT_REUSE_OFF = 0xA2AD,
    VGT_VTX_CNT_EN = 0xA2AE,
    DB_HTILE_SURFACE = 0xA2AF,
    DB_SRESULTS_COMPARE_STATE0 = 0xA2B0,
    DB_SRESULTS_COMPARE_STATE1 = 0xA2B1,
    DB_PRELOAD_CONTROL = 0xA2B2,
    VGT_GS_MAX_VERT_OUT = 0xA2CE,
    VGT_TESS_DISTRIBUTION = 0xA2D4,
    VGT_SHADER_STAGES_EN = 0xA2D5,
    VGT_LS_HS_CONFIG = 0xA2D6,
    VGT_GS_VERT_ITEMSIZE = 0xA2D7,
    VGT_TF_PARAM = 0xA2DB,
    DB_ALPHA_TO_MASK = 0xA2DC,
    VGT_DISPATCH_DRAW_INDEX = 0xA2DD,
    PA_SU_POLY_OFFSET_DB_FMT_CNTL = 0xA2DE,
    PA_SU_POLY_OFFSET_CLAMP = 0xA2DF,
    PA_SU_POLY_OFFSET_FRONT_SCALE = 0xA2E0,
    PA_SU_POLY_OFFSET_FRONT_OFFSET = 0xA2E1,
    PA_SU_POLY_OFFSET_BACK_SCALE = 0xA2E2,
    PA_SU_POLY_OFFSET_BACK_OFFSET = 0xA2E3,
    VGT_GS_INSTANCE_CNT = 0xA2E4,
    PA_SC_CENTROID_PRIORITY_0 = 0xA2F5,
    PA_SC_CENTROID_PRIORITY_1 = 0xA2F6,
    PA_SC_LINE_CNTL = 0xA2F7,
    PA_SC_AA_CONFIG = 0xA2F8,
    PA_SU_VTX_CNTL = 0xA2F9,
    PA_CL_GB_VERT_CLIP_ADJ = 0xA2FA,
    PA_CL_GB_VERT_DISC_ADJ = 0xA2FB,
    PA_CL_GB_HORZ_CLIP_ADJ = 0xA2FC,
    PA_CL_GB_HORZ_DISC_ADJ = 0xA2FD,
    PA_SC_AA_MASK_X0Y0_X1Y0 = 0xA30E,
    PA_SC_AA_MASK_X0Y1_X1Y1 = 0xA30F,
    PA_SC_SHADER_CONTROL = 0xA310,
    PA_SC_BINNER_CNTL_0 = 0xA311,
    PA_SC_BINNER_CNTL_1 = 0xA312,
    PA_SC_CONSERVATIVE_RASTERIZATION_CNTL = 0xA313,
    PA_SC_NGG_MODE_CNTL = 0xA314,
    VGT_VERTEX_REUSE_BLOCK_CNTL = 0xA316,
    VGT_OUT_DEALLOC_CNTL = 0xA317,
    CB_COLOR0_BASE = 0xA318,
    CB_COLOR0_BASE_EXT = 0xA319,
    CB_COLOR0_ATTRIB2 = 0xA31A,
    CB_COLOR0_VIEW = 0xA31B,
    CB_COLOR0_INFO = 0xA31C,
    CB_COLOR0_ATTRIB = 0xA31D,
    CB_COLOR0_DCC_CONTROL = 0xA31E,
    CB_COLOR0_CMASK = 0xA31F,
    CB_COLOR0_CMASK_BASE_EXT = 0xA320,
    CB_COLOR0_FMASK = 0xA321,
    CB_COLOR0_FMASK_BASE_EXT = 0xA322,
    CB_COLOR0_CLEAR_WORD0 = 0xA323,
    CB_COLOR0_CLEAR_WORD1 = 0xA324,
    CB_COLOR0_DCC_BASE = 0xA325,
    CB_COLOR0_DCC_BASE_EXT = 0xA326,
    CB_COLOR1_BASE = 0xA327,
    CB_COLOR1_BASE_EXT = 0xA328,
    CB_COLOR1_ATTRIB2 = 0xA329,
    CB_COLOR1_VIEW = 0xA32A,
    CB_COLOR1_INFO = 0xA32B,
    CB_COLOR1_ATTRIB = 0xA32C,
    CB_COLOR1_DCC_CONTROL = 0xA32D,
    CB_COLOR1_CMASK = 0xA32E,
    CB_COLOR1_CMASK_BASE_EXT = 0xA32F,
    CB_COLOR1_FMASK = 0xA330,
    CB_COLOR1_FMASK_BASE_EXT = 0xA331,
    CB_COLOR1_CLEAR_WORD0 = 0xA332,
    CB_COLOR1_CLEAR_WORD1 = 0xA333,
    CB_COLOR1_DCC_BASE = 0xA334,
    CB_COLOR1_DCC_BASE_EXT = 0xA335,
    CB_COLOR2_BASE = 0xA336,
    CB_COLOR2_BASE_EXT = 0xA337,
    CB_COLOR2_ATTRIB2 = 0xA338,
    CB_COLOR2_VIEW = 0xA339,
    CB_COLOR2_INFO = 0xA33A,
    CB_COLOR2_ATTRIB = 0xA33B,
    CB_COLOR2_DCC_CONTROL = 0xA33C,
    CB_COLOR2_CMASK = 0xA33D,
    CB_COLOR2_CMASK_BASE_EXT = 0xA33E,
    CB_COLOR2_FMASK = 0xA33F,
    CB_COLOR2_FMASK_BASE_EXT = 0xA340,
    CB_COLOR2_CLEAR_WORD0 = 0xA341,
    CB_COLOR2_CLEAR_WORD1 = 0xA342,
    CB_COLOR2_DCC_BASE = 0xA343,
    CB_COLOR2_DCC_BASE_EXT = 0xA344,
    CB_COLOR3_BASE = 0xA345,
    CB_COLOR3_BASE_EXT = 0xA346,
    CB_COLOR3_ATTRIB2 = 0xA347,
    CB_COLOR3_VIEW = 0xA348,
    CB_COLOR3_INFO = 0xA349,
    CB_COLOR3_ATTRIB = 0xA34A,
    CB_COLOR3_DCC_CONTROL = 0xA34B,
    CB_COLOR3_CMASK = 0xA34C,
    CB_COLOR3_CMASK_BASE_EXT = 0xA34D,
    CB_COLOR3_FMASK = 0xA34E,
    CB_COLOR3_FMASK_BASE_EXT = 0xA34F,
    CB_COLOR3_CLEAR_WORD0 = 0xA350,
    CB_COLOR3_CLEAR_WORD1 = 0xA351,
    CB_COLOR3_DCC_BASE = 0xA352,
    CB_COLOR3_DCC_BASE_EXT = 0xA353,
    CB_COLOR4_BASE = 0xA354,
    CB_COLOR4_BASE_EXT = 0xA355,
    CB_COLOR4_ATTRIB2 = 0xA356,
    CB_COLOR4_VIEW = 0xA357,
    CB_COLOR4_INFO = 0xA358,
    CB_COLOR4_ATTRIB = 0xA359,
    CB_COLOR4_DCC_CONTROL = 0xA35A,
    CB_COLOR4_CMASK = 0xA35B,
    CB_COLOR4_CMASK_BASE_EXT = 0xA35C,
    CB_COLOR4_FMASK = 0xA35D,
    CB_COLOR4_FMASK_BASE_EXT = 0xA35E,
    CB_COLOR4_CLEAR_WORD0 = 0xA35F,
    CB_COLOR4_CLEAR_WORD1 = 0xA360,
    CB_COLOR4_DCC_BASE = 0xA361,
    CB_COLOR4_DCC_BASE_EXT = 0xA362,
    CB_COLOR5_BASE = 0xA363,
    CB_COLOR5_BASE_EXT = 0xA364,
    CB_COLOR5_ATTRIB2 = 0xA365,
    CB_COLOR5_VIEW = 0xA366,
    CB_COLOR5_INFO = 0xA367,
    CB_COLOR5_ATTRIB = 0xA368,
    CB_COLOR5_DCC_CONTROL = 0xA369,
    CB_COLOR5_CMASK = 0xA36A,
    CB_COLOR5_CMASK_BASE_EXT = 0xA36B,
    CB_COLOR5_FMASK = 0xA36C,
    CB_COLOR5_FMASK_BASE_EXT = 0xA36D,
    CB_COLOR5_CLEAR_WORD0 = 0xA36E,
    CB_COLOR5_CLEAR_WORD1 = 0xA36F,
    CB_COLOR5_DCC_BASE = 0xA370,
    CB_COLOR5_DCC_BASE_EXT = 0xA371,
    CB_COLOR6_BASE = 0xA372,
    CB_COLOR6_BASE_EXT = 0xA373,
    CB_COLOR6_ATTRIB2 = 0xA374,
    CB_COLOR6_VIEW = 0xA375,
    CB_COLOR6_INFO = 0xA376,
    CB_COLOR6_ATTRIB = 0xA377,
    CB_COLOR6_DCC_CONTROL = 0xA378,
    CB_COLOR6_CMASK = 0xA379,
    CB_COLOR6_CMASK_BASE_EXT = 0xA37A,
    CB_COLOR6_FMASK = 0xA37B,
    CB_COLOR6_FMASK_BASE_EXT = 0xA37C,
    CB_COLOR6_CLEAR_WORD0 = 0xA37D,
    CB_COLOR6_CLEAR_WORD1 = 0xA37E,
    CB_COLOR6_DCC_BASE = 0xA37F,
    CB_COLOR6_DCC_BASE_EXT = 0xA380,
    CB_COLOR7_BASE = 0xA381,
    CB_COLOR7_BASE_EXT = 0xA382,
    CB_COLOR7_ATTRIB2 = 0xA383,
    CB_COLOR7_VIEW = 0xA384,
    CB_COLOR7_INFO = 0xA385,
    CB_COLOR7_ATTRIB = 0xA386,
    CB_COLOR7_DCC_CONTROL = 0xA387,
    CB_COLOR7_CMASK = 0xA388,
    CB_COLOR7_CMASK_BASE_EXT = 0xA389,
    CB_COLOR7_FMASK = 0xA38A,
    CB_COLOR7_FMASK_BASE_EXT = 0xA38B,
    CB_COLOR7_CLEAR_WORD0 = 0xA38C,
    CB_COLOR7_CLEAR_WORD1 = 0xA38D,
    CB_COLOR7_DCC_BASE = 0xA38E,
    CB_COLOR7_DCC_BASE_EXT = 0xA38F,
}

/// The per-process memory registers of gfx9+ that the driver gives the scheduler in each
/// `MAP_PROCESS` packet and the hardware loads for the process's VMID: how its waves address
/// memory. Bit positions from the register database (`gc_9_0_sh_mask.h`: `SH_MEM_CONFIG`
/// `RETRY_DISABLE` at bit 12; `SH_MEM_BASES` `PRIVATE_BASE` in `[15:0]`, `SHARED_BASE` in
/// `[31:16]`).
pub mod sh_mem {
    /// `SH_MEM_CONFIG.RETRY_DISABLE`: a wave's memory fault is not retried (no XNACK replay).
    pub const CONFIG_RETRY_DISABLE: u32 = 1 << 12;

    /// `SH_MEM_BASES` for a shared (LDS) aperture at `shared_base` and a private (scratch)
    /// aperture at `private_base`: each field holds its aperture's address bits `[63:48]`.
    ///
    /// ```
    /// assert_eq!(pm4::regs::sh_mem::bases(0x1_0000_0000_0000, 0x2_0000_0000_0000), 0x0001_0002);
    /// ```
    pub const fn bases(shared_base: u64, private_base: u64) -> u32 {
        (((shared_base >> 48) as u32 & 0xffff) << 16) | ((private_base >> 48) as u32 & 0xffff)
    }
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

    /// gc_9_0_offset.h lists context registers relative to GC segment 1 (`BASE_IDX 1`),
    /// which starts at dword 0xA000.
    #[test]
    fn context_offsets_match_the_gfx9_register_header() {
        const GC_SEG1: u32 = 0xA000;
        let header: &[(ContextReg, u32)] = &[
            (ContextReg::DB_RENDER_CONTROL, 0x0000),
            // The header's viewport 2 starts at 0x011b, six registers per viewport.
            (ContextReg::PA_CL_VPORT_XSCALE, 0x011b - 2 * 6),
            (ContextReg::PA_CL_VPORT_ZOFFSET, 0x011b - 2 * 6 + 5),
        ];
        for &(reg, rel) in header {
            assert_eq!(reg.0, GC_SEG1 + rel, "{:?}", reg.name());
        }
        assert_eq!(CONTEXT_REG_BASE, GC_SEG1);
        assert_eq!(ContextReg::from_offset(0x318), ContextReg::CB_COLOR0_BASE);
        assert_eq!(ContextReg::CB_COLOR7_BASE.offset(), 0x381);
        // The eight colour targets repeat every 15 registers.
        assert_eq!(
            ContextReg::CB_COLOR1_BASE.0 - ContextReg::CB_COLOR0_BASE.0,
            0xF
        );
        assert_eq!(
            ContextReg::CB_COLOR7_INFO.0 - ContextReg::CB_COLOR0_INFO.0,
            7 * 0xF
        );
    }

    #[test]
    fn context_names_are_unique_sorted_and_in_the_context_space() {
        for (i, r) in ALL_CONTEXT.iter().enumerate() {
            assert!(r.name().is_some());
            assert!((CONTEXT_REG_BASE..CONTEXT_REG_BASE + 0x400).contains(&r.0));
            if let Some(next) = ALL_CONTEXT.get(i + 1) {
                assert!(next.0 > r.0, "{:?} not in address order", next.name());
            }
        }
        assert_eq!(context_reg_name(0xA000), Some("DB_RENDER_CONTROL"));
        assert_eq!(context_reg_name(0x9FFF), None);
        // An SH address is not a context register, nor the reverse.
        assert_eq!(context_reg_name(0x2E0C), None);
        assert_eq!(sh_reg_name(0xA000), None);
    }
}
