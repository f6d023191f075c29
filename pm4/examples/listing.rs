//! Builds what the driver writes on the HIQ and what a user queue signals an event with,
//! then prints both as listings: `cargo run -p pm4 --example listing`.

use pm4::disasm::{Pm4Listing, SdmaListing};
use pm4::hws::*;
use pm4::ring::Pm4Ring;
use pm4::sdma::{SdmaFence, SdmaTrap};
use pm4::user::*;
use pm4::{GfxGen, PacketWriter, SdmaGen};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // The HIQ: SET_RESOURCES, a RUN_LIST, and the QUERY_STATUS fence, via the ring.
    let mut hiq_mem = vec![0u32; 512];
    let mut hiq = Pm4Ring::new(hiq_mem.len())?;
    hiq.push(
        &mut hiq_mem,
        &SetResources::new(&SetResourcesArgs {
            vmid_mask: 0xFF00,
            unmap_latency: 40,
            enb_xnack_retry_disable_check: false,
            queue_type: ResourceQueueType::Hiq,
            queue_mask: 0xFCFC_FCFC,
            gws_mask: u64::MAX,
            oac_mask: 0,
            gds_heap_base: 0,
            gds_heap_size: 0,
        })?,
    )?;
    hiq.push(
        &mut hiq_mem,
        &RunList::new(&RunListArgs::submit(0x10_0000, 23, 1))?,
    )?;
    hiq.push(
        &mut hiq_mem,
        &QueryStatus::new(&QueryStatusArgs {
            context_id: 0,
            command: QueryCommand::FenceOnlyAfterWriteAck,
            target: QueryTarget::Completion,
            fence_addr: 0x20_0000,
            fence_value: 100,
        })?,
    )?;
    let wptr = hiq.submit();
    println!("HIQ (wptr = {wptr}):");
    print!(
        "{}",
        Pm4Listing::new(&hiq_mem[..wptr.slot(512) as usize], GfxGen::Gfx9)
    );

    // A user queue signalling event 3 the way kfdtest does on gfx9.
    let mut q = [0u32; 64];
    let mut w = PacketWriter::new(&mut q);
    w.push(&AcquireMemGfx9::new(
        AcquireMemGfx9::amdgpu_coher_cntl(),
        AcquireRange::full(4),
    ))?;
    w.push(&ReleaseMemGfx9::new(
        &ReleaseMemArgs::event_signal(0x7f12_3400_0018, 3),
        ReleaseCacheGfx9::new()
            .with_tc_wb_action_ena(true)
            .with_tc_action_ena(true),
    )?)?;
    let n = w.len();
    println!("\nuser queue:");
    print!("{}", Pm4Listing::new(&q[..n], GfxGen::Gfx9));

    // The SDMA equivalent: FENCE to the slot, then TRAP with the event id.
    let mut s = [0u32; 8];
    let mut w = PacketWriter::new(&mut s);
    w.push(&SdmaFence::new(0x7f12_3400_0018, 3)?)?;
    w.push(&SdmaTrap::new(3)?)?;
    let n = w.len();
    println!("\nSDMA queue:");
    print!("{}", SdmaListing::new(&s[..n], SdmaGen::Sdma4));
    Ok(())
}
