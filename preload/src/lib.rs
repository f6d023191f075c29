//! # kfd-preload — the model behind `/dev/kfd` for unmodified C programs
//!
//! This `LD_PRELOAD` shim will answer `/dev/kfd`, the render nodes and the sysfs topology
//! from an in-process model, so that Debian's libhsakmt, rocminfo and kfdtest-style programs
//! run without an AMD GPU. Filled by issue #8.
