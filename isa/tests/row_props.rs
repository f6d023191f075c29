//! The property columns of the instruction table (`Row::src`, `mem`, `cmp`, `lit`, `props`)
//! against the mnemonic, row by row: the generator (`isa/tools/props.py`) derives them from
//! the mnemonic once, and this test keeps the derivations the decoder, the disassembler and
//! the interpreter used to run at run time, so that a regeneration that drifts from them
//! fails here instead of changing behaviour silently.

use isa::exec::cache::{Cmp, CmpType, MemKind, SrcType, D16};
use isa::exec::AtomicOp;
use isa::table::{prop, Enc, LitType, Row};
use isa::{Op, ROWS};

/// The source type: the last `f16`/`f32`/`f64` token of the mnemonic.
fn src_type(name: &str) -> SrcType {
    [
        (name.rfind("f16"), SrcType::F16),
        (name.rfind("f32"), SrcType::F32),
        (name.rfind("f64"), SrcType::F64),
    ]
    .into_iter()
    .filter_map(|(p, t)| p.map(|p| (p, t)))
    .max_by_key(|(p, _)| *p)
    .map_or(SrcType::Int, |(_, t)| t)
}

/// The truth table of a compare condition (see [`Cmp::truth`]).
fn truth_of(cond: &str) -> Option<u8> {
    const LT: u8 = 1;
    const EQ: u8 = 2;
    const GT: u8 = 4;
    const UN: u8 = 8;
    Some(match cond {
        "f" => 0,
        "lt" => LT,
        "eq" => EQ,
        "le" => LT | EQ,
        "gt" => GT,
        "lg" | "ne" => LT | GT,
        "ge" => EQ | GT,
        "o" => LT | EQ | GT,
        "u" => UN,
        "nge" => LT | UN,
        "nlg" => EQ | UN,
        "ngt" => LT | EQ | UN,
        "nle" => GT | UN,
        "neq" => LT | GT | UN,
        "nlt" => EQ | GT | UN,
        "tru" | "t" => LT | EQ | GT | UN,
        _ => return None,
    })
}

fn parse_cmp(name: &'static str) -> Option<Cmp> {
    let (writes_exec, rest) = if let Some(r) = name.strip_prefix("v_cmpx_") {
        (true, r)
    } else {
        (false, name.strip_prefix("v_cmp_")?)
    };
    let (cond, ty) = rest.rsplit_once('_')?;
    let ty = match ty {
        "f16" => CmpType::F16,
        "f32" => CmpType::F32,
        "f64" => CmpType::F64,
        "i16" => CmpType::I16,
        "u16" => CmpType::U16,
        "i32" => CmpType::I32,
        "u32" => CmpType::U32,
        "i64" => CmpType::I64,
        "u64" => CmpType::U64,
        _ => return None,
    };
    if cond != "class" && truth_of(cond).is_none() {
        return None;
    }
    Some(Cmp {
        cond,
        ty,
        writes_exec,
        truth: truth_of(cond),
    })
}

fn mem_kind(name: &str) -> MemKind {
    if name.contains("format") {
        return MemKind::Other;
    }
    let (name, half) = if let Some(n) = name.strip_suffix("_d16_hi") {
        (n, D16::Hi)
    } else if let Some(n) = name.strip_suffix("_d16") {
        (n, D16::Lo)
    } else {
        (name, D16::Full)
    };
    if let Some(pos) = name.find("atomic_") {
        let rest = &name[pos + 7..];
        let wide = rest.ends_with("_x2") || rest.ends_with("f64");
        let base = rest.trim_end_matches("_x2");
        let op = match base {
            "swap" => AtomicOp::Swap,
            "cmpswap" => AtomicOp::CmpSwap,
            "add" => AtomicOp::Add,
            "sub" => AtomicOp::Sub,
            "smin" => AtomicOp::SMin,
            "umin" => AtomicOp::UMin,
            "smax" => AtomicOp::SMax,
            "umax" => AtomicOp::UMax,
            "and" => AtomicOp::And,
            "or" => AtomicOp::Or,
            "xor" => AtomicOp::Xor,
            "inc" => AtomicOp::Inc,
            "dec" => AtomicOp::Dec,
            "add_f32" | "add_f64" => AtomicOp::FAdd,
            "min_f64" => AtomicOp::FMin,
            "pk_add_f16" => AtomicOp::PkAddF16,
            "max_f64" => AtomicOp::FMax,
            _ => return MemKind::Other,
        };
        return MemKind::Atomic { op, wide };
    }
    if let Some(rest) = name.strip_prefix("ds_") {
        if let Some(kind) = ds_atomic(rest) {
            return kind;
        }
    }
    let size = |s: &str| -> Option<(u32, bool)> {
        Some(match s {
            "ubyte" | "u8" => (1, false),
            "sbyte" | "i8" => (1, true),
            "ushort" | "u16" => (2, false),
            "sshort" | "i16" => (2, true),
            "byte" | "b8" => (1, false),
            "short" | "b16" => (2, false),
            "dword" | "b32" => (4, false),
            "dwordx2" | "b64" => (8, false),
            "dwordx3" | "b96" => (12, false),
            "dwordx4" | "b128" => (16, false),
            _ => return None,
        })
    };
    for (prefix, load) in [
        ("global_load_", true),
        ("global_store_", false),
        ("buffer_load_", true),
        ("buffer_store_", false),
        ("scratch_load_", true),
        ("scratch_store_", false),
        ("flat_load_", true),
        ("flat_store_", false),
        ("ds_read_", true),
        ("ds_write_", false),
        // scalar stores (SMEM loads keep their own path in the interpreter)
        ("s_store_", false),
        ("s_buffer_store_", false),
    ] {
        if let Some(rest) = name.strip_prefix(prefix) {
            return match size(rest) {
                Some((bytes, signed)) if load && (half == D16::Full || bytes <= 2) => {
                    MemKind::Load {
                        bytes,
                        signed,
                        half,
                    }
                }
                // `*_d16_hi` stores write bits 31:16 of VDATA
                Some((bytes, _)) if !load && (half == D16::Full || bytes <= 2) => {
                    MemKind::Store { bytes, half }
                }
                _ => MemKind::Other,
            };
        }
    }
    MemKind::Other
}

/// `ds_<op>[_rtn]_<type>` read-modify-writes.
fn ds_atomic(rest: &str) -> Option<MemKind> {
    let rest = rest.replace("_rtn", "");
    let (op, ty) = rest.rsplit_once('_')?;
    let wide = matches!(ty, "u64" | "i64" | "b64" | "f64");
    let op = match (op, ty) {
        ("add", "u32" | "u64") => AtomicOp::Add,
        ("sub", "u32" | "u64") => AtomicOp::Sub,
        ("inc", _) => AtomicOp::Inc,
        ("dec", _) => AtomicOp::Dec,
        ("min", "i32" | "i64") => AtomicOp::SMin,
        ("max", "i32" | "i64") => AtomicOp::SMax,
        ("min", "u32" | "u64") => AtomicOp::UMin,
        ("max", "u32" | "u64") => AtomicOp::UMax,
        ("min", "f32" | "f64") => AtomicOp::FMin,
        ("max", "f32" | "f64") => AtomicOp::FMax,
        ("and", _) => AtomicOp::And,
        ("or", _) => AtomicOp::Or,
        ("xor", _) => AtomicOp::Xor,
        ("wrxchg", _) => AtomicOp::Swap,
        ("cmpst", "b32" | "b64") => AtomicOp::CmpSwap,
        ("add", "f32" | "f64") => AtomicOp::FAdd,
        _ => return None,
    };
    Some(MemKind::Atomic { op, wide })
}

/// How constants of sources 0 and 1 print (the disassembler's former `half_of`).
fn lit(m: &str) -> LitType {
    if m.starts_with("v_mfma_f64") {
        return LitType::F64;
    }
    if m.starts_with("v_pk_") && (m.ends_with("_f32") || m == "v_pk_mov_b32") {
        return LitType::Packed32;
    }
    if matches!(
        m,
        "v_sat_pk_u8_i16" | "v_sad_u16" | "v_dot2c_i32_i16" | "v_madmk_f16"
    ) || m.starts_with("v_mfma")
    {
        return LitType::No;
    }
    let last = m.rsplit('_').find(|t| {
        t.len() >= 2
            && matches!(t.as_bytes()[0], b'f' | b'i' | b'u' | b'b')
            && t[1..].bytes().all(|c| c.is_ascii_digit())
    });
    match last {
        Some("f16") => LitType::Float,
        Some("i16" | "u16" | "b16") => LitType::Int,
        _ => LitType::No,
    }
}

fn props(m: &str) -> u32 {
    let bits = [
        (prop::S_BUFFER, m.starts_with("s_buffer_")),
        (prop::BRANCH, m == "s_branch" || m.starts_with("s_cbranch_")),
        (prop::MFMA, m.starts_with("v_mfma")),
        (prop::ACCVGPR, m.starts_with("v_accvgpr")),
        (prop::NAMED_LOAD, m.contains("_load_")),
        (prop::IMAGE_ATOMIC, m.starts_with("image_atomic")),
        (prop::IMAGE_STORE, m.starts_with("image_store")),
        (prop::IMAGE_GATHER4, m.starts_with("image_gather4")),
        (prop::CMPSWAP_SUFFIX, m.ends_with("_cmpswap")),
        (
            prop::DS2,
            m.contains("2st64") || m.contains("read2") || m.contains("write2"),
        ),
        (prop::DS2_B64, m.ends_with("b64")),
        (prop::DS2_ST64, m.contains("st64")),
        (prop::DS_READ2, m.starts_with("ds_read2")),
        (prop::DS_RTN, m.contains("_rtn_")),
        (
            prop::SRC2_NO_LIT,
            m.starts_with("v_dot") || m == "v_mad_i32_i16" || m == "v_mad_u32_u16",
        ),
        (
            prop::INT_SRC1,
            matches!(
                m,
                "v_ldexp_f16"
                    | "v_ldexp_f32"
                    | "v_ldexp_f64"
                    | "v_trig_preop_f64"
                    | "v_cvt_pkaccum_u8_f32"
            ),
        ),
        (prop::INT_SRC12, m == "v_cvt_pk_u8_f32"),
        (prop::ATOMIC, m.contains("_atomic_")),
        (prop::CMPSWAP, m.contains("cmpswap")),
        (
            prop::HWREG,
            m.starts_with("s_getreg") || m.starts_with("s_setreg"),
        ),
        (prop::SENDMSG, m.starts_with("s_sendmsg")),
        (prop::MIX, m.contains("_mix")),
        (
            prop::SMEM_NO_GLC,
            m.starts_with("s_dcache") || m.starts_with("s_atc_probe") || m.starts_with("s_mem"),
        ),
        (
            prop::DS_DUAL,
            m.contains("read2") || m.contains("write2") || m.contains("wrxchg2"),
        ),
        (prop::BUFFER_ATOMIC, m.starts_with("buffer_atomic")),
    ];
    bits.iter().filter(|(_, on)| *on).fold(0, |a, (b, _)| a | b)
}

fn describe(r: &Row) -> String {
    format!("{:?} {:#x} {}", r.enc, r.opcode, r.op.mnemonic())
}

#[test]
fn every_row_matches_its_mnemonic() {
    let mut bad = Vec::new();
    for r in ROWS {
        let name = r.op.mnemonic();
        let mem = match r.enc {
            Enc::Ds | Enc::Mubuf | Enc::Flat | Enc::Global | Enc::Scratch | Enc::Smem => {
                mem_kind(name)
            }
            _ => MemKind::Other,
        };
        let cmp = if matches!(r.enc, Enc::Vopc | Enc::Vop3) {
            parse_cmp(name)
        } else {
            None
        };
        if r.src != src_type(name) {
            bad.push(format!(
                "{}: src {:?} != {:?}",
                describe(r),
                r.src,
                src_type(name)
            ));
        }
        if r.mem != mem {
            bad.push(format!("{}: mem {:?} != {mem:?}", describe(r), r.mem));
        }
        if r.cmp != cmp {
            bad.push(format!("{}: cmp {:?} != {cmp:?}", describe(r), r.cmp));
        }
        if r.lit != lit(name) {
            bad.push(format!(
                "{}: lit {:?} != {:?}",
                describe(r),
                r.lit,
                lit(name)
            ));
        }
        if r.props != props(name) {
            bad.push(format!(
                "{}: props {:#x} != {:#x}",
                describe(r),
                r.props,
                props(name)
            ));
        }
        if r.op.props() != r.props {
            bad.push(format!("{}: Op::props differs from the row's", describe(r)));
        }
    }
    assert!(
        bad.is_empty(),
        "{} mismatches:\n{}",
        bad.len(),
        bad.join("\n")
    );
}

/// The columns say something: every kind of value occurs (a generator that wrote the
/// defaults everywhere would fail here even if the derivations above drifted with it).
#[test]
fn columns_are_populated() {
    let count = |f: &dyn Fn(&Row) -> bool| ROWS.iter().filter(|r| f(r)).count();
    assert!(count(&|r| r.src == SrcType::F64) > 0);
    assert!(
        count(&|r| matches!(
            r.mem,
            MemKind::Load {
                half: D16::Hi,
                signed: true,
                ..
            }
        )) > 0
    );
    assert!(count(&|r| matches!(r.mem, MemKind::Store { bytes: 16, .. })) > 0);
    assert!(
        count(&|r| matches!(
            r.mem,
            MemKind::Atomic {
                op: AtomicOp::PkAddF16,
                ..
            }
        )) > 0
    );
    assert!(
        count(&|r| matches!(
            r.cmp,
            Some(Cmp {
                ty: CmpType::U64,
                writes_exec: true,
                ..
            })
        )) > 0
    );
    assert!(count(&|r| r.lit == LitType::Packed32) > 0);
    for bit in 0..25 {
        assert!(
            count(&|r| r.props & (1 << bit) != 0) > 0,
            "prop bit {bit} unused"
        );
    }
    assert_eq!(Op::SBranch.props() & prop::BRANCH, prop::BRANCH);
}
