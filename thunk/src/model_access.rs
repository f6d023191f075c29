//! The escape hatch to the driver model behind a [`Kfd`] (feature `model`).
//!
//! Nothing here is needed to use the thunk: [`OpenOptions::model`] takes the shared
//! [`Preset`](crate::Preset), and everything else speaks only the kernel's contract through
//! [`Backend`](crate::Backend). Tests, benches and teaching tools that want to look inside
//! the model — its counters, a second process on the same model, a configuration beyond a
//! preset — import these traits and accept the model crate's types in return.
//!
//! ```
//! use thunk::model_access::{KfdModelExt, OpenOptionsModelExt};
//! use thunk::{Kfd, OpenOptions, Preset};
//!
//! let kfd = Kfd::open_with(OpenOptions::model(Preset::Gfx900, 1))?;
//! let model = kfd.model().expect("runs on the model");
//! // A second process on the same model, as a second program would open /dev/kfd.
//! let other = Kfd::open_with(OpenOptions::model_instance(model))?;
//! assert_eq!(model.process_count(), 2);
//! # drop(other);
//! # Ok::<(), thunk::Error>(())
//! ```

use crate::kfd::{BackendChoice, Kfd, OpenOptions};

pub use crate::backend::ModelBackend;
pub use kfd_model::{Model, ModelConfig};

/// The model behind a [`Kfd`].
pub trait KfdModelExt {
    /// The model behind this process, when it runs on one.
    fn model(&self) -> Option<&Model>;
}

impl KfdModelExt for Kfd {
    fn model(&self) -> Option<&Model> {
        self.session.model.as_ref()
    }
}

/// Opening on a model configured beyond a preset, or on an existing model.
pub trait OpenOptionsModelExt: Sized {
    /// A new model built from `config`.
    fn model_config(config: ModelConfig) -> Self;

    /// Another process on an existing model (as a second program would open `/dev/kfd`).
    fn model_instance(model: &Model) -> Self;
}

impl OpenOptionsModelExt for OpenOptions {
    fn model_config(config: ModelConfig) -> Self {
        OpenOptions::with(BackendChoice::Model(Box::new(config)))
    }

    fn model_instance(model: &Model) -> Self {
        OpenOptions::with(BackendChoice::ModelInstance(model.clone()))
    }
}
