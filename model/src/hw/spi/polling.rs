//! Telling a wave that polls memory from one that works, by what its memory accesses did.
//!
//! A wave that waits for another workgroup (a decoupled look-back, a triangular solve's
//! dependency, a software grid barrier) reads the same flag again and again and writes
//! nothing; on hardware it costs its own wave slot only, on the model it costs host time
//! the waves it waits for could use. A run of a wave that read memory, wrote none and read
//! exactly the words and values its previous run read is a poll: the wave's next run is
//! short ([`super::cu::POLL_TURN`] instructions) and a workgroup whose every running wave polled
//! gives its turn back. Any write or any new value read ends it. The verdict only decides
//! how long a wave runs before others get a turn, never whether it runs.

/// At most this many distinct words (by their signature bits) a polling wave reads.
const POLLED_WORDS: u32 = 8;

/// The global memory accesses of one run of a wave.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct Activity {
    /// Reads (vector and scalar loads, atomics that left memory as it was).
    reads: u32,
    /// Writes (stores, atomics that changed memory).
    writes: u32,
    /// Which (address, value) pairs were read, as the bits of a 64-bit set (each pair sets
    /// one bit by its hash): equal for two runs that read the same words and saw the same.
    signature: u64,
}

impl Activity {
    /// A read of `value` at `address` (an access's first lane stands for the access).
    pub(super) fn read(&mut self, address: u64, value: u32) {
        self.reads = self.reads.saturating_add(1);
        let h = (address ^ (u64::from(value) << 32 | u64::from(value)))
            .wrapping_mul(0x9E37_79B9_7F4A_7C15);
        self.signature |= 1 << (h >> 58);
    }

    /// A write.
    pub(super) fn write(&mut self) {
        self.writes = self.writes.saturating_add(1);
    }

    /// Whether this run polled: it read, wrote nothing, and read the same few words and
    /// values `previous` read (a wave streaming through memory fills the set instead).
    pub(super) fn polled_after(&self, previous: &Activity) -> bool {
        self.writes == 0
            && self.reads > 0
            && self.signature == previous.signature
            && self.signature.count_ones() <= POLLED_WORDS
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(reads: &[(u64, u32)], writes: usize) -> Activity {
        let mut a = Activity::default();
        for &(addr, v) in reads {
            a.read(addr, v);
        }
        for _ in 0..writes {
            a.write();
        }
        a
    }

    #[test]
    fn rereading_the_same_flag_is_a_poll_and_a_change_ends_it() {
        let first = run(&[(0x1000, 0); 40], 0);
        let again = run(&[(0x1000, 0); 17], 0);
        assert!(
            again.polled_after(&first),
            "the same word and value, read any number of times"
        );
        let set = run(&[(0x1000, 0), (0x1000, 1)], 0);
        assert!(!set.polled_after(&again), "the flag changed");
        assert!(
            !run(&[(0x1000, 0)], 1).polled_after(&again),
            "a write is work"
        );
        assert!(
            !run(&[], 0).polled_after(&Activity::default()),
            "no reads: computing"
        );
        assert!(!run(&[(0x1004, 0)], 0).polled_after(&again), "another word");
    }

    #[test]
    fn a_wave_that_streams_through_memory_does_not_poll() {
        let a = run(
            &(0..64)
                .map(|i| (0x2000 + 256 * i, i as u32))
                .collect::<Vec<_>>(),
            0,
        );
        let b = run(
            &(64..128)
                .map(|i| (0x2000 + 256 * i, i as u32))
                .collect::<Vec<_>>(),
            0,
        );
        assert!(!b.polled_after(&a));
        // Runs long enough to set every bit of the set look alike, and still do not poll.
        let many = |base: u64| {
            run(
                &(0..4096)
                    .map(|i| (base + 4 * i, i as u32))
                    .collect::<Vec<_>>(),
                0,
            )
        };
        let (c, d) = (many(0x10_0000), many(0x20_0000));
        assert_eq!(c.signature, u64::MAX);
        assert!(!d.polled_after(&c));
    }
}
