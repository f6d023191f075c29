//! The SDMA engines: execute the user SDMA queues the scheduler mapped into an engine's
//! queue slots (RLC queues), as their MQDs describe them.
//!
//! The write pointer is a monotonic **byte** counter (from the write-pointer address the
//! driver gave MAP_QUEUES and from the doorbell); the engine writes its read pointer back as a
//! 64-bit monotonic byte count to `sdmax_rlcx_rb_rptr_addr`. Packets: NOP, COPY_LINEAR,
//! COPY_LINEAR_SUB_WIND (a box between two pitched surfaces, row by row; a large one spans
//! several passes), WRITE, FENCE, TRAP (an interrupt carrying the 28-bit context), POLL_REGMEM (an unmet poll parks
//! the queue; the retry count is not modelled, every poll waits until it is met),
//! CONSTANT_FILL, TIMESTAMP and INDIRECT (one level).

use crate::hw::engine::{
    read_linear, read_ring, write_pointer, ExecEnv, Flow, IbFrame, QueueError, QueueIdentity,
    QueueRun, QueueStatus, RunState,
};
use crate::hw::hws::HqdSlot;
use crate::hw::ih::{
    IH_CLIENT_GRBM_CP, IH_CLIENT_SDMA0, IH_CLIENT_VMC, SRC_SDMA_TRAP, SRC_SDMA_TRAP_SOC21,
};
use crate::hw::vm::{GpuVm, VmFault};
use mqd::{SdmaDescriptor, SdmaMqd};
use pm4::decode::{decode_sdma_packet, DecodeErrorKind, SdmaPacket};
use pm4::ring::SdmaBytePtr;
use pm4::sdma::{FillSize, SdmaCopyLinearSubWind, SubWindSurface, TimestampOp};
use pm4::SdmaGen;
use zerocopy::IntoBytes;

/// Dwords the engine fetches at once when it does not know a packet's length yet.
const FETCH_WINDOW: u64 = 16;

/// Most rows of a COPY_LINEAR_SUB_WIND box one pass copies; the packet yields and goes on
/// in the next pass (a box can hold 2^25 rows and 2^43 bytes).
const SUB_WIND_ROWS_PER_PASS: u64 = 4096;
/// Most bytes of a COPY_LINEAR_SUB_WIND box one pass copies (a COPY_LINEAR's largest count).
const SUB_WIND_BYTES_PER_PASS: u64 = 4 << 20;

/// Where an SDMA queue's ring and pointers are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SdmaRing {
    /// Ring base address.
    pub base: u64,
    /// Ring size in bytes.
    pub bytes: u64,
    /// Where the read pointer is written back.
    pub rptr_writeback: u64,
    /// Where the write pointer is read (MAP_QUEUES; SDMA 6 MQDs also carry it).
    pub wptr_addr: u64,
}

impl SdmaRing {
    /// The ring an MQD describes.
    pub fn from_mqd(mqd: &SdmaMqd, wptr_addr: u64) -> SdmaRing {
        SdmaRing {
            base: mqd.ring_base_address(),
            bytes: mqd.ring_size_bytes(),
            rptr_writeback: mqd.rptr_writeback_address(),
            wptr_addr: if wptr_addr != 0 {
                wptr_addr
            } else {
                mqd.wptr_poll_address().unwrap_or(0)
            },
        }
    }
}

/// The execution context of one SDMA queue.
#[derive(Debug, Clone)]
pub struct SdmaQueue {
    /// The ring.
    pub ring: SdmaRing,
    /// Who the queue is.
    pub id: QueueIdentity,
    rptr: SdmaBytePtr,
    last_wptr: SdmaBytePtr,
    ib: Option<IbFrame>,
    timestamp_offset: u64,
    status: QueueStatus,
    gen: SdmaGen,
    scratch: Vec<u32>,
    /// Rows of the running COPY_LINEAR_SUB_WIND earlier passes copied (0 between packets).
    progress: u64,
}

impl SdmaQueue {
    /// A context for a queue mapped for the first time (read pointer from the MQD's saved
    /// `sdmax_rlcx_rb_rptr`, 0 for a new queue).
    pub fn from_mqd(mqd: &SdmaMqd, wptr_addr: u64, id: QueueIdentity, gen: SdmaGen) -> SdmaQueue {
        SdmaQueue {
            ring: SdmaRing::from_mqd(mqd, wptr_addr),
            id,
            rptr: SdmaBytePtr::new(mqd.ring_rptr()),
            last_wptr: SdmaBytePtr::new(mqd.ring_wptr()),
            ib: None,
            timestamp_offset: 0,
            status: QueueStatus::default(),
            gen,
            scratch: Vec::new(),
            progress: 0,
        }
    }

    /// Mapped again: the queue resumes (retrying a faulted packet); a changed ring starts a
    /// new context from the MQD's saved pointers (SDMA saves them monotonic, in bytes).
    pub fn remap(&mut self, mqd: &SdmaMqd, wptr_addr: u64, id: QueueIdentity) {
        self.id = id;
        let ring = SdmaRing::from_mqd(mqd, wptr_addr);
        if ring != self.ring {
            *self = SdmaQueue::from_mqd(mqd, wptr_addr, id, self.gen);
            return;
        }
        self.status.retry_after_fault();
    }

    /// Forgets the error that stopped the queue (a GPU reset restarts the engines).
    pub fn clear_error(&mut self) {
        self.status.clear_error();
        self.progress = 0;
    }

    /// The read pointer.
    pub fn rptr(&self) -> SdmaBytePtr {
        self.rptr
    }

    /// The last write pointer seen.
    pub fn last_wptr(&self) -> SdmaBytePtr {
        self.last_wptr
    }

    /// Why the queue stopped, if it did.
    pub fn error(&self) -> Option<&QueueError> {
        self.status.error()
    }

    /// Parked on a poll at the end of its last pass.
    pub fn is_parked(&self) -> bool {
        self.status.is_parked()
    }

    /// Packets executed so far.
    pub fn packets(&self) -> u64 {
        self.status.packets()
    }

    /// What the MQD saves: the ring read and write pointers in bytes.
    pub fn save(&self, mqd: &mut SdmaMqd) {
        mqd.set_ring_rptr(self.rptr.get());
        mqd.set_ring_wptr(self.last_wptr.get());
    }

    /// Runs the queue for one pass of at most `budget` packets.
    pub fn run(&mut self, env: &mut ExecEnv<'_>, doorbell: u64, budget: usize) -> QueueRun {
        if let Some(r) = self.status.halted_run() {
            return r;
        }
        let mut scratch = std::mem::take(&mut self.scratch);
        let mut done = 0usize;
        let result = self.run_inner(env, doorbell, budget, &mut done, &mut scratch);
        self.scratch = scratch;
        let (id, client) = (self.id, self.client());
        self.status
            .finish(done, result, &id, crate::layer::SDMA, |e| {
                crate::hw::cp::post_queue_error(env, client, IH_CLIENT_VMC, e)
            })
    }

    fn client(&self) -> u8 {
        match self.id.slot {
            HqdSlot::Sdma { engine, .. } => IH_CLIENT_SDMA0.wrapping_add(engine),
            HqdSlot::Compute { .. } => IH_CLIENT_SDMA0,
        }
    }

    fn run_inner(
        &mut self,
        env: &mut ExecEnv<'_>,
        doorbell: u64,
        budget: usize,
        done: &mut usize,
        scratch: &mut Vec<u32>,
    ) -> Result<RunState, QueueError> {
        let ring = self.ring.bytes;
        if ring < 4 {
            return Ok(RunState::Idle);
        }
        let wptr = write_pointer(env.vm, self.ring.wptr_addr, doorbell);
        let rptr = self.rptr.get();
        if wptr < rptr || wptr - rptr > ring || wptr % 4 != 0 {
            return Err(QueueError::WritePointer {
                wptr,
                rptr,
                ring,
                unit: "bytes (dword aligned)",
            });
        }
        self.last_wptr = SdmaBytePtr::new(wptr);
        let ring_dw = ring / 4;
        while *done < budget {
            if self.ib.is_some() {
                match self.ib_step(env, scratch)? {
                    None => {}
                    Some(Flow::Park) => return Ok(RunState::Parked),
                    Some(Flow::Yield) => return Ok(RunState::Yielded),
                    Some(_) => *done += 1,
                }
                continue;
            }
            let avail = (wptr - self.rptr.get()) / 4;
            if avail == 0 {
                return Ok(RunState::Idle);
            }
            let slot = (self.rptr.get() / 4) % ring_dw;
            let addr = self.ring.base + slot * 4;
            let base = self.ring.base;
            let src = |n: usize, out: &mut Vec<u32>| read_ring(env.vm, base, ring_dw, slot, n, out);
            let Some(len) = fetch_sdma(src, avail, self.gen, scratch)? else {
                return Ok(RunState::Idle);
            };
            let flow = self.exec(&scratch[..len], addr, env)?;
            match flow {
                Flow::Park => return Ok(RunState::Parked),
                Flow::Yield => return Ok(RunState::Yielded),
                Flow::Next => {}
                Flow::Call(f) | Flow::Chain(f) => {
                    if f.dwords > 0 {
                        self.ib = Some(f);
                    }
                }
            }
            self.rptr = self.rptr.add(4 * len as u64);
            self.write_back(env.vm)?;
            *done += 1;
        }
        Ok(RunState::Busy)
    }

    /// Runs the next packet of the current IB: `None` when the IB is done (and dropped), else
    /// what the packet asks; the IB moves past it unless it waits (`Park`) or yields.
    fn ib_step(
        &mut self,
        env: &mut ExecEnv<'_>,
        scratch: &mut Vec<u32>,
    ) -> Result<Option<Flow>, QueueError> {
        let Some(frame) = self.ib else {
            return Ok(None);
        };
        if frame.remaining() == 0 {
            self.ib = None;
            return Ok(None);
        }
        let addr = frame.cursor();
        let avail = u64::from(frame.remaining());
        let src = |n: usize, out: &mut Vec<u32>| read_linear(env.vm, addr, n, out);
        let Some(len) = fetch_sdma(src, avail, self.gen, scratch)? else {
            return Err(QueueError::BadPacket {
                addr,
                reason: format!("the packet runs past the end of the IB ({avail} dwords left)"),
            });
        };
        let flow = self.exec(&scratch[..len], addr, env)?;
        match flow {
            Flow::Park | Flow::Yield => {}
            Flow::Next => {
                if let Some(f) = self.ib.as_mut() {
                    f.pos += len as u32;
                }
            }
            Flow::Call(_) | Flow::Chain(_) => {
                return Err(QueueError::NotModelled {
                    addr,
                    what: "an SDMA INDIRECT inside an IB".into(),
                })
            }
        }
        Ok(Some(flow))
    }

    /// An indirect buffer the graphics driver submits to this engine (a render node's
    /// `DRM_AMDGPU_CS` on an SDMA ring), run to its end through `env.vm`: the packets it ran.
    /// A packet that would wait (an unmet `POLL_REGMEM`) is not modelled here, nor is an IB of
    /// more than `budget` packets.
    pub fn run_submitted_ib(
        gen: SdmaGen,
        id: QueueIdentity,
        ib: IbFrame,
        env: &mut ExecEnv<'_>,
        budget: usize,
    ) -> Result<usize, QueueError> {
        let mut engine = SdmaQueue {
            ring: SdmaRing {
                base: 0,
                bytes: 0,
                rptr_writeback: 0,
                wptr_addr: 0,
            },
            id,
            rptr: SdmaBytePtr::new(0),
            last_wptr: SdmaBytePtr::new(0),
            ib: Some(ib),
            timestamp_offset: 0,
            status: QueueStatus::default(),
            gen,
            scratch: Vec::new(),
            progress: 0,
        };
        let mut scratch = Vec::new();
        let mut ran = 0;
        for _ in 0..budget {
            match engine.ib_step(env, &mut scratch)? {
                None => return Ok(ran),
                Some(Flow::Park) => {
                    return Err(QueueError::NotModelled {
                        addr: ib.addr,
                        what: "a submitted IB that waits (POLL_REGMEM)".into(),
                    })
                }
                Some(Flow::Yield) => {}
                Some(_) => ran += 1,
            }
        }
        Err(QueueError::NotModelled {
            addr: ib.addr,
            what: format!("a submitted IB of more than {budget} packets"),
        })
    }

    fn write_back(&self, vm: &GpuVm) -> Result<(), VmFault> {
        if self.ring.rptr_writeback == 0 {
            return Ok(());
        }
        vm.store_u64(self.ring.rptr_writeback, self.rptr.get())
    }

    fn exec(
        &mut self,
        words: &[u32],
        addr: u64,
        env: &mut ExecEnv<'_>,
    ) -> Result<Flow, QueueError> {
        if words.first().is_some_and(|&w| w & 0xFF == SDMA_OP_ATOMIC) {
            sdma_atomic(words, addr, env.vm)?;
            return Ok(Flow::Next);
        }
        let (packet, _) =
            decode_sdma_packet(words, self.gen).map_err(|e| QueueError::BadPacket {
                addr,
                reason: e.to_string(),
            })?;
        log::trace!(target: crate::layer::SDMA, "{addr:#x}: {packet}");
        let vm = env.vm;
        match packet {
            SdmaPacket::Nop(_) => {}
            SdmaPacket::CopyLinear(c) => vm.copy(c.dst(), c.src(), c.byte_count())?,
            SdmaPacket::CopyLinearBroadcast(c) => {
                for dst in c.dsts() {
                    vm.copy(dst, c.src(), c.byte_count())?;
                }
            }
            SdmaPacket::CopyLinearSubWind(c) => {
                return Ok(copy_sub_wind(&c, &mut self.progress, vm)?)
            }
            SdmaPacket::Write(w) => vm.write(w.dst(), w.data.as_bytes())?,
            SdmaPacket::Fence(f) => vm.store_u32(f.addr(), f.data)?,
            SdmaPacket::Trap(t) => {
                let (client, source) = if self.gen.major() == 6 {
                    (IH_CLIENT_GRBM_CP, SRC_SDMA_TRAP_SOC21)
                } else {
                    (self.client(), SRC_SDMA_TRAP)
                };
                env.interrupt(client, source, [t.context.int_context(), 0, 0, 0]);
            }
            SdmaPacket::PollRegmem(p) => {
                let value = if p.header.mem_poll() {
                    vm.load_u32(p.addr())?
                } else {
                    // Register addresses are byte offsets.
                    let reg = (p.addr() >> 2) as u32;
                    env.registers.get(&reg).copied().unwrap_or(0)
                };
                let met = p
                    .header
                    .func()
                    .compare(u64::from(value & p.mask), u64::from(p.reference));
                if !met {
                    return Ok(Flow::Park);
                }
            }
            SdmaPacket::ConstantFill(f) => match f.header.fillsize() {
                // With dword fills the two low bits of the count are ignored.
                FillSize::Dword => vm.fill_u32(f.dst(), ((f.byte_count() - 1) & !3) + 4, f.data)?,
                FillSize::Byte => {
                    vm.fill_u32(f.dst(), f.byte_count(), (f.data & 0xFF) * 0x0101_0101)?
                }
                other => {
                    return Err(QueueError::BadPacket {
                        addr,
                        reason: format!("CONSTANT_FILL fillsize {other}"),
                    })
                }
            },
            SdmaPacket::Timestamp(t) => {
                let now = env.clock.now();
                match t.header.sub_op() {
                    TimestampOp::Set => self.timestamp_offset = t.operand().wrapping_sub(now),
                    TimestampOp::Get => {
                        vm.store_u64(t.operand(), now.wrapping_add(self.timestamp_offset))?
                    }
                    TimestampOp::GetGlobal => vm.store_u64(t.operand(), now)?,
                    other => {
                        return Err(QueueError::BadPacket {
                            addr,
                            reason: format!("TIMESTAMP sub-op {other}"),
                        })
                    }
                }
            }
            SdmaPacket::Indirect(i) => {
                return Ok(Flow::Call(IbFrame::new(i.base(), i.ib_size & 0xF_FFFF)))
            }
        }
        Ok(Flow::Next)
    }
}

/// COPY_LINEAR_SUB_WIND: copies the box row by row (x fastest, then y, then z) through the
/// VM, from row `*progress` on and at most [`SUB_WIND_ROWS_PER_PASS`] rows /
/// [`SUB_WIND_BYTES_PER_PASS`] bytes per pass. A fault leaves `*progress` at the faulting row,
/// so a retry after the queue is mapped again goes on from there.
fn copy_sub_wind(
    c: &SdmaCopyLinearSubWind,
    progress: &mut u64,
    vm: &GpuVm,
) -> Result<Flow, VmFault> {
    // The decoder accepts elementsize 0..=4 only.
    let es = u32::from(c.header.elementsize());
    let (src, dst, [width, height, depth]) = (c.src(), c.dst(), c.rect());
    let row_bytes = u64::from(width) << es;
    let height = u64::from(height);
    let rows = height * u64::from(depth);
    // Byte address of the first element of row (y, z) of the box in surface `s`. Every term
    // is below 2^41 elements, so nothing overflows before the wrapping add to the base.
    let at = |s: &SubWindSurface, y: u64, z: u64| {
        let elements = u64::from(s.x)
            + (u64::from(s.y) + y) * u64::from(s.pitch)
            + (u64::from(s.z) + z) * u64::from(s.slice_pitch);
        s.addr.wrapping_add(elements << es)
    };
    let mut row = (*progress).min(rows);
    let (mut n, mut bytes) = (0u64, 0u64);
    while row < rows {
        if n == SUB_WIND_ROWS_PER_PASS || (n > 0 && bytes + row_bytes > SUB_WIND_BYTES_PER_PASS) {
            *progress = row;
            return Ok(Flow::Yield);
        }
        let (y, z) = (row % height, row / height);
        if let Err(e) = vm.copy(at(&dst, y, z), at(&src, y, z), row_bytes) {
            *progress = row;
            return Err(e);
        }
        row += 1;
        n += 1;
        bytes += row_bytes;
    }
    *progress = 0;
    Ok(Flow::Next)
}

/// Reads the SDMA packet at the source into `out` (a window first, the whole packet when the
/// decoder says it is longer); `None` if it is longer than the `avail` dwords.
/// SDMA ATOMIC (op 10, 8 dwords): dw0 `atomic_op` [31:25], loop [16]; dw1/2 address; dw3/4
/// source; dw5/6 compare; dw7 loop interval. ROCr completes its SDMA copies' signals with it.
const SDMA_OP_ATOMIC: u32 = 10;
const SDMA_ATOMIC_DWORDS: usize = 8;
/// `atomic_op` ADD64 (what ROCr's signal decrement uses, with source -1).
const SDMA_ATOMIC_ADD64: u32 = 47;

fn sdma_atomic(words: &[u32], addr: u64, vm: &GpuVm) -> Result<(), QueueError> {
    let [dw0, a_lo, a_hi, s_lo, s_hi, ..] = *words else {
        return Err(QueueError::BadPacket {
            addr,
            reason: format!("SDMA ATOMIC needs {SDMA_ATOMIC_DWORDS} dwords"),
        });
    };
    let op = dw0 >> 25;
    if op != SDMA_ATOMIC_ADD64 || dw0 & (1 << 16) != 0 {
        return Err(QueueError::NotModelled {
            addr,
            what: format!("SDMA ATOMIC operation {op} (loop {})", dw0 >> 16 & 1),
        });
    }
    let target = u64::from(a_lo) | u64::from(a_hi) << 32;
    let src = u64::from(s_lo) | u64::from(s_hi) << 32;
    vm.fetch_add_u64(target, src)?;
    Ok(())
}

fn fetch_sdma(
    read: impl Fn(usize, &mut Vec<u32>) -> Result<(), VmFault>,
    avail: u64,
    gen: SdmaGen,
    out: &mut Vec<u32>,
) -> Result<Option<usize>, QueueError> {
    let window = avail.min(FETCH_WINDOW) as usize;
    read(window, out)?;
    let needed = match decode_sdma_packet(out, gen) {
        // ATOMIC is executed from its raw dwords (see `sdma_atomic`).
        _ if out.first().is_some_and(|&w| w & 0xFF == SDMA_OP_ATOMIC) => SDMA_ATOMIC_DWORDS,
        Ok((_, len)) => return Ok(Some(len)),
        Err(e) => match e.kind {
            DecodeErrorKind::Truncated { needed, .. } => needed,
            // Malformed: let the executor report it with its address.
            _ => return Ok(Some(window)),
        },
    };
    if needed as u64 > avail {
        return Ok(None);
    }
    read(needed, out)?;
    Ok(Some(needed))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hw::clock::GpuClock;
    use crate::hw::engine::PASS_BUDGET;
    use crate::hw::ih::IhRing;
    use crate::hw::mem::DeviceMemory;
    use crate::hw::vm::{Backing, VmMapping};
    use pm4::sdma::{SdmaCopyLinear, SdmaFence, SdmaTrap};
    use pm4::PacketWriter;
    use std::collections::BTreeMap;
    use std::sync::Arc;

    #[test]
    fn copy_fence_trap_and_read_pointer_write_back() {
        const BASE: u64 = 0x40_0000;
        let mem = Arc::new(DeviceMemory::new("sdma-test", 0x10000).unwrap());
        let mut vm = GpuVm::new();
        vm.map(VmMapping {
            va: BASE,
            len: 0x10000,
            backing: Backing::Device {
                mem: mem.clone(),
                offset: 0,
            },
            writable: true,
            handle: 1,
        });
        mem.write(0x4000, b"hello sdma!!").unwrap();
        let mut ring = [0u32; 32];
        let mut w = PacketWriter::new(&mut ring);
        w.push(&SdmaCopyLinear::new(SdmaGen::Sdma4, BASE + 0x4000, BASE + 0x5000, 12).unwrap())
            .unwrap();
        w.push(&SdmaFence::new(BASE + 0x6000, 0xF00D).unwrap())
            .unwrap();
        w.push(&SdmaTrap::new(5).unwrap()).unwrap();
        let n = w.len();
        mem.write(0, ring[..n].as_bytes()).unwrap();
        let id = QueueIdentity {
            slot: HqdSlot::Sdma {
                engine: 1,
                queue: 0,
            },
            pasid: 0x8002,
            vmid: 9,
            doorbell_offset: 0x1000 + 2 * 0x10a,
        };
        let mut q = SdmaQueue {
            ring: SdmaRing {
                base: BASE,
                bytes: 4096,
                rptr_writeback: BASE + 0x8000,
                wptr_addr: BASE + 0x8008,
            },
            id,
            rptr: SdmaBytePtr::new(0),
            last_wptr: SdmaBytePtr::new(0),
            ib: None,
            timestamp_offset: 0,
            status: QueueStatus::default(),
            gen: SdmaGen::Sdma4,
            scratch: Vec::new(),
            progress: 0,
        };
        mem.store_u64(0x8008, 4 * n as u64).unwrap();
        let clock = GpuClock::new();
        let ih = IhRing::new();
        let mut regs = BTreeMap::new();
        let mut env = ExecEnv {
            vm: &vm,
            clock: &clock,
            registers: &mut regs,
            ih: &ih,
            queue: id,
        };
        assert_eq!(
            q.run(&mut env, 0, PASS_BUDGET),
            QueueRun {
                packets: 3,
                state: RunState::Idle
            }
        );
        let mut out = [0u8; 12];
        mem.read(0x5000, &mut out).unwrap();
        assert_eq!(&out, b"hello sdma!!");
        assert_eq!(mem.load_u32(0x6000), Some(0xF00D));
        assert_eq!(mem.load_u64(0x8000), Some(4 * n as u64), "monotonic bytes");
        let irq = ih.drain();
        assert_eq!(
            (irq[0].client_id, irq[0].source_id, irq[0].src_data[0]),
            (IH_CLIENT_SDMA0 + 1, SRC_SDMA_TRAP, 5)
        );
    }
}
