//! Pretty-printing: a summary of the fields that matter (ring, pointers, doorbell, state,
//! priority, EOP, CWSR) and a full dump of every non-zero field with its dword index.

use core::fmt;

use crate::compute::ComputeDescriptor;
use crate::layout::{FieldInfo, MqdLayout};
use crate::sdma::SdmaDescriptor;
use crate::v10::{v10_compute_mqd, v10_sdma_mqd};
use crate::v11::{v11_compute_mqd, v11_sdma_mqd};
use crate::v9::{v9_mqd, v9_sdma_mqd, V9_UNION_ALIASES};

/// Compute MQD fields printed raw under "key dwords", by name (dw160 under either name).
const COMPUTE_KEY_FIELDS: &[&str] = &[
    "cp_hqd_persistent_state",
    "cp_hqd_pipe_priority",
    "cp_hqd_queue_priority",
    "cp_hqd_quantum",
    "cp_hqd_pq_base_lo",
    "cp_hqd_pq_base_hi",
    "cp_hqd_pq_doorbell_control",
    "cp_hqd_pq_control",
    "cp_hqd_ib_control",
    "cp_hqd_hq_status0",
    "cp_hqd_hq_scheduler0",
    "cp_mqd_control",
    "cp_hqd_eop_base_addr_lo",
    "cp_hqd_eop_base_addr_hi",
    "cp_hqd_eop_control",
    "cp_hqd_aql_control",
];

/// SDMA MQD fields printed raw under "key dwords".
const SDMA_KEY_FIELDS: &[&str] = &[
    "sdmax_rlcx_rb_cntl",
    "sdmax_rlcx_rb_base",
    "sdmax_rlcx_rb_base_hi",
    "sdmax_rlcx_rb_rptr_addr_hi",
    "sdmax_rlcx_rb_rptr_addr_lo",
    "sdmax_rlcx_doorbell_offset",
    "sdmax_rlcx_sched_cntl",
    "sdmax_rlcx_dummy_reg",
    "sdmax_rlcx_rb_wptr_poll_addr_hi",
    "sdmax_rlcx_rb_wptr_poll_addr_lo",
    "sdma_engine_id",
    "sdma_queue_id",
];

fn dword_of(bytes: &[u8], index: usize) -> Option<u32> {
    let start = index.checked_mul(4)?;
    let chunk = bytes.get(start..start.checked_add(4)?)?;
    let mut word = [0u8; 4];
    word.copy_from_slice(chunk);
    Some(u32::from_ne_bytes(word))
}

fn write_key_dwords(
    f: &mut fmt::Formatter<'_>,
    bytes: &[u8],
    fields: &[FieldInfo],
    names: &[&str],
) -> fmt::Result {
    writeln!(f, "  key dwords:")?;
    for name in names {
        let Some(field) = fields.iter().find(|field| field.name == *name) else {
            continue;
        };
        if let Some(value) = dword_of(bytes, field.dword) {
            writeln!(
                f,
                "    dw{:<3} {:<32} {value:#010x}",
                field.dword, field.name
            )?;
        }
    }
    Ok(())
}

/// The named summary of a compute MQD (its `Display`).
pub struct ComputeSummary<'a> {
    mqd: &'a dyn ComputeDescriptor,
    name: &'static str,
    fields: &'static [FieldInfo],
}

impl<'a> ComputeSummary<'a> {
    /// The summary of `mqd`.
    pub fn new<M: MqdLayout + ComputeDescriptor>(mqd: &'a M) -> Self {
        ComputeSummary {
            mqd,
            name: M::NAME,
            fields: M::FIELDS,
        }
    }
}

fn yes_no(value: bool) -> &'static str {
    if value {
        "yes"
    } else {
        "no"
    }
}

impl fmt::Display for ComputeSummary<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let m = self.mqd;
        let format = if m.is_aql() { "AQL" } else { "PM4" };
        let kernel = if m.is_kernel_queue() {
            ", kernel queue (HIQ)"
        } else {
            ""
        };
        writeln!(
            f,
            "{} ({} compute, {format}{kernel})",
            self.name,
            m.generation()
        )?;
        writeln!(f, "  mqd base address      {:#018x}", m.mqd_base_address())?;
        writeln!(
            f,
            "  ring base / size      {:#018x} / {:#x} bytes",
            m.ring_base_address(),
            m.ring_size_bytes()
        )?;
        writeln!(
            f,
            "  rptr report address   {:#018x}",
            m.rptr_report_address()
        )?;
        writeln!(f, "  wptr poll address     {:#018x}", m.wptr_poll_address())?;
        writeln!(
            f,
            "  doorbell              dword {:#x}",
            m.doorbell_offset()
        )?;
        writeln!(f, "  active                {}", yes_no(m.is_active()))?;
        writeln!(
            f,
            "  priority              pipe {} ({}), queue {}",
            m.pipe_priority(),
            m.pipe_priority().to_bits(),
            m.queue_priority()
        )?;
        writeln!(f, "  vmid                  {}", m.vmid())?;
        writeln!(
            f,
            "  eop base / size       {:#018x} / {:#x} bytes",
            m.eop_base_address(),
            m.eop_size_bytes()
        )?;
        match m.cwsr_area() {
            Some(area) => writeln!(
                f,
                "  cwsr area             {:#018x}, {:#x} bytes, control stack {:#x}",
                area.address, area.size, area.ctl_stack_size
            )?,
            None => writeln!(f, "  cwsr area             off")?,
        }
        let masks = m.static_thread_masks();
        writeln!(
            f,
            "  static thread masks   {:#010x} {:#010x} {:#010x} {:#010x} {:#010x} {:#010x} {:#010x} {:#010x}",
            masks[0], masks[1], masks[2], masks[3], masks[4], masks[5], masks[6], masks[7]
        )?;
        write_key_dwords(f, m.bytes(), self.fields, COMPUTE_KEY_FIELDS)
    }
}

/// The named summary of an SDMA MQD (its `Display`).
pub struct SdmaSummary<'a> {
    mqd: &'a dyn SdmaDescriptor,
    name: &'static str,
    fields: &'static [FieldInfo],
}

impl<'a> SdmaSummary<'a> {
    /// The summary of `mqd`.
    pub fn new<M: MqdLayout + SdmaDescriptor>(mqd: &'a M) -> Self {
        SdmaSummary {
            mqd,
            name: M::NAME,
            fields: M::FIELDS,
        }
    }
}

impl fmt::Display for SdmaSummary<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let m = self.mqd;
        writeln!(f, "{} ({} SDMA)", self.name, m.generation())?;
        writeln!(
            f,
            "  ring base / size      {:#018x} / {:#x} bytes",
            m.ring_base_address(),
            m.ring_size_bytes()
        )?;
        writeln!(
            f,
            "  rptr write-back       {:#018x}",
            m.rptr_writeback_address()
        )?;
        match m.wptr_poll_address() {
            Some(address) => writeln!(f, "  wptr poll address     {address:#018x}")?,
            None => writeln!(f, "  wptr poll address     none (SDMA 4/5)")?,
        }
        writeln!(
            f,
            "  doorbell              dword {:#x}",
            m.doorbell_offset()
        )?;
        writeln!(
            f,
            "  engine / queue        {} / {}",
            m.engine_id(),
            m.queue_id()
        )?;
        writeln!(f, "  vmid                  {}", m.vmid())?;
        write_key_dwords(f, m.bytes(), self.fields, SDMA_KEY_FIELDS)
    }
}

/// Every non-zero dword of an MQD with its index and field name (reserved dwords included
/// when non-zero, as `reserved_N+k`). Made by [`MqdLayout::dump`].
pub struct FieldDump<'a, M: MqdLayout> {
    mqd: &'a M,
}

impl<'a, M: MqdLayout> FieldDump<'a, M> {
    /// The dump of `mqd`.
    pub fn new(mqd: &'a M) -> Self {
        FieldDump { mqd }
    }

    /// The non-zero dwords as `(dword index, field, value)`, in order.
    pub fn nonzero(&self) -> impl Iterator<Item = (usize, &'static FieldInfo, u32)> + '_ {
        M::FIELDS.iter().flat_map(move |field| {
            (field.dword..field.dword + field.dwords).filter_map(move |index| {
                self.mqd
                    .dword(index)
                    .filter(|&value| value != 0)
                    .map(|value| (index, field, value))
            })
        })
    }
}

impl<M: MqdLayout> fmt::Display for FieldDump<'_, M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let count = self.nonzero().count();
        writeln!(f, "{}: {count} non-zero of {} dwords", M::NAME, M::SIZE / 4)?;
        for (index, field, value) in self.nonzero() {
            write!(f, "  dw{index:<3} ")?;
            if field.dwords > 1 {
                write!(f, "{}+{}", field.name, index - field.dword)?;
            } else {
                f.write_str(field.name)?;
            }
            write!(f, " = {value:#010x}")?;
            if M::NAME == v9_mqd::NAME {
                if let Some((_, alias)) = V9_UNION_ALIASES.iter().find(|(dw, _)| *dw == index) {
                    write!(f, " (GC 9.4.3: {alias})")?;
                }
            }
            writeln!(f)?;
        }
        Ok(())
    }
}

/// A [`FieldDump`] of any of the six MQD structs.
pub enum AnyDump<'a> {
    /// `v9_mqd`.
    V9(FieldDump<'a, v9_mqd>),
    /// `v10_compute_mqd`.
    V10(FieldDump<'a, v10_compute_mqd>),
    /// `v11_compute_mqd`.
    V11(FieldDump<'a, v11_compute_mqd>),
    /// `v9_sdma_mqd`.
    V9Sdma(FieldDump<'a, v9_sdma_mqd>),
    /// `v10_sdma_mqd`.
    V10Sdma(FieldDump<'a, v10_sdma_mqd>),
    /// `v11_sdma_mqd`.
    V11Sdma(FieldDump<'a, v11_sdma_mqd>),
}

impl fmt::Display for AnyDump<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AnyDump::V9(d) => d.fmt(f),
            AnyDump::V10(d) => d.fmt(f),
            AnyDump::V11(d) => d.fmt(f),
            AnyDump::V9Sdma(d) => d.fmt(f),
            AnyDump::V10Sdma(d) => d.fmt(f),
            AnyDump::V11Sdma(d) => d.fmt(f),
        }
    }
}
