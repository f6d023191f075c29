//! Builder, update, decode and helper costs. The model calls `init` on every CREATE_QUEUE
//! and `update` on every UPDATE_QUEUE / CU mask / eviction / restore, so these bound the
//! driver model's queue-management overhead.

// `criterion_group!` generates an undocumented `pub fn`.
#![allow(missing_docs)]

use criterion::{black_box, criterion_group, criterion_main, Criterion};
use mqd::{
    topology_sizes, ComputeMqd, CuMask, Generation, GfxVersion, MqdConfig, QueueKind,
    QueueProperties, SdmaMqd, ShaderLayout, TopologyInputs, UpdateInfo,
};

fn builders(c: &mut Criterion) {
    let props = QueueProperties::golden_aql();
    for (name, gc) in [
        ("gfx9", GfxVersion::new(9, 0, 0)),
        ("gfx10", GfxVersion::new(10, 3, 0)),
        ("gfx11", GfxVersion::new(11, 0, 0)),
    ] {
        let config = MqdConfig::new(gc);
        c.bench_function(&format!("compute_init/{name}"), |b| {
            b.iter(|| ComputeMqd::init(black_box(&config), black_box(&props), 0x1000))
        });
    }
    let config = MqdConfig::new(GfxVersion::new(9, 0, 0))
        .with_shader_layout(ShaderLayout::uniform(4, 1, 16).unwrap_or_else(|e| panic!("{e}")));
    let mut mqd = ComputeMqd::init(&config, &props, 0x1000).unwrap_or_else(|e| panic!("{e}"));
    c.bench_function("compute_update/gfx9", |b| {
        b.iter(|| mqd.update(black_box(&config), black_box(&props), None))
    });
    let info = UpdateInfo {
        cu_mask: CuMask::from_words(&[0x5555_5555, 0x5555_5555]).ok(),
        gws: false,
    };
    c.bench_function("compute_update_cu_mask/gfx9_64cu", |b| {
        b.iter(|| mqd.update(black_box(&config), black_box(&props), Some(&info)))
    });
    let sdma_props = QueueProperties {
        kind: QueueKind::Sdma,
        ..props
    };
    let config11 = MqdConfig::new(GfxVersion::new(11, 0, 0));
    c.bench_function("sdma_init/gfx11", |b| {
        b.iter(|| SdmaMqd::init(black_box(&config11), black_box(&sdma_props)))
    });
    let bytes = mqd.as_bytes().to_vec();
    c.bench_function("compute_decode/gfx9", |b| {
        b.iter(|| ComputeMqd::decode(Generation::Gfx9, black_box(&bytes)))
    });
    c.bench_function("compute_summary_display/gfx9", |b| {
        b.iter(|| black_box(&mqd).to_string())
    });
    let inputs = TopologyInputs {
        gfx_target_version: GfxVersion::new(9, 0, 10),
        simd_count: 416,
        simd_per_cu: 4,
        num_xcc: 1,
        array_count: 8,
        simd_arrays_per_engine: 1,
        vgpr_per_cu: None,
    };
    c.bench_function("topology_sizes/gfx90a", |b| {
        b.iter(|| topology_sizes(black_box(&inputs)))
    });
}

criterion_group!(benches, builders);
criterion_main!(benches);
