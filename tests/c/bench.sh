#!/usr/bin/env bash
# Issue #8 item 3: libhsakmt (tests/c/hsakmt_bench.c) and the Rust thunk's DevKfd backend
# (preload/benches/devkfd.rs, criterion) timed in one run on the same shim and model
# (KFD_MODEL_PRESET, default gfx900), printed as one table. Release builds.
set -euo pipefail
cd "$(dirname "$0")/../.."

CARGO=${CARGO:-cargo}
target_dir=${CARGO_TARGET_DIR:-target}
work=$(mktemp -d "${TMPDIR:-/tmp}/kfd-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT

$CARGO build -q --release -p kfd-preload
shim=$(realpath "$target_dir/release/libkfd_preload.so")
gcc -O2 -Wall -Wextra -Werror -o "$work/hsakmt_bench" tests/c/hsakmt_bench.c -lhsakmt
bench_bin=$($CARGO bench -q -p kfd-preload --bench devkfd --no-run --message-format=json 2>/dev/null \
  | python3 -c '
import json, sys
for line in sys.stdin:
    try:
        m = json.loads(line)
    except ValueError:
        continue
    if m.get("reason") == "compiler-artifact" and m["target"]["name"] == "devkfd" and m.get("executable"):
        print(m["executable"])')

echo "running libhsakmt under the shim ..." >&2
LD_PRELOAD=$shim "$work/hsakmt_bench" >"$work/c.txt"
echo "running the thunk's DevKfd path under the shim (criterion) ..." >&2
KFD_DEVICE=/dev/kfd LD_PRELOAD=$shim "$bench_bin" --bench --warm-up-time 1 --measurement-time 3 \
  >"$work/rust.txt" 2>&1

python3 - "$work/c.txt" "$work/rust.txt" "${KFD_MODEL_PRESET:-gfx900}" <<'PY'
import re, sys
c = {}
for line in open(sys.argv[1]):
    name, ns, _ = line.split()
    c[name] = float(ns)
unit = {"ps": 1e-3, "ns": 1.0, "µs": 1e3, "us": 1e3, "ms": 1e6, "s": 1e9}
rust, name = {}, None
for line in open(sys.argv[2]):
    m = re.match(r"^devkfd/(\S+)", line)
    if m:
        name = m.group(1)
    m = re.search(r"time:\s+\[\S+ \S+ (\S+) (\S+) \S+ \S+\]", line)
    if m and name:
        rust[name] = float(m.group(1)) * unit[m.group(2)]
        name = None
def fmt(ns):
    return f"{ns / 1e3:10.2f} µs" if ns is not None else "       n/a   "
print(f"1 x {sys.argv[3]}, shim + model, median per operation")
print(f"{'operation':28} {'libhsakmt':>13} {'thunk DevKfd':>13}  thunk/libhsakmt")
worse = 0
for op in ["pm4_queue_create_destroy", "alloc_map_unmap_free_64k", "event_set_wait", "submit_fence_round_trip"]:
    a, b = c.get(op), rust.get(op)
    ratio = f"{b / a:6.2f}" if a and b else "   n/a"
    if a and b and b > a:
        worse += 1
    print(f"{op:28} {fmt(a)} {fmt(b)}  {ratio}")
print(f"target (thunk at least as fast on every row): {'met' if worse == 0 else f'missed on {worse} row(s)'}")
PY
