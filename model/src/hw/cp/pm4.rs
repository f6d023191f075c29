//! The PM4 side of the CP: a PM4 ring and the IBs it calls, packet by packet (fetch, decode,
//! execute), with DISPATCH_DIRECT and the scratch its SH registers describe.

use super::{doorbell_id, placement, CpQueue, CpReadPointer, CpState, ShRegisters};
use super::{DMA_BYTES_PER_PASS, MAX_IB_DEPTH};
use crate::hw::engine::{read_linear, read_ring, ExecEnv, Flow, IbFrame, QueueError, RunState};
use crate::hw::ih::{IH_CLIENT_GRBM_CP, SRC_CP_END_OF_PIPE};
use crate::hw::spi::{DispatchSetup, KernelRun, Scratch};
use crate::hw::vm::GpuVm;
use pm4::decode::{decode_pm4_packet, Packet};
use pm4::header::{PacketType, Type3Header};
use pm4::regs::ShReg;
use pm4::user::{
    CopyCountSel, CopyData, CopyDstSel, CopySrcSel, DmaData, DmaDstSel, DmaSrcSel, PollTarget,
    ReleaseDataSel, ReleaseDstSel, ReleaseIntSel, ReleaseMemTail, WriteData, WriteDataTarget,
};
use pm4::GfxGen;
use zerocopy::IntoBytes;

impl CpQueue {
    /// One pass over a PM4 ring: the IB entered first, then the ring's packets up to the write
    /// pointer, at most `budget` of them (counted in `done`).
    pub(super) fn run_pm4(
        &mut self,
        env: &mut ExecEnv<'_>,
        doorbell: u64,
        budget: usize,
        done: &mut usize,
        scratch: &mut Vec<u32>,
    ) -> Result<RunState, QueueError> {
        let ring = self.ring.dwords;
        if ring == 0 {
            return Ok(RunState::Idle);
        }
        let wptr = self.wptr(env, doorbell, ring)?;
        while *done < budget {
            if !self.ibs.is_empty() {
                match self.step_ib(env, scratch)? {
                    Some(s @ (RunState::Parked | RunState::Yielded)) => return Ok(s),
                    Some(_) => *done += 1,
                    None => {}
                }
                continue;
            }
            let CpReadPointer::Pm4(rptr) = self.rptr else {
                return Ok(RunState::Idle);
            };
            let avail = wptr - rptr.get();
            if avail == 0 {
                return Ok(RunState::Idle);
            }
            let slot = rptr.slot(ring);
            let addr = self.ring.base + slot * 4;
            let Some(len) = fetch_pm4(
                env.vm,
                Source::Ring(self.ring.base, ring, slot),
                avail,
                scratch,
            )?
            else {
                // The rest of the packet is not submitted yet.
                return Ok(RunState::Idle);
            };
            let flow = exec_packet(&scratch[..len], addr, self.gen, &mut self.state, env)?;
            match flow {
                Flow::Park => return Ok(RunState::Parked),
                Flow::Yield => return Ok(RunState::Yielded),
                Flow::Next => {}
                Flow::Call(f) | Flow::Chain(f) => self.enter_ib(f)?,
            }
            self.rptr = CpReadPointer::Pm4(rptr.add(len as u64));
            self.report_rptr(env.vm)?;
            *done += 1;
        }
        Ok(RunState::Busy)
    }

    /// One packet of the innermost IB. `Some(state)` when a packet ran (or parked), `None`
    /// when an IB ended.
    pub(super) fn step_ib(
        &mut self,
        env: &mut ExecEnv<'_>,
        scratch: &mut Vec<u32>,
    ) -> Result<Option<RunState>, QueueError> {
        let Some(frame) = self.ibs.last().copied() else {
            return Ok(None);
        };
        if frame.remaining() == 0 {
            self.ibs.pop();
            return Ok(None);
        }
        let addr = frame.cursor();
        let Some(len) = fetch_pm4(
            env.vm,
            Source::Linear(addr),
            u64::from(frame.remaining()),
            scratch,
        )?
        else {
            return Err(QueueError::BadPacket {
                addr,
                reason: format!(
                    "the packet runs past the end of the IB ({} dwords left)",
                    frame.remaining()
                ),
            });
        };
        let flow = exec_packet(&scratch[..len], addr, self.gen, &mut self.state, env)?;
        let top = self.ibs.len() - 1;
        match flow {
            Flow::Park => return Ok(Some(RunState::Parked)),
            Flow::Yield => return Ok(Some(RunState::Yielded)),
            Flow::Next => self.ibs[top].pos += len as u32,
            Flow::Call(f) => {
                self.ibs[top].pos += len as u32;
                self.enter_ib(f)?;
            }
            Flow::Chain(f) => self.ibs[top] = f,
        }
        Ok(Some(RunState::Busy))
    }

    pub(super) fn enter_ib(&mut self, f: IbFrame) -> Result<(), QueueError> {
        if self.ibs.len() >= MAX_IB_DEPTH {
            return Err(QueueError::NotModelled {
                addr: f.addr,
                what: format!("an IB nested deeper than {MAX_IB_DEPTH} levels"),
            });
        }
        if f.dwords > 0 {
            self.ibs.push(f);
        }
        Ok(())
    }
}

/// DISPATCH_DIRECT: the program, resources, user SGPRs and workgroup size from the SH
/// registers SET_SH_REG wrote; the packet's dimensions count workgroups (or work-items with
/// USE_THREAD_DIMENSIONS). Runs for a time slice per pass and yields until every wave ended.
fn dispatch_direct(
    d: &pm4::user::DispatchDirect,
    addr: u64,
    state: &mut CpState,
    env: &mut ExecEnv<'_>,
) -> Result<Flow, QueueError> {
    if state.kernel.is_none() {
        let dims = format!("DISPATCH_DIRECT {}x{}x{}", d.dim_x, d.dim_y, d.dim_z);
        let Some(target) = state.shader_isa else {
            return Err(QueueError::NotModelled {
                addr,
                what: format!("shader execution ({dims}): ISA not modelled for this GPU"),
            });
        };
        let reg = |r: ShReg| state.sh.get(r).unwrap_or(0);
        let pgm = (u64::from(reg(ShReg::COMPUTE_PGM_HI)) << 32
            | u64::from(reg(ShReg::COMPUTE_PGM_LO)))
            << 8;
        // NUM_THREAD_FULL is bits 15:0.
        let workgroup = [
            ShReg::COMPUTE_NUM_THREAD_X,
            ShReg::COMPUTE_NUM_THREAD_Y,
            ShReg::COMPUTE_NUM_THREAD_Z,
        ]
        .map(|r| reg(r) & 0xFFFF);
        let dim = [d.dim_x, d.dim_y, d.dim_z];
        let grid = if d.initiator.use_thread_dimensions() {
            dim
        } else {
            [0, 1, 2].map(|i| dim[i].saturating_mul(workgroup[i]))
        };
        let mut user_data = [0u32; 16];
        for (i, u) in user_data.iter_mut().enumerate() {
            *u = reg(ShReg(ShReg::COMPUTE_USER_DATA_0.0 + i as u32));
        }
        let rsrc2 = reg(ShReg::COMPUTE_PGM_RSRC2);
        let scratch = pm4_scratch(&state.sh);
        let setup = DispatchSetup {
            target,
            packet_addr: addr,
            queue_addr: 0,
            kernel_object: pgm,
            kernarg: 0,
            dispatch_id: 0,
            workgroup,
            grid,
            dynamic_lds: 0,
            private_segment_size: 0,
            scratch,
            user_data: Some(user_data),
            process: state.process,
            doorbell_id: doorbell_id(&env.queue),
            placement: placement(&env.queue, state.shader_array),
        };
        let kept = std::mem::take(&mut state.code);
        let mut run = KernelRun::from_registers(setup, pgm, reg(ShReg::COMPUTE_PGM_RSRC1), rsrc2)?
            .with_cu_threads(state.cu_threads)
            .with_strict(state.strict)
            .with_gws(state.gws.clone())
            .with_code(env.vm, kept);
        if let Some(a) = &state.shader_activity {
            run.watch(a);
        }
        state.kernel = Some(Box::new(run));
    }
    let Some(run) = state.kernel.as_mut() else {
        return Ok(Flow::Next);
    };
    let finished = run.step(env.vm);
    let retry = run.awaits_retry();
    if !matches!(finished, Ok(false)) && !retry {
        run.watch_end(finished.is_err());
    }
    if let Some(ex) = run.exception().cloned() {
        state.kernel = None;
        // A memory violation stops the queue as the VM fault it is.
        if let Some(f) = ex.fault {
            return Err(QueueError::VmFault(f));
        }
        return Err(QueueError::NotModelled {
            addr,
            what: format!("a halted wave ({}) of a PM4 dispatch", ex.what),
        });
    }
    match finished {
        Ok(false) => Ok(Flow::Yield),
        Ok(true) => {
            if let Some(mut run) = state.kernel.take() {
                state.code = run.take_code();
            }
            Ok(Flow::Next)
        }
        Err(e) => {
            if !retry {
                state.kernel = None;
            }
            Err(e)
        }
    }
}

/// `COMPUTE_TMPRING_SIZE.WAVES` (bits 11:0): waves the scratch ring has room for.
const TMPRING_WAVES_MASK: u32 = 0xFFF;
/// `COMPUTE_TMPRING_SIZE.WAVESIZE` (bits 24:12): scratch per wave, in 1 KiB units on gfx9.
const TMPRING_WAVESIZE_SHIFT: u32 = 12;
/// Its width mask.
const TMPRING_WAVESIZE_MASK: u32 = 0x1FFF;
/// Bytes of one `WAVESIZE` unit on gfx9.
const TMPRING_WAVESIZE_UNIT: u32 = 1024;

/// The scratch of a PM4 dispatch, as kfdtest-style clients set it up: `COMPUTE_TMPRING_SIZE`
/// says how many waves fit and how much each gets, `COMPUTE_DISPATCH_SCRATCH_BASE_LO/HI`
/// (address >> 8) where the ring starts; the buffer resource the waves use comes to them in
/// the user SGPRs the client wrote (`COMPUTE_USER_DATA_*`). The SPI gives each wave its offset
/// in the ring in the scratch-wave-offset SGPR.
fn pm4_scratch(sh: &ShRegisters) -> Scratch {
    let reg = |r: ShReg| sh.get(r).unwrap_or(0);
    let tmpring = reg(ShReg::COMPUTE_TMPRING_SIZE);
    let waves = tmpring & TMPRING_WAVES_MASK;
    let wave_bytes =
        (tmpring >> TMPRING_WAVESIZE_SHIFT & TMPRING_WAVESIZE_MASK) * TMPRING_WAVESIZE_UNIT;
    let base = (u64::from(reg(ShReg::COMPUTE_DISPATCH_SCRATCH_BASE_HI)) << 32
        | u64::from(reg(ShReg::COMPUTE_DISPATCH_SCRATCH_BASE_LO)))
        << 8;
    let mut resource = [0u32; 4];
    for (i, r) in resource.iter_mut().enumerate() {
        *r = reg(ShReg(ShReg::COMPUTE_USER_DATA_0.0 + i as u32));
    }
    Scratch {
        resource,
        base,
        size: u64::from(waves) * u64::from(wave_bytes),
        lane_bytes: wave_bytes / isa::exec::WAVE_SIZE as u32,
        max_waves: Some(waves),
    }
}

enum Source {
    /// Ring base, ring size in dwords, slot.
    Ring(u64, u64, u64),
    /// A linear buffer at this address.
    Linear(u64),
}

/// Reads the PM4 packet at `src` into `out`; `None` if it is longer than the `avail` dwords
/// that may be read.
fn fetch_pm4(
    vm: &GpuVm,
    src: Source,
    avail: u64,
    out: &mut Vec<u32>,
) -> Result<Option<usize>, QueueError> {
    let read = |n: usize, out: &mut Vec<u32>| match src {
        Source::Ring(base, ring, slot) => read_ring(vm, base, ring, slot, n, out),
        Source::Linear(addr) => read_linear(vm, addr, n, out),
    };
    read(1, out)?;
    let header = Type3Header::from_bits(out[0]);
    let len = match header.packet_type() {
        PacketType::Type3 => header.total_dwords(),
        // Type 2 is a one-dword filler; types 0 and 1 are rejected by the decoder.
        _ => 1,
    };
    if len as u64 > avail {
        return Ok(None);
    }
    if len > 1 {
        read(len, out)?;
    }
    Ok(Some(len))
}

/// Decodes and executes one PM4 packet of a user queue.
fn exec_packet(
    words: &[u32],
    addr: u64,
    gen: GfxGen,
    state: &mut CpState,
    env: &mut ExecEnv<'_>,
) -> Result<Flow, QueueError> {
    let (packet, _) = decode_pm4_packet(words, gen).map_err(|e| QueueError::BadPacket {
        addr,
        reason: e.to_string(),
    })?;
    log::trace!(target: crate::layer::CP, "{addr:#x}: {packet}");
    let flow = exec_pm4(&packet, addr, state, env)?;
    if flow != Flow::Yield {
        state.progress = 0;
    }
    Ok(flow)
}

/// Executes one decoded PM4 packet of a user queue with the queue's CP state. Every packet
/// kind has its arm: a new one in the packet table makes this match fail to compile.
pub fn exec_pm4(
    p: &Packet<'_>,
    addr: u64,
    state: &mut CpState,
    env: &mut ExecEnv<'_>,
) -> Result<Flow, QueueError> {
    match p {
        // Caches are coherent and the pipeline is idle between packets in the model.
        Packet::Nop(_)
        | Packet::Type2Filler
        | Packet::AcquireMemGfx9(_)
        | Packet::AcquireMemGfx10(_)
        | Packet::EventWrite(_)
        | Packet::EventWriteAddr(_) => Ok(Flow::Next),
        Packet::SetShReg(s) => {
            for (reg, value) in s.registers() {
                state.sh.set(reg, value);
            }
            Ok(Flow::Next)
        }
        // Context registers are graphics state: a compute queue has none to write.
        Packet::SetContextReg(_) => Ok(Flow::Next),
        Packet::WriteData(w) => write_data(w, addr, env),
        Packet::ReleaseMemGfx9(r) => release_mem(&r.tail, addr, env),
        Packet::ReleaseMemGfx10(r) => release_mem(&r.tail, addr, env),
        Packet::WaitRegMem(w) => {
            let value = poll(w.target(), false, env)?;
            let met = w
                .control
                .function()
                .compare(value & u64::from(w.mask), u64::from(w.reference));
            Ok(if met { Flow::Next } else { Flow::Park })
        }
        Packet::WaitRegMem64(w) => {
            let value = poll(w.target(), true, env)?;
            let met = w
                .control
                .function()
                .compare(value & w.mask(), w.reference());
            Ok(if met { Flow::Next } else { Flow::Park })
        }
        Packet::IndirectBuffer(ib) => {
            let f = IbFrame::new(ib.ib_addr(), ib.control.ib_size());
            Ok(if ib.control.chain() {
                Flow::Chain(f)
            } else {
                Flow::Call(f)
            })
        }
        Packet::CopyData(c) => copy_data(c, addr, env),
        Packet::DmaData(d) => dma_data(d, addr, &mut state.progress, env),
        Packet::DispatchDirect(d) => dispatch_direct(d, addr, state, env),
        Packet::SetResources(_)
        | Packet::RunList(_)
        | Packet::MapProcess(_)
        | Packet::MapProcessAldebaran(_)
        | Packet::MapQueues(_)
        | Packet::UnmapQueues(_)
        | Packet::QueryStatus(_) => Err(QueueError::BadPacket {
            addr,
            reason: format!(
                "{} is a scheduler packet; user queues cannot execute it",
                p.name()
            ),
        }),
    }
}

fn register(env: &ExecEnv<'_>, reg: u32) -> u32 {
    env.registers.get(&reg).copied().unwrap_or(0)
}

fn poll(target: PollTarget, wide: bool, env: &ExecEnv<'_>) -> Result<u64, QueueError> {
    Ok(match target {
        PollTarget::Memory(a) if wide => env.vm.load_u64(a)?,
        PollTarget::Memory(a) => u64::from(env.vm.load_u32(a)?),
        PollTarget::Register { reg, .. } => {
            let lo = u64::from(register(env, reg));
            if wide {
                lo | u64::from(register(env, reg + 1)) << 32
            } else {
                lo
            }
        }
    })
}

fn write_data(w: &WriteData<'_>, addr: u64, env: &mut ExecEnv<'_>) -> Result<Flow, QueueError> {
    let one_addr = w.head.control.addr_incr();
    match w.target() {
        Some(WriteDataTarget::Memory(dst)) if one_addr => {
            for &v in w.data {
                env.vm.store_u32(dst, v)?;
            }
        }
        Some(WriteDataTarget::Memory(dst)) => env.vm.write(dst, w.data.as_bytes())?,
        Some(WriteDataTarget::Register(reg)) => {
            for (i, &v) in w.data.iter().enumerate() {
                let r = if one_addr { reg } else { reg + i as u32 };
                env.registers.insert(r, v);
            }
        }
        Some(WriteDataTarget::Gds(_)) => {
            return Err(QueueError::NotModelled {
                addr,
                what: "WRITE_DATA to GDS".into(),
            })
        }
        None => {
            return Err(QueueError::NotModelled {
                addr,
                what: format!("WRITE_DATA to {}", w.head.control.dst_sel()),
            })
        }
    }
    Ok(Flow::Next)
}

fn release_mem(t: &ReleaseMemTail, addr: u64, env: &mut ExecEnv<'_>) -> Result<Flow, QueueError> {
    let c = t.data_control;
    let value = match c.data_sel() {
        ReleaseDataSel::None => None,
        ReleaseDataSel::Data32 => Some((t.data() & 0xFFFF_FFFF, 4)),
        ReleaseDataSel::Data64 => Some((t.data(), 8)),
        ReleaseDataSel::GpuClockCounter | ReleaseDataSel::SystemClockCounter => {
            Some((env.clock.now(), 8))
        }
        other => {
            return Err(QueueError::NotModelled {
                addr,
                what: format!("RELEASE_MEM data_sel {other}"),
            })
        }
    };
    if let Some((v, size)) = value {
        match c.dst_sel() {
            ReleaseDstSel::MemoryController | ReleaseDstSel::TcL2 => {
                if size == 8 {
                    env.vm.store_u64(t.addr(), v)?;
                } else {
                    env.vm.store_u32(t.addr(), v as u32)?;
                }
            }
            other => {
                return Err(QueueError::NotModelled {
                    addr,
                    what: format!("RELEASE_MEM dst_sel {other}"),
                })
            }
        }
    }
    let interrupt = match c.int_sel() {
        ReleaseIntSel::None | ReleaseIntSel::SendDataAfterWriteConfirm => false,
        ReleaseIntSel::SendInterruptOnly
        | ReleaseIntSel::SendInterruptAfterWriteConfirm
        | ReleaseIntSel::UnconditionallySendIntCtxid => true,
        // The conditional forms compare the memory at the address with the data dwords.
        ReleaseIntSel::ConditionallySendIntCtxidBasedOn32BitCompare => {
            u64::from(env.vm.load_u32(t.addr())?) == t.data() & 0xFFFF_FFFF
        }
        ReleaseIntSel::ConditionallySendIntCtxidBasedOn64BitCompare => {
            env.vm.load_u64(t.addr())? == t.data()
        }
        other => {
            return Err(QueueError::BadPacket {
                addr,
                reason: format!("RELEASE_MEM int_sel {other}"),
            })
        }
    };
    if interrupt {
        env.interrupt(
            IH_CLIENT_GRBM_CP,
            SRC_CP_END_OF_PIPE,
            [t.int_ctxid, 0, 0, 0],
        );
    }
    Ok(Flow::Next)
}

fn copy_data(cd: &CopyData, addr: u64, env: &mut ExecEnv<'_>) -> Result<Flow, QueueError> {
    let c = cd.control;
    let wide = c.count_sel() == CopyCountSel::Bits64;
    let value = match c.src_sel() {
        CopySrcSel::MemMappedRegister => {
            let reg = (cd.src() & 0x3FFFF) as u32;
            let lo = u64::from(register(env, reg));
            if wide {
                lo | u64::from(register(env, reg + 1)) << 32
            } else {
                lo
            }
        }
        CopySrcSel::Memory | CopySrcSel::TcL2 if wide => env.vm.load_u64(cd.src())?,
        CopySrcSel::Memory | CopySrcSel::TcL2 => u64::from(env.vm.load_u32(cd.src())?),
        CopySrcSel::ImmediateData if wide => cd.src(),
        CopySrcSel::ImmediateData => cd.src() & 0xFFFF_FFFF,
        CopySrcSel::GpuClockCount | CopySrcSel::SystemClockCount => env.clock.now(),
        other => {
            return Err(QueueError::NotModelled {
                addr,
                what: format!("COPY_DATA from {other}"),
            })
        }
    };
    match c.dst_sel() {
        CopyDstSel::MemMappedRegister | CopyDstSel::MemMappedRegisterDc => {
            let reg = (cd.dst() & 0x3FFFF) as u32;
            env.registers.insert(reg, value as u32);
            if wide {
                env.registers.insert(reg + 1, (value >> 32) as u32);
            }
        }
        CopyDstSel::Memory | CopyDstSel::TcL2 if wide => env.vm.store_u64(cd.dst(), value)?,
        CopyDstSel::Memory | CopyDstSel::TcL2 => env.vm.store_u32(cd.dst(), value as u32)?,
        other => {
            return Err(QueueError::NotModelled {
                addr,
                what: format!("COPY_DATA to {other}"),
            })
        }
    }
    Ok(Flow::Next)
}

/// DMA_DATA; `progress` is the bytes an earlier pass already did of this packet.
fn dma_data(
    d: &DmaData,
    addr: u64,
    progress: &mut u64,
    env: &mut ExecEnv<'_>,
) -> Result<Flow, QueueError> {
    let cmd = d.command;
    let n = u64::from(cmd.byte_count());
    if cmd.sas() || cmd.das() {
        return Err(QueueError::NotModelled {
            addr,
            what: "DMA_DATA with a register address space".into(),
        });
    }
    enum Src {
        Mem(u64),
        Fill(u32),
    }
    let src = match d.control.src_sel() {
        DmaSrcSel::SrcAddr | DmaSrcSel::SrcAddrTcL2 => Src::Mem(d.src()),
        DmaSrcSel::Data => Src::Fill(d.src_addr_lo),
        other => {
            return Err(QueueError::NotModelled {
                addr,
                what: format!("DMA_DATA from {other}"),
            })
        }
    };
    let dst = match d.control.dst_sel() {
        DmaDstSel::DstAddr | DmaDstSel::DstAddrTcL2 => Some(d.dst()),
        DmaDstSel::Nowhere => None,
        other => {
            return Err(QueueError::NotModelled {
                addr,
                what: format!("DMA_DATA to {other}"),
            })
        }
    };
    if n == 0 {
        return Ok(Flow::Next);
    }
    let vm = env.vm;
    // A plain copy between disjoint ranges or a fill runs DMA_BYTES_PER_PASS at a time.
    let chunked = !cmd.saic() && !cmd.daic() && n > DMA_BYTES_PER_PASS;
    match (&src, dst) {
        (Src::Mem(s), Some(t))
            if chunked && (t.saturating_add(n) <= *s || s.saturating_add(n) <= t) =>
        {
            let from = (*progress).min(n);
            let len = (n - from).min(DMA_BYTES_PER_PASS);
            vm.copy(t.wrapping_add(from), s.wrapping_add(from), len)?;
            return Ok(advance(progress, from + len, n));
        }
        (Src::Fill(v), Some(t)) if chunked => {
            let from = (*progress).min(n);
            let len = (n - from).min(DMA_BYTES_PER_PASS);
            vm.fill_u32(t.wrapping_add(from), len, *v)?;
            return Ok(advance(progress, from + len, n));
        }
        _ => {}
    }
    match (src, dst) {
        (Src::Mem(s), None) => vm.probe(s, if cmd.saic() { 4 } else { n }, false)?,
        (Src::Fill(_), None) => {}
        (Src::Fill(v), Some(t)) if cmd.daic() => vm.store_u32(t, v)?,
        (Src::Fill(v), Some(t)) => vm.fill_u32(t, n, v)?,
        (Src::Mem(s), Some(t)) if cmd.saic() => {
            let v = vm.load_u32(s)?;
            if cmd.daic() {
                vm.store_u32(t, v)?;
            } else {
                vm.fill_u32(t, n, v)?;
            }
        }
        (Src::Mem(s), Some(t)) if cmd.daic() => {
            // Every dword lands on the same address: the last one stays.
            vm.probe(s, n, false)?;
            let last = s.wrapping_add(n.saturating_sub(4) / 4 * 4);
            let v = vm.load_u32(last)?;
            vm.store_u32(t, v)?;
        }
        (Src::Mem(s), Some(t)) => vm.copy(t, s, n)?,
    }
    Ok(Flow::Next)
}

/// Records that `done` of `total` bytes are done: the packet yields until all are.
fn advance(progress: &mut u64, done: u64, total: u64) -> Flow {
    if done < total {
        *progress = done;
        Flow::Yield
    } else {
        Flow::Next
    }
}
