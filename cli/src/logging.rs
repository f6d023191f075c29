//! Logging: `env_logger` for `RUST_LOG` (default `warn`), behind a logger that can also hand
//! every record to a sink — the way `kfd trace` watches the model's layers at work while
//! `RUST_LOG` keeps working as usual. While a sink is attached and `RUST_LOG` is unset, the
//! default warnings go only to the sink (the trace shows them in place).

use std::sync::{Arc, OnceLock, RwLock};

use log::{LevelFilter, Log, Metadata, Record};

/// Receives every log record while it is attached.
pub trait RecordSink: Send + Sync {
    /// One record. Called on the logging thread, possibly while the model holds its locks:
    /// it must not call back into the model's locked state.
    fn record(&self, record: &Record<'_>);
}

struct TeeLogger {
    env: env_logger::Logger,
    /// `RUST_LOG` was given.
    explicit: bool,
    sink: RwLock<Option<Arc<dyn RecordSink>>>,
}

impl TeeLogger {
    fn sink(&self) -> Option<Arc<dyn RecordSink>> {
        self.sink
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone()
    }
}

impl Log for TeeLogger {
    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        self.env.enabled(metadata) || self.sink().is_some()
    }

    fn log(&self, record: &Record<'_>) {
        let sink = self.sink();
        if self.env.matches(record) && (self.explicit || sink.is_none()) {
            self.env.log(record);
        }
        if let Some(sink) = sink {
            sink.record(record);
        }
    }

    fn flush(&self) {
        self.env.flush();
    }
}

static LOGGER: OnceLock<&'static TeeLogger> = OnceLock::new();

fn logger() -> &'static TeeLogger {
    LOGGER.get_or_init(|| {
        let env =
            env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn"))
                .build();
        let logger: &'static TeeLogger = Box::leak(Box::new(TeeLogger {
            env,
            explicit: std::env::var_os("RUST_LOG").is_some(),
            sink: RwLock::new(None),
        }));
        // Someone else's logger (a test harness) wins; records then do not reach the sink.
        if log::set_logger(logger).is_ok() {
            log::set_max_level(logger.env.filter());
        }
        logger
    })
}

/// Installs the logger (idempotent).
pub fn init() {
    logger();
}

/// Keeps a sink attached; dropping it detaches the sink and restores the `RUST_LOG` level.
#[must_use = "the sink is detached when the guard is dropped"]
pub struct SinkGuard {
    _private: (),
}

/// Attaches `sink` and raises the level to `trace` until the guard is dropped.
pub fn attach(sink: Arc<dyn RecordSink>) -> SinkGuard {
    let l = logger();
    *l.sink.write().unwrap_or_else(|p| p.into_inner()) = Some(sink);
    log::set_max_level(LevelFilter::Trace);
    SinkGuard { _private: () }
}

impl Drop for SinkGuard {
    fn drop(&mut self) {
        let l = logger();
        *l.sink.write().unwrap_or_else(|p| p.into_inner()) = None;
        log::set_max_level(l.env.filter());
    }
}
