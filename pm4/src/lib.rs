//! # pm4 — typed PM4 and SDMA packets
//!
//! This crate will hold the packets the amdkfd driver and user queues exchange with AMD's
//! command processors, as zerocopy structs with `bitfield-struct` fields:
//!
//! * the PM4 type-3 header and the HWS/HIQ packets (`SET_RESOURCES`, `MAP_PROCESS`,
//!   `MAP_QUEUES`, `UNMAP_QUEUES`, `QUERY_STATUS`, `RUN_LIST`);
//! * user compute-queue packets (`NOP`, `WRITE_DATA`, `RELEASE_MEM`, `ACQUIRE_MEM`,
//!   `WAIT_REG_MEM`, `INDIRECT_BUFFER`, `COPY_DATA`, `DMA_DATA`, `EVENT_WRITE`, …);
//! * SDMA 4/5/6 packets;
//!
//! with an allocation-free writer, a decoder that never panics, and a disassembler.
//! It is filled by issue #3; until then it is intentionally empty.
#![no_std]
#![forbid(unsafe_code)]
