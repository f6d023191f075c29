//! `kfd trace dispatch`: one kernel — the project's `axpy` (`cli/kernels/axpy.cl`, the kept
//! code object) — from the AQL packet through the CP and the SPI's workgroup and wave launch
//! (each wave's initial registers) to one wave instruction by instruction (disassembly and
//! the registers each instruction changed), the completion signal and the interrupt.
//!
//! The client is the thunk, opened on the trace's model; the model's [`DispatchObserver`]
//! hook puts the SPI's and the waves' events into the trace as records of the `hw::spi`
//! and `hw::sq` layers, with the time each happened.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use codeobj::KernelDescriptor;
use isa::exec::Wave;
use kfd_model::hw::observe::{
    sgpr_name, DispatchObserver, DispatchStart, InstructionStep, WaveEnd, WaveId,
};
use thunk::model_access::OpenOptionsModelExt;
use thunk::{Kfd, OpenOptions, QueueOptions};

use super::capture::{Capture, Note};
use super::scenarios::ScenarioOptions;
use super::session::{Detail, Session};
use crate::error::{CliError, CliResult};
use crate::kernels::{self, Axpy};

/// Work-items of the traced dispatch: one full workgroup and a partial one.
pub const GRID: u32 = 200;
/// Work-items per workgroup: two waves each.
pub const WORKGROUP: u16 = 128;
/// The scalar of `axpy`.
const A: u32 = 3;
/// Waves of the dispatch: `--wave` takes 0 to one less.
pub const WAVES: u64 = (GRID.div_ceil(WORKGROUP as u32) * (WORKGROUP as u32).div_ceil(64)) as u64;

/// Where a wave's initial SGPRs come from, per the kernel descriptor's enable bits
/// (AMDGPUUsage, "Initial Kernel Execution State"): `(first SGPR, count, meaning)`.
pub fn sgpr_layout(d: &KernelDescriptor) -> Vec<(usize, usize, &'static str)> {
    let p = d.kernel_code_properties;
    let r = d.compute_pgm_rsrc2;
    let mut out = Vec::new();
    let mut next = 0;
    let mut add = |on: bool, n: usize, what: &'static str, at: &mut usize| {
        if on {
            out.push((*at, n, what));
            *at += n;
        }
    };
    add(
        p.enable_sgpr_private_segment_buffer(),
        4,
        "private segment buffer (V#)",
        &mut next,
    );
    add(
        p.enable_sgpr_dispatch_ptr(),
        2,
        "dispatch packet",
        &mut next,
    );
    add(p.enable_sgpr_queue_ptr(), 2, "amd_queue_t", &mut next);
    add(
        p.enable_sgpr_kernarg_segment_ptr(),
        2,
        "kernel arguments",
        &mut next,
    );
    add(p.enable_sgpr_dispatch_id(), 2, "dispatch id", &mut next);
    add(
        p.enable_sgpr_flat_scratch_init(),
        2,
        "flat scratch init",
        &mut next,
    );
    add(
        p.enable_sgpr_private_segment_size(),
        1,
        "private segment size",
        &mut next,
    );
    // System SGPRs follow the user SGPRs RSRC2 counts.
    let mut next = usize::from(r.user_sgpr_count());
    add(
        r.enable_sgpr_workgroup_id_x(),
        1,
        "workgroup id x",
        &mut next,
    );
    add(
        r.enable_sgpr_workgroup_id_y(),
        1,
        "workgroup id y",
        &mut next,
    );
    add(
        r.enable_sgpr_workgroup_id_z(),
        1,
        "workgroup id z",
        &mut next,
    );
    add(
        r.enable_sgpr_workgroup_info(),
        1,
        "workgroup info",
        &mut next,
    );
    add(
        r.enable_private_segment(),
        1,
        "private segment wave offset",
        &mut next,
    );
    out
}

fn reg_range(first: usize, count: usize) -> String {
    if count == 1 {
        format!("s{first}")
    } else {
        format!("s[{first}:{}]", first + count - 1)
    }
}

/// The lines describing a wave's initial state.
pub fn initial_lines(wave: &Wave, layout: &[(usize, usize, &'static str)]) -> Vec<String> {
    let exec = wave.exec();
    let mut out = vec![format!(
        "PC {:#x}, EXEC {exec:#018x} ({} lanes), {} VGPRs{}",
        wave.pc,
        exec.count_ones(),
        wave.vgpr.len(),
        if wave.agpr.is_empty() {
            String::new()
        } else {
            format!(" + {} AGPRs", wave.agpr.len())
        }
    )];
    let mut shown = vec![false; wave.sgpr.len()];
    for &(first, count, what) in layout {
        let values: Vec<String> = (first..first + count)
            .filter_map(|i| wave.sgpr.get(i))
            .map(|v| format!("{v:#x}"))
            .collect();
        let joined = if count == 2 {
            format!("{:#x}", wave.sgpr64(first))
        } else {
            values.join(" ")
        };
        out.push(format!(
            "{:<9} {what:<28} {joined}",
            reg_range(first, count)
        ));
        for s in shown.iter_mut().skip(first).take(count) {
            *s = true;
        }
    }
    // Anything else the dispatcher set (there should be nothing).
    for (i, v) in wave.sgpr.iter().enumerate().take(102) {
        if *v != 0 && !shown[i] {
            out.push(format!("{:<9} {:<28} {v:#x}", sgpr_name(i), "(set)"));
        }
    }
    if let Ok(v0) = wave.v(0) {
        let last = 63 - exec.leading_zeros().min(63) as usize;
        out.push(format!(
            "{:<9} {:<28} lane 0: {:#x}, lane 1: {:#x}, … lane {last}: {:#x}",
            "v0",
            if wave.target == isa::Target::Gfx90a {
                "work-item id (x | y<<10 | z<<20)"
            } else {
                "work-item id x"
            },
            v0[0],
            v0[1],
            v0[last]
        ));
    }
    out
}

/// The observer that writes the SPI's and the waves' events into the trace.
pub struct Recorder {
    capture: Arc<Capture>,
    wave: u64,
    layout: Vec<(usize, usize, &'static str)>,
    traced: Mutex<u64>,
}

impl DispatchObserver for Recorder {
    fn dispatch_start(&self, d: &DispatchStart) {
        let groups = d.groups[0] * d.groups[1] * d.groups[2];
        self.capture.push(
            kfd_model::layer::SPI,
            format!(
                "dispatch {}: kernel object {:#x}, entry {:#x}; grid {}×{}×{} in workgroups of {}×{}×{} → {groups} workgroup(s) × {} wave(s); {} VGPRs, LDS {} bytes",
                d.dispatch,
                d.kernel_object,
                d.entry,
                d.grid[0], d.grid[1], d.grid[2],
                d.workgroup[0], d.workgroup[1], d.workgroup[2],
                d.waves_per_group,
                d.vgprs,
                d.lds_bytes
            ),
            Vec::new(),
        );
    }

    fn wave_start(&self, id: WaveId, initial: &Wave) {
        // Where the SPI placed it, as the wave itself reads it (HW_REG_HW_ID).
        let at = initial.hw_id.fields(initial.target);
        let mut notes = vec![Note::WaveStart {
            index: id.index,
            workgroup: id.workgroup,
            wave: id.wave,
            se: at.se_id,
            cu: at.cu_id,
            simd: at.simd_id,
        }];
        let chosen = id.index == self.wave;
        if chosen {
            notes.push(Note::Lines {
                lines: initial_lines(initial, &self.layout),
            });
        }
        self.capture.push(
            kfd_model::layer::SPI,
            format!(
                "workgroup ({},{},{}) wave {} → wave #{} on SE {} CU {} SIMD {} (HW_ID {:#010x}): EXEC {:#018x}{}",
                id.workgroup[0],
                id.workgroup[1],
                id.workgroup[2],
                id.wave,
                id.index,
                at.se_id,
                at.cu_id,
                at.simd_id,
                initial.hw_id.0,
                initial.exec(),
                if chosen { " (traced)" } else { "" }
            ),
            notes,
        );
    }

    fn wants_instructions(&self, id: WaveId) -> bool {
        id.index == self.wave
    }

    fn instruction(&self, _id: WaveId, step: &InstructionStep) {
        if let Ok(mut n) = self.traced.lock() {
            *n += 1;
        }
        let lines: Vec<String> = step.changes.iter().map(|c| c.to_string()).collect();
        self.capture.push(
            kfd_model::layer::SQ,
            format!("{:#x}  {}", step.pc, step.text),
            if lines.is_empty() {
                Vec::new()
            } else {
                vec![Note::Lines { lines }]
            },
        );
    }

    fn wave_end(&self, id: WaveId, end: &WaveEnd) {
        let (instructions, how) = match end {
            WaveEnd::EndOfProgram { instructions } => (*instructions, "s_endpgm".to_owned()),
            WaveEnd::Halted { instructions, why } => (*instructions, format!("halted: {why}")),
        };
        self.capture.push(
            kfd_model::layer::SQ,
            format!(
                "wave #{} ended ({how}) after {instructions} instructions",
                id.index
            ),
            vec![Note::WaveEnd {
                index: id.index,
                instructions,
            }],
        );
    }

    fn dispatch_end(&self, dispatch: u64, faulted: bool) {
        self.capture.push(
            kfd_model::layer::SPI,
            format!(
                "dispatch {dispatch}: {}",
                if faulted {
                    "stopped on a fault"
                } else {
                    "every wave ended; the CP retires the packet"
                }
            ),
            Vec::new(),
        );
    }
}

const WAIT: Duration = Duration::from_secs(10);

/// Checks the scenario's options before anything runs: a wave of the dispatch, a part a code
/// object is kept for.
pub fn check(preset: kfd_model::Preset, wave: u64) -> CliResult<()> {
    if wave >= WAVES {
        return Err(CliError::usage(format!(
            "--wave {wave}: the dispatch has {WAVES} waves (0 to {})",
            WAVES - 1
        )));
    }
    let part = preset.name();
    if kernels::kept_code_object(part).is_none() {
        return Err(CliError::usage(format!(
            "the dispatch scenario runs the kept {} code objects: --preset {}, not {part}",
            kernels::AXPY,
            kernels::kept_processors().join(" or ")
        )));
    }
    Ok(())
}

/// The scenario.
pub fn dispatch(session: &mut Session, options: ScenarioOptions) -> CliResult<()> {
    check(session.preset, options.wave)?;
    let model = session.model.clone();
    let kfd = session.step(
        "process: open /dev/kfd through the thunk, ACQUIRE_VM",
        Detail::Summary,
        |_| {
            Kfd::open_with(OpenOptions::model_instance(&model))
                .map_err(|e| CliError::failure(format!("open: {e}")))
        },
        |k, _| format!("{} GPU(s)", k.gpus().len()),
    )?;
    let gpu = kfd
        .gpus()
        .first()
        .cloned()
        .ok_or_else(|| CliError::failure("the model has no GPU"))?;
    let axpy = session.step(
        format!(
            "load the code object ({}, kept for {}) and fill x and y",
            kernels::AXPY_SOURCE,
            session.preset.name()
        ),
        Detail::Summary,
        |_| Axpy::load(&gpu, GRID, A),
        |a, _| {
            let d = &a.kernel.descriptor;
            format!(
                "{}: descriptor at {:#x}, entry at {:#x}, {} VGPRs, {} SGPRs, {} bytes of arguments",
                a.kernel.name,
                a.kernel.descriptor_address,
                a.kernel
                    .descriptor_address
                    .wrapping_add_signed(d.kernel_code_entry_byte_offset),
                d.vgpr_count(a.processor),
                d.sgpr_count(),
                a.kernel.kernarg_size
            )
        },
    )?;
    let mut queue = session.step(
        "CREATE_QUEUE (AQL compute)",
        Detail::Summary,
        |_| {
            gpu.create_aql_queue(&QueueOptions::new())
                .map_err(|e| CliError::failure_in("CREATE_QUEUE", e))
        },
        |q, s| {
            format!(
                "ring {:#x} ({} bytes); {} queue(s) mapped",
                q.ring().gpu_va(),
                q.ring_size(),
                s.mapped.len()
            )
        },
    )?;
    let args = axpy.args()?;
    let capture = session.capture();
    let done = session.step(
        "client: the AQL KERNEL_DISPATCH packet → ring, write index, doorbell",
        Detail::Full,
        |s| {
            let done = queue
                .dispatch(&axpy.kernel, [GRID, 1, 1], [WORKGROUP, 1, 1], &args)
                .map_err(|e| CliError::failure(format!("dispatch: {e}")))?;
            let slot = done.packet_index() % u64::from(queue.ring_size() / 64);
            let bytes = queue
                .ring()
                .read_vec(slot * 64, 64)
                .map_err(|e| CliError::failure(format!("reading the ring: {e}")))?;
            let text = pm4::aql::decode_aql(&bytes)
                .map(|p| p.to_string())
                .unwrap_or_else(|e| format!("does not decode: {e}"));
            s.note(
                kfd_model::layer::USER,
                format!(
                    "packet {} at ring {:#x}, then the write index {} and the doorbell",
                    done.packet_index(),
                    queue.ring().gpu_va() + slot * 64,
                    done.packet_index() + 1
                ),
                vec![Note::Lines {
                    lines: text.lines().map(str::to_owned).collect(),
                }],
            );
            Ok(done)
        },
        |d, _| {
            format!(
                "packet {}: {GRID} work-items in workgroups of {WORKGROUP}; completion signal {:#x} = 1",
                d.packet_index(),
                d.signal_address()
            )
        },
    )?;
    let node = session.node()?;
    let recorder = Arc::new(Recorder {
        capture,
        wave: options.wave,
        layout: kernels_layout(&axpy),
        traced: Mutex::new(0),
    });
    let observer: Arc<dyn DispatchObserver> = recorder.clone();
    model
        .set_dispatch_observer(node.gpu_id, Some(observer))
        .map_err(|e| CliError::failure(format!("installing the dispatch observer: {e}")))?;
    let ran = session.step(
        format!(
            "the CP runs the packet: SPI → workgroups → waves (wave #{} traced) → completion signal → interrupt (Model::run_until_idle)",
            options.wave
        ),
        Detail::Full,
        |_| Ok(model.run_until_idle()),
        |a, _| {
            format!(
                "{} packet(s), {} interrupt(s); wave #{} ran {} instructions",
                a.packets,
                a.interrupts,
                options.wave,
                recorder.traced.lock().map(|n| *n).unwrap_or(0)
            )
        },
    );
    let removed = model.set_dispatch_observer(node.gpu_id, None);
    ran?;
    removed.map_err(|e| CliError::failure(format!("removing the dispatch observer: {e}")))?;
    session.step(
        "the client: completion signal and event (WAIT_EVENTS), then the result",
        Detail::Full,
        |_| {
            done.wait(WAIT)
                .map_err(|e| CliError::failure(format!("completion: {e}")))?;
            axpy.correct()
        },
        |correct, _| {
            format!(
                "signal {:#x} → 0; y[i] = {A}·x[i] + y[i]: {correct} of {GRID} correct",
                done.signal_address()
            )
        },
    )?;
    let correct = axpy.correct()?;
    if correct != GRID {
        return Err(CliError::failure(format!(
            "{correct} of {GRID} elements of y are right"
        )));
    }
    drop(queue);
    drop(done);
    drop(axpy);
    session.step(
        "process: close /dev/kfd (process termination)",
        Detail::Summary,
        move |_| {
            drop(gpu);
            drop(kfd);
            Ok(())
        },
        |_, s| format!("{} queue(s) left", s.total_queues),
    )?;
    Ok(())
}

fn kernels_layout(axpy: &Axpy) -> Vec<(usize, usize, &'static str)> {
    sgpr_layout(&axpy.kernel.descriptor)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_traced_dispatch_has_two_workgroups_of_two_waves() {
        assert_eq!(WAVES, 4);
    }

    #[test]
    fn the_sgpr_layout_follows_the_enable_bits() {
        let bytes = kernels::kept_code_object("gfx900").unwrap();
        let co = codeobj::CodeObject::parse(bytes).unwrap();
        let d = co.kernels()[0].descriptor;
        let layout = sgpr_layout(&d);
        // axpy (code object v4): private segment buffer s[0:3], dispatch ptr s[4:5],
        // kernarg ptr s[6:7]; the workgroup id x after the 8 user SGPRs (its disassembly
        // reads the group size through s[4:5] and the arguments through s[6:7], and
        // multiplies s8).
        assert_eq!(
            layout,
            [
                (0, 4, "private segment buffer (V#)"),
                (4, 2, "dispatch packet"),
                (6, 2, "kernel arguments"),
                (8, 1, "workgroup id x"),
            ]
        );
    }
}
