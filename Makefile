# The two commands a newcomer needs: `make run` and `make test`.
CARGO ?= cargo
# Under make, a missing tool is a failure in every test (kfd-testkit's policy): never skip.
unexport KFD_SKIP_MISSING_TOOLS

.PHONY: run test stress-test deps fmt fmt-check lint doc unit c-clients hip rocm-libs rocm6 valgrind abi bench bench-hip fuzz miri rocm-suites trixie-root clean

## run: the main job — `kfd demo`: the whole stack end to end on the GPU, or on the model when
## there is no /dev/kfd (optimised: the demo prints measured numbers)
run:
	$(CARGO) run --release -q -p kfd-cli -- demo

## test: everything — deps, format, clippy, docs, unit and integration tests, the header check
test: deps fmt-check lint doc unit c-clients hip rocm-libs rocm6 valgrind abi
	@echo "make test: all green"

## stress-test: `make test` on a fresh clone, three times in a row, while `yes` processes keep
## every core busy (after one quiet run for comparison): the suite must not depend on the host's
## speed or scheduling
stress-test:
	./scripts/stress-ci.sh --fresh --quiet-first --runs 3

deps:
	./scripts/ensure-deps.sh

fmt:
	$(CARGO) fmt --all

fmt-check:
	$(CARGO) fmt --all -- --check

lint:
	$(CARGO) clippy --workspace --all-targets -- -D warnings

doc:
	RUSTDOCFLAGS="-D warnings" $(CARGO) doc --workspace --no-deps --quiet

unit:
	$(CARGO) test --workspace -- --skip system_headers_match_kfd_sys

# Unmodified C clients (Debian's libhsakmt, rocminfo) on the model through the LD_PRELOAD shim.
c-clients:
	./scripts/c-client-tests.sh

# Unmodified HIP programs (Debian's hipcc, gfx900 and gfx90a) on the model through the shim.
hip:
	./scripts/hip-tests.sh

# Debian 12's rocRAND, rocSPARSE and rocPRIM called from HIP programs (gfx900 and gfx90a) on the
# model through the shim, each against a host reference.
rocm-libs:
	./scripts/rocm-libs-tests.sh

# Debian 13's ROCm 6 stack (ROCr 6.1, libhsakmt 6.2, HIP 5.7, rocminfo, rocm-smi, the ROCm
# OpenCL runtime) on the model, gfx900 and gfx90a, in a trixie root built on first use.
rocm6:
	./scripts/rocm6-tests.sh

## trixie-root: the Debian 13 root with the ROCm 6 stack and AMD's test suites (cached)
trixie-root:
	./scripts/trixie-root.sh --tests

## rocm-suites: AMD's library test suites (rocBLAS, rocSPARSE, rocFFT, RCCL, ...) on the model,
## a chosen subset per suite, gfx900 and gfx90a; prints the table of results and causes
rocm-suites:
	./scripts/rocm-suites.sh

# The same C clients under valgrind memcheck: no memory error, no definite leak from the shim or
# the model.
valgrind:
	./scripts/c-clients-valgrind.sh

# The layout test against the system's linux/kfd_ioctl.h, run on its own so it prints counts.
abi:
	$(CARGO) test -p kfd-sys --test system_header -- --nocapture

bench:
	$(CARGO) bench --workspace

## bench-hip: an empty HIP kernel's launch -> hipDeviceSynchronize latency on the model (release)
bench-hip:
	./scripts/hip-bench.sh

## fuzz: every cargo-fuzz target (fuzz/, pm4/fuzz) for FUZZ_SECONDS (default 30) each
fuzz:
	./scripts/fuzz.sh

## miri: the pure layers' tests (kfd-sys, pm4, mqd) under Miri; skips without nightly miri
miri:
	./scripts/miri.sh

clean:
	$(CARGO) clean
