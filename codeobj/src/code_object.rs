//! One AMDGPU ELF code object (v3–v5): header and target, loadable segments, symbols (kernels,
//! device functions, variables), dynamic relocations, kernel descriptors and metadata.
//! The ELF structures are read with the `object` crate; everything is copied out, so a
//! [`CodeObject`] owns its data and outlives the input bytes.

use object::elf::{self, FileHeader64};
use object::read::elf::{FileHeader, ProgramHeader, Rela, SectionHeader, Sym};
use object::LittleEndian;

use crate::descriptor::{KernelDescriptor, KERNEL_DESCRIPTOR_SIZE};
use crate::error::{Error, Result};
use crate::metadata::{KernelMetadata, Metadata, NOTE_OWNER_AMDGPU, NT_AMDGPU_METADATA};
use crate::target::{CodeObjectVersion, TargetId};

/// `ELFOSABI_AMDGPU_HSA`.
pub const ELFOSABI_AMDGPU_HSA: u8 = 64;
/// Largest address span a code object may ask to load (segments of real ones are kilobytes).
pub const MAX_LOAD_SPAN: u64 = 1 << 32;

/// The ELF file type of a code object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ObjectKind {
    /// `ET_DYN`: a loadable code object, what the linker produces.
    Shared,
    /// `ET_REL`: an unlinked object file (`clang -c`); readable, not loadable.
    Relocatable,
    /// `ET_EXEC`.
    Executable,
}

/// One `PT_LOAD` segment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadSegment {
    /// Virtual address in the code object's address space.
    pub vaddr: u64,
    /// Bytes in memory (the tail past `data` is zero).
    pub memsz: u64,
    /// Required alignment.
    pub align: u64,
    /// `PF_*` flags.
    pub flags: u32,
    /// The file-backed bytes (`p_filesz` of them).
    pub data: Vec<u8>,
}

/// A symbol's binding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Binding {
    /// `STB_LOCAL`.
    Local,
    /// `STB_GLOBAL`.
    Global,
    /// `STB_WEAK`.
    Weak,
    /// Anything else (`STB_GNU_UNIQUE`, OS/processor values).
    Other(u8),
}

/// What a symbol names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SymbolKind {
    /// A kernel descriptor (`STT_OBJECT` named `<kernel>.kd`).
    KernelDescriptor,
    /// A kernel's code (`STT_FUNC` whose `.kd` exists).
    KernelEntry,
    /// A device function (`STT_FUNC` that is not a kernel).
    DeviceFunction,
    /// A global variable (`STT_OBJECT`).
    Variable,
    /// Referenced, not defined here.
    Undefined,
    /// Anything else (`STT_NOTYPE` labels and the like).
    Other,
}

/// One symbol from `.dynsym` or `.symtab`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Symbol {
    /// The name.
    pub name: String,
    /// What it names.
    pub kind: SymbolKind,
    /// Binding.
    pub binding: Binding,
    /// `STV_*` visibility (0 default, 1 internal, 2 hidden, 3 protected).
    pub visibility: u8,
    /// Value: a virtual address for loadable objects, a section offset for relocatable ones.
    pub value: u64,
    /// Size in bytes.
    pub size: u64,
    /// Name of the section it is defined in.
    pub section: Option<String>,
    /// In the dynamic symbol table (visible to other code objects when global).
    pub dynamic: bool,
}

impl Symbol {
    /// Defined here.
    pub fn is_defined(&self) -> bool {
        self.kind != SymbolKind::Undefined
    }

    /// A definition other code objects may bind to: dynamic, global or weak, not hidden/internal.
    pub fn is_exported(&self) -> bool {
        self.dynamic
            && self.is_defined()
            && matches!(self.binding, Binding::Global | Binding::Weak)
            && !matches!(self.visibility, 1 | 2)
    }
}

/// One dynamic relocation (`.rela.dyn`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DynamicRelocation {
    /// Where to write, as a virtual address of this code object.
    pub offset: u64,
    /// `R_AMDGPU_*` type.
    pub r_type: u32,
    /// The addend.
    pub addend: i64,
    /// The symbol it refers to, if any.
    pub symbol: Option<RelocationSymbol>,
}

/// The symbol of a dynamic relocation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RelocationSymbol {
    /// Its name.
    pub name: String,
    /// Its value when this code object defines it.
    pub defined_value: Option<u64>,
    /// A weak reference: resolves to 0 when nothing defines it.
    pub weak: bool,
}

/// A section of machine code (`SHF_ALLOC | SHF_EXECINSTR`, `.text`): the span a disassembler
/// walks, padding between functions included.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodeSection {
    /// The section's name.
    pub name: String,
    /// Its address (`sh_addr`; 0 in a relocatable object, whose symbols count from there).
    pub address: u64,
    /// Its size in bytes.
    pub size: u64,
}

/// A kernel: descriptor, entry point and metadata.
#[derive(Debug, Clone, PartialEq)]
pub struct Kernel {
    /// The kernel's name (the descriptor symbol without `.kd`).
    pub name: String,
    /// Virtual address of the descriptor.
    pub descriptor_address: u64,
    /// Virtual address of the first instruction (descriptor address + entry offset).
    pub entry_address: u64,
    /// Size of the code, from the entry symbol (0 if there is none).
    pub code_size: u64,
    /// The decoded descriptor.
    pub descriptor: KernelDescriptor,
    /// The kernel's metadata entry.
    pub metadata: Option<KernelMetadata>,
}

/// A parsed AMDGPU code object.
#[derive(Debug, Clone)]
pub struct CodeObject {
    version: CodeObjectVersion,
    target: TargetId,
    e_flags: u32,
    kind: ObjectKind,
    segments: Vec<LoadSegment>,
    symbols: Vec<Symbol>,
    code_sections: Vec<CodeSection>,
    relocations: Vec<DynamicRelocation>,
    kernels: Vec<Kernel>,
    metadata: Option<Metadata>,
}

type Header = FileHeader64<LittleEndian>;

fn elf_err(what: &'static str) -> impl Fn(object::read::Error) -> Error {
    move |e| Error::malformed(what, e.to_string())
}

fn utf8(bytes: &[u8], what: &'static str) -> Result<String> {
    std::str::from_utf8(bytes)
        .map(str::to_string)
        .map_err(|_| Error::malformed(what, "name is not UTF-8"))
}

/// Is `data` an ELF file for `EM_AMDGPU`?
pub fn is_amdgpu_elf(data: &[u8]) -> bool {
    data.len() >= 20
        && data.starts_with(&elf::ELFMAG)
        && u16::from_le_bytes([data[18], data[19]]) == 224
}

impl CodeObject {
    /// Parses a code object from its bytes.
    pub fn parse(data: &[u8]) -> Result<Self> {
        let header = Header::parse(data).map_err(elf_err("ELF header"))?;
        let endian = header.endian().map_err(elf_err("ELF header"))?;
        if header.e_machine(endian) != elf::EM_AMDGPU {
            return Err(Error::malformed(
                "ELF header",
                format!(
                    "e_machine {} is not EM_AMDGPU (224)",
                    header.e_machine(endian).0
                ),
            ));
        }
        let ident = header.e_ident();
        if ident.os_abi.0 != ELFOSABI_AMDGPU_HSA {
            return Err(Error::Unsupported(format!(
                "ELF OS ABI {} (only ELFOSABI_AMDGPU_HSA, 64, code objects are read)",
                ident.os_abi.0
            )));
        }
        let version = CodeObjectVersion::from_abi_version(ident.abi_version)?;
        let e_flags = header.e_flags(endian).0;
        let target = TargetId::from_e_flags(e_flags, version)?;
        let kind = match header.e_type(endian) {
            elf::ET_DYN => ObjectKind::Shared,
            elf::ET_REL => ObjectKind::Relocatable,
            elf::ET_EXEC => ObjectKind::Executable,
            other => {
                return Err(Error::malformed(
                    "ELF header",
                    format!("e_type {}", other.0),
                ));
            }
        };

        let mut segments = Vec::new();
        let mut note_segments = Vec::new();
        for ph in header
            .program_headers(endian, data)
            .map_err(elf_err("program headers"))?
        {
            let p_type = ph.p_type(endian);
            if p_type == elf::PT_LOAD {
                let bytes = ph.data(endian, data).map_err(|()| {
                    Error::malformed("program header", "PT_LOAD data beyond the file")
                })?;
                let memsz = ph.p_memsz(endian);
                if memsz < bytes.len() as u64 || memsz > MAX_LOAD_SPAN {
                    return Err(Error::malformed(
                        "program header",
                        format!("PT_LOAD memsz {memsz:#x} with filesz {:#x}", bytes.len()),
                    ));
                }
                segments.push(LoadSegment {
                    vaddr: ph.p_vaddr(endian),
                    memsz,
                    align: ph.p_align(endian).max(1),
                    flags: ph.p_flags(endian).0,
                    data: bytes.to_vec(),
                });
            } else if p_type == elf::PT_NOTE {
                note_segments.push(ph);
            }
        }
        let lo = segments.iter().map(|s| s.vaddr).min().unwrap_or(0);
        let mut hi = 0u64;
        for s in &segments {
            let end = s
                .vaddr
                .checked_add(s.memsz)
                .ok_or_else(|| Error::malformed("program header", "segment end overflows"))?;
            hi = hi.max(end);
        }
        if hi - lo.min(hi) > MAX_LOAD_SPAN {
            return Err(Error::malformed(
                "program headers",
                "segments span more than 4 GiB",
            ));
        }

        let sections = header
            .sections(endian, data)
            .map_err(elf_err("section headers"))?;
        let section_name = |index: usize| -> Option<String> {
            let sh = sections.section(object::SectionIndex(index)).ok()?;
            let name = sections.section_name(endian, sh).ok()?;
            std::str::from_utf8(name).ok().map(str::to_string)
        };
        let code_flags = elf::SHF_ALLOC.0 | elf::SHF_EXECINSTR.0;
        let code_sections = sections
            .iter()
            .filter(|sh| {
                sh.sh_type(endian) == elf::SHT_PROGBITS
                    && sh.sh_flags(endian).0 & code_flags == code_flags
            })
            .map(|sh| CodeSection {
                name: sections
                    .section_name(endian, sh)
                    .ok()
                    .and_then(|n| std::str::from_utf8(n).ok())
                    .unwrap_or_default()
                    .to_string(),
                address: sh.sh_addr(endian),
                size: sh.sh_size(endian),
            })
            .collect();

        // Symbols: the dynamic table first, then what only the static table has.
        let mut symbols: Vec<Symbol> = Vec::new();
        let mut dynsym_names: Vec<Option<(String, Option<u64>, bool)>> = Vec::new();
        for (table_type, dynamic) in [(elf::SHT_DYNSYM, true), (elf::SHT_SYMTAB, false)] {
            let table = sections
                .symbols(endian, data, table_type)
                .map_err(elf_err("symbol table"))?;
            for (index, sym) in table.enumerate() {
                let name = table
                    .symbol_name(endian, sym)
                    .map_err(elf_err("symbol name"))?;
                let name = utf8(name, "symbol")?;
                let undefined = sym.is_undefined(endian);
                let binding = match sym.st_bind() {
                    elf::STB_LOCAL => Binding::Local,
                    elf::STB_GLOBAL => Binding::Global,
                    elf::STB_WEAK => Binding::Weak,
                    other => Binding::Other(other.0),
                };
                let value = sym.st_value(endian);
                if dynamic {
                    let entry = (!name.is_empty() && index.0 != 0).then(|| {
                        (
                            name.clone(),
                            (!undefined).then_some(value),
                            binding == Binding::Weak,
                        )
                    });
                    // enumerate() counts from 0, the null symbol included.
                    dynsym_names.resize(index.0, None);
                    dynsym_names.push(entry);
                }
                let st_type = sym.st_type();
                if index.0 == 0
                    || name.is_empty()
                    || st_type == elf::STT_SECTION
                    || st_type == elf::STT_FILE
                {
                    continue;
                }
                if !dynamic
                    && symbols
                        .iter()
                        .any(|s| s.dynamic && s.name == name && s.value == value)
                {
                    continue;
                }
                let kind = if undefined {
                    SymbolKind::Undefined
                } else if st_type == elf::STT_FUNC {
                    SymbolKind::DeviceFunction // refined to KernelEntry below
                } else if st_type == elf::STT_OBJECT && name.ends_with(".kd") {
                    SymbolKind::KernelDescriptor
                } else if st_type == elf::STT_OBJECT {
                    SymbolKind::Variable
                } else {
                    SymbolKind::Other
                };
                let section = sym
                    .st_shndx(endian)
                    .index()
                    .and_then(|i| section_name(usize::from(i)));
                symbols.push(Symbol {
                    name,
                    kind,
                    binding,
                    visibility: sym.st_visibility().0,
                    value,
                    size: sym.st_size(endian),
                    section,
                    dynamic,
                });
            }
        }
        let descriptor_names: Vec<String> = symbols
            .iter()
            .filter(|s| s.kind == SymbolKind::KernelDescriptor)
            .filter_map(|s| s.name.strip_suffix(".kd").map(str::to_string))
            .collect();
        for s in &mut symbols {
            if s.kind == SymbolKind::DeviceFunction && descriptor_names.contains(&s.name) {
                s.kind = SymbolKind::KernelEntry;
            }
        }

        // Dynamic relocations: RELA sections linked to the dynamic symbol table.
        let mut relocations = Vec::new();
        if kind != ObjectKind::Relocatable {
            for sh in sections.iter() {
                let Some((relas, link)) = sh.rela(endian, data).map_err(elf_err("relocations"))?
                else {
                    continue;
                };
                let linked_to_dynsym = sections
                    .section(link)
                    .map(|l| l.sh_type(endian) == elf::SHT_DYNSYM)
                    .unwrap_or(false);
                if !linked_to_dynsym && link.0 != 0 {
                    continue;
                }
                for rela in relas {
                    let sym_index = rela.r_sym(endian, false) as usize;
                    let symbol =
                        if sym_index == 0 {
                            None
                        } else {
                            let entry = dynsym_names.get(sym_index).cloned().flatten().ok_or_else(
                                || {
                                    Error::malformed(
                                        "relocation",
                                        format!("symbol index {sym_index} not in .dynsym"),
                                    )
                                },
                            )?;
                            Some(RelocationSymbol {
                                name: entry.0,
                                defined_value: entry.1,
                                weak: entry.2,
                            })
                        };
                    relocations.push(DynamicRelocation {
                        offset: rela.r_offset(endian),
                        r_type: rela.r_type(endian, false).0,
                        addend: rela.r_addend(endian),
                        symbol,
                    });
                }
            }
        }

        // The metadata note: from SHT_NOTE sections, or PT_NOTE segments without sections.
        let mut metadata = None;
        let mut visit_note = |name: &[u8], n_type: u32, desc: &[u8]| -> Result<()> {
            let name = name.strip_suffix(b"\0").unwrap_or(name);
            if name == NOTE_OWNER_AMDGPU && n_type == NT_AMDGPU_METADATA && metadata.is_none() {
                metadata = Some(Metadata::parse(desc)?);
            }
            Ok(())
        };
        let mut saw_note_section = false;
        for sh in sections.iter() {
            if let Some(mut notes) = sh.notes(endian, data).map_err(elf_err("note section"))? {
                saw_note_section = true;
                while let Some(note) = notes.next().map_err(elf_err("note"))? {
                    visit_note(note.name(), note.n_type(endian).0, note.desc())?;
                }
            }
        }
        if !saw_note_section {
            for ph in note_segments {
                if let Some(mut notes) = ph.notes(endian, data).map_err(elf_err("note segment"))? {
                    while let Some(note) = notes.next().map_err(elf_err("note"))? {
                        visit_note(note.name(), note.n_type(endian).0, note.desc())?;
                    }
                }
            }
        }

        let mut code_object = CodeObject {
            version,
            target,
            e_flags,
            kind,
            segments,
            symbols,
            code_sections,
            relocations,
            kernels: Vec::new(),
            metadata,
        };
        code_object.kernels = code_object.find_kernels(data, header, endian)?;
        Ok(code_object)
    }

    fn find_kernels(
        &self,
        data: &[u8],
        header: &Header,
        endian: LittleEndian,
    ) -> Result<Vec<Kernel>> {
        let sections = header
            .sections(endian, data)
            .map_err(elf_err("section headers"))?;
        let mut kernels = Vec::new();
        for kd in self
            .symbols
            .iter()
            .filter(|s| s.kind == SymbolKind::KernelDescriptor)
        {
            let name = kd.name.strip_suffix(".kd").unwrap_or(&kd.name).to_string();
            let bytes = if self.kind == ObjectKind::Relocatable {
                // Relocatable: the value is an offset into the symbol's section.
                sections
                    .iter()
                    .find(|sh| {
                        sections.section_name(endian, sh).ok()
                            == kd.section.as_deref().map(str::as_bytes)
                    })
                    .and_then(|sh| sh.data(endian, data).ok())
                    .and_then(|d| d.get(usize::try_from(kd.value).ok()?..))
            } else {
                self.bytes_at(kd.value, KERNEL_DESCRIPTOR_SIZE as u64)
            };
            let bytes = bytes.ok_or_else(|| {
                Error::malformed(
                    "kernel descriptor",
                    format!("{} is not inside the file", kd.name),
                )
            })?;
            let descriptor = KernelDescriptor::parse(bytes)?;
            let entry_address = kd
                .value
                .wrapping_add_signed(descriptor.kernel_code_entry_byte_offset);
            let code_size = self
                .symbols
                .iter()
                .find(|s| s.kind == SymbolKind::KernelEntry && s.name == name)
                .map_or(0, |s| s.size);
            let metadata = self
                .metadata
                .as_ref()
                .and_then(|m| m.kernels.iter().find(|k| k.symbol == kd.name))
                .cloned();
            kernels.push(Kernel {
                name,
                descriptor_address: kd.value,
                entry_address,
                code_size,
                descriptor,
                metadata,
            });
        }
        Ok(kernels)
    }

    /// The code object version (from `EI_ABIVERSION`).
    pub fn version(&self) -> CodeObjectVersion {
        self.version
    }

    /// The target ID (from `e_flags`).
    pub fn target(&self) -> &TargetId {
        &self.target
    }

    /// The raw `e_flags`.
    pub fn e_flags(&self) -> u32 {
        self.e_flags
    }

    /// The ELF file type.
    pub fn kind(&self) -> ObjectKind {
        self.kind
    }

    /// `PT_LOAD` segments.
    pub fn segments(&self) -> &[LoadSegment] {
        &self.segments
    }

    /// All named symbols, dynamic first.
    pub fn symbols(&self) -> &[Symbol] {
        &self.symbols
    }

    /// The first symbol of that name.
    pub fn symbol(&self, name: &str) -> Option<&Symbol> {
        self.symbols.iter().find(|s| s.name == name)
    }

    /// Symbols of one kind.
    pub fn symbols_of(&self, kind: SymbolKind) -> impl Iterator<Item = &Symbol> {
        self.symbols.iter().filter(move |s| s.kind == kind)
    }

    /// Device functions: `STT_FUNC` symbols that are not kernels.
    pub fn device_functions(&self) -> impl Iterator<Item = &Symbol> {
        self.symbols_of(SymbolKind::DeviceFunction)
    }

    /// Global variables.
    pub fn variables(&self) -> impl Iterator<Item = &Symbol> {
        self.symbols_of(SymbolKind::Variable)
    }

    /// Symbols referenced but not defined here.
    pub fn undefined_symbols(&self) -> impl Iterator<Item = &Symbol> {
        self.symbols_of(SymbolKind::Undefined)
    }

    /// The sections of machine code (`.text`), in file order.
    pub fn code_sections(&self) -> &[CodeSection] {
        &self.code_sections
    }

    /// The code section holding address `address`, if one does.
    pub fn code_section_at(&self, address: u64) -> Option<&CodeSection> {
        self.code_sections
            .iter()
            .find(|s| address >= s.address && address - s.address < s.size)
    }

    /// Dynamic relocations, in file order.
    pub fn dynamic_relocations(&self) -> &[DynamicRelocation] {
        &self.relocations
    }

    /// The kernels.
    pub fn kernels(&self) -> &[Kernel] {
        &self.kernels
    }

    /// The kernel of that name (or descriptor symbol name).
    pub fn kernel(&self, name: &str) -> Option<&Kernel> {
        let name = name.strip_suffix(".kd").unwrap_or(name);
        self.kernels.iter().find(|k| k.name == name)
    }

    /// The metadata note, if the code object has one.
    pub fn metadata(&self) -> Option<&Metadata> {
        self.metadata.as_ref()
    }

    /// `len` file-backed bytes at virtual address `vaddr`, if one segment holds them all.
    pub fn bytes_at(&self, vaddr: u64, len: u64) -> Option<&[u8]> {
        self.segments.iter().find_map(|s| {
            let start = vaddr.checked_sub(s.vaddr)?;
            let end = start.checked_add(len)?;
            s.data
                .get(usize::try_from(start).ok()?..usize::try_from(end).ok()?)
        })
    }
}
