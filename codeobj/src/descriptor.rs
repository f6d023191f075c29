//! The 64-byte kernel descriptor of code objects v3–v5 (AMDGPUUsage, "Kernel Descriptor"), its
//! bit fields, and the legacy 256-byte `amd_kernel_code_t` header that ROCr's precompiled blit
//! kernels still carry. Both give the same dispatch facts at the same offsets: entry offset @16,
//! `COMPUTE_PGM_RSRC1` @48, `COMPUTE_PGM_RSRC2` @52, kernel code properties @56.

use bitfield_struct::bitfield;
use std::fmt::Write as _;
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

use crate::error::{Error, Result};

/// `COMPUTE_PGM_RSRC1` as a kernel descriptor stores it (gfx6–gfx10 layout).
#[bitfield(u32)]
#[derive(FromBytes, IntoBytes, Immutable, KnownLayout, PartialEq, Eq, Hash)]
pub struct ComputePgmRsrc1 {
    /// `[5:0]` VGPR blocks used, minus one (block = 4 VGPRs on gfx9 wave64, 8 on gfx90a).
    #[bits(6)]
    pub granulated_workitem_vgpr_count: u8,
    /// `[9:6]` SGPR blocks used, minus one (printed as blocks of 8 by llvm-objdump on gfx9).
    #[bits(4)]
    pub granulated_wavefront_sgpr_count: u8,
    /// `[11:10]` wave priority; must be 0 in code objects.
    #[bits(2)]
    pub priority: u8,
    /// `[13:12]` FP32 rounding mode.
    #[bits(2)]
    pub float_round_mode_32: u8,
    /// `[15:14]` FP16/FP64 rounding mode.
    #[bits(2)]
    pub float_round_mode_16_64: u8,
    /// `[17:16]` FP32 denormal mode.
    #[bits(2)]
    pub float_denorm_mode_32: u8,
    /// `[19:18]` FP16/FP64 denormal mode.
    #[bits(2)]
    pub float_denorm_mode_16_64: u8,
    /// `[20]` PRIV: must be 0 (set by the CP).
    pub privileged: bool,
    /// `[21]` ENABLE_DX10_CLAMP.
    pub enable_dx10_clamp: bool,
    /// `[22]` DEBUG_MODE: must be 0.
    pub debug_mode: bool,
    /// `[23]` ENABLE_IEEE_MODE.
    pub enable_ieee_mode: bool,
    /// `[24]` BULKY: must be 0.
    pub bulky: bool,
    /// `[25]` CDBG_USER: must be 0.
    pub cdbg_user: bool,
    /// `[26]` FP16_OVFL (gfx9+).
    pub fp16_ovfl: bool,
    /// `[28:27]` reserved.
    #[bits(2)]
    pub reserved: u8,
    /// `[29]` WGP_MODE (gfx10+).
    pub wgp_mode: bool,
    /// `[30]` MEM_ORDERED (gfx10+).
    pub mem_ordered: bool,
    /// `[31]` FWD_PROGRESS (gfx10+).
    pub fwd_progress: bool,
}

/// `COMPUTE_PGM_RSRC2` as a kernel descriptor stores it.
#[bitfield(u32)]
#[derive(FromBytes, IntoBytes, Immutable, KnownLayout, PartialEq, Eq, Hash)]
pub struct ComputePgmRsrc2 {
    /// `[0]` ENABLE_PRIVATE_SEGMENT (SCRATCH_EN): the wave gets a scratch wave offset SGPR.
    pub enable_private_segment: bool,
    /// `[5:1]` USER_SGPR_COUNT.
    #[bits(5)]
    pub user_sgpr_count: u8,
    /// `[6]` ENABLE_TRAP_HANDLER: must be 0 (the CP sets it).
    pub enable_trap_handler: bool,
    /// `[7]` workgroup ID X in an SGPR.
    pub enable_sgpr_workgroup_id_x: bool,
    /// `[8]` workgroup ID Y in an SGPR.
    pub enable_sgpr_workgroup_id_y: bool,
    /// `[9]` workgroup ID Z in an SGPR.
    pub enable_sgpr_workgroup_id_z: bool,
    /// `[10]` workgroup info in an SGPR.
    pub enable_sgpr_workgroup_info: bool,
    /// `[12:11]` work-item IDs in VGPRs: 0 = X, 1 = X,Y, 2 = X,Y,Z.
    #[bits(2)]
    pub enable_vgpr_workitem_id: u8,
    /// `[13]` address watch exceptions.
    pub enable_exception_address_watch: bool,
    /// `[14]` memory violation exceptions.
    pub enable_exception_memory: bool,
    /// `[23:15]` LDS blocks (0 in code objects: the packet gives the size).
    #[bits(9)]
    pub granulated_lds_size: u16,
    /// `[24]` IEEE 754 invalid operation exception.
    pub enable_exception_ieee_754_fp_invalid_operation: bool,
    /// `[25]` FP denormal source exception.
    pub enable_exception_fp_denormal_source: bool,
    /// `[26]` IEEE 754 division by zero exception.
    pub enable_exception_ieee_754_fp_division_by_zero: bool,
    /// `[27]` IEEE 754 overflow exception.
    pub enable_exception_ieee_754_fp_overflow: bool,
    /// `[28]` IEEE 754 underflow exception.
    pub enable_exception_ieee_754_fp_underflow: bool,
    /// `[29]` IEEE 754 inexact exception.
    pub enable_exception_ieee_754_fp_inexact: bool,
    /// `[30]` integer division by zero exception.
    pub enable_exception_int_divide_by_zero: bool,
    /// `[31]` reserved.
    pub reserved: bool,
}

/// `COMPUTE_PGM_RSRC3` in the gfx90a layout (zero on other gfx9 processors).
#[bitfield(u32)]
#[derive(FromBytes, IntoBytes, Immutable, KnownLayout, PartialEq, Eq, Hash)]
pub struct ComputePgmRsrc3Gfx90a {
    /// `[5:0]` ACCUM_OFFSET: first AccVGPR, in blocks of 4 VGPRs minus one.
    #[bits(6)]
    pub accum_offset: u8,
    /// `[15:6]` reserved.
    #[bits(10)]
    pub reserved0: u16,
    /// `[16]` TG_SPLIT.
    pub tg_split: bool,
    /// `[31:17]` reserved.
    #[bits(15)]
    pub reserved1: u16,
}

/// The 16-bit kernel code properties of a v3+ descriptor.
#[bitfield(u16)]
#[derive(FromBytes, IntoBytes, Immutable, KnownLayout, PartialEq, Eq, Hash)]
pub struct KernelCodeProperties {
    /// `[0]` private segment buffer V# in user SGPRs (4).
    pub enable_sgpr_private_segment_buffer: bool,
    /// `[1]` dispatch packet pointer (2).
    pub enable_sgpr_dispatch_ptr: bool,
    /// `[2]` queue pointer (2).
    pub enable_sgpr_queue_ptr: bool,
    /// `[3]` kernarg segment pointer (2).
    pub enable_sgpr_kernarg_segment_ptr: bool,
    /// `[4]` dispatch ID (2).
    pub enable_sgpr_dispatch_id: bool,
    /// `[5]` flat scratch init (2).
    pub enable_sgpr_flat_scratch_init: bool,
    /// `[6]` private segment size (1).
    pub enable_sgpr_private_segment_size: bool,
    /// `[9:7]` reserved.
    #[bits(3)]
    pub reserved0: u8,
    /// `[10]` wave32 (gfx10+).
    pub enable_wavefront_size32: bool,
    /// `[11]` the kernel's stack size is not known at compile time.
    pub uses_dynamic_stack: bool,
    /// `[15:12]` reserved.
    #[bits(4)]
    pub reserved1: u8,
}

/// The v3–v5 kernel descriptor: 64 bytes, 64-byte aligned, named by the `<kernel>.kd` symbol.
#[repr(C)]
#[derive(FromBytes, IntoBytes, Immutable, KnownLayout, Clone, Copy, Debug, PartialEq, Eq)]
pub struct KernelDescriptor {
    /// `@0` LDS bytes the kernel itself allocates.
    pub group_segment_fixed_size: u32,
    /// `@4` scratch bytes per work-item.
    pub private_segment_fixed_size: u32,
    /// `@8` kernarg segment bytes.
    pub kernarg_size: u32,
    /// `@12` reserved.
    pub reserved0: [u8; 4],
    /// `@16` byte offset of the kernel's first instruction from the descriptor's own address.
    pub kernel_code_entry_byte_offset: i64,
    /// `@24` reserved.
    pub reserved1: [u8; 20],
    /// `@44` `COMPUTE_PGM_RSRC3` (gfx90a: see [`ComputePgmRsrc3Gfx90a`]).
    pub compute_pgm_rsrc3: u32,
    /// `@48` `COMPUTE_PGM_RSRC1`.
    pub compute_pgm_rsrc1: ComputePgmRsrc1,
    /// `@52` `COMPUTE_PGM_RSRC2`.
    pub compute_pgm_rsrc2: ComputePgmRsrc2,
    /// `@56` kernel code properties.
    pub kernel_code_properties: KernelCodeProperties,
    /// `@58` reserved (newer targets put kernarg preload here).
    pub reserved2: [u8; 6],
}

/// Size of [`KernelDescriptor`].
pub const KERNEL_DESCRIPTOR_SIZE: usize = 64;

impl KernelDescriptor {
    /// Reads a descriptor from the first 64 bytes of `bytes`.
    pub fn parse(bytes: &[u8]) -> Result<Self> {
        let head = bytes.get(..KERNEL_DESCRIPTOR_SIZE).ok_or_else(|| {
            Error::malformed(
                "kernel descriptor",
                format!("{} bytes, need {KERNEL_DESCRIPTOR_SIZE}", bytes.len()),
            )
        })?;
        KernelDescriptor::read_from_bytes(head)
            .map_err(|_| Error::malformed("kernel descriptor", "size"))
    }

    /// `COMPUTE_PGM_RSRC3` read in the gfx90a layout.
    pub fn rsrc3_gfx90a(&self) -> ComputePgmRsrc3Gfx90a {
        ComputePgmRsrc3Gfx90a::from_bits(self.compute_pgm_rsrc3)
    }

    /// VGPRs the kernel may use, from the granulated count: blocks of 8 on gfx90a/gfx940 and in
    /// wave32 mode, of 4 otherwise.
    pub fn vgpr_count(&self, processor: &str) -> u32 {
        let granule = if processor == "gfx90a"
            || processor.starts_with("gfx94")
            || self.kernel_code_properties.enable_wavefront_size32()
        {
            8
        } else {
            4
        };
        (u32::from(self.compute_pgm_rsrc1.granulated_workitem_vgpr_count()) + 1) * granule
    }

    /// SGPRs the kernel may use, from the granulated count (blocks of 8, as llvm-objdump prints).
    pub fn sgpr_count(&self) -> u32 {
        (u32::from(self.compute_pgm_rsrc1.granulated_wavefront_sgpr_count()) + 1) * 8
    }

    /// The dispatch facts shared with the legacy header.
    pub fn dispatch_info(&self) -> DispatchInfo {
        DispatchInfo {
            kernel_code_entry_byte_offset: self.kernel_code_entry_byte_offset,
            compute_pgm_rsrc1: self.compute_pgm_rsrc1,
            compute_pgm_rsrc2: self.compute_pgm_rsrc2,
            compute_pgm_rsrc3: self.compute_pgm_rsrc3,
            kernel_code_properties: self.kernel_code_properties,
            group_segment_fixed_size: self.group_segment_fixed_size,
            private_segment_fixed_size: self.private_segment_fixed_size,
            kernarg_size: u64::from(self.kernarg_size),
        }
    }

    /// The descriptor as the `.amdhsa_kernel` block of assembler directives, in the order and
    /// with the values `llvm-objdump-15 -D` prints for a gfx9 descriptor (the `reserve_*` flags
    /// cannot be recovered from the descriptor and print as 0 there too), plus on gfx90a the
    /// `accum_offset` and `tg_split` of `COMPUTE_PGM_RSRC3`. `llvm-mc-15` assembles the block
    /// back into the same 64 bytes (bar the entry offset, a relocation there).
    pub fn to_directives(&self, kernel: &str, processor: &str) -> String {
        let r1 = self.compute_pgm_rsrc1;
        let r2 = self.compute_pgm_rsrc2;
        let p = self.kernel_code_properties;
        let fields: [(&str, u64); 36] = [
            (
                "group_segment_fixed_size",
                self.group_segment_fixed_size.into(),
            ),
            (
                "private_segment_fixed_size",
                self.private_segment_fixed_size.into(),
            ),
            ("kernarg_size", self.kernarg_size.into()),
            ("next_free_vgpr", self.vgpr_count(processor).into()),
            ("reserve_vcc", 0),
            ("reserve_flat_scratch", 0),
            ("reserve_xnack_mask", 0),
            ("next_free_sgpr", self.sgpr_count().into()),
            ("float_round_mode_32", r1.float_round_mode_32().into()),
            ("float_round_mode_16_64", r1.float_round_mode_16_64().into()),
            ("float_denorm_mode_32", r1.float_denorm_mode_32().into()),
            (
                "float_denorm_mode_16_64",
                r1.float_denorm_mode_16_64().into(),
            ),
            ("dx10_clamp", r1.enable_dx10_clamp().into()),
            ("ieee_mode", r1.enable_ieee_mode().into()),
            ("fp16_overflow", r1.fp16_ovfl().into()),
            (
                "system_sgpr_private_segment_wavefront_offset",
                r2.enable_private_segment().into(),
            ),
            (
                "system_sgpr_workgroup_id_x",
                r2.enable_sgpr_workgroup_id_x().into(),
            ),
            (
                "system_sgpr_workgroup_id_y",
                r2.enable_sgpr_workgroup_id_y().into(),
            ),
            (
                "system_sgpr_workgroup_id_z",
                r2.enable_sgpr_workgroup_id_z().into(),
            ),
            (
                "system_sgpr_workgroup_info",
                r2.enable_sgpr_workgroup_info().into(),
            ),
            (
                "system_vgpr_workitem_id",
                r2.enable_vgpr_workitem_id().into(),
            ),
            (
                "exception_fp_ieee_invalid_op",
                r2.enable_exception_ieee_754_fp_invalid_operation().into(),
            ),
            (
                "exception_fp_denorm_src",
                r2.enable_exception_fp_denormal_source().into(),
            ),
            (
                "exception_fp_ieee_div_zero",
                r2.enable_exception_ieee_754_fp_division_by_zero().into(),
            ),
            (
                "exception_fp_ieee_overflow",
                r2.enable_exception_ieee_754_fp_overflow().into(),
            ),
            (
                "exception_fp_ieee_underflow",
                r2.enable_exception_ieee_754_fp_underflow().into(),
            ),
            (
                "exception_fp_ieee_inexact",
                r2.enable_exception_ieee_754_fp_inexact().into(),
            ),
            (
                "exception_int_div_zero",
                r2.enable_exception_int_divide_by_zero().into(),
            ),
            (
                "user_sgpr_private_segment_buffer",
                p.enable_sgpr_private_segment_buffer().into(),
            ),
            (
                "user_sgpr_dispatch_ptr",
                p.enable_sgpr_dispatch_ptr().into(),
            ),
            ("user_sgpr_queue_ptr", p.enable_sgpr_queue_ptr().into()),
            (
                "user_sgpr_kernarg_segment_ptr",
                p.enable_sgpr_kernarg_segment_ptr().into(),
            ),
            ("user_sgpr_dispatch_id", p.enable_sgpr_dispatch_id().into()),
            (
                "user_sgpr_flat_scratch_init",
                p.enable_sgpr_flat_scratch_init().into(),
            ),
            (
                "user_sgpr_private_segment_size",
                p.enable_sgpr_private_segment_size().into(),
            ),
            ("uses_dynamic_stack", p.uses_dynamic_stack().into()),
        ];
        let mut out = format!(".amdhsa_kernel {kernel}\n");
        for (name, value) in fields {
            let _ = writeln!(out, "\t.amdhsa_{name} {value}");
        }
        if processor == "gfx90a" {
            // The assembler requires these on gfx90a; llvm-objdump-15 does not print them.
            let r3 = self.rsrc3_gfx90a();
            let _ = writeln!(
                out,
                "\t.amdhsa_accum_offset {}",
                (u32::from(r3.accum_offset()) + 1) * 4
            );
            let _ = writeln!(out, "\t.amdhsa_tg_split {}", u8::from(r3.tg_split()));
        }
        out.push_str(".end_amdhsa_kernel\n");
        out
    }
}

/// The legacy `amd_control_directives_t` (128 bytes) inside [`AmdKernelCode`].
#[repr(C)]
#[derive(FromBytes, IntoBytes, Immutable, KnownLayout, Clone, Copy, Debug, PartialEq, Eq)]
pub struct AmdControlDirectives {
    /// `@0` which directives are enabled (bit mask).
    pub enabled_control_directives: u64,
    /// `@8` exceptions that break.
    pub enable_break_exceptions: u16,
    /// `@10` exceptions that are detected.
    pub enable_detect_exceptions: u16,
    /// `@12` maximum dynamic group segment bytes.
    pub max_dynamic_group_size: u32,
    /// `@16` maximum flat grid size.
    pub max_flat_grid_size: u64,
    /// `@24` maximum flat workgroup size.
    pub max_flat_workgroup_size: u32,
    /// `@28` required dimensions.
    pub required_dim: u8,
    /// `@29` reserved.
    pub reserved1: [u8; 3],
    /// `@32` required grid size.
    pub required_grid_size: [u64; 3],
    /// `@56` required workgroup size.
    pub required_workgroup_size: [u32; 3],
    /// `@68` reserved.
    pub reserved2: [u8; 60],
}

/// The 32-bit kernel code properties of the legacy header (the low 7 bits match
/// [`KernelCodeProperties`]).
#[bitfield(u32)]
#[derive(FromBytes, IntoBytes, Immutable, KnownLayout, PartialEq, Eq, Hash)]
pub struct AmdKernelCodeProperties {
    /// `[0]` private segment buffer V#.
    pub enable_sgpr_private_segment_buffer: bool,
    /// `[1]` dispatch packet pointer.
    pub enable_sgpr_dispatch_ptr: bool,
    /// `[2]` queue pointer.
    pub enable_sgpr_queue_ptr: bool,
    /// `[3]` kernarg segment pointer.
    pub enable_sgpr_kernarg_segment_ptr: bool,
    /// `[4]` dispatch ID.
    pub enable_sgpr_dispatch_id: bool,
    /// `[5]` flat scratch init.
    pub enable_sgpr_flat_scratch_init: bool,
    /// `[6]` private segment size.
    pub enable_sgpr_private_segment_size: bool,
    /// `[7]` grid workgroup count X.
    pub enable_sgpr_grid_workgroup_count_x: bool,
    /// `[8]` grid workgroup count Y.
    pub enable_sgpr_grid_workgroup_count_y: bool,
    /// `[9]` grid workgroup count Z.
    pub enable_sgpr_grid_workgroup_count_z: bool,
    /// `[15:10]` reserved.
    #[bits(6)]
    pub reserved1: u8,
    /// `[16]` ordered append GDS.
    pub enable_ordered_append_gds: bool,
    /// `[18:17]` private element size (0 = 2, 1 = 4, 2 = 8, 3 = 16 bytes).
    #[bits(2)]
    pub private_element_size: u8,
    /// `[19]` 64-bit pointers.
    pub is_ptr64: bool,
    /// `[20]` dynamic call stack.
    pub is_dynamic_callstack: bool,
    /// `[21]` debug enabled.
    pub is_debug_enabled: bool,
    /// `[22]` XNACK enabled.
    pub is_xnack_enabled: bool,
    /// `[31:23]` reserved.
    #[bits(9)]
    pub reserved2: u16,
}

/// The legacy 256-byte `amd_kernel_code_t` header (`amd_hsa_kernel_code.h`), which code object
/// v2 kernels and ROCr's precompiled blit kernels start with.
#[repr(C)]
#[derive(FromBytes, IntoBytes, Immutable, KnownLayout, Clone, Copy, Debug, PartialEq, Eq)]
pub struct AmdKernelCode {
    /// `@0` header major version (1).
    pub amd_kernel_code_version_major: u32,
    /// `@4` header minor version.
    pub amd_kernel_code_version_minor: u32,
    /// `@8` machine kind (1 = AMDGPU).
    pub amd_machine_kind: u16,
    /// `@10` ISA major version.
    pub amd_machine_version_major: u16,
    /// `@12` ISA minor version.
    pub amd_machine_version_minor: u16,
    /// `@14` ISA stepping.
    pub amd_machine_version_stepping: u16,
    /// `@16` byte offset of the first instruction from this header.
    pub kernel_code_entry_byte_offset: i64,
    /// `@24` prefetch start offset.
    pub kernel_code_prefetch_byte_offset: i64,
    /// `@32` prefetch size.
    pub kernel_code_prefetch_byte_size: u64,
    /// `@40` maximum scratch backing memory size.
    pub max_scratch_backing_memory_byte_size: u64,
    /// `@48` `COMPUTE_PGM_RSRC1`.
    pub compute_pgm_rsrc1: ComputePgmRsrc1,
    /// `@52` `COMPUTE_PGM_RSRC2`.
    pub compute_pgm_rsrc2: ComputePgmRsrc2,
    /// `@56` kernel code properties.
    pub kernel_code_properties: AmdKernelCodeProperties,
    /// `@60` scratch bytes per work-item.
    pub workitem_private_segment_byte_size: u32,
    /// `@64` LDS bytes per workgroup.
    pub workgroup_group_segment_byte_size: u32,
    /// `@68` GDS bytes.
    pub gds_segment_byte_size: u32,
    /// `@72` kernarg segment bytes.
    pub kernarg_segment_byte_size: u64,
    /// `@80` fbarriers per workgroup.
    pub workgroup_fbarrier_count: u32,
    /// `@84` SGPRs per wave.
    pub wavefront_sgpr_count: u16,
    /// `@86` VGPRs per work-item.
    pub workitem_vgpr_count: u16,
    /// `@88` first reserved VGPR.
    pub reserved_vgpr_first: u16,
    /// `@90` reserved VGPR count.
    pub reserved_vgpr_count: u16,
    /// `@92` first reserved SGPR.
    pub reserved_sgpr_first: u16,
    /// `@94` reserved SGPR count.
    pub reserved_sgpr_count: u16,
    /// `@96` debugger: wave private segment offset SGPR.
    pub debug_wavefront_private_segment_offset_sgpr: u16,
    /// `@98` debugger: private segment buffer SGPR.
    pub debug_private_segment_buffer_sgpr: u16,
    /// `@100` log2 of the kernarg segment alignment.
    pub kernarg_segment_alignment: u8,
    /// `@101` log2 of the group segment alignment.
    pub group_segment_alignment: u8,
    /// `@102` log2 of the private segment alignment.
    pub private_segment_alignment: u8,
    /// `@103` log2 of the wavefront size.
    pub wavefront_size: u8,
    /// `@104` call convention.
    pub call_convention: i32,
    /// `@108` reserved.
    pub reserved1: [u8; 12],
    /// `@120` runtime loader's kernel symbol.
    pub runtime_loader_kernel_symbol: u64,
    /// `@128` control directives.
    pub control_directives: AmdControlDirectives,
}

/// Size of [`AmdKernelCode`].
pub const AMD_KERNEL_CODE_SIZE: usize = 256;

impl AmdKernelCode {
    /// Reads the header from the first 256 bytes of `bytes`, checking version 1 and machine kind 1.
    pub fn parse(bytes: &[u8]) -> Result<Self> {
        let head = bytes.get(..AMD_KERNEL_CODE_SIZE).ok_or_else(|| {
            Error::malformed(
                "amd_kernel_code_t",
                format!("{} bytes, need {AMD_KERNEL_CODE_SIZE}", bytes.len()),
            )
        })?;
        let code = AmdKernelCode::read_from_bytes(head)
            .map_err(|_| Error::malformed("amd_kernel_code_t", "size"))?;
        if code.amd_kernel_code_version_major != 1 || code.amd_machine_kind != 1 {
            return Err(Error::malformed(
                "amd_kernel_code_t",
                format!(
                    "version {} machine kind {} (want 1 and 1)",
                    code.amd_kernel_code_version_major, code.amd_machine_kind
                ),
            ));
        }
        Ok(code)
    }

    /// The dispatch facts shared with the v3+ descriptor.
    pub fn dispatch_info(&self) -> DispatchInfo {
        DispatchInfo {
            kernel_code_entry_byte_offset: self.kernel_code_entry_byte_offset,
            compute_pgm_rsrc1: self.compute_pgm_rsrc1,
            compute_pgm_rsrc2: self.compute_pgm_rsrc2,
            compute_pgm_rsrc3: 0,
            kernel_code_properties: KernelCodeProperties::from_bits(
                (self.kernel_code_properties.into_bits() & 0x7f) as u16,
            ),
            group_segment_fixed_size: self.workgroup_group_segment_byte_size,
            private_segment_fixed_size: self.workitem_private_segment_byte_size,
            kernarg_size: self.kernarg_segment_byte_size,
        }
    }
}

/// What a dispatch needs from either header kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DispatchInfo {
    /// Entry offset from the header's address.
    pub kernel_code_entry_byte_offset: i64,
    /// `COMPUTE_PGM_RSRC1`.
    pub compute_pgm_rsrc1: ComputePgmRsrc1,
    /// `COMPUTE_PGM_RSRC2`.
    pub compute_pgm_rsrc2: ComputePgmRsrc2,
    /// `COMPUTE_PGM_RSRC3` (0 for the legacy header).
    pub compute_pgm_rsrc3: u32,
    /// The user SGPR enables (bits 0–6 in both kinds).
    pub kernel_code_properties: KernelCodeProperties,
    /// LDS bytes.
    pub group_segment_fixed_size: u32,
    /// Scratch bytes per work-item.
    pub private_segment_fixed_size: u32,
    /// Kernarg bytes.
    pub kernarg_size: u64,
}

/// A kernel object of either kind, as a dispatch packet's `kernel_object` points at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KernelCode {
    /// A v3+ 64-byte descriptor.
    Descriptor(KernelDescriptor),
    /// A legacy 256-byte `amd_kernel_code_t`.
    Legacy(AmdKernelCode),
}

impl KernelCode {
    /// Reads the kernel object at the start of `bytes`: a legacy header when there are 256 bytes
    /// whose version and machine kind are 1, a v3+ descriptor otherwise.
    pub fn parse(bytes: &[u8]) -> Result<Self> {
        match AmdKernelCode::parse(bytes) {
            Ok(legacy) => Ok(KernelCode::Legacy(legacy)),
            Err(_) => KernelDescriptor::parse(bytes).map(KernelCode::Descriptor),
        }
    }

    /// The dispatch facts.
    pub fn dispatch_info(&self) -> DispatchInfo {
        match self {
            KernelCode::Descriptor(d) => d.dispatch_info(),
            KernelCode::Legacy(l) => l.dispatch_info(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use core::mem::{offset_of, size_of};

    #[test]
    fn layouts() {
        assert_eq!(size_of::<KernelDescriptor>(), 64);
        assert_eq!(
            offset_of!(KernelDescriptor, kernel_code_entry_byte_offset),
            16
        );
        assert_eq!(offset_of!(KernelDescriptor, compute_pgm_rsrc3), 44);
        assert_eq!(offset_of!(KernelDescriptor, compute_pgm_rsrc1), 48);
        assert_eq!(offset_of!(KernelDescriptor, compute_pgm_rsrc2), 52);
        assert_eq!(offset_of!(KernelDescriptor, kernel_code_properties), 56);
        assert_eq!(size_of::<AmdKernelCode>(), 256);
        assert_eq!(size_of::<AmdControlDirectives>(), 128);
        assert_eq!(offset_of!(AmdKernelCode, kernel_code_entry_byte_offset), 16);
        assert_eq!(offset_of!(AmdKernelCode, compute_pgm_rsrc1), 48);
        assert_eq!(offset_of!(AmdKernelCode, compute_pgm_rsrc2), 52);
        assert_eq!(offset_of!(AmdKernelCode, kernel_code_properties), 56);
        assert_eq!(offset_of!(AmdKernelCode, control_directives), 128);
    }

    #[test]
    fn decodes_a_clang_descriptor() {
        // The `add_kernel.kd` bytes clang-15 -mcpu=gfx900 emitted for tests/src/kernels.cl
        // (llvm-objdump-15 -D prints next_free_vgpr 44, next_free_sgpr 48, user SGPRs 0–5 on,
        // workitem_id 2, uses_dynamic_stack 1 for it).
        let mut bytes = [0u8; 64];
        bytes[4..8].copy_from_slice(&0x4000u32.to_le_bytes());
        bytes[8..12].copy_from_slice(&72u32.to_le_bytes());
        bytes[16..24].copy_from_slice(&0x1140i64.to_le_bytes());
        bytes[48..52].copy_from_slice(&0x00af_014au32.to_le_bytes());
        bytes[52..56].copy_from_slice(&0x0000_139du32.to_le_bytes());
        bytes[56..58].copy_from_slice(&0x083fu16.to_le_bytes());
        let kd = KernelDescriptor::parse(&bytes).unwrap();
        assert_eq!(kd.vgpr_count("gfx900"), 44);
        assert_eq!(kd.sgpr_count(), 48);
        assert_eq!(kd.compute_pgm_rsrc2.user_sgpr_count(), 14);
        assert_eq!(kd.compute_pgm_rsrc2.enable_vgpr_workitem_id(), 2);
        assert!(kd.compute_pgm_rsrc2.enable_private_segment());
        assert!(kd.kernel_code_properties.uses_dynamic_stack());
        assert!(!kd.kernel_code_properties.enable_sgpr_private_segment_size());
        assert_eq!(kd.compute_pgm_rsrc1.float_denorm_mode_32(), 3);
        assert!(
            kd.compute_pgm_rsrc1.enable_ieee_mode() && kd.compute_pgm_rsrc1.enable_dx10_clamp()
        );
        assert_eq!(kd.as_bytes(), &bytes[..]);
        assert!(KernelDescriptor::parse(&bytes[..63]).is_err());
        // Not a legacy header (version word 0): parsed as a descriptor.
        assert!(matches!(
            KernelCode::parse(&[0u8; 256]),
            Ok(KernelCode::Descriptor(_))
        ));
        let mut legacy = [0u8; 256];
        legacy[0] = 1;
        legacy[8] = 1;
        legacy[16..24].copy_from_slice(&256i64.to_le_bytes());
        legacy[56..60].copy_from_slice(&0x0008_000bu32.to_le_bytes());
        let info = KernelCode::parse(&legacy).unwrap().dispatch_info();
        assert_eq!(info.kernel_code_entry_byte_offset, 256);
        assert_eq!(info.kernel_code_properties.into_bits(), 0x000b);
    }
}
