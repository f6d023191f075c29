//! `kfd bench --quick` on the model: one row per headline measurement, each with its
//! target, a verdict that follows from the numbers, and the machine's load.

mod common;

use common::*;

const ROWS: [(&str, &str, f64, &str); 9] = [
    ("PM4 runlist encode", "ns", 5.0, "at_most"),
    ("PM4 decode", "GB/s", 2.0, "at_least"),
    ("thunk overhead per ioctl", "ns", 50.0, "at_most"),
    ("doorbell → RELEASE_MEM", "ns", 2_000.0, "at_most"),
    (
        "RELEASE_MEM interrupt → WAIT_EVENTS",
        "ns",
        20_000.0,
        "at_most",
    ),
    ("SDMA COPY_LINEAR 1 MiB", "%", 80.0, "at_least"),
    ("drain throughput, 1 MiB slots", "%", 80.0, "at_least"),
    (
        "drain commit → visible, by event",
        "ns",
        50_000.0,
        "at_most",
    ),
    (
        "drain commit → visible, by polling",
        "ns",
        5_000.0,
        "at_most",
    ),
];

#[test]
fn bench_json_has_every_row_with_its_target() {
    let v = json(&ok(&["bench", "--quick", "--json"]));
    assert_eq!(v["source"]["kind"], "model");
    assert_eq!(v["quick"], true);
    assert!(v["cpus"].as_u64().is_some_and(|c| c >= 1));
    let rows = v["rows"].as_array().expect("rows");
    assert_eq!(rows.len(), ROWS.len());
    let mut passed = 0;
    for (row, (name, unit, target, goal)) in rows.iter().zip(ROWS) {
        assert!(
            row["name"].as_str().is_some_and(|n| n.starts_with(name)),
            "{row}"
        );
        assert_eq!(row["unit"], unit, "{row}");
        assert_eq!(row["target"], target, "{row}");
        assert_eq!(row["goal"], goal, "{row}");
        let value = row["value"].as_f64().expect("a measured value");
        assert!(value.is_finite(), "{row}");
        let pass = if goal == "at_most" {
            value <= target
        } else {
            value >= target
        };
        assert_eq!(row["pass"], pass, "{row}");
        passed += usize::from(pass);
        assert!(
            row["how"]
                .as_str()
                .is_some_and(|h| h.starts_with("median of ")),
            "{row}"
        );
    }
    assert_eq!(v["passed"], passed);
    // Latencies and rates are positive; the thunk's overhead is a difference and may not be.
    for i in [0, 1, 3, 4, 5, 6, 7, 8] {
        assert!(
            rows[i]["value"].as_f64().is_some_and(|x| x > 0.0),
            "{}",
            rows[i]
        );
    }
}

#[test]
fn bench_table_shows_targets_and_load() {
    let out = ok(&["bench", "--quick"]);
    let mut lines = out.lines();
    assert!(
        lines
            .next()
            .is_some_and(|l| l.starts_with("kfd bench: the model of 1 × gfx900")),
        "{out}"
    );
    let machine = lines.next().unwrap_or_default();
    assert!(
        machine.starts_with("machine: ") && machine.contains("load average"),
        "{out}"
    );
    let header = out
        .lines()
        .find(|l| l.starts_with("measurement"))
        .expect("a table header");
    assert!(header.contains("measured") && header.contains("target") && header.contains("result"));
    for (name, ..) in ROWS {
        let row = out
            .lines()
            .find(|l| l.starts_with(name))
            .unwrap_or_else(|| panic!("no row {name}:\n{out}"));
        assert!(row.contains(" pass ") || row.contains(" miss "), "{row}");
        assert!(row.contains('≤') || row.contains('≥'), "{row}");
    }
    assert!(out.contains("≤ 5.0 ns") && out.contains("≥ 2.00 GB/s") && out.contains("≥ 80%"));
    assert!(out.contains(" of 9 targets met"), "{out}");
}

#[test]
fn bench_bad_arguments() {
    let e = usage_error(&kfd(&["bench", "--quick", "--rounds", "3"]));
    assert!(e.contains("--rounds"), "{e}");
    let e = usage_error(&kfd(&["bench", "--model", "gfx700"]));
    assert!(e.contains("unknown GPU preset 'gfx700'"), "{e}");
}
