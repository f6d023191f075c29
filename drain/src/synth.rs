//! Synthetic trace records that prove their own delivery: each payload is a body, the
//! record's sequence number and a checksum over both, so a reader can check order (sequence)
//! and content (checksum) of every record. Used by the tests, the benchmarks, the example
//! and [`crate::run`].
//!
//! ```text
//! payload (len bytes, a multiple of 8, at least 16):
//!   [ body: len − 16 bytes ][ sequence: u64 ][ checksum(body ‖ sequence): u64 ]
//! ```
//!
//! Bodies are windows of one pseudo-random pattern chosen by the sequence number, with their
//! hash states precomputed, so producing a record costs no hashing; checking one hashes it
//! all.

use crate::error::{Error, Result};
use crate::layout::Record;
use crate::producer::RecordSpace;

/// The record kind synthetic records carry.
pub const SYNTH_KIND: u16 = 0x5EC0;

/// Bodies to choose from.
const VARIANTS: usize = 16;

fn step(h: u64, w: u64) -> u64 {
    (h.rotate_left(5) ^ w).wrapping_mul(0x517C_C1B7_2722_0A95)
}

fn finish(h: u64, len: u64) -> u64 {
    let mut x = h ^ len;
    x ^= x >> 33;
    x = x.wrapping_mul(0xFF51_AFD7_ED55_8CCD);
    x ^ (x >> 33)
}

fn fold(mut h: u64, bytes: &[u8]) -> u64 {
    // Eight words per round keeps unoptimised builds (the test profile) reasonably fast.
    let mut blocks = bytes.chunks_exact(64);
    for b in blocks.by_ref() {
        let mut w = [0u64; 8];
        for (i, c) in b.chunks_exact(8).enumerate() {
            let mut a = [0u8; 8];
            a.copy_from_slice(c);
            if let Some(slot) = w.get_mut(i) {
                *slot = u64::from_le_bytes(a);
            }
        }
        for x in w {
            h = step(h, x);
        }
    }
    let rest = blocks.remainder();
    let mut words = rest.chunks_exact(8);
    for c in words.by_ref() {
        let mut a = [0u8; 8];
        a.copy_from_slice(c);
        h = step(h, u64::from_le_bytes(a));
    }
    let tail = words.remainder();
    if !tail.is_empty() {
        let mut a = [0u8; 8];
        a.get_mut(..tail.len())
            .map(|d| d.copy_from_slice(tail))
            .unwrap_or_default();
        h = step(h, u64::from_le_bytes(a));
    }
    h
}

/// The checksum of `bytes` (a word-wise multiplicative hash; not cryptographic).
pub fn checksum(bytes: &[u8]) -> u64 {
    finish(fold(0, bytes), bytes.len() as u64)
}

/// Makes synthetic records: 0, 1, 2, … each `payload_len` bytes.
#[derive(Clone, Debug)]
pub struct SynthSource {
    len: u32,
    pattern: Vec<u8>,
    states: [u64; VARIANTS],
    next: u64,
}

impl SynthSource {
    /// Records of `payload_len` bytes (a multiple of 8, at least 16).
    pub fn new(payload_len: u32) -> Result<Self> {
        if payload_len < 16 || payload_len % 8 != 0 {
            return Err(Error::config(format!(
                "synthetic payloads are a multiple of 8 bytes and at least 16, not {payload_len}"
            )));
        }
        let body = (payload_len - 16) as usize;
        let mut x = 0x9E37_79B9_7F4A_7C15u64 ^ u64::from(payload_len);
        let pattern: Vec<u8> = (0..body + 8 * VARIANTS)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (x >> 24) as u8
            })
            .collect();
        let mut states = [0u64; VARIANTS];
        for (v, s) in states.iter_mut().enumerate() {
            *s = fold(0, pattern.get(8 * v..8 * v + body).unwrap_or_default());
        }
        Ok(SynthSource {
            len: payload_len,
            pattern,
            states,
            next: 0,
        })
    }

    /// The payload length.
    pub fn payload_len(&self) -> u32 {
        self.len
    }

    /// The sequence number of the next record.
    pub fn next_sequence(&self) -> u64 {
        self.next
    }

    fn parts(&self, seq: u64) -> (&[u8], u64) {
        let v = (seq % VARIANTS as u64) as usize;
        let body = (self.len - 16) as usize;
        let b = self.pattern.get(8 * v..8 * v + body).unwrap_or_default();
        let state = self.states.get(v).copied().unwrap_or(0);
        let check = finish(step(state, seq), u64::from(self.len) - 8);
        (b, check)
    }

    /// Writes the next record's payload into a reserved record; returns its sequence number.
    pub fn write_next(&mut self, space: &mut RecordSpace<'_>) -> Result<u64> {
        let seq = self.next;
        let (body, check) = self.parts(seq);
        let body_len = body.len() as u32;
        space.write(0, body)?;
        let mut tail = [0u8; 16];
        tail[..8].copy_from_slice(&seq.to_le_bytes());
        tail[8..].copy_from_slice(&check.to_le_bytes());
        space.write(body_len, &tail)?;
        self.next += 1;
        Ok(seq)
    }

    /// The next record's payload, built in `buf`; returns its sequence number.
    pub fn next_payload(&mut self, buf: &mut Vec<u8>) -> u64 {
        let seq = self.next;
        let (body, check) = self.parts(seq);
        buf.clear();
        buf.extend_from_slice(body);
        buf.extend_from_slice(&seq.to_le_bytes());
        buf.extend_from_slice(&check.to_le_bytes());
        self.next += 1;
        seq
    }

    /// The payload record `seq` carries, built in `buf`.
    pub fn payload_of(&self, seq: u64, buf: &mut Vec<u8>) {
        let (body, check) = self.parts(seq);
        buf.clear();
        buf.extend_from_slice(body);
        buf.extend_from_slice(&seq.to_le_bytes());
        buf.extend_from_slice(&check.to_le_bytes());
    }

    /// Skips a sequence number (a record that was dropped).
    pub fn skip(&mut self) {
        self.next += 1;
    }
}

/// Checks synthetic records as they arrive: kind, length, checksum and sequence.
///
/// By default the checksum is recomputed over the received bytes. [`SynthCheck::exact`]
/// instead compares each payload byte for byte with the one its sequence number was produced
/// with (checksum field included) — a stronger check that runs at `memcmp` speed, for
/// unoptimised builds moving gigabytes.
#[derive(Clone, Debug, Default)]
pub struct SynthCheck {
    next: u64,
    allow_gaps: bool,
    exact: Option<(SynthSource, Vec<u8>)>,
    /// Records checked.
    pub records: u64,
    /// Payload bytes checked.
    pub payload_bytes: u64,
    /// Sequence numbers skipped (with gaps allowed: dropped records).
    pub missing: u64,
}

impl SynthCheck {
    /// Every record must come, in order, starting at 0.
    pub fn in_order() -> Self {
        Self::default()
    }

    /// Records must come in increasing order; gaps (dropped records) are counted.
    pub fn with_gaps() -> Self {
        SynthCheck {
            allow_gaps: true,
            ..Self::default()
        }
    }

    /// Compares every payload with what `source`'s generator made for its sequence number.
    pub fn exact(mut self, source: &SynthSource) -> Self {
        self.exact = Some((source.clone(), Vec::new()));
        self
    }

    /// The sequence number expected next.
    pub fn expected(&self) -> u64 {
        self.next
    }

    /// Checks one record; returns its sequence number.
    pub fn check(&mut self, r: &Record<'_>) -> Result<u64> {
        let bad = |what: String| Err(Error::corrupt(0, what));
        if r.kind != SYNTH_KIND {
            return bad(format!(
                "record {} has kind {:#x}, not {SYNTH_KIND:#x}",
                self.next, r.kind
            ));
        }
        let n = r.payload.len();
        if n < 16 || n % 8 != 0 {
            return bad(format!("record {}: {n}-byte synthetic payload", self.next));
        }
        let word = |at: usize| {
            let mut a = [0u8; 8];
            a.copy_from_slice(r.payload.get(at..at + 8).unwrap_or(&[0; 8]));
            u64::from_le_bytes(a)
        };
        let seq = word(n - 16);
        let check = word(n - 8);
        match &mut self.exact {
            Some((src, buf)) => {
                src.payload_of(seq, buf);
                if buf.as_slice() != r.payload {
                    let at = buf
                        .iter()
                        .zip(r.payload)
                        .position(|(a, b)| a != b)
                        .unwrap_or(0);
                    return bad(format!(
                        "record {seq} (expected {}): byte {at} of {n} differs from what was produced",
                        self.next
                    ));
                }
            }
            None => {
                let want = checksum(r.payload.get(..n - 8).unwrap_or_default());
                if check != want {
                    return bad(format!(
                        "record {seq} (expected {}): checksum {check:#018x}, the bytes hash to {want:#018x}",
                        self.next
                    ));
                }
            }
        }
        if seq != self.next && !(self.allow_gaps && seq > self.next) {
            return bad(format!("record {seq} arrived where {} was due", self.next));
        }
        self.missing += seq - self.next;
        self.next = seq + 1;
        self.records += 1;
        self.payload_bytes += n as u64;
        Ok(seq)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layout::Record;

    #[test]
    fn payloads_check_and_corruption_is_caught() {
        let mut src = SynthSource::new(64).unwrap();
        let mut chk = SynthCheck::in_order();
        let mut buf = Vec::new();
        for i in 0..40 {
            assert_eq!(src.next_payload(&mut buf), i);
            assert_eq!(buf.len(), 64);
            let r = Record {
                kind: SYNTH_KIND,
                producer: 0,
                payload: &buf,
            };
            assert_eq!(chk.check(&r).unwrap(), i);
        }
        src.next_payload(&mut buf);
        buf[3] ^= 1;
        let r = Record {
            kind: SYNTH_KIND,
            producer: 0,
            payload: &buf,
        };
        assert!(chk.check(&r).unwrap_err().to_string().contains("checksum"));
        // Out of order.
        let mut src = SynthSource::new(32).unwrap();
        src.skip();
        src.next_payload(&mut buf);
        let r = Record {
            kind: SYNTH_KIND,
            producer: 0,
            payload: &buf,
        };
        assert!(SynthCheck::in_order()
            .check(&r)
            .unwrap_err()
            .to_string()
            .contains("record 1 arrived where 0"));
        let mut gaps = SynthCheck::with_gaps();
        assert_eq!(gaps.check(&r).unwrap(), 1);
        assert_eq!(gaps.missing, 1);
        assert!(SynthSource::new(20).is_err());
    }

    #[test]
    fn checksum_sees_order_and_tails() {
        assert_ne!(
            checksum(&[1, 2, 3, 4, 5, 6, 7, 8, 9]),
            checksum(&[1, 2, 3, 4, 5, 6, 7, 8])
        );
        let a: Vec<u8> = (0..200).collect();
        let mut b = a.clone();
        b.swap(0, 8);
        assert_ne!(checksum(&a), checksum(&b));
    }
}
