//! Runs the `kfd` binary the way a user does.
#![allow(dead_code)]

use std::io::Write;
use std::process::{Command, Output, Stdio};

/// `kfd args…` with stdin closed.
pub fn kfd(args: &[&str]) -> Output {
    kfd_with_stdin(args, b"")
}

/// `kfd args…` with `input` on stdin.
pub fn kfd_with_stdin(args: &[&str], input: &[u8]) -> Output {
    kfd_with_env(args, input, &[])
}

/// `kfd args…` with `input` on stdin and the variables `env` set.
pub fn kfd_with_env(args: &[&str], input: &[u8], env: &[(&str, &str)]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_kfd"))
        .args(args)
        .env_remove("KFD_MODEL_FAULTS")
        .env_remove("RUST_LOG")
        .env_remove("NO_COLOR")
        // The model unless a test asks otherwise, whatever the machine has.
        .env_remove("KFD_DEVICE")
        .env_remove("KFD_MODEL_PRESET")
        .env_remove("KFD_MODEL_GPUS")
        .envs(env.iter().copied())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("kfd runs");
    // Fed from another thread, as a shell pipe is: `kfd` streams its output while it reads,
    // so writing all input before reading any output could fill both pipes.
    let mut stdin = child.stdin.take().expect("stdin");
    let input = input.to_vec();
    let feeder = std::thread::spawn(move || {
        // The program may exit before reading everything.
        let _ = stdin.write_all(&input);
    });
    let out = child.wait_with_output().expect("kfd finishes");
    let _ = feeder.join();
    out
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Exit status 0, empty stderr; returns stdout.
pub fn ok(args: &[&str]) -> String {
    let o = kfd(args);
    assert_eq!(
        o.status.code(),
        Some(0),
        "kfd {args:?} failed: {}",
        stderr(&o)
    );
    stdout(&o)
}

/// Exit status 2 and exactly one line on stderr starting with `kfd: `; returns that line.
pub fn usage_error(o: &Output) -> String {
    let err = stderr(o);
    assert_eq!(o.status.code(), Some(2), "expected status 2; stderr: {err}");
    assert_eq!(err.lines().count(), 1, "one line expected: {err:?}");
    assert!(err.starts_with("kfd: "), "{err:?}");
    assert!(
        !err.contains("panicked") && !err.contains("backtrace"),
        "{err}"
    );
    err.trim_end().to_owned()
}

/// `stdout` parsed as JSON.
pub fn json(out: &str) -> serde_json::Value {
    serde_json::from_str(out).unwrap_or_else(|e| panic!("not JSON ({e}):\n{out}"))
}

/// Whether `tool` is installed: missing, a failure unless `KFD_SKIP_MISSING_TOOLS=1`
/// (`kfd_testkit`, the workspace's one policy), which then skips with a message.
pub fn have(tool: &str) -> bool {
    kfd_testkit::tool(tool).is_some()
}

/// Two translation units of a HIP program whose device code has device functions (not
/// inlined), a template kernel instantiated twice, and kernels in both units.
pub const HIP_UNIT_A: &str = r#"
#include <hip/hip_runtime.h>
__device__ __attribute__((noinline)) int helper_a(int x) { return x * 3 + 1; }
__device__ __attribute__((noinline)) float blend(float a, float b, int k) {
  return k & 1 ? a * b + 1.0f : a / (b + 2.0f);
}
__global__ void ka(int *p) { p[threadIdx.x] = helper_a(p[threadIdx.x]); }
__global__ void mix(float *x, const float *y, int k) {
  int i = threadIdx.x;
  __shared__ float tile[64];
  tile[i] = blend(x[i], y[i], k + i);
  __syncthreads();
  x[i] = tile[63 - i] + sqrtf(y[i]);
}
template <typename T> __global__ void bitonic(T *p, int j) {
  int i = threadIdx.x;
  if (p[i] > p[i ^ j]) { T t = p[i]; p[i] = p[i ^ j]; p[i ^ j] = t; }
}
template __global__ void bitonic<int>(int *, int);
template __global__ void bitonic<float>(float *, int);
void launch_b(int *p);
int main() {
  int *p; hipMalloc(&p, 256);
  hipLaunchKernelGGL(ka, dim3(1), dim3(64), 0, 0, p);
  hipLaunchKernelGGL(bitonic<int>, dim3(1), dim3(64), 0, 0, p, 1);
  launch_b(p);
  return hipDeviceSynchronize() == hipSuccess ? 0 : 1;
}
"#;

/// The second unit of [`HIP_UNIT_A`]'s program.
pub const HIP_UNIT_B: &str = r#"
#include <hip/hip_runtime.h>
__device__ __attribute__((noinline)) int helper_b(int x) { return (x ^ 0x55) + (x >> 3); }
__global__ void kb(int *p) {
  int v = p[threadIdx.x];
  for (int i = 0; i < v % 7; i++) v = helper_b(v);
  p[threadIdx.x] = v;
}
void launch_b(int *p) { hipLaunchKernelGGL(kb, dim3(1), dim3(64), 0, 0, p); }
"#;

/// `hipcc` building [`HIP_UNIT_A`] and [`HIP_UNIT_B`] into one program for gfx900 and
/// `gfx90a:xnack-` (how ROCm libraries ship gfx90a), in `dir`; `None` (with a message) without
/// hipcc.
pub fn two_unit_hip_program(dir: &std::path::Path) -> Option<std::path::PathBuf> {
    if !have("hipcc") {
        return None;
    }
    let a = dir.join("a.hip");
    let b = dir.join("b.hip");
    std::fs::write(&a, HIP_UNIT_A).unwrap();
    std::fs::write(&b, HIP_UNIT_B).unwrap();
    let prog = dir.join("two_units");
    let out = Command::new("hipcc")
        .args([
            "--offload-arch=gfx900",
            "--offload-arch=gfx90a:xnack-",
            "-O2",
            "-o",
        ])
        .arg(&prog)
        .arg(&a)
        .arg(&b)
        .output()
        .expect("hipcc runs");
    assert!(
        out.status.success(),
        "hipcc: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(prog)
}

/// `kfd args…` (stdin closed), killed if it has not ended after `deadline`: a test of a
/// command that must not run away fails instead of hanging. The deadline only catches hangs.
pub fn kfd_within(args: &[&str], deadline: std::time::Duration) -> Output {
    kfd_within_env(args, &[], deadline)
}

/// [`kfd_within`] with the variables `env` set.
pub fn kfd_within_env(
    args: &[&str],
    env: &[(&str, &str)],
    deadline: std::time::Duration,
) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_kfd"))
        .args(args)
        .env_remove("KFD_DEVICE")
        .env_remove("KFD_MODEL_PRESET")
        .env_remove("KFD_MODEL_GPUS")
        .env_remove("KFD_MODEL_FAULTS")
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("kfd runs");
    let start = std::time::Instant::now();
    loop {
        if child.try_wait().expect("wait").is_some() {
            return child.wait_with_output().expect("output");
        }
        if start.elapsed() > deadline {
            let _ = child.kill();
            let o = child.wait_with_output().expect("output");
            panic!(
                "kfd {args:?} still ran after {deadline:?}; stderr: {}",
                String::from_utf8_lossy(&o.stderr)
            );
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}
