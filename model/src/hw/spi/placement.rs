//! Where the SPI places a dispatch's waves: the shader engine, array and compute unit of each
//! workgroup and the SIMD and slot of each wave, as `HW_REG_HW_ID` reports them.

use super::ShaderArray;
use isa::exec::wave::{HwId, HwIdFields};
use isa::Target;

/// What places a dispatch's waves: the GPU's compute units and the queue the waves come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct WavePlacement {
    /// The compute units.
    pub array: ShaderArray,
    /// The queue's micro engine (1: MEC1, 2: MEC2), pipe and queue, and its process's VMID.
    pub me: u8,
    /// The HQD's pipe.
    pub pipe: u8,
    /// The HQD's queue within the pipe.
    pub queue: u8,
    /// The process's VMID.
    pub vmid: u8,
}

impl WavePlacement {
    /// `HW_REG_HW_ID` of the waves of the `group`th workgroup, with WAVE_ID and SIMD_ID 0
    /// ([`WavePlacement::wave_bits`] adds them): the SPI deals workgroups to the shader
    /// engines in turn and, within an engine, to its compute units in turn (alternating
    /// between its shader arrays).
    pub fn group_hw_id(&self, target: Target, group: u64) -> HwId {
        let a = &self.array;
        let engines = u64::from(a.engines.max(1));
        let arrays = u64::from(a.arrays_per_engine.max(1));
        let per_engine = u64::from(a.cus_per_engine.max(1));
        let cu_in_engine = (group / engines) % per_engine;
        HwId::encode(
            target,
            &HwIdFields {
                wave_id: 0,
                simd_id: 0,
                pipe_id: u32::from(self.pipe),
                cu_id: (cu_in_engine / arrays) as u32,
                sh_id: (cu_in_engine % arrays) as u32,
                se_id: (group % engines) as u32,
                // The workgroup's turn on its compute unit.
                tg_id: (group / (engines * per_engine)) as u32,
                vm_id: u32::from(self.vmid),
                queue_id: u32::from(self.queue),
                state_id: 0,
                me_id: u32::from(self.me),
            },
        )
    }

    /// WAVE_ID and SIMD_ID of a workgroup's wave `wave`: its waves go to the SIMDs in turn.
    pub fn wave_bits(&self, wave: u32) -> u32 {
        let simds = self.array.simds_per_cu.max(1);
        let slot = (wave / simds) % self.array.waves_per_simd.max(1);
        (slot & 0xf) | ((wave % simds) & 3) << 4
    }
}
