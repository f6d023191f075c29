//! Files that hold code objects: a bare AMDGPU ELF, a clang offload bundle, or a host ELF (a HIP
//! executable or shared library) whose `.hip_fatbin` section holds bundles. Entries are chosen
//! for an agent by target ID, and a HIP program's host-side kernel symbols are paired with the
//! device kernels they launch.

use std::collections::{HashMap, HashSet};

use object::elf::{self, FileHeader64};
use object::read::elf::{FileHeader, SectionHeader, Sym};
use object::LittleEndian;

use crate::bundle::{OffloadBundle, OFFLOAD_BUNDLE_MAGIC};
use crate::code_object::{is_amdgpu_elf, CodeObject};
use crate::error::{Error, Result};
use crate::target::TargetId;

/// The section of a HIP host ELF that holds the offload bundles.
pub const HIP_FATBIN_SECTION: &str = ".hip_fatbin";

/// What kind of file a [`Container`] was read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ContainerKind {
    /// A bare AMDGPU ELF code object.
    CodeObject,
    /// A clang offload bundle.
    OffloadBundle,
    /// A host ELF with a `.hip_fatbin` section.
    HostExecutable,
}

/// One device code object inside a container.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContainerEntry<'data> {
    /// The entry ID (`hipv4-amdgcn-amd-amdhsa--gfx90a:xnack-`), or for a bare code object
    /// `amdgcn-amd-amdhsa--<target>`.
    pub id: String,
    /// The target ID the entry announces.
    pub target: TargetId,
    /// Which offload bundle of the file holds it, counting from 0 in file order (a HIP
    /// program has one per translation unit; 0 for a bare code object or a lone bundle).
    pub bundle: usize,
    /// Offset of the code object's bytes in the file.
    pub file_offset: u64,
    /// The code object's bytes.
    pub bytes: &'data [u8],
}

impl ContainerEntry<'_> {
    /// Parses the entry's code object.
    pub fn code_object(&self) -> Result<CodeObject> {
        CodeObject::parse(self.bytes)
    }
}

/// A defined symbol of the host ELF.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostSymbol {
    /// The (mangled) name.
    pub name: String,
    /// Its address in the host program.
    pub address: u64,
    /// Its size.
    pub size: u64,
    /// `STT_FUNC`.
    pub is_function: bool,
}

/// A host-side kernel symbol paired with the device kernel it launches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostKernel {
    /// The device kernel's name (its metadata `.name`, the `.kd` symbol without `.kd`).
    pub device_name: String,
    /// The host symbol of the same name: the handle `hipLaunchKernel` receives.
    pub handle: HostSymbol,
    /// The host stub function `__device_stub__<kernel>` that launches it, when found.
    pub stub: Option<HostSymbol>,
    /// The targets whose code objects define this kernel.
    pub targets: Vec<TargetId>,
}

/// A parsed container.
#[derive(Debug, Clone)]
pub struct Container<'data> {
    kind: ContainerKind,
    entries: Vec<ContainerEntry<'data>>,
    host_symbols: Vec<HostSymbol>,
}

fn device_entries<'data>(
    bundle: &OffloadBundle<'data>,
    (bundle_index, bundle_offset): (usize, u64),
    out: &mut Vec<ContainerEntry<'data>>,
) -> Result<()> {
    for entry in bundle.entries() {
        let id = entry.parse_id()?;
        let (Some(target), true) = (id.target, id.triple.starts_with("amdgcn")) else {
            continue; // the host entry, or another device's
        };
        out.push(ContainerEntry {
            id: entry.id.clone(),
            target,
            bundle: bundle_index,
            file_offset: bundle_offset.saturating_add(entry.offset),
            bytes: bundle.entry_bytes(entry),
        });
    }
    Ok(())
}

fn find(haystack: &[u8], needle: &[u8], from: usize) -> Option<usize> {
    haystack
        .get(from..)?
        .windows(needle.len())
        .position(|w| w == needle)
        .map(|p| p + from)
}

impl<'data> Container<'data> {
    /// Recognises and parses a container.
    pub fn parse(data: &'data [u8]) -> Result<Self> {
        if OffloadBundle::is_bundle(data)
            || data.starts_with(crate::bundle::COMPRESSED_BUNDLE_MAGIC)
        {
            let bundle = OffloadBundle::parse(data)?;
            let mut entries = Vec::new();
            device_entries(&bundle, (0, 0), &mut entries)?;
            return Ok(Container {
                kind: ContainerKind::OffloadBundle,
                entries,
                host_symbols: Vec::new(),
            });
        }
        if is_amdgpu_elf(data) {
            let code_object = CodeObject::parse(data)?;
            let target = code_object.target().clone();
            return Ok(Container {
                kind: ContainerKind::CodeObject,
                entries: vec![ContainerEntry {
                    id: format!("amdgcn-amd-amdhsa--{target}"),
                    target,
                    bundle: 0,
                    file_offset: 0,
                    bytes: data,
                }],
                host_symbols: Vec::new(),
            });
        }
        if data.starts_with(&elf::ELFMAG) {
            return Self::parse_host(data);
        }
        Err(Error::malformed(
            "container",
            "neither an ELF file nor an offload bundle",
        ))
    }

    fn parse_host(data: &'data [u8]) -> Result<Self> {
        let err = |e: object::read::Error| Error::malformed("host ELF", e.to_string());
        let header = FileHeader64::<LittleEndian>::parse(data).map_err(err)?;
        let endian = header.endian().map_err(err)?;
        let sections = header.sections(endian, data).map_err(err)?;
        let (_, fatbin) = sections
            .section_by_name(endian, HIP_FATBIN_SECTION.as_bytes())
            .ok_or_else(|| Error::Unsupported("a host ELF without a .hip_fatbin section".into()))?;
        let section_offset = fatbin.sh_offset(endian);
        let bytes = fatbin
            .data(endian, data)
            .map_err(|_| Error::malformed("host ELF", ".hip_fatbin lies beyond the file"))?;
        let mut entries = Vec::new();
        let mut at = 0;
        let mut bundles = 0;
        while let Some(start) = find(bytes, OFFLOAD_BUNDLE_MAGIC, at) {
            let bundle = OffloadBundle::parse(&bytes[start..])?;
            device_entries(
                &bundle,
                (bundles, section_offset.saturating_add(start as u64)),
                &mut entries,
            )?;
            bundles += 1;
            at = start
                + usize::try_from(bundle.extent())
                    .unwrap_or(usize::MAX)
                    .max(1);
        }
        let mut host_symbols = Vec::new();
        let mut seen = HashSet::new();
        for table_type in [elf::SHT_SYMTAB, elf::SHT_DYNSYM] {
            let table = sections.symbols(endian, data, table_type).map_err(err)?;
            for sym in table.iter() {
                let st_type = sym.st_type();
                if sym.is_undefined(endian)
                    || !(st_type == elf::STT_FUNC || st_type == elf::STT_OBJECT)
                {
                    continue;
                }
                let Ok(name) = std::str::from_utf8(table.symbol_name(endian, sym).map_err(err)?)
                else {
                    continue;
                };
                if !seen.insert(name) {
                    continue;
                }
                host_symbols.push(HostSymbol {
                    name: name.to_string(),
                    address: sym.st_value(endian),
                    size: sym.st_size(endian),
                    is_function: st_type == elf::STT_FUNC,
                });
            }
        }
        Ok(Container {
            kind: ContainerKind::HostExecutable,
            entries,
            host_symbols,
        })
    }

    /// The file's kind.
    pub fn kind(&self) -> ContainerKind {
        self.kind
    }

    /// The device code objects, in file order.
    pub fn entries(&self) -> &[ContainerEntry<'data>] {
        &self.entries
    }

    /// Defined function and object symbols of a host ELF (empty for other kinds).
    pub fn host_symbols(&self) -> &[HostSymbol] {
        &self.host_symbols
    }

    /// The entry that runs on `agent`: among those whose target ID matches, the most specific
    /// (features pinned to on/off beat `any`), the first in file order on a tie.
    pub fn select(&self, agent: &TargetId) -> Result<&ContainerEntry<'data>> {
        let mut best: Option<&ContainerEntry<'data>> = None;
        for entry in self.entries.iter().filter(|e| e.target.runs_on(agent)) {
            if best.is_none_or(|b| entry.target.specificity() > b.target.specificity()) {
                best = Some(entry);
            }
        }
        best.ok_or_else(|| Error::NoMatchingTarget {
            agent: agent.to_string(),
            available: self.distinct_targets(),
        })
    }

    /// Every entry whose target matches a tool's `query` ([`TargetId::matches_query`]: a
    /// feature the query leaves open matches any setting), in file order: one per bundle
    /// (translation unit) of a HIP program, as its loader loads one from each.
    pub fn matching(&self, query: &TargetId) -> Result<Vec<&ContainerEntry<'data>>> {
        let found: Vec<_> = self
            .entries
            .iter()
            .filter(|e| e.target.matches_query(query))
            .collect();
        if found.is_empty() {
            return Err(Error::NoMatchingTarget {
                agent: query.to_string(),
                available: self.distinct_targets(),
            });
        }
        Ok(found)
    }

    /// The entries' target IDs, each once, in the order they first appear.
    pub fn distinct_targets(&self) -> Vec<String> {
        let mut seen = HashSet::new();
        self.entries
            .iter()
            .map(|e| e.target.to_string())
            .filter(|t| seen.insert(t.clone()))
            .collect()
    }

    /// How many offload bundles the file holds (1 for a bare code object).
    pub fn bundle_count(&self) -> usize {
        self.entries.iter().map(|e| e.bundle + 1).max().unwrap_or(0)
    }

    /// Parses the code object chosen for `agent`, and checks its own `e_flags` agree.
    pub fn code_object_for(&self, agent: &TargetId) -> Result<CodeObject> {
        let code_object = self.select(agent)?.code_object()?;
        if !code_object.target().runs_on(agent) {
            return Err(Error::WrongTarget {
                code_object: code_object.target().to_string(),
                agent: agent.to_string(),
            });
        }
        Ok(code_object)
    }

    /// Pairs the host ELF's kernel handles (symbols named like a device kernel) with the device
    /// kernels of every entry, and finds each kernel's `__device_stub__` launcher.
    pub fn host_kernels(&self) -> Result<Vec<HostKernel>> {
        let all: Vec<_> = self.entries.iter().collect();
        self.host_kernels_of(&all)
    }

    /// [`Container::host_kernels`] over the code objects of `entries` only (those a tool
    /// chose for a target): the others are not parsed.
    pub fn host_kernels_of(&self, entries: &[&ContainerEntry<'data>]) -> Result<Vec<HostKernel>> {
        if self.host_symbols.is_empty() {
            return Ok(Vec::new());
        }
        let by_name: HashMap<&str, &HostSymbol> = self
            .host_symbols
            .iter()
            .map(|s| (s.name.as_str(), s))
            .collect();
        let mut kernels: Vec<HostKernel> = Vec::new();
        let mut index_of: HashMap<String, usize> = HashMap::new();
        for entry in entries {
            let code_object = entry.code_object()?;
            for kernel in code_object.kernels() {
                if let Some(&i) = index_of.get(&kernel.name) {
                    let targets = &mut kernels[i].targets;
                    if !targets.contains(&entry.target) {
                        targets.push(entry.target.clone());
                    }
                    continue;
                }
                let Some(handle) = by_name.get(kernel.name.as_str()) else {
                    continue;
                };
                let stub = stub_name(&kernel.name)
                    .and_then(|stub| by_name.get(stub.as_str()).copied())
                    .filter(|s| s.is_function)
                    .cloned();
                index_of.insert(kernel.name.clone(), kernels.len());
                kernels.push(HostKernel {
                    device_name: kernel.name.clone(),
                    handle: (*handle).clone(),
                    stub,
                    targets: vec![entry.target.clone()],
                });
            }
        }
        Ok(kernels)
    }
}

/// The mangled name clang gives the host stub of a kernel with a plain (not nested) mangled name:
/// `_Z<n><name><params>` becomes `_Z<n + 15>__device_stub__<name><params>`.
pub fn stub_name(kernel: &str) -> Option<String> {
    let rest = kernel.strip_prefix("_Z")?;
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    let len: usize = rest.get(..digits)?.parse().ok()?;
    let tail = rest.get(digits..)?;
    let ident = tail.get(..len)?;
    let params = tail.get(len..)?;
    Some(format!(
        "_Z{}__device_stub__{ident}{params}",
        len + "__device_stub__".len()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stub_names() {
        assert_eq!(
            stub_name("_Z13square_kernelPii").as_deref(),
            Some("_Z28__device_stub__square_kernelPii")
        );
        assert_eq!(
            stub_name("_Z12scale_kernelIfEvPT_S0_").as_deref(),
            Some("_Z27__device_stub__scale_kernelIfEvPT_S0_")
        );
        assert_eq!(stub_name("plain_c_kernel"), None);
        assert_eq!(stub_name("_Z99x"), None);
    }

    #[test]
    fn rejects_non_containers() {
        assert!(Container::parse(b"").is_err());
        assert!(Container::parse(b"\x7fELF").is_err());
        assert!(Container::parse(b"__CLANG_OFFLOAD_BUNDLE__").is_err());
    }
}
