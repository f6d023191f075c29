// gfx90a matrix cores on the kfd model (scripts/hip-tests.sh, gfx90a only): a 16x16 x 16x16
// product from four v_mfma_f32_16x16x4f32 steps, sixteen independent 4x4 products from one
// v_mfma_f32_4x4x1f32 (with the accumulator), and a 32x32 x 32x2 product from
// v_mfma_f32_32x32x2f32. Operands are distributed over the lanes by the register layouts
// AMD documents for these instructions (AMD's matrix instruction calculator / "AMD matrix
// cores" lab notes), independently of the model's code; results are compared with a naive
// host product. The inputs are small integers, so every sum is exact in f32. Prints
// "mfma: ok" and exits 0.
#include <hip/hip_runtime.h>
#include <cstdio>
#include <vector>

#define CHECK(x)                                                                           \
    do {                                                                                   \
        hipError_t e = (x);                                                                \
        if (e != hipSuccess) {                                                             \
            std::printf("%s failed: %s\n", #x, hipGetErrorString(e));                      \
            return 1;                                                                      \
        }                                                                                  \
    } while (0)

typedef float float4_t __attribute__((ext_vector_type(4)));
typedef float float16_t __attribute__((ext_vector_type(16)));

// A: 16x16 row-major, B: 16x16 row-major, D = A*B (16x16).
__global__ void gemm16(const float *A, const float *B, float *D) {
    int lane = threadIdx.x;
    float4_t acc = {0, 0, 0, 0};
#if defined(__gfx90a__)
    for (int k0 = 0; k0 < 16; k0 += 4) {
        // 16x16x4: lane holds A[lane%16][k0 + lane/16] and B[k0 + lane/16][lane%16]
        float a = A[(lane % 16) * 16 + k0 + lane / 16];
        float b = B[(k0 + lane / 16) * 16 + lane % 16];
        acc = __builtin_amdgcn_mfma_f32_16x16x4f32(a, b, acc, 0, 0, 0);
    }
#endif
    // D[4*(lane/16) + r][lane%16] is acc[r]
    for (int r = 0; r < 4; r++)
        D[(4 * (lane / 16) + r) * 16 + lane % 16] = acc[r];
}

// 16 blocks b: A_b (4x1), B_b (1x4), C_b (4x4): D_b = A_b*B_b + C_b.
__global__ void outer4(const float *A, const float *B, const float *C, float *D) {
    int lane = threadIdx.x, b = lane / 4, j = lane % 4;
    float4_t acc;
    for (int r = 0; r < 4; r++)
        acc[r] = C[b * 16 + r * 4 + j]; // acc[r] holds C_b[r][lane%4]
#if defined(__gfx90a__)
    acc = __builtin_amdgcn_mfma_f32_4x4x1f32(A[b * 4 + lane % 4], B[b * 4 + lane % 4], acc, 0, 0, 0);
#endif
    for (int r = 0; r < 4; r++)
        D[b * 16 + r * 4 + j] = acc[r];
}

// A: 32x2, B: 2x32, D = A*B (32x32).
__global__ void gemm32(const float *A, const float *B, float *D) {
    int lane = threadIdx.x;
    float16_t acc = {};
#if defined(__gfx90a__)
    acc = __builtin_amdgcn_mfma_f32_32x32x2f32(A[(lane % 32) * 2 + lane / 32],
                                                B[(lane / 32) * 32 + lane % 32], acc, 0, 0, 0);
#endif
    // register reg holds D[8*(reg/4) + 4*(lane/32) + reg%4][lane%32]
    for (int reg = 0; reg < 16; reg++)
        D[(8 * (reg / 4) + 4 * (lane / 32) + reg % 4) * 32 + lane % 32] = acc[reg];
}

int main() {
    std::vector<float> A(256), B(256), C4(256), A4(64), B4(64), A32(64), B32(64);
    for (int i = 0; i < 256; i++) {
        A[i] = (float)((i * 7) % 11 - 5);
        B[i] = (float)((i * 5) % 13 - 6);
        C4[i] = (float)(i % 9 - 4);
    }
    for (int i = 0; i < 64; i++) {
        A4[i] = (float)(i % 7 - 3);
        B4[i] = (float)((i * 3) % 5 - 2);
        A32[i] = (float)((i * 11) % 17 - 8);
        B32[i] = (float)((i * 13) % 19 - 9);
    }
    float *dA, *dB, *dC, *dD, *dA4, *dB4, *dA32, *dB32;
    CHECK(hipMalloc(&dA, 256 * 4));
    CHECK(hipMalloc(&dB, 256 * 4));
    CHECK(hipMalloc(&dC, 256 * 4));
    CHECK(hipMalloc(&dD, 1024 * 4));
    CHECK(hipMalloc(&dA4, 64 * 4));
    CHECK(hipMalloc(&dB4, 64 * 4));
    CHECK(hipMalloc(&dA32, 64 * 4));
    CHECK(hipMalloc(&dB32, 64 * 4));
    CHECK(hipMemcpy(dA, A.data(), 256 * 4, hipMemcpyHostToDevice));
    CHECK(hipMemcpy(dB, B.data(), 256 * 4, hipMemcpyHostToDevice));
    CHECK(hipMemcpy(dC, C4.data(), 256 * 4, hipMemcpyHostToDevice));
    CHECK(hipMemcpy(dA4, A4.data(), 64 * 4, hipMemcpyHostToDevice));
    CHECK(hipMemcpy(dB4, B4.data(), 64 * 4, hipMemcpyHostToDevice));
    CHECK(hipMemcpy(dA32, A32.data(), 64 * 4, hipMemcpyHostToDevice));
    CHECK(hipMemcpy(dB32, B32.data(), 64 * 4, hipMemcpyHostToDevice));

    int bad = 0;
    std::vector<float> D(1024);
    auto expect = [&](const char *what, int i, int j, float got, float want) {
        if (got != want && bad++ < 10)
            std::printf("mfma: %s D[%d][%d] = %g, want %g\n", what, i, j, got, want);
    };

    hipLaunchKernelGGL(gemm16, dim3(1), dim3(64), 0, 0, dA, dB, dD);
    CHECK(hipDeviceSynchronize());
    CHECK(hipMemcpy(D.data(), dD, 256 * 4, hipMemcpyDeviceToHost));
    for (int i = 0; i < 16; i++)
        for (int j = 0; j < 16; j++) {
            float s = 0;
            for (int k = 0; k < 16; k++)
                s += A[i * 16 + k] * B[k * 16 + j];
            expect("16x16x4 (4 steps)", i, j, D[i * 16 + j], s);
        }

    hipLaunchKernelGGL(outer4, dim3(1), dim3(64), 0, 0, dA4, dB4, dC, dD);
    CHECK(hipDeviceSynchronize());
    CHECK(hipMemcpy(D.data(), dD, 256 * 4, hipMemcpyDeviceToHost));
    for (int b = 0; b < 16; b++)
        for (int i = 0; i < 4; i++)
            for (int j = 0; j < 4; j++)
                expect("4x4x1 block", b * 4 + i, j, D[b * 16 + i * 4 + j],
                       A4[b * 4 + i] * B4[b * 4 + j] + C4[b * 16 + i * 4 + j]);

    hipLaunchKernelGGL(gemm32, dim3(1), dim3(64), 0, 0, dA32, dB32, dD);
    CHECK(hipDeviceSynchronize());
    CHECK(hipMemcpy(D.data(), dD, 1024 * 4, hipMemcpyDeviceToHost));
    for (int i = 0; i < 32; i++)
        for (int j = 0; j < 32; j++)
            expect("32x32x2", i, j, D[i * 32 + j],
                   A32[i * 2] * B32[j] + A32[i * 2 + 1] * B32[32 + j]);

    if (bad) {
        std::printf("mfma: %d mismatches\n", bad);
        return 1;
    }
    std::printf("mfma: ok\n");
    return 0;
}
