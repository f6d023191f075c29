#!/usr/bin/env bash
# The thunk against libhsakmt (and ROCr, for a dispatch) on the same shim and model, measured
# so that the verdict holds on a shared machine (issue #22): the two sides run alternately in
# short rounds — A B, then B A, … — each round a fresh process per side and operation, and the
# ratio thunk/libhsakmt is taken per round; the table gives the median ratio, a 95% interval
# for it (order statistics: where the two sides are at parity, a median just above 1.00 with
# 1.00 inside that interval is noise, and the verdict line says how many misses are such) and
# its spread.
# Each side times several batches per round; the ratio compares the median batches, and the
# ratio of the fastest batches is printed beside it (on a shared machine a batch another task
# interrupted measures the scheduler; but where one side is bimodal — ROCr's dispatch wait
# swings between microseconds and milliseconds per operation — its fastest batch flatters it).
#
#   libhsakmt side  tests/c/hsakmt_bench.c (Debian's libhsakmt) and, for the dispatch row,
#                   tests/c/hsa_dispatch_bench.c (ROCr's hsa_queue path)
#   thunk side      `kfd bench --ops` with --device /dev/kfd: the thunk's DevKfd backend, real
#                   system calls, served by the same shim
#
# Environment: ROUNDS (default 9), BATCHES per round (5), SCALE of each operation's
# iterations (0.2), KFD_MODEL_PRESET (gfx900), OPS (all: a space-separated subset), RAW (a
# file that receives every round's line from both sides, to look at outliers).
# Release builds. Exit status 0 when every row ran; the verdict line says whether the thunk
# was at least as fast on every row.
set -euo pipefail
cd "$(dirname "$0")/../.."

CARGO=${CARGO:-cargo}
target_dir=${CARGO_TARGET_DIR:-target}
rounds=${ROUNDS:-9}
batches=${BATCHES:-5}
scale=${SCALE:-0.2}
preset=${KFD_MODEL_PRESET:-gfx900}
ops=${OPS:-pm4_queue_create_destroy alloc_map_unmap_free_64k event_set_wait submit_fence_round_trip aql_barrier_round_trip dispatch_empty_kernel}
work=$(mktemp -d "${TMPDIR:-/tmp}/kfd-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT

$CARGO build -q --release -p kfd-preload -p kfd-cli
shim=$(realpath "$target_dir/release/libkfd_preload.so")
kfd=$(realpath "$target_dir/release/kfd")
gcc -O2 -Wall -Wextra -Werror -o "$work/hsakmt_bench" tests/c/hsakmt_bench.c -lhsakmt
gcc -O2 -Wall -Wextra -Werror -o "$work/hsa_dispatch_bench" tests/c/hsa_dispatch_bench.c -lhsa-runtime64
case $preset in
  gfx90a) code=cli/kernels/empty-gfx90a.hsaco ;;
  *) code=cli/kernels/empty-gfx900.hsaco ;;
esac

export KFD_MODEL_PRESET=$preset
side_c() { # op -> one line on stdout
  if [ "$1" = dispatch_empty_kernel ]; then
    LD_PRELOAD=$shim "$work/hsa_dispatch_bench" -b "$batches" -s "$scale" "$code"
  else
    LD_PRELOAD=$shim "$work/hsakmt_bench" -b "$batches" -s "$scale" "$1"
  fi
}
side_rust() {
  LD_PRELOAD=$shim "$kfd" bench --device /dev/kfd --ops "$1" --batches "$batches" --scale "$scale"
}

load_before=$(cut -d' ' -f1-3 /proc/loadavg)
echo "running $rounds alternated rounds of: $ops ..." >&2
for r in $(seq 1 "$rounds"); do
  for op in $ops; do
    if [ $((r % 2)) -eq 1 ]; then
      echo "$r c $(side_c "$op")" >>"$work/lines"
      echo "$r rust $(side_rust "$op")" >>"$work/lines"
    else
      echo "$r rust $(side_rust "$op")" >>"$work/lines"
      echo "$r c $(side_c "$op")" >>"$work/lines"
    fi
  done
  echo "  round $r of $rounds done" >&2
done
load_after=$(cut -d' ' -f1-3 /proc/loadavg)
if [ -n "${RAW:-}" ]; then
  cp "$work/lines" "$RAW"
fi

python3 - "$work/lines" "$preset" "$(nproc)" "$load_before" "$load_after" "$ops" <<'PY'
import math, statistics, sys
path, preset, cpus, before, after, ops = sys.argv[1:7]

def median_interval(values):
    """A distribution-free interval holding the median with >= 95% probability: between the
    k-th smallest and k-th largest value, for the largest k that still covers it (binomial
    tails). None with fewer than 6 values, where no such interval exists."""
    v, n = sorted(values), len(values)
    tail = lambda k: sum(math.comb(n, i) for i in range(k)) / 2**n
    k = 0
    while k + 1 <= n // 2 and 2 * tail(k + 1) <= 0.05:
        k += 1
    return (v[k - 1], v[n - k]) if k >= 1 else None

# Each side's line: name, median batch ns/op, batches x iterations, fastest batch ns/op.
med, fast = {}, {}
for line in open(path):
    f = line.split()
    r, side, name = int(f[0]), f[1], f[2]
    med.setdefault(name, {}).setdefault(r, {})[side] = float(f[3])
    fast.setdefault(name, {}).setdefault(r, {})[side] = float(f[5]) if len(f) > 5 else float(f[3])
print(f"1 x {preset}, shim + model, release; {cpus} CPU(s), load average {before} before, {after} after")
print("alternated rounds (A B, B A, …); ratio = thunk / libhsakmt (ROCr for the dispatch) per round,")
print("of each side's median batch (the verdict) and, beside it, of each side's fastest batch")
print(f"{'operation':26} {'libhsakmt':>11} {'thunk':>11}  {'median ratio':>12}  {'95% interval':>12}  spread (min–max)  {'fastest-batch ratio':>22}  rounds")
worse = worse_fast = within_noise = 0
def pairs_of(table, name):
    return [(v["c"], v["rust"]) for v in table.get(name, {}).values() if "c" in v and "rust" in v and v["c"] > 0]
for name in ops.split():
    pairs = pairs_of(med, name)
    if not pairs:
        print(f"{name:26} no complete round")
        worse += 1
        continue
    ratios = [b / a for a, b in pairs]
    ratio = statistics.median(ratios)
    interval = median_interval(ratios)
    itext = f"{interval[0]:.3f}–{interval[1]:.3f}" if interval else "(≥ 6 rounds)"
    if ratio > 1.0:
        worse += 1
        if interval and interval[0] <= 1.0:
            within_noise += 1
    c_med = statistics.median(a for a, _ in pairs) / 1e3
    r_med = statistics.median(b for _, b in pairs) / 1e3
    fratios = [b / a for a, b in pairs_of(fast, name)]
    fratio = statistics.median(fratios)
    if fratio > 1.0:
        worse_fast += 1
    ftext = f"{fratio:.3f} ({min(fratios):.2f}–{max(fratios):.2f})"
    print(f"{name:26} {c_med:8.2f} µs {r_med:8.2f} µs  {ratio:12.3f}  {itext:>12}  {min(ratios):.2f}–{max(ratios):.2f}  {ftext:>26}  {len(pairs)}")
noise = f" ({within_noise} of them with 1.00 inside the median's 95% interval)" if within_noise else ""
print(f"target (median ratio ≤ 1.00 on every row): {'met' if worse == 0 else f'missed on {worse} row(s){noise}'}"
      f"; on the fastest batches: {'met' if worse_fast == 0 else f'missed on {worse_fast} row(s)'}")
PY
