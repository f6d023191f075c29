// Debian 12's rocSPARSE (librocsparse0) on the kfd model through the LD_PRELOAD shim
// (scripts/rocm-libs-tests.sh): a CSR sparse matrix-vector product (rocsparse_scsrmv) and a
// lower-triangular solve (rocsparse_scsrsv_analysis + rocsparse_scsrsv_solve) of a system of
// 10000 rows (or as many as the first argument says) whose rows depend on earlier rows: the
// solve's workgroups spin on the flags of the rows they depend on, which only works if
// earlier workgroups have started and make progress. Both are checked against a host
// reference. Prints "rocsparse: ok (...)" and exits 0 when every entry is within its bound.
#include <hip/hip_runtime.h>
#include <rocsparse/rocsparse.h>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CHECK(x)                                                                           \
    do {                                                                                   \
        hipError_t e = (x);                                                                \
        if (e != hipSuccess) {                                                             \
            std::printf("%s failed: %s\n", #x, hipGetErrorString(e));                      \
            return 1;                                                                      \
        }                                                                                  \
    } while (0)

#define CHECK_SPARSE(x)                                                                    \
    do {                                                                                   \
        rocsparse_status s = (x);                                                          \
        if (s != rocsparse_status_success) {                                               \
            std::printf("%s failed: rocsparse status %d\n", #x, (int)s);                   \
            return 1;                                                                      \
        }                                                                                  \
    } while (0)

// A small deterministic generator (64-bit LCG, high bits).
static uint32_t next_u32(uint64_t &state) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(state >> 33);
}

int main(int argc, char **argv) {
    // Rows of the system (default 10000, issue #34's size).
    const int m = argc > 1 ? std::atoi(argv[1]) : 10000;
    if (m < 1) {
        std::printf("usage: rocsparse [rows >= 1]\n");
        return 2;
    }
    // Row i: up to four distinct columns below the diagonal within the 64 rows before it
    // (every odd row also depends on the row just before it, making long chains), then the
    // diagonal. Off-diagonal values are small so the solution stays of order one.
    std::vector<int> row_ptr(m + 1, 0), col;
    std::vector<float> val;
    uint64_t state = 0x5eed;
    for (int i = 0; i < m; i++) {
        std::vector<int> cols;
        if (i % 2 == 1)
            cols.push_back(i - 1);
        for (int k = 0; k < 4 && i > 0; k++) {
            int span = i < 64 ? i : 64;
            int c = i - 1 - (int)(next_u32(state) % (uint32_t)span);
            bool seen = false;
            for (int d : cols)
                seen |= d == c;
            if (!seen)
                cols.push_back(c);
        }
        // Ascending column order, as CSR wants.
        for (size_t a = 0; a < cols.size(); a++)
            for (size_t b = a + 1; b < cols.size(); b++)
                if (cols[b] < cols[a])
                    std::swap(cols[a], cols[b]);
        for (int c : cols) {
            col.push_back(c);
            val.push_back(((int)(next_u32(state) % 2001) - 1000) * 1e-4f);
        }
        col.push_back(i);
        val.push_back(2.0f + (next_u32(state) % 1000) * 1e-3f);
        row_ptr[i + 1] = (int)col.size();
    }
    const int nnz = (int)col.size();
    std::vector<float> x(m);
    for (int i = 0; i < m; i++)
        x[i] = ((int)(next_u32(state) % 2001) - 1000) * 1e-3f;

    // Host references: y = A x, and z with L z = alpha x by forward substitution (in double).
    const float alpha = 1.5f;
    std::vector<double> y_ref(m), z_ref(m);
    for (int i = 0; i < m; i++) {
        double s = 0;
        for (int k = row_ptr[i]; k < row_ptr[i + 1]; k++)
            s += (double)val[k] * x[col[k]];
        y_ref[i] = s;
        double r = (double)alpha * x[i];
        for (int k = row_ptr[i]; k < row_ptr[i + 1] - 1; k++)
            r -= (double)val[k] * z_ref[col[k]];
        z_ref[i] = r / val[row_ptr[i + 1] - 1];
    }

    int *d_row_ptr, *d_col;
    float *d_val, *d_x, *d_y, *d_z;
    CHECK(hipMalloc(&d_row_ptr, (m + 1) * sizeof(int)));
    CHECK(hipMalloc(&d_col, nnz * sizeof(int)));
    CHECK(hipMalloc(&d_val, nnz * sizeof(float)));
    CHECK(hipMalloc(&d_x, m * sizeof(float)));
    CHECK(hipMalloc(&d_y, m * sizeof(float)));
    CHECK(hipMalloc(&d_z, m * sizeof(float)));
    CHECK(hipMemcpy(d_row_ptr, row_ptr.data(), (m + 1) * sizeof(int), hipMemcpyHostToDevice));
    CHECK(hipMemcpy(d_col, col.data(), nnz * sizeof(int), hipMemcpyHostToDevice));
    CHECK(hipMemcpy(d_val, val.data(), nnz * sizeof(float), hipMemcpyHostToDevice));
    CHECK(hipMemcpy(d_x, x.data(), m * sizeof(float), hipMemcpyHostToDevice));

    rocsparse_handle handle;
    rocsparse_mat_descr descr;
    rocsparse_mat_info info;
    CHECK_SPARSE(rocsparse_create_handle(&handle));
    CHECK_SPARSE(rocsparse_create_mat_descr(&descr));
    CHECK_SPARSE(rocsparse_create_mat_info(&info));

    // SpMV: y = 1 * A x + 0 * y.
    const float one = 1.0f, zero = 0.0f;
    CHECK_SPARSE(rocsparse_scsrmv(handle, rocsparse_operation_none, m, m, nnz, &one, descr, d_val,
                                  d_row_ptr, d_col, nullptr, d_x, &zero, d_y));

    // The triangular solve: L z = alpha x.
    CHECK_SPARSE(rocsparse_set_mat_fill_mode(descr, rocsparse_fill_mode_lower));
    CHECK_SPARSE(rocsparse_set_mat_diag_type(descr, rocsparse_diag_type_non_unit));
    size_t buffer_size = 0;
    CHECK_SPARSE(rocsparse_scsrsv_buffer_size(handle, rocsparse_operation_none, m, nnz, descr,
                                              d_val, d_row_ptr, d_col, info, &buffer_size));
    void *buffer;
    CHECK(hipMalloc(&buffer, buffer_size));
    CHECK_SPARSE(rocsparse_scsrsv_analysis(handle, rocsparse_operation_none, m, nnz, descr, d_val,
                                           d_row_ptr, d_col, info, rocsparse_analysis_policy_force,
                                           rocsparse_solve_policy_auto, buffer));
    CHECK_SPARSE(rocsparse_scsrsv_solve(handle, rocsparse_operation_none, m, nnz, &alpha, descr,
                                        d_val, d_row_ptr, d_col, info, d_x, d_z,
                                        rocsparse_solve_policy_auto, buffer));
    rocsparse_int pivot = -1;
    rocsparse_status pivot_status = rocsparse_csrsv_zero_pivot(handle, descr, info, &pivot);
    if (pivot_status != rocsparse_status_success) {
        std::printf("rocsparse_csrsv_zero_pivot: status %d, pivot %d\n", (int)pivot_status,
                    (int)pivot);
        return 1;
    }

    std::vector<float> y(m), z(m);
    CHECK(hipMemcpy(y.data(), d_y, m * sizeof(float), hipMemcpyDeviceToHost));
    CHECK(hipMemcpy(z.data(), d_z, m * sizeof(float), hipMemcpyDeviceToHost));
    // Single precision against a double reference: a few ulps per term.
    int bad = 0;
    double y_err = 0, z_err = 0;
    for (int i = 0; i < m; i++) {
        double ey = std::fabs(y[i] - y_ref[i]) / std::fmax(1.0, std::fabs(y_ref[i]));
        double ez = std::fabs(z[i] - z_ref[i]) / std::fmax(1.0, std::fabs(z_ref[i]));
        y_err = std::fmax(y_err, ey);
        z_err = std::fmax(z_err, ez);
        if (!(ey <= 1e-5) || !(ez <= 1e-4)) {
            if (bad < 5)
                std::printf("row %d: spmv %g (host %g), csrsv %g (host %g)\n", i, y[i], y_ref[i],
                            z[i], z_ref[i]);
            bad++;
        }
    }
    CHECK(hipFree(buffer));
    CHECK_SPARSE(rocsparse_destroy_mat_info(info));
    CHECK_SPARSE(rocsparse_destroy_mat_descr(descr));
    CHECK_SPARSE(rocsparse_destroy_handle(handle));
    CHECK(hipFree(d_row_ptr));
    CHECK(hipFree(d_col));
    CHECK(hipFree(d_val));
    CHECK(hipFree(d_x));
    CHECK(hipFree(d_y));
    CHECK(hipFree(d_z));
    if (bad) {
        std::printf("rocsparse: %d of %d rows wrong\n", bad, m);
        return 1;
    }
    std::printf("rocsparse: ok (%d rows, %d nonzeros; spmv max rel err %.2g, csrsv max rel err "
                "%.2g)\n",
                m, nnz, y_err, z_err);
    return 0;
}
