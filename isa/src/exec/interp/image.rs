//! MIMG image instructions: `image_load[_mip]`, `image_store[_mip]`, `image_get_resinfo`,
//! and `image_sample`, `image_sample_lz`, `image_sample_l`.
//!
//! The image resource T# is 8 SGPRs at SRSRC (Vega and MI200 ISA guides, "Image
//! Resource"): dword 0 and dword 1 `[7:0]` hold the 256-byte aligned base address (address
//! bits 47:8), dword 1 DATA_FORMAT `[25:20]` and NUM_FORMAT `[29:26]`, dword 2 WIDTH-1
//! `[13:0]` and HEIGHT-1 `[27:14]`, dword 3 DST_SEL_X..W `[11:0]`, BASE_LEVEL `[15:12]`,
//! LAST_LEVEL `[19:16]` and TYPE `[31:28]` (8 1D, 9 2D, 10 3D, 11 cube, 12 1D array, 13 2D
//! array, 14/15 MSAA), dword 4 DEPTH `[12:0]` (depth-1 of a 3-D image, the last array
//! slice of an array) and PITCH-1 `[28:13]`, dword 5 BASE_ARRAY `[12:0]`. The sampler S# is
//! 4 SGPRs at SSAMP: dword 0 CLAMP_X/Y/Z `[8:0]` and FORCE_UNNORMALIZED `[15]`, dword 2
//! XY_MAG_FILTER `[21:20]`, XY_MIN_FILTER `[23:22]`, Z_FILTER `[25:24]`, MIP_FILTER
//! `[27:26]`, dword 3 BORDER_COLOR_TYPE `[31:30]`.
//!
//! The address VGPRs follow VADDR in the order the ISA guides give: the coordinates the
//! resource TYPE has (x; x, y; x, y, z; x, slice; x, y, slice; x, y, face), then the mip
//! level of the `_mip` forms or the LOD of `image_sample_l`; `image_get_resinfo` takes the
//! mip level alone. Loads and samples return the components DMASK selects, packed into
//! consecutive VDATA registers (halves with D16), after DST_SEL routing; a TFE status dword
//! follows them (always 0: nothing is partially resident). Stores write the DMASK components
//! from consecutive registers and leave the others in memory as they were.
//!
//! Memory layout. The hardware's tiled (swizzled) layouts are not modelled: every image is
//! linear from its base address. Mip level `l` of an image of pitch `P` is `max(P >> l, 1)`
//! texels wide per row (at least the level's width), its rows are `max(HEIGHT >> l, 1)`
//! (one for 1-D images and 1-D arrays), its slices the level's depth (3-D) or every array
//! slice up to the last (arrays), and the levels follow each other from level 0 at the base
//! address. The model sees image memory only through these instructions and ROCr's blit
//! kernels (which use them too), so one consistent layout gives every program the same
//! results as the hardware's; the allocation ROCr sizes for a tiled image is never smaller.
//!
//! Sampling: coordinates are normalized unless the sampler's FORCE_UNNORMALIZED or the
//! instruction's UNORM bit says otherwise; the address mode of each dimension is applied to
//! texel indices (WRAP, MIRROR, CLAMP_LAST_TEXEL, CLAMP_BORDER, the MIRROR_ONCE forms
//! mirroring the coordinate about 0 first, the HALF_BORDER forms clamping it to half a
//! texel outside the image); linear filtering weighs the 2, 4 or 8 neighbours with exact f32
//! weights (the hardware's are 8-bit fractions, so results may differ in the last bits); an
//! array slice is the nearest integer, clamped to the slices. Integer formats are sampled
//! with point filtering. `image_sample` and `image_sample_lz` sample the base level;
//! `image_sample_l` the nearest level to its LOD (linear mip filtering between levels is
//! not modelled: the nearest level is used), with the minification filter for LOD > 0.
//! Faults: a T# or S# outside the SGPRs, A16, MSAA and cube sampling, the packed 10/11-bit
//! data formats, sRGB and register border colors are illegal instructions; an address that
//! does not translate is a memory fault, as for buffer loads.

use super::format::{
    data_format, float_valued, from_d16, from_reg, to_d16, to_reg, valid, SINT, UINT,
};
use super::{illegal, Wave, R};
use crate::exec::cache::Cached;
use crate::exec::env::WaveEnv;
use crate::exec::wave::{write_masked, Lanes, WAVE_SIZE};
use crate::table::Op;

const TYPE_1D: u32 = 8;
const TYPE_2D: u32 = 9;
const TYPE_3D: u32 = 10;
const TYPE_CUBE: u32 = 11;
const TYPE_1D_ARRAY: u32 = 12;
const TYPE_2D_ARRAY: u32 = 13;

/// An image resource (T#) as the interpreter uses it.
#[derive(Clone, Copy, Debug)]
struct Image {
    base: u64,
    /// Bytes per component and components per texel of DATA_FORMAT.
    bytes: u32,
    comps: usize,
    nfmt: u32,
    width: u32,
    height: u32,
    /// Depth of a 3-D image, 1 otherwise.
    depth: u32,
    pitch: u32,
    /// Slices in memory of an array or cube (the last slice + 1), 1 otherwise.
    slices: u32,
    base_array: u32,
    dst_sel: [u32; 4],
    base_level: u32,
    last_level: u32,
    ty: u32,
}

impl Image {
    fn decode(t: &[u32]) -> Option<Image> {
        let ty = t[3] >> 28;
        if !(TYPE_1D..=TYPE_2D_ARRAY).contains(&ty) {
            return None;
        }
        let (bytes, comps) = data_format((t[1] >> 20) & 0x3f)?;
        let nfmt = (t[1] >> 26) & 0xf;
        if !valid(bytes, nfmt) {
            return None;
        }
        let d3 = t[3];
        let depth_field = (t[4] & 0x1fff) + 1;
        let arrayed = matches!(ty, TYPE_CUBE | TYPE_1D_ARRAY | TYPE_2D_ARRAY);
        let width = (t[2] & 0x3fff) + 1;
        let height = if matches!(ty, TYPE_1D | TYPE_1D_ARRAY) {
            1
        } else {
            ((t[2] >> 14) & 0x3fff) + 1
        };
        let base_level = (d3 >> 12) & 0xf;
        Some(Image {
            base: ((u64::from(t[1] & 0xff) << 32) | u64::from(t[0])) << 8,
            bytes,
            comps,
            nfmt,
            width,
            height,
            depth: if ty == TYPE_3D { depth_field } else { 1 },
            pitch: (((t[4] >> 13) & 0xffff) + 1).max(width),
            slices: if arrayed { depth_field } else { 1 },
            base_array: if arrayed { t[5] & 0x1fff } else { 0 },
            dst_sel: [d3 & 7, (d3 >> 3) & 7, (d3 >> 6) & 7, (d3 >> 9) & 7],
            base_level,
            last_level: ((d3 >> 16) & 0xf).max(base_level),
            ty,
        })
    }

    /// Coordinates the resource type takes (x, y, z or slice).
    fn coords(&self) -> usize {
        match self.ty {
            TYPE_1D => 1,
            TYPE_2D | TYPE_1D_ARRAY => 2,
            _ => 3,
        }
    }

    /// Whether the last coordinate is an array slice (or cube face).
    fn arrayed(&self) -> bool {
        matches!(self.ty, TYPE_CUBE | TYPE_1D_ARRAY | TYPE_2D_ARRAY)
    }

    /// Bytes per texel.
    fn bpe(&self) -> u64 {
        u64::from(self.bytes) * self.comps as u64
    }

    /// Width, rows, depth and row pitch (texels) of mip level `l` (absolute).
    fn level(&self, l: u32) -> (u32, u32, u32, u32) {
        let w = (self.width >> l).max(1);
        let h = (self.height >> l).max(1);
        let d = (self.depth >> l).max(1);
        let pitch = (self.pitch >> l).max(w);
        (w, h, d, pitch)
    }

    /// Byte offset of mip level `l` (absolute) from the base address.
    fn level_offset(&self, l: u32) -> u64 {
        // at most 2^16 * 2^14 * 2^26 * 16 bytes a level: wrapping keeps 16 levels panic-free
        (0..l).fold(0u64, |sum, k| {
            let (_, h, d, pitch) = self.level(k);
            let slices = u64::from(d) * u64::from(self.slices);
            sum.wrapping_add(
                (u64::from(pitch) * u64::from(h))
                    .wrapping_mul(slices)
                    .wrapping_mul(self.bpe()),
            )
        })
    }

    /// The address of texel (x, y, z-or-absolute-slice) of level `l`.
    fn texel(&self, l: u32, x: u32, y: u32, s: u32) -> u64 {
        let (_, h, _, pitch) = self.level(l);
        let index = (u64::from(s) * u64::from(h) + u64::from(y)) * u64::from(pitch) + u64::from(x);
        self.base
            .wrapping_add(self.level_offset(l))
            .wrapping_add(index * self.bpe())
    }

    /// Slices an array coordinate may address (from BASE_ARRAY to the last slice).
    fn layers(&self) -> u32 {
        self.slices.saturating_sub(self.base_array).max(1)
    }

    /// The address of integer coordinates `c` at mip level `mip` (relative to BASE_LEVEL),
    /// or None out of the image.
    fn address(&self, c: [u32; 3], mip: u32) -> Option<u64> {
        let l = self.base_level.checked_add(mip)?;
        if l > self.last_level {
            return None;
        }
        let (w, h, d, _) = self.level(l);
        let n = self.coords();
        let (x, y) = (
            c[0],
            if n > 1 && self.ty != TYPE_1D_ARRAY {
                c[1]
            } else {
                0
            },
        );
        let s = match self.ty {
            TYPE_1D_ARRAY => c[1],
            TYPE_2D_ARRAY | TYPE_CUBE | TYPE_3D => c[2],
            _ => 0,
        };
        if x >= w || y >= h {
            return None;
        }
        let s = if self.arrayed() {
            let abs = self.base_array.checked_add(s)?;
            if abs >= self.slices {
                return None;
            }
            abs
        } else {
            if s >= d {
                return None;
            }
            s
        };
        Some(self.texel(l, x, y, s))
    }

    /// The register value 1 of this format (1.0 for float-valued formats).
    fn one(&self) -> u32 {
        if float_valued(self.nfmt) {
            1.0f32.to_bits()
        } else {
            1
        }
    }
}

/// A sampler (S#) as the interpreter uses it.
#[derive(Clone, Copy, Debug)]
struct Sampler {
    clamp: [u32; 3],
    unnormalized: bool,
    mag_linear: bool,
    min_linear: bool,
    /// Z_FILTER: 0 none (the XY filter), 1 point, 2 linear.
    z_filter: u32,
    /// BORDER_COLOR_TYPE: 0 transparent black, 1 opaque black, 2 opaque white.
    border: u32,
}

impl Sampler {
    fn decode(s: &[u32]) -> Option<Sampler> {
        let border = s[3] >> 30;
        if border == 3 {
            return None; // the border color register is not modelled
        }
        Some(Sampler {
            clamp: [s[0] & 7, (s[0] >> 3) & 7, (s[0] >> 6) & 7],
            unnormalized: (s[0] >> 15) & 1 != 0,
            // ANISO_POINT / ANISO_LINEAR filter as their base filter
            mag_linear: (s[2] >> 20) & 1 != 0,
            min_linear: (s[2] >> 22) & 1 != 0,
            z_filter: (s[2] >> 24) & 3,
            border,
        })
    }
}

/// The texel index address mode `mode` makes of `i` in an extent `n`, or None for the
/// border (the MIRROR_ONCE modes have already mirrored the coordinate).
fn wrap_index(i: i64, n: i64, mode: u32) -> Option<i64> {
    match mode {
        0 => Some(i.rem_euclid(n)),
        1 => {
            let p = i.rem_euclid(2 * n);
            Some(if p < n { p } else { 2 * n - 1 - p })
        }
        2 | 3 => Some(i.clamp(0, n - 1)),
        _ => (0..n).contains(&i).then_some(i),
    }
}

/// One dimension's taps: (index or border, weight), one for point filtering, two for linear.
fn taps(t: f32, n: u32, mode: u32, linear: bool) -> [(Option<i64>, f32); 2] {
    let n = i64::from(n);
    let mut t = if t.is_nan() { 0.0 } else { t };
    if mode & 1 == 1 && mode >= 3 {
        t = t.abs(); // MIRROR_ONCE_*
    }
    if mode == 4 || mode == 5 {
        t = t.clamp(-0.5, n as f32 + 0.5); // *_HALF_BORDER
    }
    let at = |x: f32| x.floor().clamp(-1e12, 1e12) as i64;
    if !linear {
        return [(wrap_index(at(t), n, mode), 1.0), (None, 0.0)];
    }
    let u = t - 0.5;
    let i0 = at(u);
    let frac = (u - u.floor()).clamp(0.0, 1.0);
    [
        (wrap_index(i0, n, mode), 1.0 - frac),
        (wrap_index(i0 + 1, n, mode), frac),
    ]
}

/// The instruction fields of a MIMG word pair.
#[derive(Clone, Copy)]
struct Fields {
    dmask: u32,
    unorm: bool,
    d16: bool,
    tfe: bool,
    acc: bool,
    vaddr: usize,
    vdata: usize,
    srsrc: usize,
    ssamp: usize,
}

impl Wave {
    /// Executes a MIMG instruction (see the module documentation).
    pub(super) fn mimg<E: WaveEnv + ?Sized>(&mut self, c: &Cached, env: &mut E) -> R<()> {
        let (w0, w1) = (c.inst.words[0], c.inst.words[1]);
        let gfx90a = self.target == crate::Target::Gfx90a;
        let f = Fields {
            dmask: (w0 >> 8) & 0xf,
            unorm: (w0 >> 12) & 1 != 0,
            d16: w1 >> 31 != 0,
            tfe: !gfx90a && (w0 >> 16) & 1 != 0,
            acc: gfx90a && (w0 >> 16) & 1 != 0,
            vaddr: (w1 & 0xff) as usize,
            vdata: ((w1 >> 8) & 0xff) as usize,
            srsrc: (((w1 >> 16) & 0x1f) << 2) as usize,
            ssamp: (((w1 >> 21) & 0x1f) << 2) as usize,
        };
        // A16 (16-bit addresses) is not modelled
        if (w0 >> 15) & 1 != 0 {
            return Err(illegal(self.pc, c));
        }
        let image = self
            .sgpr
            .get(f.srsrc..f.srsrc + 8)
            .and_then(Image::decode)
            .ok_or_else(|| illegal(self.pc, c))?;
        match c.inst.op {
            Op::ImageLoad => self.image_load(env, f, &image, false),
            Op::ImageLoadMip => self.image_load(env, f, &image, true),
            Op::ImageStore => self.image_store(env, f, &image, false),
            Op::ImageStoreMip => self.image_store(env, f, &image, true),
            Op::ImageGetResinfo => self.image_resinfo(f, &image),
            Op::ImageSample | Op::ImageSampleLz | Op::ImageSampleL => {
                if image.ty == TYPE_CUBE {
                    return Err(illegal(self.pc, c));
                }
                let sampler = self
                    .sgpr
                    .get(f.ssamp..f.ssamp + 4)
                    .and_then(Sampler::decode)
                    .ok_or_else(|| illegal(self.pc, c))?;
                self.image_sample(c, env, f, &image, &sampler)
            }
            _ => Err(illegal(self.pc, c)),
        }
    }

    /// The integer address VGPRs of lane `l`: coordinates, then the mip level if `mip`.
    fn int_coords(&self, f: Fields, image: &Image, mip: bool) -> R<([Lanes; 3], Lanes)> {
        let mut c = [[0u32; WAVE_SIZE]; 3];
        let n = image.coords();
        for (k, dst) in c.iter_mut().enumerate().take(n) {
            *dst = *self.v(f.vaddr + k)?;
        }
        let m = if mip {
            *self.v(f.vaddr + n)?
        } else {
            [0; WAVE_SIZE]
        };
        Ok((c, m))
    }

    /// Writes the RGBA register values `rgba` of the lanes in EXEC to VDATA as DMASK, D16
    /// and TFE say.
    fn image_return(&mut self, f: Fields, nfmt: u32, rgba: &[Lanes; 4]) -> R<()> {
        let exec = self.exec();
        let dmask = if f.dmask == 0 { 1 } else { f.dmask };
        let selected: Vec<&Lanes> = (0..4)
            .filter(|k| (dmask >> k) & 1 != 0)
            .map(|k| &rgba[k])
            .collect();
        let mut regs = 0;
        if f.d16 {
            for pair in selected.chunks(2) {
                let mut r: Lanes = [0; WAVE_SIZE];
                for (l, v) in r.iter_mut().enumerate() {
                    let lo = to_d16(pair[0][l], nfmt);
                    let hi = pair.get(1).map_or(0, |p| to_d16(p[l], nfmt));
                    *v = lo | (hi << 16);
                }
                write_masked(self.data_reg_mut(f.acc, f.vdata + regs)?, &r, exec);
                regs += 1;
            }
        } else {
            for r in selected {
                let r = *r;
                write_masked(self.data_reg_mut(f.acc, f.vdata + regs)?, &r, exec);
                regs += 1;
            }
        }
        if f.tfe {
            write_masked(
                self.data_reg_mut(f.acc, f.vdata + regs)?,
                &[0; WAVE_SIZE],
                exec,
            );
        }
        Ok(())
    }

    /// Reads the components of the texels at `addrs` in the lanes of `mask`, converted to
    /// register values and routed through DST_SEL; lanes outside `mask` read 0.
    fn fetch_texels<E: WaveEnv + ?Sized>(
        env: &mut E,
        image: &Image,
        addrs: &[u64; WAVE_SIZE],
        mask: u64,
    ) -> R<[Lanes; 4]> {
        let one = image.one();
        let mut fetched = [[0u32; WAVE_SIZE]; 4];
        for (k, out) in fetched.iter_mut().enumerate() {
            if k >= image.comps {
                *out = [if k == 3 { one } else { 0 }; WAVE_SIZE];
                continue;
            }
            if mask == 0 {
                continue;
            }
            let mut at = *addrs;
            at.iter_mut()
                .for_each(|a| *a = a.wrapping_add(u64::from(image.bytes) * k as u64));
            let mut raw = [[0u32; WAVE_SIZE]; 1];
            env.load(&at, mask, image.bytes, &mut raw)?;
            for (o, r) in out.iter_mut().zip(raw[0]) {
                *o = to_reg(r, image.bytes, image.nfmt);
            }
        }
        let mut rgba = [[0u32; WAVE_SIZE]; 4];
        for (k, out) in rgba.iter_mut().enumerate() {
            *out = match image.dst_sel[k] {
                s @ 4..=7 => fetched[(s - 4) as usize],
                1 => [one; WAVE_SIZE],
                _ => [0; WAVE_SIZE],
            };
            for (l, v) in out.iter_mut().enumerate() {
                if (mask >> l) & 1 == 0 {
                    *v = 0;
                }
            }
        }
        Ok(rgba)
    }

    /// Each active lane's texel address for the load/store forms, and the lanes whose
    /// coordinates fall inside the image (the others read 0 and store nothing).
    fn texel_addresses(&self, f: Fields, image: &Image, mip: bool) -> R<([u64; WAVE_SIZE], u64)> {
        let (coords, mips) = self.int_coords(f, image, mip)?;
        let exec = self.exec();
        let mut addrs = [0u64; WAVE_SIZE];
        let mut mask = 0u64;
        for l in 0..WAVE_SIZE {
            if (exec >> l) & 1 == 0 {
                continue;
            }
            if let Some(a) = image.address([coords[0][l], coords[1][l], coords[2][l]], mips[l]) {
                addrs[l] = a;
                mask |= 1 << l;
            }
        }
        Ok((addrs, mask))
    }

    fn image_load<E: WaveEnv + ?Sized>(
        &mut self,
        env: &mut E,
        f: Fields,
        image: &Image,
        mip: bool,
    ) -> R<()> {
        let (addrs, mask) = self.texel_addresses(f, image, mip)?;
        let rgba = Self::fetch_texels(env, image, &addrs, mask)?;
        self.image_return(f, image.nfmt, &rgba)
    }

    fn image_store<E: WaveEnv + ?Sized>(
        &mut self,
        env: &mut E,
        f: Fields,
        image: &Image,
        mip: bool,
    ) -> R<()> {
        let (addrs, mask) = self.texel_addresses(f, image, mip)?;
        let dmask = if f.dmask == 0 { 1 } else { f.dmask };
        let mut slot = 0usize;
        for k in 0..4usize {
            if (dmask >> k) & 1 == 0 {
                continue;
            }
            let n = slot;
            slot += 1;
            let value: Lanes = if f.d16 {
                let reg = self.data_reg(f.acc, f.vdata + n / 2)?;
                let mut v = [0u32; WAVE_SIZE];
                for l in 0..WAVE_SIZE {
                    v[l] = from_d16(reg[l] >> (16 * (n % 2)), image.nfmt);
                }
                v
            } else {
                *self.data_reg(f.acc, f.vdata + n)?
            };
            if k >= image.comps || mask == 0 {
                continue;
            }
            let mut raw = [[0u32; WAVE_SIZE]; 1];
            for l in 0..WAVE_SIZE {
                raw[0][l] = from_reg(value[l], image.bytes, image.nfmt);
            }
            let mut at = addrs;
            at.iter_mut()
                .for_each(|a| *a = a.wrapping_add(u64::from(image.bytes) * k as u64));
            env.store(&at, mask, image.bytes, &raw)?;
        }
        Ok(())
    }

    /// `image_get_resinfo`: width, height, depth (or array slices) of the mip level in
    /// VADDR (relative to BASE_LEVEL; 0 past the last level), and the level count.
    fn image_resinfo(&mut self, f: Fields, image: &Image) -> R<()> {
        let mips = *self.v(f.vaddr)?;
        let levels = image.last_level - image.base_level + 1;
        let mut rgba = [[0u32; WAVE_SIZE]; 4];
        for l in 0..WAVE_SIZE {
            rgba[3][l] = levels;
            let Some(level) = image.base_level.checked_add(mips[l]) else {
                continue;
            };
            if level > image.last_level {
                continue;
            }
            let (w, h, d, _) = image.level(level);
            let (y, z) = match image.ty {
                TYPE_1D => (1, 1),
                TYPE_1D_ARRAY => (image.layers(), 1),
                TYPE_2D => (h, 1),
                TYPE_3D => (h, d),
                _ => (h, image.layers()),
            };
            rgba[0][l] = w;
            rgba[1][l] = y;
            rgba[2][l] = z;
        }
        // the sizes are integers whatever the format
        self.image_return(f, UINT, &rgba)
    }

    fn image_sample<E: WaveEnv + ?Sized>(
        &mut self,
        c: &Cached,
        env: &mut E,
        f: Fields,
        image: &Image,
        sampler: &Sampler,
    ) -> R<()> {
        let n = image.coords();
        let mut coords = [[0f32; WAVE_SIZE]; 3];
        for (k, dst) in coords.iter_mut().enumerate().take(n) {
            let r = self.v(f.vaddr + k)?;
            for l in 0..WAVE_SIZE {
                dst[l] = f32::from_bits(r[l]);
            }
        }
        let lod = if c.inst.op == Op::ImageSampleL {
            let r = self.v(f.vaddr + n)?;
            let mut lod = [0f32; WAVE_SIZE];
            for l in 0..WAVE_SIZE {
                lod[l] = f32::from_bits(r[l]);
            }
            Some(lod)
        } else {
            None
        };
        let exec = self.exec();
        let integer = matches!(image.nfmt, UINT | SINT);
        let unnormalized = f.unorm || sampler.unnormalized;
        // spatial dimensions: 3-D images have three, arrays one fewer than their coordinates
        let dims = if image.arrayed() { n - 1 } else { n };
        let one = image.one();
        let border: [u32; 4] = match sampler.border {
            0 => [0; 4],
            1 => [0, 0, 0, one],
            _ => [one; 4],
        };

        // per lane: the level, the taps of each dimension, the slice
        let mut level = [image.base_level; WAVE_SIZE];
        let mut dim_taps = [[[(None, 0.0f32); 2]; 3]; WAVE_SIZE];
        let mut slice = [0u32; WAVE_SIZE];
        let mut linear = [[false; 3]; WAVE_SIZE];
        for l in 0..WAVE_SIZE {
            if (exec >> l) & 1 == 0 {
                continue;
            }
            let mut minify = false;
            if let Some(lod) = &lod {
                let x = lod[l];
                if x > 0.0 {
                    minify = true;
                    let span = image.last_level - image.base_level;
                    let nearest = (x + 0.5).floor().clamp(0.0, span as f32) as u32;
                    level[l] = image.base_level + nearest;
                }
            }
            let xy_linear = !integer
                && if minify {
                    sampler.min_linear
                } else {
                    sampler.mag_linear
                };
            let (w, h, d, _) = image.level(level[l]);
            let extents = [w, h, d];
            for k in 0..dims {
                let lin = if k == 2 {
                    !integer
                        && match sampler.z_filter {
                            0 => xy_linear,
                            z => z == 2,
                        }
                } else {
                    xy_linear
                };
                linear[l][k] = lin;
                let t = if unnormalized {
                    coords[k][l]
                } else {
                    coords[k][l] * extents[k] as f32
                };
                dim_taps[l][k] = taps(t, extents[k], sampler.clamp[k], lin);
            }
            if image.arrayed() {
                let s = coords[n - 1][l];
                let s = if s.is_nan() { 0.0 } else { s.round_ties_even() };
                let max = (image.layers() - 1) as f32;
                slice[l] = image.base_array + s.clamp(0.0, max) as u32;
            }
        }

        let max_taps = 1usize << dims;
        let mut acc = [[0f32; WAVE_SIZE]; 4];
        let mut point = [[0u32; WAVE_SIZE]; 4];
        for tap in 0..max_taps {
            let mut addrs = [0u64; WAVE_SIZE];
            let mut mask = 0u64;
            let mut weight = [0f32; WAVE_SIZE];
            let mut on_border = 0u64;
            for l in 0..WAVE_SIZE {
                if (exec >> l) & 1 == 0 {
                    continue;
                }
                let mut wgt = 1.0f32;
                let mut idx = [0i64; 3];
                let mut is_border = false;
                let mut used = true;
                for k in 0..dims {
                    let bit = (tap >> k) & 1;
                    if bit == 1 && !linear[l][k] {
                        used = false;
                        break;
                    }
                    let (i, w) = dim_taps[l][k][bit];
                    if linear[l][k] {
                        wgt *= w;
                    }
                    match i {
                        Some(i) => idx[k] = i,
                        None => is_border = true,
                    }
                }
                if !used {
                    continue;
                }
                weight[l] = wgt;
                if is_border {
                    on_border |= 1 << l;
                    continue;
                }
                let s = if image.arrayed() {
                    slice[l]
                } else {
                    idx[2] as u32
                };
                let (x, y) = (idx[0] as u32, idx[1] as u32);
                let y = if image.ty == TYPE_1D_ARRAY { 0 } else { y };
                addrs[l] = image.texel(level[l], x, y, s);
                mask |= 1 << l;
            }
            let rgba = Self::fetch_texels(env, image, &addrs, mask)?;
            for k in 0..4 {
                for l in 0..WAVE_SIZE {
                    let v = if (on_border >> l) & 1 == 1 {
                        border[k]
                    } else if (mask >> l) & 1 == 1 {
                        rgba[k][l]
                    } else {
                        continue;
                    };
                    if tap == 0 {
                        point[k][l] = v;
                    }
                    acc[k][l] += weight[l] * f32::from_bits(v);
                }
            }
        }
        let mut rgba = [[0u32; WAVE_SIZE]; 4];
        for l in 0..WAVE_SIZE {
            let filtered = linear[l][..dims].iter().any(|&b| b);
            for k in 0..4 {
                rgba[k][l] = if filtered {
                    acc[k][l].to_bits()
                } else {
                    point[k][l]
                };
            }
        }
        self.image_return(f, image.nfmt, &rgba)
    }
}
