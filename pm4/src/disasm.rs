//! Disassembly: `Display` for every packet (one umr-like line: the opcode name, then
//! `field=value` pairs with enum names; booleans as 0/1, addresses and masks in hex), and
//! listings of whole streams with dword offsets.
//!
//! ```
//! use pm4::disasm::Pm4Listing;
//! use pm4::GfxGen;
//! let stream = [0xC000_4600, 0x0000_0407, 0xFFFF_1000, 0xC0FF_EE00];
//! let text = Pm4Listing::new(&stream, GfxGen::Gfx9).to_string();
//! let lines: Vec<_> = text.lines().collect();
//! assert_eq!(lines[0], "  0x0000: c0004600 00000407                    EVENT_WRITE event_type=CS_PARTIAL_FLUSH event_index=CS_VS_PS_PARTIAL_FLUSH samp_plst_cntr_mode=0 offload_enable=0");
//! assert_eq!(lines[1], "  0x0002: ffff1000                             NOP (1 dword)");
//! assert!(lines[2].starts_with("  0x0003: c0ffee00                             ; error: truncated TYPE3"));
//! ```

use core::fmt::{self, Display, Formatter};

use crate::decode::{DecodeError, DecodeErrorKind, ErrorPolicy, Pm4Decoder, SdmaDecoder};
use crate::hws::*;
use crate::sdma::*;
use crate::user::*;
use crate::{GfxGen, SdmaGen};

fn b(v: bool) -> u8 {
    v as u8
}

/// Writes one ` label=value` of a generated `Display`; the kind names the value's format:
/// `dec` (`Display`), `bit` (a bool as 0/1), `hex` (`{:#x}`), `hex06`/`hex010`/`hex018`
/// (zero-padded), `data` (a dword list, [`fmt_data`]), `with` (a helper that writes its own
/// text, called as `helper(f, args…)`).
macro_rules! put {
    ($f:ident, dec, $l:ident, $v:expr) => {
        write!($f, concat!(" ", stringify!($l), "={}"), $v)?
    };
    ($f:ident, bit, $l:ident, $v:expr) => {
        write!($f, concat!(" ", stringify!($l), "={}"), b($v))?
    };
    ($f:ident, hex, $l:ident, $v:expr) => {
        write!($f, concat!(" ", stringify!($l), "={:#x}"), $v)?
    };
    ($f:ident, hex06, $l:ident, $v:expr) => {
        write!($f, concat!(" ", stringify!($l), "={:#06x}"), $v)?
    };
    ($f:ident, hex010, $l:ident, $v:expr) => {
        write!($f, concat!(" ", stringify!($l), "={:#010x}"), $v)?
    };
    ($f:ident, hex018, $l:ident, $v:expr) => {
        write!($f, concat!(" ", stringify!($l), "={:#018x}"), $v)?
    };
    ($f:ident, data, $l:ident, $v:expr) => {
        fmt_data($f, stringify!($l), $v)?
    };
}

/// The field list of a generated `Display`, one item per field, written in order:
///
/// * `kind label = expr`: any value under its label;
/// * `kind name()`: the packet's method `name`; `kind name`: its field `name`;
/// * `part.{ kind name, … }`: methods of the packet's field `part` (a bitfield dword);
/// * `with helper(args…)`: `helper(f, args…)` writes a run of fields itself.
macro_rules! fields {
    ($f:ident, $p:ident;) => {};
    ($f:ident, $p:ident; with $h:ident ( $($a:expr),* ) $(, $($rest:tt)*)?) => {
        $h($f, $($a),*)?;
        fields!($f, $p; $($($rest)*)?);
    };
    ($f:ident, $p:ident; $k:ident $l:ident = $e:expr $(, $($rest:tt)*)?) => {
        put!($f, $k, $l, $e);
        fields!($f, $p; $($($rest)*)?);
    };
    ($f:ident, $p:ident; $k:ident $l:ident () $(, $($rest:tt)*)?) => {
        put!($f, $k, $l, $p.$l());
        fields!($f, $p; $($($rest)*)?);
    };
    ($f:ident, $p:ident; $part:ident . { $($k:ident $l:ident),+ $(,)? } $(, $($rest:tt)*)?) => {
        $( put!($f, $k, $l, $p.$part.$l()); )+
        fields!($f, $p; $($($rest)*)?);
    };
    ($f:ident, $p:ident; $k:ident $l:ident $(, $($rest:tt)*)?) => {
        put!($f, $k, $l, $p.$l);
        fields!($f, $p; $($($rest)*)?);
    };
}

/// `Display` impls generated from field lists: `Type as p { fields }` prints the layout's
/// `NAME` then ` label=value` per field ([`fields!`]); `p` names the packet in expressions.
/// `Type as p => braced ("fmt", args…) { fields }` prints the optional head, then
/// `{label=value …}` (a bitfield shown inside another packet's line).
macro_rules! layout_display {
    ($ty:ty as $p:ident => braced $(($($head:tt)*))? { $($fields:tt)* } $($more:tt)*) => {
        impl Display for $ty {
            fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
                use core::fmt::Write as _;
                let $p = self;
                $( write!(f, $($head)*)?; )?
                f.write_str("{")?;
                {
                    let f = &mut SkipFirstSpace { f, first: true };
                    fields!(f, $p; $($fields)*);
                }
                f.write_str("}")
            }
        }
        layout_display!($($more)*);
    };
    ($ty:ty as $p:ident { $($fields:tt)* } $($more:tt)*) => {
        impl Display for $ty {
            fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
                let $p = self;
                f.write_str(Self::NAME)?;
                fields!(f, $p; $($fields)*);
                Ok(())
            }
        }
        layout_display!($($more)*);
    };
    () => {};
}

/// A writer that drops the first field's leading space (the fields of a braced form).
struct SkipFirstSpace<'a, 'b> {
    f: &'a mut Formatter<'b>,
    first: bool,
}

impl fmt::Write for SkipFirstSpace<'_, '_> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let s = match (self.first, s.strip_prefix(' ')) {
            (true, Some(rest)) => rest,
            _ => s,
        };
        self.first = false;
        self.f.write_str(s)
    }
}

fn fmt_map_process_common(f: &mut Formatter<'_>, c: &MapProcessCommon, form: &str) -> fmt::Result {
    let d = c.dw1;
    write!(
        f,
        "MAP_PROCESS form={form} pasid={:#x} process_quantum={} diq_enable={} exec_cleaner_shader={} debug_vmid={} new_debug={}",
        d.pasid(),
        d.process_quantum(),
        b(d.diq_enable()),
        b(d.exec_cleaner_shader()),
        d.debug_vmid(),
        b(d.new_debug())
    )?;
    if form == "ALDEBARAN" {
        write!(
            f,
            " single_memops={} tmz={}",
            b(d.single_memops()),
            b(d.tmz())
        )?;
    }
    let q = c.dw13;
    write!(
        f,
        " page_table_base={:#x} sh_mem_bases={:#010x} sh_mem_config={:#010x} tba={:#x} trap_en={} tma={:#x} gds_addr={:#x} num_gws={} sdma_enable={} num_oac={} gds_size={} num_queues={}",
        c.page_table_base(),
        c.sh_mem_bases,
        c.sh_mem_config,
        c.tba_addr(),
        b(c.trap_en()),
        c.tma_addr(),
        c.gds_addr(),
        q.num_gws(),
        b(q.sdma_enable()),
        q.num_oac(),
        q.gds_size_total(),
        q.num_queues()
    )
}

impl Display for MapProcess {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        fmt_map_process_common(f, &self.common, "GFX9")?;
        write!(f, " completion_signal={:#x}", self.completion_signal())
    }
}

impl Display for MapProcessAldebaran {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        fmt_map_process_common(f, &self.common, "ALDEBARAN")?;
        let w = self.tcp_watch_cntl;
        write!(
            f,
            " spi_gdbg_per_vmid_cntl={:#x} tcp_watch_cntl=[{:#x},{:#x},{:#x},{:#x}] completion_signal={:#x}",
            self.spi_gdbg_per_vmid_cntl,
            w[0],
            w[1],
            w[2],
            w[3],
            self.completion_signal()
        )
    }
}

impl Display for MapQueues {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        let d = self.dw1;
        write!(
            f,
            "MAP_QUEUES queue_sel={} queue_type={} engine=",
            d.queue_sel(),
            d.queue_type()
        )?;
        match self.engine() {
            Some(e) => write!(f, "{e}")?,
            None => write!(
                f,
                "INVALID(ext={},sel={})",
                d.extended_engine_sel(),
                d.engine_sel()
            )?,
        }
        write!(
            f,
            " gws_control_queue={} num_queues={} check_disable={} doorbell_offset={:#x} mqd_addr={:#x} wptr_addr={:#x}",
            b(d.gws_control_queue()),
            d.num_queues(),
            b(self.dw2.check_disable()),
            self.dw2.doorbell_offset(),
            self.mqd_addr(),
            self.wptr_addr()
        )
    }
}

impl Display for UnmapQueues {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        let d = self.dw1;
        write!(
            f,
            "UNMAP_QUEUES action={} queue_sel={} extended_engine_sel={} engine_sel={} num_queues={}",
            d.action(),
            d.queue_sel(),
            d.extended_engine_sel(),
            d.engine_sel(),
            d.num_queues()
        )?;
        match self.target() {
            UnmapTarget::Pasid(p) => write!(f, " pasid={p:#x}"),
            UnmapTarget::Queues {
                doorbell_offsets,
                count,
            } => {
                f.write_str(" doorbell_offsets=[")?;
                for (i, d) in doorbell_offsets.iter().take(count.into()).enumerate() {
                    if i > 0 {
                        f.write_str(",")?;
                    }
                    write!(f, "{d:#x}")?;
                }
                f.write_str("]")
            }
            _ => Ok(()),
        }
    }
}

impl Display for QueryStatus {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        let d = self.dw1;
        write!(
            f,
            "QUERY_STATUS context_id={:#x} interrupt_sel={} command={}",
            d.context_id(),
            d.interrupt_sel(),
            d.command()
        )?;
        match self.target() {
            QueryTarget::Process { pasid } => write!(f, " pasid={pasid:#x}")?,
            QueryTarget::Queue {
                doorbell_offset,
                engine_sel,
            } => write!(
                f,
                " doorbell_offset={doorbell_offset:#x} engine_sel={engine_sel}"
            )?,
            QueryTarget::Completion => {}
        }
        write!(
            f,
            " addr={:#x} data={:#x}",
            self.fence_addr(),
            self.fence_value()
        )
    }
}

impl Display for Nop<'_> {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        if self.payload.is_empty() {
            f.write_str("NOP (1 dword)")
        } else {
            write!(
                f,
                "NOP count={} ({} dwords)",
                self.header.count(),
                self.total_dwords()
            )
        }
    }
}

fn fmt_data(f: &mut Formatter<'_>, name: &str, data: &[u32]) -> fmt::Result {
    write!(f, " {name}=[")?;
    for (i, d) in data.iter().take(8).enumerate() {
        if i > 0 {
            f.write_str(",")?;
        }
        write!(f, "{d:#x}")?;
    }
    if data.len() > 8 {
        write!(f, ",… {} dwords", data.len())?;
    }
    f.write_str("]")
}

impl Display for WriteData<'_> {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        let c = self.head.control;
        write!(
            f,
            "WRITE_DATA dst_sel={} addr_incr={} wr_confirm={} cache_policy={} engine_sel={}",
            c.dst_sel(),
            b(c.addr_incr()),
            b(c.wr_confirm()),
            c.cache_policy(),
            c.engine_sel()
        )?;
        if c.resume_vf() {
            f.write_str(" resume_vf=1")?;
        }
        match self.target() {
            Some(WriteDataTarget::Register(r)) => write!(f, " reg={r:#x}")?,
            Some(WriteDataTarget::Gds(g)) => write!(f, " gds={g:#x}")?,
            Some(WriteDataTarget::Memory(a)) => write!(f, " addr={a:#x}")?,
            None => write!(f, " dst={:#x}", self.dst_addr())?,
        }
        fmt_data(f, "data", self.data)
    }
}

fn fmt_release_tail(f: &mut Formatter<'_>, t: &ReleaseMemTail, gfx10: bool) -> fmt::Result {
    let c = t.data_control;
    write!(
        f,
        " dst_sel={} int_sel={} data_sel={}",
        c.dst_sel(),
        c.int_sel(),
        c.data_sel()
    )?;
    if gfx10 {
        write!(
            f,
            " mes_intr_pipe={} mes_action_id={}",
            c.mes_intr_pipe(),
            c.mes_action_id()
        )?;
    }
    write!(
        f,
        " addr={:#x} data={:#x} int_ctxid={:#x}",
        t.addr(),
        t.data(),
        t.int_ctxid
    )
}

fn fmt_range(f: &mut Formatter<'_>, r: &AcquireRange) -> fmt::Result {
    write!(
        f,
        " coher_size={:#x} coher_base={:#x} poll_interval={}",
        r.size(),
        r.base(),
        r.poll_interval & 0xFFFF
    )
}

impl Display for AcquireMemGfx9 {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        let c = self.coher_cntl;
        write!(
            f,
            "ACQUIRE_MEM coher_cntl={:#010x}",
            c.into_bits() & 0x7FFF_FFFF
        )?;
        let flags = [
            ("tc_nc", c.tc_nc_action_ena()),
            ("tc_wc", c.tc_wc_action_ena()),
            ("tc_inv_metadata", c.tc_inv_metadata_action_ena()),
            ("tcl1_vol", c.tcl1_vol_action_ena()),
            ("tc_wb", c.tc_wb_action_ena()),
            ("tcl1", c.tcl1_action_ena()),
            ("tc", c.tc_action_ena()),
            ("cb", c.cb_action_ena()),
            ("db", c.db_action_ena()),
            ("sh_kcache", c.sh_kcache_action_ena()),
            ("sh_kcache_vol", c.sh_kcache_vol_action_ena()),
            ("sh_icache", c.sh_icache_action_ena()),
            ("sh_kcache_wb", c.sh_kcache_wb_action_ena()),
        ];
        f.write_str(" (")?;
        let mut first = true;
        for (name, on) in flags {
            if on {
                if !first {
                    f.write_str("|")?;
                }
                f.write_str(name)?;
                first = false;
            }
        }
        write!(
            f,
            ") engine_sel={}",
            if c.engine_sel_pfp() { "PFP" } else { "ME" }
        )?;
        fmt_range(f, &self.range)
    }
}

fn fmt_wait(f: &mut Formatter<'_>, c: WaitRegMemControl, target: PollTarget) -> fmt::Result {
    write!(
        f,
        " function={} mem_space={} operation={} engine_sel={}",
        c.function(),
        c.mem_space(),
        c.operation(),
        c.engine_sel()
    )?;
    if c.mes_intr_pipe() != 0
        || c.mes_action()
        || c.cache_policy() != crate::fields::CachePolicy::Lru
    {
        write!(
            f,
            " mes_intr_pipe={} mes_action={} cache_policy={}",
            c.mes_intr_pipe(),
            b(c.mes_action()),
            c.cache_policy()
        )?;
    }
    match target {
        PollTarget::Memory(a) => write!(f, " addr={a:#x}"),
        PollTarget::Register { reg, write_reg } => write!(f, " reg={reg:#x} reg2={write_reg:#x}"),
    }
}

fn fmt_event(f: &mut Formatter<'_>, c: EventWriteControl) -> fmt::Result {
    write!(
        f,
        " event_type={} event_index={} samp_plst_cntr_mode={} offload_enable={}",
        c.event_type(),
        c.event_index(),
        c.samp_plst_cntr_mode(),
        b(c.offload_enable())
    )
}

impl<S: crate::user::RegisterSpace> Display for crate::user::SetRegs<'_, S> {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        // One `NAME=value` per register written; unknown registers by address.
        const SHOWN: usize = 16;
        f.write_str(S::NAME)?;
        let first = self.first_register();
        for (addr, value) in (first..).zip(self.values.iter().take(SHOWN)) {
            match S::reg_name(addr) {
                Some(name) => write!(f, " {name}={value:#x}")?,
                None => write!(f, " {addr:#x}={value:#x}")?,
            }
        }
        if self.values.len() > SHOWN {
            write!(f, " … {} more", self.values.len() - SHOWN)?;
        }
        Ok(())
    }
}

layout_display! {
    SetResources as p {
        dw1.{
            hex06 vmid_mask, dec unmap_latency, dec queue_type, bit enb_xnack_retry_disable_check,
        },
        hex018 queue_mask(),
        hex018 gws_mask(),
        dw6.{ hex06 oac_mask },
        dw7.{ dec gds_heap_base, dec gds_heap_size },
    }
    RunList as p {
        hex ib_base = p.ib_addr(),
        control.{
            dec ib_size, bit chain, bit offload_polling, bit chained_runlist_idle_disable,
            bit valid, dec process_cnt,
        },
    }
    WriteDataRegister as p {
        control.{ dec dst_sel, bit addr_incr, bit wr_confirm },
        hex reg = p.reg_offset,
        hex010 data,
    }
    ReleaseMemGfx9 as p {
        cache.{
            dec event_type, dec event_index, dec cache_policy, bit tcl1_vol_action_ena,
            bit tc_vol_action_ena, bit tc_wb_action_ena, bit tcl1_action_ena, bit tc_action_ena,
            bit tc_nc_action_ena, bit tc_wc_action_ena, bit tc_md_action_ena, bit execute,
            bit pq_exe_status,
        },
        with fmt_release_tail(&p.tail, false),
    }
    ReleaseGcr as p => braced {
        bit glm_wb(), bit glm_inv(), bit glv_inv(), bit gl1_inv(), bit gl2_us(), dec gl2_range(),
        bit gl2_discard(), bit gl2_inv(), bit gl2_wb(), dec seq(),
    }
    AcquireGcr as p => braced ("{:#x} ", p.into_bits()) {
        dec gli_inv(), dec gl1_range(), bit glm_wb(), bit glm_inv(), bit glk_wb(), bit glk_inv(),
        bit glv_inv(), bit gl1_inv(), bit gl2_us(), dec gl2_range(), bit gl2_discard(),
        bit gl2_inv(), bit gl2_wb(), dec seq(), bit range_is_pa(),
    }
    ReleaseMemGfx10 as p {
        cache.{
            dec event_type, dec event_index, dec gcr_cntl, dec cache_policy, bit execute,
            bit glk_inv, bit pws_enable,
        },
        with fmt_release_tail(&p.tail, true),
    }
    AcquireMemGfx10 as p {
        with fmt_range(&p.range),
        dec gcr_cntl,
    }
    WaitRegMem as p {
        with fmt_wait(p.control, p.target()),
        hex reference,
        hex mask,
        poll.{ dec poll_interval, bit optimize_ace_offload_mode },
    }
    WaitRegMem64 as p {
        with fmt_wait(p.control, p.target()),
        hex reference(),
        hex mask(),
        poll.{ dec poll_interval, bit optimize_ace_offload_mode },
    }
    IndirectBuffer as p {
        hex ib_base = p.ib_addr(),
        control.{
            dec ib_size, bit chain, bit offload_polling, bit volatile, bit valid, dec vmid,
            dec cache_policy,
        },
        bit priv = p.control.privileged(),
    }
    CopyData as p {
        control.{
            dec src_sel, dec dst_sel, dec count_sel, bit wr_confirm, dec src_cache_policy,
            dec dst_cache_policy, bit pq_exe_status,
        },
        hex src(),
        hex dst(),
    }
    DmaData as p {
        dec engine = if p.control.engine_pfp() { "PFP" } else { "ME" },
        control.{
            dec src_sel, dec dst_sel, dec src_cache_policy, dec dst_cache_policy, bit cp_sync,
        },
        hex src(),
        hex dst(),
        command.{
            dec byte_count, bit sas, bit das, bit saic, bit daic, bit raw_wait, bit dis_wc,
        },
    }
    EventWrite as p {
        with fmt_event(p.control),
    }
    EventWriteAddr as p {
        with fmt_event(p.control),
        hex addr(),
    }
    DispatchDirect as p {
        dec dim_x,
        dec dim_y,
        dec dim_z,
        hex initiator = p.initiator.into_bits(),
        initiator.{
            bit compute_shader_en, bit partial_tg_en, bit force_start_at_000,
            bit use_thread_dimensions, bit order_mode, bit cs_w32_en,
        },
    }
}

// ---------------------------------------------------------------------------------------
// SDMA
// ---------------------------------------------------------------------------------------

layout_display! {
    SdmaCopyLinear as p {
        dec bytes = p.byte_count(),
        hex src(),
        hex dst(),
        header.{ bit encrypt, bit tmz, bit backwards },
        params.{ dec src_sw, dec dst_sw, dec src_cache_policy, dec dst_cache_policy },
    }
    SdmaCopyLinearBroadcast as p {
        dec bytes = p.byte_count(),
        hex src(),
        hex dst1 = p.dsts()[0],
        hex dst2 = p.dsts()[1],
        header.{ bit encrypt, bit tmz },
        params.{
            dec src_sw, dec dst1_sw, dec dst2_sw, dec src_cache_policy, dec dst1_cache_policy,
            dec dst2_cache_policy,
        },
    }
    SdmaCopyLinearSubWind as p {
        header.{ dec elementsize, bit tmz },
        with fmt_surface("src", p.src()),
        with fmt_surface("dst", p.dst()),
        dec rect = Joined(p.rect(), "x"),
        rect_z.{ dec src_sw, dec dst_sw, dec src_cache_policy, dec dst_cache_policy },
    }
    SdmaWrite<'_> as p {
        hex dst(),
        bit tmz = p.head.header.tmz(),
        dec sw = p.head.count.sw(),
        dec count = p.data.len(),
        data data,
    }
    SdmaFence as p {
        hex addr(),
        hex data,
        header.{ dec mtype, bit gcc, bit sys, bit snp, bit gpa, dec l2_policy },
    }
    SdmaTrap as p {
        context.{ hex int_context },
    }
    SdmaPollRegmem as p {
        header.{ dec func, bit mem_poll, bit hdp_flush },
        hex addr(),
        hex reference,
        hex mask,
        interval.{ dec interval, hex retry_count },
    }
    SdmaConstantFill as p {
        hex dst(),
        hex data,
        dec bytes = p.byte_count(),
        header.{ dec fillsize, dec sw },
    }
    SdmaIndirect as p {
        hex base(),
        dec ib_size,
        header.{ dec vmid },
        bit priv = p.header.privileged(),
        hex csa(),
    }
}

/// Three values joined by a separator (`1,2,3`, `4x5x6`).
struct Joined([u32; 3], &'static str);

impl Display for Joined {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        let ([a, b, c], sep) = (self.0, self.1);
        write!(f, "{a}{sep}{b}{sep}{c}")
    }
}

/// One side of a sub-window copy: ` src={:#x} src_xyz=x,y,z src_pitch=… src_slice_pitch=…`.
fn fmt_surface(f: &mut Formatter<'_>, side: &str, s: SubWindSurface) -> fmt::Result {
    write!(
        f,
        " {side}={:#x} {side}_xyz={} {side}_pitch={} {side}_slice_pitch={}",
        s.addr,
        Joined([s.x, s.y, s.z], ","),
        s.pitch,
        s.slice_pitch
    )
}

impl Display for SdmaNop<'_> {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        if self.payload.is_empty() {
            f.write_str(Self::NAME)
        } else {
            write!(f, "{} count={}", Self::NAME, self.header.count())
        }
    }
}

impl Display for SdmaTimestamp {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        let (name, v) = (Self::NAME, self.operand());
        match self.header.sub_op() {
            TimestampOp::Set => write!(f, "{name} op=SET value={v:#x}"),
            op => write!(f, "{name} op={op} addr={v:#x}"),
        }
    }
}

// ---------------------------------------------------------------------------------------
// Listings
// ---------------------------------------------------------------------------------------

/// Dwords shown in the hex column of a listing line; longer packets show `+N`.
pub const LISTING_HEX_DWORDS: usize = 8;
const HEX_COLUMN: usize = 4 * 9 - 1;

fn fmt_hex(f: &mut Formatter<'_>, words: &[u32]) -> fmt::Result {
    let mut width = 0;
    for (i, w) in words.iter().take(LISTING_HEX_DWORDS).enumerate() {
        if i > 0 {
            f.write_str(" ")?;
            width += 1;
        }
        write!(f, "{w:08x}")?;
        width += 8;
    }
    if words.len() > LISTING_HEX_DWORDS {
        let more = words.len() - LISTING_HEX_DWORDS;
        write!(f, " +{more}")?;
        width += 2 + digits(more);
    }
    for _ in width..HEX_COLUMN {
        f.write_str(" ")?;
    }
    Ok(())
}

fn digits(mut n: usize) -> usize {
    let mut d = 1;
    while n >= 10 {
        n /= 10;
        d += 1;
    }
    d
}

fn fmt_line(
    f: &mut Formatter<'_>,
    offset: usize,
    words: &[u32],
    text: &dyn Display,
) -> fmt::Result {
    write!(f, "  {offset:#06x}: ")?;
    fmt_hex(f, words)?;
    writeln!(f, "  {text}")
}

fn fmt_error_line(
    f: &mut Formatter<'_>,
    all: &[u32],
    err: &DecodeError,
    len: usize,
) -> fmt::Result {
    let words = all.get(err.offset..).unwrap_or_default();
    let words = words.get(..len.min(words.len())).unwrap_or_default();
    // An intact type-3 header whose opcode is not decoded is still worth naming.
    let header = match err.kind {
        DecodeErrorKind::UnknownOpcode { .. } | DecodeErrorKind::UnsupportedOpcode { .. } => words
            .first()
            .map(|&w| crate::header::Type3Header::from_bits(w)),
        _ => None,
    };
    struct E<'e>(&'e DecodeError, Option<crate::header::Type3Header>);
    impl Display for E<'_> {
        fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
            if let Some(h) = self.1 {
                write!(f, "{h} ")?;
            }
            write!(f, "; error: {}", self.0.kind)
        }
    }
    fmt_line(f, err.offset, words, &E(err, header))
}

/// A PM4 stream listing: one line per packet, `  0x0000: <hex dwords>  <text>`. Errors
/// appear as `; error: …` lines and decoding resynchronises where it can
/// ([`ErrorPolicy::Resync`]).
#[derive(Clone, Copy, Debug)]
pub struct Pm4Listing<'a> {
    words: &'a [u32],
    gen: GfxGen,
}

impl<'a> Pm4Listing<'a> {
    /// A listing of `words` decoded for `gen`.
    pub fn new(words: &'a [u32], gen: GfxGen) -> Self {
        Pm4Listing { words, gen }
    }
}

impl Display for Pm4Listing<'_> {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        let mut dec = Pm4Decoder::new(self.words, self.gen).with_policy(ErrorPolicy::Resync);
        while let Some(item) = dec.next() {
            match item {
                Ok(d) => fmt_line(f, d.offset, d.words, &d.packet)?,
                Err(e) => {
                    let len = dec.position().saturating_sub(e.offset).max(1);
                    let len = if dec.position() <= e.offset {
                        self.words.len() - e.offset.min(self.words.len())
                    } else {
                        len
                    };
                    fmt_error_line(f, self.words, &e, len)?;
                }
            }
        }
        Ok(())
    }
}

/// An SDMA stream listing (stops at the first error).
#[derive(Clone, Copy, Debug)]
pub struct SdmaListing<'a> {
    words: &'a [u32],
    gen: SdmaGen,
}

impl<'a> SdmaListing<'a> {
    /// A listing of `words` decoded for `gen`.
    pub fn new(words: &'a [u32], gen: SdmaGen) -> Self {
        SdmaListing { words, gen }
    }
}

impl Display for SdmaListing<'_> {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        for item in SdmaDecoder::new(self.words, self.gen) {
            match item {
                Ok(d) => fmt_line(f, d.offset, d.words, &d.packet)?,
                Err(e) => {
                    let len = self.words.len().saturating_sub(e.offset);
                    fmt_error_line(f, self.words, &e, len)?;
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use core::fmt::Write;

    /// A fixed-size `fmt::Write` sink (the crate is `no_std`).
    struct Text {
        buf: [u8; 512],
        len: usize,
    }

    impl Write for Text {
        fn write_str(&mut self, s: &str) -> fmt::Result {
            let end = self.len + s.len();
            self.buf
                .get_mut(self.len..end)
                .ok_or(fmt::Error)?
                .copy_from_slice(s.as_bytes());
            self.len = end;
            Ok(())
        }
    }

    fn text(p: &dyn Display) -> Text {
        let mut t = Text {
            buf: [0; 512],
            len: 0,
        };
        write!(t, "{p}").unwrap();
        t
    }

    impl Text {
        fn as_str(&self) -> &str {
            core::str::from_utf8(&self.buf[..self.len]).unwrap()
        }
    }

    #[test]
    fn set_sh_reg_names_the_registers_it_writes() {
        let p = SetShReg::new(0x2E0C, &[0x1000, 0x7f]).unwrap();
        assert_eq!(
            text(&p).as_str(),
            "SET_SH_REG COMPUTE_PGM_LO=0x1000 COMPUTE_PGM_HI=0x7f"
        );
        // Past COMPUTE_STATIC_THREAD_MGMT_SE7 (0x2E28) there is no register until 0x2E40.
        let p = SetShReg::new(0x2E28, &[1, 2]).unwrap();
        assert_eq!(
            text(&p).as_str(),
            "SET_SH_REG COMPUTE_STATIC_THREAD_MGMT_SE7=0x1 0x2e29=0x2"
        );
        let values = [0u32; 18];
        let p = SetShReg::new(0x2E40, &values).unwrap();
        let t = text(&p);
        assert!(t
            .as_str()
            .starts_with("SET_SH_REG COMPUTE_USER_DATA_0=0x0 "));
        assert!(t.as_str().ends_with(" COMPUTE_USER_DATA_15=0x0 … 2 more"));
    }

    #[test]
    fn set_context_reg_names_the_registers_it_writes() {
        // A gfx9 ring's viewport setup as dwords: header (opcode 0x69, count 3), offset
        // 0x10f (PA_CL_VPORT_XSCALE), then XSCALE=64.0, XOFFSET=64.0, YSCALE=-1.0 as floats.
        let words = [
            0xC003_6900,
            0x0000_010F,
            0x4280_0000,
            0x4280_0000,
            0xBF80_0000,
        ];
        let (p, len) = crate::decode::decode_pm4_packet(&words, crate::GfxGen::Gfx9).unwrap();
        assert_eq!(len, 5);
        assert_eq!(
            text(&p).as_str(),
            "SET_CONTEXT_REG PA_CL_VPORT_XSCALE=0x42800000 PA_CL_VPORT_XOFFSET=0x42800000 PA_CL_VPORT_YSCALE=0xbf800000"
        );
        // Unknown context registers show by address.
        let p = SetContextReg::new(0xA3FF, &[7]).unwrap();
        assert_eq!(text(&p).as_str(), "SET_CONTEXT_REG 0xa3ff=0x7");
    }
}
