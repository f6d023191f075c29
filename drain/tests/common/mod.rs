//! Helpers shared by the integration tests: a model GPU, and the model's resource counters.
#![allow(dead_code)]

use std::sync::Arc;
use std::time::Duration;
use thunk::model_access::{ModelBackend, ModelConfig};
use thunk::{Gpu, Kfd, OpenOptions, Preset};

/// A generous bound for waits that normally take microseconds (the machine may be loaded).
pub const T: Duration = Duration::from_secs(60);

/// One gfx900 of the in-process model.
pub fn model_gpu() -> (Kfd, Gpu) {
    let _ = env_logger::builder().is_test(true).try_init();
    let kfd = Kfd::open_with(OpenOptions::model(Preset::Gfx900, 1)).expect("model");
    let gpu = kfd.gpu(0).expect("a GPU");
    (kfd, gpu)
}

/// A model GPU of `preset` whose backend the test keeps, to read the driver's counts of the
/// process's buffers, queues and events.
pub fn counted_gpu(preset: Preset) -> (Arc<ModelBackend>, Kfd, Gpu) {
    let _ = env_logger::builder().is_test(true).try_init();
    let backend = Arc::new(ModelBackend::new(ModelConfig::new(preset)).expect("model"));
    let kfd = Kfd::open_with(OpenOptions::backend(backend.clone())).expect("open");
    let gpu = kfd.gpu(0).expect("a GPU");
    (backend, kfd, gpu)
}

/// (buffers, queues, events) the driver holds for the process.
pub fn resources(b: &ModelBackend) -> (usize, usize, usize) {
    let p = b.process();
    (p.buffer_count(), p.queue_count(), p.events().len())
}
