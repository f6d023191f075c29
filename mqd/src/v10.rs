//! gfx10 (GC 10.x: RDNA1/RDNA2) compute MQD `v10_compute_mqd` and SDMA 5.x MQD
//! `v10_sdma_mqd`, with the registers whose bit positions differ from gfx9.

use bitfield_struct::bitfield;
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

pub use crate::regs::{
    ComputePgmRsrc2, CpHqdAqlControl, CpHqdEopControl, CpHqdPersistentState,
    CpHqdPqDoorbellControl, CpHqdQuantum, CpMqdControl, SdmaDoorbellOffset,
};
/// SDMA 5.x uses the SDMA 4.x `RB_CNTL` layout.
pub use crate::v9::SdmaRbCntl;

/// `CP_HQD_PQ_CONTROL` on gfx10/gfx11 (`gc_10_1_0`, `gc_11_0_0`): `SLOT_BASED_WPTR` at
/// `[19:18]`, no `WPP_CLAMP_EN`.
#[bitfield(u32)]
#[derive(PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable)]
pub struct CpHqdPqControl {
    /// `QUEUE_SIZE`, bits `[5:0]`: the ring holds `2^(QUEUE_SIZE+1)` dwords.
    #[bits(6)]
    pub queue_size: u8,
    #[bits(2)]
    __: u8,
    /// `RPTR_BLOCK_SIZE`, bits `[13:8]`.
    #[bits(6)]
    pub rptr_block_size: u8,
    /// `QUEUE_FULL_EN`, bit 14.
    pub queue_full_en: bool,
    #[bits(3)]
    __: u8,
    /// `SLOT_BASED_WPTR`, bits `[19:18]`: 2 for AQL queues.
    #[bits(2)]
    pub slot_based_wptr: u8,
    #[bits(7)]
    __: u8,
    /// `NO_UPDATE_RPTR`, bit 27.
    pub no_update_rptr: bool,
    /// `UNORD_DISPATCH`, bit 28 (written by Linux 6.12, not 6.1).
    pub unord_dispatch: bool,
    /// `TUNNEL_DISPATCH`, bit 29.
    pub tunnel_dispatch: bool,
    /// `PRIV_STATE`, bit 30 (HIQ).
    pub priv_state: bool,
    /// `KMD_QUEUE`, bit 31 (HIQ).
    pub kmd_queue: bool,
}

/// `CP_HQD_IB_CONTROL` on gfx10/gfx11 (no `IB_EXE_DISABLE`).
#[bitfield(u32)]
#[derive(PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable)]
pub struct CpHqdIbControl {
    #[bits(20)]
    __: u32,
    /// `MIN_IB_AVAIL_SIZE`, bits `[21:20]`.
    #[bits(2)]
    pub min_ib_avail_size: u8,
    #[bits(10)]
    __: u16,
}

mqd_struct! {
    /// The gfx10 compute MQD (`struct v10_compute_mqd`, 2048 bytes). It has only four
    /// static-thread-management words (SE0–SE3) and calls dw160 `cp_hqd_hq_scheduler0`.
    pub struct v10_compute_mqd (2048 bytes) {
        0 header: u32,
        1 compute_dispatch_initiator: u32,
        2 compute_dim_x: u32,
        3 compute_dim_y: u32,
        4 compute_dim_z: u32,
        5 compute_start_x: u32,
        6 compute_start_y: u32,
        7 compute_start_z: u32,
        8 compute_num_thread_x: u32,
        9 compute_num_thread_y: u32,
        10 compute_num_thread_z: u32,
        11 compute_pipelinestat_enable: u32,
        12 compute_perfcount_enable: u32,
        13 compute_pgm_lo: u32,
        14 compute_pgm_hi: u32,
        15 compute_tba_lo: u32,
        16 compute_tba_hi: u32,
        17 compute_tma_lo: u32,
        18 compute_tma_hi: u32,
        19 compute_pgm_rsrc1: u32,
        20 compute_pgm_rsrc2: ComputePgmRsrc2,
        21 compute_vmid: u32,
        22 compute_resource_limits: u32,
        23 compute_static_thread_mgmt_se0: u32,
        24 compute_static_thread_mgmt_se1: u32,
        25 compute_tmpring_size: u32,
        26 compute_static_thread_mgmt_se2: u32,
        27 compute_static_thread_mgmt_se3: u32,
        28 compute_restart_x: u32,
        29 compute_restart_y: u32,
        30 compute_restart_z: u32,
        31 compute_thread_trace_enable: u32,
        32 compute_misc_reserved: u32,
        33 compute_dispatch_id: u32,
        34 compute_threadgroup_id: u32,
        35 compute_relaunch: u32,
        36 compute_wave_restore_addr_lo: u32,
        37 compute_wave_restore_addr_hi: u32,
        38 compute_wave_restore_control: u32,
        39 reserved_39: [u32; 26],
        65 compute_user_data_0: u32,
        66 compute_user_data_1: u32,
        67 compute_user_data_2: u32,
        68 compute_user_data_3: u32,
        69 compute_user_data_4: u32,
        70 compute_user_data_5: u32,
        71 compute_user_data_6: u32,
        72 compute_user_data_7: u32,
        73 compute_user_data_8: u32,
        74 compute_user_data_9: u32,
        75 compute_user_data_10: u32,
        76 compute_user_data_11: u32,
        77 compute_user_data_12: u32,
        78 compute_user_data_13: u32,
        79 compute_user_data_14: u32,
        80 compute_user_data_15: u32,
        81 cp_compute_csinvoc_count_lo: u32,
        82 cp_compute_csinvoc_count_hi: u32,
        83 reserved_83: [u32; 3],
        86 cp_mqd_query_time_lo: u32,
        87 cp_mqd_query_time_hi: u32,
        88 cp_mqd_connect_start_time_lo: u32,
        89 cp_mqd_connect_start_time_hi: u32,
        90 cp_mqd_connect_end_time_lo: u32,
        91 cp_mqd_connect_end_time_hi: u32,
        92 cp_mqd_connect_end_wf_count: u32,
        93 cp_mqd_connect_end_pq_rptr: u32,
        94 cp_mqd_connect_end_pq_wptr: u32,
        95 cp_mqd_connect_end_ib_rptr: u32,
        96 cp_mqd_readindex_lo: u32,
        97 cp_mqd_readindex_hi: u32,
        98 cp_mqd_save_start_time_lo: u32,
        99 cp_mqd_save_start_time_hi: u32,
        100 cp_mqd_save_end_time_lo: u32,
        101 cp_mqd_save_end_time_hi: u32,
        102 cp_mqd_restore_start_time_lo: u32,
        103 cp_mqd_restore_start_time_hi: u32,
        104 cp_mqd_restore_end_time_lo: u32,
        105 cp_mqd_restore_end_time_hi: u32,
        106 disable_queue: u32,
        107 reserved_107: u32,
        108 gds_cs_ctxsw_cnt0: u32,
        109 gds_cs_ctxsw_cnt1: u32,
        110 gds_cs_ctxsw_cnt2: u32,
        111 gds_cs_ctxsw_cnt3: u32,
        112 reserved_112: [u32; 2],
        114 cp_pq_exe_status_lo: u32,
        115 cp_pq_exe_status_hi: u32,
        116 cp_packet_id_lo: u32,
        117 cp_packet_id_hi: u32,
        118 cp_packet_exe_status_lo: u32,
        119 cp_packet_exe_status_hi: u32,
        120 gds_save_base_addr_lo: u32,
        121 gds_save_base_addr_hi: u32,
        122 gds_save_mask_lo: u32,
        123 gds_save_mask_hi: u32,
        124 ctx_save_base_addr_lo: u32,
        125 ctx_save_base_addr_hi: u32,
        126 reserved_126: [u32; 2],
        128 cp_mqd_base_addr_lo: u32,
        129 cp_mqd_base_addr_hi: u32,
        130 cp_hqd_active: u32,
        131 cp_hqd_vmid: u32,
        132 cp_hqd_persistent_state: CpHqdPersistentState,
        133 cp_hqd_pipe_priority: u32,
        134 cp_hqd_queue_priority: u32,
        135 cp_hqd_quantum: CpHqdQuantum,
        136 cp_hqd_pq_base_lo: u32,
        137 cp_hqd_pq_base_hi: u32,
        138 cp_hqd_pq_rptr: u32,
        139 cp_hqd_pq_rptr_report_addr_lo: u32,
        140 cp_hqd_pq_rptr_report_addr_hi: u32,
        141 cp_hqd_pq_wptr_poll_addr_lo: u32,
        142 cp_hqd_pq_wptr_poll_addr_hi: u32,
        143 cp_hqd_pq_doorbell_control: CpHqdPqDoorbellControl,
        144 reserved_144: u32,
        145 cp_hqd_pq_control: CpHqdPqControl,
        146 cp_hqd_ib_base_addr_lo: u32,
        147 cp_hqd_ib_base_addr_hi: u32,
        148 cp_hqd_ib_rptr: u32,
        149 cp_hqd_ib_control: CpHqdIbControl,
        150 cp_hqd_iq_timer: u32,
        151 cp_hqd_iq_rptr: u32,
        152 cp_hqd_dequeue_request: u32,
        153 cp_hqd_dma_offload: u32,
        154 cp_hqd_sema_cmd: u32,
        155 cp_hqd_msg_type: u32,
        156 cp_hqd_atomic0_preop_lo: u32,
        157 cp_hqd_atomic0_preop_hi: u32,
        158 cp_hqd_atomic1_preop_lo: u32,
        159 cp_hqd_atomic1_preop_hi: u32,
        160 cp_hqd_hq_scheduler0: u32,
        161 cp_hqd_hq_scheduler1: u32,
        162 cp_mqd_control: CpMqdControl,
        163 cp_hqd_hq_status1: u32,
        164 cp_hqd_hq_control1: u32,
        165 cp_hqd_eop_base_addr_lo: u32,
        166 cp_hqd_eop_base_addr_hi: u32,
        167 cp_hqd_eop_control: CpHqdEopControl,
        168 cp_hqd_eop_rptr: u32,
        169 cp_hqd_eop_wptr: u32,
        170 cp_hqd_eop_done_events: u32,
        171 cp_hqd_ctx_save_base_addr_lo: u32,
        172 cp_hqd_ctx_save_base_addr_hi: u32,
        173 cp_hqd_ctx_save_control: u32,
        174 cp_hqd_cntl_stack_offset: u32,
        175 cp_hqd_cntl_stack_size: u32,
        176 cp_hqd_wg_state_offset: u32,
        177 cp_hqd_ctx_save_size: u32,
        178 cp_hqd_gds_resource_state: u32,
        179 cp_hqd_error: u32,
        180 cp_hqd_eop_wptr_mem: u32,
        181 cp_hqd_aql_control: CpHqdAqlControl,
        182 cp_hqd_pq_wptr_lo: u32,
        183 cp_hqd_pq_wptr_hi: u32,
        184 cp_hqd_suspend_cntl_stack_offset: u32,
        185 cp_hqd_suspend_cntl_stack_dw_cnt: u32,
        186 cp_hqd_suspend_wg_state_offset: u32,
        187 reserved_187: [u32; 5],
        192 iqtimer_pkt_header: u32,
        193 iqtimer_pkt_dw0: u32,
        194 iqtimer_pkt_dw1: u32,
        195 iqtimer_pkt_dw2: u32,
        196 iqtimer_pkt_dw3: u32,
        197 iqtimer_pkt_dw4: u32,
        198 iqtimer_pkt_dw5: u32,
        199 iqtimer_pkt_dw6: u32,
        200 iqtimer_pkt_dw7: u32,
        201 iqtimer_pkt_dw8: u32,
        202 iqtimer_pkt_dw9: u32,
        203 iqtimer_pkt_dw10: u32,
        204 iqtimer_pkt_dw11: u32,
        205 iqtimer_pkt_dw12: u32,
        206 iqtimer_pkt_dw13: u32,
        207 iqtimer_pkt_dw14: u32,
        208 iqtimer_pkt_dw15: u32,
        209 iqtimer_pkt_dw16: u32,
        210 iqtimer_pkt_dw17: u32,
        211 iqtimer_pkt_dw18: u32,
        212 iqtimer_pkt_dw19: u32,
        213 iqtimer_pkt_dw20: u32,
        214 iqtimer_pkt_dw21: u32,
        215 iqtimer_pkt_dw22: u32,
        216 iqtimer_pkt_dw23: u32,
        217 iqtimer_pkt_dw24: u32,
        218 iqtimer_pkt_dw25: u32,
        219 iqtimer_pkt_dw26: u32,
        220 iqtimer_pkt_dw27: u32,
        221 iqtimer_pkt_dw28: u32,
        222 iqtimer_pkt_dw29: u32,
        223 iqtimer_pkt_dw30: u32,
        224 iqtimer_pkt_dw31: u32,
        225 reserved_225: [u32; 3],
        228 set_resources_header: u32,
        229 set_resources_dw1: u32,
        230 set_resources_dw2: u32,
        231 set_resources_dw3: u32,
        232 set_resources_dw4: u32,
        233 set_resources_dw5: u32,
        234 set_resources_dw6: u32,
        235 set_resources_dw7: u32,
        236 reserved_236: [u32; 4],
        240 queue_doorbell_id0: u32,
        241 queue_doorbell_id1: u32,
        242 queue_doorbell_id2: u32,
        243 queue_doorbell_id3: u32,
        244 queue_doorbell_id4: u32,
        245 queue_doorbell_id5: u32,
        246 queue_doorbell_id6: u32,
        247 queue_doorbell_id7: u32,
        248 queue_doorbell_id8: u32,
        249 queue_doorbell_id9: u32,
        250 queue_doorbell_id10: u32,
        251 queue_doorbell_id11: u32,
        252 queue_doorbell_id12: u32,
        253 queue_doorbell_id13: u32,
        254 queue_doorbell_id14: u32,
        255 queue_doorbell_id15: u32,
        256 reserved_256: [u32; 256],
    }
}

mqd_struct! {
    /// The SDMA 5.x queue MQD (`struct v10_sdma_mqd`, **520** bytes): engine and queue id sit
    /// at dw128/129, after 128 register dwords.
    pub struct v10_sdma_mqd (520 bytes) {
        0 sdmax_rlcx_rb_cntl: SdmaRbCntl,
        1 sdmax_rlcx_rb_base: u32,
        2 sdmax_rlcx_rb_base_hi: u32,
        3 sdmax_rlcx_rb_rptr: u32,
        4 sdmax_rlcx_rb_rptr_hi: u32,
        5 sdmax_rlcx_rb_wptr: u32,
        6 sdmax_rlcx_rb_wptr_hi: u32,
        7 sdmax_rlcx_rb_wptr_poll_cntl: u32,
        8 sdmax_rlcx_rb_rptr_addr_hi: u32,
        9 sdmax_rlcx_rb_rptr_addr_lo: u32,
        10 sdmax_rlcx_ib_cntl: u32,
        11 sdmax_rlcx_ib_rptr: u32,
        12 sdmax_rlcx_ib_offset: u32,
        13 sdmax_rlcx_ib_base_lo: u32,
        14 sdmax_rlcx_ib_base_hi: u32,
        15 sdmax_rlcx_ib_size: u32,
        16 sdmax_rlcx_skip_cntl: u32,
        17 sdmax_rlcx_context_status: u32,
        18 sdmax_rlcx_doorbell: u32,
        19 sdmax_rlcx_status: u32,
        20 sdmax_rlcx_doorbell_log: u32,
        21 sdmax_rlcx_watermark: u32,
        22 sdmax_rlcx_doorbell_offset: SdmaDoorbellOffset,
        23 sdmax_rlcx_csa_addr_lo: u32,
        24 sdmax_rlcx_csa_addr_hi: u32,
        25 sdmax_rlcx_ib_sub_remain: u32,
        26 sdmax_rlcx_preempt: u32,
        27 sdmax_rlcx_dummy_reg: u32,
        28 sdmax_rlcx_rb_wptr_poll_addr_hi: u32,
        29 sdmax_rlcx_rb_wptr_poll_addr_lo: u32,
        30 sdmax_rlcx_rb_aql_cntl: u32,
        31 sdmax_rlcx_minor_ptr_update: u32,
        32 sdmax_rlcx_midcmd_data0: u32,
        33 sdmax_rlcx_midcmd_data1: u32,
        34 sdmax_rlcx_midcmd_data2: u32,
        35 sdmax_rlcx_midcmd_data3: u32,
        36 sdmax_rlcx_midcmd_data4: u32,
        37 sdmax_rlcx_midcmd_data5: u32,
        38 sdmax_rlcx_midcmd_data6: u32,
        39 sdmax_rlcx_midcmd_data7: u32,
        40 sdmax_rlcx_midcmd_data8: u32,
        41 sdmax_rlcx_midcmd_cntl: u32,
        42 reserved_42: [u32; 86],
        128 sdma_engine_id: u32,
        129 sdma_queue_id: u32,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gfx10_specific_bit_positions_match_facts() {
        assert_eq!(
            CpHqdPqControl::new().with_slot_based_wptr(2).into_bits(),
            2 << 18
        );
        assert_eq!(
            CpHqdPqControl::new().with_slot_based_wptr(3).into_bits(),
            0x000C_0000
        );
        assert_eq!(
            CpHqdPqControl::new().with_no_update_rptr(true).into_bits(),
            1 << 27
        );
        assert_eq!(
            CpHqdPqControl::new().with_tunnel_dispatch(true).into_bits(),
            1 << 29
        );
        assert_eq!(
            CpHqdIbControl::new().with_min_ib_avail_size(3).into_bits(),
            0x0030_0000
        );
        // Bit 16 (gfx9's WPP_CLAMP_EN) and bit 23 (gfx9's IB_EXE_DISABLE) have no name here
        // but are preserved.
        assert_eq!(CpHqdPqControl::from_bits(1 << 16).into_bits(), 1 << 16);
        assert_eq!(CpHqdIbControl::from_bits(1 << 23).into_bits(), 1 << 23);
    }
}
