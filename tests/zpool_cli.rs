//! The `/dev/zfs` replies of the lab captures, decoded by the agent and turned into rates by
//! proto, agree with what `zpool list -vp`, `zpool iostat -vlp` and `zpool status` printed at
//! the same moment (`cli/` of each capture). Expected values are parsed from that text here.

use std::collections::HashMap;
use zpulse_proto::sample::{VdevRates, pool_vdev_rates};
use zpulse_proto::snapshot::{PoolConfig, Vdev, VdevClass};
use zpulse_tests::fixture;

/// Every lab capture with CLI views, and the pool they describe: the lab's `basic` scenario
/// and our own (`tests/lab/scenarios/vdevs.sh`: raidz2 of files, a dedup class, a spare, a
/// loop-device log; a degraded mirror with a single-disk special vdev after a scrub; the
/// storm pool while a scrub runs).
fn captures() -> Vec<(String, String)> {
    let mut out = Vec::new();
    for scenario in [
        "lab/basic",
        "lab/vdevs/rz",
        "lab/vdevs/deg",
        "lab/storm/scrub",
        "lab/health/cks",
        "lab/health/hm",
        "lab/health/fill",
        "lab/health/layout",
        "lab/resilver/age",
        "lab/resilver/resilver",
    ] {
        for entry in std::fs::read_dir(fixture(scenario)).unwrap() {
            let dir = entry.unwrap().path();
            let Ok(files) = std::fs::read_dir(dir.join("cli")) else {
                continue;
            };
            for f in files {
                let name = f.unwrap().file_name().into_string().unwrap();
                if let Some(pool) = name
                    .strip_prefix("zpool-status.")
                    .and_then(|n| n.strip_suffix(".txt"))
                {
                    let rel = dir.strip_prefix(fixture("")).unwrap().display().to_string();
                    out.push((rel, pool.to_string()));
                }
            }
        }
    }
    out.sort();
    // 7 + tests/lab/scenarios/health.sh (3 cks, 3 hm, 4 fill, 4 pools of layout) and the
    // scrub-age and resilver series of resilver.sh (2 + 3 + 3 pools, 4 captures).
    assert_eq!(out.len(), 7 + 3 + 3 + 4 + 4 + 8 + 4, "{out:?}");
    out
}

fn config(capture: &str, pool: &str) -> PoolConfig {
    let snap = zpulse_agent::capture::load(&fixture(capture)).unwrap();
    assert!(snap.issues.is_empty(), "{:?}", snap.issues);
    snap.pool(pool).unwrap().config.clone().unwrap()
}

fn cli(capture: &str, file: &str) -> String {
    std::fs::read_to_string(fixture(capture).join("cli").join(file)).unwrap()
}

/// Every vdev by its zpool name (unique in the lab pool), root included.
fn by_name(cfg: &PoolConfig) -> HashMap<String, &Vdev> {
    cfg.root
        .walk()
        .into_iter()
        .map(|v| (v.name.clone(), v))
        .collect()
}

#[test]
fn alloc_free_and_size_equal_zpool_list() {
    for (capture, pool) in captures() {
        let capture = capture.as_str();
        let cfg = config(capture, &pool);
        // A running resilver writes between the capture's ioctl and `zpool list`'s own (the
        // storm's scrub only reads, so its space stands still): no common instant.
        if cfg
            .scan
            .as_ref()
            .is_some_and(|s| s.function == "resilver" && s.is_running())
        {
            continue;
        }
        let vdevs = by_name(&cfg);
        let text = cli(capture, &format!("zpool-list-vp.{pool}.txt"));
        let mut compared = 0;
        for line in text.lines().skip(1) {
            let f: Vec<&str> = line.split_whitespace().collect();
            let Ok(alloc) = f[2].parse::<u64>() else {
                continue; // class headings and leaves print "-"
            };
            let (size, free): (u64, u64) = (f[1].parse().unwrap(), f[3].parse().unwrap());
            let stats = vdevs[f[0]].stats.as_ref().unwrap();
            assert_eq!(stats.alloc, alloc, "{capture} {} ALLOC", f[0]);
            assert_eq!(stats.space - stats.alloc, free, "{capture} {} FREE", f[0]);
            // SIZE is vs_space for the pool and interior vdevs; device rows print their
            // device size instead, which differs by version (rsize, 2.2's pspace).
            if !vdevs[f[0]].is_leaf() {
                assert_eq!(stats.space, size, "{capture} {} SIZE", f[0]);
            }
            compared += 1;
        }
        // The pool, every top-level vdev and every cache device have space figures.
        let expected = 1 + cfg
            .root
            .children
            .iter()
            .filter(|v| v.class != Some(VdevClass::Spare))
            .count();
        assert_eq!(compared, expected, "{capture}");
    }
}

/// `zpool iostat -vlp` columns after the name.
const COLUMNS: [&str; 16] = [
    "alloc", "free", "rops", "wops", "rbw", "wbw", "total_r", "total_w", "disk_r", "disk_w",
    "syncq_r", "syncq_w", "asyncq_r", "asyncq_w", "scrub", "trim",
];

fn iostat_rows(capture: &str, pool: &str) -> Vec<(String, HashMap<&'static str, Option<u64>>)> {
    cli(capture, &format!("zpool-iostat-vlp.{pool}.txt"))
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            if f.len() != 17
                || f[0] == "pool"
                || f[1] == "-" && f[3] == "-"
                || f[0].starts_with("---")
            {
                return None;
            }
            let values = COLUMNS
                .iter()
                .zip(&f[1..])
                .map(|(c, v)| (*c, v.parse().ok()))
                .collect();
            Some((f[0].to_string(), values))
        })
        .collect()
}

fn latency(r: &VdevRates, column: &str) -> Option<u64> {
    match column {
        "total_r" => r.total_wait_r,
        "total_w" => r.total_wait_w,
        "disk_r" => r.disk_wait_r,
        "disk_w" => r.disk_wait_w,
        "syncq_r" => r.syncq_wait_r,
        "syncq_w" => r.syncq_wait_w,
        "asyncq_r" => r.asyncq_wait_r,
        "asyncq_w" => r.asyncq_wait_w,
        "scrub" => r.scrub_wait,
        "trim" => r.trim_wait,
        _ => unreachable!(),
    }
}

#[test]
fn ops_bandwidth_and_latency_equal_zpool_iostat() {
    for (capture, pool) in captures() {
        let capture = capture.as_str();
        let cfg = config(capture, &pool);
        // A running scrub moves every counter between the capture's ioctl and the moment
        // `zpool iostat` reads its own: there is no common instant to compare.
        if cfg.scan.as_ref().is_some_and(|s| s.state == "scanning") {
            continue;
        }
        let mut resets = Vec::new();
        // No previous reading: rates since import, as zpool iostat's first report.
        let rates = pool_vdev_rates(&pool, None, &cfg.root, &mut resets);
        let by_name: HashMap<&str, &VdevRates> =
            rates.iter().map(|r| (r.name.as_str(), r)).collect();
        let rows = iostat_rows(capture, &pool);
        // zpool iostat prints every vdev but spares (which have no I/O of their own).
        let printed = cfg
            .root
            .walk()
            .into_iter()
            .filter(|v| v.class != Some(VdevClass::Spare))
            .count();
        assert_eq!(rows.len(), printed, "{capture}");
        // zpool iostat ran a moment after the capture's ioctl (capture.sh calls it after
        // `zpool status` and `zpool list`), so its `vs_timestamp`s were later by a common lag
        // and a few more I/Os may have completed. Infer the lag from the pool's write
        // bandwidth, then require every row's ops and bandwidth, computed with zpool's
        // formula `(uint64_t)(delta * 1e9 / t)` at our timestamp + lag, to agree within
        // 1e-3 (a few I/Os more, within tens of seconds of uptime), or within 1 for small values.
        let root = cfg.root.stats.as_ref().unwrap();
        let lag =
            root.bytes[2] as f64 * 1e9 / rows[0].1["wbw"].unwrap() as f64 - root.timestamp as f64;
        assert!(
            (0.0..60e9).contains(&lag),
            "{capture}: zpool iostat ran {lag} ns after the capture"
        );
        for (name, cols) in &rows {
            let r = by_name[name.as_str()];
            let vdev = cfg
                .root
                .walk()
                .into_iter()
                .find(|v| &v.name == name)
                .unwrap();
            let stats = vdev.stats.clone().unwrap();
            // Each vdev has its own clock (ns since it was opened); the lag is common.
            let t = stats.timestamp as f64 + lag;
            for (col, count) in [
                ("rops", stats.ops[1]),
                ("wops", stats.ops[2]),
                ("rbw", stats.bytes[1]),
                ("wbw", stats.bytes[2]),
            ] {
                let formula = (count as f64 * 1e9 / t) as u64 as f64;
                let want = cols[col].unwrap() as f64;
                assert!(
                    (formula - want).abs() <= f64::max(1.0, want * 1e-3),
                    "{capture} {name} {col}: zpool {want}, formula {formula}"
                );
            }
            // Our own rates are the same formula at t = vs_timestamp.
            for (got, count) in [
                (r.read_ops_per_s, stats.ops[1]),
                (r.write_ops_per_s, stats.ops[2]),
                (r.read_bytes_per_s, stats.bytes[1]),
                (r.write_bytes_per_s, stats.bytes[2]),
            ] {
                let want = count as f64 * 1e9 / stats.timestamp as f64;
                assert!(
                    (got - want).abs() <= want * 1e-12,
                    "{capture} {name}: {got} vs {want}"
                );
            }
            for c in &COLUMNS[6..] {
                // `-` is printed for an average of 0, i.e. no I/O of that kind; averages do not
                // depend on time, so they must be equal outright.
                assert_eq!(latency(r, c), cols[c], "{capture} {name} {c}");
            }
        }
    }
}

/// The config table of `zpool status`: the pool's state and one row per top-level vdev.
fn status_rows(text: &str) -> (String, Vec<Row>) {
    let mut section = "normal".to_string();
    let mut expected: Vec<Row> = Vec::new();
    let mut pool_state = String::new();
    for line in text
        .lines()
        .skip_while(|l| !l.trim_start().starts_with("NAME"))
        .skip(1)
    {
        if line.trim().is_empty() {
            break;
        }
        let words: Vec<String> = line.split_whitespace().map(str::to_string).collect();
        let in_table = line.trim_start_matches('\t');
        let depth = in_table.len() - in_table.trim_start().len();
        let state = words.get(1).cloned().unwrap_or_default();
        match (depth, words.len()) {
            (0, 1) => section = words[0].clone(),
            (0, _) => pool_state = state,
            (2, _) => expected.push((section.clone(), words[0].clone(), state, vec![])),
            (4, _) => expected
                .last_mut()
                .unwrap()
                .3
                .push((words[0].clone(), state)),
            _ => {}
        }
    }
    (pool_state, expected)
}

/// (section, top-level name, state, [(child name, state)]).
type Row = (String, String, String, Vec<(String, String)>);

#[test]
fn classes_and_names_equal_zpool_status() {
    for (capture, pool) in captures() {
        let capture = capture.as_str();
        let cfg = config(capture, &pool);
        // From zpool status: (section, depth-2 name, state, [(leaf name, state)]).
        let text = cli(capture, &format!("zpool-status.{pool}.txt"));
        let (pool_state, expected) = status_rows(&text);
        let section_of = |c: VdevClass| match c {
            VdevClass::Log => "logs",
            VdevClass::Spare => "spares",
            other => other.as_str(),
        };
        let state = |v: &Vdev| v.state.clone().unwrap_or_default();
        let got: Vec<Row> = cfg
            .root
            .children
            .iter()
            .map(|t| {
                (
                    section_of(t.class.unwrap()).to_string(),
                    t.name.clone(),
                    state(t),
                    t.children
                        .iter()
                        .map(|c| (c.name.clone(), state(c)))
                        .collect(),
                )
            })
            .collect();
        assert_eq!(got, expected, "{capture}");
        assert_eq!(cfg.health, pool_state, "{capture}");
        // `scan: scrub repaired … with N errors on …` is a finished scrub.
        if let Some(line) = text.lines().find(|l| l.trim_start().starts_with("scan:")) {
            let scan = cfg.scan.as_ref().expect("scan stats");
            if line.contains("scrub in progress") {
                assert_eq!(
                    (scan.function.as_str(), scan.state.as_str()),
                    ("scrub", "scanning")
                );
                assert!(scan.progress().is_some_and(|p| p < 1.0), "{scan:?}");
            }
            if line.contains("scrub repaired") {
                assert_eq!(
                    (scan.function.as_str(), scan.state.as_str()),
                    ("scrub", "finished")
                );
                let errors: u64 = line
                    .split(" with ")
                    .nth(1)
                    .unwrap()
                    .split(' ')
                    .next()
                    .unwrap()
                    .parse()
                    .unwrap();
                assert_eq!(scan.errors, errors);
            }
        }
    }
}

#[test]
fn leaves_join_their_disks_and_disks_know_rotation() {
    let capture = "lab/basic/000";
    let snap = zpulse_agent::capture::load(&fixture(capture)).unwrap();
    let cfg = snap.pool("tank").unwrap().config.as_ref().unwrap();
    for leaf in cfg.root.leaves() {
        let disk = leaf
            .disk
            .as_deref()
            .unwrap_or_else(|| panic!("{} joined", leaf.name));
        assert_eq!(
            disk, leaf.name,
            "lab leaves are whole disks named like their kernel device"
        );
        // Each disk knows the pool, class and top-level vdev it serves.
        let role = &snap.disk(disk).unwrap().roles;
        assert_eq!(role.len(), 1, "{disk}");
        assert_eq!(
            (role[0].pool.as_str(), Some(role[0].class)),
            ("tank", leaf.class)
        );
        // sda/sdb are the lab's "HDDs": sys/block/<disk>/queue/rotational in the capture.
        let rotational = std::fs::read_to_string(
            fixture(capture).join(format!("sys/block/{disk}/queue/rotational")),
        )
        .unwrap();
        assert_eq!(
            snap.disk(disk).unwrap().rotational,
            Some(rotational.trim() == "1")
        );
    }
}

fn rows_of(root: &Vdev, section_of: impl Fn(VdevClass) -> &'static str) -> Vec<Row> {
    let state = |v: &Vdev| v.state.clone().unwrap_or_default();
    root.children
        .iter()
        .map(|t| {
            (
                section_of(t.class.unwrap()).to_string(),
                t.name.clone(),
                state(t),
                t.children
                    .iter()
                    .map(|c| (c.name.clone(), state(c)))
                    .collect(),
            )
        })
        .collect()
}

/// In the lab VM (`tests/lab/scenarios/vdevs.sh`) the agent ran `zpulse once` itself, through
/// the live `/dev/zfs` ioctls of a real OpenZFS 2.1 kernel, under strace: it exec'd nothing,
/// and its JSON shows the vdev tree `zpool status` printed at the same moment.
#[test]
fn the_agent_ran_live_in_the_lab_vm() {
    for (dir, pool) in [("lab/vdevs/rz-live", "rz"), ("lab/vdevs/deg-live", "deg")] {
        let trace = std::fs::read_to_string(fixture(dir).join("strace.log")).unwrap();
        let execs = trace.lines().filter(|l| l.contains("execve")).count();
        assert_eq!(execs, 1, "{dir}: only zpulse's own start:\n{trace}");
        assert!(!trace.contains("fork("), "{dir}: forked:\n{trace}");
        let json: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(fixture(dir).join("zpulse-once.json")).unwrap(),
        )
        .unwrap();
        let snap: zpulse_proto::Snapshot = serde_json::from_value(json).unwrap();
        let cfg = snap.pool(pool).unwrap().config.as_ref().unwrap();
        let text = std::fs::read_to_string(fixture(dir).join("zpool-status.txt")).unwrap();
        let (state, expected) = status_rows(&text);
        let section_of = |c: VdevClass| match c {
            VdevClass::Log => "logs",
            VdevClass::Spare => "spares",
            other => other.as_str(),
        };
        assert_eq!(rows_of(&cfg.root, section_of), expected, "{dir}");
        assert_eq!(cfg.health, state);
    }
}

/// What `zpulse once` prints for a capture carries what `zpool status` printed at that
/// moment: the scan line in zpool's words, READ/WRITE/CKSUM and state of every vdev, and the
/// data-error verdict.
#[test]
fn status_text_equals_zpool_status() {
    for (capture, pool) in captures() {
        let snap = zpulse_agent::capture::load(&fixture(&capture)).unwrap();
        let ours = zpulse_agent::report::snapshot_text(&snap);
        let theirs = cli(&capture, &format!("zpool-status.{pool}.txt"));
        let section: Vec<&str> = ours
            .lines()
            .skip_while(|l| !l.starts_with(&format!("POOL  {pool} ")))
            .enumerate()
            .take_while(|(i, l)| {
                !(l.starts_with("DISK") || l.starts_with("MEM") || *i > 0 && l.starts_with("POOL"))
            })
            .map(|(_, l)| l)
            .collect();
        let expected_scan = zpulse_tests::raw::zpool_status_scan(&theirs);
        let scan_at = section
            .iter()
            .position(|l| l.trim_start().starts_with("scan: "));
        match expected_scan.first() {
            None => assert!(scan_at.is_none(), "{capture}"),
            Some(first) => {
                let at = scan_at.unwrap_or_else(|| panic!("{capture}: no scan line in\n{ours}"));
                let got: Vec<&str> = section[at..]
                    .iter()
                    .take(expected_scan.len())
                    .map(|l| l.trim().trim_start_matches("scan: "))
                    .collect();
                if first.contains("in progress") {
                    // zpool ran a moment after the ioctl dump: the same scan, figures later.
                    assert_eq!(got[0], first, "{capture}");
                    assert_eq!(got.len(), expected_scan.len(), "{capture}");
                    assert!(got[2].contains("% done"), "{capture}: {got:?}");
                } else {
                    assert_eq!(got, expected_scan, "{capture}");
                }
            }
        }
        for (name, state, counts) in zpulse_tests::raw::zpool_status_rows(&theirs) {
            let row = section
                .iter()
                .map(|l| l.split_whitespace().collect::<Vec<_>>())
                .find(|w| w.first() == Some(&name.as_str()))
                .unwrap_or_else(|| panic!("{capture}: no row for {name} in\n{ours}"));
            let at = row.iter().position(|w| *w == state).unwrap_or_else(|| {
                panic!("{capture}: {name} is not {state} in {row:?}");
            });
            let got: Vec<u64> = row[at + 1..at + 4]
                .iter()
                .map(|w| w.parse().unwrap())
                .collect();
            assert_eq!(got, counts, "{capture}: {name}");
        }
        let clean = theirs.contains("errors: No known data errors");
        let says_clean = section
            .iter()
            .any(|l| l.contains("errors: No known data errors"));
        assert_eq!(says_clean, clean, "{capture}");
    }
}

/// The POOL_STATS calls of each round of ioctls in an strace log of the live agent (a round
/// starts with POOL_CONFIGS), each as what it returned: `"0"` or the errno's name.
fn pool_stats_rounds(strace: &str) -> Vec<Vec<String>> {
    let mut rounds: Vec<Vec<String>> = Vec::new();
    for line in strace.lines() {
        if line.contains("ZFS_IOC_POOL_CONFIGS") {
            rounds.push(Vec::new());
        } else if line.contains("ZFS_IOC_POOL_STATS") {
            let result = line.rsplit(" = ").next().unwrap();
            let result = match result.split_whitespace().collect::<Vec<_>>()[..] {
                ["-1", errno, ..] => errno.to_string(),
                [value, ..] => value.to_string(),
                [] => panic!("no result: {line}"),
            };
            rounds
                .last_mut()
                .expect("POOL_STATS before POOL_CONFIGS")
                .push(result);
        }
    }
    rounds
}

/// The live agent on the real kernel (tests/lab/scenarios/replies.sh: `wide`, 24 mirrors of
/// files, whose reply passes the first 64 KiB buffer, and `tank`, one SSD), traced. Each pool's
/// reply is kept and the next round starts from its size, into its memory
/// (zpool::read::KeptReplies): only a reader's first round asks `wide` twice (ENOMEM, then
/// the size the kernel asked for); every later round asks each pool once, `zpulse run` over
/// its intervals and `zpulse once --interval` for its second reading. And what that second
/// reading decoded is the pool `zpool status` printed: every vdev, its state and its error
/// counters.
#[test]
fn a_kept_reply_costs_one_ioctl_a_pool_and_decodes_as_zpool_status_says() {
    let dir = fixture("lab/replies");
    let read = |f: &str| std::fs::read_to_string(dir.join(f)).unwrap();
    let status = read("zpool-status.txt");
    let pools = status
        .lines()
        .filter(|l| l.trim_start().starts_with("pool:"))
        .count();
    assert_eq!(pools, 2, "{status}");
    for (log, rounds_at_least) in [("strace.log", 4), ("once-strace.log", 2)] {
        let rounds = pool_stats_rounds(&read(log));
        assert!(rounds.len() >= rounds_at_least, "{log}: {rounds:?}");
        let first = &rounds[0];
        assert_eq!(first.len(), pools + 1, "{log}: first round {first:?}");
        assert_eq!(first.iter().filter(|r| *r == "ENOMEM").count(), 1, "{log}");
        for (i, round) in rounds.iter().enumerate().skip(1) {
            assert_eq!(round, &vec!["0".to_string(); pools], "{log}: round {i}");
        }
    }

    // `zpool status`'s config rows: name, state, READ, WRITE, CKSUM.
    let once = read("zpulse-once.txt");
    let mut compared = 0;
    for line in status.lines().filter(|l| l.starts_with('\t')) {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() != 5 || f[0] == "NAME" {
            continue;
        }
        let row = once
            .lines()
            .map(|l| l.split_whitespace().collect::<Vec<_>>())
            .find(|r| r.first() == Some(&f[0]))
            .unwrap_or_else(|| panic!("zpulse once has no row for {}:\n{once}", f[0]));
        let at = row
            .iter()
            .position(|w| *w == f[1])
            .unwrap_or_else(|| panic!("{}: not {} in {row:?}", f[0], f[1]));
        assert_eq!(row[at + 1..at + 4], f[2..5], "{}: READ WRITE CKSUM", f[0]);
        compared += 1;
    }
    // tank and its SSD; wide, its 24 mirrors and their 48 files.
    assert_eq!(compared, 2 + 1 + 24 + 48);
}
