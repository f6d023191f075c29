#!/usr/bin/env python3
"""AMD's library test suites (Debian 13's prebuilt gtest binaries) on the model.

For each suite a chosen subset of its cases (a gtest filter, then a fixed spread over its
functions so that one suite's many variants of one function do not crowd out the others) runs
on each preset, a few cases per process under a time limit, inside the trixie root under the
release shim (scripts/trixie-run.sh). Per suite and preset it prints the cases run, passed,
failed, timed out, crashed and skipped, then the first error of each distinct cause with the
cases it struck. The logs and a JSON summary stay in the output folder.

Run it through scripts/rocm-suites.sh (which builds the root and the shim first).
"""

import argparse
import concurrent.futures
import json
import os
import re
import subprocess
import sys
import time

LIBEXEC = "/usr/libexec/rocm"

# name, test binaries (relative to LIBEXEC; a directory means all test_* in it), gtest filter,
# how to group cases before spreading the sample over the groups, cases to take, GPUs.
SUITES = [
    # rocblas-test parses its whole data file (1.4 M cases) in every process, about a minute
    # of CPU: ten cases per process.
    dict(name="rocBLAS", bins=["librocblas0-tests/rocblas-test"], filter="*quick*",
         group="function", take=40, gpus=1, chunk=10, timeout=1200),
    dict(name="hipBLAS", bins=["libhipblas0-tests/hipblas-test"], filter="*quick*",
         group="suite", take=30, gpus=1),
    dict(name="rocSOLVER", bins=["librocsolver0-tests/rocsolver-test"], filter="checkin_lapack/*",
         group="suite", take=30, gpus=1),
    # rocsparse-test also parses its data file in every process.
    dict(name="rocSPARSE", bins=["librocsparse0-tests/rocsparse-test"], filter="quick/*",
         group="suite", take=40, gpus=1, chunk=10, timeout=1200),
    # rocFFT's smoke set: the first cases of each enabled accuracy suite.
    dict(name="rocFFT", bins=["librocfft0-tests/rocfft-test"], filter="*accuracy_test*:-DISABLED*",
         group="suite", take=30, gpus=1),
    dict(name="rocRAND", bins=["librocrand1-tests"], filter="*", group="suite", take=35, gpus=1),
    dict(name="rocPRIM", bins=["librocprim-tests"], filter="*", group="suite", take=50, gpus=1),
    dict(name="hipCUB", bins=["libhipcub-tests"], filter="*", group="suite", take=38, gpus=1),
    # Debian's rocThrust tests use Thrust's own unit-test framework, not gtest: one binary runs
    # all of its tests and prints their totals, so a binary is one case here.
    dict(name="rocThrust", bins=["librocthrust-tests"], framework="thrust", take=60, gpus=1,
         chunk=1, timeout=600),
    # RCCL's unit tests need two GPUs; on gfx90a they pass buffers between processes (IPC).
    dict(name="RCCL", bins=["librccl1-tests/UnitTests"], filter="*", group="suite", take=12, gpus=2),
]

RESULT = re.compile(r"^\[\s+(OK|FAILED|SKIPPED)\s+\] (\S+?)(?:,| \(|$)")
RUN = re.compile(r"^\[ RUN      \] (\S+)")
SUITE_LINE = re.compile(r"^([A-Za-z_][\w/.-]*)\.\s*(#.*)?$")
CASE_LINE = re.compile(r"^  (\S+)(?:\s+#\s*(.*))?$")
FUNCTION = re.compile(r'function: "([^"]+)"')


def trixie_run(repo, env, args, timeout, log):
    """Runs args in the root under the shim; returns the exit status (124: timed out)."""
    cmd = [os.path.join(repo, "scripts/trixie-run.sh"), "--bind", os.path.dirname(log),
           "timeout", "-k", "10", str(timeout)] + args
    with open(log, "wb") as out:
        return subprocess.run(cmd, env=env, stdout=out, stderr=subprocess.STDOUT,
                              stdin=subprocess.DEVNULL).returncode


def list_cases(repo, env, binary, gfilter, outdir):
    """(case, group-by-suite, function or '') of every case the filter selects."""
    log = os.path.join(outdir, "list-" + binary.replace("/", "_") + ".txt")
    if not os.path.exists(log):
        trixie_run(repo, env, [binary, "--gtest_list_tests", "--gtest_filter=" + gfilter], 600,
                   log + ".tmp")
        os.replace(log + ".tmp", log)
    cases, suite = [], None
    with open(log, errors="replace") as f:
        for line in f:
            line = line.rstrip("\n")
            m = SUITE_LINE.match(line)
            if m:
                suite = m.group(1)
                continue
            m = CASE_LINE.match(line)
            if m and suite:
                if m.group(1).startswith("DISABLED_") or suite.startswith("DISABLED_"):
                    continue  # gtest does not run them unless asked to
                fn = FUNCTION.search(m.group(2) or "")
                cases.append((suite + "." + m.group(1), suite, fn.group(1) if fn else ""))
    return cases


def spread(cases, group, take):
    """`take` cases spread over the groups: the first case of evenly spaced groups, then the
    second, ... (deterministic; the list order is the suite's own)."""
    groups = {}
    for name, suite, fn in cases:
        key = fn if group == "function" and fn else suite
        groups.setdefault(key, []).append(name)
    keys = list(groups)
    chosen, rank = [], 0
    while len(chosen) < take and any(rank < len(v) for v in groups.values()):
        row = [groups[k][rank] for k in keys if rank < len(groups[k])]
        need = take - len(chosen)
        if len(row) > need:
            step = len(row) / need
            row = [row[int(i * step)] for i in range(need)]
        chosen += row
        rank += 1
    return chosen


def error_line(lines):
    """The first line that says what went wrong, in order of how telling it is."""
    patterns = [
        r"kfd-preload\[\d+\] (ERROR|WARN)",
        r"Memory access fault|illegal instruction|HSA_STATUS_ERROR|Assertion|terminate called",
        r"error|Error|ERROR",
        r"Failure|Expected|FAIL|mismatch|Which is",
    ]
    for pat in patterns:
        for line in lines:
            if re.search(pat, line) and not RESULT.match(line) and not RUN.match(line):
                return line.strip()[:300]
    tail = [l.strip() for l in lines if l.strip()]
    return tail[-1][:300] if tail else "(no output)"


def cause_key(line):
    """The message without what varies between cases (pids, addresses, numbers)."""
    line = re.sub(r"kfd-preload\[\d+\]", "kfd-preload", line)
    line = re.sub(r"0x[0-9a-fA-F]+", "0x…", line)
    line = re.sub(r"\d+(\.\d+)?", "N", line)
    return line[:160]


THRUST_TOTALS = re.compile(
    r"Totals: (\d+) failures, (\d+) known failures, (\d+) errors, and (\d+) passes")


def run_thrust(repo, env, binary, timeout, log):
    """Runs a Thrust unit-test binary (all of its tests); returns {binary: (status, error)}."""
    status = trixie_run(repo, env, [binary], timeout, log)
    with open(log, errors="replace") as f:
        lines = f.read().splitlines()
    totals = [m for m in map(THRUST_TOTALS.search, lines) if m]
    if status in (124, 137):
        verdict = ("timed out", error_line(lines) + f" (exit {status})")
    elif totals and status == 0 and totals[-1].group(1) == "0" and totals[-1].group(3) == "0":
        verdict = ("passed", "")
    elif totals:
        bad = [l for l in lines if re.search(r"\[FAILURE\]|\[ERROR\]|FAILURE|ERROR", l)]
        verdict = ("failed", (bad[0].strip()[:300] if bad else error_line(lines))
                   + f" ({totals[-1].group(0)})")
    else:
        verdict = ("crashed", error_line(lines) + f" (exit {status})")
    return {binary: verdict}, []


def run_chunk(repo, env, binary, names, timeout, log):
    """Runs `names` in one process; returns {case: (status, error line)} and the leftovers
    that never started (after a crash or a time-out)."""
    status = trixie_run(repo, env, [binary, "--gtest_filter=" + ":".join(names)], timeout, log)
    with open(log, errors="replace") as f:
        lines = f.read().splitlines()
    results, current, start = {}, None, 0
    for i, line in enumerate(lines):
        m = RUN.match(line)
        if m:
            current, start = m.group(1), i
            continue
        m = RESULT.match(line)
        if m and m.group(2) not in results:
            verdict = {"OK": "passed", "FAILED": "failed", "SKIPPED": "skipped"}[m.group(1)]
            results[m.group(2)] = (verdict, error_line(lines[start:i]) if verdict == "failed" else "")
            current = None
    if current is not None and current not in results:
        verdict = "timed out" if status in (124, 137) else "crashed"
        results[current] = (verdict, error_line(lines[start:]) + f" (exit {status})")
    leftovers = [n for n in names if n not in results]
    if len(names) == 1 and leftovers and status in (0, 1):
        # Run alone, the process ended normally without running it: the binary skips it
        # (disabled, or filtered out by the suite's own environment). Not run again.
        results[names[0]] = ("skipped", "")
        leftovers = []
    if status in (124, 137) and not results and leftovers:
        # Out of time before the first case started (start-up, the suite's own set-up): the
        # cases are charged, not run again one by one.
        for n in leftovers:
            results[n] = ("timed out", error_line(lines) + " (before any case started)")
        leftovers = []
    if status not in (0, 1, 124, 137) and current is None and leftovers:
        # The process died outside any case (start-up or exit): every case is charged.
        for n in leftovers:
            results[n] = ("crashed", error_line(lines) + f" (exit {status})")
        leftovers = []
    return results, leftovers


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repo", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--presets", default="gfx900,gfx90a")
    ap.add_argument("--suites", default=",".join(s["name"] for s in SUITES))
    ap.add_argument("--chunk", type=int, default=3, help="cases per process")
    ap.add_argument("--timeout", type=int, default=240, help="seconds per process")
    ap.add_argument("--jobs", type=int, default=2, help="processes at once")
    ap.add_argument("--scale", type=float, default=1.0, help="multiplies each suite's sample")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    wanted = set(args.suites.split(","))
    summary = []
    for preset in args.presets.split(","):
        for suite in [s for s in SUITES if s["name"] in wanted]:
            env = dict(os.environ, KFD_MODEL_PRESET=preset, KFD_MODEL_GPUS=str(suite["gpus"]),
                       KFD_MODEL_CU_THREADS="1")
            work = []
            for b in suite["bins"]:
                root_path = os.path.join(os.environ.get("KFD_TRIXIE_ROOT", "/var/cache/kfd-rs/trixie"),
                                         LIBEXEC.lstrip("/"), b)
                if os.path.isdir(root_path):
                    bins = sorted(os.path.join(LIBEXEC, b, f) for f in os.listdir(root_path)
                                  if f.startswith("test_"))
                else:
                    bins = [os.path.join(LIBEXEC, b)]
                for binary in bins:
                    if suite.get("framework") == "thrust":
                        work.append((binary, (binary, os.path.basename(binary), "")))
                        continue
                    for case in list_cases(args.repo, env, binary, suite["filter"], args.out):
                        work.append((binary, case))
            take = max(1, int(suite["take"] * args.scale))
            by_name = {c[0]: b for b, c in work}
            chosen = spread([c for _, c in work], suite.get("group", "suite"), take)
            chunks = []
            for binary in dict.fromkeys(by_name[n] for n in chosen):
                names = [n for n in chosen if by_name[n] == binary]
                per = suite.get("chunk", args.chunk)
                chunks += [(binary, names[i:i + per]) for i in range(0, len(names), per)]
            results = {}
            t0 = time.time()
            with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
                pending = {}
                serial = 0

                def submit(binary, names):
                    nonlocal serial
                    serial += 1
                    log = os.path.join(args.out, f"{suite['name']}-{preset}-{serial:03}.log")
                    limit = max(args.timeout, suite.get("timeout", 0))
                    if suite.get("framework") == "thrust":
                        fut = pool.submit(run_thrust, args.repo, env, binary, limit, log)
                    else:
                        fut = pool.submit(run_chunk, args.repo, env, binary, names, limit, log)
                    pending[fut] = (binary, names)

                for binary, names in chunks:
                    submit(binary, names)
                while pending:
                    done, _ = concurrent.futures.wait(pending, return_when=concurrent.futures.FIRST_COMPLETED)
                    for fut in done:
                        binary, names = pending.pop(fut)
                        got, leftovers = fut.result()
                        results.update(got)
                        for n in leftovers:  # cases a crash or time-out kept from starting
                            submit(binary, [n])
            counts = {k: 0 for k in ("passed", "failed", "timed out", "crashed", "skipped")}
            causes = {}
            for name in chosen:
                verdict, err = results.get(name, ("crashed", "no result"))
                counts[verdict] += 1
                if verdict in ("failed", "timed out", "crashed"):
                    c = causes.setdefault(cause_key(err), {"first": err, "cases": []})
                    c["cases"].append(f"{name} [{verdict}]")
            row = dict(suite=suite["name"], preset=preset, run=len(chosen), seconds=round(time.time() - t0),
                       **counts, causes=list(causes.values()))
            summary.append(row)
            print(f"{suite['name']:10} {preset:7} run {len(chosen):3}  passed {counts['passed']:3}  "
                  f"failed {counts['failed']:3}  timed out {counts['timed out']:3}  crashed {counts['crashed']:3}  "
                  f"skipped {counts['skipped']:3}  ({row['seconds']} s)", flush=True)
            with open(os.path.join(args.out, "summary.json"), "w") as f:
                json.dump(summary, f, indent=1)
    print()
    print(f"{'suite':10} {'preset':7} {'run':>4} {'pass':>5} {'fail':>5} {'timeout':>8} {'crash':>6} {'skip':>5}")
    for r in summary:
        print(f"{r['suite']:10} {r['preset']:7} {r['run']:4} {r['passed']:5} {r['failed']:5} "
              f"{r['timed out']:8} {r['crashed']:6} {r['skipped']:5}")
    print()
    for r in summary:
        for c in r["causes"]:
            more = f" (+{len(c['cases']) - 3} more)" if len(c["cases"]) > 3 else ""
            print(f"{r['suite']} {r['preset']}: {len(c['cases'])} case(s): {c['first']}")
            print(f"    {'; '.join(c['cases'][:3])}{more}")
    total = sum(r["run"] for r in summary)
    good = sum(r["passed"] + r["skipped"] for r in summary)
    print(f"rocm-suites: {good} passed, {total - good} failed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
