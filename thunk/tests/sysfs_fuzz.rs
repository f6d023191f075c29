//! Whatever sysfs holds, reading the topology returns a topology or an error — never a panic —
//! and so do the derived queue sizes of every GPU node it returns.

use proptest::prelude::*;
use std::fs;
use std::path::Path;
use thunk::Topology;

fn write(root: &Path, rel: &str, text: &str) {
    let p = root.join(rel);
    fs::create_dir_all(p.parent().unwrap()).unwrap();
    fs::write(p, text).unwrap();
}

/// A `properties` file: mostly well-formed lines with keys the parser knows, some noise.
fn properties() -> impl Strategy<Value = String> {
    let key = prop_oneof![
        Just("simd_count".to_owned()),
        Just("simd_per_cu".to_owned()),
        Just("array_count".to_owned()),
        Just("simd_arrays_per_engine".to_owned()),
        Just("gfx_target_version".to_owned()),
        Just("num_xcc".to_owned()),
        Just("ctl_stack_size".to_owned()),
        Just("cwsr_size".to_owned()),
        Just("drm_render_minor".to_owned()),
        "[a-z_]{1,12}",
    ];
    let value = prop_oneof![
        any::<u64>().prop_map(|v| v.to_string()),
        (0u64..200_000).prop_map(|v| v.to_string()),
        Just("18446744073709551616".to_owned()),
        Just("0x10".to_owned()),
        "[ -~]{0,12}",
    ];
    let line = prop_oneof![
        8 => (key, value).prop_map(|(k, v)| format!("{k} {v}")),
        1 => "[ -~]{0,30}",
        1 => ".{0,10}",
    ];
    prop::collection::vec(line, 0..20).prop_map(|l| l.join("\n"))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn any_tree_reads_or_fails_cleanly(
        node_props in properties(),
        bank in properties(),
        cache in properties(),
        link in properties(),
        gpu_id in prop_oneof![Just("4096\n".to_owned()), "[ -~]{0,12}"],
        generation in prop_oneof![Just("1".to_owned()), "[ -~]{0,8}"],
        sibling in "[0-9,x ]{0,20}",
    ) {
        let d = tempfile::tempdir().unwrap();
        let r = d.path();
        write(r, "generation_id", &generation);
        write(r, "system_properties", "platform_oem 0\n");
        write(r, "nodes/0/gpu_id", "0\n");
        write(r, "nodes/0/properties", "cpu_cores_count 4\n");
        write(r, "nodes/1/gpu_id", &gpu_id);
        write(r, "nodes/1/properties", &node_props);
        write(r, "nodes/1/mem_banks/0/properties", &bank);
        write(r, "nodes/1/caches/0/properties", &format!("{cache}\nsibling_map {sibling}\n"));
        write(r, "nodes/1/io_links/0/properties", &link);
        match Topology::read(r) {
            Ok(t) => {
                for n in &t.nodes {
                    let _ = n.queue_sizes().map(|s| s.context_save_area_size());
                    let _ = (n.generation(), n.sdma_gen(), n.render_minor(), n.cu_count(), n.vram_size());
                    let _ = n.gfx_target_name();
                }
            }
            Err(e) => prop_assert!(!e.to_string().is_empty()),
        }
    }
}
