//! Cross-lane operations: DPP source selection, `ds_swizzle_b32`, `ds_permute_b32`,
//! `ds_bpermute_b32`, and the read/write-lane helpers.

use super::wave::{Lanes, WAVE_SIZE};

/// The lane a DPP control (`dpp_ctrl`, 9 bits) reads for `lane`, or `None` when the source
/// is out of range (outside the row for row ops, outside the wave for wave shifts).
///
/// gfx9 encodings: `0x000–0x0ff` quad_perm; `0x101–0x10f` row_shl; `0x111–0x11f` row_shr;
/// `0x121–0x12f` row_ror; `0x130` wave_shl:1; `0x134` wave_rol:1; `0x138` wave_shr:1;
/// `0x13c` wave_ror:1; `0x140` row_mirror; `0x141` row_half_mirror; `0x142` row_bcast:15;
/// `0x143` row_bcast:31; gfx90a: `0x150–0x15f` row_newbcast (lane n of each row). Other
/// values are reserved and read nothing.
pub fn dpp_source_lane(ctrl: u32, lane: usize) -> Option<usize> {
    let row_base = lane & !15;
    let in_row = lane & 15;
    match ctrl {
        0x000..=0x0ff => {
            let quad_base = lane & !3;
            let sel = (ctrl >> (2 * (lane & 3))) & 3;
            Some(quad_base + sel as usize)
        }
        0x101..=0x10f => {
            let n = (ctrl & 15) as usize;
            (in_row + n < 16).then_some(lane + n)
        }
        0x111..=0x11f => {
            let n = (ctrl & 15) as usize;
            (in_row >= n).then(|| lane - n)
        }
        0x121..=0x12f => {
            let n = (ctrl & 15) as usize;
            Some(row_base + ((in_row + 16 - n) & 15))
        }
        0x130 => (lane + 1 < WAVE_SIZE).then_some(lane + 1),
        0x134 => Some((lane + 1) % WAVE_SIZE),
        0x138 => lane.checked_sub(1),
        0x13c => Some((lane + WAVE_SIZE - 1) % WAVE_SIZE),
        0x140 => Some(row_base + (15 - in_row)),
        0x141 => Some((lane & !7) + (7 - (lane & 7))),
        0x142 => (row_base >= 16).then(|| row_base - 1),
        0x143 => (row_base >= 32).then_some(31),
        // gfx90a row_newbcast:n (the only control of 64-bit DPP): lane n of the row
        0x150..=0x15f => Some(row_base + (ctrl & 15) as usize),
        _ => None,
    }
}

/// Whether a DPP control value is one of the defined ones (see [`dpp_source_lane`]).
pub fn dpp_ctrl_is_valid(ctrl: u32) -> bool {
    matches!(ctrl, 0x000..=0x0ff | 0x101..=0x10f | 0x111..=0x11f | 0x121..=0x12f)
        || matches!(ctrl, 0x130 | 0x134 | 0x138 | 0x13c | 0x140..=0x143)
}

/// Gathers a DPP source operand for the whole wave. Returns the per-lane source values and
/// the mask of lanes that write their result: a lane writes when its row (`row_mask`, bit
/// per 16-lane row) and bank (`bank_mask`, bit per group of 4 lanes within a row) are
/// enabled and its source lane is valid and active in `exec` — or, with `bound_ctrl`, reads
/// 0 from an invalid source instead of skipping the write.
pub fn dpp_gather(
    src: &Lanes,
    ctrl: u32,
    exec: u64,
    row_mask: u32,
    bank_mask: u32,
    bound_ctrl: bool,
) -> (Lanes, u64) {
    let mut out = [0u32; WAVE_SIZE];
    let mut write = 0u64;
    #[allow(clippy::needless_range_loop)] // lane is also a bit position and a lane number
    for lane in 0..WAVE_SIZE {
        let row_on = (row_mask >> (lane / 16)) & 1 != 0;
        let bank_on = (bank_mask >> ((lane >> 2) & 3)) & 1 != 0;
        if !row_on || !bank_on {
            continue;
        }
        match dpp_source_lane(ctrl, lane) {
            Some(s) if (exec >> s) & 1 != 0 => {
                out[lane] = src[s];
                write |= 1 << lane;
            }
            _ if bound_ctrl => {
                out[lane] = 0;
                write |= 1 << lane;
            }
            _ => {}
        }
    }
    (out, write)
}

/// The lane `ds_swizzle_b32` reads for `lane` with `offset` (16 bits): bit 15 set selects
/// quad-permute mode (`offset[7:0]` as 4 two-bit selectors within each quad); otherwise
/// bit-masked mode within each group of 32 lanes: `((lane & and) | or) ^ xor` with
/// and = `offset[4:0]`, or = `offset[9:5]`, xor = `offset[14:10]`.
pub fn swizzle_source_lane(offset: u16, lane: usize) -> usize {
    let off = u32::from(offset);
    if off & 0x8000 != 0 {
        let sel = (off >> (2 * (lane & 3))) & 3;
        (lane & !3) + sel as usize
    } else {
        let and_mask = (off & 0x1f) as usize;
        let or_mask = ((off >> 5) & 0x1f) as usize;
        let xor_mask = ((off >> 10) & 0x1f) as usize;
        (lane & 0x20) | ((((lane & and_mask) | or_mask) ^ xor_mask) & 0x1f)
    }
}

/// `ds_swizzle_b32` over the wave: active lanes read their swizzle source (0 if that lane
/// is inactive).
pub fn swizzle(src: &Lanes, offset: u16, exec: u64) -> Lanes {
    let mut out = [0u32; WAVE_SIZE];
    for (lane, o) in out.iter_mut().enumerate() {
        let s = swizzle_source_lane(offset, lane);
        *o = if (exec >> s) & 1 != 0 { src[s] } else { 0 };
    }
    out
}

/// `ds_bpermute_b32`: each active lane reads the lane `((addr + offset) >> 2) & 63` ("pull");
/// an inactive source reads 0.
pub fn bpermute(addr: &Lanes, data: &Lanes, offset: u32, exec: u64) -> Lanes {
    let mut out = [0u32; WAVE_SIZE];
    for lane in 0..WAVE_SIZE {
        let s = ((addr[lane].wrapping_add(offset) >> 2) & 63) as usize;
        out[lane] = if (exec >> s) & 1 != 0 { data[s] } else { 0 };
    }
    out
}

/// `ds_permute_b32`: each active lane writes its data to lane `((addr + offset) >> 2) & 63`
/// ("push"; the highest writing lane wins); lanes nobody writes get 0.
pub fn permute(addr: &Lanes, data: &Lanes, offset: u32, exec: u64) -> Lanes {
    let mut out = [0u32; WAVE_SIZE];
    for lane in 0..WAVE_SIZE {
        if (exec >> lane) & 1 != 0 {
            let d = ((addr[lane].wrapping_add(offset) >> 2) & 63) as usize;
            out[d] = data[lane];
        }
    }
    out
}

/// `v_readfirstlane_b32`: the value of the lowest active lane (lane 0 if EXEC is zero).
pub fn readfirstlane(src: &Lanes, exec: u64) -> u32 {
    let lane = if exec == 0 {
        0
    } else {
        exec.trailing_zeros() as usize
    };
    src[lane]
}
