//! Running compiled blocks: the steps in order, each on the interpreter's kernels, with the
//! interpreter taking any instruction (or whole block) the compiled form does not cover.

use super::super::cache::CodeCache;
use super::super::env::WaveEnv;
use super::super::fault::Stop;
use super::super::wave::{write_masked, Lanes, Wave, WAVE_SIZE};
use super::{Block, Blocks, Placed, Step, SADDR_OFF};

/// What a block run ended with.
enum Exit {
    /// Every step ran (or an interpreted step left the block); `ran` instructions retired or
    /// were attempted, go on at the wave's PC.
    Continue { ran: u64 },
    /// The wave stopped.
    Stop(Stop),
}

impl Wave {
    /// [`Wave::run`] through the compiled blocks of `blocks`: the same instructions, results,
    /// stops and faults as the interpreter, at most `budget` instructions.
    pub(crate) fn run_compiled<E: WaveEnv + ?Sized>(
        &mut self,
        code: &CodeCache,
        blocks: &Blocks,
        env: &mut E,
        budget: u64,
    ) -> Stop {
        self.run_compiled_until::<E, false>(code, blocks, env, budget)
    }

    /// [`Wave::run_compiled`], and with `MEMORY_WAIT` the early end of
    /// [`Wave::run_to_memory_wait`]: a block that holds a VM_CNT wait, entered once a load
    /// may be pending (issued before it or within it), runs an instruction at a time.
    #[inline(always)]
    pub(crate) fn run_compiled_until<E: WaveEnv + ?Sized, const MEMORY_WAIT: bool>(
        &mut self,
        code: &CodeCache,
        blocks: &Blocks,
        env: &mut E,
        budget: u64,
    ) -> Stop {
        if self.halted() {
            return Stop::Halt;
        }
        let mut left = budget;
        let mut loads_issued = false;
        while left > 0 {
            let block = match blocks.at(code, self.pc) {
                Some(b)
                    if !self.mode.gpr_idx()
                        && b.steps.len() as u64 <= left
                        && self.vgpr.len() >= b.vgpr_end
                        && !(MEMORY_WAIT
                            && b.waits_for_vector_memory
                            && (loads_issued || b.issues_vector_memory)) =>
                {
                    b
                }
                // VGPR index mode, a block past the budget or the wave's registers, a block
                // with a wait the run must stop at, or no block here: the interpreter runs one
                // instruction (and reports what it finds)
                _ => {
                    if MEMORY_WAIT {
                        if let Some(Ok(c)) = code.get(self.pc) {
                            if loads_issued && super::super::interp::waits_for_vector_memory(c) {
                                return Stop::BudgetExhausted;
                            }
                            loads_issued |= super::super::interp::issues_vector_memory(c);
                        }
                    }
                    match self.interpret(code, env, 1) {
                        Stop::BudgetExhausted => {
                            left -= 1;
                            continue;
                        }
                        stop => return stop,
                    }
                }
            };
            loads_issued |= MEMORY_WAIT && block.issues_vector_memory;
            match self.run_block(code, block, env) {
                Exit::Continue { ran } => left -= ran,
                Exit::Stop(stop) => return stop,
            }
        }
        Stop::BudgetExhausted
    }

    /// Runs `block` from its first step; the caller checked that its registers exist, that the
    /// budget covers it and that VGPR index mode is off.
    #[inline(always)]
    fn run_block<E: WaveEnv + ?Sized>(
        &mut self,
        code: &CodeCache,
        block: &Block,
        env: &mut E,
    ) -> Exit {
        for (i, p) in block.steps.iter().enumerate() {
            let done = match p.step {
                Step::Valu(ref f) => self.run_fast(f),
                Step::Salu(ref f) => {
                    self.run_scalar(f);
                    true
                }
                Step::Nop => true,
                Step::Branch { cond, target } => {
                    self.pc = if self.branch_taken(cond) {
                        target
                    } else {
                        p.next
                    };
                    self.retired += 1;
                    return Exit::Continue {
                        ran: block.steps.len() as u64,
                    };
                }
                Step::GlobalLoadDword {
                    vaddr,
                    saddr,
                    vdst,
                    offset,
                } => match self.dword_run_start(vaddr, saddr, offset) {
                    Some(start) => env.load_run(start, &mut self.vgpr[usize::from(vdst)]),
                    None => false,
                },
                Step::GlobalStoreDword {
                    vaddr,
                    saddr,
                    vdata,
                    offset,
                } => match self.dword_run_start(vaddr, saddr, offset) {
                    Some(start) => env.store_run(start, &self.vgpr[usize::from(vdata)]),
                    None => false,
                },
                Step::DsReadB32 { addr, vdst, offset } => self.ds_read_b32(env, addr, vdst, offset),
                Step::DsRead2B32 {
                    addr,
                    vdst,
                    offsets,
                } => self.ds_read2_b32(env, addr, vdst, offsets),
                Step::DsWriteB32 { addr, data, offset } => {
                    self.ds_write_b32(env, addr, data, offset)
                }
                Step::Interp => false,
            };
            if done {
                self.retired += 1;
                continue;
            }
            // the interpreter runs this instruction, from its own address
            if let Some(exit) = self.interpret_step(code, p, env, i as u64 + 1) {
                return exit;
            }
        }
        if let Some(last) = block.steps.last() {
            self.pc = last.next;
        }
        Exit::Continue {
            ran: block.steps.len() as u64,
        }
    }

    /// One instruction of a block by the interpreter (`ran`: steps of the block so far, this
    /// one included). `None` to go on with the block's next step; otherwise how the block
    /// ends: a stop, or a PC the instruction moved (a jump, `s_setpc`), or VGPR index mode
    /// switched on (the compiled steps do not apply it).
    #[cold]
    fn interpret_step<E: WaveEnv + ?Sized>(
        &mut self,
        code: &CodeCache,
        p: &Placed,
        env: &mut E,
        ran: u64,
    ) -> Option<Exit> {
        self.pc = p.pc;
        match self.interpret(code, env, 1) {
            Stop::BudgetExhausted if self.pc == p.next && !self.mode.gpr_idx() => None,
            Stop::BudgetExhausted => Some(Exit::Continue { ran }),
            stop => Some(Exit::Stop(stop)),
        }
    }

    /// The first byte of a whole-wave dword run (lane `l` at lane 0's address + 4 `l`, every
    /// lane enabled), as the interpreter's GLOBAL run path finds it; `None` for any other
    /// access (the interpreter's general path takes it).
    #[inline(always)]
    fn dword_run_start(&self, vaddr: u8, saddr: u8, offset: i16) -> Option<u64> {
        if self.exec() != u64::MAX {
            return None;
        }
        let lo = &self.vgpr[usize::from(vaddr)];
        let first = lo[0];
        first.checked_add(4 * (WAVE_SIZE as u32 - 1))?;
        let mut diff = 0u32;
        let mut want = first;
        for &v in lo {
            diff |= v ^ want;
            want = want.wrapping_add(4);
        }
        let start = if saddr != SADDR_OFF {
            self.sgpr64(usize::from(saddr))
                .wrapping_add(u64::from(first))
        } else {
            let hi = &self.vgpr[usize::from(vaddr) + 1];
            let top = hi[0];
            for &v in hi {
                diff |= v ^ top;
            }
            u64::from(first) | u64::from(top) << 32
        };
        let start = start.wrapping_add_signed(i64::from(offset));
        if diff != 0 {
            return None;
        }
        start.checked_add(4 * (WAVE_SIZE as u64 - 1))?;
        Some(start)
    }

    /// `ds_read_b32` when every enabled lane's dword lies inside the LDS allocation (`false`,
    /// nothing written, otherwise: the interpreter applies the out-of-range rules).
    #[inline(always)]
    fn ds_read_b32<E: WaveEnv + ?Sized>(
        &mut self,
        env: &mut E,
        addr: u8,
        vdst: u8,
        offset: u16,
    ) -> bool {
        let exec = self.exec();
        let lds = env.lds();
        let address = &self.vgpr[usize::from(addr)];
        let mut out: Lanes = [0; WAVE_SIZE];
        for l in 0..WAVE_SIZE {
            if (exec >> l) & 1 == 0 {
                continue;
            }
            let a = address[l].wrapping_add(u32::from(offset)) as usize;
            match lds.get(a..a.wrapping_add(4)) {
                Some(&[b0, b1, b2, b3]) => out[l] = u32::from_le_bytes([b0, b1, b2, b3]),
                _ => return false,
            }
        }
        write_masked(&mut self.vgpr[usize::from(vdst)], &out, exec);
        true
    }

    /// `ds_read2_b32` when both dwords of every enabled lane lie inside the LDS allocation
    /// (`false`, nothing written, otherwise).
    #[inline(always)]
    fn ds_read2_b32<E: WaveEnv + ?Sized>(
        &mut self,
        env: &mut E,
        addr: u8,
        vdst: u8,
        offsets: [u8; 2],
    ) -> bool {
        let exec = self.exec();
        let lds = env.lds();
        let address = &self.vgpr[usize::from(addr)];
        let mut out: [Lanes; 2] = [[0; WAVE_SIZE]; 2];
        for l in 0..WAVE_SIZE {
            if (exec >> l) & 1 == 0 {
                continue;
            }
            for (half, off) in offsets.into_iter().enumerate() {
                let a = address[l].wrapping_add(4 * u32::from(off)) as usize;
                match lds.get(a..a.wrapping_add(4)) {
                    Some(&[b0, b1, b2, b3]) => out[half][l] = u32::from_le_bytes([b0, b1, b2, b3]),
                    _ => return false,
                }
            }
        }
        let d = usize::from(vdst);
        write_masked(&mut self.vgpr[d], &out[0], exec);
        write_masked(&mut self.vgpr[d + 1], &out[1], exec);
        true
    }

    /// `ds_write_b32` when every enabled lane's dword lies inside the LDS allocation (lanes
    /// in ascending order, as the interpreter writes them); `false` (nothing written)
    /// otherwise.
    #[inline(always)]
    fn ds_write_b32<E: WaveEnv + ?Sized>(
        &mut self,
        env: &mut E,
        addr: u8,
        data: u8,
        offset: u16,
    ) -> bool {
        let exec = self.exec();
        let lds = env.lds();
        let address = &self.vgpr[usize::from(addr)];
        let end = |l: usize| u64::from(address[l].wrapping_add(u32::from(offset))) + 4;
        if (0..WAVE_SIZE).any(|l| (exec >> l) & 1 != 0 && end(l) > lds.len() as u64) {
            return false;
        }
        let value = &self.vgpr[usize::from(data)];
        for l in 0..WAVE_SIZE {
            if (exec >> l) & 1 != 0 {
                let a = address[l].wrapping_add(u32::from(offset)) as usize;
                if let Some(d) = lds.get_mut(a..a.wrapping_add(4)) {
                    d.copy_from_slice(&value[l].to_le_bytes());
                }
            }
        }
        true
    }
}
