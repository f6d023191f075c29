#!/usr/bin/env python3
"""The compiler corpus: which gfx9 instructions clang-15 and clang-17 emit for HIP and OpenCL.

    python3 isa/tools/corpus.py [--work DIR] [STAGE...]

Stages (all of them, in this order, when none is named):

  fetch      Debian 12's (bookworm: ROCm 5.2/5.3, clang-15) and Debian 13's (trixie: ROCm
             5.7/6.1, clang-17) AMD libraries and AMD's prebuilt test suites, downloaded as .debs
             with a private apt configuration under WORK (the host's apt sources are never
             touched), unpacked one at a time, their gfx900/gfx906/gfx908/gfx90a code objects
             kept (bundles.py) and the unpacked tree removed again.
  local      The project's own kernels (OpenCL with clang-15, HIP with hipcc) and the kernels of
             isa/tools/corpus_kernels/ (intrinsics and rocPRIM's header-only algorithms against
             bookworm's librocprim-dev), for each of the four targets.
  summarize  Every kept code object decoded (isa/examples/corpus_scan.rs: this crate's
             decoder, whose text is llvm-objdump-15's; llvm-objdump-15 itself needs hours for
             the 4 GB); writes isa/coverage/corpus.txt: per target and mnemonic (as llvm prints
             it, with `_e32`/`_e64`/`_sdwa`/`_dpp`), one sample instruction per distinct operand
             shape (registers and numbers folded, modifiers kept), with its encoding, how often
             the shape occurs and which corpus it came from (c15: clang-15 builds, c17: clang-17
             builds). The execution coverage test (isa/tests/exec_coverage.rs) checks every
             sample's text against llvm-mc-15 and runs it.

WORK defaults to /work/isa-apt (or $ISA_CORPUS_WORK); it needs ~6 GB free while a suite
package is unpacked. The downloads are ~3.5 GB.
"""

import argparse
import concurrent.futures
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
TARGETS = ["gfx900", "gfx906", "gfx908", "gfx90a"]

# Debian suite -> (corpus tag, packages). Libraries with device code, and AMD's test suites:
# rocPRIM, hipCUB and rocThrust are header-only, so their kernels are in the test programs.
SUITES = {
    "bookworm": (
        "c15",
        [
            "librocsparse0",
            "librocrand1",
            "libhipsparse0",
            "libhiprand1",
            "libamdhip64-5",
        ],
    ),
    "trixie": (
        "c17",
        [
            "libamdhip64-5",
            "rocm-opencl-icd",
            "librocsparse0",
            "librocrand1",
            "libhipsparse0",
            "libhiprand1",
            "librocblas0",
            "librocsolver0",
            "librocfft0",
            "librocalution0",
            "librccl1",
            "librocrand1-tests",
            "librocsparse0-tests",
            "librocblas0-tests",
            "librocsolver0-tests",
            "librocfft0-tests",
            "libhipfft0-tests",
            "librocprim-tests",
            "libhipcub-tests",
            "librocthrust-tests",
        ],
    ),
}
ARCHIVE = "http://deb.debian.org/debian"
# Debian 12's ROCm device libraries (OpenCL builtins link against them).
DEVICE_LIBS = "/usr/lib/x86_64-linux-gnu/amdgcn/bitcode"


def run(cmd, **kw):
    print("+", " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True, **kw)


def apt_options(work, suite):
    root = os.path.join(work, suite)
    return [
        f"-o=Dir::Etc::SourceList={root}/etc/sources.list",
        "-o=Dir::Etc::SourceParts=/nonexistent",
        f"-o=Dir::State={root}/state",
        f"-o=Dir::Cache={root}/cache",
        "-o=APT::Sandbox::User=root",
        "-q",
    ]


def apt_setup(work, suite):
    root = os.path.join(work, suite)
    for d in ["etc", "state/lists/partial", "cache/archives/partial"]:
        os.makedirs(os.path.join(root, d), exist_ok=True)
    with open(os.path.join(root, "etc/sources.list"), "w") as f:
        f.write(
            "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] "
            f"{ARCHIVE} {suite} main\n"
        )
    run(["apt-get", *apt_options(work, suite), "update"])


def fetch(work):
    for suite, (tag, packages) in SUITES.items():
        apt_setup(work, suite)
        debs = os.path.join(work, "debs", suite)
        os.makedirs(debs, exist_ok=True)
        for pkg in packages:
            done = os.path.join(work, "done", f"{suite}-{pkg}")
            if os.path.exists(done):
                continue
            for old in os.listdir(debs):
                os.remove(os.path.join(debs, old))
            run(["apt-get", *apt_options(work, suite), "download", pkg], cwd=debs)
            tree = os.path.join(work, "unpacked")
            shutil.rmtree(tree, ignore_errors=True)
            for deb in os.listdir(debs):
                run(["dpkg-deb", "-x", os.path.join(debs, deb), tree])
            run(
                [
                    sys.executable,
                    os.path.join(HERE, "bundles.py"),
                    os.path.join(work, "co", tag),
                    tree,
                ]
            )
            shutil.rmtree(tree, ignore_errors=True)
            for old in os.listdir(debs):
                os.remove(os.path.join(debs, old))
            os.makedirs(os.path.dirname(done), exist_ok=True)
            open(done, "w").close()


def rocprim_headers(work):
    """bookworm's librocprim-dev unpacked under WORK (its include folder)."""
    inc = os.path.join(work, "rocprim", "usr", "include")
    if not os.path.isdir(os.path.join(inc, "rocprim")):
        apt_setup(work, "bookworm")
        debs = os.path.join(work, "debs", "rocprim")
        os.makedirs(debs, exist_ok=True)
        run(["apt-get", *apt_options(work, "bookworm"), "download", "librocprim-dev"], cwd=debs)
        for deb in os.listdir(debs):
            run(["dpkg-deb", "-x", os.path.join(debs, deb), os.path.join(work, "rocprim")])
    return inc


def local(work):
    out = os.path.join(work, "local-build")
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    sources = []
    for root, _, names in os.walk(REPO):
        if "/target" in root or "/.git" in root:
            continue
        for n in names:
            if n.endswith((".cl", ".hip")):
                sources.append(os.path.join(root, n))
    sources.sort()
    inc = rocprim_headers(work)
    jobs = []
    for src in sources:
        stem = os.path.relpath(src, REPO).replace("/", "_")
        for t in TARGETS:
            o = os.path.join(out, f"{stem}-{t}")
            if src.endswith(".cl"):
                cmd = ["clang-15", "-x", "cl", "-cl-std=CL2.0", "-target", "amdgcn-amd-amdhsa"]
                cmd += [f"-mcpu={t}", "-O2", "-c", src, "-o", o + ".o"]
                if "mfma" in src and t in ("gfx900", "gfx906"):
                    continue  # MFMA needs gfx908 or later
                if "corpus_kernels" in src or "devlib" in src:
                    cmd.insert(1, f"--rocm-device-lib-path={DEVICE_LIBS}")
                else:
                    cmd.insert(1, "-nogpulib")
                jobs.append(cmd)
                if "corpus_kernels" not in src:
                    # the same at -O0: the unoptimised code a debug build runs (clang-15
                    # crashes on builtins.cl at -O0)
                    jobs.append(cmd[:-4] + ["-O0", "-c", src, "-o", o + "-O0.o"])
            else:
                cmd = ["hipcc", "-std=c++17", f"--offload-arch={t}", "-O3", "--cuda-device-only"]
                cmd += ["-c"]
                cmd += ["-I", inc, "-I", os.path.join(REPO, "isa/tools/corpus_kernels"), src]
                cmd += ["-o", o + ".bundle"]
                jobs.append(cmd)

    def build(cmd):
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            return f"FAILED {' '.join(cmd)}\n{r.stderr[-2000:]}"
        return None

    failures = 0
    with concurrent.futures.ThreadPoolExecutor(os.cpu_count() or 2) as pool:
        for err in pool.map(build, jobs):
            if err:
                failures += 1
                print(err, file=sys.stderr)
    print(f"local: {len(jobs)} builds, {failures} failed", flush=True)
    run([sys.executable, os.path.join(HERE, "bundles.py"), os.path.join(work, "co", "c15"), out])


# --- summarize -------------------------------------------------------------------------------


def summarize(work):
    """Decodes every kept code object (isa/examples/corpus_scan.rs, this crate's decoder and
    llvm-objdump-15's text; exec_coverage checks the samples against llvm-mc-15) into
    isa/coverage/corpus.txt."""
    out = os.path.join(REPO, "isa", "coverage", "corpus.txt")
    os.makedirs(os.path.dirname(out), exist_ok=True)
    dirs = [f"{tag}={os.path.join(work, 'co', tag)}" for tag in sorted(os.listdir(os.path.join(work, "co")))]
    run(["cargo", "run", "--release", "-q", "-p", "isa", "--example", "corpus_scan", "--", out, *dirs], cwd=REPO)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--work", default=os.environ.get("ISA_CORPUS_WORK", "/work/isa-apt"))
    p.add_argument("stages", nargs="*", default=["fetch", "local", "summarize"])
    a = p.parse_args()
    os.makedirs(a.work, exist_ok=True)
    for stage in a.stages:
        if stage == "fetch":
            fetch(a.work)
        elif stage == "local":
            local(a.work)
        elif stage == "summarize":
            summarize(a.work)
        else:
            sys.exit(f"unknown stage {stage!r} (fetch, local, summarize)")


if __name__ == "__main__":
    main()
