//! codeobj against code objects compiled at test time from `tests/src/`, checked against
//! llvm-readelf-15, llvm-nm-15, llvm-objdump-15 and roc-obj-ls.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use codeobj::loader::{relocation_name, R_AMDGPU_ABS64, R_AMDGPU_RELATIVE64};
use codeobj::{
    CodeObject, Container, ContainerKind, Error, Executable, HostMemory, SymbolKind, TargetId,
};
use common::{built, read, run, tool};
use zerocopy::IntoBytes;

fn gfx900() -> TargetId {
    "gfx900:xnack-".parse().unwrap()
}

fn parse_num(s: &str) -> u64 {
    match s.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16).unwrap(),
        None => s.parse().unwrap(),
    }
}

/// (name, value, size, bind, kind class) of every named symbol llvm-readelf-15 prints.
fn readelf_symbols(path: &Path) -> BTreeSet<(String, u64, u64, String, &'static str)> {
    let text = run(Command::new("llvm-readelf-15")
        .args(["--dyn-syms", "-s"])
        .arg(path));
    let mut out = BTreeSet::new();
    for line in text.lines() {
        let cols: Vec<&str> = line.split_whitespace().collect();
        if cols.len() != 8 || !cols[0].ends_with(':') || cols[0] == "Num:" {
            continue;
        }
        let class = match (cols[3], cols[6]) {
            (_, "UND") => "undefined",
            ("FUNC", _) => "function",
            ("OBJECT", _) => "object",
            ("SECTION" | "FILE", _) => continue,
            _ => "other",
        };
        out.insert((
            cols[7].to_string(),
            u64::from_str_radix(cols[1], 16).unwrap(),
            parse_num(cols[2]),
            cols[4].to_string(),
            class,
        ));
    }
    out
}

fn our_symbols(co: &CodeObject) -> BTreeSet<(String, u64, u64, String, &'static str)> {
    co.symbols()
        .iter()
        .map(|s| {
            let class = match s.kind {
                SymbolKind::Undefined => "undefined",
                SymbolKind::KernelEntry | SymbolKind::DeviceFunction => "function",
                SymbolKind::KernelDescriptor | SymbolKind::Variable => "object",
                SymbolKind::Other => "other",
            };
            let bind = match s.binding {
                codeobj::Binding::Local => "LOCAL".to_string(),
                codeobj::Binding::Global => "GLOBAL".to_string(),
                codeobj::Binding::Weak => "WEAK".to_string(),
                codeobj::Binding::Other(b) => b.to_string(),
            };
            (s.name.clone(), s.value, s.size, bind, class)
        })
        .collect()
}

/// The HIP program's device code objects written out as files, with their targets.
fn hip_device_files(program: &Path, dir: &Path) -> Vec<(TargetId, PathBuf)> {
    let bytes = read(program);
    let container = Container::parse(&bytes).unwrap();
    container
        .entries()
        .iter()
        .map(|e| {
            let path = dir.join(format!("{}.co", e.target.to_string().replace(':', "_")));
            std::fs::write(&path, e.bytes).unwrap();
            (e.target.clone(), path)
        })
        .collect()
}

/// Every code object the build made, with the processor to disassemble it for.
fn all_code_objects() -> Vec<(String, PathBuf)> {
    let Some(b) = built() else { return Vec::new() };
    let mut all = vec![
        ("gfx900".to_string(), b.devlib.clone()),
        ("gfx900".to_string(), b.kernels.clone()),
        ("gfx90a".to_string(), b.kernels_gfx90a.clone()),
        ("gfx900".to_string(), b.kernels_v3.clone()),
        ("gfx900".to_string(), b.kernels_v5.clone()),
    ];
    if let Some(program) = &b.program {
        for (target, path) in hip_device_files(program, &b.dir) {
            all.push((target.processor.clone(), path));
        }
    }
    all
}

#[test]
fn symbols_match_llvm_readelf_and_nm() {
    let Some(b) = built() else { return };
    let mut paths: Vec<PathBuf> = all_code_objects().into_iter().map(|(_, p)| p).collect();
    paths.push(b.kernels_object.clone());
    for path in &paths {
        let co = CodeObject::parse(&read(path)).unwrap();
        assert_eq!(
            our_symbols(&co),
            readelf_symbols(path),
            "{}",
            path.display()
        );
        // llvm-nm: every defined symbol's address; T/t are functions, R kernel descriptors.
        let nm = run(Command::new("llvm-nm-15").arg(path));
        for line in nm.lines() {
            let cols: Vec<&str> = line.split_whitespace().collect();
            let (value, letter, name) = match cols.as_slice() {
                [value, letter, name] => (u64::from_str_radix(value, 16).unwrap(), *letter, *name),
                ["U", name] => {
                    assert_eq!(co.symbol(name).unwrap().kind, SymbolKind::Undefined);
                    continue;
                }
                _ => panic!("llvm-nm line {line:?}"),
            };
            let ours = co
                .symbols()
                .iter()
                .find(|s| s.name == name && s.value == value)
                .unwrap_or_else(|| panic!("{name} @ {value:#x} missing in {}", path.display()));
            match letter {
                "T" | "t" => assert!(matches!(
                    ours.kind,
                    SymbolKind::KernelEntry | SymbolKind::DeviceFunction
                )),
                "R" if name.ends_with(".kd") => assert_eq!(ours.kind, SymbolKind::KernelDescriptor),
                _ => {}
            }
        }
    }
    // What the sources define, by kind.
    let lib = CodeObject::parse(&read(&b.devlib)).unwrap();
    let names = |it: &mut dyn Iterator<Item = &codeobj::Symbol>| {
        it.map(|s| s.name.clone()).collect::<BTreeSet<_>>()
    };
    assert_eq!(
        names(&mut lib.device_functions()),
        ["lib_add", "lib_mul"].map(String::from).into()
    );
    assert_eq!(
        names(&mut lib.variables()),
        ["lib_counter", "lib_private", "lib_private_ptr"]
            .map(String::from)
            .into()
    );
    let kernels = CodeObject::parse(&read(&b.kernels)).unwrap();
    assert_eq!(
        names(&mut kernels.undefined_symbols()),
        ["lib_add", "lib_counter", "lib_mul"]
            .map(String::from)
            .into()
    );
    assert_eq!(
        kernels
            .kernels()
            .iter()
            .map(|k| k.name.as_str())
            .collect::<Vec<_>>(),
        ["add_kernel", "mul_kernel"]
    );
    assert_eq!(kernels.device_functions().count(), 0);
}

/// Kernels from `llvm-readelf-15 --notes`' YAML: each kernel's scalar keys and its arguments.
#[derive(Default, Debug)]
struct YamlKernel {
    keys: BTreeMap<String, String>,
    args: Vec<BTreeMap<String, String>>,
}

fn key_value(text: &str) -> Option<(String, String)> {
    let (k, v) = text.split_once(':')?;
    Some((
        k.trim().to_string(),
        v.trim().trim_matches('\'').to_string(),
    ))
}

fn readelf_notes(path: &Path) -> (BTreeMap<String, String>, Vec<YamlKernel>) {
    let text = run(Command::new("llvm-readelf-15").arg("--notes").arg(path));
    let mut top = BTreeMap::new();
    let mut kernels: Vec<YamlKernel> = Vec::new();
    let mut in_kernels = false;
    let mut last_top_key = String::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("  - ").filter(|_| in_kernels) {
            kernels.push(YamlKernel::default());
            if let Some((k, v)) = key_value(rest) {
                kernels.last_mut().unwrap().keys.insert(k, v);
            }
        } else if let Some(rest) = line.strip_prefix("      - ").filter(|_| in_kernels) {
            if rest.starts_with('.') {
                let mut arg = BTreeMap::new();
                let (k, v) = key_value(rest).unwrap();
                arg.insert(k, v);
                kernels.last_mut().unwrap().args.push(arg);
            }
        } else if let Some(rest) = line.strip_prefix("        .").filter(|_| in_kernels) {
            let (k, v) = key_value(&format!(".{rest}")).unwrap();
            kernels
                .last_mut()
                .unwrap()
                .args
                .last_mut()
                .unwrap()
                .insert(k, v);
        } else if let Some(rest) = line.strip_prefix("    .").filter(|_| in_kernels) {
            let (k, v) = key_value(&format!(".{rest}")).unwrap();
            kernels.last_mut().unwrap().keys.insert(k, v);
        } else if line.starts_with("amdhsa.") {
            let (k, v) = key_value(line).unwrap();
            in_kernels = k == "amdhsa.kernels";
            last_top_key = k.clone();
            top.insert(k, v);
        } else if let Some(item) = line.strip_prefix("  - ").filter(|_| !in_kernels) {
            let entry = top.entry(last_top_key.clone()).or_default();
            if !entry.is_empty() {
                entry.push('.');
            }
            entry.push_str(item.trim());
        }
    }
    (top, kernels)
}

#[test]
fn metadata_matches_llvm_readelf_notes() {
    let all = all_code_objects();
    for (_, path) in &all {
        let co = CodeObject::parse(&read(path)).unwrap();
        let (top, yaml) = readelf_notes(path);
        let md = co.metadata().expect("metadata note");
        let (major, minor) = md.version.unwrap();
        assert_eq!(
            top["amdhsa.version"],
            format!("{major}.{minor}"),
            "{}",
            path.display()
        );
        assert_eq!(
            top.get("amdhsa.target").cloned(),
            md.target,
            "{}",
            path.display()
        );
        assert_eq!(md.kernels.len(), yaml.len());
        for y in &yaml {
            let k = md.kernel(&y.keys[".name"]).unwrap();
            let num = |key: &str| y.keys.get(key).map(|v| parse_num(v));
            assert_eq!(y.keys[".symbol"], k.symbol);
            assert_eq!(num(".sgpr_count"), Some(k.sgpr_count));
            assert_eq!(num(".vgpr_count"), Some(k.vgpr_count));
            assert_eq!(num(".agpr_count"), k.agpr_count);
            assert_eq!(num(".kernarg_segment_size"), Some(k.kernarg_segment_size));
            assert_eq!(num(".kernarg_segment_align"), Some(k.kernarg_segment_align));
            assert_eq!(num(".wavefront_size"), Some(k.wavefront_size));
            assert_eq!(
                num(".group_segment_fixed_size"),
                Some(k.group_segment_fixed_size)
            );
            assert_eq!(
                num(".private_segment_fixed_size"),
                Some(k.private_segment_fixed_size)
            );
            assert_eq!(num(".max_flat_workgroup_size"), k.max_flat_workgroup_size);
            assert_eq!(num(".sgpr_spill_count"), k.sgpr_spill_count);
            assert_eq!(
                y.keys.get(".uses_dynamic_stack").map(|v| v == "true"),
                k.uses_dynamic_stack
            );
            assert_eq!(y.keys.get(".language"), k.language.as_ref());
            assert_eq!(y.args.len(), k.args.len(), "{}", k.name);
            for (ya, a) in y.args.iter().zip(&k.args) {
                assert_eq!(parse_num(&ya[".offset"]), a.offset);
                assert_eq!(parse_num(&ya[".size"]), a.size);
                assert_eq!(ya[".value_kind"], a.value_kind);
                assert_eq!(ya.get(".address_space"), a.address_space.as_ref());
                assert_eq!(ya.get(".type_name"), a.type_name.as_ref());
                assert_eq!(ya.get(".name"), a.name.as_ref());
            }
            // The kernel's descriptor agrees with its metadata.
            let kernel = co.kernel(&k.name).unwrap();
            assert_eq!(
                u64::from(kernel.descriptor.kernarg_size),
                k.kernarg_segment_size
            );
            assert_eq!(
                u64::from(kernel.descriptor.private_segment_fixed_size),
                k.private_segment_fixed_size
            );
            assert_eq!(
                u64::from(kernel.descriptor.group_segment_fixed_size),
                k.group_segment_fixed_size
            );
        }
    }
    // Hidden arguments are there and flagged (clang-15 adds six to OpenCL kernels with a call).
    if let Some(b) = built() {
        let co = CodeObject::parse(&read(&b.kernels)).unwrap();
        let k = co.kernel("add_kernel").unwrap().metadata.as_ref().unwrap();
        assert_eq!(k.args.iter().filter(|a| !a.is_hidden()).count(), 3);
        assert!(k
            .args
            .iter()
            .any(|a| a.value_kind == "hidden_global_offset_x" && a.is_hidden()));
    }
}

fn objdump_descriptors(path: &Path, processor: &str) -> Vec<String> {
    let text = run(Command::new("llvm-objdump-15")
        .args(["-D", &format!("--mcpu={processor}"), "-j", ".rodata"])
        .arg(path));
    let mut blocks = Vec::new();
    let mut current: Option<String> = None;
    for line in text.lines() {
        if line.starts_with(".amdhsa_kernel ") {
            current = Some(String::new());
        }
        if let Some(block) = current.as_mut() {
            block.push_str(line.trim_end());
            block.push('\n');
            if line.starts_with(".end_amdhsa_kernel") {
                blocks.push(current.take().unwrap());
            }
        }
    }
    blocks
}

/// The kernels llvm-objdump-15 could not decode (it rejects a non-zero gfx90a RSRC3).
fn objdump_failures(path: &Path, processor: &str) -> Vec<String> {
    let text = run(Command::new("llvm-objdump-15")
        .args(["-D", &format!("--mcpu={processor}"), "-j", ".rodata"])
        .arg(path));
    text.lines()
        .filter_map(|l| l.strip_prefix("// Error in decoding "))
        .filter_map(|l| l.split_once(".kd :").map(|(name, _)| name.to_string()))
        .collect()
}

#[test]
fn descriptors_match_llvm_objdump_and_assemble_back() {
    let Some(b) = built() else { return };
    let (mut compared, mut assembled) = (0, 0);
    for (index, (processor, path)) in all_code_objects().into_iter().enumerate() {
        let co = CodeObject::parse(&read(&path)).unwrap();
        let failed = objdump_failures(&path, &processor);
        let theirs = objdump_descriptors(&path, &processor);
        let ours: Vec<String> = co
            .kernels()
            .iter()
            .filter(|k| !failed.contains(&k.name))
            .map(|k| {
                k.descriptor
                    .to_directives(&k.name, &processor)
                    .lines()
                    .filter(|l| !l.contains("accum_offset") && !l.contains("tg_split"))
                    .map(|l| format!("{l}\n"))
                    .collect()
            })
            .collect();
        assert_eq!(ours, theirs, "{}", path.display());
        compared += ours.len();
        for name in &failed {
            let k = co.kernel(name).unwrap();
            assert!(
                processor == "gfx90a" && k.descriptor.compute_pgm_rsrc3 != 0,
                "objdump failed on {name}"
            );
        }

        // Round trip: llvm-mc-15 assembles our directives into the same bytes.
        let mut asm = String::from("\t.text\n");
        for k in co.kernels() {
            asm.push_str(&format!("\t.p2align 8\n{}:\n\ts_endpgm\n", k.name));
        }
        asm.push_str("\t.rodata\n");
        for k in co.kernels() {
            asm.push_str("\t.p2align 6\n");
            let block = k.descriptor.to_directives(&k.name, &processor);
            // The assembler checks this one against the target's xnack setting.
            asm.extend(
                block
                    .lines()
                    .filter(|l| !l.contains("reserve_xnack_mask"))
                    .map(|l| format!("{l}\n")),
            );
        }
        let source = b.dir.join(format!("roundtrip{index}.s"));
        let object = b.dir.join(format!("roundtrip{index}.o"));
        std::fs::write(&source, asm).unwrap();
        run(Command::new("llvm-mc-15")
            .args([
                "-triple=amdgcn-amd-amdhsa",
                &format!("-mcpu={processor}"),
                "-mattr=-xnack",
                "-filetype=obj",
            ])
            .arg(&source)
            .arg("-o")
            .arg(&object));
        let again = CodeObject::parse(&read(&object)).unwrap();
        for k in co.kernels() {
            let mut want = k.descriptor;
            let mut got = again.kernel(&k.name).unwrap().descriptor;
            want.kernel_code_entry_byte_offset = 0;
            got.kernel_code_entry_byte_offset = 0;
            assert_eq!(
                got.as_bytes(),
                want.as_bytes(),
                "{} in {}",
                k.name,
                path.display()
            );
            assembled += 1;
        }
        for k in co.kernels() {
            // The entry is the kernel's STT_FUNC symbol, 256-byte aligned.
            let entry = co.symbol(&k.name).unwrap();
            assert_eq!(k.entry_address, entry.value);
            assert_eq!(k.code_size, entry.size);
            assert_eq!(k.entry_address % 256, 0);
            assert_eq!(k.descriptor_address % 64, 0);
        }
    }
    println!("descriptors: {compared} compared with llvm-objdump-15, {assembled} assembled back by llvm-mc-15");
    assert!(
        compared >= 4 && assembled >= 6,
        "compared {compared}, assembled {assembled}"
    );
}

#[test]
fn relocation_numbers_match_llvm_readelf() {
    let Some(b) = built() else { return };
    let text = run(Command::new("llvm-readelf-15")
        .arg("-r")
        .arg(&b.relocs_object));
    let mut seen = 0;
    for line in text.lines() {
        let cols: Vec<&str> = line.split_whitespace().collect();
        if cols.len() < 3 || !cols[2].starts_with("R_AMDGPU_") {
            continue;
        }
        let r_type = (u64::from_str_radix(cols[1], 16).unwrap() & 0xffff_ffff) as u32;
        assert_eq!(relocation_name(r_type), Some(cols[2]));
        seen += 1;
    }
    assert_eq!(seen, 14);
}

#[test]
fn target_ids_from_e_flags() {
    let Some(b) = built() else { return };
    for (path, expected, flags) in [
        (&b.kernels, "gfx900", 0x12c),
        (&b.kernels_gfx90a, "gfx90a:xnack-", 0x63f),
    ] {
        let co = CodeObject::parse(&read(path)).unwrap();
        assert_eq!(co.target().to_string(), expected);
        assert_eq!(co.e_flags(), flags);
        assert_eq!(co.version(), codeobj::CodeObjectVersion::V4);
        let header = run(Command::new("llvm-readelf-15").arg("-h").arg(path));
        assert!(
            header.contains(
                &format!("Flags:                             {flags:#X}").replace("0X", "0x")
            ),
            "{header}"
        );
    }
    // v3 has one bit per feature (set: on); v5 has v4's two-bit fields.
    let v3 = CodeObject::parse(&read(&b.kernels_v3)).unwrap();
    assert_eq!(
        (v3.version(), v3.e_flags(), v3.target().to_string().as_str()),
        (codeobj::CodeObjectVersion::V3, 0x12c, "gfx900:xnack+")
    );
    let v5 = CodeObject::parse(&read(&b.kernels_v5)).unwrap();
    assert_eq!(
        (v5.version(), v5.target().to_string().as_str()),
        (codeobj::CodeObjectVersion::V5, "gfx900")
    );
    assert_eq!(v3.metadata().unwrap().version, Some((1, 0)));
    assert_eq!(v5.metadata().unwrap().version, Some((1, 2)));
    let agent: TargetId = "gfx90a:sramecc+:xnack-".parse().unwrap();
    let co = CodeObject::parse(&read(&b.kernels_gfx90a)).unwrap();
    assert!(co.target().runs_on(&agent));
    assert!(!co.target().runs_on(&"gfx90a:xnack+".parse().unwrap()));
}

/// Call sites `s_getpc_b64; s_add_u32 sX, sX, lit; s_addc_u32 sY, sY, hi` in llvm-objdump's
/// disassembly: (address of s_getpc_b64, symbol whose code contains it).
fn getpc_sites(path: &Path) -> Vec<(u64, String)> {
    let text = run(Command::new("llvm-objdump-15")
        .args(["-d", "--mcpu=gfx900"])
        .arg(path));
    let mut sites = Vec::new();
    let mut function = String::new();
    for line in text.lines() {
        if let Some(name) = line
            .strip_suffix(">:")
            .and_then(|l| l.split_once(" <"))
            .map(|(_, n)| n)
        {
            function = name.to_string();
        }
        if line.trim_start().starts_with("s_getpc_b64") {
            let address = line
                .rsplit("// ")
                .next()
                .unwrap()
                .split(':')
                .next()
                .unwrap();
            sites.push((
                u64::from_str_radix(address.trim(), 16).unwrap(),
                function.clone(),
            ));
        }
    }
    sites
}

#[test]
fn loader_links_kernels_against_a_device_function_library() {
    let Some(b) = built() else { return };
    let lib = CodeObject::parse(&read(&b.devlib)).unwrap();
    let kernels = CodeObject::parse(&read(&b.kernels)).unwrap();
    let mut memory = HostMemory::new(0x7f00_0000_0000, 64 << 20);
    let mut exe = Executable::new(gfx900());
    // Kernels first: their references are resolved at freeze, not at load.
    let k_index = exe.load(kernels.clone(), &mut memory).unwrap();
    let l_index = exe.load(lib.clone(), &mut memory).unwrap();
    assert!(matches!(exe.kernel("add_kernel"), Err(Error::State(_))));
    exe.freeze(&mut memory).unwrap();
    let biases: Vec<u64> = exe.code_objects().map(|(_, bias)| bias).collect();
    let (kb, lb) = (biases[k_index], biases[l_index]);

    let lib_add = exe.function("lib_add").unwrap();
    let lib_mul = exe.function("lib_mul").unwrap();
    let lib_counter = exe.variable("lib_counter").unwrap();
    // Computed independently: the library's symbol value (llvm-nm) plus where its segments went.
    let nm = run(Command::new("llvm-nm-15").arg(&b.devlib));
    let nm_value = |name: &str| {
        nm.lines()
            .find_map(|l| {
                l.strip_suffix(&format!(" {name}"))
                    .map(|v| u64::from_str_radix(&v[..16], 16).unwrap())
            })
            .unwrap()
    };
    assert_eq!(lib_add.address, lb + nm_value("lib_add"));
    assert_eq!(lib_mul.address, lb + nm_value("lib_mul"));
    assert_eq!(lib_counter.address, lb + nm_value("lib_counter"));
    assert_eq!(lib_add.size, lib.symbol("lib_add").unwrap().size);
    assert!(lib_add.size > 0);
    assert_eq!(lib_add.code_object, l_index);

    // Each call site reaches, PC-relatively, a GOT slot that now holds the callee's address.
    let sites = getpc_sites(&b.kernels);
    let mut reached = BTreeMap::new();
    for (getpc, function) in &sites {
        let add = kb + getpc + 4; // s_add_u32 with a 32-bit literal after its opcode word
        let lo = memory.read_u32(add + 4).unwrap();
        let hi = memory.read_u32(add + 12).unwrap();
        let offset = (u64::from(hi) << 32) | u64::from(lo);
        let slot = (kb + getpc + 4).wrapping_add(offset);
        reached
            .entry(function.clone())
            .or_insert_with(Vec::new)
            .push(memory.read_u64(slot).unwrap());
    }
    assert!(
        reached["add_kernel"].contains(&lib_add.address),
        "{reached:x?}"
    );
    assert!(
        reached["add_kernel"].contains(&lib_counter.address),
        "{reached:x?}"
    );
    assert!(
        reached["mul_kernel"].contains(&lib_mul.address),
        "{reached:x?}"
    );
    // And the relocations themselves: every ABS64 slot holds S + A.
    for rel in kernels.dynamic_relocations() {
        assert_eq!(rel.r_type, R_AMDGPU_ABS64);
        let name = &rel.symbol.as_ref().unwrap().name;
        let target = exe
            .function(name)
            .or_else(|_| exe.variable(name))
            .unwrap()
            .address;
        assert_eq!(
            memory.read_u64(kb + rel.offset),
            Some(target.wrapping_add_signed(rel.addend))
        );
    }
    // The library's RELATIVE64: lib_private_ptr points at lib_private, both loaded.
    let rel = lib
        .dynamic_relocations()
        .iter()
        .find(|r| r.r_type == R_AMDGPU_RELATIVE64)
        .unwrap();
    let ptr = exe.variable("lib_private_ptr").unwrap();
    assert_eq!(ptr.address, lb + rel.offset);
    assert_eq!(
        memory.read_u64(ptr.address),
        Some(exe.variable("lib_private").unwrap().address)
    );
    // Initial data was copied: lib_counter = 7.
    assert_eq!(memory.read_u32(lib_counter.address), Some(7));

    // Kernels: descriptor and entry at their loaded addresses, bytes in memory match the file.
    let add = exe.kernel("add_kernel").unwrap();
    let file_kernel = kernels.kernel("add_kernel").unwrap();
    assert_eq!(add.descriptor_address, kb + file_kernel.descriptor_address);
    assert_eq!(
        add.entry_address,
        add.descriptor_address
            .wrapping_add_signed(add.descriptor.kernel_code_entry_byte_offset)
    );
    assert_eq!(
        memory.read(add.descriptor_address, 64).unwrap(),
        kernels
            .bytes_at(file_kernel.descriptor_address, 64)
            .unwrap()
    );
    println!("two-object link (gfx900): kernels.co bias {kb:#x}, devlib.co bias {lb:#x}");
    for k in exe.kernels().unwrap() {
        println!(
            "  kernel {:<12} descriptor {:#x} entry {:#x} ({} bytes)",
            k.name, k.descriptor_address, k.entry_address, k.code_size
        );
    }
    for f in exe.symbols_of(SymbolKind::DeviceFunction).unwrap() {
        println!(
            "  device function {:<8} {:#x} ({} bytes, code object #{})",
            f.name, f.address, f.size, f.code_object
        );
    }
    for v in exe.symbols_of(SymbolKind::Variable).unwrap() {
        println!(
            "  variable {:<16} {:#x} ({} bytes)",
            v.name, v.address, v.size
        );
    }
}

#[test]
fn loader_errors() {
    let Some(b) = built() else { return };
    let lib = CodeObject::parse(&read(&b.devlib)).unwrap();
    let kernels = CodeObject::parse(&read(&b.kernels)).unwrap();
    let mut memory = HostMemory::new(0x1000_0000, 64 << 20);

    let mut exe = Executable::new(gfx900());
    exe.load(kernels.clone(), &mut memory).unwrap();
    match exe.freeze(&mut memory) {
        Err(Error::UndefinedSymbol {
            name,
            code_object: 0,
        }) => {
            assert!(["lib_add", "lib_counter", "lib_mul"].contains(&name.as_str()))
        }
        other => panic!("{other:?}"),
    }
    assert!(!exe.is_frozen());

    let mut exe = Executable::new(gfx900());
    let wrong = CodeObject::parse(&read(&b.kernels_gfx90a)).unwrap();
    assert!(matches!(
        exe.load(wrong, &mut memory),
        Err(Error::WrongTarget { .. })
    ));
    exe.load(lib.clone(), &mut memory).unwrap();
    match exe.load(lib.clone(), &mut memory) {
        Err(Error::DuplicateSymbol(name)) => {
            assert!(
                ["lib_add", "lib_mul", "lib_counter", "lib_private_ptr"].contains(&name.as_str())
            )
        }
        other => panic!("{other:?}"),
    }
    let unlinked = CodeObject::parse(&read(&b.kernels_object)).unwrap();
    assert!(matches!(
        exe.load(unlinked, &mut memory),
        Err(Error::Unsupported(_))
    ));
    exe.freeze(&mut memory).unwrap();
    assert!(matches!(exe.function("nope"), Err(Error::NotFound { .. })));
    assert!(matches!(
        exe.kernel("add_kernel"),
        Err(Error::NotFound { .. })
    ));
    assert!(matches!(
        exe.load(kernels, &mut memory),
        Err(Error::State(_))
    ));
    // A memory provider that refuses.
    let mut tiny = HostMemory::new(0x1000, 16);
    let mut exe = Executable::new(gfx900());
    assert!(matches!(exe.load(lib, &mut tiny), Err(Error::Memory(_))));
}

#[test]
fn hip_program_container_and_host_kernels() {
    let Some(b) = built() else { return };
    let Some(program) = &b.program else { return };
    let bytes = read(program);
    let container = Container::parse(&bytes).unwrap();
    assert_eq!(container.kind(), ContainerKind::HostExecutable);
    let ids: Vec<&str> = container.entries().iter().map(|e| e.id.as_str()).collect();
    assert_eq!(
        ids,
        [
            "hipv4-amdgcn-amd-amdhsa--gfx900",
            "hipv4-amdgcn-amd-amdhsa--gfx90a:xnack-"
        ]
    );
    if tool("roc-obj-ls") {
        let listing = run(Command::new("roc-obj-ls").arg(program));
        for e in container.entries() {
            let line = listing
                .lines()
                .find(|l| l.split_whitespace().nth(1) == Some(e.id.as_str()))
                .unwrap();
            assert!(
                line.ends_with(&format!("#offset={}&size={}", e.file_offset, e.bytes.len())),
                "{line} vs {} {}",
                e.file_offset,
                e.bytes.len()
            );
        }
    }
    // Selection by target ID.
    let pick = |agent: &str| {
        container
            .select(&agent.parse().unwrap())
            .map(|e| e.id.clone())
    };
    assert_eq!(pick("gfx90a:sramecc+:xnack-").unwrap(), ids[1]);
    assert_eq!(pick("gfx900:xnack+").unwrap(), ids[0]);
    assert!(matches!(
        pick("gfx90a:xnack+"),
        Err(Error::NoMatchingTarget { .. })
    ));
    assert!(matches!(
        pick("gfx906"),
        Err(Error::NoMatchingTarget { .. })
    ));

    // Host handles and stubs, checked against llvm-nm of the host program.
    let nm = run(Command::new("llvm-nm-15").arg(program));
    let nm_address = |name: &str| {
        nm.lines().find_map(|l| {
            let cols: Vec<&str> = l.split_whitespace().collect();
            (cols.len() == 3 && cols[2] == name).then(|| u64::from_str_radix(cols[0], 16).unwrap())
        })
    };
    let host_kernels = container.host_kernels().unwrap();
    let names: BTreeSet<&str> = host_kernels
        .iter()
        .map(|k| k.device_name.as_str())
        .collect();
    assert_eq!(
        names,
        ["_Z12scale_kernelIfEvPT_S0_", "_Z13square_kernelPii"].into()
    );
    println!("HIP program {}:", program.display());
    for k in &host_kernels {
        assert_eq!(Some(k.handle.address), nm_address(&k.device_name));
        let stub = k.stub.as_ref().expect("stub found");
        assert_eq!(Some(stub.address), nm_address(&stub.name));
        assert!(stub.name.contains("__device_stub__"));
        assert_eq!(k.targets.len(), 2);
        println!(
            "  host handle {:#x} {} -> stub {} @ {:#x} -> device kernel on {}",
            k.handle.address,
            k.device_name,
            stub.name,
            stub.address,
            k.targets
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    // The same source as a HIP shared library: one target, the same pairing.
    let library = b.program_library.as_ref().unwrap();
    let bytes = read(library);
    let lib_container = Container::parse(&bytes).unwrap();
    assert_eq!(lib_container.kind(), ContainerKind::HostExecutable);
    assert_eq!(lib_container.entries().len(), 1);
    assert_eq!(lib_container.entries()[0].target.to_string(), "gfx900");
    let lib_nm = run(Command::new("llvm-nm-15").arg(library));
    let lib_kernels = lib_container.host_kernels().unwrap();
    assert_eq!(lib_kernels.len(), 2);
    for k in &lib_kernels {
        let line = format!("{:016x} ", k.handle.address);
        assert!(
            lib_nm
                .lines()
                .any(|l| l.starts_with(&line) && l.ends_with(&k.device_name)),
            "{k:?}"
        );
        assert!(k.stub.is_some());
    }
    // Load each target's code object and list what it holds, with loaded addresses.
    for agent in ["gfx900:xnack-", "gfx90a:sramecc+:xnack-"] {
        let agent: TargetId = agent.parse().unwrap();
        let co = container.code_object_for(&agent).unwrap();
        let mut memory = HostMemory::new(0x7f00_0000_0000, 64 << 20);
        let mut exe = Executable::new(agent.clone());
        exe.load(co, &mut memory).unwrap();
        exe.freeze(&mut memory).unwrap();
        println!("  loaded for {agent}:");
        for k in exe.kernels().unwrap() {
            println!(
                "    kernel {} descriptor {:#x} entry {:#x} ({} bytes)",
                k.name, k.descriptor_address, k.entry_address, k.code_size
            );
            assert_eq!(
                memory.read(k.descriptor_address, 64).map(<[u8]>::len),
                Some(64)
            );
        }
        let functions = exe.symbols_of(SymbolKind::DeviceFunction).unwrap();
        for f in &functions {
            println!(
                "    device function {} @ {:#x} ({} bytes)",
                f.name, f.address, f.size
            );
        }
        assert!(
            functions.iter().any(|f| f.name == "_Z10dev_squarei"),
            "{functions:?}"
        );
    }
}

/// A small deterministic generator for byte mutations.
struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// Parses, and if that works loads, links with the library and looks everything up: any
/// outcome but a panic is fine.
fn exercise(bytes: &[u8], lib: &CodeObject) -> bool {
    let Ok(container) = Container::parse(bytes) else {
        return false;
    };
    let _ = container.host_kernels();
    for entry in container.entries() {
        let Ok(co) = entry.code_object() else {
            continue;
        };
        for k in co.kernels() {
            let _ = k.descriptor.to_directives(&k.name, &co.target().processor);
        }
        let mut memory = HostMemory::new(0x7f00_0000_0000, 16 << 20);
        let mut exe = Executable::new(co.target().clone());
        let names: Vec<String> = co.symbols().iter().map(|s| s.name.clone()).collect();
        if exe.load(co, &mut memory).is_ok() {
            let _ = exe.load(lib.clone(), &mut memory);
            if exe.freeze(&mut memory).is_ok() {
                let _ = exe.kernels();
                for name in &names {
                    let _ = (exe.kernel(name), exe.function(name), exe.variable(name));
                }
            }
        }
    }
    true
}

#[test]
fn truncated_and_corrupted_files_give_errors_not_panics() {
    let Some(b) = built() else { return };
    let lib = CodeObject::parse(&read(&b.devlib)).unwrap();
    let mut inputs = vec![read(&b.devlib), read(&b.kernels), read(&b.kernels_gfx90a)];
    if let Some(program) = &b.program {
        inputs.push(read(program));
    }
    let mut prefixes = 0;
    for (index, bytes) in inputs.iter().enumerate() {
        assert!(exercise(bytes, &lib), "input {index} does not parse whole");
        let is_code_object = index < 3;
        // Every prefix of a code object (its section headers come last: every cut loses them),
        // every 61st of the larger HIP program.
        let step = if is_code_object { 1 } else { 61 };
        for len in (0..bytes.len()).step_by(step) {
            let prefix = &bytes[..len];
            if is_code_object {
                assert!(
                    CodeObject::parse(prefix).is_err(),
                    "input {index}: prefix {len} parsed"
                );
            }
            let _ = exercise(prefix, &lib);
            prefixes += 1;
        }
    }
    let mut rng = XorShift(0x9e37_79b9_7f4a_7c15);
    let (mut parsed, mut rejected) = (0, 0);
    for round in 0..4000 {
        let mut bytes = inputs[round % inputs.len()].clone();
        for _ in 0..=(rng.next() % 4) {
            let at = (rng.next() % bytes.len() as u64) as usize;
            bytes[at] = rng.next() as u8;
        }
        if exercise(&bytes, &lib) {
            parsed += 1;
        } else {
            rejected += 1;
        }
    }
    println!("malformed inputs: {prefixes} prefixes; 4000 mutants: {parsed} parsed and exercised, {rejected} rejected");
    assert!(rejected > 0 && parsed > 0);
    // Errors say what went wrong.
    let err = CodeObject::parse(&inputs[0][..100]).unwrap_err();
    assert!(matches!(err, Error::Malformed { .. }), "{err}");
    let mut not_amdgpu = inputs[0].clone();
    not_amdgpu[18] = 62; // EM_X86_64
    assert!(CodeObject::parse(&not_amdgpu)
        .unwrap_err()
        .to_string()
        .contains("EM_AMDGPU"));
}

mod properties {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..2048)) {
            let _ = Container::parse(&bytes);
            let _ = CodeObject::parse(&bytes);
            let _ = codeobj::OffloadBundle::parse(&bytes);
            let _ = codeobj::Metadata::parse(&bytes);
            let _ = codeobj::KernelCode::parse(&bytes);
        }

        #[test]
        fn bundle_header_then_arbitrary_bytes_never_panic(tail in proptest::collection::vec(any::<u8>(), 0..512)) {
            let mut bytes = codeobj::bundle::OFFLOAD_BUNDLE_MAGIC.to_vec();
            bytes.extend_from_slice(&tail);
            let _ = Container::parse(&bytes).map(|c| c.entries().len());
        }

        #[test]
        fn mutated_code_objects_never_panic(edits in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..8)) {
            if let Some(b) = built() {
                let lib = CodeObject::parse(&read(&b.devlib)).unwrap();
                let mut bytes = read(&b.kernels);
                for (at, value) in edits {
                    let i = at.index(bytes.len());
                    bytes[i] = value;
                }
                let _ = exercise(&bytes, &lib);
            }
        }
    }
}

/// Random descriptors (every field llvm-mc-15 has a directive for) printed as directives and
/// assembled by llvm-mc-15 give back the same 64 bytes: each bit field sits where LLVM puts it.
#[test]
fn random_descriptors_assemble_back_bit_exact() {
    use codeobj::{
        ComputePgmRsrc1, ComputePgmRsrc2, ComputePgmRsrc3Gfx90a, KernelCodeProperties,
        KernelDescriptor,
    };
    let Some(b) = built() else { return };
    let mut rng = XorShift(0x2545_f491_4f6c_dd1d);
    let mut checked = 0;
    for processor in ["gfx900", "gfx90a"] {
        let mut descriptors = Vec::new();
        for _ in 0..64 {
            let mut bit = || rng.next() & 1 == 1;
            let props = KernelCodeProperties::new()
                .with_enable_sgpr_private_segment_buffer(bit())
                .with_enable_sgpr_dispatch_ptr(bit())
                .with_enable_sgpr_queue_ptr(bit())
                .with_enable_sgpr_kernarg_segment_ptr(bit())
                .with_enable_sgpr_dispatch_id(bit())
                .with_enable_sgpr_flat_scratch_init(bit())
                .with_enable_sgpr_private_segment_size(bit())
                .with_uses_dynamic_stack(bit());
            // The assembler derives USER_SGPR_COUNT from the enables.
            let user_sgprs = [4, 2, 2, 2, 2, 2, 1]
                .iter()
                .enumerate()
                .filter(|(i, _)| props.into_bits() & (1 << i) != 0)
                .map(|(_, n)| n)
                .sum::<u8>();
            let rsrc2 = ComputePgmRsrc2::new()
                .with_enable_private_segment(bit())
                .with_user_sgpr_count(user_sgprs)
                .with_enable_sgpr_workgroup_id_x(bit())
                .with_enable_sgpr_workgroup_id_y(bit())
                .with_enable_sgpr_workgroup_id_z(bit())
                .with_enable_sgpr_workgroup_info(bit())
                .with_enable_exception_ieee_754_fp_invalid_operation(bit())
                .with_enable_exception_fp_denormal_source(bit())
                .with_enable_exception_ieee_754_fp_division_by_zero(bit())
                .with_enable_exception_ieee_754_fp_overflow(bit())
                .with_enable_exception_ieee_754_fp_underflow(bit())
                .with_enable_exception_ieee_754_fp_inexact(bit())
                .with_enable_exception_int_divide_by_zero(bit());
            let rsrc1 = ComputePgmRsrc1::new()
                .with_enable_dx10_clamp(bit())
                .with_enable_ieee_mode(bit())
                .with_fp16_ovfl(bit());
            let tg_split = bit();
            let vgpr_granule = (rng.next() % 64) as u8;
            let rsrc1 = rsrc1
                .with_granulated_workitem_vgpr_count(vgpr_granule)
                .with_granulated_wavefront_sgpr_count((rng.next() % 12) as u8)
                .with_float_round_mode_32((rng.next() % 4) as u8)
                .with_float_round_mode_16_64((rng.next() % 4) as u8)
                .with_float_denorm_mode_32((rng.next() % 4) as u8)
                .with_float_denorm_mode_16_64((rng.next() % 4) as u8);
            let rsrc2 = rsrc2.with_enable_vgpr_workitem_id((rng.next() % 3) as u8);
            let rsrc3 = if processor == "gfx90a" {
                // The first AccVGPR lies within the VGPRs the kernel has (blocks of 8 there).
                let blocks_of_4 = (u64::from(vgpr_granule) + 1) * 2;
                ComputePgmRsrc3Gfx90a::new()
                    .with_accum_offset((rng.next() % blocks_of_4.min(64)) as u8)
                    .with_tg_split(tg_split)
                    .into_bits()
            } else {
                0
            };
            descriptors.push(KernelDescriptor {
                group_segment_fixed_size: (rng.next() % 65536) as u32,
                private_segment_fixed_size: (rng.next() % 65536) as u32,
                kernarg_size: (rng.next() % 4096) as u32,
                reserved0: [0; 4],
                kernel_code_entry_byte_offset: 0,
                reserved1: [0; 20],
                compute_pgm_rsrc3: rsrc3,
                compute_pgm_rsrc1: rsrc1,
                compute_pgm_rsrc2: rsrc2,
                kernel_code_properties: props,
                reserved2: [0; 6],
            });
        }
        let mut asm = String::from("\t.text\n");
        for i in 0..descriptors.len() {
            asm.push_str(&format!("\t.p2align 8\nk{i}:\n\ts_endpgm\n"));
        }
        asm.push_str("\t.rodata\n");
        for (i, d) in descriptors.iter().enumerate() {
            asm.push_str("\t.p2align 6\n");
            let block = d.to_directives(&format!("k{i}"), processor);
            asm.extend(
                block
                    .lines()
                    .filter(|l| !l.contains("reserve_xnack_mask"))
                    .map(|l| format!("{l}\n")),
            );
        }
        let source = b.dir.join(format!("random-{processor}.s"));
        let object = b.dir.join(format!("random-{processor}.o"));
        std::fs::write(&source, asm).unwrap();
        run(Command::new("llvm-mc-15")
            .args([
                "-triple=amdgcn-amd-amdhsa",
                &format!("-mcpu={processor}"),
                "-mattr=-xnack",
                "-filetype=obj",
            ])
            .arg(&source)
            .arg("-o")
            .arg(&object));
        let co = CodeObject::parse(&read(&object)).unwrap();
        for (i, want) in descriptors.iter().enumerate() {
            let mut got = co.kernel(&format!("k{i}")).unwrap().descriptor;
            got.kernel_code_entry_byte_offset = 0;
            assert_eq!(got, *want, "{processor} k{i}");
            checked += 1;
        }
    }
    assert_eq!(checked, 128);
}
