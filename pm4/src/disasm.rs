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

use crate::decode::{
    DecodeError, DecodeErrorKind, ErrorPolicy, Pm4Decoder, SdmaDecoder, SdmaPacket,
};
use crate::hws::*;
use crate::sdma::*;
use crate::user::*;
use crate::{GfxGen, SdmaGen};

fn b(v: bool) -> u8 {
    v as u8
}

impl Display for SetResources {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        let d = self.dw1;
        write!(
            f,
            "SET_RESOURCES vmid_mask={:#06x} unmap_latency={} queue_type={} enb_xnack_retry_disable_check={} queue_mask={:#018x} gws_mask={:#018x} oac_mask={:#06x} gds_heap_base={} gds_heap_size={}",
            d.vmid_mask(),
            d.unmap_latency(),
            d.queue_type(),
            b(d.enb_xnack_retry_disable_check()),
            self.queue_mask(),
            self.gws_mask(),
            self.dw6.oac_mask(),
            self.dw7.gds_heap_base(),
            self.dw7.gds_heap_size()
        )
    }
}

impl Display for RunList {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        let c = self.control;
        write!(
            f,
            "RUN_LIST ib_base={:#x} ib_size={} chain={} offload_polling={} chained_runlist_idle_disable={} valid={} process_cnt={}",
            self.ib_addr(),
            c.ib_size(),
            b(c.chain()),
            b(c.offload_polling()),
            b(c.chained_runlist_idle_disable()),
            b(c.valid()),
            c.process_cnt()
        )
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

impl Display for WriteDataRegister {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "WRITE_DATA dst_sel={} addr_incr={} wr_confirm={} reg={:#x} data={:#010x}",
            self.control.dst_sel(),
            b(self.control.addr_incr()),
            b(self.control.wr_confirm()),
            self.reg_offset,
            self.data
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

impl Display for ReleaseMemGfx9 {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        let c = self.cache;
        write!(
            f,
            "RELEASE_MEM event_type={} event_index={} cache_policy={}",
            c.event_type(),
            c.event_index(),
            c.cache_policy()
        )?;
        let flags = [
            ("tcl1_vol_action_ena", c.tcl1_vol_action_ena()),
            ("tc_vol_action_ena", c.tc_vol_action_ena()),
            ("tc_wb_action_ena", c.tc_wb_action_ena()),
            ("tcl1_action_ena", c.tcl1_action_ena()),
            ("tc_action_ena", c.tc_action_ena()),
            ("tc_nc_action_ena", c.tc_nc_action_ena()),
            ("tc_wc_action_ena", c.tc_wc_action_ena()),
            ("tc_md_action_ena", c.tc_md_action_ena()),
            ("execute", c.execute()),
            ("pq_exe_status", c.pq_exe_status()),
        ];
        for (name, on) in flags {
            write!(f, " {name}={}", b(on))?;
        }
        fmt_release_tail(f, &self.tail, false)
    }
}

impl Display for ReleaseGcr {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{{glm_wb={} glm_inv={} glv_inv={} gl1_inv={} gl2_us={} gl2_range={} gl2_discard={} gl2_inv={} gl2_wb={} seq={}}}",
            b(self.glm_wb()),
            b(self.glm_inv()),
            b(self.glv_inv()),
            b(self.gl1_inv()),
            b(self.gl2_us()),
            self.gl2_range(),
            b(self.gl2_discard()),
            b(self.gl2_inv()),
            b(self.gl2_wb()),
            self.seq()
        )
    }
}

impl Display for ReleaseMemGfx10 {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        let c = self.cache;
        write!(
            f,
            "RELEASE_MEM event_type={} event_index={} gcr_cntl={} cache_policy={} execute={} glk_inv={} pws_enable={}",
            c.event_type(),
            c.event_index(),
            c.gcr_cntl(),
            c.cache_policy(),
            b(c.execute()),
            b(c.glk_inv()),
            b(c.pws_enable())
        )?;
        fmt_release_tail(f, &self.tail, true)
    }
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

impl Display for AcquireGcr {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:#x} {{gli_inv={} gl1_range={} glm_wb={} glm_inv={} glk_wb={} glk_inv={} glv_inv={} gl1_inv={} gl2_us={} gl2_range={} gl2_discard={} gl2_inv={} gl2_wb={} seq={} range_is_pa={}}}",
            self.into_bits(),
            self.gli_inv(),
            self.gl1_range(),
            b(self.glm_wb()),
            b(self.glm_inv()),
            b(self.glk_wb()),
            b(self.glk_inv()),
            b(self.glv_inv()),
            b(self.gl1_inv()),
            b(self.gl2_us()),
            self.gl2_range(),
            b(self.gl2_discard()),
            b(self.gl2_inv()),
            b(self.gl2_wb()),
            self.seq(),
            b(self.range_is_pa())
        )
    }
}

impl Display for AcquireMemGfx10 {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        f.write_str("ACQUIRE_MEM")?;
        fmt_range(f, &self.range)?;
        write!(f, " gcr_cntl={}", self.gcr_cntl)
    }
}

fn fmt_wait(
    f: &mut Formatter<'_>,
    name: &str,
    c: WaitRegMemControl,
    target: PollTarget,
) -> fmt::Result {
    write!(
        f,
        "{name} function={} mem_space={} operation={} engine_sel={}",
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

impl Display for WaitRegMem {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        fmt_wait(f, "WAIT_REG_MEM", self.control, self.target())?;
        write!(
            f,
            " reference={:#x} mask={:#x} poll_interval={} optimize_ace_offload_mode={}",
            self.reference,
            self.mask,
            self.poll.poll_interval(),
            b(self.poll.optimize_ace_offload_mode())
        )
    }
}

impl Display for WaitRegMem64 {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        fmt_wait(f, "WAIT_REG_MEM64", self.control, self.target())?;
        write!(
            f,
            " reference={:#x} mask={:#x} poll_interval={} optimize_ace_offload_mode={}",
            self.reference(),
            self.mask(),
            self.poll.poll_interval(),
            b(self.poll.optimize_ace_offload_mode())
        )
    }
}

impl Display for IndirectBuffer {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        let c = self.control;
        write!(
            f,
            "INDIRECT_BUFFER ib_base={:#x} ib_size={} chain={} offload_polling={} volatile={} valid={} vmid={} cache_policy={} priv={}",
            self.ib_addr(),
            c.ib_size(),
            b(c.chain()),
            b(c.offload_polling()),
            b(c.volatile()),
            b(c.valid()),
            c.vmid(),
            c.cache_policy(),
            b(c.privileged())
        )
    }
}

impl Display for CopyData {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        let c = self.control;
        write!(
            f,
            "COPY_DATA src_sel={} dst_sel={} count_sel={} wr_confirm={} src_cache_policy={} dst_cache_policy={} pq_exe_status={} src={:#x} dst={:#x}",
            c.src_sel(),
            c.dst_sel(),
            c.count_sel(),
            b(c.wr_confirm()),
            c.src_cache_policy(),
            c.dst_cache_policy(),
            b(c.pq_exe_status()),
            self.src(),
            self.dst()
        )
    }
}

impl Display for DmaData {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        let c = self.control;
        let m = self.command;
        write!(
            f,
            "DMA_DATA engine={} src_sel={} dst_sel={} src_cache_policy={} dst_cache_policy={} cp_sync={} src={:#x} dst={:#x} byte_count={} sas={} das={} saic={} daic={} raw_wait={} dis_wc={}",
            if c.engine_pfp() { "PFP" } else { "ME" },
            c.src_sel(),
            c.dst_sel(),
            c.src_cache_policy(),
            c.dst_cache_policy(),
            b(c.cp_sync()),
            self.src(),
            self.dst(),
            m.byte_count(),
            b(m.sas()),
            b(m.das()),
            b(m.saic()),
            b(m.daic()),
            b(m.raw_wait()),
            b(m.dis_wc())
        )
    }
}

fn fmt_event(f: &mut Formatter<'_>, c: EventWriteControl) -> fmt::Result {
    write!(
        f,
        "EVENT_WRITE event_type={} event_index={} samp_plst_cntr_mode={} offload_enable={}",
        c.event_type(),
        c.event_index(),
        c.samp_plst_cntr_mode(),
        b(c.offload_enable())
    )
}

impl Display for EventWrite {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        fmt_event(f, self.control)
    }
}

impl Display for EventWriteAddr {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        fmt_event(f, self.control)?;
        write!(f, " addr={:#x}", self.addr())
    }
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

impl Display for DispatchDirect {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        let i = self.initiator;
        write!(
            f,
            "DISPATCH_DIRECT dim_x={} dim_y={} dim_z={} initiator={:#x} compute_shader_en={} partial_tg_en={} force_start_at_000={} use_thread_dimensions={} order_mode={} cs_w32_en={}",
            self.dim_x,
            self.dim_y,
            self.dim_z,
            i.into_bits(),
            b(i.compute_shader_en()),
            b(i.partial_tg_en()),
            b(i.force_start_at_000()),
            b(i.use_thread_dimensions()),
            b(i.order_mode()),
            b(i.cs_w32_en())
        )
    }
}

// ---------------------------------------------------------------------------------------
// SDMA
// ---------------------------------------------------------------------------------------

impl Display for SdmaNop<'_> {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        if self.payload.is_empty() {
            f.write_str("SDMA_NOP")
        } else {
            write!(f, "SDMA_NOP count={}", self.header.count())
        }
    }
}

impl Display for SdmaCopyLinear {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        let h = self.header;
        let p = self.params;
        write!(
            f,
            "SDMA_COPY_LINEAR bytes={} src={:#x} dst={:#x} encrypt={} tmz={} backwards={} src_sw={} dst_sw={} src_cache_policy={} dst_cache_policy={}",
            self.byte_count(),
            self.src(),
            self.dst(),
            b(h.encrypt()),
            b(h.tmz()),
            b(h.backwards()),
            p.src_sw(),
            p.dst_sw(),
            p.src_cache_policy(),
            p.dst_cache_policy()
        )
    }
}

impl Display for SdmaCopyLinearBroadcast {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        let h = self.header;
        let p = self.params;
        let [dst1, dst2] = self.dsts();
        write!(
            f,
            "SDMA_COPY_LINEAR_BROADCAST bytes={} src={:#x} dst1={:#x} dst2={:#x} encrypt={} tmz={} src_sw={} dst1_sw={} dst2_sw={} src_cache_policy={} dst1_cache_policy={} dst2_cache_policy={}",
            self.byte_count(),
            self.src(),
            dst1,
            dst2,
            b(h.encrypt()),
            b(h.tmz()),
            p.src_sw(),
            p.dst1_sw(),
            p.dst2_sw(),
            p.src_cache_policy(),
            p.dst1_cache_policy(),
            p.dst2_cache_policy()
        )
    }
}

impl Display for SdmaCopyLinearSubWind {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        let (s, d, [rx, ry, rz]) = (self.src(), self.dst(), self.rect());
        let r = self.rect_z;
        write!(
            f,
            "SDMA_COPY_LINEAR_SUB_WIND elementsize={} tmz={} src={:#x} src_xyz={},{},{} src_pitch={} src_slice_pitch={} dst={:#x} dst_xyz={},{},{} dst_pitch={} dst_slice_pitch={} rect={}x{}x{} src_sw={} dst_sw={} src_cache_policy={} dst_cache_policy={}",
            self.header.elementsize(),
            b(self.header.tmz()),
            s.addr, s.x, s.y, s.z, s.pitch, s.slice_pitch,
            d.addr, d.x, d.y, d.z, d.pitch, d.slice_pitch,
            rx, ry, rz,
            r.src_sw(),
            r.dst_sw(),
            r.src_cache_policy(),
            r.dst_cache_policy()
        )
    }
}

impl Display for SdmaWrite<'_> {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "SDMA_WRITE_LINEAR dst={:#x} tmz={} sw={} count={}",
            self.dst(),
            b(self.head.header.tmz()),
            self.head.count.sw(),
            self.data.len()
        )?;
        fmt_data(f, "data", self.data)
    }
}

impl Display for SdmaFence {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        let h = self.header;
        write!(
            f,
            "SDMA_FENCE addr={:#x} data={:#x} mtype={} gcc={} sys={} snp={} gpa={} l2_policy={}",
            self.addr(),
            self.data,
            h.mtype(),
            b(h.gcc()),
            b(h.sys()),
            b(h.snp()),
            b(h.gpa()),
            h.l2_policy()
        )
    }
}

impl Display for SdmaTrap {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        write!(f, "SDMA_TRAP int_context={:#x}", self.context.int_context())
    }
}

impl Display for SdmaPollRegmem {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        let h = self.header;
        write!(
            f,
            "SDMA_POLL_REGMEM func={} mem_poll={} hdp_flush={} addr={:#x} reference={:#x} mask={:#x} interval={} retry_count={:#x}",
            h.func(),
            b(h.mem_poll()),
            b(h.hdp_flush()),
            self.addr(),
            self.reference,
            self.mask,
            self.interval.interval(),
            self.interval.retry_count()
        )
    }
}

impl Display for SdmaConstantFill {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "SDMA_CONSTANT_FILL dst={:#x} data={:#x} bytes={} fillsize={} sw={}",
            self.dst(),
            self.data,
            self.byte_count(),
            self.header.fillsize(),
            self.header.sw()
        )
    }
}

impl Display for SdmaTimestamp {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self.header.sub_op() {
            TimestampOp::Set => write!(f, "SDMA_TIMESTAMP op=SET value={:#x}", self.operand()),
            op => write!(f, "SDMA_TIMESTAMP op={op} addr={:#x}", self.operand()),
        }
    }
}

impl Display for SdmaIndirect {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "SDMA_INDIRECT base={:#x} ib_size={} vmid={} priv={} csa={:#x}",
            self.base(),
            self.ib_size,
            self.header.vmid(),
            b(self.header.privileged()),
            self.csa()
        )
    }
}

impl Display for SdmaPacket<'_> {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            SdmaPacket::Nop(p) => p.fmt(f),
            SdmaPacket::CopyLinear(p) => p.fmt(f),
            SdmaPacket::CopyLinearBroadcast(p) => p.fmt(f),
            SdmaPacket::CopyLinearSubWind(p) => p.fmt(f),
            SdmaPacket::Write(p) => p.fmt(f),
            SdmaPacket::Indirect(p) => p.fmt(f),
            SdmaPacket::Fence(p) => p.fmt(f),
            SdmaPacket::Trap(p) => p.fmt(f),
            SdmaPacket::PollRegmem(p) => p.fmt(f),
            SdmaPacket::ConstantFill(p) => p.fmt(f),
            SdmaPacket::Timestamp(p) => p.fmt(f),
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
