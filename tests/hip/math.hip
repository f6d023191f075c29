// f64/f32/f16 arithmetic and the device math library (OCML) on the kfd model
// (scripts/hip-tests.sh), compared with a host reference computed in higher precision:
// f32 results against the host's double functions rounded to float, f64 results against the
// host's long double (x87 80-bit) functions, f16 results against exact double arithmetic
// rounded once to half. Bounds (ulp of the result type):
//   0   IEEE-exact operations: + - * / fma sqrt, conversions (HIP compiles division and sqrt
//       correctly rounded by default; fma is exact by definition);
//   2..16  library functions: OCML is built to the OpenCL C accuracy requirements (OpenCL C
//       spec, "Relative error as ULPs" table: sin/cos/exp/log ≤ 3-4, rsqrt ≤ 2,
//       pow/erf/tgamma ≤ 16), the bound used here for each function is that table's;
//   f16 library (hsqrt, hexp2, hlog2): ≤ 2 ulp (cl_khr_fp16's half-precision table);
//   f16 1/b (__hdiv): ≤ 1 ulp (clang divides halves through the f32 reciprocal, 1 ulp in
//       f32, then rounds once to half).
// A wrong instruction semantic (rounding, NaN/denormal handling, scaling in the division
// helpers, a transcendental's range reduction) shows up as an error far above these bounds.
// Division is also checked at the exponent range's edges and through zeros, infinities
// and NaNs (64 f32 and 64 f64 quotients, 0 ulp: the v_div_scale/v_div_fmas/v_div_fixup
// sequence's scaling and NaN rules). Prints "math: ok" and exits 0, or lists the worst
// mismatches and exits 1.
#include <hip/hip_fp16.h>
#include <hip/hip_runtime.h>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#define CHECK(x)                                                                           \
    do {                                                                                   \
        hipError_t e = (x);                                                                \
        if (e != hipSuccess) {                                                             \
            std::printf("%s failed: %s\n", #x, hipGetErrorString(e));                      \
            return 1;                                                                      \
        }                                                                                  \
    } while (0)

constexpr int N = 256;
// f32 results per input
enum { F_ADD, F_MUL, F_DIV, F_FMA, F_SQRT, F_SIN, F_COS, F_EXP, F_LOG, F_POW, F_RSQRT, F_ERF,
       F_TGAMMA, F_TAN, F_ATAN2, F_CBRT, F_COUNT };
static const char *f_names[] = {"add", "mul", "div", "fma", "sqrtf", "sinf", "cosf", "expf",
                                "logf", "powf", "rsqrtf", "erff", "tgammaf", "tanf", "atan2f",
                                "cbrtf"};
static const int f_ulps[] = {0, 0, 0, 0, 0, 4, 4, 3, 3, 16, 2, 16, 16, 5, 6, 2};
enum { D_ADD, D_MUL, D_DIV, D_FMA, D_SQRT, D_SIN, D_COS, D_EXP, D_LOG, D_POW, D_RSQRT, D_ERF,
       D_TGAMMA, D_CVT_F32, D_CVT_I32, D_COUNT };
static const char *d_names[] = {"dadd", "dmul", "ddiv", "fma", "sqrt", "sin", "cos", "exp",
                                "log", "pow", "rsqrt", "erf", "tgamma", "(double)float",
                                "(double)int"};
static const int d_ulps[] = {0, 0, 0, 0, 0, 4, 4, 3, 3, 16, 2, 16, 16, 0, 0};
enum { H_ADD, H_SUB, H_MUL, H_FMA, H_ADD2_LO, H_ADD2_HI, H_MUL2_LO, H_MUL2_HI, H_FMA2_LO,
       H_FMA2_HI, H_FROM_F32, H_SQRT, H_EXP2, H_LOG2, H_RCP, H_COUNT };
static const char *h_names[] = {"__hadd", "__hsub", "__hmul", "__hfma", "__hadd2.x",
                                "__hadd2.y", "__hmul2.x", "__hmul2.y", "__hfma2.x", "__hfma2.y",
                                "__float2half", "hsqrt", "hexp2", "hlog2", "__hdiv(1,b)"};
static const int h_ulps[] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 2, 2, 1};

__global__ void f32_kernel(const float *x, const float *y, float *out) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float a = x[i], b = y[i];
    float *o = out + i * F_COUNT;
    o[F_ADD] = a + b;
    o[F_MUL] = a * b;
    o[F_DIV] = a / b;
    o[F_FMA] = fmaf(a, b, -a);
    o[F_SQRT] = sqrtf(fabsf(a));
    o[F_SIN] = sinf(a);
    o[F_COS] = cosf(a);
    o[F_EXP] = expf(a);
    o[F_LOG] = logf(fabsf(b));
    o[F_POW] = powf(fabsf(b), a * 0.25f);
    o[F_RSQRT] = rsqrtf(fabsf(b));
    o[F_ERF] = erff(a * 0.2f);
    o[F_TGAMMA] = tgammaf(fabsf(b) * 0.5f + 0.1f);
    o[F_TAN] = tanf(a * 0.1f);
    o[F_ATAN2] = atan2f(a, b);
    o[F_CBRT] = cbrtf(a);
}

__global__ void f64_kernel(const double *x, const double *y, const float *xf, const int *xi,
                           double *out) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    double a = x[i], b = y[i];
    double *o = out + i * D_COUNT;
    o[D_ADD] = a + b;
    o[D_MUL] = a * b;
    o[D_DIV] = a / b;
    o[D_FMA] = fma(a, b, -a);
    o[D_SQRT] = sqrt(fabs(a));
    o[D_SIN] = sin(a);
    o[D_COS] = cos(a);
    o[D_EXP] = exp(a);
    o[D_LOG] = log(fabs(b));
    o[D_POW] = pow(fabs(b), a * 0.25);
    o[D_RSQRT] = rsqrt(fabs(b));
    o[D_ERF] = erf(a * 0.2);
    o[D_TGAMMA] = tgamma(fabs(b) * 0.5 + 0.1);
    o[D_CVT_F32] = (double)xf[i];
    o[D_CVT_I32] = (double)xi[i];
}

__global__ void f16_kernel(const unsigned short *x, const unsigned short *y,
                           const unsigned short *z, const float *xf, unsigned short *out) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    __half a = __ushort_as_half(x[i]), b = __ushort_as_half(y[i]), c = __ushort_as_half(z[i]);
    unsigned short *o = out + i * H_COUNT;
    o[H_ADD] = __half_as_ushort(__hadd(a, b));
    o[H_SUB] = __half_as_ushort(__hsub(a, b));
    o[H_MUL] = __half_as_ushort(__hmul(a, b));
    o[H_FMA] = __half_as_ushort(__hfma(a, b, c));
    __half2 p = __halves2half2(a, c), q = __halves2half2(b, a);
    __half2 s = __hadd2(p, q), m = __hmul2(p, q), f = __hfma2(p, q, __halves2half2(c, b));
    o[H_ADD2_LO] = __half_as_ushort(__low2half(s));
    o[H_ADD2_HI] = __half_as_ushort(__high2half(s));
    o[H_MUL2_LO] = __half_as_ushort(__low2half(m));
    o[H_MUL2_HI] = __half_as_ushort(__high2half(m));
    o[H_FMA2_LO] = __half_as_ushort(__low2half(f));
    o[H_FMA2_HI] = __half_as_ushort(__high2half(f));
    o[H_FROM_F32] = __half_as_ushort(__float2half(xf[i]));
    o[H_SQRT] = __half_as_ushort(hsqrt(__habs(a)));
    o[H_EXP2] = __half_as_ushort(hexp2(__hmul(b, __float2half(0.125f))));
    o[H_LOG2] = __half_as_ushort(hlog2(__habs(c)));
    o[H_RCP] = __half_as_ushort(__hdiv(__float2half(1.0f), b)); // hrcp is unresolved in HIP 5.2
}

// Division at the edges of the exponent range, through zeros, infinities and NaNs: the
// compiler's v_div_scale / v_div_fmas / v_div_fixup sequence must give the correctly rounded
// IEEE quotient (0 ulp), so a wrong scaling or NaN rule in any of them shows here.
__global__ void div_kernel(const float *a, const float *b, const double *c, const double *d,
                           float *q, double *qd) {
    int i = threadIdx.x;
    q[i] = a[i] / b[i];
    qd[i] = c[i] / d[i];
}

// ---------------------------------------------------------------- host side

// Distance in representable values between two floats of the same type (0 = identical,
// NaN vs NaN = 0, NaN vs number = huge).
template <typename F, typename I> static int64_t ulp_dist(F a, F b) {
    if (std::isnan(a) || std::isnan(b))
        return std::isnan(a) && std::isnan(b) ? 0 : INT64_MAX;
    if (a == b)
        return 0;
    I ia, ib;
    std::memcpy(&ia, &a, sizeof a);
    std::memcpy(&ib, &b, sizeof b);
    // map sign-magnitude onto a monotone integer line
    int64_t la = ia < 0 ? (int64_t)std::numeric_limits<I>::min() - (int64_t)ia : (int64_t)ia;
    int64_t lb = ib < 0 ? (int64_t)std::numeric_limits<I>::min() - (int64_t)ib : (int64_t)ib;
    int64_t d = la - lb;
    return d < 0 ? -d : d;
}

static double half_to_double(uint16_t h) {
    int e = (h >> 10) & 31, m = h & 1023;
    double v = e == 0 ? std::ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY)
                                                      : std::ldexp(1024 + m, e - 25);
    return (h & 0x8000) ? -v : v;
}

// double -> half, rounding to nearest even (the single rounding of an exact result).
static uint16_t double_to_half(double x) {
    uint16_t sign = std::signbit(x) ? 0x8000 : 0;
    if (std::isnan(x))
        return 0x7e00;
    double a = std::fabs(x);
    if (a < std::ldexp(1.0, -14)) // subnormal range: units of 2^-24
        return sign | (uint16_t)std::nearbyint(a * 16777216.0);
    int ex;
    std::frexp(a, &ex); // a = m * 2^ex, m in [0.5, 1)
    int e = ex - 1;
    double mant = std::nearbyint((std::ldexp(a, -e) - 1.0) * 1024.0);
    if (mant == 1024) {
        mant = 0;
        e++;
    }
    if (e > 15)
        return sign | 0x7c00;
    return sign | (uint16_t)((e + 15) << 10) | (uint16_t)mant;
}

static int64_t half_dist(uint16_t a, uint16_t b) {
    double x = half_to_double(a), y = half_to_double(b);
    if (std::isnan(x) || std::isnan(y))
        return std::isnan(x) && std::isnan(y) ? 0 : INT64_MAX;
    if (x == y)
        return 0;
    auto line = [](uint16_t h) { return (h & 0x8000) ? -(int64_t)(h & 0x7fff) : (int64_t)h; };
    int64_t d = line(a) - line(b);
    return d < 0 ? -d : d;
}

int main() {
    std::vector<float> xf(N), yf(N);
    std::vector<double> xd(N), yd(N);
    std::vector<int> xi(N);
    std::vector<uint16_t> xh(N), yh(N), zh(N);
    for (int i = 0; i < N; i++) {
        // spread over [-10, 10] and (0.1, 12], irregular so that no two lanes agree
        double u = (i * 0.61803398874989485) - std::floor(i * 0.61803398874989485);
        double v = (i * 0.41421356237309505) - std::floor(i * 0.41421356237309505);
        xf[i] = (float)(u * 20.0 - 10.0);
        yf[i] = (float)(v * 12.0 + 0.1) * (i % 5 == 0 ? -1.0f : 1.0f);
        xd[i] = u * 20.0 - 10.0 + 1e-9 * i;
        yd[i] = (v * 12.0 + 0.1) * (i % 5 == 0 ? -1.0 : 1.0);
        xi[i] = (i - N / 2) * 16777259; // beyond 2^24: exact in double, not in float
        xh[i] = double_to_half(u * 8.0 - 4.0);
        yh[i] = double_to_half((v * 6.0 + 0.01) * (i % 3 == 0 ? -1.0 : 1.0));
        zh[i] = double_to_half(u * v * 3.0 - 1.0);
    }
    // a few edge values: denormal f16 results, f16 overflow, zero
    xh[1] = 0x0001;            // smallest f16 subnormal
    yh[1] = 0x3c00;            // 1.0
    xh[2] = 0x7bff;            // 65504
    yh[2] = 0x4000;            // 2.0: product overflows to inf
    xf[3] = 1e-40f;            // f32 denormal input (f32 denormals are on in HIP kernels)
    xf[4] = 65519.0f;          // rounds to 65504 in f16
    xf[5] = 65520.0f;          // rounds to inf in f16
    xf[6] = 5.9604645e-08f;    // 2^-24: smallest f16 subnormal
    // large arguments: the trig range reduction's long path (f64: v_trig_preop_f64)
    xf[7] = 1e20f;
    xd[7] = 1e22;
    xd[8] = -3.5e15;
    xd[9] = 8.5e300;

    float *dxf, *dyf, *dof;
    double *dxd, *dyd, *dod;
    int *dxi;
    unsigned short *dxh, *dyh, *dzh, *doh;
    CHECK(hipMalloc(&dxf, N * 4));
    CHECK(hipMalloc(&dyf, N * 4));
    CHECK(hipMalloc(&dof, N * F_COUNT * 4));
    CHECK(hipMalloc(&dxd, N * 8));
    CHECK(hipMalloc(&dyd, N * 8));
    CHECK(hipMalloc(&dod, N * D_COUNT * 8));
    CHECK(hipMalloc(&dxi, N * 4));
    CHECK(hipMalloc(&dxh, N * 2));
    CHECK(hipMalloc(&dyh, N * 2));
    CHECK(hipMalloc(&dzh, N * 2));
    CHECK(hipMalloc(&doh, N * H_COUNT * 2));
    CHECK(hipMemcpy(dxf, xf.data(), N * 4, hipMemcpyHostToDevice));
    CHECK(hipMemcpy(dyf, yf.data(), N * 4, hipMemcpyHostToDevice));
    CHECK(hipMemcpy(dxd, xd.data(), N * 8, hipMemcpyHostToDevice));
    CHECK(hipMemcpy(dyd, yd.data(), N * 8, hipMemcpyHostToDevice));
    CHECK(hipMemcpy(dxi, xi.data(), N * 4, hipMemcpyHostToDevice));
    CHECK(hipMemcpy(dxh, xh.data(), N * 2, hipMemcpyHostToDevice));
    CHECK(hipMemcpy(dyh, yh.data(), N * 2, hipMemcpyHostToDevice));
    CHECK(hipMemcpy(dzh, zh.data(), N * 2, hipMemcpyHostToDevice));
    hipLaunchKernelGGL(f32_kernel, dim3(N / 64), dim3(64), 0, 0, dxf, dyf, dof);
    hipLaunchKernelGGL(f64_kernel, dim3(N / 64), dim3(64), 0, 0, dxd, dyd, dxf, dxi, dod);
    hipLaunchKernelGGL(f16_kernel, dim3(N / 64), dim3(64), 0, 0, dxh, dyh, dzh, dxf, doh);
    CHECK(hipGetLastError());
    CHECK(hipDeviceSynchronize());
    // division edge cases: each numerator against each denominator (8 x 8 = 64 lanes)
    const float fnum[8] = {1.0f, 3.0e38f, 1e-45f, 1.2e-38f, 0.0f, INFINITY, NAN, -7.5e37f};
    const float fden[8] = {3.0f, 1e-44f, 3.0e38f, -0.0f, INFINITY, 2.9e-39f, 1.1754942e-38f, NAN};
    const double dnum[8] = {1.0, 1.7e308, 4.9e-324, 2.2e-308, 0.0, INFINITY, NAN, -9.1e307};
    const double dden[8] = {3.0, 4.9e-323, 1.7e308, -0.0, INFINITY, 1.1e-309, 2.2250738585072009e-308, NAN};
    std::vector<float> da(64), db(64), dq(64);
    std::vector<double> dc(64), dd(64), dqd(64);
    for (int i = 0; i < 64; i++) {
        da[i] = fnum[i / 8];
        db[i] = fden[i % 8];
        dc[i] = dnum[i / 8];
        dd[i] = dden[i % 8];
    }
    float *dda, *ddb, *ddq;
    double *ddc, *ddd, *ddqd;
    CHECK(hipMalloc(&dda, 64 * 4));
    CHECK(hipMalloc(&ddb, 64 * 4));
    CHECK(hipMalloc(&ddq, 64 * 4));
    CHECK(hipMalloc(&ddc, 64 * 8));
    CHECK(hipMalloc(&ddd, 64 * 8));
    CHECK(hipMalloc(&ddqd, 64 * 8));
    CHECK(hipMemcpy(dda, da.data(), 64 * 4, hipMemcpyHostToDevice));
    CHECK(hipMemcpy(ddb, db.data(), 64 * 4, hipMemcpyHostToDevice));
    CHECK(hipMemcpy(ddc, dc.data(), 64 * 8, hipMemcpyHostToDevice));
    CHECK(hipMemcpy(ddd, dd.data(), 64 * 8, hipMemcpyHostToDevice));
    hipLaunchKernelGGL(div_kernel, dim3(1), dim3(64), 0, 0, dda, ddb, ddc, ddd, ddq, ddqd);
    CHECK(hipDeviceSynchronize());
    CHECK(hipMemcpy(dq.data(), ddq, 64 * 4, hipMemcpyDeviceToHost));
    CHECK(hipMemcpy(dqd.data(), ddqd, 64 * 8, hipMemcpyDeviceToHost));

    std::vector<float> of(N * F_COUNT);
    std::vector<double> od(N * D_COUNT);
    std::vector<uint16_t> oh(N * H_COUNT);
    CHECK(hipMemcpy(of.data(), dof, of.size() * 4, hipMemcpyDeviceToHost));
    CHECK(hipMemcpy(od.data(), dod, od.size() * 8, hipMemcpyDeviceToHost));
    CHECK(hipMemcpy(oh.data(), doh, oh.size() * 2, hipMemcpyDeviceToHost));

    int bad = 0;
    int64_t worst_f[F_COUNT] = {}, worst_d[D_COUNT] = {}, worst_h[H_COUNT] = {};
    for (int i = 0; i < N; i++) {
        double a = xf[i], b = yf[i];
        float ref[F_COUNT] = {
            (float)(a + b), (float)(a * b), (float)(a / b), (float)std::fma(a, b, -a),
            (float)std::sqrt(std::fabs(a)), (float)std::sin(a), (float)std::cos(a),
            (float)std::exp(a), (float)std::log(std::fabs(b)),
            (float)std::pow(std::fabs(b), (double)(float)(a * 0.25)),
            (float)(1.0 / std::sqrt(std::fabs(b))), (float)std::erf((double)(float)(a * 0.2f)),
            (float)std::tgamma((double)(float)((float)std::fabs(b) * 0.5f + 0.1f)),
            (float)std::tan((double)(float)(a * 0.1f)), (float)std::atan2(a, b),
            (float)std::cbrt(a)};
        for (int k = 0; k < F_COUNT; k++) {
            int64_t d = ulp_dist<float, int32_t>(of[i * F_COUNT + k], ref[k]);
            worst_f[k] = d > worst_f[k] ? d : worst_f[k];
            if (d > f_ulps[k] && bad++ < 12)
                std::printf("math: f32 %s(%a, %a) = %a, host %a (%lld ulp > %d)\n", f_names[k],
                            a, b, of[i * F_COUNT + k], ref[k], (long long)d, f_ulps[k]);
        }
        long double A = xd[i], B = yd[i];
        double dref[D_COUNT] = {
            xd[i] + yd[i], xd[i] * yd[i], xd[i] / yd[i], std::fma(xd[i], yd[i], -xd[i]),
            std::sqrt(std::fabs(xd[i])), (double)sinl(A), (double)cosl(A), (double)expl(A),
            (double)logl(fabsl(B)), (double)powl(fabsl(B), (long double)(xd[i] * 0.25)),
            (double)(1.0L / sqrtl(fabsl(B))), (double)erfl((long double)(xd[i] * 0.2)),
            (double)tgammal((long double)(std::fabs(yd[i]) * 0.5 + 0.1)), (double)xf[i],
            (double)xi[i]};
        for (int k = 0; k < D_COUNT; k++) {
            int64_t d = ulp_dist<double, int64_t>(od[i * D_COUNT + k], dref[k]);
            worst_d[k] = d > worst_d[k] ? d : worst_d[k];
            if (d > d_ulps[k] && bad++ < 12)
                std::printf("math: f64 %s(%a, %a) = %a, host %a (%lld ulp > %d)\n", d_names[k],
                            xd[i], yd[i], od[i * D_COUNT + k], dref[k], (long long)d, d_ulps[k]);
        }
        double ha = half_to_double(xh[i]), hb = half_to_double(yh[i]), hc = half_to_double(zh[i]);
        uint16_t href[H_COUNT] = {
            double_to_half(ha + hb), double_to_half(ha - hb), double_to_half(ha * hb),
            double_to_half(ha * hb + hc), double_to_half(ha + hb), double_to_half(hc + ha),
            double_to_half(ha * hb), double_to_half(hc * ha), double_to_half(ha * hb + hc),
            double_to_half(hc * ha + hb), double_to_half(xf[i]),
            double_to_half(std::sqrt(std::fabs(ha))),
            double_to_half(std::exp2(half_to_double(double_to_half(hb * 0.125)))),
            double_to_half(std::log2(std::fabs(hc))), double_to_half(1.0 / hb)};
        for (int k = 0; k < H_COUNT; k++) {
            int64_t d = half_dist(oh[i * H_COUNT + k], href[k]);
            worst_h[k] = d > worst_h[k] ? d : worst_h[k];
            if (d > h_ulps[k] && bad++ < 12)
                std::printf("math: f16 %s(%#06x, %#06x, %#06x) = %#06x, host %#06x (%lld ulp > %d)\n",
                            h_names[k], xh[i], yh[i], zh[i], oh[i * H_COUNT + k], href[k],
                            (long long)d, h_ulps[k]);
        }
    }
    for (int i = 0; i < 64; i++) {
        float want = da[i] / db[i];
        double wantd = dc[i] / dd[i];
        if (ulp_dist<float, int32_t>(dq[i], want) != 0 && bad++ < 12)
            std::printf("math: f32 %a / %a = %a, host %a\n", da[i], db[i], dq[i], want);
        if (ulp_dist<double, int64_t>(dqd[i], wantd) != 0 && bad++ < 12)
            std::printf("math: f64 %a / %a = %a, host %a\n", dc[i], dd[i], dqd[i], wantd);
    }
    std::printf("math: worst ulp f32:");
    for (int k = 0; k < F_COUNT; k++)
        std::printf(" %s=%lld", f_names[k], (long long)worst_f[k]);
    std::printf("\nmath: worst ulp f64:");
    for (int k = 0; k < D_COUNT; k++)
        std::printf(" %s=%lld", d_names[k], (long long)worst_d[k]);
    std::printf("\nmath: worst ulp f16:");
    for (int k = 0; k < H_COUNT; k++)
        std::printf(" %s=%lld", h_names[k], (long long)worst_h[k]);
    std::printf("\n");
    if (bad) {
        std::printf("math: %d results outside their bounds\n", bad);
        return 1;
    }
    std::printf("math: ok\n");
    return 0;
}
