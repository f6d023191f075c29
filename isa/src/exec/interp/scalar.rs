//! The scalar unit: SALU (SOP1/SOP2/SOPC/SOPK), program control (SOPP) and scalar
//! memory (SMEM loads, stores and atomics).

use super::{illegal, opnd, Flow, Wave, R};
use crate::decode::Operand;
use crate::exec::cache::{Cached, MemKind, SrcType};
use crate::exec::env::{AtomicOp, AtomicRequest, WaveEnv};
use crate::exec::fault::Stop;
use crate::exec::int;
use crate::exec::wave::{sreg, HwRegField, WAVE_SIZE};
use crate::table::{prop, Field, Op};

impl Wave {
    pub(super) fn salu(&mut self, c: &Cached, next: u64) -> R<Flow> {
        let op = c.inst.op;
        let t = SrcType::Int;
        let a_op = opnd(c, Field::A);
        let b_op = opnd(c, Field::B);
        let d_op = opnd(c, Field::D);
        let k = opnd(c, Field::K).map_or(0, |o| self.sread(o, t, false) as u32);
        let a32 = a_op.map_or(0, |o| self.sread(o, t, false) as u32);
        let b32 = b_op.map_or(0, |o| self.sread(o, t, false) as u32);
        let a64 = a_op.map_or(0, |o| self.sread(o, t, true));
        let b64 = b_op.map_or(0, |o| self.sread(o, t, true));
        let d32 = d_op.map_or(0, |o| self.sread(o, t, false) as u32);
        let simm = k as u16 as i16 as i32 as u32;
        let scc = self.scc;
        // (result, wide, new scc)
        let (res, wide, new_scc): (u64, bool, Option<bool>) = match op {
            Op::SAddU32 => {
                let (v, c) = int::add_co(a32, b32);
                (v.into(), false, Some(c))
            }
            Op::SSubU32 => {
                let (v, c) = int::sub_co(a32, b32);
                (v.into(), false, Some(c))
            }
            Op::SAddI32 => {
                let (v, o) = int::add_i32(a32, b32);
                (v.into(), false, Some(o))
            }
            Op::SSubI32 => {
                let (v, o) = int::sub_i32(a32, b32);
                (v.into(), false, Some(o))
            }
            Op::SAddcU32 => {
                let (v, c) = int::addc(a32, b32, scc);
                (v.into(), false, Some(c))
            }
            Op::SSubbU32 => {
                let (v, c) = int::subb(a32, b32, scc);
                (v.into(), false, Some(c))
            }
            Op::SMinI32 => (
                (a32 as i32).min(b32 as i32) as u32 as u64,
                false,
                Some((a32 as i32) < (b32 as i32)),
            ),
            Op::SMinU32 => (a32.min(b32).into(), false, Some(a32 < b32)),
            Op::SMaxI32 => (
                (a32 as i32).max(b32 as i32) as u32 as u64,
                false,
                Some((a32 as i32) > (b32 as i32)),
            ),
            Op::SMaxU32 => (a32.max(b32).into(), false, Some(a32 > b32)),
            Op::SCselectB32 => (if scc { a32 } else { b32 }.into(), false, None),
            Op::SCselectB64 => (if scc { a64 } else { b64 }, true, None),
            Op::SAndB32 => nz32(a32 & b32),
            Op::SOrB32 => nz32(a32 | b32),
            Op::SXorB32 => nz32(a32 ^ b32),
            Op::SAndn2B32 => nz32(a32 & !b32),
            Op::SOrn2B32 => nz32(a32 | !b32),
            Op::SNandB32 => nz32(!(a32 & b32)),
            Op::SNorB32 => nz32(!(a32 | b32)),
            Op::SXnorB32 => nz32(!(a32 ^ b32)),
            Op::SAndB64 => nz64(a64 & b64),
            Op::SOrB64 => nz64(a64 | b64),
            Op::SXorB64 => nz64(a64 ^ b64),
            Op::SAndn2B64 => nz64(a64 & !b64),
            Op::SOrn2B64 => nz64(a64 | !b64),
            Op::SNandB64 => nz64(!(a64 & b64)),
            Op::SNorB64 => nz64(!(a64 | b64)),
            Op::SXnorB64 => nz64(!(a64 ^ b64)),
            Op::SLshlB32 => nz32(int::shl32(a32, b32)),
            Op::SLshrB32 => nz32(int::lshr32(a32, b32)),
            Op::SAshrI32 => nz32(int::ashr32(a32, b32)),
            Op::SLshlB64 => nz64(int::shl64(a64, b32)),
            Op::SLshrB64 => nz64(int::lshr64(a64, b32)),
            Op::SAshrI64 => nz64(int::ashr64(a64, b32)),
            Op::SBfmB32 => (int::bfm(a32, b32).into(), false, None),
            Op::SBfmB64 => {
                let w = a32 & 63;
                let m = if w == 0 { 0 } else { u64::MAX >> (64 - w) };
                (m << (b32 & 63), true, None)
            }
            Op::SMulI32 => (
                (a32 as i32).wrapping_mul(b32 as i32) as u32 as u64,
                false,
                None,
            ),
            Op::SMulHiU32 => (int::mul_hi_u32(a32, b32).into(), false, None),
            Op::SMulHiI32 => (int::mul_hi_i32(a32, b32).into(), false, None),
            Op::SBfeU32 => nz32(int::s_bfe_u32(a32, b32)),
            Op::SBfeI32 => nz32(int::s_bfe_i32(a32, b32)),
            Op::SBfeU64 => nz64(int::s_bfe_u64(a64, b32)),
            Op::SBfeI64 => nz64(int::s_bfe_i64(a64, b32)),
            Op::SAbsdiffI32 => nz32((a32 as i32).wrapping_sub(b32 as i32).unsigned_abs()),
            Op::SLshl1AddU32 | Op::SLshl2AddU32 | Op::SLshl3AddU32 | Op::SLshl4AddU32 => {
                let n = match op {
                    Op::SLshl1AddU32 => 1,
                    Op::SLshl2AddU32 => 2,
                    Op::SLshl3AddU32 => 3,
                    _ => 4,
                };
                let wide = (u64::from(a32) << n) + u64::from(b32);
                (wide & 0xffff_ffff, false, Some(wide >> 32 != 0))
            }
            Op::SPackLlB32B16 => (((a32 & 0xffff) | (b32 << 16)).into(), false, None),
            Op::SPackLhB32B16 => (((a32 & 0xffff) | (b32 & 0xffff_0000)).into(), false, None),
            Op::SPackHhB32B16 => (((a32 >> 16) | (b32 & 0xffff_0000)).into(), false, None),
            // SOP1
            Op::SMovB32 => (a32.into(), false, None),
            Op::SMovB64 => (a64, true, None),
            Op::SCmovB32 => (if scc { a32 } else { d32 }.into(), false, None),
            Op::SCmovB64 => {
                let d64 = d_op.map_or(0, |o| self.sread(o, t, true));
                (if scc { a64 } else { d64 }, true, None)
            }
            Op::SNotB32 => nz32(!a32),
            Op::SNotB64 => nz64(!a64),
            Op::SWqmB64 => nz64(int::wqm64(a64)),
            Op::SBrevB32 => (int::brev32(a32).into(), false, None),
            Op::SBrevB64 => (a64.reverse_bits(), true, None),
            Op::SBcnt0I32B32 => nz32((!a32).count_ones()),
            Op::SBcnt0I32B64 => nz32((!a64).count_ones()),
            Op::SBcnt1I32B32 => nz32(a32.count_ones()),
            Op::SBcnt1I32B64 => nz32(a64.count_ones()),
            Op::SFf0I32B32 => (int::ffbl(!a32).into(), false, None),
            Op::SFf1I32B32 => (int::ffbl(a32).into(), false, None),
            Op::SFf1I32B64 => (
                if a64 == 0 {
                    u32::MAX
                } else {
                    a64.trailing_zeros()
                }
                .into(),
                false,
                None,
            ),
            Op::SFf0I32B64 => (
                if !a64 == 0 {
                    u32::MAX
                } else {
                    (!a64).trailing_zeros()
                }
                .into(),
                false,
                None,
            ),
            Op::SFlbitI32B32 => (int::ffbh_u32(a32).into(), false, None),
            Op::SFlbitI32B64 => (
                if a64 == 0 {
                    u32::MAX
                } else {
                    a64.leading_zeros()
                }
                .into(),
                false,
                None,
            ),
            Op::SFlbitI32 => (int::ffbh_i32(a32).into(), false, None),
            Op::SSextI32I8 => (a32 as i8 as i32 as u32 as u64, false, None),
            Op::SSextI32I16 => (a32 as i16 as i32 as u32 as u64, false, None),
            Op::SBitset0B32 => ((d32 & !(1 << (a32 & 31))).into(), false, None),
            Op::SBitset1B32 => ((d32 | (1 << (a32 & 31))).into(), false, None),
            Op::SBitset0B64 | Op::SBitset1B64 => {
                let d64 = d_op.map_or(0, |o| self.sread(o, t, true));
                let bit = 1u64 << (a32 & 63);
                (
                    if op == Op::SBitset1B64 {
                        d64 | bit
                    } else {
                        d64 & !bit
                    },
                    true,
                    None,
                )
            }
            Op::SQuadmaskB64 => nz64(int::quadmask64(a64)),
            Op::SAbsI32 => nz32((a32 as i32).unsigned_abs()),
            Op::SGetpcB64 => (next, true, None),
            Op::SSetpcB64 => return Ok(Flow::Jump(a64)),
            // Return from the trap handler: leave privileged mode, jump to the saved PC.
            // A handler that set STATUS.HALT returns into a halted wave.
            Op::SRfeB64 => {
                self.status &= !crate::exec::wave::status::PRIV;
                let target = a64 & 0xffff_ffff_ffff;
                if self.halted() {
                    self.pc = target;
                    return Ok(Flow::Stop(Stop::Halt));
                }
                return Ok(Flow::Jump(target));
            }
            Op::SSwappcB64 => {
                if let Some(d) = d_op {
                    self.swrite(d, next, true);
                }
                return Ok(Flow::Jump(a64));
            }
            Op::SAndSaveexecB64
            | Op::SOrSaveexecB64
            | Op::SXorSaveexecB64
            | Op::SAndn2SaveexecB64
            | Op::SOrn2SaveexecB64
            | Op::SNandSaveexecB64
            | Op::SNorSaveexecB64
            | Op::SXnorSaveexecB64
            | Op::SAndn1SaveexecB64
            | Op::SOrn1SaveexecB64 => {
                let exec = self.exec();
                let new = match op {
                    Op::SAndSaveexecB64 => a64 & exec,
                    Op::SOrSaveexecB64 => a64 | exec,
                    Op::SXorSaveexecB64 => a64 ^ exec,
                    Op::SAndn2SaveexecB64 => a64 & !exec,
                    Op::SOrn2SaveexecB64 => a64 | !exec,
                    Op::SNandSaveexecB64 => !(a64 & exec),
                    Op::SNorSaveexecB64 => !(a64 | exec),
                    Op::SXnorSaveexecB64 => !(a64 ^ exec),
                    Op::SAndn1SaveexecB64 => !a64 & exec,
                    _ => !a64 | exec,
                };
                if let Some(d) = d_op {
                    self.swrite(d, exec, true);
                }
                self.set_exec(new);
                self.scc = new != 0;
                return Ok(Flow::Next);
            }
            // SOPC
            Op::SCmpEqI32 | Op::SCmpEqU32 => return self.set_scc(a32 == b32),
            Op::SCmpLgI32 | Op::SCmpLgU32 => return self.set_scc(a32 != b32),
            Op::SCmpGtI32 => return self.set_scc((a32 as i32) > (b32 as i32)),
            Op::SCmpGeI32 => return self.set_scc((a32 as i32) >= (b32 as i32)),
            Op::SCmpLtI32 => return self.set_scc((a32 as i32) < (b32 as i32)),
            Op::SCmpLeI32 => return self.set_scc((a32 as i32) <= (b32 as i32)),
            Op::SCmpGtU32 => return self.set_scc(a32 > b32),
            Op::SCmpGeU32 => return self.set_scc(a32 >= b32),
            Op::SCmpLtU32 => return self.set_scc(a32 < b32),
            Op::SCmpLeU32 => return self.set_scc(a32 <= b32),
            Op::SCmpEqU64 => return self.set_scc(a64 == b64),
            Op::SCmpLgU64 => return self.set_scc(a64 != b64),
            Op::SBitcmp0B32 => return self.set_scc((a32 >> (b32 & 31)) & 1 == 0),
            Op::SBitcmp1B32 => return self.set_scc((a32 >> (b32 & 31)) & 1 == 1),
            Op::SBitcmp0B64 => return self.set_scc((a64 >> (b32 & 63)) & 1 == 0),
            Op::SBitcmp1B64 => return self.set_scc((a64 >> (b32 & 63)) & 1 == 1),
            // SOPK: D is the first source of compares
            Op::SMovkI32 => (simm.into(), false, None),
            Op::SCmovkI32 => (if scc { simm } else { d32 }.into(), false, None),
            Op::SCmpkEqI32 => return self.set_scc(d32 == simm),
            Op::SCmpkLgI32 => return self.set_scc(d32 != simm),
            Op::SCmpkGtI32 => return self.set_scc((d32 as i32) > (simm as i32)),
            Op::SCmpkGeI32 => return self.set_scc((d32 as i32) >= (simm as i32)),
            Op::SCmpkLtI32 => return self.set_scc((d32 as i32) < (simm as i32)),
            Op::SCmpkLeI32 => return self.set_scc((d32 as i32) <= (simm as i32)),
            Op::SCmpkEqU32 => return self.set_scc(d32 == k & 0xffff),
            Op::SCmpkLgU32 => return self.set_scc(d32 != k & 0xffff),
            Op::SCmpkGtU32 => return self.set_scc(d32 > k & 0xffff),
            Op::SCmpkGeU32 => return self.set_scc(d32 >= k & 0xffff),
            Op::SCmpkLtU32 => return self.set_scc(d32 < k & 0xffff),
            Op::SCmpkLeU32 => return self.set_scc(d32 <= k & 0xffff),
            Op::SAddkI32 => {
                let (v, o) = int::add_i32(d32, simm);
                (v.into(), false, Some(o))
            }
            Op::SMulkI32 => (
                (d32 as i32).wrapping_mul(simm as i32) as u32 as u64,
                false,
                None,
            ),
            Op::SGetregB32 => (
                self.getreg(HwRegField::from_simm16(k as u16))?.into(),
                false,
                None,
            ),
            Op::SSetregB32 => {
                self.setreg(HwRegField::from_simm16(k as u16), d32)?;
                return Ok(Flow::Next);
            }
            Op::SSetregImm32B32 => {
                // the value is the 32-bit literal that follows the instruction
                let value = match opnd(c, Field::O) {
                    Some(Operand::Literal(v)) => v,
                    _ => return Err(illegal(self.pc, c)),
                };
                self.setreg(HwRegField::from_simm16(k as u16), value)?;
                return Ok(Flow::Next);
            }
            _ => return Err(illegal(self.pc, c)),
        };
        if let Some(d) = d_op {
            self.swrite(d, res, wide);
        }
        if let Some(s) = new_scc {
            self.scc = s;
        }
        Ok(Flow::Next)
    }

    fn set_scc(&mut self, v: bool) -> R<Flow> {
        self.scc = v;
        Ok(Flow::Next)
    }

    // ------------------------------------------------------------ program control

    pub(super) fn sopp<E: WaveEnv + ?Sized>(
        &mut self,
        c: &Cached,
        next: u64,
        env: &mut E,
    ) -> R<Flow> {
        let simm = c.inst.words[0] & 0xffff;
        let target = next.wrapping_add_signed(i64::from(simm as u16 as i16) * 4);
        let branch = |taken: bool| {
            Ok(if taken {
                Flow::Jump(target)
            } else {
                Flow::Next
            })
        };
        match c.inst.op {
            Op::SNop | Op::SWaitcnt | Op::SIcacheInv | Op::SIncperflevel | Op::SDecperflevel => {
                Ok(Flow::Next)
            }
            Op::STtracedata | Op::SSetkill | Op::SWakeup => Ok(Flow::Next),
            Op::SSetprio => {
                self.priority = (simm & 3) as u8;
                Ok(Flow::Next)
            }
            // s_sethalt: STATUS.HALT = SIMM16[0]; inside the trap handler it takes effect when
            // the handler returns.
            Op::SSethalt => {
                use crate::exec::wave::status::HALT;
                self.status = (self.status & !HALT) | if simm & 1 != 0 { HALT } else { 0 };
                if self.halted() {
                    self.pc = next;
                    return Ok(Flow::Stop(Stop::Halt));
                }
                Ok(Flow::Next)
            }
            Op::SEndpgm => Ok(Flow::Stop(Stop::EndOfProgram)),
            Op::SBranch => branch(true),
            Op::SCbranchScc0 => branch(!self.scc),
            Op::SCbranchScc1 => branch(self.scc),
            Op::SCbranchVccz => branch(self.vcc() == 0),
            Op::SCbranchVccnz => branch(self.vcc() != 0),
            Op::SCbranchExecz => branch(self.exec() == 0),
            Op::SCbranchExecnz => branch(self.exec() != 0),
            Op::SBarrier => {
                self.pc = next;
                Ok(Flow::Stop(Stop::Barrier))
            }
            Op::SSleep => {
                self.pc = next;
                Ok(Flow::Stop(Stop::Sleep {
                    cycles: simm & 0x7f,
                }))
            }
            Op::SSendmsg | Op::SSendmsghalt => {
                env.send_message(simm as u16, self.m0());
                Ok(Flow::Next)
            }
            Op::STrap => {
                let id = (simm & 0xff) as u8;
                // {ttmp1, ttmp0} = {trap id [23:16], PC[47:0]}; PC is the s_trap's own address
                self.sgpr[sreg::TTMP0] = self.pc as u32;
                self.sgpr[sreg::TTMP0 + 1] =
                    ((self.pc >> 32) as u32 & 0xffff) | (u32::from(id) << 16);
                self.pc = next;
                Ok(Flow::Stop(Stop::Trap { id }))
            }
            _ => Err(illegal(self.pc, c)),
        }
    }

    // ------------------------------------------------------------ scalar memory

    pub(super) fn smem<E: WaveEnv + ?Sized>(&mut self, c: &Cached, env: &mut E) -> R<()> {
        let w0 = c.inst.words[0];
        let op = c.inst.op;
        let sdata = ((w0 >> 6) & 0x7f) as usize;
        match op {
            Op::SMemtime | Op::SMemrealtime => {
                let t = if op == Op::SMemtime {
                    env.shader_clock()
                } else {
                    env.real_time()
                };
                self.set_sgpr64(sdata, t);
                return Ok(());
            }
            // the functional model has no scalar data cache to invalidate or write back
            Op::SDcacheInv | Op::SDcacheWb | Op::SDcacheInvVol | Op::SDcacheWbVol => return Ok(()),
            _ => {}
        }
        let address = self.smem_address(c);
        match c.mem {
            MemKind::Store { bytes, .. } => {
                let mut data = [0u32; 4];
                for (i, d) in data[..bytes as usize / 4].iter_mut().enumerate() {
                    *d = self.sgpr.get(sdata + i).copied().unwrap_or(0);
                }
                return Ok(env.store_scalar(address, &data[..bytes as usize / 4])?);
            }
            MemKind::Atomic { op: aop, wide } => {
                return self.smem_atomic(c, env, address, aop, wide)
            }
            _ => {}
        }
        let dwords = match op {
            Op::SLoadDword | Op::SBufferLoadDword => 1,
            Op::SLoadDwordx2 | Op::SBufferLoadDwordx2 => 2,
            Op::SLoadDwordx4 | Op::SBufferLoadDwordx4 => 4,
            Op::SLoadDwordx8 | Op::SBufferLoadDwordx8 => 8,
            Op::SLoadDwordx16 | Op::SBufferLoadDwordx16 => 16,
            _ => return Err(illegal(self.pc, c)),
        };
        let mut buf = [0u32; 16];
        env.load_scalar(address, &mut buf[..dwords])?;
        for (i, v) in buf[..dwords].iter().enumerate() {
            if let Some(r) = self.sgpr.get_mut(sdata + i) {
                *r = *v;
            }
        }
        Ok(())
    }

    /// The dword-aligned byte address of a scalar memory access: SBASE (a 64-bit address, or
    /// for `s_buffer_*` the base in bits 47:0 of the buffer resource) plus the offset: IMM = 1
    /// the signed 21-bit immediate (llvm-mc encodes `-4` as 0x1ffffc on gfx9), IMM = 0 the
    /// SGPR the offset field names; with SOE also the SGPR in SOFFSET (w1[31:25]).
    fn smem_address(&self, c: &Cached) -> u64 {
        let [w0, w1] = c.inst.words;
        let sbase = ((w0 & 0x3f) << 1) as usize;
        let imm = (w0 >> 17) & 1 != 0;
        let soe = (w0 >> 14) & 1 != 0;
        let sgpr = |i: u32| self.sgpr.get(i as usize).copied().unwrap_or(0);
        let mut offset = if imm {
            (((w1 << 11) as i32) >> 11) as i64 as u64
        } else if soe {
            0
        } else {
            u64::from(sgpr(w1 & 0x7f))
        };
        if soe {
            offset = offset.wrapping_add(u64::from(sgpr(w1 >> 25)));
        }
        let buffer = c.inst.row().props & prop::S_BUFFER != 0;
        let base = if buffer {
            self.sgpr64(sbase) & 0xffff_ffff_ffff
        } else {
            self.sgpr64(sbase)
        };
        base.wrapping_add(offset) & !3
    }

    /// `s_atomic_*` / `s_buffer_atomic_*`: one read-modify-write at `address` with the data
    /// in SDATA (`cmpswap`: the new value in the first half of SDATA, the compare value in
    /// the second); with GLC the pre-op memory value is written back to SDATA[0] (SDATA[0:1]
    /// for `_x2`).
    fn smem_atomic<E: WaveEnv + ?Sized>(
        &mut self,
        c: &Cached,
        env: &mut E,
        address: u64,
        op: AtomicOp,
        wide: bool,
    ) -> R<()> {
        let w0 = c.inst.words[0];
        let sdata = ((w0 >> 6) & 0x7f) as usize;
        let glc = (w0 >> 16) & 1 != 0;
        let n = if wide { 2 } else { 1 };
        let value = |w: &Wave, r: usize| -> u64 {
            let lo = w.sgpr.get(r).copied().unwrap_or(0);
            let hi = if wide {
                w.sgpr.get(r + 1).copied().unwrap_or(0)
            } else {
                0
            };
            u64::from(lo) | (u64::from(hi) << 32)
        };
        let mut addresses = [0u64; WAVE_SIZE];
        let mut src = [0u64; WAVE_SIZE];
        let mut cmp = [0u64; WAVE_SIZE];
        addresses[0] = address;
        src[0] = value(self, sdata);
        if op == AtomicOp::CmpSwap {
            cmp[0] = value(self, sdata + n);
        }
        let mut old = [0u64; WAVE_SIZE];
        env.atomic(
            &AtomicRequest {
                op,
                wide,
                exec: 1,
                addresses: &addresses,
                src: &src,
                cmp: &cmp,
            },
            &mut old,
        )?;
        if glc {
            if wide {
                self.set_sgpr64(sdata, old[0]);
            } else if let Some(r) = self.sgpr.get_mut(sdata) {
                *r = old[0] as u32;
            }
        }
        Ok(())
    }
}

fn nz32(v: u32) -> (u64, bool, Option<bool>) {
    (u64::from(v), false, Some(v != 0))
}

fn nz64(v: u64) -> (u64, bool, Option<bool>) {
    (v, true, Some(v != 0))
}
