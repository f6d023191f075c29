//! The exit summary: when `KFD_RUN_SUMMARY` names a file, a process that used the model
//! appends one line of JSON there at exit with the model's shader counters, which `kfd run`
//! reads and prints:
//!
//! ```text
//! {"pid":4242,"preset":"gfx900","gpus":1,"dispatches":3,"workgroups":40,"waves":160,"instructions":9120,"faults":0}
//! ```
//!
//! One line per process (appended), so a program that starts other programs under the shim
//! leaves one line for each of them that opened `/dev/kfd`.

use kfd_model::hw::observe::ShaderCounts;
use kfd_model::Preset;

/// The summary line of process `pid` (with its trailing newline).
pub fn summary_line(pid: u32, preset: Preset, gpus: u32, c: &ShaderCounts) -> String {
    // Every value is a number or a preset name (letters and digits): nothing to escape.
    format!(
        "{{\"pid\":{pid},\"preset\":\"{}\",\"gpus\":{gpus},\"dispatches\":{},\"workgroups\":{},\"waves\":{},\"instructions\":{},\"faults\":{}}}\n",
        preset.name(),
        c.dispatches,
        c.workgroups,
        c.waves,
        c.instructions,
        c.faults
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_carries_every_counter_under_its_name() {
        let c = ShaderCounts {
            dispatches: 1,
            workgroups: 2,
            waves: 3,
            instructions: 4,
            faults: 5,
        };
        assert_eq!(
            summary_line(7, Preset::Gfx90a, 2, &c),
            "{\"pid\":7,\"preset\":\"gfx90a\",\"gpus\":2,\"dispatches\":1,\"workgroups\":2,\
             \"waves\":3,\"instructions\":4,\"faults\":5}\n"
        );
    }
}
