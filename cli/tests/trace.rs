//! `kfd trace` scenarios on the model: the layer tree, the MQD changes, JSON and the timeline.

mod common;

use common::*;

/// The line index of the first line containing all of `needles`, at or after `from`.
fn find(lines: &[&str], from: usize, needles: &[&str]) -> usize {
    (from..lines.len())
        .find(|&i| needles.iter().all(|n| lines[i].contains(n)))
        .unwrap_or_else(|| {
            panic!(
                "no line with {needles:?} after line {from}:\n{}",
                lines.join("\n")
            )
        })
}

fn depth(line: &str) -> usize {
    line.len() - line.trim_start().len()
}

#[test]
fn create_queue_travels_every_layer() {
    let out = ok(&["trace", "create-queue"]);
    let lines: Vec<&str> = out.lines().collect();
    assert!(
        lines[0].starts_with("kfd trace create-queue on the model (gfx900)"),
        "{out}"
    );
    let step = find(
        &lines,
        0,
        &[
            "CREATE_QUEUE (AQL compute, 4 KiB ring)",
            "on MEC0 pipe 0 queue 2",
        ],
    );
    let ioctl = find(
        &lines,
        step,
        &["ioctl", "AMDKFD_IOC_CREATE_QUEUE (96 bytes)"],
    );
    let pqm = find(&lines, ioctl, &["pqm", "create queue type 2"]);
    let dqm = find(&lines, pqm, &["dqm", "MQD at 0x"]);
    let written = find(&lines, dqm, &["MQD written v9_mqd"]);
    // Facts §6.4: a 4 KiB AQL ring on gfx9 with Linux 6.12: QUEUE_SIZE 9 and the AQL bits.
    find(
        &lines,
        written,
        &["dw145", "cp_hqd_pq_control", "0x1c014509"],
    );
    find(
        &lines,
        written,
        &["dw181", "cp_hqd_aql_control", "0x00000001"],
    );
    let pm = find(
        &lines,
        written,
        &[
            "pm ",
            "runlist IB: 1 process(es), 1 active queue(s), 23 dwords",
        ],
    );
    let map_process = find(&lines, pm, &["0x0000: c00ea100", "MAP_PROCESS"]);
    find(
        &lines,
        map_process,
        &["0x0010: c005a200", "MAP_QUEUES", "doorbell_offset=0x1000"],
    );
    let hiq = find(&lines, pm, &["HIQ ", "HIQ submit"]);
    let run_list = find(
        &lines,
        hiq,
        &["c002a500", "RUN_LIST", "valid=1 process_cnt=1"],
    );
    let hws = find(&lines, run_list, &["HWS ", "RUN_LIST: IB"]);
    let hqd = find(
        &lines,
        hws,
        &["HQD ", "-> Compute { mec: 0, pipe: 0, queue: 2 } vmid 8"],
    );
    find(&lines, hqd, &["MQD changed v9_mqd"]);
    find(
        &lines,
        hqd,
        &["dw130", "cp_hqd_active", "0x00000000 → 0x00000001"],
    );
    find(
        &lines,
        hqd,
        &["dw131", "cp_hqd_vmid", "0x00000000 → 0x00000008"],
    );
    // Each layer sits deeper than the one that called it.
    let depths: Vec<usize> = [ioctl, pqm, dqm, pm, hiq, hws, hqd]
        .iter()
        .map(|&i| depth(lines[i]))
        .collect();
    assert!(depths.windows(2).all(|w| w[0] < w[1]), "{depths:?}\n{out}");
    let state = find(
        &lines,
        hqd,
        &["state: processes 1, queues 1 active / 1 total, runlist mapped, HQDs 1/24 in use"],
    );
    find(
        &lines,
        state,
        &["MEC0 pipe 0 queue 2", "pasid 0x8001 vmid 8"],
    );
    // Destroy preempts (UNMAP_QUEUES + QUERY_STATUS fence) and the MQD goes inactive.
    let destroy = find(
        &lines,
        state,
        &["DESTROY_QUEUE (queue 0)", "0 queue(s) left, 0 mapped"],
    );
    let unmap = find(
        &lines,
        destroy,
        &["c004a300", "UNMAP_QUEUES action=PREEMPT_QUEUES"],
    );
    find(
        &lines,
        unmap,
        &["dw130", "cp_hqd_active", "0x00000001 → 0x00000000"],
    );
    find(&lines, unmap, &["QUERY_STATUS", "data=0x64"]);
    find(&lines, unmap, &["HWS ", "QUERY_STATUS: fence", "= 100"]);
}

#[test]
fn create_queue_json_and_timeline() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.json");
    let out = ok(&[
        "trace",
        "create-queue",
        "--queue-type",
        "sdma",
        "--json",
        "--chrome-trace",
        path.to_str().unwrap(),
    ]);
    let v = json(&out);
    assert_eq!(
        (v["scenario"].as_str(), v["preset"].as_str()),
        (Some("create-queue"), Some("gfx900"))
    );
    let steps = v["steps"].as_array().unwrap();
    let create = steps
        .iter()
        .find(|s| {
            s["title"]
                .as_str()
                .is_some_and(|t| t.starts_with("CREATE_QUEUE (SDMA"))
        })
        .expect("create step");
    assert_eq!(create["detail"], "full");
    let records = create["records"].as_array().unwrap();
    let targets: Vec<&str> = records
        .iter()
        .filter_map(|r| r["target"].as_str())
        .collect();
    for t in [
        "kfd::ioctl",
        "kfd::pqm",
        "kfd::dqm",
        "kfd::pm",
        "kfd::kq",
        "hw::hws",
    ] {
        assert!(targets.contains(&t), "{t} in {targets:?}");
    }
    let init = records
        .iter()
        .flat_map(|r| r["notes"].as_array().cloned().unwrap_or_default())
        .find(|n| n["kind"] == "mqd_init")
        .expect("the SDMA MQD appears");
    assert_eq!(init["struct"], "v9_sdma_mqd");
    // Facts §6.5: rb_cntl of a 4 KiB ring is RB_SIZE 10 | writeback: 0x00061014.
    let rb_cntl = init["fields"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["name"] == "sdmax_rlcx_rb_cntl")
        .unwrap();
    assert_eq!(rb_cntl["value"], 0x0006_1014);
    let mapped = create["state"]["mapped"].as_array().unwrap();
    assert_eq!(mapped.len(), 1);
    assert!(
        mapped[0]["slot"].as_str().unwrap().starts_with("SDMA"),
        "{mapped:?}"
    );

    let timeline = json(&std::fs::read_to_string(&path).unwrap());
    let events = timeline["traceEvents"].as_array().unwrap();
    let ioctl = events
        .iter()
        .find(|e| e["name"] == "CREATE_QUEUE" && e["ph"] == "X")
        .expect("CREATE_QUEUE span");
    assert!(ioctl["dur"].as_f64().unwrap() > 0.0);
    assert!(events
        .iter()
        .any(|e| e["ph"] == "i" && e["cat"] == "hw::hws"));
    assert!(
        events
            .iter()
            .any(|e| e["cat"] == "queue"
                && e["name"].as_str().is_some_and(|n| n.starts_with("on SDMA"))),
        "the SDMA queue's time on its slot"
    );
    assert!(events
        .iter()
        .all(|e| e["ts"].is_null() || e["ts"].as_f64().is_some()));
}

#[test]
fn oversubscribe_chains_the_runlist_and_time_slices() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("o.json");
    let out = ok(&[
        "trace",
        "oversubscribe",
        "--chrome-trace",
        path.to_str().unwrap(),
    ]);
    let lines: Vec<&str> = out.lines().collect();
    assert!(lines[0].contains("(gfx1030)"), "{}", lines[0]);
    // Navi 21 gives KFD 8 HQDs (facts §9.1); the 9th queue oversubscribes (facts §9.6).
    find(&lines, 0, &["SET_RESOURCES: 8 HQDs"]);
    let b = find(
        &lines,
        0,
        &[
            "B: CREATE_QUEUE — queue 9 for 8 HQDs",
            "runlist chained (oversubscribed)",
        ],
    );
    find(&lines, b, &["pm ", "Runlist is getting oversubscribed"]);
    find(
        &lines,
        b,
        &["runlist IB: 2 process(es), 9 active queue(s)", "chained"],
    );
    find(
        &lines,
        b,
        &["RUN_LIST", "chain=1", "chained_runlist_idle_disable=1"],
    );
    let state = find(
        &lines,
        b,
        &[
            "state:",
            "mapped, chained (oversubscribed), HQDs 8/8 in use",
        ],
    );
    // The firmware time-slices queue by queue: each quantum maps the queue the last one left
    // out (A's oldest, doorbell 0x1000, first) in place of another of A's.
    let tick = find(
        &lines,
        state,
        &[
            "HWS time slice",
            "A has 7 queue(s) on HQDs, B has 1; doorbell(s) on: 0x1000; off: 0x1002",
        ],
    );
    find(&lines, tick, &["cp_hqd_active", "0x00000001 → 0x00000000"]);
    find(
        &lines,
        tick + 1,
        &[
            "HWS time slice again",
            "A has 7 queue(s) on HQDs, B has 1; doorbell(s) on: 0x1002; off: 0x1004",
        ],
    );
    let timeline = json(&std::fs::read_to_string(&path).unwrap());
    let spans = timeline["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["cat"] == "queue")
        .count();
    assert!(spans >= 9, "every queue spent time on an HQD: {spans}");
}

#[test]
fn evict_restore_is_refcounted() {
    let out = ok(&["trace", "evict-restore"]);
    let lines: Vec<&str> = out.lines().collect();
    let evict = find(
        &lines,
        0,
        &[
            "evict the process's queues",
            "0 queue(s) on the hardware, 0 active",
        ],
    );
    find(&lines, evict, &["dqm", "evicting pasid 0x8001 queues"]);
    find(
        &lines,
        evict,
        &["UNMAP_QUEUES", "2 queue(s) off the hardware"],
    );
    let again = find(
        &lines,
        evict,
        &["evict again", "0 queue(s) on the hardware"],
    );
    let restore1 = find(
        &lines,
        again,
        &["restore once", "0 queue(s) on the hardware, 0 active"],
    );
    let restore2 = find(
        &lines,
        restore1,
        &["restore again", "2 queue(s) on the hardware, 2 active"],
    );
    find(&lines, restore2, &["dqm", "restoring pasid 0x8001 queues"]);
    find(
        &lines,
        restore2,
        &["cp_hqd_active", "0x00000000 → 0x00000001"],
    );
    // The second eviction and the first restore send nothing to the firmware.
    assert!(
        !lines[again..restore2]
            .iter()
            .any(|l| l.contains("HIQ submit")),
        "{out}"
    );
}

#[test]
fn all_shows_setup_steps_in_full() {
    let out = ok(&[
        "trace",
        "create-queue",
        "--all",
        "--queue-type",
        "pm4",
        "--preset",
        "gfx90a",
    ]);
    assert!(out.contains("SET_RESOURCES"), "bring-up in full");
    assert!(out.contains("AMDKFD_IOC_ACQUIRE_VM"));
    assert!(out.contains("CREATE_QUEUE (PM4 compute"));
    // Aldebaran: VMIDs start at 3 (facts §9.1) and MAP_PROCESS has 21 dwords (facts §3.4).
    assert!(out.contains("vmid 3"), "{out}");
    assert!(
        out.contains("c013a100"),
        "21-dword MAP_PROCESS header:\n{out}"
    );
}

#[test]
fn event_signal_from_a_pm4_queue_wakes_wait_events() {
    let out = ok(&["trace", "event-signal"]);
    let lines: Vec<&str> = out.lines().collect();
    let event = find(
        &lines,
        0,
        &["CREATE_EVENT (signal, auto-reset)", "event 1 (slot 0x"],
    );
    // Facts §8.2: RELEASE_MEM to the event slot, int_sel 2 (after write confirm), data_sel 1
    // (32 bits), int_ctxid = the event id; the write pointer counts dwords (8).
    let submit = find(
        &lines,
        event,
        &[
            "client: RELEASE_MEM (int_sel 2, data_sel 1, int_ctxid 1)",
            "write pointer 8 dwords",
        ],
    );
    find(
        &lines,
        submit,
        &[
            "0x0000: c0064900",
            "RELEASE_MEM",
            "int_sel=SEND_INTERRUPT_AFTER_WRITE_CONFIRM",
            "data_sel=SEND_32_BIT_LOW",
            "int_ctxid=0x1",
        ],
    );
    find(
        &lines,
        submit,
        &["client", "write pointer 8 (dwords) stored at"],
    );
    find(&lines, submit, &["client", "doorbell (mmap offset"]);
    let run = find(
        &lines,
        submit,
        &[
            "the CP runs the queue",
            "1 packet(s), 1 interrupt(s); read pointer 8 dwords",
        ],
    );
    let cp = find(&lines, run, &["CP ", "RELEASE_MEM"]);
    let ih = find(&lines, cp, &["IH ", "IH <- ", "pasid 0x8001"]);
    find(&lines, ih, &["events", "signals [1]"]);
    assert!(
        depth(lines[cp]) < depth(lines[ih]),
        "the IH sits under the CP"
    );
    find(&lines, run, &["WAIT_EVENTS on event 1", "COMPLETE"]);
}

#[test]
fn event_signal_from_an_sdma_queue_counts_bytes() {
    let out = ok(&[
        "trace",
        "event-signal",
        "--queue-type",
        "sdma",
        "--preset",
        "gfx1030",
    ]);
    let lines: Vec<&str> = out.lines().collect();
    // Facts §8.2: SDMA FENCE to the slot, then TRAP with the event id; the write pointer counts
    // bytes (6 dwords = 24 bytes).
    let submit = find(
        &lines,
        0,
        &[
            "client: SDMA FENCE to the event slot + TRAP with context 1",
            "write pointer 24 bytes",
        ],
    );
    find(
        &lines,
        submit,
        &["0x0000: 00000005", "SDMA_FENCE", "data=0x1"],
    );
    find(
        &lines,
        submit,
        &["0x0004: 00000006 00000001", "SDMA_TRAP int_context=0x1"],
    );
    let run = find(
        &lines,
        submit,
        &[
            "the SDMA engine runs the queue",
            "2 packet(s), 1 interrupt(s); read pointer 24 bytes",
        ],
    );
    find(&lines, run, &["SDMA ", "SDMA_TRAP"]);
    find(&lines, run, &["events", "signals [1]"]);
    find(&lines, run, &["WAIT_EVENTS on event 1", "COMPLETE"]);
}

#[test]
fn a_vm_fault_becomes_a_memory_event_and_evicts() {
    for queue_type in ["pm4", "sdma"] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.json");
        let o = kfd(&[
            "trace",
            "vm-fault",
            "--queue-type",
            queue_type,
            "--chrome-trace",
            path.to_str().unwrap(),
        ]);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        assert!(
            o.stderr.is_empty(),
            "the fault is in the trace, not on stderr: {}",
            stderr(&o)
        );
        let out = stdout(&o);
        let lines: Vec<&str> = out.lines().collect();
        let run = find(
            &lines,
            0,
            &[
                "runs the queue",
                "queue stopped: GPU VM fault: write at 0xdeadb008 (not present)",
            ],
        );
        find(&lines, run, &["IH <- "]);
        let irq = find(
            &lines,
            run,
            &[
                "irq",
                "GPU VM fault at page 0xdeadb000",
                "evicting the process's queues",
            ],
        );
        find(&lines, irq, &["dqm", "evicting pasid 0x8001 queues"]);
        find(
            &lines,
            irq,
            &["UNMAP_QUEUES", "1 queue(s) off the hardware"],
        );
        find(
            &lines,
            irq,
            &["state: processes 1, queues 0 active / 1 total, runlist none"],
        );
        find(
            &lines,
            irq,
            &[
                "WAIT_EVENTS on event 0x40000000",
                "COMPLETE: memory exception at va 0xdeadb000",
                "(not present 1, read-only 0)",
            ],
        );
        let timeline = json(&std::fs::read_to_string(&path).unwrap());
        let events = timeline["traceEvents"].as_array().unwrap();
        assert!(
            events.iter().any(|e| e["cat"] == "kfd::interrupt"),
            "{queue_type}"
        );
        assert!(events
            .iter()
            .any(|e| e["name"] == "WAIT_EVENTS" && e["ph"] == "X"));
    }
}

#[test]
fn bad_options_are_one_line() {
    let e = usage_error(&kfd(&["trace", "event-signal", "--queue-type", "aql"]));
    assert_eq!(
        e,
        "kfd: scenario 'event-signal' takes --queue-type pm4 or sdma"
    );
    let e = usage_error(&kfd(&["trace", "oversubscribe", "--queue-type", "sdma"]));
    assert_eq!(e, "kfd: scenario 'oversubscribe' takes --queue-type aql");
    let e = usage_error(&kfd(&["trace", "create-queue", "--ring-size", "3000"]));
    assert!(e.contains("not a power of two"), "{e}");
    let e = usage_error(&kfd(&["trace", "create-queue", "--preset", "gfx1100"]));
    assert!(e.contains("unknown GPU preset 'gfx1100'"), "{e}");
}

#[test]
fn every_scenario_prints_json_that_parses() {
    for s in [
        "create-queue",
        "oversubscribe",
        "evict-restore",
        "vm-fault",
        "event-signal",
        "dispatch",
        "svm-fault",
    ] {
        let v = json(&ok(&["trace", s, "--json"]));
        assert_eq!(v["scenario"], s);
        let steps = v["steps"].as_array().unwrap();
        assert!(steps.len() >= 4, "{s}");
        assert_eq!(steps[0]["title"], "driver bring-up (start_cpsch)");
        for step in steps {
            assert!(
                step["records"].is_array() && step["state"]["hqds"].as_u64().is_some(),
                "{s}: {step}"
            );
            assert!(step["end_us"].as_f64() >= step["start_us"].as_f64());
        }
        assert!(
            !steps.iter().any(|st| st["outcome"]
                .as_str()
                .is_some_and(|o| o.starts_with("failed"))),
            "{s}"
        );
    }
}

#[test]
fn dispatch_goes_from_the_aql_packet_to_the_waves_and_back() {
    let out = ok(&["trace", "dispatch"]);
    let lines: Vec<&str> = out.lines().collect();
    assert!(
        lines[0].starts_with("kfd trace dispatch on the model (gfx900): 8 steps"),
        "{out}"
    );
    let written = find(&lines, 0, &["client", "packet 0 at ring"]);
    // The packet the thunk wrote, decoded: 200 work-items in groups of 128, one dimension.
    find(
        &lines,
        written,
        &[
            "KERNEL_DISPATCH",
            "dimensions=1",
            "workgroup=128x1x1",
            "grid=200x1x1",
        ],
    );
    let run = find(
        &lines,
        written,
        &["the CP runs the packet", "1 packet(s), 1 interrupt(s)"],
    );
    let cp = find(&lines, run, &["CP ", "AQL KERNEL_DISPATCH"]);
    let spi = find(
        &lines,
        cp,
        &[
            "SPI ",
            "dispatch 1:",
            "→ 2 workgroup(s) × 2 wave(s); 4 VGPRs",
        ],
    );
    assert!(
        depth(lines[spi]) > depth(lines[cp]),
        "the SPI sits below the CP"
    );
    let w0 = find(
        &lines,
        spi,
        &["workgroup (0,0,0) wave 0 → wave #0 on SE 0 CU 0 SIMD 0 (HW_ID 0x42800000): EXEC 0xffffffffffffffff (traced)"],
    );
    // Initial SGPRs per the descriptor (code object v4 axpy): the dispatch packet in s[4:5],
    // the kernel arguments in s[6:7], workgroup id x in s8; v0 holds the work-item ids.
    find(&lines, w0, &["s[4:5]", "dispatch packet", "0x"]);
    find(&lines, w0, &["s[6:7]", "kernel arguments", "0x"]);
    find(&lines, w0, &["s8", "workgroup id x", "0x0"]);
    find(
        &lines,
        w0,
        &[
            "v0",
            "work-item id x",
            "lane 0: 0x0, lane 1: 0x1, … lane 63: 0x3f",
        ],
    );
    // The first instruction reads dword 1 of the dispatch packet: workgroup_size_x (128) in
    // [15:0] and workgroup_size_y (1) in [31:16].
    let first = find(&lines, w0, &["SQ ", "s_load_dword s2, s[4:5], 0x4"]);
    assert!(
        lines[first + 1].contains("s2: 0x0 → 0x10080"),
        "{}",
        lines[first + 1]
    );
    // Then the kernel arguments at offset 16: a = 3 and n = 200.
    let args = find(&lines, first, &["s_load_dwordx2 s[0:1], s[6:7], 0x10"]);
    assert!(
        lines[args + 1].contains("s0: 0x0 → 0x3"),
        "{}",
        lines[args + 1]
    );
    assert!(
        lines[args + 2].contains("s1: 0x0 → 0xc8"),
        "{}",
        lines[args + 2]
    );
    let end = find(&lines, first, &["wave #0 ended (s_endpgm) after"]);
    let traced = lines[first..end]
        .iter()
        .filter(|l| l.trim_start().starts_with("SQ      0x"))
        .count();
    assert!(
        lines[end].contains(&format!("after {traced} instructions")),
        "every executed instruction is listed once: {traced}, {}",
        lines[end]
    );
    assert!(lines[first..end]
        .iter()
        .any(|l| l.contains("global_store_dword")));
    let retired = find(
        &lines,
        end,
        &["CP ", "retired; completion signal", ": 1 -> 0"],
    );
    find(&lines, retired, &["IH ", "src 181"]);
    find(
        &lines,
        retired,
        &["irq ", "CP end-of-pipe ctxid 0x1 -> events [1]"],
    );
    find(&lines, retired, &["200 of 200 correct"]);
    // Only wave #0 is traced instruction by instruction.
    assert_eq!(out.matches("s_load_dword s2, s[4:5], 0x4").count(), 1);
    assert_eq!(out.matches(" ended (s_endpgm) after ").count(), 4);
}

#[test]
fn dispatch_traces_a_chosen_partial_wave_and_draws_waves_on_cus() {
    let dir = std::env::temp_dir().join(format!("kfd-trace-dispatch-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("waves.json");
    let out = ok(&[
        "trace",
        "dispatch",
        "--preset",
        "gfx90a",
        "--wave",
        "3",
        "--chrome-trace",
        path.to_str().unwrap(),
    ]);
    let lines: Vec<&str> = out.lines().collect();
    // Workgroup 1 holds work-items 128..199: its second wave has 200 - 192 = 8 lanes.
    let w3 = find(
        &lines,
        0,
        &["workgroup (1,0,0) wave 1 → wave #3 on SE 1 CU 0 SIMD 1 (HW_ID 0x42302010): EXEC 0x00000000000000ff (traced)"],
    );
    // gfx90a packs the work-item ids into v0 (x | y << 10 | z << 20); lane 0 is x = 64.
    find(
        &lines,
        w3,
        &[
            "v0",
            "x | y<<10 | z<<20",
            "lane 0: 0x40, lane 1: 0x41, … lane 7: 0x47",
        ],
    );
    find(&lines, w3, &["s8", "workgroup id x", "0x1"]);
    find(&lines, w3, &["wave #3 ended (s_endpgm)"]);

    let v = json(&std::fs::read_to_string(&path).unwrap());
    let events = v["traceEvents"].as_array().unwrap();
    let waves: Vec<&serde_json::Value> = events.iter().filter(|e| e["cat"] == "wave").collect();
    assert_eq!(waves.len(), 4, "one span per wave");
    for w in &waves {
        assert_eq!(w["ph"], "X");
        assert_eq!(w["pid"], 4);
        assert!(w["dur"].as_f64().is_some_and(|d| d >= 0.0) && w["ts"].as_f64().is_some());
        assert!(
            w["args"]["instructions"].as_u64().is_some_and(|n| n > 0),
            "{w}"
        );
    }
    // Workgroup 0 on SE 0 CU 0, workgroup 1 on SE 1 CU 0 (the SPI deals workgroups to the
    // shader engines in turn), each wave on its own slot track of its compute unit.
    // HW_ID 0x42302010: ME 1, queue 2, VMID 3 (gfx90a's first KFD VMID), SE 1, SIMD 1.
    let mut tids: Vec<u64> = waves.iter().map(|w| w["tid"].as_u64().unwrap()).collect();
    tids.sort_unstable();
    assert_eq!(tids, [1, 2, 16 * 16 + 1, 16 * 16 + 2]);
    assert!(events.iter().any(|e| e["ph"] == "M"
        && e["pid"] == 4
        && e["args"]["name"] == "SE 1 CU 0 wave slot 1 (SIMD 1)"));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn dispatch_bad_options_are_one_line() {
    let e = usage_error(&kfd(&["trace", "dispatch", "--wave", "4"]));
    assert_eq!(e, "kfd: --wave 4: the dispatch has 4 waves (0 to 3)");
    let e = usage_error(&kfd(&["trace", "dispatch", "--preset", "gfx1030"]));
    assert_eq!(
        e,
        "kfd: the dispatch scenario runs the kept axpy code objects: --preset gfx900 or gfx90a, not gfx1030"
    );
    let e = usage_error(&kfd(&["trace", "create-queue", "--wave", "1"]));
    assert_eq!(
        e,
        "kfd: --wave belongs to the dispatch scenario, not 'create-queue'"
    );
    let e = usage_error(&kfd(&["trace", "dispatch", "--queue-type", "pm4"]));
    assert_eq!(e, "kfd: scenario 'dispatch' takes --queue-type aql");
}

/// XNACK on: the write faults, the driver migrates one page to VRAM and maps it, the queue is
/// remapped and the write lands — from SDMA and from the CP.
#[test]
fn svm_fault_is_recovered_and_the_write_retried() {
    for queue_type in ["sdma", "pm4"] {
        let out = ok(&["trace", "svm-fault", "--queue-type", queue_type]);
        assert!(out.contains("(gfx90a)"), "{out}");
        let fault = out
            .find("recoverable GPU fault at")
            .expect("the driver's fault path");
        let migrated = out[fault..].find("to VRAM of gpu").expect("a migration");
        let retried = out[fault + migrated..]
            .find("the queue retries")
            .expect("the retry");
        let packet = if queue_type == "sdma" {
            "SDMA_WRITE_LINEAR"
        } else {
            "WRITE_DATA"
        };
        assert!(
            out[fault + migrated + retried..].contains(packet),
            "{queue_type}: the packet runs again after the remap"
        );
        assert!(
            out.contains("0x5eedf00d; 1 recovered fault(s), 1 migration(s) to VRAM"),
            "{queue_type}: {out}"
        );
        assert!(!out.contains("queue stopped"), "{queue_type}: {out}");
    }
}
