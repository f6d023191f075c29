//! Clang offload bundles (`__CLANG_OFFLOAD_BUNDLE__`): the uncompressed binary format that
//! `clang-offload-bundler` writes and HIP executables embed in `.hip_fatbin`.
//!
//! Layout (all little-endian): the 24-byte magic, a `u64` entry count, then per entry a `u64`
//! offset (from the bundle's start), a `u64` size, a `u64` ID length and the ID's bytes.

use crate::error::{Error, Result};
use crate::target::TargetId;

/// The magic string a bundle starts with.
pub const OFFLOAD_BUNDLE_MAGIC: &[u8; 24] = b"__CLANG_OFFLOAD_BUNDLE__";
/// The magic of the compressed bundle format of newer clangs (recognised, not read).
pub const COMPRESSED_BUNDLE_MAGIC: &[u8; 4] = b"CCOB";

/// Bound on an entry ID's length: real ones are well under 100 bytes.
const MAX_ID_LEN: u64 = 4096;

/// One entry of a bundle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BundleEntry {
    /// The entry ID, e.g. `hipv4-amdgcn-amd-amdhsa--gfx90a:xnack-`.
    pub id: String,
    /// Offset of the entry's bytes from the bundle's start.
    pub offset: u64,
    /// Size of the entry's bytes.
    pub size: u64,
}

/// An entry ID split into its parts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EntryId {
    /// The offload kind: `host`, `hip`, `hipv4`, `openmp`.
    pub kind: String,
    /// The target triple, e.g. `amdgcn-amd-amdhsa-` (environment empty) or `x86_64-unknown-linux`.
    pub triple: String,
    /// The target ID, for a device entry.
    pub target: Option<TargetId>,
}

impl BundleEntry {
    /// Splits the ID into kind, triple and target ID. `kind-arch-vendor-os-env-targetid`, where
    /// the environment is usually empty (`--`); host entries carry no target ID.
    pub fn parse_id(&self) -> Result<EntryId> {
        let bad = || Error::malformed("offload bundle entry ID", format!("{:?}", self.id));
        let (kind, rest) = self.id.split_once('-').ok_or_else(bad)?;
        let parts: Vec<&str> = rest.splitn(5, '-').collect();
        let (triple, target) = match parts.as_slice() {
            [arch, vendor, os, env, target] if !target.is_empty() => (
                format!("{arch}-{vendor}-{os}-{env}"),
                Some(target.parse::<TargetId>().map_err(|_| bad())?),
            ),
            // Old style `hip-amdgcn-amd-amdhsa-gfx906`: the processor in the environment's place.
            [arch, vendor, os, target] if target.starts_with("gfx") => (
                format!("{arch}-{vendor}-{os}"),
                Some(target.parse::<TargetId>().map_err(|_| bad())?),
            ),
            _ => (rest.to_string(), None),
        };
        if kind.is_empty() || triple.is_empty() {
            return Err(bad());
        }
        Ok(EntryId {
            kind: kind.to_string(),
            triple,
            target,
        })
    }
}

/// A parsed bundle borrowing its bytes.
#[derive(Debug, Clone)]
pub struct OffloadBundle<'data> {
    data: &'data [u8],
    entries: Vec<BundleEntry>,
}

fn read_u64(data: &[u8], at: usize) -> Result<u64> {
    let bytes = at
        .checked_add(8)
        .and_then(|end| data.get(at..end))
        .ok_or_else(|| Error::malformed("offload bundle", format!("truncated at byte {at}")))?;
    let mut word = [0u8; 8];
    word.copy_from_slice(bytes);
    Ok(u64::from_le_bytes(word))
}

impl<'data> OffloadBundle<'data> {
    /// Does `data` start like a bundle?
    pub fn is_bundle(data: &[u8]) -> bool {
        data.starts_with(OFFLOAD_BUNDLE_MAGIC)
    }

    /// Parses the bundle at the start of `data`; every entry must lie inside `data`.
    pub fn parse(data: &'data [u8]) -> Result<Self> {
        if data.starts_with(COMPRESSED_BUNDLE_MAGIC) {
            return Err(Error::Unsupported(
                "compressed offload bundle (CCOB)".into(),
            ));
        }
        if !Self::is_bundle(data) {
            return Err(Error::malformed(
                "offload bundle",
                "no __CLANG_OFFLOAD_BUNDLE__ magic",
            ));
        }
        let mut at = OFFLOAD_BUNDLE_MAGIC.len();
        let count = read_u64(data, at)?;
        at += 8;
        // Each entry header takes at least 24 bytes: a count beyond that is a lie.
        if count > (data.len() as u64) / 24 {
            return Err(Error::malformed(
                "offload bundle",
                format!("{count} entries cannot fit in {} bytes", data.len()),
            ));
        }
        let mut entries = Vec::new();
        for index in 0..count {
            let offset = read_u64(data, at)?;
            let size = read_u64(data, at + 8)?;
            let id_len = read_u64(data, at + 16)?;
            at += 24;
            if id_len > MAX_ID_LEN {
                return Err(Error::malformed(
                    "offload bundle entry",
                    format!("entry {index}: ID length {id_len}"),
                ));
            }
            let id_bytes = data.get(at..at + id_len as usize).ok_or_else(|| {
                Error::malformed(
                    "offload bundle entry",
                    format!("entry {index}: ID truncated"),
                )
            })?;
            at += id_len as usize;
            let id = std::str::from_utf8(id_bytes)
                .map_err(|_| {
                    Error::malformed(
                        "offload bundle entry",
                        format!("entry {index}: ID not UTF-8"),
                    )
                })?
                .to_string();
            let end = offset.checked_add(size);
            if end.is_none_or(|end| end > data.len() as u64) {
                return Err(Error::malformed(
                    "offload bundle entry",
                    format!(
                        "entry {index} ({id}): bytes {offset:#x}+{size:#x} beyond the bundle's {:#x}",
                        data.len()
                    ),
                ));
            }
            entries.push(BundleEntry { id, offset, size });
        }
        Ok(OffloadBundle { data, entries })
    }

    /// The entries in file order.
    pub fn entries(&self) -> &[BundleEntry] {
        &self.entries
    }

    /// The bytes of one entry (checked to be in bounds when parsed).
    pub fn entry_bytes(&self, entry: &BundleEntry) -> &'data [u8] {
        let start = entry.offset as usize;
        self.data
            .get(start..start + entry.size as usize)
            .unwrap_or_default()
    }

    /// The length of the bundle: up to the end of its last entry or of its header.
    pub fn extent(&self) -> u64 {
        self.entries
            .iter()
            .map(|e| e.offset + e.size)
            .max()
            .unwrap_or(0)
            .max(OFFLOAD_BUNDLE_MAGIC.len() as u64 + 8)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bundle(entries: &[(&str, &[u8])]) -> Vec<u8> {
        let mut header = OFFLOAD_BUNDLE_MAGIC.to_vec();
        header.extend_from_slice(&(entries.len() as u64).to_le_bytes());
        let header_len: usize =
            header.len() + entries.iter().map(|(id, _)| 24 + id.len()).sum::<usize>();
        let mut offset = header_len as u64;
        let mut body = Vec::new();
        for (id, bytes) in entries {
            header.extend_from_slice(&offset.to_le_bytes());
            header.extend_from_slice(&(bytes.len() as u64).to_le_bytes());
            header.extend_from_slice(&(id.len() as u64).to_le_bytes());
            header.extend_from_slice(id.as_bytes());
            body.extend_from_slice(bytes);
            offset += bytes.len() as u64;
        }
        header.extend(body);
        header
    }

    #[test]
    fn reads_entries_and_ids() {
        let data = bundle(&[
            ("host-x86_64-unknown-linux", b""),
            ("hipv4-amdgcn-amd-amdhsa--gfx90a:xnack-", b"abcd"),
            ("hip-amdgcn-amd-amdhsa-gfx906", b"xy"),
        ]);
        let b = OffloadBundle::parse(&data).unwrap();
        assert_eq!(b.entries().len(), 3);
        assert_eq!(b.entry_bytes(&b.entries()[1]), b"abcd");
        let host = b.entries()[0].parse_id().unwrap();
        assert_eq!(
            (host.kind.as_str(), host.triple.as_str(), host.target),
            ("host", "x86_64-unknown-linux", None)
        );
        let dev = b.entries()[1].parse_id().unwrap();
        assert_eq!(dev.kind, "hipv4");
        assert_eq!(dev.triple, "amdgcn-amd-amdhsa-");
        assert_eq!(dev.target.unwrap().to_string(), "gfx90a:xnack-");
        assert_eq!(
            b.entries()[2].parse_id().unwrap().target.unwrap().processor,
            "gfx906"
        );
        for len in 0..data.len() {
            let _ = OffloadBundle::parse(&data[..len]).map(|b| b.entries().len());
        }
        assert!(OffloadBundle::parse(&data[..data.len() - 1]).is_err());
    }
}
