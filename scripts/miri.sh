#!/usr/bin/env bash
# Runs the tests of the pure layers — kfd-sys (the ABI), pm4 (packets), mqd (queue
# descriptors) — under Miri, which checks every memory access, alignment, zerocopy cast and
# unsafe block they execute for undefined behaviour. Unit tests and the integration tests
# that need no system call; tests that cannot run there (a C compiler, the system headers,
# files) or are too slow when interpreted are marked `#[cfg_attr(miri, ignore = "why")]`.
#
# Property tests run with PROPTEST_CASES cases (default 4; Miri interprets every step) and
# without failure-persistence files (Miri's isolation has no file system).
#
#   ./scripts/miri.sh                    # all three crates
#   ./scripts/miri.sh -p pm4 --test ring # other `cargo test` arguments replace the default
#                                        # (-p kfd-sys -p pm4 -p mqd --lib --tests)
#
# Skips, with a message and exit 0, where `cargo +nightly miri` is not installed
# (rustup toolchain install nightly --component miri).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
if ! cargo +nightly miri --version >/dev/null 2>&1; then
  echo "miri: 'cargo +nightly miri' is not available; skipping (install: rustup toolchain install nightly --component miri)"
  exit 0
fi

export PROPTEST_CASES="${PROPTEST_CASES:-4}"
export PROPTEST_DISABLE_FAILURE_PERSISTENCE=1
export MIRIFLAGS="${MIRIFLAGS:-} -Zmiri-env-forward=PROPTEST_CASES -Zmiri-env-forward=PROPTEST_DISABLE_FAILURE_PERSISTENCE"

args=("$@")
[ ${#args[@]} -gt 0 ] || args=(-p kfd-sys -p pm4 -p mqd --lib --tests)

log="$(mktemp)"
trap 'rm -f "$log"' EXIT
status=0
(cd "$root" && cargo +nightly miri test "${args[@]}" --no-fail-fast) 2>&1 | tee "$log" || status=$?

# Sum the test binaries' result lines.
awk '/^test result:/ {
       for (i = 1; i <= NF; i++) {
         if ($(i+1) ~ /^passed;?$/) p += $i
         if ($(i+1) ~ /^failed;?$/) f += $i
         if ($(i+1) ~ /^ignored;?$/) g += $i
       }
       n++
     }
     END { printf "miri: %d test binaries: %d passed, %d failed, %d ignored\n", n, p, f, g }' "$log"
exit "$status"
