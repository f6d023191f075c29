//! A linking loader: lays out the segments of one or several code objects in memory the caller
//! provides, resolves each code object's undefined symbols against the others' exports, applies
//! the `R_AMDGPU_*` dynamic relocations, freezes, and then answers lookups of kernels, device
//! functions and variables by name with their loaded addresses.

use crate::code_object::{CodeObject, Kernel, ObjectKind, Symbol, SymbolKind};
use crate::descriptor::KernelDescriptor;
use crate::error::{Error, Result};
use crate::metadata::KernelMetadata;
use crate::target::TargetId;

/// `R_AMDGPU_NONE`.
pub const R_AMDGPU_NONE: u32 = 0;
/// `R_AMDGPU_ABS32_LO`: low 32 bits of S + A.
pub const R_AMDGPU_ABS32_LO: u32 = 1;
/// `R_AMDGPU_ABS32_HI`: high 32 bits of S + A.
pub const R_AMDGPU_ABS32_HI: u32 = 2;
/// `R_AMDGPU_ABS64`: S + A.
pub const R_AMDGPU_ABS64: u32 = 3;
/// `R_AMDGPU_REL32`: S + A - P, 32 bits.
pub const R_AMDGPU_REL32: u32 = 4;
/// `R_AMDGPU_REL64`: S + A - P.
pub const R_AMDGPU_REL64: u32 = 5;
/// `R_AMDGPU_ABS32`: S + A, 32 bits.
pub const R_AMDGPU_ABS32: u32 = 6;
/// `R_AMDGPU_GOTPCREL` (static linking only).
pub const R_AMDGPU_GOTPCREL: u32 = 7;
/// `R_AMDGPU_GOTPCREL32_LO` (static linking only).
pub const R_AMDGPU_GOTPCREL32_LO: u32 = 8;
/// `R_AMDGPU_GOTPCREL32_HI` (static linking only).
pub const R_AMDGPU_GOTPCREL32_HI: u32 = 9;
/// `R_AMDGPU_REL32_LO`: low 32 bits of S + A - P.
pub const R_AMDGPU_REL32_LO: u32 = 10;
/// `R_AMDGPU_REL32_HI`: high 32 bits of S + A - P.
pub const R_AMDGPU_REL32_HI: u32 = 11;
/// `R_AMDGPU_RELATIVE64`: B + A.
pub const R_AMDGPU_RELATIVE64: u32 = 13;
/// `R_AMDGPU_REL16`: ((S + A - P) - 4) / 4, 16 bits (branch offsets).
pub const R_AMDGPU_REL16: u32 = 14;

/// The `R_AMDGPU_*` name of a relocation type.
pub fn relocation_name(r_type: u32) -> Option<&'static str> {
    Some(match r_type {
        R_AMDGPU_NONE => "R_AMDGPU_NONE",
        R_AMDGPU_ABS32_LO => "R_AMDGPU_ABS32_LO",
        R_AMDGPU_ABS32_HI => "R_AMDGPU_ABS32_HI",
        R_AMDGPU_ABS64 => "R_AMDGPU_ABS64",
        R_AMDGPU_REL32 => "R_AMDGPU_REL32",
        R_AMDGPU_REL64 => "R_AMDGPU_REL64",
        R_AMDGPU_ABS32 => "R_AMDGPU_ABS32",
        R_AMDGPU_GOTPCREL => "R_AMDGPU_GOTPCREL",
        R_AMDGPU_GOTPCREL32_LO => "R_AMDGPU_GOTPCREL32_LO",
        R_AMDGPU_GOTPCREL32_HI => "R_AMDGPU_GOTPCREL32_HI",
        R_AMDGPU_REL32_LO => "R_AMDGPU_REL32_LO",
        R_AMDGPU_REL32_HI => "R_AMDGPU_REL32_HI",
        R_AMDGPU_RELATIVE64 => "R_AMDGPU_RELATIVE64",
        R_AMDGPU_REL16 => "R_AMDGPU_REL16",
        _ => return None,
    })
}

/// The bytes a relocation writes at its place, given S (symbol address), A (addend), P (place
/// address) and B (load bias), or `None` for a type the loader does not apply.
pub fn relocation_value(r_type: u32, s: u64, a: i64, p: u64, b: u64) -> Option<Vec<u8>> {
    let sa = s.wrapping_add_signed(a);
    let pcrel = sa.wrapping_sub(p);
    Some(match r_type {
        R_AMDGPU_ABS32_LO | R_AMDGPU_ABS32 => (sa as u32).to_le_bytes().to_vec(),
        R_AMDGPU_ABS32_HI => ((sa >> 32) as u32).to_le_bytes().to_vec(),
        R_AMDGPU_ABS64 => sa.to_le_bytes().to_vec(),
        R_AMDGPU_REL32 | R_AMDGPU_REL32_LO => (pcrel as u32).to_le_bytes().to_vec(),
        R_AMDGPU_REL32_HI => ((pcrel >> 32) as u32).to_le_bytes().to_vec(),
        R_AMDGPU_REL64 => pcrel.to_le_bytes().to_vec(),
        R_AMDGPU_RELATIVE64 => b.wrapping_add_signed(a).to_le_bytes().to_vec(),
        R_AMDGPU_REL16 => ((((pcrel as i64).wrapping_sub(4)) / 4) as u16)
            .to_le_bytes()
            .to_vec(),
        _ => return None,
    })
}

/// Memory for segments: the thunk supplies GPU memory, tests a host buffer.
pub trait SegmentMemory {
    /// Reserves `size` bytes aligned to `align` (a power of two) and returns the device address.
    fn allocate(&mut self, size: u64, align: u64) -> Result<u64>;
    /// Writes `bytes` at device address `address` inside an allocation.
    fn write(&mut self, address: u64, bytes: &[u8]) -> Result<()>;
}

/// [`SegmentMemory`] in host `Vec`s at made-up device addresses, for tests and tools.
#[derive(Debug, Clone)]
pub struct HostMemory {
    next: u64,
    limit: u64,
    regions: Vec<(u64, Vec<u8>)>,
}

impl HostMemory {
    /// Allocations start at `base` (then go upwards); at most `limit` bytes in all.
    pub fn new(base: u64, limit: u64) -> Self {
        HostMemory {
            next: base,
            limit,
            regions: Vec::new(),
        }
    }

    /// `len` bytes at `address`, if one allocation holds them.
    pub fn read(&self, address: u64, len: usize) -> Option<&[u8]> {
        self.regions.iter().find_map(|(start, bytes)| {
            let offset = usize::try_from(address.checked_sub(*start)?).ok()?;
            bytes.get(offset..offset.checked_add(len)?)
        })
    }

    /// The little-endian `u32` at `address`.
    pub fn read_u32(&self, address: u64) -> Option<u32> {
        self.read(address, 4)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    /// The little-endian `u64` at `address`.
    pub fn read_u64(&self, address: u64) -> Option<u64> {
        let b = self.read(address, 8)?;
        let mut word = [0u8; 8];
        word.copy_from_slice(b);
        Some(u64::from_le_bytes(word))
    }

    fn used(&self) -> u64 {
        self.regions.iter().map(|(_, b)| b.len() as u64).sum()
    }
}

impl SegmentMemory for HostMemory {
    fn allocate(&mut self, size: u64, align: u64) -> Result<u64> {
        if !align.is_power_of_two() {
            return Err(Error::Memory(format!(
                "alignment {align:#x} is not a power of two"
            )));
        }
        if self.used().saturating_add(size) > self.limit {
            return Err(Error::Memory(format!(
                "{size:#x} bytes exceed the limit {:#x}",
                self.limit
            )));
        }
        let start = self
            .next
            .checked_add(align - 1)
            .map(|n| n & !(align - 1))
            .ok_or_else(|| Error::Memory("address space exhausted".into()))?;
        let len = usize::try_from(size).map_err(|_| Error::Memory("size".into()))?;
        self.regions.push((start, vec![0; len]));
        // Leave a gap so that neighbouring allocations never touch.
        self.next = start.saturating_add(size).saturating_add(0x1000);
        Ok(start)
    }

    fn write(&mut self, address: u64, bytes: &[u8]) -> Result<()> {
        for (start, region) in &mut self.regions {
            let Some(offset) = address.checked_sub(*start) else {
                continue;
            };
            let Ok(offset) = usize::try_from(offset) else {
                continue;
            };
            if let Some(dst) = offset
                .checked_add(bytes.len())
                .and_then(|end| region.get_mut(offset..end))
            {
                dst.copy_from_slice(bytes);
                return Ok(());
            }
        }
        Err(Error::Memory(format!(
            "write of {} bytes at {address:#x} outside every allocation",
            bytes.len()
        )))
    }
}

/// A symbol with its loaded address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadedSymbol {
    /// Its name.
    pub name: String,
    /// What it is.
    pub kind: SymbolKind,
    /// Loaded address.
    pub address: u64,
    /// Size in bytes.
    pub size: u64,
    /// Index (load order) of the code object that defines it.
    pub code_object: usize,
}

/// A kernel with its loaded addresses.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadedKernel {
    /// The kernel's name.
    pub name: String,
    /// Loaded address of the descriptor: the AQL packet's `kernel_object`.
    pub descriptor_address: u64,
    /// Loaded address of the first instruction.
    pub entry_address: u64,
    /// Size of the code.
    pub code_size: u64,
    /// The descriptor.
    pub descriptor: KernelDescriptor,
    /// The metadata.
    pub metadata: Option<KernelMetadata>,
    /// Index (load order) of the code object that defines it.
    pub code_object: usize,
}

#[derive(Debug, Clone)]
struct LoadedObject {
    code_object: CodeObject,
    /// Added to a virtual address of the code object to give its loaded address.
    bias: u64,
    /// The code object's virtual address range `[lo, hi)`.
    span: (u64, u64),
}

/// An executable: code objects loaded for one agent, linked together once frozen.
#[derive(Debug, Clone)]
pub struct Executable {
    agent: TargetId,
    objects: Vec<LoadedObject>,
    frozen: bool,
}

/// Alignment above this is refused (real code objects ask for 4 KiB pages).
const MAX_SEGMENT_ALIGN: u64 = 1 << 21;

impl Executable {
    /// An empty executable for an agent of target `agent`.
    pub fn new(agent: TargetId) -> Self {
        Executable {
            agent,
            objects: Vec::new(),
            frozen: false,
        }
    }

    /// The agent's target.
    pub fn agent(&self) -> &TargetId {
        &self.agent
    }

    /// Has [`Executable::freeze`] succeeded?
    pub fn is_frozen(&self) -> bool {
        self.frozen
    }

    /// Lays out `code_object`'s segments in one allocation from `memory` and copies them in
    /// (zeroing the part past the file bytes). Returns the code object's index.
    pub fn load(
        &mut self,
        code_object: CodeObject,
        memory: &mut dyn SegmentMemory,
    ) -> Result<usize> {
        if self.frozen {
            return Err(Error::State("cannot load into a frozen executable"));
        }
        if code_object.kind() != ObjectKind::Shared {
            return Err(Error::Unsupported(format!(
                "loading a {:?} code object (link it with ld.lld -shared first)",
                code_object.kind()
            )));
        }
        if !code_object.target().runs_on(&self.agent) {
            return Err(Error::WrongTarget {
                code_object: code_object.target().to_string(),
                agent: self.agent.to_string(),
            });
        }
        for symbol in code_object.symbols().iter().filter(|s| s.is_exported()) {
            if symbol.binding != crate::code_object::Binding::Global {
                continue;
            }
            if self.objects.iter().any(|o| {
                o.code_object.symbols().iter().any(|s| {
                    s.is_exported() && s.name == symbol.name && s.binding == symbol.binding
                })
            }) {
                return Err(Error::DuplicateSymbol(symbol.name.clone()));
            }
        }
        let segments = code_object.segments();
        if segments.is_empty() {
            return Err(Error::malformed("code object", "no PT_LOAD segment"));
        }
        let align = segments.iter().map(|s| s.align).max().unwrap_or(1);
        if !align.is_power_of_two() || align > MAX_SEGMENT_ALIGN {
            return Err(Error::malformed(
                "program header",
                format!("alignment {align:#x}"),
            ));
        }
        let lo = segments.iter().map(|s| s.vaddr).min().unwrap_or(0) & !(align - 1);
        let hi = segments
            .iter()
            .map(|s| s.vaddr.saturating_add(s.memsz))
            .max()
            .unwrap_or(0);
        let base = memory.allocate(hi - lo, align)?;
        let bias = base.wrapping_sub(lo);
        const ZEROS: [u8; 4096] = [0; 4096];
        for segment in segments {
            let address = bias.wrapping_add(segment.vaddr);
            memory.write(address, &segment.data)?;
            let mut at = segment.data.len() as u64;
            while at < segment.memsz {
                let n = (segment.memsz - at).min(ZEROS.len() as u64);
                memory.write(address.wrapping_add(at), &ZEROS[..n as usize])?;
                at += n;
            }
        }
        self.objects.push(LoadedObject {
            code_object,
            bias,
            span: (lo, hi),
        });
        Ok(self.objects.len() - 1)
    }

    /// The loaded address of the definition other code objects see for `name`: the first global
    /// export in load order, else the first weak one.
    fn resolve_export(&self, name: &str) -> Option<(usize, u64, &Symbol)> {
        let exports = || {
            self.objects.iter().enumerate().flat_map(|(index, o)| {
                o.code_object
                    .symbols()
                    .iter()
                    .filter(move |s| s.is_exported() && s.name == name)
                    .map(move |s| (index, o.bias.wrapping_add(s.value), s))
            })
        };
        exports()
            .find(|(_, _, s)| s.binding == crate::code_object::Binding::Global)
            .or_else(|| exports().next())
    }

    /// Applies every code object's dynamic relocations, resolving undefined symbols across the
    /// executable, and freezes it. A code object's references to symbols it defines itself bind
    /// to its own definitions; undefined ones bind to the first global export in load order
    /// (else the first weak one, else 0 for a weak reference). On error nothing is frozen
    /// (some places may already be written).
    pub fn freeze(&mut self, memory: &mut dyn SegmentMemory) -> Result<()> {
        if self.frozen {
            return Err(Error::State("already frozen"));
        }
        for (index, object) in self.objects.iter().enumerate() {
            for rel in object.code_object.dynamic_relocations() {
                if rel.r_type == R_AMDGPU_NONE {
                    continue;
                }
                let s = match &rel.symbol {
                    None => 0,
                    Some(sym) => match sym.defined_value {
                        Some(value) => object.bias.wrapping_add(value),
                        None => match self.resolve_export(&sym.name) {
                            Some((_, address, _)) => address,
                            None if sym.weak => 0,
                            None => {
                                return Err(Error::UndefinedSymbol {
                                    name: sym.name.clone(),
                                    code_object: index,
                                })
                            }
                        },
                    },
                };
                let place = object.bias.wrapping_add(rel.offset);
                let bytes = relocation_value(rel.r_type, s, rel.addend, place, object.bias)
                    .ok_or_else(|| Error::Relocation {
                        r_type: rel.r_type,
                        offset: rel.offset,
                        detail: format!(
                            "{} is not a dynamic relocation the loader applies",
                            relocation_name(rel.r_type).unwrap_or("an unknown type")
                        ),
                    })?;
                let inside = rel.offset >= object.span.0
                    && rel
                        .offset
                        .checked_add(bytes.len() as u64)
                        .is_some_and(|end| end <= object.span.1);
                if !inside {
                    return Err(Error::Relocation {
                        r_type: rel.r_type,
                        offset: rel.offset,
                        detail: "place outside the code object's segments".into(),
                    });
                }
                memory.write(place, &bytes)?;
            }
        }
        self.frozen = true;
        Ok(())
    }

    fn require_frozen(&self) -> Result<()> {
        if self.frozen {
            Ok(())
        } else {
            Err(Error::State(
                "freeze the executable before looking symbols up",
            ))
        }
    }

    /// The loaded code objects with their load bias (loaded address − virtual address).
    pub fn code_objects(&self) -> impl Iterator<Item = (&CodeObject, u64)> {
        self.objects.iter().map(|o| (&o.code_object, o.bias))
    }

    fn loaded_kernel(&self, index: usize, kernel: &Kernel) -> LoadedKernel {
        let bias = self.objects[index].bias;
        LoadedKernel {
            name: kernel.name.clone(),
            descriptor_address: bias.wrapping_add(kernel.descriptor_address),
            entry_address: bias.wrapping_add(kernel.entry_address),
            code_size: kernel.code_size,
            descriptor: kernel.descriptor,
            metadata: kernel.metadata.clone(),
            code_object: index,
        }
    }

    /// Every kernel, in load order.
    pub fn kernels(&self) -> Result<Vec<LoadedKernel>> {
        self.require_frozen()?;
        Ok(self
            .objects
            .iter()
            .enumerate()
            .flat_map(|(i, o)| o.code_object.kernels().iter().map(move |k| (i, k)))
            .map(|(i, k)| self.loaded_kernel(i, k))
            .collect())
    }

    /// The kernel of that name (its `.kd` symbol name works too).
    pub fn kernel(&self, name: &str) -> Result<LoadedKernel> {
        self.require_frozen()?;
        self.objects
            .iter()
            .enumerate()
            .find_map(|(i, o)| o.code_object.kernel(name).map(|k| self.loaded_kernel(i, k)))
            .ok_or_else(|| Error::NotFound {
                kind: "kernel",
                name: name.to_string(),
            })
    }

    /// Symbols of one kind with loaded addresses, in load order.
    pub fn symbols_of(&self, kind: SymbolKind) -> Result<Vec<LoadedSymbol>> {
        self.require_frozen()?;
        Ok(self
            .objects
            .iter()
            .enumerate()
            .flat_map(|(i, o)| {
                o.code_object.symbols_of(kind).map(move |s| LoadedSymbol {
                    name: s.name.clone(),
                    kind: s.kind,
                    address: o.bias.wrapping_add(s.value),
                    size: s.size,
                    code_object: i,
                })
            })
            .collect())
    }

    fn lookup(&self, name: &str, kind: SymbolKind, what: &'static str) -> Result<LoadedSymbol> {
        // An export wins over a same-named local of an earlier object.
        if let Some((index, address, s)) =
            self.resolve_export(name).filter(|(_, _, s)| s.kind == kind)
        {
            self.require_frozen()?;
            return Ok(LoadedSymbol {
                name: s.name.clone(),
                kind,
                address,
                size: s.size,
                code_object: index,
            });
        }
        self.symbols_of(kind)?
            .into_iter()
            .find(|s| s.name == name)
            .ok_or_else(|| Error::NotFound {
                kind: what,
                name: name.to_string(),
            })
    }

    /// The device function of that name.
    pub fn function(&self, name: &str) -> Result<LoadedSymbol> {
        self.lookup(name, SymbolKind::DeviceFunction, "device function")
    }

    /// The global variable of that name.
    pub fn variable(&self, name: &str) -> Result<LoadedSymbol> {
        self.lookup(name, SymbolKind::Variable, "variable")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relocation_arithmetic() {
        let (s, p, b) = (0x1_0000_2000u64, 0x1_0000_1000u64, 0x1_0000_0000u64);
        assert_eq!(
            relocation_value(R_AMDGPU_ABS64, s, 8, p, b).unwrap(),
            0x1_0000_2008u64.to_le_bytes()
        );
        assert_eq!(
            relocation_value(R_AMDGPU_ABS32_LO, s, 0, p, b).unwrap(),
            0x2000u32.to_le_bytes()
        );
        assert_eq!(
            relocation_value(R_AMDGPU_ABS32_HI, s, 0, p, b).unwrap(),
            1u32.to_le_bytes()
        );
        assert_eq!(
            relocation_value(R_AMDGPU_REL32_LO, s, 4, p, b).unwrap(),
            0x1004u32.to_le_bytes()
        );
        assert_eq!(
            relocation_value(R_AMDGPU_REL32_HI, p, 0, s, b).unwrap(),
            u32::MAX.to_le_bytes()
        );
        assert_eq!(
            relocation_value(R_AMDGPU_REL64, p, 0, s, b).unwrap(),
            (-0x1000i64).to_le_bytes()
        );
        assert_eq!(
            relocation_value(R_AMDGPU_RELATIVE64, 0, 0x40, p, b).unwrap(),
            0x1_0000_0040u64.to_le_bytes()
        );
        assert_eq!(
            relocation_value(R_AMDGPU_REL16, p + 0x44, 0, p, b).unwrap(),
            0x10u16.to_le_bytes()
        );
        assert!(relocation_value(R_AMDGPU_GOTPCREL, s, 0, p, b).is_none());
        assert!(relocation_value(12, s, 0, p, b).is_none());
    }

    #[test]
    fn host_memory_bounds() {
        let mut m = HostMemory::new(0x10_0000, 0x10000);
        let a = m.allocate(0x100, 0x1000).unwrap();
        assert_eq!(a % 0x1000, 0);
        m.write(a + 0xf8, &7u64.to_le_bytes()).unwrap();
        assert_eq!(m.read_u64(a + 0xf8), Some(7));
        assert!(m.write(a + 0xf9, &[0; 8]).is_err());
        assert!(m.allocate(0x20000, 8).is_err());
        assert!(m.allocate(8, 3).is_err());
    }
}
