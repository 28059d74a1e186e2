use super::*;
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::time::Duration;
use zpulse_proto::Snapshot;

const STORM: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../tests/fixtures/lab/storm/series"
);

/// The lab's storm series (10 real captures), as the replay loads them.
fn storm() -> Vec<Snapshot> {
    crate::capture::series(Path::new(STORM))
        .unwrap()
        .iter()
        .map(|d| crate::capture::load(d).unwrap())
        .collect()
}

fn config(dir: &Path) -> Config {
    Config {
        dir: Some(dir.join("history")),
        ..Config::default()
    }
}

/// Every snapshot of a read, with the decoding errors apart.
fn decoded(r: &HistoryRead) -> (Vec<Snapshot>, Vec<String>) {
    let mut ok = Vec::new();
    let mut errors = Vec::new();
    for s in r.snapshots() {
        match s {
            Ok(s) => ok.push(s),
            Err(e) => errors.push(e),
        }
    }
    (ok, errors)
}

/// `got` is `want`: the same times, and each snapshot the same model as its JSON shows it
/// (an untagged `KstatValue` comes back from MessagePack as `Unsigned` when a `Signed` one is
/// not negative, as it does across the plugin ABI; its accessors read both alike).
#[track_caller]
fn same(got: &[Snapshot], want: &[Snapshot]) {
    let times = |v: &[Snapshot]| v.iter().map(|s| s.taken_at).collect::<Vec<_>>();
    assert_eq!(times(got), times(want));
    for (g, w) in got.iter().zip(want) {
        let (gj, wj) = (
            serde_json::to_string_pretty(g).unwrap(),
            serde_json::to_string_pretty(w).unwrap(),
        );
        if gj != wj {
            let diff = gj.lines().zip(wj.lines()).find(|(a, b)| a != b);
            panic!("snapshot at {} differs: {diff:?}", w.taken_at);
        }
    }
}

fn segments(dir: &Path) -> Vec<PathBuf> {
    segment::list(dir).unwrap()
}

fn dir_bytes(dir: &Path) -> u64 {
    segments(dir)
        .iter()
        .map(|p| std::fs::symlink_metadata(p).unwrap().len())
        .sum()
}

/// `snap` moved to time `t` (the lab's content, another moment).
fn at(snap: &Snapshot, t: f64) -> Snapshot {
    Snapshot {
        taken_at: t,
        ..snap.clone()
    }
}

#[test]
fn snapshots_come_back_whole_in_time_order_with_the_one_before_the_range() {
    let tmp = tempfile::tempdir().unwrap();
    let cfg = config(tmp.path());
    let series = storm();
    let mut w = Writer::open(&cfg).unwrap();
    for s in &series {
        w.append(s).unwrap();
    }
    let all = read(&cfg.dir(), f64::NEG_INFINITY, f64::INFINITY).unwrap();
    assert!(all.notes.is_empty(), "{:?}", all.notes);
    let (back, errors) = decoded(&all);
    assert!(errors.is_empty(), "{errors:?}");
    same(&back, &series);

    // From the 4th capture's time to the 6th's: those three, and the 3rd before them.
    let (from, to) = (series[3].taken_at, series[5].taken_at);
    let r = read(&cfg.dir(), from, to).unwrap();
    same(&decoded(&r).0, &series[2..=5]);
    assert_eq!(
        r.times().collect::<Vec<_>>(),
        series[2..=5].iter().map(|s| s.taken_at).collect::<Vec<_>>()
    );
    // Rates between consecutive records, as the report computes them.
    let back = decoded(&r).0;
    for pair in back.windows(2) {
        zpulse_proto::Sample::between(&pair[0], &pair[1]).unwrap();
    }
}

/// Records are raw deflate, whichever compressor wrote them: a segment written when the agent
/// deflated with miniz_oxide reads back as the captures it recorded.
#[test]
fn records_written_by_the_earlier_compressor_read_back_whole() {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures");
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("history");
    std::fs::create_dir(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
    let name = "20261130T091539Z.zph";
    std::fs::copy(fixtures.join("history/miniz").join(name), dir.join(name)).unwrap();
    let lab = fixtures.join("lab/basic");
    // Fields added since the segment was written read back as absent (their default).
    let want: Vec<Snapshot> = ["000", "001"]
        .iter()
        .map(|c| Snapshot {
            boot_time: None,
            ..crate::capture::load(&lab.join(c)).unwrap()
        })
        .collect();
    let r = read(&dir, f64::NEG_INFINITY, f64::INFINITY).unwrap();
    assert!(r.notes.is_empty(), "{:?}", r.notes);
    let (back, errors) = decoded(&r);
    assert!(errors.is_empty(), "{errors:?}");
    same(&back, &want);
}

#[test]
fn the_agents_monotonic_clock_is_not_read_back_as_it_restarts_with_each_run() {
    let tmp = tempfile::tempdir().unwrap();
    let cfg = config(tmp.path());
    let lab = storm().remove(0);
    let mut w = Writer::open(&cfg).unwrap();
    w.append(&Snapshot {
        monotonic: Some(86_000.0),
        ..lab.clone()
    })
    .unwrap();
    let back = decoded(&read(&cfg.dir(), f64::NEG_INFINITY, f64::INFINITY).unwrap()).0;
    assert_eq!(back[0].monotonic, None);
    same(&back, &[lab]);
}

#[test]
fn files_are_private_and_a_new_writer_starts_its_own_segment() {
    let tmp = tempfile::tempdir().unwrap();
    let cfg = config(tmp.path());
    let series = storm();
    Writer::open(&cfg).unwrap().append(&series[0]).unwrap();
    let mut w = Writer::open(&cfg).unwrap();
    w.append(&series[1]).unwrap();
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&cfg.dir()), 0o700);
    let segs = segments(&cfg.dir());
    assert_eq!(segs.len(), 2);
    for s in &segs {
        assert_eq!(mode(s), 0o600, "{}", s.display());
    }
    same(
        &decoded(&read(&cfg.dir(), f64::NEG_INFINITY, f64::INFINITY).unwrap()).0,
        &series[..2],
    );
}

#[test]
fn a_torn_last_record_costs_only_itself_and_is_noted() {
    let tmp = tempfile::tempdir().unwrap();
    let cfg = config(tmp.path());
    let series = storm();
    let mut w = Writer::open(&cfg).unwrap();
    for s in &series[..3] {
        w.append(s).unwrap();
    }
    let seg = w.open_segment().unwrap().to_path_buf();
    drop(w);
    // A crash in the middle of the 4th record's write: half of its bytes reached the file.
    let fourth = record::encode(&series[3]).unwrap();
    let mut f = std::fs::OpenOptions::new().append(true).open(&seg).unwrap();
    f.write_all(&fourth[..fourth.len() / 2]).unwrap();
    drop(f);
    let r = read(&cfg.dir(), f64::NEG_INFINITY, f64::INFINITY).unwrap();
    same(&decoded(&r).0, &series[..3]);
    assert_eq!(r.notes.len(), 1, "{:?}", r.notes);
    assert!(r.notes[0].contains("cut short"), "{:?}", r.notes);

    // Only 7 bytes of the header made it: not even a header, still one note.
    let good = std::fs::read(&seg).unwrap().len() - fourth.len() / 2;
    let f = std::fs::OpenOptions::new().write(true).open(&seg).unwrap();
    f.set_len((good + 7) as u64).unwrap();
    let r = read(&cfg.dir(), f64::NEG_INFINITY, f64::INFINITY).unwrap();
    same(&decoded(&r).0, &series[..3]);
    assert_eq!(r.notes.len(), 1, "{:?}", r.notes);
    assert!(r.notes[0].contains("last 7 bytes"), "{:?}", r.notes);

    // The agent starts again: a new segment, the torn one left for readers to skip.
    let mut w = Writer::open(&cfg).unwrap();
    assert_eq!(w.take_notes().len(), 1);
    w.append(&series[4]).unwrap();
    let r = read(&cfg.dir(), f64::NEG_INFINITY, f64::INFINITY).unwrap();
    let mut want = series[..3].to_vec();
    want.push(series[4].clone());
    same(&decoded(&r).0, &want);
}

/// A one-segment history of `series`, its bytes changed by `damage` (given the records'
/// offsets), read whole; and the offsets.
fn damaged(
    series: &[Snapshot],
    damage: impl FnOnce(&mut Vec<u8>, &[usize]),
) -> (HistoryRead, Vec<usize>) {
    let tmp = tempfile::tempdir().unwrap();
    let cfg = config(tmp.path());
    let mut w = Writer::open(&cfg).unwrap();
    for s in series {
        w.append(s).unwrap();
    }
    let seg = w.open_segment().unwrap().to_path_buf();
    let mut bytes = std::fs::read(&seg).unwrap();
    let mut at = 0;
    let offsets: Vec<usize> = series
        .iter()
        .map(|s| {
            let here = at;
            at += record::encode(s).unwrap().len();
            here
        })
        .collect();
    damage(&mut bytes, &offsets);
    std::fs::write(&seg, &bytes).unwrap();
    // The files stay open in the read: the directory may go.
    (
        read(&cfg.dir(), f64::NEG_INFINITY, f64::INFINITY).unwrap(),
        offsets,
    )
}

#[test]
fn a_damaged_length_skips_to_the_next_whole_record() {
    let series = storm()[..4].to_vec();
    // The 2nd record's length says 4 GiB: its header check fails, nothing that large is
    // read or allocated, and the reader finds the 3rd record after it.
    let (r, off) = damaged(&series, |bytes, off| {
        bytes[off[1] + 4..off[1] + 8].copy_from_slice(&u32::MAX.to_be_bytes())
    });
    same(
        &decoded(&r).0,
        &[series[0].clone(), series[2].clone(), series[3].clone()],
    );
    assert_eq!(r.notes.len(), 1, "{:?}", r.notes);
    assert!(
        r.notes[0].contains(&format!("bytes {}..{}", off[1], off[2])),
        "{:?}",
        r.notes
    );
}

#[test]
fn a_damaged_body_is_one_error_and_the_others_decode() {
    let series = storm()[..3].to_vec();
    let (r, _) = damaged(&series, |bytes, off| {
        bytes[off[1] + record::HEADER + 10] ^= 0x40
    });
    let (ok, errors) = decoded(&r);
    same(&ok, &[series[0].clone(), series[2].clone()]);
    assert_eq!(errors.len(), 1);
    assert!(errors[0].contains("checksum"), "{errors:?}");
}

#[test]
fn a_forged_header_cannot_make_the_reader_allocate_or_inflate_without_bound() {
    // A header whose own CRC matches but whose length passes the limit is not a header.
    let mut h = [0u8; record::HEADER];
    h[..4].copy_from_slice(record::MAGIC);
    h[4..8].copy_from_slice(&(record::MAX_BODY + 1).to_be_bytes());
    h[8..16].copy_from_slice(&1.0f64.to_bits().to_be_bytes());
    let mut crc = flate2::Crc::new();
    crc.update(&h[..16]);
    h[16..20].copy_from_slice(&crc.sum().to_be_bytes());
    assert_eq!(record::parse_header(&h), None);
    // A body that inflates past the limit: 300 MiB of zeros deflate to a few hundred KiB.
    let mut deflate = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::best());
    let zeros = vec![0u8; 1 << 20];
    for _ in 0..300 {
        deflate.write_all(&zeros).unwrap();
    }
    let body = deflate.finish().unwrap();
    let mut crc = flate2::Crc::new();
    crc.update(&body);
    let mut rest = body.clone();
    rest.extend_from_slice(&crc.sum().to_be_bytes());
    let header = record::Header {
        taken_at: 1.0,
        body_len: body.len() as u32,
        holds: record::Holds::Snapshot,
    };
    let err = record::decode_body(&header, &rest).unwrap_err();
    assert!(err.contains("inflates past"), "{err}");
}

#[test]
fn old_segments_go_after_the_retention_judged_by_the_snapshots_clock() {
    let tmp = tempfile::tempdir().unwrap();
    let cfg = Config {
        retention: Duration::from_secs(6 * 3600),
        ..config(tmp.path())
    };
    let lab = &storm()[0];
    let t0 = 1_800_000_000.0; // an hour boundary: 2027-01-15T08:00:00Z
    let mut w = Writer::open(&cfg).unwrap();
    // 20 hours, one snapshot every 10 minutes: the clock comes with the snapshots.
    let times: Vec<f64> = (0..120).map(|i| t0 + 600.0 * i as f64).collect();
    for &t in &times {
        w.append(&at(lab, t)).unwrap();
        let r = read(&cfg.dir(), f64::NEG_INFINITY, f64::INFINITY).unwrap();
        let oldest = r.times().next().unwrap();
        // What is kept: every record of the last 6 hours, and nothing older than the hour
        // before them (a segment goes when its newest record is past the retention).
        assert!(
            oldest >= t - 6.0 * 3600.0 - 3600.0,
            "at {t}: oldest {oldest}"
        );
        let kept: Vec<f64> = r.times().collect();
        let want: Vec<f64> = times
            .iter()
            .copied()
            .filter(|&x| x <= t && x >= t - 6.0 * 3600.0)
            .collect();
        assert!(want.iter().all(|x| kept.contains(x)), "at {t}");
    }
    assert!(segments(&cfg.dir()).len() <= 8);
}

#[test]
fn the_directory_never_passes_max_size_and_keeps_the_newest() {
    let tmp = tempfile::tempdir().unwrap();
    let cfg = Config {
        max_size: 4 << 20,
        ..config(tmp.path())
    };
    let lab = &storm()[0];
    let record_len = record::encode(lab).unwrap().len() as u64;
    let mut w = Writer::open(&cfg).unwrap();
    // Twice what fits, 10 s apart (all within a few hours).
    let n = 2 * cfg.max_size / record_len;
    let t0 = 1_800_000_000.0;
    for i in 0..n {
        let t = t0 + 10.0 * i as f64;
        let appended = w.append(&at(lab, t)).unwrap();
        assert!(
            dir_bytes(&cfg.dir()) <= cfg.max_size,
            "{} bytes after {i} appends",
            dir_bytes(&cfg.dir())
        );
        if !appended.removed.is_empty() {
            // Removing frees space a segment (a sixteenth of the cap) at a time.
            assert!(dir_bytes(&cfg.dir()) + cfg.segment_cap() + record_len >= cfg.max_size);
        }
    }
    let r = read(&cfg.dir(), f64::NEG_INFINITY, f64::INFINITY).unwrap();
    let times: Vec<f64> = r.times().collect();
    assert_eq!(*times.last().unwrap(), t0 + 10.0 * (n - 1) as f64);
    // Most of the cap is in use, in consecutive records up to the last.
    assert!(times.len() as u64 * record_len >= cfg.max_size * 7 / 8);
    assert!(times.windows(2).all(|p| p[1] - p[0] == 10.0));
}

#[test]
fn a_link_in_place_of_the_next_segment_does_not_redirect_the_write() {
    let tmp = tempfile::tempdir().unwrap();
    let cfg = config(tmp.path());
    let lab = storm().remove(0);
    let mut w = Writer::open(&cfg).unwrap();
    // An attacker's link where the next segment goes, to a file they want overwritten.
    let victim = tmp.path().join("victim");
    std::fs::write(&victim, "precious\n").unwrap();
    let name = segment::name(lab.taken_at, 0).unwrap();
    std::os::unix::fs::symlink(&victim, cfg.dir().join(&name)).unwrap();
    let err = w.append(&lab).unwrap_err();
    assert!(err.contains("symbolic link"), "{err}");
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious\n");
    // A reader does not follow it either.
    let mut good = tempfile::NamedTempFile::new_in(tmp.path()).unwrap();
    good.write_all(&record::encode(&lab).unwrap()).unwrap();
    std::fs::remove_file(cfg.dir().join(&name)).unwrap();
    std::os::unix::fs::symlink(good.path(), cfg.dir().join(&name)).unwrap();
    let r = read(&cfg.dir(), f64::NEG_INFINITY, f64::INFINITY).unwrap();
    assert!(r.is_empty());
    assert!(r.notes[0].contains("symbolic link"), "{:?}", r.notes);
}

#[test]
fn a_linked_foreign_or_open_directory_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let real = tmp.path().join("elsewhere");
    std::fs::create_dir(&real).unwrap();
    let link = tmp.path().join("history");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let err = Writer::open(&config(tmp.path())).unwrap_err();
    assert!(err.contains("symbolic link"), "{err}");

    std::fs::remove_file(&link).unwrap();
    std::fs::create_dir(&link).unwrap();
    std::fs::set_permissions(&link, std::fs::Permissions::from_mode(0o777)).unwrap();
    let err = Writer::open(&config(tmp.path())).unwrap_err();
    assert!(err.contains("writable by others"), "{err}");
}

#[test]
fn a_fifo_in_place_of_a_segment_blocks_neither_reader_nor_writer() {
    let tmp = tempfile::tempdir().unwrap();
    let cfg = config(tmp.path());
    let lab = storm().remove(0);
    let mut w = Writer::open(&cfg).unwrap();
    w.append(&lab).unwrap();
    let fifo = cfg.dir().join("20200101T000000Z.zph");
    crate::sources::root::make_fifo(&fifo);
    let r = read(&cfg.dir(), f64::NEG_INFINITY, f64::INFINITY).unwrap();
    same(&decoded(&r).0, std::slice::from_ref(&lab));
    assert!(r.notes.iter().any(|n| n.contains("FIFO")), "{:?}", r.notes);
    let mut w = Writer::open(&cfg).unwrap();
    assert!(w.take_notes().iter().any(|n| n.contains("FIFO")));
    w.append(&at(&lab, lab.taken_at + 10.0)).unwrap();
    // Not removed by rotation either: it is not a segment of ours.
    assert!(std::fs::symlink_metadata(&fifo).is_ok());
}

#[test]
fn a_missing_directory_is_an_error_that_says_who_writes_it() {
    let tmp = tempfile::tempdir().unwrap();
    let err = read(&tmp.path().join("none"), 0.0, 1.0).unwrap_err();
    assert!(err.contains("zpulse run"), "{err}");
}

#[test]
fn sizes_parse_in_bytes_and_binary_units() {
    assert_eq!(parse_size("4096"), Ok(4096));
    assert_eq!(parse_size("256MiB"), Ok(256 * 1024 * 1024));
    assert_eq!(parse_size("1 GiB"), Ok(1 << 30));
    assert!(parse_size("1GB").unwrap_err().contains("MiB"));
    assert!(parse_size("99999999999TiB").is_err());
}

#[test]
fn the_history_table_of_the_config_file() {
    let file = Path::new("/etc/zpulse/zpulse.toml");
    let c = crate::config::parse("", file).unwrap();
    assert_eq!(c.history, Config::default());
    assert_eq!(c.history.dir(), state_dir().join("history"));
    let c = crate::config::parse(
        "[history]\ndir = \"hist\"\nretention = \"2d\"\nmax_size = \"1GiB\"\n",
        file,
    )
    .unwrap();
    assert_eq!(c.history.dir(), Path::new("/etc/zpulse/hist"));
    assert_eq!(c.history.retention, Duration::from_secs(2 * 86_400));
    assert_eq!(c.history.max_size, 1 << 30);
    let c = crate::config::parse("[history]\nenabled = false\n", file).unwrap();
    assert!(!c.history.enabled);
    for (text, want) in [
        (
            "\n[history]\nmax_size = \"3MiB\"\n",
            // The key's own line, not the table's.
            "/etc/zpulse/zpulse.toml:3: history.max_size: give 4MiB to 1TiB",
        ),
        (
            "[history]\nretention = \"5m\"\n",
            "/etc/zpulse/zpulse.toml:2: history.retention: give a duration between 10m and 366d",
        ),
        (
            "[history]\nsize = 5\n",
            "history.size: unknown field `size`",
        ),
        (
            "[history]\nmax_size = \"lots\"\n",
            "history.max_size: \"lots\" is not a size",
        ),
    ] {
        let err = crate::config::parse(text, file).unwrap_err();
        assert!(err.contains(want), "{text}: {err}");
    }
}

/// The lab's kernel events (a real resilver with errors), as recorded by `zpulse capture`.
fn lab_zevents() -> Vec<zpulse_proto::ZEvent> {
    let dir = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../tests/fixtures/lab/events/resilver/001"
    );
    crate::capture::load_zevents(Path::new(dir)).events
}

#[test]
fn kernel_events_are_kept_between_the_snapshots_and_read_back_in_their_range() {
    let tmp = tempfile::tempdir().unwrap();
    let cfg = config(tmp.path());
    let events = lab_zevents();
    assert!(events.len() > 50);
    // Snapshots around the events' times, the events in two batches between them.
    let t0 = events[0].time.as_f64();
    let snap = |t: f64| Snapshot {
        taken_at: t,
        ..storm()[0].clone()
    };
    let mut w = Writer::open(&cfg).unwrap();
    w.append(&snap(t0 - 20.0)).unwrap();
    w.append(&snap(t0 - 1.0)).unwrap();
    let (a, b) = events.split_at(events.len() / 2);
    w.append_zevents(a).unwrap();
    w.append_zevents(b).unwrap();
    w.append(&snap(t0 + 60.0)).unwrap();
    drop(w);
    let r = read(&cfg.dir(), t0 - 1.0, t0 + 60.0).unwrap();
    // The snapshots read as before: the two in the range and the one before it.
    assert_eq!(r.len(), 3);
    assert_eq!(decoded(&r).0.len(), 3);
    let (back, notes) = r.zevents(t0 - 1.0);
    assert!(notes.is_empty(), "{notes:?}");
    assert_eq!(back, events, "every event, as recorded, in order");
    // A range that ends before the events holds none of them.
    let early = read(&cfg.dir(), t0 - 30.0, t0 - 2.0).unwrap();
    assert!(early.zevents(t0 - 30.0).0.is_empty());
}

#[test]
fn a_damaged_batch_of_kernel_events_is_a_note_and_the_snapshots_still_read() {
    let tmp = tempfile::tempdir().unwrap();
    let cfg = config(tmp.path());
    let events = lab_zevents();
    let t0 = events[0].time.as_f64();
    let mut w = Writer::open(&cfg).unwrap();
    w.append(&Snapshot {
        taken_at: t0 - 1.0,
        ..storm()[0].clone()
    })
    .unwrap();
    w.append_zevents(&events).unwrap();
    let segment = w.open_segment().unwrap().to_path_buf();
    drop(w);
    // Flip a byte in the events' body (past the snapshot record and the events' header).
    let mut bytes = std::fs::read(&segment).unwrap();
    let at = bytes.len() - 40;
    bytes[at] ^= 0xff;
    std::fs::write(&segment, &bytes).unwrap();
    let r = read(&cfg.dir(), t0 - 1.0, t0 + 60.0).unwrap();
    assert_eq!(decoded(&r).0.len(), 1);
    let (back, notes) = r.zevents(t0 - 1.0);
    assert!(back.is_empty());
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert!(notes[0].contains("kernel events"), "{}", notes[0]);
}

#[test]
fn a_snapshot_record_is_never_taken_for_kernel_events_or_the_reverse() {
    let events = lab_zevents();
    let bytes = record::encode_zevents(&events).unwrap();
    let header = record::parse_header(&bytes).unwrap();
    assert_eq!(header.holds, record::Holds::Zevents);
    assert!(record::decode_body(&header, &bytes[record::HEADER..]).is_err());
    assert_eq!(
        record::decode_zevents(&header, &bytes[record::HEADER..]).unwrap(),
        events
    );
    assert!(record::encode_zevents(&[]).is_err());
}

/// `check-config` said ok for a 0777 history directory that `run` refuses, and
/// `report` read such a directory without a word.
#[test]
fn check_config_refuses_an_open_history_directory_and_report_warns_reading_one() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("history");
    let toml = tmp.path().join("zpulse.toml");
    std::fs::write(
        &toml,
        format!(
            "[plugins]\ndirs = []\n[history]\ndir = \"{}\"\n[[sink]]\ntype = \"stdout\"\n",
            dir.display()
        ),
    )
    .unwrap();
    // Not there yet: `run` creates it, so the config is fine.
    crate::cli::run::check(Some(&toml)).unwrap();
    let mut w = Writer::open(&config(tmp.path())).unwrap();
    w.append(&storm().remove(0)).unwrap();
    drop(w);
    crate::cli::run::check(Some(&toml)).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    let err = crate::cli::run::check(Some(&toml)).unwrap_err();
    assert!(
        err.starts_with("history: ") && err.contains("writable by others (mode 777)"),
        "{err}"
    );
    // Reading it still works, with the warning among the notes report prints.
    let r = read(&dir, f64::NEG_INFINITY, f64::INFINITY).unwrap();
    assert_eq!(decoded(&r).0.len(), 1);
    assert!(
        r.notes
            .iter()
            .any(|n| n.starts_with("warning: ") && n.contains("writable by others (mode 777)")),
        "{:?}",
        r.notes
    );
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
    let r = read(&dir, f64::NEG_INFINITY, f64::INFINITY).unwrap();
    assert!(
        r.notes.iter().all(|n| !n.contains("writable")),
        "{:?}",
        r.notes
    );
}

/// Ten minutes at the default 10 s interval: snapshots reach the disk once every five
/// minutes of snapshot time (journald's default), not at every append (the first append
/// syncs at once); a batch of kernel events at once.
#[test]
fn snapshots_sync_every_five_minutes_of_snapshot_time_and_kernel_events_at_once() {
    let tmp = tempfile::tempdir().unwrap();
    let cfg = config(tmp.path());
    let lab = storm().remove(0);
    let mut w = Writer::open(&cfg).unwrap();
    let start = lab.taken_at;
    for i in 0..60 {
        w.append(&Snapshot {
            taken_at: start + 10.0 * f64::from(i),
            ..lab.clone()
        })
        .unwrap();
    }
    // At 0 and 300 s.
    assert_eq!(w.syncs(), 2);
    // A kernel event at 595 s (the lab's, moved into this stretch).
    let mut event = lab_zevents().remove(0);
    event.time = zpulse_proto::event::EventTime {
        seconds: (start + 595.0) as u32,
        nanos: 0,
    };
    w.append_zevents(&[event]).unwrap();
    assert_eq!(
        w.syncs(),
        3,
        "a batch of kernel events is synced as it is appended"
    );
    w.append(&Snapshot {
        taken_at: start + 600.0,
        ..lab.clone()
    })
    .unwrap();
    assert_eq!(
        w.syncs(),
        4,
        "the kernel events' sync does not move the snapshots' next one"
    );
    drop(w);
    let back = decoded(&read(&cfg.dir(), f64::NEG_INFINITY, f64::INFINITY).unwrap()).0;
    assert_eq!(back.len(), 61);
}
