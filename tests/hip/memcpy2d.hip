// Pitched copies on the kfd model (scripts/hip-tests.sh): hipMallocPitch, hipMemcpy2D
// host->device, a kernel that transforms the pitched rows in place, hipMemcpy2D
// device->host into a host buffer with another pitch, a byte-wide sub-rectangle at odd
// offsets (1-byte elements), hipMemcpy2D device->device between two pitched allocations,
// and hipMalloc3D + hipMemcpy3D both ways. ROCr moves these with the SDMA engine's
// COPY_LINEAR_SUB_WIND packet. Every destination is compared with a host reference,
// including the padding around the rectangle, which must stay untouched. Prints one
// "PASS <check>" line per check and "memcpy2d: ok (N checks)" and exits 0, or exits 1.
#include <hip/hip_runtime.h>
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

// Row y of the pitched surface at `base`: out = in * 3 + x - 7 * y.
__global__ void transform(char *base, size_t pitch, int width, int height) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < width && y < height) {
        int *row = reinterpret_cast<int *>(base + y * pitch);
        row[x] = row[x] * 3 + x - 7 * y;
    }
}

static int checks = 0;
static int bad = 0;

static void compare(const char *what, const unsigned char *got, const unsigned char *want,
                    size_t n) {
    for (size_t i = 0; i < n; i++)
        if (got[i] != want[i]) {
            std::printf("FAIL %s: byte %zu: got %#x, want %#x\n", what, i, got[i], want[i]);
            bad++;
            return;
        }
    checks++;
    std::printf("PASS %s\n", what);
}

int main() {
    // 1. ints: host (pitch 113 ints) -> device (hipMallocPitch) -> kernel -> host (pitch 107).
    const int w = 100, h = 50;
    const size_t hpitch = 113 * sizeof(int), opitch = 107 * sizeof(int);
    std::vector<int> host(113 * h), out(107 * h, -1), want(107 * h, -1);
    for (int y = 0; y < h; y++)
        for (int x = 0; x < 113; x++)
            host[y * 113 + x] = x < w ? y * 1000 + x : 0x7777;
    char *d = nullptr;
    size_t dpitch = 0;
    CHECK(hipMallocPitch(reinterpret_cast<void **>(&d), &dpitch, w * sizeof(int), h));
    if (dpitch < w * sizeof(int)) {
        std::printf("FAIL hipMallocPitch: pitch %zu below the row\n", dpitch);
        return 1;
    }
    CHECK(hipMemcpy2D(d, dpitch, host.data(), hpitch, w * sizeof(int), h,
                      hipMemcpyHostToDevice));
    dim3 block(16, 8), grid((w + 15) / 16, (h + 7) / 8);
    hipLaunchKernelGGL(transform, grid, block, 0, 0, d, dpitch, w, h);
    CHECK(hipGetLastError());
    CHECK(hipMemcpy2D(out.data(), opitch, d, dpitch, w * sizeof(int), h,
                      hipMemcpyDeviceToHost));
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++)
            want[y * 107 + x] = (y * 1000 + x) * 3 + x - 7 * y;
    compare("hipMemcpy2D H2D, kernel, D2H (int rows, three pitches)",
            reinterpret_cast<unsigned char *>(out.data()),
            reinterpret_cast<unsigned char *>(want.data()), out.size() * sizeof(int));

    // 2. bytes: a 37 x 19 sub-rectangle from host offset 3 into device offset 5 (1-byte
    //    elements, unaligned starts), read back whole.
    const size_t bw = 200, bh = 30, bhp = 211;
    std::vector<unsigned char> bhost(bhp * bh);
    for (size_t i = 0; i < bhost.size(); i++)
        bhost[i] = static_cast<unsigned char>(i * 7 + i / 211);
    char *bd = nullptr;
    size_t bdp = 0;
    CHECK(hipMallocPitch(reinterpret_cast<void **>(&bd), &bdp, bw, bh));
    CHECK(hipMemset2D(bd, bdp, 0xEE, bw, bh));
    CHECK(hipMemcpy2D(bd + 2 * bdp + 5, bdp, bhost.data() + 3 + bhp, bhp, 37, 19,
                      hipMemcpyHostToDevice));
    std::vector<unsigned char> bgot(bdp * bh), bwant(bdp * bh);
    CHECK(hipMemcpy(bgot.data(), bd, bdp * bh, hipMemcpyDeviceToHost));
    for (size_t y = 0; y < bh; y++)
        for (size_t x = 0; x < bdp; x++)
            bwant[y * bdp + x] = x < bw ? 0xEE : bgot[y * bdp + x]; // past the row: untouched
    for (size_t y = 0; y < 19; y++)
        for (size_t x = 0; x < 37; x++)
            bwant[(y + 2) * bdp + x + 5] = bhost[(y + 1) * bhp + x + 3];
    compare("hipMemcpy2D H2D byte sub-rectangle at odd offsets", bgot.data(), bwant.data(),
            bgot.size());

    // 3. device -> device: a 61 x 23 byte rectangle between two pitched allocations.
    char *cd = nullptr;
    size_t cdp = 0;
    CHECK(hipMallocPitch(reinterpret_cast<void **>(&cd), &cdp, 300, 40));
    CHECK(hipMemset2D(cd, cdp, 0x11, 300, 40));
    CHECK(hipMemcpy2D(cd + 9 * cdp + 17, cdp, bd + 1 * bdp + 2, bdp, 61, 23,
                      hipMemcpyDeviceToDevice));
    std::vector<unsigned char> cgot(cdp * 40), cwant(cdp * 40);
    CHECK(hipMemcpy(cgot.data(), cd, cdp * 40, hipMemcpyDeviceToHost));
    for (size_t y = 0; y < 40; y++)
        for (size_t x = 0; x < cdp; x++)
            cwant[y * cdp + x] = x < 300 ? 0x11 : cgot[y * cdp + x];
    for (size_t y = 0; y < 23; y++)
        for (size_t x = 0; x < 61; x++)
            cwant[(y + 9) * cdp + x + 17] = bwant[(y + 1) * bdp + x + 2];
    compare("hipMemcpy2D D2D byte rectangle", cgot.data(), cwant.data(), cgot.size());

    // 4. 3-D: hipMalloc3D, hipMemcpy3D host -> device of a 24 x 10 x 6 float box into the
    //    middle of a 40 x 16 x 9 volume, and the whole volume back.
    const size_t vx = 40, vy = 16, vz = 9;
    hipExtent vext = make_hipExtent(vx * sizeof(float), vy, vz);
    hipPitchedPtr vol;
    CHECK(hipMalloc3D(&vol, vext));
    CHECK(hipMemset3D(vol, 0, vext));
    std::vector<float> box(24 * 10 * 6);
    for (size_t i = 0; i < box.size(); i++)
        box[i] = 0.5f * static_cast<float>(i) - 100.0f;
    hipMemcpy3DParms up = {};
    up.srcPtr = make_hipPitchedPtr(box.data(), 24 * sizeof(float), 24, 10);
    up.dstPtr = vol;
    up.dstPos = make_hipPos(3 * sizeof(float), 4, 2);
    up.extent = make_hipExtent(24 * sizeof(float), 10, 6);
    up.kind = hipMemcpyHostToDevice;
    CHECK(hipMemcpy3D(&up));
    std::vector<float> vgot(vx * vy * vz, -1.0f), vwant(vx * vy * vz, 0.0f);
    hipMemcpy3DParms down = {};
    down.srcPtr = vol;
    down.dstPtr = make_hipPitchedPtr(vgot.data(), vx * sizeof(float), vx, vy);
    down.extent = vext;
    down.kind = hipMemcpyDeviceToHost;
    CHECK(hipMemcpy3D(&down));
    for (size_t z = 0; z < 6; z++)
        for (size_t y = 0; y < 10; y++)
            for (size_t x = 0; x < 24; x++)
                vwant[((z + 2) * vy + y + 4) * vx + x + 3] = box[(z * 10 + y) * 24 + x];
    compare("hipMemcpy3D H2D box into a volume, D2H whole volume",
            reinterpret_cast<unsigned char *>(vgot.data()),
            reinterpret_cast<unsigned char *>(vwant.data()), vgot.size() * sizeof(float));

    CHECK(hipFree(d));
    CHECK(hipFree(bd));
    CHECK(hipFree(cd));
    CHECK(hipFree(vol.ptr));
    if (bad) {
        std::printf("memcpy2d: %d of %d checks failed\n", bad, bad + checks);
        return 1;
    }
    std::printf("memcpy2d: ok (%d checks)\n", checks);
    return 0;
}
