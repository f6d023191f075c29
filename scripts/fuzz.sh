#!/usr/bin/env bash
# Runs every cargo-fuzz target of the repository for FUZZ_SECONDS each (default 30) and prints
# a table: target, executions, seconds, crashes, and the saved input of a crash.
#
# Works on a stable toolchain (RUSTC_BOOTSTRAP=1 lets cargo-fuzz pass its -Z flags); installs
# cargo-fuzz with `cargo install` when it is missing. Each project builds in its own target/
# folder; corpora grow in <project>/corpus/<target> (not committed), crashing inputs land in
# <project>/artifacts/<target>. A crash found here is fixed and kept as a regression test in
# the crate's own tests (e.g. model/tests/fuzz_regressions.rs).
#
#   FUZZ_SECONDS=300 ./scripts/fuzz.sh                 # five minutes per target
#   FUZZ_TARGETS="model_ioctl mqd_decode" ./scripts/fuzz.sh
#   FUZZ_JOBS=2 ./scripts/fuzz.sh                      # two targets at a time
#
# Exits non-zero when a target crashed, timed out or ran out of memory.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
seconds="${FUZZ_SECONDS:-30}"
timeout_s="${FUZZ_TIMEOUT:-30}"
jobs="${FUZZ_JOBS:-1}"
export RUSTC_BOOTSTRAP=1

# target → fuzz project folder (relative to the repository root) and libFuzzer input limit.
declare -A project=(
  [decode_pm4]=pm4/fuzz [decode_sdma]=pm4/fuzz
  [model_ioctl]=fuzz [model_engines]=fuzz [mqd_decode]=fuzz [topology_parse]=fuzz [codeobj_parse]=fuzz
  [isa_decode]=fuzz [isa_exec]=fuzz [isa_compiled]=fuzz
)
declare -A max_len=(
  [decode_pm4]=4096 [decode_sdma]=4096
  [model_ioctl]=8192 [model_engines]=8192 [mqd_decode]=4096 [topology_parse]=8192 [codeobj_parse]=65536
  [isa_decode]=4096 [isa_exec]=4096 [isa_compiled]=4096
)
order=(decode_pm4 decode_sdma mqd_decode isa_decode isa_exec isa_compiled topology_parse codeobj_parse model_ioctl model_engines)
read -r -a targets <<<"${FUZZ_TARGETS:-${order[*]}}"

if ! cargo fuzz --version >/dev/null 2>&1; then
  echo "fuzz: cargo-fuzz is missing; installing it with cargo install"
  cargo install --locked cargo-fuzz
fi

for t in "${targets[@]}"; do
  [ -n "${project[$t]:-}" ] || { echo "fuzz: unknown target '$t' (known: ${order[*]})" >&2; exit 2; }
done

# Build each project once, before the clock of any target starts.
declare -A built=()
for t in "${targets[@]}"; do
  dir="${project[$t]}"
  [ -n "${built[$dir]:-}" ] && continue
  echo "fuzz: building $dir"
  (cd "$root" && cargo fuzz build --fuzz-dir "$dir")
  built[$dir]=1
done

logs="$(mktemp -d)"
trap 'rm -rf "$logs"' EXIT

run_one() {
  local t="$1" dir="${project[$1]}"
  local corpus="$root/$dir/corpus/$t" artifacts="$root/$dir/artifacts/$t"
  mkdir -p "$corpus" "$artifacts"
  local before
  before="$(ls "$artifacts" | wc -l)"
  local start=$SECONDS status=0
  (cd "$root" && cargo fuzz run --fuzz-dir "$dir" "$t" "$corpus" -- \
    -max_total_time="$seconds" -timeout="$timeout_s" -max_len="${max_len[$t]}" \
    -len_control=10 -print_final_stats=1 -artifact_prefix="$artifacts/") \
    >"$logs/$t.log" 2>&1 || status=$?
  local runs
  runs="$(grep -Eo '^Done [0-9]+ runs' "$logs/$t.log" | grep -Eo '[0-9]+' | tail -n1 || true)"
  [ -n "$runs" ] || runs="$(grep -Eo 'stat::number_of_executed_units: *[0-9]+' "$logs/$t.log" | grep -Eo '[0-9]+$' | tail -n1 || true)"
  local after crashes saved=""
  after="$(ls "$artifacts" | wc -l)"
  crashes=$((after - before))
  if [ "$status" -ne 0 ] && [ "$crashes" -eq 0 ]; then crashes=1; fi
  if [ "$crashes" -gt 0 ]; then
    saved="$(grep -Eo "Test unit written to [^ ]+" "$logs/$t.log" | tail -n1 | sed 's/Test unit written to //' || true)"
    cp "$logs/$t.log" "$artifacts/last-crash.log"
  fi
  printf '%s\t%s\t%s\t%s\t%s\n' "$t" "${runs:-?}" "$((SECONDS - start))" "$crashes" "$saved" >"$logs/$t.row"
}

running=0
for t in "${targets[@]}"; do
  echo "fuzz: $t for ${seconds}s"
  run_one "$t" &
  running=$((running + 1))
  if [ "$running" -ge "$jobs" ]; then
    wait -n || true
    running=$((running - 1))
  fi
done
wait || true

total_crashes=0
printf '\n%-16s %12s %8s %8s  %s\n' target runs seconds crashes "crashing input"
for t in "${targets[@]}"; do
  IFS=$'\t' read -r name runs secs crashes saved <"$logs/$t.row"
  printf '%-16s %12s %8s %8s  %s\n' "$name" "$runs" "$secs" "$crashes" "$saved"
  total_crashes=$((total_crashes + crashes))
done
if [ "$total_crashes" -gt 0 ]; then
  echo "fuzz: $total_crashes crash(es); the log of each is beside its input (last-crash.log)" >&2
  exit 1
fi
echo "fuzz: no crashes"
