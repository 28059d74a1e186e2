//! The reader against a double of the kernel's queue (`zfs_ioctl::fake::FakeQueue`), with
//! events packed as the kernel packs them.

use super::*;
use crate::sources::nvlist::encode::{Endian, encode};
use crate::sources::nvlist::{NvList, NvValue};
use crate::sources::zfs_ioctl::fake::FakeQueue;

const BOOT: &str = "boot-a";

/// A statechange as `zfs_post_state_change` posts it: eid `eid`, kernel time `secs`.
fn event(eid: u64, secs: i64) -> (u64, Vec<u8>) {
    let l = NvList::new()
        .with(
            "class",
            NvValue::String("resource.fs.zfs.statechange".into()),
        )
        .with("pool", NvValue::String("tank".into()))
        .with("vdev_path", NvValue::String("/dev/sdb1".into()))
        .with("vdev_state", NvValue::Uint64(2))
        .with("prev_state", NvValue::Uint64(7))
        .with("time", NvValue::Int64Array(vec![secs, 0]))
        .with("eid", NvValue::Uint64(eid));
    (eid, encode(&l, Endian::Little))
}

fn at(secs: u32) -> EventTime {
    EventTime {
        seconds: secs,
        nanos: 0,
    }
}

fn eids(b: &Batch) -> Vec<u64> {
    b.events.iter().map(|e| e.eid).collect()
}

#[test]
fn events_before_the_start_are_history_and_later_ones_are_live() {
    let q = FakeQueue::new(vec![event(1, 100), event(2, 200), event(3, 300)]);
    let mut r = Reader::new(q, 7, at(250));
    assert_eq!(r.resume(None, BOOT).unwrap(), Resumed::Fresh);
    let b = r.read(false, 10).unwrap();
    assert_eq!(eids(&b), vec![1, 2, 3]);
    let before: Vec<bool> = b.events.iter().map(|e| e.before_start).collect();
    assert_eq!(before, vec![true, true, false]);
    assert_eq!(b.packed.len(), 3);
    assert_eq!(r.cursor(BOOT).unwrap().eid, 3);
    // Nothing more: an empty batch, at once.
    assert!(r.read(false, 10).unwrap().is_empty());
}

#[test]
fn a_restart_goes_on_after_the_kept_event_and_repeats_none() {
    let q = FakeQueue::new(vec![event(1, 100), event(2, 200), event(3, 300)]);
    let mut r = Reader::new(q, 7, at(1000));
    let kept = Cursor {
        boot_id: BOOT.into(),
        eid: 2,
        time: at(200),
    };
    assert_eq!(r.resume(Some(&kept), BOOT).unwrap(), Resumed::After(2));
    assert_eq!(eids(&r.read(false, 10).unwrap()), vec![3]);
    // The seek named the kept event.
    assert_eq!(r.dev.calls[0].1, 2);
}

#[test]
fn a_cursor_of_another_boot_reads_the_whole_new_queue() {
    let q = FakeQueue::new(vec![event(1, 100), event(2, 200)]);
    let mut r = Reader::new(q, 7, at(150));
    let kept = Cursor {
        boot_id: "boot-old".into(),
        eid: 900,
        time: at(50),
    };
    assert_eq!(r.resume(Some(&kept), BOOT).unwrap(), Resumed::Fresh);
    assert!(r.dev.calls.is_empty(), "no seek into another boot's ids");
    assert_eq!(eids(&r.read(false, 10).unwrap()), vec![1, 2]);
}

#[test]
fn events_dropped_while_the_agent_was_stopped_are_counted_and_the_rest_read() {
    // Kept: event 5. The queue now starts at 9 (5..8 were pushed out while stopped).
    let q = FakeQueue::new(vec![event(9, 900), event(10, 1000)]);
    let mut r = Reader::new(q, 7, at(2000));
    let kept = Cursor {
        boot_id: BOOT.into(),
        eid: 5,
        time: at(500),
    };
    assert_eq!(r.resume(Some(&kept), BOOT).unwrap(), Resumed::Dropped(5));
    let b = r.read(false, 10).unwrap();
    assert_eq!(eids(&b), vec![9, 10]);
    assert_eq!(b.missing, 3, "ids 6, 7 and 8 never came");
}

#[test]
fn a_kept_event_gone_with_older_ones_still_queued_skips_those_only() {
    // Kept: event 3 at t=300, no longer found by the seek (a double that lost it); the
    // queue still holds 2 and 3's successors.
    let mut q = FakeQueue::new(vec![event(2, 200), event(4, 400)]);
    q.events.retain(|(eid, _)| *eid != 3);
    let mut r = Reader::new(q, 7, at(1000));
    let kept = Cursor {
        boot_id: BOOT.into(),
        eid: 3,
        time: at(300),
    };
    r.resume(Some(&kept), BOOT).unwrap();
    assert_eq!(eids(&r.read(false, 10).unwrap()), vec![4]);
}

#[test]
fn a_reloaded_module_whose_ids_began_again_is_read_whole() {
    // Kept: event 40 at t=500. After a module reload (same boot) the ids are 1, 2 again,
    // but the events are newer than the kept one: nothing is skipped.
    let q = FakeQueue::new(vec![event(1, 600), event(2, 700)]);
    let mut r = Reader::new(q, 7, at(650));
    let kept = Cursor {
        boot_id: BOOT.into(),
        eid: 40,
        time: at(500),
    };
    assert_eq!(r.resume(Some(&kept), BOOT).unwrap(), Resumed::Dropped(40));
    let b = r.read(false, 10).unwrap();
    assert_eq!(eids(&b), vec![1, 2]);
    assert_eq!(b.missing, 0);
    assert_eq!(
        b.events.iter().map(|e| e.before_start).collect::<Vec<_>>(),
        vec![true, false]
    );
}

#[test]
fn gaps_and_the_kernels_dropped_count_are_reported() {
    let mut q = FakeQueue::new(vec![event(1, 1), event(4, 4), event(5, 5)]);
    q.dropped = 7;
    let mut r = Reader::new(q, 7, at(0));
    let b = r.read(false, 10).unwrap();
    assert_eq!((b.dropped, b.missing), (7, 2));
}

#[test]
fn a_burst_is_handed_on_in_batches_of_the_size_asked() {
    let q = FakeQueue::new((1..=2500).map(|i| event(i, i as i64)).collect());
    let mut r = Reader::new(q, 7, at(0));
    let sizes: Vec<usize> = (0..4)
        .map(|_| r.read(false, BATCH_MAX).unwrap().events.len())
        .collect();
    assert_eq!(sizes, vec![1024, 1024, 452, 0]);
}

#[test]
fn an_undecodable_event_is_counted_and_reading_goes_on() {
    let q = FakeQueue::new(vec![(1, b"garbage".to_vec()), event(2, 2)]);
    let mut r = Reader::new(q, 7, at(0));
    let b = r.read(false, 10).unwrap();
    assert_eq!(eids(&b), vec![2]);
    assert_eq!(b.undecodable.len(), 1);
}

#[test]
fn waiting_blocks_only_for_the_first_event_of_a_batch() {
    let q = FakeQueue::new(vec![event(1, 1), event(2, 2)]);
    let mut r = Reader::new(q, 7, at(0));
    r.read(true, 10).unwrap();
    let flags: Vec<u64> = r.dev.calls.iter().map(|c| c.1).collect();
    // The first call waits (no flag), the rest do not (ZEVENT_NONBLOCK), the last finds none.
    assert_eq!(flags, vec![0, 1, 1]);
}

mod attacks {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Any bytes, and any cut or flip of a real event's: an error or an event, never a
        /// panic (the decoder under the nvlist decoder's own bounds).
        #[test]
        fn no_bytes_make_the_decoder_panic(bytes in proptest::collection::vec(any::<u8>(), 0..2048)) {
            let _ = decode::decode(&bytes);
        }

        #[test]
        fn a_damaged_real_event_is_refused_or_decoded(at in 0usize..400, bit in 0u8..8) {
            let (_, mut bytes) = event(1, 1);
            if at < bytes.len() {
                bytes[at] ^= 1 << bit;
            }
            let _ = decode::decode(&bytes);
            let _ = decode::decode(&bytes[..at.min(bytes.len())]);
        }
    }

    /// A capture's `zevents/` planted with a FIFO, a file over the size limit, a link to
    /// another file and garbage: each is counted undecodable (with its name) and the good
    /// event is still read; nothing blocks.
    #[test]
    fn a_hostile_capture_costs_only_its_bad_files() {
        let dir = tempfile::tempdir().unwrap();
        let z = dir.path().join(crate::capture::ZEVENTS_DIR);
        std::fs::create_dir(&z).unwrap();
        std::fs::write(z.join("00000000000000000001.nvlist"), event(1, 1).1).unwrap();
        crate::sources::root::make_fifo(&z.join("00000000000000000002.nvlist"));
        std::fs::write(
            z.join("00000000000000000003.nvlist"),
            vec![0u8; zpulse_proto::abi::ZEVENT_MAX_BYTES + 1],
        )
        .unwrap();
        std::fs::write(z.join("00000000000000000004.nvlist"), b"not an nvlist").unwrap();
        std::os::unix::fs::symlink("/dev/zero", z.join("00000000000000000005.nvlist")).unwrap();
        std::fs::write(z.join("counts"), b"dropped 7\nmissing x\n").unwrap();
        let batch = crate::capture::load_zevents(dir.path());
        assert_eq!(eids(&batch), vec![1]);
        assert_eq!(batch.undecodable.len(), 4, "{:?}", batch.undecodable);
        assert!(batch.undecodable[0].contains("00000000000000000002.nvlist"));
        assert_eq!((batch.dropped, batch.missing), (7, 0));
    }
}

/// An event the kernel claims is larger than any event can be (its queue refuses nvlists
/// over `ERPT_DATA_SZ`, 6 KiB, in `zfs_zevent_post`): the reader does not allocate what it
/// says, seeks past it and goes on with the next one.
#[test]
fn an_event_claiming_more_than_any_event_can_be_is_skipped() {
    let huge = (
        2,
        vec![0u8; crate::sources::zfs_ioctl::events::EVENT_MAX + 1],
    );
    let q = FakeQueue::new(vec![event(1, 100), huge, event(3, 300)]);
    let mut r = Reader::new(q, 7, at(0));
    let b = r.read(false, 10).unwrap();
    assert_eq!(eids(&b), vec![1, 3]);
    assert_eq!(b.undecodable.len(), 1, "{:?}", b.undecodable);
    assert!(b.undecodable[0].starts_with("event 2: the kernel claims"));
    // As the first event, with no id to seek past, the queue cannot be read: said so.
    let huge = (
        1,
        vec![0u8; crate::sources::zfs_ioctl::events::EVENT_MAX + 1],
    );
    let mut r = Reader::new(FakeQueue::new(vec![huge]), 7, at(0));
    let e = r.read(false, 10).unwrap_err().to_string();
    assert!(e.contains("more than the 65536-byte limit"), "{e}");
}

/// An error report's file is asked of the kernel once per object in a batch; a kernel that
/// refuses the naming calls (this double answers ENOTTY) leaves the ids, in the form
/// `zpool status -v` prints then. Slow-I/O reports about an object (`deadman`, `delay`) are
/// not named: on a pool whose I/O is stuck the naming calls would be stuck too.
#[test]
fn error_reports_are_named_once_per_object() {
    let report = |eid: u64| report_of("ereport.fs.zfs.checksum", eid);
    let q = FakeQueue::new(vec![
        report_of("ereport.fs.zfs.deadman", 1),
        report(2),
        report(3),
        report_of("ereport.fs.zfs.delay", 4),
        event(5, 100),
    ]);
    let mut r = Reader::new(q, 7, at(0)).naming_files(Box::new(|_| None), Arc::new(SystemClock));
    let b = r.read(false, 10).unwrap();
    let files: Vec<Option<&str>> = (b.events.iter())
        .map(|e| e.zio.as_ref().and_then(|z| z.file.as_deref()))
        .collect();
    assert_eq!(
        files,
        vec![None, Some("<0x54>:<0x2>"), Some("<0x54>:<0x2>"), None, None]
    );
    // The slow-I/O reports keep their object numbers.
    let zio = b.events[0].zio.as_ref().unwrap();
    assert_eq!((zio.objset, zio.object), (Some(0x54), Some(2)));
    let naming = (r.dev.calls.iter())
        .filter(|c| c.0 == crate::sources::zfs_ioctl::layout::Request::DsobjToDsname)
        .count();
    assert_eq!(naming, 1);
}

/// A queue whose naming calls each take 100 ms on a manual clock (a pool reading cold
/// metadata from disk).
struct SlowToName {
    queue: FakeQueue,
    clock: Arc<crate::base::clock::ManualClock>,
}

impl Ioctl for SlowToName {
    fn platform(&self) -> Platform {
        self.queue.platform()
    }

    fn call(
        &mut self,
        request: crate::sources::zfs_ioctl::layout::Request,
        cmd: &mut crate::sources::zfs_ioctl::layout::CmdBuffer,
    ) -> Result<(), i32> {
        if request == crate::sources::zfs_ioctl::layout::Request::DsobjToDsname {
            self.clock.advance(Duration::from_millis(100));
        }
        self.queue.call(request, cmd)
    }
}

/// Naming stops once a read has spent `NAMING_BUDGET` on it: the events are handed on, the
/// reports past it keep their object numbers.
#[test]
fn naming_files_stops_at_its_budget() {
    let clock = Arc::new(crate::base::clock::ManualClock::default());
    let objects: Vec<(u64, Vec<u8>)> = (1..=6)
        .map(|eid| {
            let l = NvList::new()
                .with("class", NvValue::String("ereport.fs.zfs.checksum".into()))
                .with("pool", NvValue::String("scrubp".into()))
                .with("zio_objset", NvValue::Uint64(0x54))
                .with("zio_object", NvValue::Uint64(eid))
                .with("time", NvValue::Int64Array(vec![100, 0]))
                .with("eid", NvValue::Uint64(eid));
            (eid, encode(&l, Endian::Little))
        })
        .collect();
    let dev = SlowToName {
        queue: FakeQueue::new(objects),
        clock: Arc::clone(&clock),
    };
    let mut r = Reader::new(dev, 7, at(0))
        .naming_files(Box::new(|_| None), clock.clone() as Arc<dyn Clock>);
    let b = r.read(false, 10).unwrap();
    assert_eq!(b.events.len(), 6);
    let named = (b.events.iter())
        .filter(|e| e.zio.as_ref().is_some_and(|z| z.file.is_some()))
        .count();
    // Begun at 0, 100 and 200 ms; at 300 ms the 250 ms are spent.
    assert_eq!(NAMING_BUDGET, Duration::from_millis(250));
    assert_eq!(named, 3);
    assert!(b.events[3..].iter().all(|e| {
        let z = e.zio.as_ref().unwrap();
        z.file.is_none() && z.object.is_some()
    }));
}

/// A report of `class` about object 2 of objset 0x54 in pool `scrubp`.
fn report_of(class: &str, eid: u64) -> (u64, Vec<u8>) {
    let l = NvList::new()
        .with("class", NvValue::String(class.into()))
        .with("pool", NvValue::String("scrubp".into()))
        .with("zio_objset", NvValue::Uint64(0x54))
        .with("zio_object", NvValue::Uint64(2))
        .with("time", NvValue::Int64Array(vec![100, 0]))
        .with("eid", NvValue::Uint64(eid));
    (eid, encode(&l, Endian::Little))
}
