//! `kernel_queue`: the HIQ, the driver's own PM4 ring to the scheduler firmware.
//!
//! Ring (2048 bytes), EOP buffer, read and write pointers and the HIQ MQD all live in GART, as
//! in the kernel. The driver builds packets in a private copy of the ring with the
//! `kq_acquire_packet_buffer` discipline (free space from the read pointer the firmware
//! reports, NOP fill when a packet would cross the end, rollback), then `submit` publishes the
//! ring, stores the 64-bit write pointer and rings the HIQ doorbell.

use crate::device::Gpu;
use crate::errno::{Errno, KResult};
use crate::hw::gart::GartAlloc;
use mqd::props::{HIQ_EOP_SIZE, HIQ_RING_SIZE};
use mqd::{ComputeMqd, MqdConfig, QueueProperties};
use pm4::ring::{DwordPtr, Pm4Ring};
use pm4::Encode;

/// Dword index of the HIQ doorbell in the BAR (amdgpu's own range, below KFD's slices).
pub const HIQ_DOORBELL_DW: u32 = 0x10;

/// The HIQ of one GPU.
#[derive(Debug)]
pub struct KernelQueue {
    ring: Pm4Ring,
    shadow: Vec<u32>,
    ring_mem: GartAlloc,
    eop_mem: GartAlloc,
    rptr_mem: GartAlloc,
    wptr_mem: GartAlloc,
    mqd_mem: GartAlloc,
}

impl KernelQueue {
    /// Allocates the HIQ, writes its MQD and has the firmware load it (amdgpu does this through
    /// the KIQ).
    pub fn new(gpu: &Gpu, config: &MqdConfig) -> KResult<KernelQueue> {
        let gart = &gpu.gart;
        let ring_mem = gart.alloc(u64::from(HIQ_RING_SIZE), 256)?;
        let eop_mem = gart.alloc(u64::from(HIQ_EOP_SIZE), 256)?;
        let rptr_mem = gart.alloc(8, 8)?;
        let wptr_mem = gart.alloc(8, 8)?;
        let mqd_mem = gart.alloc(2048, 4096)?;
        let props = QueueProperties::hiq(
            ring_mem.gpu_addr,
            rptr_mem.gpu_addr,
            wptr_mem.gpu_addr,
            eop_mem.gpu_addr,
            HIQ_DOORBELL_DW,
        );
        let mqd = ComputeMqd::init_hiq(config, &props, mqd_mem.gpu_addr).map_err(|e| {
            log::error!(target: crate::layer::KQ, "HIQ MQD: {e}");
            Errno::EINVAL
        })?;
        gart.write(mqd_mem.gpu_addr, mqd.as_bytes())
            .ok_or(Errno::ENOMEM)?;
        gpu.hws.load_hiq(mqd_mem.gpu_addr);
        let dwords = HIQ_RING_SIZE as usize / 4;
        Ok(KernelQueue {
            ring: Pm4Ring::new(dwords).map_err(|_| Errno::EINVAL)?,
            shadow: vec![0; dwords],
            ring_mem,
            eop_mem,
            rptr_mem,
            wptr_mem,
            mqd_mem,
        })
    }

    /// GART address of the HIQ MQD (read back to detect failed preemptions).
    pub fn mqd_addr(&self) -> u64 {
        self.mqd_mem.gpu_addr
    }

    /// Free dwords, from the read pointer the firmware last reported.
    pub fn free_dwords(&mut self, gpu: &Gpu) -> usize {
        self.refresh_rptr(gpu);
        self.ring.free_dwords()
    }

    fn refresh_rptr(&mut self, gpu: &Gpu) {
        if let Some(rptr) = gpu.gart.load_u64(self.rptr_mem.gpu_addr) {
            self.ring.set_rptr(DwordPtr::new(rptr));
        }
    }

    /// `kq_acquire_packet_buffer` + encode: reserves room for `packet` (NOP-filling the tail
    /// at a wrap) and writes it. `ENOMEM` if the ring is full.
    pub fn push<P: Encode + ?Sized>(&mut self, gpu: &Gpu, packet: &P) -> KResult<()> {
        if gpu.hws.faults().hiq_full {
            log::warn!(target: crate::layer::KQ, "HIQ: no space for {} dwords (injected fault)", packet.dwords());
            return Err(Errno::ENOMEM);
        }
        self.refresh_rptr(gpu);
        self.ring.push(&mut self.shadow, packet).map_err(|e| {
            log::warn!(target: crate::layer::KQ, "HIQ: {e}");
            Errno::ENOMEM
        })?;
        Ok(())
    }

    /// `kq_submit_packet`: publishes the ring, stores the write pointer, rings the doorbell.
    pub fn submit(&mut self, gpu: &Gpu) {
        let wptr = self.ring.submit();
        let _ = gpu.gart.write_dwords(self.ring_mem.gpu_addr, &self.shadow);
        let _ = gpu.gart.store_u64(self.wptr_mem.gpu_addr, wptr.get());
        log::trace!(target: crate::layer::KQ, "HIQ submit: wptr {}", wptr.get());
        gpu.hws.hiq_doorbell(&gpu.gart);
    }

    /// `kq_rollback_packet`: forgets everything pushed since the last submit.
    pub fn rollback(&mut self) {
        self.ring.rollback();
    }

    /// Returns the GART memory (driver unload).
    pub fn free(self, gpu: &Gpu) {
        for a in [
            self.ring_mem,
            self.eop_mem,
            self.rptr_mem,
            self.wptr_mem,
            self.mqd_mem,
        ] {
            gpu.gart.free(a);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{ModelConfig, Preset};
    use crate::device::KfdNode;
    use crate::errno::Errno;
    use crate::hw::hws::HwsFaults;
    use crate::topology::Topology;
    use pm4::hws::{QueryCommand, QueryStatus, QueryStatusArgs, QueryTarget};

    #[test]
    fn a_full_hiq_refuses_packets_and_wraps_with_nops() {
        let cfg = ModelConfig::new(Preset::Gfx900);
        let node = KfdNode::new(&cfg, &Topology::from_config(&cfg), 0).unwrap();
        let gpu = &node.gpu;
        let mut kq = KernelQueue::new(gpu, &node.dqm().cfg.mqd).unwrap();
        let fence = gpu.gart.alloc(8, 8).unwrap();
        let packet = QueryStatus::new(&QueryStatusArgs {
            context_id: 0,
            command: QueryCommand::FenceOnlyAfterWriteAck,
            target: QueryTarget::Completion,
            fence_addr: fence.gpu_addr,
            fence_value: 100,
        })
        .unwrap();
        // A working firmware consumes everything: many laps around the 512-dword ring.
        for _ in 0..300 {
            kq.push(gpu, &packet).unwrap();
            kq.submit(gpu);
        }
        assert_eq!(kq.free_dwords(gpu), 511, "everything consumed");
        assert_eq!(gpu.gart.load_u64(fence.gpu_addr), Some(100));
        // A hung firmware never reports progress. 300 packets of 7 dwords are 4 laps of
        // 73 packets + 1 NOP filler, plus 8: read and write pointers sit at dword 56. From
        // there 65 packets reach dword 511, one NOP fills it, and 7 more fit below 55.
        gpu.hws.set_faults(HwsFaults {
            hang: true,
            ..Default::default()
        });
        let mut pushed = 0;
        let err = loop {
            match kq.push(gpu, &packet) {
                Ok(()) => {
                    kq.submit(gpu);
                    pushed += 1;
                }
                Err(e) => break e,
            }
        };
        assert_eq!(err, Errno::ENOMEM);
        assert_eq!(pushed, 72);
        kq.rollback();
    }
}
