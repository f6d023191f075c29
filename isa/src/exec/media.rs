//! The media and packing VOP3 ops clang emits for `__builtin_amdgcn_*` builtins: sums of
//! absolute differences (`v_sad_hi_u8`, `v_sad_u16`, `v_msad_u8`, `v_qsad_pk_u16_u8`,
//! `v_mqsad_pk_u16_u8`, `v_mqsad_u32_u8`), `v_lerp_u8`, the packing conversions
//! (`v_cvt_pk_{i16_i32,u16_u32,u8_f32}`, `v_cvt_pknorm_{i16,u16}_f32`) and the cube map
//! coordinates (`v_cube{id,sc,tc,ma}_f32`), as pure functions of their operands following the
//! definitions of AMD's Vega ISA guide.

fn byte(x: u64, i: u32) -> u32 {
    ((x >> (8 * i)) & 0xff) as u32
}

/// The sum of absolute byte differences of `a` and `b`, skipping the bytes where `b` is 0
/// when `masked` (the "masked SAD" of `v_msad_u8` and the `mqsad` ops).
fn sad_bytes(a: u32, b: u32, masked: bool) -> u32 {
    (0..4)
        .filter(|&i| !masked || byte(u64::from(b), i) != 0)
        .map(|i| byte(u64::from(a), i).abs_diff(byte(u64::from(b), i)))
        .sum()
}

/// `v_sad_hi_u8`: the byte SAD of `a` and `b` shifted to bits 31:16, plus `c`.
pub fn sad_hi_u8(a: u32, b: u32, c: u32) -> u32 {
    (sad_bytes(a, b, false) << 16).wrapping_add(c)
}

/// `v_sad_u16`: the SAD of the two 16-bit halves, plus `c`.
pub fn sad_u16(a: u32, b: u32, c: u32) -> u32 {
    let h = |x: u32, i: u32| (x >> (16 * i)) & 0xffff;
    (h(a, 0).abs_diff(h(b, 0)) + h(a, 1).abs_diff(h(b, 1))).wrapping_add(c)
}

/// `v_msad_u8`: the byte SAD over the bytes where the reference `b` is not 0, plus `c`.
pub fn msad_u8(a: u32, b: u32, c: u32) -> u32 {
    sad_bytes(a, b, true).wrapping_add(c)
}

/// `v_lerp_u8`: per byte, the rounded average `(a + b + c[0]) >> 1`, the rounding bit the low
/// bit of `c`'s byte.
pub fn lerp_u8(a: u32, b: u32, c: u32) -> u32 {
    (0..4).fold(0, |r, i| {
        let (x, y, z) = (byte(a.into(), i), byte(b.into(), i), byte(c.into(), i));
        r | ((x + y + (z & 1)) >> 1) << (8 * i)
    })
}

/// `v_qsad_pk_u16_u8` (`masked` false) and `v_mqsad_pk_u16_u8` (true): four 16-bit SADs of the
/// reference `b` against the 32-bit windows of `a` starting at bytes 0–3, each added to the
/// matching 16-bit lane of `c` (the sum kept to 16 bits).
pub fn qsad_pk_u16_u8(a: u64, b: u32, c: u64, masked: bool) -> u64 {
    (0..4).fold(0, |r, i| {
        let window = (a >> (8 * i)) as u32;
        let lane = (c >> (16 * i)) & 0xffff;
        let sum = (u64::from(sad_bytes(window, b, masked)) + lane) & 0xffff;
        r | sum << (16 * i)
    })
}

/// `v_mqsad_u32_u8`: four 32-bit masked SADs of the reference `b` against the windows of `a`
/// starting at bytes 0–3, each added to the matching dword of `c`.
pub fn mqsad_u32_u8(a: u64, b: u32, c: [u32; 4]) -> [u32; 4] {
    let mut r = [0; 4];
    for (i, d) in r.iter_mut().enumerate() {
        let window = (a >> (8 * i)) as u32;
        *d = sad_bytes(window, b, true).wrapping_add(c[i]);
    }
    r
}

/// `v_cvt_pk_i16_i32`: both signed sources saturated to 16 bits, `a` in the low half.
pub fn cvt_pk_i16_i32(a: u32, b: u32) -> u32 {
    let s = |x: u32| (x as i32).clamp(i32::from(i16::MIN), i32::from(i16::MAX)) as u16;
    u32::from(s(a)) | u32::from(s(b)) << 16
}

/// `v_cvt_pk_u16_u32`: both unsigned sources saturated to 16 bits, `a` in the low half.
pub fn cvt_pk_u16_u32(a: u32, b: u32) -> u32 {
    a.min(0xffff) | b.min(0xffff) << 16
}

/// An f32 clamped to `[lo, hi]`, scaled by `scale` and rounded to the nearest integer
/// (ties to even); NaN gives 0.
fn norm(x: u32, lo: f32, hi: f32, scale: f32) -> i32 {
    let f = f32::from_bits(x);
    if f.is_nan() {
        return 0;
    }
    (f.clamp(lo, hi) * scale).round_ties_even() as i32
}

/// `v_cvt_pknorm_i16_f32`: both sources as signed normalized 16-bit values (`[-1, 1]` to
/// `[-32767, 32767]`), `a` in the low half.
pub fn cvt_pknorm_i16_f32(a: u32, b: u32) -> u32 {
    let s = |x| norm(x, -1.0, 1.0, 32767.0) as u16;
    u32::from(s(a)) | u32::from(s(b)) << 16
}

/// `v_cvt_pknorm_u16_f32`: both sources as unsigned normalized 16-bit values (`[0, 1]` to
/// `[0, 65535]`), `a` in the low half.
pub fn cvt_pknorm_u16_f32(a: u32, b: u32) -> u32 {
    let u = |x| norm(x, 0.0, 1.0, 65535.0) as u32;
    u(a) | u(b) << 16
}

/// `v_cvt_pk_u8_f32`: `a` converted to an unsigned byte (clamped to `[0, 255]`, rounded to
/// nearest even, NaN 0) replaces byte `b[1:0]` of `c`.
pub fn cvt_pk_u8_f32(a: u32, b: u32, c: u32) -> u32 {
    let shift = 8 * (b & 3);
    let v = norm(a, 0.0, 255.0, 1.0) as u32;
    (c & !(0xff << shift)) | v << shift
}

/// Which face a cube map direction selects, and the major axis: (face id, major-axis value).
fn cube_face(x: f32, y: f32, z: f32) -> (f32, f32) {
    if z.abs() >= x.abs() && z.abs() >= y.abs() {
        (if z < 0.0 { 5.0 } else { 4.0 }, z)
    } else if y.abs() >= x.abs() {
        (if y < 0.0 { 3.0 } else { 2.0 }, y)
    } else {
        (if x < 0.0 { 1.0 } else { 0.0 }, x)
    }
}

/// `v_cubeid_f32`: the face (0 +x, 1 −x, 2 +y, 3 −y, 4 +z, 5 −z) of direction (x, y, z).
pub fn cubeid(x: u32, y: u32, z: u32) -> u32 {
    let (x, y, z) = (f32::from_bits(x), f32::from_bits(y), f32::from_bits(z));
    cube_face(x, y, z).0.to_bits()
}

/// `v_cubema_f32`: twice the major-axis component.
pub fn cubema(x: u32, y: u32, z: u32) -> u32 {
    let (x, y, z) = (f32::from_bits(x), f32::from_bits(y), f32::from_bits(z));
    (2.0 * cube_face(x, y, z).1).to_bits()
}

/// `v_cubesc_f32`: the face's S coordinate (before the division by the major axis).
pub fn cubesc(x: u32, y: u32, z: u32) -> u32 {
    let (x, y, z) = (f32::from_bits(x), f32::from_bits(y), f32::from_bits(z));
    let s = match cube_face(x, y, z).0 as u32 {
        4 => x,
        5 => -x,
        2 | 3 => x,
        0 => -z,
        _ => z,
    };
    s.to_bits()
}

/// `v_cubetc_f32`: the face's T coordinate (before the division by the major axis).
pub fn cubetc(x: u32, y: u32, z: u32) -> u32 {
    let (x, y, z) = (f32::from_bits(x), f32::from_bits(y), f32::from_bits(z));
    let t = match cube_face(x, y, z).0 as u32 {
        2 => z,
        3 => -z,
        _ => -y,
    };
    t.to_bits()
}
