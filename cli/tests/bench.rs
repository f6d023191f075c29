//! `kfd bench --quick` on the model: one row per headline measurement, each with its
//! target, a verdict that follows from the numbers, and the machine's load.

mod common;

use common::*;

const ROWS: [(&str, &str, Option<f64>, &str); 15] = [
    ("PM4 runlist encode", "ns", Some(5.0), "at_most"),
    ("PM4 decode", "GB/s", Some(2.0), "at_least"),
    ("thunk overhead per ioctl", "ns", Some(50.0), "at_most"),
    ("doorbell → RELEASE_MEM", "ns", Some(2_000.0), "at_most"),
    (
        "RELEASE_MEM interrupt → WAIT_EVENTS",
        "ns",
        Some(20_000.0),
        "at_most",
    ),
    ("SDMA COPY_LINEAR 1 MiB", "%", Some(80.0), "at_least"),
    ("drain throughput, 1 MiB slots", "%", Some(80.0), "at_least"),
    (
        "drain commit → visible, by event",
        "ns",
        Some(50_000.0),
        "at_most",
    ),
    (
        "drain commit → visible, by polling",
        "ns",
        Some(5_000.0),
        "at_most",
    ),
    // The thunk's everyday operations (issue #22): compared with libhsakmt by
    // tests/c/bench.sh, so most have no target of their own here.
    ("thunk: PM4 queue create + destroy", "ns", None, "at_most"),
    (
        "thunk: alloc + map + unmap + free 64 KiB",
        "ns",
        None,
        "at_most",
    ),
    ("thunk: SET_EVENT + WAIT_EVENTS", "ns", None, "at_most"),
    ("thunk: submit PM4 fence", "ns", None, "at_most"),
    ("thunk: AQL barrier", "ns", Some(2_000.0), "at_most"),
    (
        "thunk: dispatch an empty kernel",
        "ns",
        Some(50_000.0),
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
        match target {
            Some(t) => assert_eq!(row["target"], t, "{row}"),
            None => assert!(row["target"].is_null(), "{row}"),
        }
        assert_eq!(row["goal"], goal, "{row}");
        let value = row["value"].as_f64().expect("a measured value");
        assert!(value.is_finite(), "{row}");
        let pass = match target {
            None => true,
            Some(t) if goal == "at_most" => value <= t,
            Some(t) => value >= t,
        };
        assert_eq!(row["pass"], pass, "{row}");
        passed += usize::from(pass && target.is_some());
        assert!(
            row["how"]
                .as_str()
                .is_some_and(|h| h.starts_with("median of ")),
            "{row}"
        );
    }
    assert_eq!(v["passed"], passed);
    // Latencies and rates are positive; the thunk's overhead is a difference and may not be.
    for i in [0, 1, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14] {
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
    for (name, _, target, _) in ROWS {
        let row = out
            .lines()
            .find(|l| l.starts_with(name))
            .unwrap_or_else(|| panic!("no row {name}:\n{out}"));
        if target.is_some() {
            assert!(row.contains(" pass ") || row.contains(" miss "), "{row}");
            assert!(row.contains('≤') || row.contains('≥'), "{row}");
        } else {
            assert!(row.contains(" info ") && row.contains('—'), "{row}");
            assert!(row.contains("tests/c/bench.sh"), "{row}");
        }
    }
    assert!(out.contains("≤ 5.0 ns") && out.contains("≥ 2.00 GB/s") && out.contains("≥ 80%"));
    assert!(out.contains(" of 11 targets met"), "{out}");
}

#[test]
fn bench_bad_arguments() {
    let e = usage_error(&kfd(&["bench", "--quick", "--rounds", "3"]));
    assert!(e.contains("--rounds"), "{e}");
    let e = usage_error(&kfd(&["bench", "--model", "gfx700"]));
    assert!(e.contains("unknown GPU preset 'gfx700'"), "{e}");
}

#[test]
fn bench_ops_prints_the_c_sides_line_format() {
    let out = ok(&[
        "bench",
        "--ops",
        "event_set_wait,aql_barrier_round_trip",
        "--batches",
        "3",
        "--scale",
        "0.05",
    ]);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 2, "{out}");
    for (line, (name, iters)) in lines
        .iter()
        .zip([("event_set_wait", 100), ("aql_barrier_round_trip", 500)])
    {
        let f: Vec<&str> = line.split(' ').collect();
        assert_eq!(f.len(), 4, "{line}");
        assert_eq!(f[0], name);
        let median = f[1].parse::<f64>().unwrap();
        assert!(median > 0.0, "{line}");
        assert_eq!(f[2], format!("3x{iters}"));
        // The fastest batch, no slower than the median one.
        let fastest = f[3].parse::<f64>().unwrap();
        assert!(fastest > 0.0 && fastest <= median, "{line}");
    }
    let e = usage_error(&kfd(&["bench", "--ops", "event_set_wait,nope"]));
    assert!(
        e.contains("unknown operation 'nope'") && e.contains("dispatch_empty_kernel"),
        "{e}"
    );
    let e = usage_error(&kfd(&["bench", "--ops", "all", "--scale", "0"]));
    assert!(e.contains("--scale"), "{e}");
    let e = usage_error(&kfd(&["bench", "--batches", "3"]));
    assert!(e.contains("--ops"), "{e}");
}
