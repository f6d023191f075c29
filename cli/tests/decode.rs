//! `kfd decode` on hex text, stdin, binary files and broken streams.

mod common;

use common::*;
use std::io::Write;

/// ACQUIRE_MEM + RELEASE_MEM (facts §4.3/§4.4, the pm4 listing example) and an SDMA
/// FENCE + TRAP (facts §5, §8.2).
const PM4: &str = "c0055800 28c40000 ffffffff 00ffffff 00000000 00000000 00000004 \
                   c0064900 00028514 22000000 34000018 00007f12 00000003 00000000 00000003";
const SDMA: &str = "00000005 34000018 00007f12 00000003 00000006 00000003";

fn le_bytes(hex: &str) -> Vec<u8> {
    hex.split_whitespace()
        .flat_map(|w| u32::from_str_radix(w, 16).unwrap().to_le_bytes())
        .collect()
}

#[test]
fn hex_argument_gives_the_listing() {
    let out = ok(&["decode", "--hex", PM4]);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], "; PM4 gfx9, 15 dword(s) from --hex");
    assert!(lines[1].starts_with("  0x0000: c0055800 28c40000 ffffffff 00ffffff 00000000 00000000 00000004  ACQUIRE_MEM coher_cntl=0x28c40000"), "{}", lines[1]);
    assert!(lines[2].starts_with("  0x0007: c0064900 00028514 22000000 34000018 00007f12 00000003 00000000 00000003  RELEASE_MEM event_type=CACHE_FLUSH_AND_INV_TS_EVENT"), "{}", lines[2]);
    assert!(
        lines[2].contains("int_sel=SEND_INTERRUPT_AFTER_WRITE_CONFIRM")
            && lines[2].ends_with("int_ctxid=0x3")
    );
    assert_eq!(lines[3], "; 2 packet(s), 0 error(s)");
}

#[test]
fn binary_file_stdin_and_byte_text_decode_the_same() {
    let bin = le_bytes(PM4);
    let mut file = tempfile::NamedTempFile::new().unwrap();
    file.write_all(&bin).unwrap();
    let path = file.path().to_str().unwrap();
    let from_file = ok(&["decode", path]);
    let body = |s: &str| s.lines().skip(1).collect::<Vec<_>>().join("\n");
    assert_eq!(body(&from_file), body(&ok(&["decode", "--hex", PM4])));
    let o = kfd_with_stdin(&["decode"], &bin);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(body(&stdout(&o)), body(&from_file));
    assert!(stdout(&o).starts_with("; PM4 gfx9, 15 dword(s) from stdin"));
    // The same bytes as xxd -p style text.
    let text: String = bin.iter().map(|b| format!("{b:02x}")).collect();
    let o = kfd_with_stdin(&["decode", "-", "--format", "bytes"], text.as_bytes());
    assert_eq!(body(&stdout(&o)), body(&from_file));
}

#[test]
fn sdma_streams_are_detected_and_use_the_sdma_layouts() {
    let out = ok(&["decode", "--hex", SDMA, "--gfx", "gfx11"]);
    assert!(
        out.starts_with("; SDMA 6 (gfx11), 6 dword(s) from --hex"),
        "{out}"
    );
    assert!(out.contains("  0x0000: 00000005 34000018 00007f12 00000003  SDMA_FENCE addr=0x7f1234000018 data=0x3"), "{out}");
    assert!(
        out.contains("  0x0004: 00000006 00000003                    SDMA_TRAP int_context=0x3"),
        "{out}"
    );
}

#[test]
fn errors_point_at_the_offending_dword_and_exit_2() {
    // NOP; WRITE_DATA whose dst_sel (dw1 [11:8]) is 0xF, which the hardware does not define;
    // a NOP after it, reached by resynchronising on the WRITE_DATA's count.
    let o = kfd(&[
        "decode",
        "--hex",
        "ffff1000 c0033700 00000f00 00001000 00000000 00000007 ffff1000",
    ]);
    let err = usage_error(&o);
    assert_eq!(err, "kfd: 1 decode error(s) in --hex; first at dword 2 (0x2): WRITE_DATA: impossible dst_sel=0xf in dw1");
    let out = stdout(&o);
    let lines: Vec<&str> = out.lines().collect();
    assert!(
        lines[2].starts_with("  0x0001: c0033700 00000f00")
            && lines[2].contains("; error: WRITE_DATA"),
        "{out}"
    );
    // The caret sits under dword 2, the second dword of the packet's hex column.
    let caret = lines[3];
    assert_eq!(caret.find('^'), Some(10 + 9), "{caret:?}");
    assert!(caret.ends_with("dword 2 (0x2)"));
    assert!(
        lines[4].starts_with("  0x0006: ffff1000") && lines[4].ends_with("NOP (1 dword)"),
        "{out}"
    );
    // --stop-at-error ends the listing there.
    let stopped = stdout(&kfd(&[
        "decode",
        "--stop-at-error",
        "--hex",
        "ffff1000 c0033700 00000f00 00001000 00000000 00000007 ffff1000",
    ]));
    assert!(!stopped.contains("0x0006"), "{stopped}");
}

#[test]
fn truncated_and_ragged_input_is_reported() {
    let err = usage_error(&kfd(&["decode", "--hex", "c0055800 28c40000"]));
    assert!(
        err.contains("first at dword 0")
            && err.contains("truncated ACQUIRE_MEM: needs 7 dwords, 2 left"),
        "{err}"
    );
    let mut file = tempfile::NamedTempFile::new().unwrap();
    file.write_all(&[0x00, 0x10, 0xFF, 0xFF, 0xAA]).unwrap();
    let o = kfd(&["decode", file.path().to_str().unwrap()]);
    let err = usage_error(&o);
    assert!(
        err.ends_with("ends with 1 byte(s) that do not make a whole dword (byte offset 0x4)"),
        "{err}"
    );
    assert!(
        stdout(&o).contains("NOP (1 dword)"),
        "the whole dwords are still listed"
    );
}

#[test]
fn bad_input_is_one_line() {
    let e = usage_error(&kfd(&["decode", "/no/such/file"]));
    assert!(e.starts_with("kfd: cannot read '/no/such/file':"), "{e}");
    let e = usage_error(&kfd(&["decode", "--hex", "c0001000 zz"]));
    assert_eq!(e, "kfd: line 1, column 10: 'zz' is not a hex dword");
    let e = usage_error(&kfd_with_stdin(&["decode", "-"], b""));
    assert_eq!(e, "kfd: stdin holds no dwords to decode");
    let e = usage_error(&kfd(&["decode", "--hex", "ffff1000", "--skip", "5"]));
    assert!(e.contains("past the end"), "{e}");
    // Garbage of every byte value never panics.
    let junk: Vec<u8> = (0..4096u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    for engine in ["pm4", "sdma"] {
        let o = kfd_with_stdin(&["decode", "--format", "bin", "--engine", engine], &junk);
        assert!(
            matches!(o.status.code(), Some(0 | 2)),
            "{engine}: {}",
            stderr(&o)
        );
        assert!(!stderr(&o).contains("panic"), "{}", stderr(&o));
    }
}

#[test]
fn skip_count_and_full() {
    let out = ok(&["decode", "--hex", PM4, "--skip", "7", "--count", "8"]);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 3, "{out}");
    assert!(
        lines[1].starts_with("  0x0007: c0064900"),
        "offsets stay those of the input: {out}"
    );
    // A NOP with 11 body dwords: 8 dwords then +4, and with --full a continuation line.
    let nop = "c00a1000 1 2 3 4 5 6 7 8 9 a b";
    assert!(ok(&["decode", "--hex", nop]).contains(" +4  NOP"));
    let full = ok(&["decode", "--hex", nop, "--full"]);
    assert!(
        full.contains("\n  0x0008  00000008 00000009 0000000a 0000000b\n"),
        "{full}"
    );
}

#[test]
fn json_lists_packets_fields_and_errors() {
    let v = json(&ok(&["decode", "--json", "--hex", PM4]));
    assert_eq!(
        (
            v["engine"].as_str(),
            v["dwords"].as_u64(),
            v["packets"].as_u64(),
            v["errors"].as_u64()
        ),
        (Some("pm4"), Some(15), Some(2), Some(0))
    );
    let release = &v["entries"][1];
    assert_eq!(release["offset"], 7);
    assert_eq!(release["name"], "RELEASE_MEM");
    assert_eq!(release["words"].as_array().map(Vec::len), Some(8));
    assert_eq!(release["words"][0], 0xC006_4900u32);
    let int_ctxid = release["fields"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f[0] == "int_ctxid")
        .expect("int_ctxid field");
    assert_eq!(int_ctxid[1], "0x3");
    let o = kfd(&["decode", "--json", "--hex", "ffff1000 40000000"]);
    assert_eq!(o.status.code(), Some(2));
    let v = json(&stdout(&o));
    assert_eq!(v["errors"], 1);
    assert_eq!(v["entries"][1]["error_dword"], 1);
    assert!(v["entries"][1]["error"]
        .as_str()
        .unwrap()
        .contains("packet type 1"));
}

#[test]
fn gfx10_uses_the_gfx10_release_mem() {
    // The same RELEASE_MEM dwords read with gfx10 layouts name the gfx10 cache fields.
    let release = "c0064900 00028514 22000000 34000018 00007f12 00000003 00000000 00000003";
    let g9 = ok(&["decode", "--hex", release]);
    let g10 = ok(&["decode", "--hex", release, "--gfx", "gfx10"]);
    assert!(g9.contains("tc_wb_action_ena=1"), "{g9}");
    assert_ne!(g9.lines().nth(1), g10.lines().nth(1), "{g10}");
    assert!(g10.starts_with("; PM4 gfx10"));
}

#[test]
fn a_closed_pipe_is_a_quiet_stop() {
    // 200 000 NOPs, read by `head -c 100`.
    let big = "ffff1000 ".repeat(200_000);
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_kfd"))
        .args(["decode", "-"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Written from another thread, as a shell pipe is: `kfd` streams, so it may stop
    // reading (and exit) once its output is closed.
    let mut stdin = child.stdin.take().unwrap();
    let feeder = std::thread::spawn(move || {
        let _ = stdin.write_all(big.as_bytes());
    });
    let mut stdout = child.stdout.take().unwrap();
    let mut first = [0u8; 100];
    std::io::Read::read_exact(&mut stdout, &mut first).unwrap();
    drop(stdout);
    let out = child.wait_with_output().unwrap();
    feeder.join().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Issue #23 item 3: only what `--skip`/`--count` need is read, so an endless input ends.
#[test]
fn count_and_skip_read_only_what_they_need() {
    let start = std::time::Instant::now();
    let out = ok(&["decode", "--count", "4", "/dev/zero"]);
    assert!(
        out.starts_with("; SDMA 4 (gfx9), 4 dword(s) from /dev/zero"),
        "{out}"
    );
    assert_eq!(out.matches("SDMA_NOP").count(), 4, "{out}");
    let out = ok(&[
        "decode",
        "--skip",
        "1000000",
        "--count",
        "2",
        "--engine",
        "sdma",
        "/dev/zero",
    ]);
    assert!(
        out.contains("  0xf4240: 00000000"),
        "offsets stay the input's: {out}"
    );
    assert!(start.elapsed() < std::time::Duration::from_secs(20));
    let e = usage_error(&kfd(&[
        "decode",
        "--skip",
        "9",
        "--hex",
        "ffff1000 ffff1000",
    ]));
    assert_eq!(e, "kfd: --skip 9 is past the end of --hex (2 dwords)");
}

/// A stream longer than one chunk is listed exactly as the whole-input decoder lists it:
/// packets cut by a chunk's end are decoded whole, and the counts come at the end.
#[test]
fn long_streams_are_decoded_in_chunks_without_cutting_packets() {
    use kfd_cli::decode::{decode_words, Engine, CHUNK_DWORDS};
    use kfd_cli::target::Target;
    // NOPs of 1 to 7 dwords, so that packets straddle every chunk boundary, then one
    // truncated packet at the very end.
    let mut words = Vec::new();
    let mut n = 0u32;
    while words.len() < 3 * CHUNK_DWORDS + 100 {
        let count = n % 7;
        words.push(0xC000_1000 | (count << 16));
        words.extend(std::iter::repeat_n(n, count as usize + 1));
        n += 1;
    }
    words.push(0xC005_1000);
    let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    let o = kfd_with_stdin(&["decode", "--json", "-"], &bytes);
    assert_eq!(o.status.code(), Some(2), "the truncated end is an error");
    let v = json(&stdout(&o));
    let (_, whole) = decode_words(&words, 0, Engine::Pm4, Target::default(), false);
    let entries = v["entries"].as_array().unwrap();
    assert_eq!(entries.len(), whole.len());
    for (got, want) in entries.iter().zip(&whole) {
        assert_eq!(got["offset"], want.offset);
        assert_eq!(got["words"].as_array().unwrap().len(), want.words.len());
    }
    assert_eq!(v["dwords"], words.len());
    assert_eq!(v["errors"], 1);
    // Text: the header says the input is streamed, the footer counts the dwords.
    let o = kfd_with_stdin(&["decode", "-"], &bytes);
    let out = stdout(&o);
    assert!(
        out.starts_with("; PM4 gfx9, streamed from stdin\n"),
        "{out}"
    );
    assert!(
        out.ends_with(&format!(
            "; {} dword(s), {} packet(s), 1 error(s)\n",
            words.len(),
            whole.len() - 1
        )),
        "{}",
        &out[out.len() - 200..]
    );
}

/// Hex text is read a block at a time too: one very long line, and tokens cut by a block.
#[test]
fn long_hex_lines_are_read_in_blocks() {
    let text = "ffff1000 ".repeat(100_000) + "# a comment 12 zz\nc0001000 0\n";
    let o = kfd_with_stdin(&["decode", "--json", "-"], text.as_bytes());
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v = json(&stdout(&o));
    assert_eq!(v["dwords"], 100_002);
    assert_eq!(v["packets"], 100_001);
    // A bad token far into a long line is located by line and column.
    let text = "ffff1000 ".repeat(20_000) + "zz\n";
    let e = usage_error(&kfd_with_stdin(&["decode", "-"], text.as_bytes()));
    assert_eq!(e, "kfd: line 1, column 180001: 'zz' is not a hex dword");
}

#[test]
fn register_writes_show_register_names() {
    // SET_CONTEXT_REG DB_RENDER_CONTROL (0xA000) and PA_SC_WINDOW_SCISSOR_TL/BR (0xA081),
    // then SET_SH_REG COMPUTE_PGM_LO/HI (0x2E0C).
    let out = ok(&[
        "decode",
        "--hex",
        "c0016900 00000000 00000000 c0026900 00000081 80000000 40004000 \
         c0027600 0000020c 00001000 0000007f",
    ]);
    let lines: Vec<&str> = out.lines().collect();
    assert!(
        lines[1].ends_with("SET_CONTEXT_REG DB_RENDER_CONTROL=0x0"),
        "{out}"
    );
    assert!(
        lines[2].ends_with(
            "SET_CONTEXT_REG PA_SC_WINDOW_SCISSOR_TL=0x80000000 PA_SC_WINDOW_SCISSOR_BR=0x40004000"
        ),
        "{out}"
    );
    assert!(
        lines[3].ends_with("SET_SH_REG COMPUTE_PGM_LO=0x1000 COMPUTE_PGM_HI=0x7f"),
        "{out}"
    );
    assert_eq!(lines[4], "; 3 packet(s), 0 error(s)");
}
