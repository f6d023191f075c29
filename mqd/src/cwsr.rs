//! Topology-derived queue buffer sizes (facts §9.9): what sysfs publishes as
//! `ctl_stack_size`, `cwsr_size`, `debug_memory_size` and `eop_buffer_size`, what the thunk
//! allocates, and what Linux 6.12's CREATE_QUEUE checks compute queues against.

use crate::error::MqdError;
use crate::props::GfxVersion;

/// SGPR save space per CU.
const SGPR_SIZE_PER_CU: u64 = 0x4000;
/// LDS save space per CU.
const LDS_SIZE_PER_CU: u64 = 0x10000;
/// Hardware-register save space per CU.
const HWREG_SIZE_PER_CU: u64 = 0x1000;
/// EOP buffer size every compute queue gets.
pub const EOP_BUFFER_SIZE: u32 = 4096;
/// gfx10.x control stacks are capped at this size.
const GFX10_CTL_STACK_CAP: u64 = 0x7000;

/// What the size formulas read from a node's topology.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TopologyInputs {
    /// `gfx_target_version` of the node (9.0.10 for gfx90a, 10.3.0 for gfx1030 …).
    pub gfx_target_version: GfxVersion,
    /// `simd_count`.
    pub simd_count: u32,
    /// `simd_per_cu`.
    pub simd_per_cu: u32,
    /// `num_xcc` (1 on single-XCC parts).
    pub num_xcc: u32,
    /// `array_count` (shader arrays in the node).
    pub array_count: u32,
    /// `simd_arrays_per_engine`.
    pub simd_arrays_per_engine: u32,
    /// VGPR save space per CU; `None` takes the part's value from
    /// [`vgpr_size_per_cu`].
    pub vgpr_per_cu: Option<u32>,
}

/// The sizes a node's topology requires of its compute queues' buffers, in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TopologySizes {
    /// Control stack at the start of the CWSR area (`ctl_stack_size`).
    pub ctl_stack_size: u32,
    /// Work-group state (VGPR/SGPR/LDS/HWREG save space) after the control stack.
    pub wg_data_size: u32,
    /// Whole CWSR area per XCC: `ctl_stack_size + wg_data_size` (`cwsr_size`).
    pub cwsr_size: u32,
    /// Debugger memory after the CWSR area (`debug_memory_size`).
    pub debug_memory_size: u32,
    /// EOP buffer (`eop_buffer_size`).
    pub eop_buffer_size: u32,
}

/// VGPR save space per CU of a gfx target: 0x80000 on MI100 (gfx908), MI200 (gfx90a) and
/// MI300 (gfx940/941/942); 0x60000 on gfx1100/1101/1151/1200/1201; 0x40000 otherwise.
pub fn vgpr_size_per_cu(target: GfxVersion) -> u32 {
    match target.target_version() {
        90008 | 90010 | 90400 | 90401 | 90402 => 0x80000,
        110000 | 110001 | 110501 | 120000 | 120001 => 0x60000,
        _ => 0x40000,
    }
}

fn align_up(value: u64, alignment: u64) -> u64 {
    value.div_ceil(alignment) * alignment
}

fn fit(value: u64, name: &'static str) -> Result<u32, MqdError> {
    u32::try_from(value).map_err(|_| MqdError::TopologySizeOverflow(name))
}

fn nonzero(value: u32, name: &'static str) -> Result<u64, MqdError> {
    if value == 0 {
        Err(MqdError::ZeroTopologyInput(name))
    } else {
        Ok(u64::from(value))
    }
}

/// The sizes of §9.9:
///
/// * `cu_num = simd_count / simd_per_cu / num_xcc`;
/// * `wave_num` = `min(cu_num × 40, array_count / simd_arrays_per_engine × 512)` before
///   gfx10.1, `cu_num × 32` from gfx10.1 on;
/// * `ctl_stack_size = ALIGN(40 + wave_num × (12 from gfx10.1 on, else 8) + 8, 4096)`,
///   capped at 0x7000 on gfx10.x;
/// * `wg_data = ALIGN(cu_num × (VGPR/CU + 0x4000 + 0x10000 + 0x1000), 4096)`;
/// * `cwsr_size = ctl_stack_size + wg_data`; `debug_memory_size = ALIGN(wave_num × 32, 64)`;
///   `eop_buffer_size = 4096`.
pub fn topology_sizes(inputs: &TopologyInputs) -> Result<TopologySizes, MqdError> {
    let simd_per_cu = nonzero(inputs.simd_per_cu, "simd_per_cu")?;
    let num_xcc = nonzero(inputs.num_xcc, "num_xcc")?;
    let cu_num = u64::from(inputs.simd_count) / simd_per_cu / num_xcc;
    let target = inputs.gfx_target_version;
    let rdna = target.target_version() >= 100100;
    let wave_num = if rdna {
        cu_num * 32
    } else {
        let per_engine = nonzero(inputs.simd_arrays_per_engine, "simd_arrays_per_engine")?;
        (cu_num * 40).min(u64::from(inputs.array_count) / per_engine * 512)
    };
    let per_wave = if rdna { 12 } else { 8 };
    let mut ctl_stack = align_up(40 + wave_num * per_wave + 8, 4096);
    if target.major == 10 {
        ctl_stack = ctl_stack.min(GFX10_CTL_STACK_CAP);
    }
    let vgpr = u64::from(
        inputs
            .vgpr_per_cu
            .unwrap_or_else(|| vgpr_size_per_cu(target)),
    );
    let wg_data = align_up(
        cu_num * (vgpr + SGPR_SIZE_PER_CU + LDS_SIZE_PER_CU + HWREG_SIZE_PER_CU),
        4096,
    );
    Ok(TopologySizes {
        ctl_stack_size: fit(ctl_stack, "ctl_stack_size")?,
        wg_data_size: fit(wg_data, "wg_data_size")?,
        cwsr_size: fit(ctl_stack + wg_data, "cwsr_size")?,
        debug_memory_size: fit(align_up(wave_num * 32, 64), "debug_memory_size")?,
        eop_buffer_size: EOP_BUFFER_SIZE,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inputs(target: u32, simd_count: u32, simd_per_cu: u32, arrays: u32) -> TopologyInputs {
        TopologyInputs {
            gfx_target_version: GfxVersion::from_target_version(target),
            simd_count,
            simd_per_cu,
            num_xcc: 1,
            array_count: arrays,
            simd_arrays_per_engine: 1,
            vgpr_per_cu: None,
        }
    }

    #[test]
    fn gfx900_with_64_cus() {
        // cu_num = 256/4/1 = 64; wave_num = min(64*40 = 2560, 4/1*512 = 2048) = 2048;
        // ctl = ALIGN(40 + 2048*8 + 8 = 16432, 4096) = 0x5000 (the golden example's);
        // wg = 64 * (0x40000 + 0x4000 + 0x10000 + 0x1000 = 0x55000) = 0x1540000;
        // debug = 2048*32 = 0x10000.
        let sizes = topology_sizes(&inputs(90000, 256, 4, 4)).unwrap();
        assert_eq!(
            sizes,
            TopologySizes {
                ctl_stack_size: 0x5000,
                wg_data_size: 0x0154_0000,
                cwsr_size: 0x0154_5000,
                debug_memory_size: 0x1_0000,
                eop_buffer_size: 4096,
            }
        );
    }

    #[test]
    fn gfx90a_with_104_cus() {
        // cu_num = 416/4 = 104; wave_num = min(4160, 8*512 = 4096) = 4096;
        // ctl = ALIGN(40 + 32768 + 8 = 32816, 4096) = 0x9000;
        // VGPR/CU 0x80000 (MI200) -> 0x95000 per CU; 104 * 0x95000 = 0x3C88000;
        // cwsr = 0x3C91000; debug = 4096*32 = 0x20000.
        let sizes = topology_sizes(&inputs(90010, 416, 4, 8)).unwrap();
        assert_eq!(sizes.ctl_stack_size, 0x9000);
        assert_eq!(sizes.wg_data_size, 0x03C8_8000);
        assert_eq!(sizes.cwsr_size, 0x03C9_1000);
        assert_eq!(sizes.debug_memory_size, 0x2_0000);
    }

    #[test]
    fn gfx1030_with_40_cus() {
        // cu_num = 80/2 = 40; wave_num = 40*32 = 1280;
        // ctl = ALIGN(40 + 1280*12 + 8 = 15408, 4096) = 0x4000 (under the 0x7000 cap);
        // wg = 40 * 0x55000 = 0xD48000; cwsr = 0xD4C000; debug = 1280*32 = 0xA000.
        let sizes = topology_sizes(&inputs(100300, 80, 2, 4)).unwrap();
        assert_eq!(sizes.ctl_stack_size, 0x4000);
        assert_eq!(sizes.wg_data_size, 0x00D4_8000);
        assert_eq!(sizes.cwsr_size, 0x00D4_C000);
        assert_eq!(sizes.debug_memory_size, 0xA000);
    }

    #[test]
    fn gfx10_control_stack_is_capped_but_gfx11_is_not() {
        // gfx1030 with 80 CUs: wave_num 2560, ALIGN(40 + 30720 + 8, 4096) = 0x8000 -> 0x7000.
        let sizes = topology_sizes(&inputs(100300, 160, 2, 8)).unwrap();
        assert_eq!(sizes.ctl_stack_size, 0x7000);
        // gfx1100 with 96 CUs: wave_num 3072, ALIGN(40 + 36864 + 8, 4096) = 0xA000;
        // VGPR/CU 0x60000 -> 0x75000 per CU; 96 * 0x75000 = 0x2BE0000.
        let sizes = topology_sizes(&inputs(110000, 192, 2, 12)).unwrap();
        assert_eq!(sizes.ctl_stack_size, 0xA000);
        assert_eq!(sizes.wg_data_size, 0x02BE_0000);
        assert_eq!(sizes.cwsr_size, 0x02BE_A000);
    }

    #[test]
    fn multi_xcc_divides_the_cus_and_vgpr_can_be_overridden() {
        // gfx942 with 304 CUs over 8 XCCs: cu_num = 1216/4/8 = 38;
        // wave_num = min(38*40 = 1520, 32/4*512 = 4096) = 1520; ctl = ALIGN(12208, 4096) = 0x3000.
        let mut mi300 = inputs(90402, 1216, 4, 32);
        mi300.num_xcc = 8;
        mi300.simd_arrays_per_engine = 4;
        let sizes = topology_sizes(&mi300).unwrap();
        assert_eq!(sizes.ctl_stack_size, 0x3000);
        assert_eq!(u64::from(sizes.wg_data_size), 38 * 0x95000);
        mi300.vgpr_per_cu = Some(0x40000);
        assert_eq!(
            u64::from(topology_sizes(&mi300).unwrap().wg_data_size),
            38 * 0x55000
        );
    }

    #[test]
    fn zero_divisors_and_overflow_are_errors() {
        let mut bad = inputs(90000, 256, 0, 4);
        assert_eq!(
            topology_sizes(&bad),
            Err(MqdError::ZeroTopologyInput("simd_per_cu"))
        );
        bad.simd_per_cu = 4;
        bad.num_xcc = 0;
        assert_eq!(
            topology_sizes(&bad),
            Err(MqdError::ZeroTopologyInput("num_xcc"))
        );
        bad.num_xcc = 1;
        bad.simd_arrays_per_engine = 0;
        assert_eq!(
            topology_sizes(&bad),
            Err(MqdError::ZeroTopologyInput("simd_arrays_per_engine"))
        );
        let huge = inputs(100300, u32::MAX, 1, 4);
        assert!(matches!(
            topology_sizes(&huge),
            Err(MqdError::TopologySizeOverflow(_))
        ));
    }

    #[test]
    fn vgpr_table() {
        assert_eq!(vgpr_size_per_cu(GfxVersion::new(9, 0, 8)), 0x80000);
        assert_eq!(vgpr_size_per_cu(GfxVersion::new(9, 4, 2)), 0x80000);
        assert_eq!(vgpr_size_per_cu(GfxVersion::new(11, 0, 1)), 0x60000);
        assert_eq!(vgpr_size_per_cu(GfxVersion::new(11, 5, 1)), 0x60000);
        assert_eq!(vgpr_size_per_cu(GfxVersion::new(11, 0, 2)), 0x40000);
        assert_eq!(vgpr_size_per_cu(GfxVersion::new(9, 0, 0)), 0x40000);
    }
}
