//! The layers a request crosses on its way from the ioctl to the compute units, spelled once:
//! each one's log target (what `KFD_MODEL_LOG` filters and `kfd trace` records), its short tag
//! and its depth on the path (how far `kfd trace` indents it). The model logs under these
//! targets; `kfd trace` finds a record's layer with [`layer_of`].

/// One layer of the path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layer {
    /// The log target its records carry.
    pub target: &'static str,
    /// The short name `kfd trace` prints.
    pub tag: &'static str,
    /// How deep on the path it sits (0: the process's own requests).
    pub depth: usize,
}

macro_rules! layers {
    ($($(#[$doc:meta])* $name:ident = $target:literal, $tag:literal, $depth:literal;)*) => {
        $(
            $(#[$doc])*
            pub const $name: &str = $target;
        )*

        /// Every layer, from the process down to the waves.
        pub const LAYERS: &[Layer] = &[$(Layer { target: $target, tag: $tag, depth: $depth }),*];
    };
}

layers! {
    /// The process itself (its AQL packets and doorbell stores, as a tool records them).
    USER = "user", "client", 0;
    /// The ioctl table: every request and its result.
    IOCTL = "kfd::ioctl", "ioctl", 0;
    /// The model's own setup and teardown.
    MODEL = "kfd::model", "model", 0;
    /// Faults injected on purpose.
    FAULTS = "kfd::faults", "faults", 0;
    /// The host process's identity (pid caching).
    HOST_USER = "kfd::user", "user", 0;
    /// Process creation, release and the per-device data.
    PROCESS = "kfd::process", "process", 1;
    /// Buffer allocation, mapping and freeing.
    MEMORY = "kfd::memory", "memory", 1;
    /// The render node's GEM buffers.
    GEM = "kfd::gem", "gem", 1;
    /// Eviction and restore of VRAM buffers (TTM's part).
    TTM = "kfd::ttm", "ttm", 1;
    /// Events: creation, signalling, waits.
    EVENTS = "kfd::events", "events", 1;
    /// The interrupt handler turning IH entries into events.
    INTERRUPT = "kfd::interrupt", "irq", 1;
    /// System management events for monitoring processes.
    SMI = "kfd::smi", "smi", 1;
    /// Shared virtual memory ranges and their migrations.
    SVM = "kfd::svm", "svm", 1;
    /// The process queue manager.
    PQM = "kfd::pqm", "pqm", 1;
    /// The device queue manager (cpsch).
    DQM = "kfd::dqm", "dqm", 2;
    /// The packet manager building runlists and HIQ packets.
    PM = "kfd::pm", "pm", 3;
    /// The kernel queue (the HIQ) the packet manager writes.
    KQ = "kfd::kq", "HIQ", 4;
    /// The scheduler firmware reading the HIQ.
    HWS = "hw::hws", "HWS", 5;
    /// The compute micro-engine running PM4 and AQL queues.
    CP = "hw::cp", "CP", 7;
    /// The SDMA engines.
    SDMA = "hw::sdma", "SDMA", 7;
    /// The GPU's page tables.
    VM = "hw::vm", "VM", 7;
    /// Device memory behind the buffers.
    MEM = "hw::mem", "mem", 7;
    /// What the engines share: the thread that notices doorbells and runs them.
    ENGINE = "hw::engine", "engine", 7;
    /// The interrupt ring from the engines to the driver.
    IH = "hw::ih", "IH", 8;
    /// The shader processor input: workgroups and waves launched.
    SPI = "hw::spi", "SPI", 8;
    /// The sequencer: the waves' instructions.
    SQ = "hw::sq", "SQ", 9;
}

/// The scheduler's records of a queue mapped into (or out of) an HQD slot: the [`HWS`] target
/// with [`HQD_MAPPING_MARK`] in the message, one level below the scheduler's own.
pub const HQD: Layer = Layer {
    target: HWS,
    tag: "HQD",
    depth: 6,
};

/// What marks an [`HQD`] record among the scheduler's.
pub const HQD_MAPPING_MARK: &str = " -> ";

/// The layer of a record with this target and message; `None` for a target outside the path.
pub fn layer_of(target: &str, message: &str) -> Option<Layer> {
    if target == HQD.target && message.contains(HQD_MAPPING_MARK) {
        return Some(HQD);
    }
    LAYERS.iter().copied().find(|l| l.target == target)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_are_unique_and_depths_follow_the_path() {
        let mut targets: Vec<_> = LAYERS.iter().map(|l| l.target).collect();
        targets.sort_unstable();
        targets.dedup();
        assert_eq!(targets.len(), LAYERS.len());
        let depth = |t: &str| layer_of(t, "").unwrap().depth;
        assert!(depth(IOCTL) < depth(PQM));
        assert!(depth(PQM) < depth(DQM));
        assert!(depth(DQM) < depth(PM));
        assert!(depth(PM) < depth(KQ));
        assert!(depth(KQ) < depth(HWS));
        assert!(HQD.depth > depth(HWS) && HQD.depth < depth(CP));
        assert!(depth(CP) < depth(SPI) && depth(SPI) < depth(SQ));
        assert_eq!(
            layer_of(HWS, "pasid 0x8001 doorbell 0x1000 -> Compute"),
            Some(HQD)
        );
        assert_eq!(layer_of("preload", ""), None);
    }
}
