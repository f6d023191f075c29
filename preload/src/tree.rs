//! The files the shim serves instead of the real sysfs and `/dev/dri`: the model's KFD
//! topology plus what libdrm, libhsakmt and ROCr read about the amdgpu driver and its render
//! nodes, laid out under one root exactly as under `/` (so `/sys/class/drm/renderD128/device`
//! becomes `<root>/sys/class/drm/renderD128/device`).
//!
//! Written with `std::fs`; the shim calls it with its re-entry guard held, so these calls go
//! straight to libc.

use crate::config::ShimConfig;
use crate::paths::DRM_MAJOR;
use kfd_model::topology::{Node, Topology};
use std::io;
use std::path::Path;

/// The topology directory inside the tree.
pub const TOPOLOGY_DIR: &str = "sys/devices/virtual/kfd/kfd/topology";

/// The `amdgpu` line `/proc/modules` gains (name, size, users, dependents, state, address).
pub const PROC_MODULES_AMDGPU: &str = "amdgpu 12877824 0 - Live 0x0000000000000000\n";

/// The `amdgpu` module parameters the clients read, with the values of the modelled driver.
pub fn amdgpu_parameters(cfg: &ShimConfig) -> Vec<(&'static str, String)> {
    vec![
        ("cwsr_enable", "1".to_owned()),
        ("emu_mode", "0".to_owned()),
        ("sched_policy", "0".to_owned()),
        ("hws_max_conc_proc", "8".to_owned()),
        ("noretry", "-1".to_owned()),
        ("mes", "0".to_owned()),
        ("queue_preemption_timeout_ms", "9000".to_owned()),
        ("max_num_of_queues_per_device", "4096".to_owned()),
        ("debug_evictions", "N".to_owned()),
        ("no_system_mem_limit", "N".to_owned()),
        // Informational: what the shim models.
        ("kfd_model_preset", cfg.preset.name().to_owned()),
    ]
}

/// The PCI slot name (`dddd:bb:dd.f`) of a GPU node, from its `domain` and `location_id`.
pub fn pci_slot_name(node: &Node) -> String {
    let p = &node.properties;
    let loc = p.location_id;
    format!(
        "{:04x}:{:02x}:{:02x}.{:x}",
        p.domain,
        (loc >> 8) & 0xFF,
        (loc >> 3) & 0x1F,
        loc & 0x7
    )
}

fn write(path: &Path, text: impl AsRef<[u8]>) -> io::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::write(path, text)
}

fn symlink(target: &str, link: &Path) -> io::Result<()> {
    if let Some(dir) = link.parent() {
        std::fs::create_dir_all(dir)?;
    }
    std::os::unix::fs::symlink(target, link)
}

/// Writes the whole tree under `root` (which must exist and be empty).
pub fn write_tree(root: &Path, cfg: &ShimConfig, topology: &Topology) -> io::Result<()> {
    topology.write_sysfs(&root.join(TOPOLOGY_DIR))?;

    let module = root.join("sys/module/amdgpu");
    for (name, value) in amdgpu_parameters(cfg) {
        write(&module.join("parameters").join(name), format!("{value}\n"))?;
    }
    write(&module.join("refcnt"), "0\n")?;
    write(&module.join("initstate"), "live\n")?;
    write(&module.join("coresize"), "12877824\n")?;
    std::fs::create_dir_all(module.join("holders"))?;

    std::fs::create_dir_all(root.join("dev/dri"))?;
    std::fs::create_dir_all(root.join("sys/bus/pci/drivers/amdgpu"))?;
    for node in topology.gpus() {
        let p = &node.properties;
        let minor = p.drm_render_minor;
        let render = format!("renderD{minor}");
        let slot = pci_slot_name(node);
        // The placeholder makes `/dev/dri` list the node; opening it is answered by the shim.
        write(&root.join("dev/dri").join(&render), "")?;

        let pci = root.join("sys/devices/pci0000:00").join(&slot);
        write(&pci.join("vendor"), format!("{:#06x}\n", p.vendor_id))?;
        write(&pci.join("device"), format!("{:#06x}\n", p.device_id))?;
        write(
            &pci.join("subsystem_vendor"),
            format!("{:#06x}\n", p.vendor_id),
        )?;
        write(&pci.join("subsystem_device"), "0x0c35\n")?;
        write(
            &pci.join("revision"),
            format!("{:#04x}\n", crate::drm::pci_revision(cfg.preset)),
        )?;
        write(&pci.join("class"), "0x038000\n")?;
        write(
            &pci.join("uevent"),
            format!(
                "DRIVER=amdgpu\nPCI_CLASS=38000\nPCI_ID={:04X}:{:04X}\nPCI_SUBSYS_ID={:04X}:0C35\nPCI_SLOT_NAME={slot}\nMODALIAS=pci:v{:08X}d{:08X}\n",
                p.vendor_id, p.device_id, p.vendor_id, p.vendor_id, p.device_id
            ),
        )?;
        symlink("../../../bus/pci", &pci.join("subsystem"))?;
        symlink("../../../bus/pci/drivers/amdgpu", &pci.join("driver"))?;
        let drm_node = pci.join("drm").join(&render);
        write(&drm_node.join("dev"), format!("{DRM_MAJOR}:{minor}\n"))?;
        write(
            &drm_node.join("uevent"),
            format!("MAJOR={DRM_MAJOR}\nMINOR={minor}\nDEVNAME=dri/{render}\n"),
        )?;
        symlink(
            &format!("../../devices/pci0000:00/{slot}/drm/{render}"),
            &root.join("sys/class/drm").join(&render),
        )?;
        symlink(
            &format!("../../devices/pci0000:00/{slot}/drm/{render}"),
            &root.join(format!("sys/dev/char/{DRM_MAJOR}:{minor}")),
        )?;
        symlink("../..", &drm_node.join("device"))?;
        write_card(root, cfg, node, &slot, &pci)?;
    }
    Ok(())
}

/// Readings the model gives rocm-smi for an idle GPU (it has no sensors): degrees Celsius and
/// watts.
pub const IDLE_TEMPERATURE_C: u64 = 35;
/// See [`IDLE_TEMPERATURE_C`].
pub const IDLE_POWER_W: u64 = 30;
/// See [`IDLE_TEMPERATURE_C`]: the graphics core voltage, millivolts.
pub const IDLE_VDDGFX_MV: u64 = 800;
/// The power cap rocm-smi reports, watts.
pub const POWER_CAP_W: u64 = 300;

/// The primary DRM node `card<N>` of GPU `N` and the amdgpu device files rocm-smi reads
/// (amdgpu's sysfs interface: `mem_info_*` in bytes, `gpu_busy_percent`, the `pp_dpm_*`
/// clock tables with `*` at the current level, hwmon in millidegrees and microwatts).
fn write_card(
    root: &Path,
    cfg: &ShimConfig,
    node: &Node,
    slot: &str,
    pci: &Path,
) -> io::Result<()> {
    let p = &node.properties;
    let index = p.drm_render_minor.saturating_sub(128);
    let card = format!("card{index}");
    let drm_card = pci.join("drm").join(&card);
    write(&drm_card.join("dev"), format!("{DRM_MAJOR}:{index}\n"))?;
    write(
        &drm_card.join("uevent"),
        format!("MAJOR={DRM_MAJOR}\nMINOR={index}\nDEVNAME=dri/{card}\n"),
    )?;
    symlink("../..", &drm_card.join("device"))?;
    symlink(
        &format!("../../devices/pci0000:00/{slot}/drm/{card}"),
        &root.join("sys/class/drm").join(&card),
    )?;
    let facts = cfg.preset.facts();
    let vram = node.vram_size();
    for (name, value) in [
        ("mem_info_vram_total", vram),
        ("mem_info_vram_used", 0),
        ("mem_info_vis_vram_total", vram),
        ("mem_info_vis_vram_used", 0),
        ("gpu_busy_percent", 0),
        ("mem_busy_percent", 0),
        ("pcie_replay_count", 0),
    ] {
        write(&pci.join(name), format!("{value}\n"))?;
    }
    write(&pci.join("unique_id"), format!("{:016x}\n", p.unique_id))?;
    write(
        &pci.join("vbios_version"),
        format!("kfd-model-{}\n", facts.chip),
    )?;
    write(
        &pci.join("product_name"),
        format!("{}\n", facts.marketing_name),
    )?;
    write(&pci.join("power_dpm_force_performance_level"), "auto\n")?;
    write(
        &pci.join("pp_dpm_sclk"),
        format!(
            "0: {}Mhz\n1: {}Mhz *\n",
            facts.clock_mhz / 2,
            facts.clock_mhz
        ),
    )?;
    write(
        &pci.join("pp_dpm_mclk"),
        format!("0: {}Mhz *\n", facts.vram_clk),
    )?;
    let hwmon = pci.join("hwmon").join(format!("hwmon{index}"));
    for (name, value) in [
        ("name", "amdgpu".to_owned()),
        ("temp1_label", "edge".to_owned()),
        ("temp1_input", (IDLE_TEMPERATURE_C * 1000).to_string()),
        ("temp1_crit", "100000".to_owned()),
        ("temp2_label", "junction".to_owned()),
        ("temp2_input", (IDLE_TEMPERATURE_C * 1000).to_string()),
        ("temp3_label", "mem".to_owned()),
        ("temp3_input", (IDLE_TEMPERATURE_C * 1000).to_string()),
        ("fan1_input", "0".to_owned()),
        ("fan1_min", "0".to_owned()),
        ("fan1_max", "3850".to_owned()),
        ("pwm1", "0".to_owned()),
        ("pwm1_min", "0".to_owned()),
        ("pwm1_max", "255".to_owned()),
        ("pwm1_enable", "2".to_owned()),
        ("power1_average", (IDLE_POWER_W * 1_000_000).to_string()),
        ("power1_cap", (POWER_CAP_W * 1_000_000).to_string()),
        ("power1_cap_max", (POWER_CAP_W * 1_000_000).to_string()),
        ("power1_cap_min", "0".to_owned()),
        ("in0_label", "vddgfx".to_owned()),
        ("in0_input", IDLE_VDDGFX_MV.to_string()),
        ("freq1_label", "sclk".to_owned()),
        ("freq1_input", (facts.clock_mhz * 1_000_000).to_string()),
    ] {
        write(&hwmon.join(name), format!("{value}\n"))?;
    }
    symlink("../..", &hwmon.join("device"))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use kfd_model::Preset;

    fn temp_root(name: &str) -> std::path::PathBuf {
        let dir =
            std::env::temp_dir().join(format!("kfd-preload-test-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn tree_has_what_libdrm_and_libhsakmt_read() {
        let root = temp_root("tree");
        let cfg = ShimConfig {
            preset: Preset::Gfx90a,
            gpus: 2,
            ..ShimConfig::default()
        };
        let topo = Topology::from_config(&cfg.model_config());
        write_tree(&root, &cfg, &topo).unwrap();
        let read = |p: &str| std::fs::read_to_string(root.join(p)).unwrap();
        assert_eq!(
            read("sys/devices/virtual/kfd/kfd/topology/generation_id"),
            "1\n"
        );
        assert_eq!(
            read("sys/devices/virtual/kfd/kfd/topology/nodes/2/gpu_id").trim(),
            topo.nodes[2].gpu_id.to_string()
        );
        assert_eq!(read("sys/module/amdgpu/parameters/cwsr_enable"), "1\n");
        assert_eq!(read("sys/module/amdgpu/parameters/emu_mode"), "0\n");
        for (i, minor) in [128, 129].into_iter().enumerate() {
            // Through the symlinks, as libdrm walks them.
            assert_eq!(
                read(&format!("sys/dev/char/226:{minor}/dev")),
                format!("226:{minor}\n")
            );
            assert_eq!(
                read(&format!("sys/class/drm/renderD{minor}/device/vendor")),
                "0x1002\n"
            );
            assert_eq!(
                read(&format!("sys/dev/char/226:{minor}/device/device")),
                "0x740f\n"
            );
            let uevent = read(&format!("sys/class/drm/renderD{minor}/device/uevent"));
            assert!(
                uevent.contains(&format!("PCI_SLOT_NAME=0000:{:02x}:00.0", 3 + i)),
                "{uevent}"
            );
            assert!(root
                .join(format!("sys/dev/char/226:{minor}/device/drm"))
                .is_dir());
            let sub = std::fs::canonicalize(
                root.join(format!("sys/dev/char/226:{minor}/device/subsystem")),
            )
            .unwrap();
            assert_eq!(sub.file_name().unwrap(), "pci");
            assert!(root.join(format!("dev/dri/renderD{minor}")).is_file());
            // What rocm-smi reads: card<N> beside the render node, amdgpu's device files and
            // hwmon (bytes, percent, millidegrees, microwatts, the current clock level).
            let card = format!("sys/class/drm/card{i}");
            assert_eq!(read(&format!("{card}/dev")), format!("226:{i}\n"));
            assert_eq!(
                read(&format!("{card}/device/mem_info_vram_total")),
                format!("{}\n", 64u64 << 30)
            );
            assert_eq!(read(&format!("{card}/device/mem_info_vram_used")), "0\n");
            assert_eq!(read(&format!("{card}/device/gpu_busy_percent")), "0\n");
            assert_eq!(
                read(&format!("{card}/device/pp_dpm_sclk")),
                "0: 850Mhz\n1: 1700Mhz *\n"
            );
            assert_eq!(
                read(&format!("{card}/device/pp_dpm_mclk")),
                "0: 1600Mhz *\n"
            );
            let hwmon = format!("{card}/device/hwmon/hwmon{i}");
            assert_eq!(read(&format!("{hwmon}/name")), "amdgpu\n");
            assert_eq!(read(&format!("{hwmon}/temp1_input")), "35000\n");
            assert_eq!(read(&format!("{hwmon}/power1_average")), "30000000\n");
        }
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn slot_names_follow_location_id() {
        let topo = Topology::from_config(&kfd_model::ModelConfig::new(Preset::Gfx900).with_gpus(3));
        let names: Vec<String> = topo.gpus().map(pci_slot_name).collect();
        assert_eq!(names, ["0000:03:00.0", "0000:04:00.0", "0000:05:00.0"]);
        assert!(PROC_MODULES_AMDGPU.starts_with("amdgpu "));
        assert!(PROC_MODULES_AMDGPU.ends_with('\n'));
    }
}
