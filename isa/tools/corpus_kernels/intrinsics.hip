// Kernels that make clang emit the instructions HIP programs reach through builtins, math,
// atomics, wave operations and dynamic indexing (isa/tools/corpus.py builds them for the
// compiler corpus; nothing runs them).
#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>

__global__ void wave_ops(int* o, const int* a, float* f, double* d) {
    int t = threadIdx.x, v = a[t];
    o[t] = __shfl(v, t ^ 5) + __shfl_up(v, 3) + __shfl_down(v, 7) + __shfl_xor(v, 9, 32);
    o[t + 64] = __popcll(__ballot(v > 3)) + __any(v == 1) + __all(v != 2);
    o[t + 128] = __builtin_amdgcn_ds_swizzle(v, 0x401f) + __builtin_amdgcn_ds_bpermute(t * 4, v);
    o[t + 192] = __builtin_amdgcn_mov_dpp(v, 0x111, 0xf, 0xf, false)
               + __builtin_amdgcn_update_dpp(v, v, 0x142, 0xa, 0x5, true)
               + __builtin_amdgcn_readfirstlane(v) + __builtin_amdgcn_readlane(v, 7)
               + __builtin_amdgcn_ds_permute(t * 4, v);
    f[t] = __shfl(f[t], 3) + __shfl_xor(f[t], 1);
    d[t] = __shfl(d[t], 1) + __shfl_down(d[t], 2);
    o[t + 256] = __builtin_amdgcn_mbcnt_hi(~0u, __builtin_amdgcn_mbcnt_lo(~0u, 0));
    o[t + 320] = (int)__builtin_amdgcn_s_memtime() + (int)__builtin_amdgcn_s_memrealtime();
    __builtin_amdgcn_s_sleep(1);
    __builtin_amdgcn_wave_barrier();
    o[t + 384] = __lane_id();
}

__global__ void atomics(int* i, unsigned* u, unsigned long long* l, float* f, double* d,
                        __half* h) {
    __shared__ int si[64];
    __shared__ unsigned long long sl[64];
    __shared__ float sf[64];
    __shared__ double sd[64];
    int t = threadIdx.x;
    si[t] = 0; sl[t] = 0; sf[t] = 0; sd[t] = 0;
    __syncthreads();
    atomicAdd(&i[t & 3], t); atomicSub(&i[1], t); atomicMin(&i[2], t); atomicMax(&i[3], -t);
    atomicAnd(&u[0], t); atomicOr(&u[1], t); atomicXor(&u[2], t); atomicInc(&u[3], 17u);
    atomicDec(&u[4], 9u); atomicExch(&u[5], t); atomicCAS(&u[6], 1u, (unsigned)t);
    atomicMin(&u[7], (unsigned)t); atomicMax(&u[8], (unsigned)t);
    atomicAdd(&l[0], 3ull); atomicMin(&l[1], (unsigned long long)t); atomicCAS(&l[2], 1ull, 2ull);
    atomicExch(&l[3], 5ull); atomicAnd(&l[4], 6ull); atomicOr(&l[5], 1ull); atomicXor(&l[6], 3ull);
    atomicMax(&l[7], (unsigned long long)t);
    atomicAdd(&f[t & 7], 1.5f); atomicAdd(&d[t & 7], 2.5); atomicExch(&f[9], 1.0f);
    atomicMax(&f[10], (float)t); atomicMin(&d[11], (double)t);
    int r = atomicAdd(&si[t & 7], 1) + atomicSub(&si[1], 1) + atomicMin(&si[2], t)
          + atomicMax(&si[3], t) + atomicAnd(&si[4], t) + atomicOr(&si[5], t)
          + atomicXor(&si[6], t) + atomicExch(&si[7], t) + atomicCAS(&si[8], 0, t)
          + (int)atomicInc((unsigned*)&si[9], 5u) + (int)atomicDec((unsigned*)&si[10], 5u);
    r += (int)atomicAdd(&sl[t & 3], 1ull) + (int)atomicCAS(&sl[4], 0ull, 1ull)
       + (int)atomicMax(&sl[5], 2ull) + (int)atomicMin(&sl[6], 2ull);
    r += (int)atomicAdd(&sf[t & 3], 1.0f) + (int)atomicAdd(&sd[t & 3], 1.0)
       + (int)atomicMax(&sf[4], 1.0f) + (int)atomicMin(&sf[5], 1.0f);
    __syncthreads();
    i[64 + t] = r + si[t] + (int)sl[t] + (int)sf[t] + (int)sd[t];
    h[t] = __hadd(h[t], __float2half(1.0f));
}

__device__ int pick(int* p, int k) { return p[k & 15]; }

__global__ void indexing(int* o, const int* a, int k) {
    int priv[16], t = threadIdx.x;
    for (int j = 0; j < 16; ++j) priv[j] = a[t + j];
    priv[a[t] & 15] = t;
    o[t] = priv[(t + k) & 15] + pick(priv, k + t);
    int s[8];
    for (int j = 0; j < 8; ++j) s[j] = a[j] * k;
    o[t + 64] = s[k & 7];
    switch (a[t] & 7) {
    case 0: o[t] += 1; break;
    case 1: o[t] *= 3; break;
    case 2: o[t] ^= 7; break;
    case 5: o[t] -= k; break;
    default: o[t] = 0;
    }
}

__global__ void integer(int* o, const int* a, const unsigned* u, const long long* l,
                        const unsigned long long* ul, const short* sh, const unsigned short* us,
                        const char* c, const unsigned char* uc) {
    int t = threadIdx.x, x = a[t], y = a[t + 1];
    unsigned p = u[t], q = u[t + 1] | 1;
    long long m = l[t], n = l[t + 1] | 1;
    unsigned long long um = ul[t], un = ul[t + 1] | 1;
    o[t] = x / (y | 1) + x % (y | 1) + (int)(p / q) + (int)(p % q) + __clz(x) + __ffs(x)
         + __popc(p) + __brev(p) + __mul24(x, y) + __umul24(p, q) + __mulhi(x, y)
         + __umulhi(p, q) + (int)__clzll(m) + __ffsll(m) + __popcll(um) + (int)__brevll(um)
         + abs(x) + min(x, y) + max(x, y) + (int)min(p, q) + (int)max(p, q)
         + __sad(x, y, p) + __usad(p, q, 3) + __byte_perm(p, q, 0x5140)
         + __funnelshift_l(p, q, x) + __funnelshift_r(p, q, y) + (int)__mul64hi(m, n)
         + (int)__umul64hi(um, un) + __hadd(x, y) + __rhadd(x, y) + __uhadd(p, q) + __urhadd(p, q);
    o[t + 64] = (int)(m / n) + (int)(m % n) + (int)(um / un) + (int)(um % un)
              + (int)(m >> (x & 63)) + (int)(um << (y & 63)) + (int)(um >> (x & 63))
              + (int)llabs(m) + (int)min(m, n) + (int)max(um, un);
    short s0 = sh[t], s1 = sh[t + 1];
    unsigned short w0 = us[t], w1 = us[t + 1];
    o[t + 128] = (short)(s0 + s1) + (short)(s0 * s1) + (short)(s0 >> (s1 & 15))
               + (unsigned short)(w0 >> (w1 & 15)) + (short)min(s0, s1)
               + (short)max(s0, s1) + (unsigned short)min(w0, w1)
               + (unsigned short)max(w0, w1) + (short)(s0 - s1) + (short)(s0 << 3)
               + (short)abs(s0) + (char)(c[t] * c[t + 1]) + (unsigned char)(uc[t] + uc[t + 1])
               + (short)max(min(s0, s1), min(max(s0, s1), sh[t + 2]))
               + (unsigned short)max(min(w0, w1), min(max(w0, w1), us[t + 2]));
    o[t + 192] = __builtin_amdgcn_alignbit(p, q, x) + __builtin_amdgcn_alignbyte(p, q, y)
               + __builtin_amdgcn_ubfe(p, 3, 7) + __builtin_amdgcn_sbfe(x, 2, 9)
               + __builtin_amdgcn_lerp(p, q, 5) + __builtin_amdgcn_sad_u8(p, q, 4)
               + __builtin_amdgcn_msad_u8(p, q, 4) + __builtin_amdgcn_sad_hi_u8(p, q, 2)
               + __builtin_amdgcn_sad_u16(p, q, 3) + (int)__builtin_amdgcn_qsad_pk_u16_u8(um, p, un)
               + (int)__builtin_amdgcn_mqsad_pk_u16_u8(um, p, un)
               + __builtin_amdgcn_mqsad_u32_u8(um, p, (__attribute__((ext_vector_type(4))) unsigned){p, q, 1, 2})[0];
}

__global__ void floats(float* o, const float* a, double* d, const double* b, __half* h,
                       const __half* hh, int* oi) {
    int t = threadIdx.x;
    float x = a[t], y = a[t + 1], z = a[t + 2];
    o[t] = sinf(x) + cosf(y) + tanf(z) + expf(x) + exp2f(y) + exp10f(z) + logf(x) + log2f(y)
         + log10f(z) + powf(x, y) + sqrtf(x) + rsqrtf(y) + cbrtf(z) + fmaf(x, y, z) + fmodf(x, y)
         + remainderf(x, y) + atan2f(x, y) + asinf(x) + acosf(y) + atanf(z) + sinhf(x)
         + coshf(y) + tanhf(z) + erff(x) + erfcf(y) + tgammaf(z) + lgammaf(x) + hypotf(x, y)
         + floorf(x) + ceilf(y) + truncf(z) + roundf(x) + rintf(y) + fabsf(z) + copysignf(x, y)
         + fminf(x, y) + fmaxf(y, z) + ldexpf(x, 3) + frexpf(y, &oi[t]) + modff(z, &o[t + 64])
         + __fdividef(x, y) + __expf(x) + __logf(y) + __sinf(z) + __cosf(x) + __powf(x, y)
         + x / y + __frcp_rn(x) + __fsqrt_rn(y) + __builtin_amdgcn_fmed3f(x, y, z)
         + __builtin_amdgcn_fractf(x) + (float)__builtin_amdgcn_frexp_expf(y)
         + __builtin_amdgcn_cubeid(x, y, z) + __builtin_amdgcn_cubesc(x, y, z)
         + __builtin_amdgcn_cubetc(x, y, z) + __builtin_amdgcn_cubema(x, y, z)
         + __builtin_amdgcn_rsqf(x) + __builtin_amdgcn_rcpf(y) + __builtin_amdgcn_sinf(z)
         + __builtin_amdgcn_cosf(x) + __builtin_amdgcn_ldexpf(x, 4);
    oi[t + 64] = (int)x + (unsigned)y + (int)(long long)z + (int)(unsigned long long)x
               + __float2int_rd(x) + __float2int_ru(y) + __float2int_rz(z) + __float_as_int(x)
               + (int)__builtin_amdgcn_class(x, 3) + (int)__builtin_amdgcn_cvt_pkrtz(x, y)[0]
               + __builtin_amdgcn_cvt_pk_u8_f32(x, 1, 7)
               + (int)__builtin_amdgcn_cvt_pknorm_i16(x, y)[1]
               + (int)__builtin_amdgcn_cvt_pknorm_u16(x, y)[0]
               + (int)__builtin_amdgcn_cvt_pk_i16(t, oi[t])[0]
               + (int)__builtin_amdgcn_cvt_pk_u16(t, oi[t])[1];
    double u = b[t], v = b[t + 1], w = b[t + 2];
    d[t] = sin(u) + cos(v) + tan(w) + exp(u) + log(v) + pow(u, v) + sqrt(w) + rsqrt(u)
         + fma(u, v, w) + fmod(u, v) + floor(u) + ceil(v) + trunc(w) + round(u) + rint(v)
         + fabs(w) + fmin(u, v) + fmax(v, w) + ldexp(u, 5) + frexp(v, &oi[t + 128]) + u / v
         + atan2(u, v) + erf(w) + tgamma(u) + cbrt(v) + hypot(u, w) + (double)x + (double)t
         + (double)(long long)t + (double)(unsigned)t + (float)u
         + __builtin_amdgcn_div_fixup(u, v, w) + __builtin_amdgcn_trig_preop(u, 2)
         + __builtin_amdgcn_rcp(u) + __builtin_amdgcn_rsq(v) + __builtin_amdgcn_fract(w)
         + __builtin_amdgcn_ldexp(u, 3) + __builtin_amdgcn_frexp_mant(v)
         + (double)__builtin_amdgcn_frexp_exp(w) + (double)__builtin_amdgcn_class(u, 5);
    oi[t + 192] = (int)u + (unsigned)v + (int)(long long)w + (int)(unsigned long long)u;
    __half p = hh[t], q = hh[t + 1];
    __half2 p2 = __halves2half2(p, q), q2 = __halves2half2(q, p);
    h[t] = __hadd(p, q) + __hmul(p, q) + __hfma(p, q, p) + hsqrt(p) + hrsqrt(q) + hexp(p)
         + hlog(q) + hsin(p) + hcos(q) + hfloor(p) + hceil(q) + htrunc(p) + hrint(q)
         + __hdiv(p, q) + hexp2(p) + hlog2(q)
         + __float2half((float)t) + __int2half_rn(t) + __short2half_rn((short)t)
         + __ushort2half_rn((unsigned short)t) + __habs(p) + __hneg(q)
         + (__half)__hgt(p, q);
    __half2 r2 = __hadd2(p2, q2) + __hmul2(p2, q2) + __hfma2(p2, q2, p2) + __hsub2(p2, q2)
               + h2sqrt(p2) + __habs2(p2);
    h[t + 64] = __low2half(r2) + __high2half(r2);
    oi[t + 256] = __half2int_rn(p) + __half2short_rz(q) + __half2uint_rz(p)
                + (int)__half2float(q) + __hbeq2(p2, q2) + __hisnan(p);
}
