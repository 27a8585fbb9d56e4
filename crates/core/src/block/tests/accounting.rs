//! `/sys/block/<dev>/stat` as Documentation/block/stat.rst defines its fields, and the rq_qos
//! chain's own bookkeeping (order, names, timers).

use super::*;

fn ms(x: u64) -> Nanos {
    Nanos::from_ms(x)
}

fn drain<S: Scheduler, T: Copy>(blk: &mut BlockLayer<S, T>, now: Nanos) -> Vec<Request> {
    std::iter::from_fn(|| blk.poll_dispatch(now)).collect()
}

/// Submits `bio` at `at`, dispatches it at once and completes it at `end`.
fn one(blk: &mut BlockLayer<Noop, ()>, bio: Bio, at: u64, end: u64) {
    blk.handle_submit(bio, (), ms(at));
    let rqs = drain(blk, ms(at));
    assert_eq!(rqs.len(), 1);
    let mut done = Vec::new();
    blk.handle_complete(rqs[0].id, true, ms(end), &mut done);
}

#[test]
fn discards_and_flushes_have_their_own_fields_and_a_flush_moves_no_sectors() {
    // stat.rst: fields 12-15 discard I/Os, merges, sectors, ticks; 16-17 flush I/Os and
    // ticks (blk_account_io_done counts a flush's ios and ticks, never its sectors).
    let mut blk = BlockLayer::new(Noop::new(), Limits::depth(4));
    one(&mut blk, Bio::new(CtxId(1), Op::Discard, 0, 64), 0, 3);
    one(&mut blk, Bio::new(CtxId(1), Op::Flush, 0, 8), 10, 12);
    one(&mut blk, Bio::new(CtxId(1), Op::Write, 0, 16), 20, 21);
    let f = blk.stat().fields(ms(30));
    assert_eq!(&f[11..17], &[1, 0, 64, 3, 1, 2]);
    assert_eq!(&f[4..8], &[1, 0, 16, 1]);
    assert_eq!(&f[0..4], &[0, 0, 0, 0]);
    assert_eq!(blk.stat().flush.sectors, 0);
    assert_eq!(blk.stat().discard.ticks_ns, 3_000_000);
}

#[test]
fn a_merged_read_counts_in_the_read_merges_field() {
    // blk_account_io_merge_bio: the merges field of the bio's direction.
    let mut blk = BlockLayer::new(Deadline::new(Default::default()), Limits::depth(1));
    blk.handle_submit(Bio::new(CtxId(1), Op::Read, 0, 8), (), ms(0));
    drain(&mut blk, ms(0));
    blk.handle_submit(Bio::new(CtxId(1), Op::Read, 100, 8), (), ms(0));
    blk.handle_submit(Bio::new(CtxId(1), Op::Read, 108, 8), (), ms(0));
    let f = blk.stat().fields(ms(0));
    assert_eq!((f[1], f[5]), (1, 0));
    assert_eq!(f[8], 2, "in flight: one at the device, one queued");
}

#[test]
fn io_ticks_count_busy_periods_only_and_the_open_one_up_to_now() {
    // stat.rst field 10 (io_ticks): time with at least one request in flight; field 9 the
    // requests in flight (allocated, not completed).
    let mut blk = BlockLayer::new(Noop::new(), Limits::depth(4));
    one(&mut blk, Bio::new(CtxId(1), Op::Read, 0, 8), 0, 4);
    // Idle from 4 to 6 ms; then two requests overlap from 6 to 9 ms.
    blk.handle_submit(Bio::new(CtxId(1), Op::Read, 100, 8), (), ms(6));
    blk.handle_submit(Bio::new(CtxId(1), Op::Read, 300, 8), (), ms(7));
    let rqs = drain(&mut blk, ms(7));
    assert_eq!(blk.stat().in_flight, 2);
    assert_eq!(blk.stat().io_ticks_at(ms(8)), ms(4 + 2));
    assert_eq!(blk.stat().fields(ms(8))[9], 6);
    let mut done = Vec::new();
    blk.handle_complete(rqs[0].id, true, ms(8), &mut done);
    assert_eq!(blk.stat().io_ticks_ns, 4_000_000, "still busy: not closed");
    blk.handle_complete(rqs[1].id, true, ms(9), &mut done);
    assert_eq!(blk.stat().io_ticks_ns, 7_000_000);
    assert_eq!(blk.stat().io_ticks_at(ms(50)), ms(7), "idle since");
    assert_eq!(blk.stat().in_flight, 0);
    // Field 11: every request's time in flight, summed (4 + 2 + 2 ms).
    assert_eq!(blk.stat().fields(ms(9))[10], 8);
    assert_eq!(blk.stat().read.ticks_ns, 8_000_000);
}

#[test]
fn ticks_are_shown_in_whole_milliseconds_truncated() {
    let mut s = DiskStat::default();
    s.read = DirStat {
        ios: 1,
        merges: 2,
        sectors: 3,
        ticks_ns: 1_999_999,
    };
    s.time_in_queue_ns = 2_500_000;
    s.io_ticks_ns = 999_999;
    let f = s.fields(Nanos::ZERO);
    assert_eq!(&f[0..4], &[1, 2, 3, 1]);
    assert_eq!((f[9], f[10]), (0, 2));
}

#[test]
fn the_stat_line_is_seventeen_right_aligned_fields() {
    // part_stat_show prints each field with %8lu, separated by a space.
    let mut blk = BlockLayer::new(Noop::new(), Limits::depth(4));
    one(&mut blk, Bio::new(CtxId(1), Op::Read, 0, 8), 0, 5);
    one(&mut blk, Bio::new(CtxId(1), Op::Write, 0, 24), 5, 7);
    let line = blk.stat().to_string();
    let expect = [1, 0, 8, 5, 1, 0, 24, 2, 0, 7, 7, 0, 0, 0, 0, 0, 0]
        .iter()
        .map(|x| format!("{x:>8}"))
        .collect::<Vec<_>>()
        .join(" ")
        + "\n";
    assert_eq!(line, expect);
}

#[test]
fn a_stat_line_of_11_15_or_17_fields_parses_and_a_bad_one_says_where() {
    // Kernels before 4.18 print 11 fields, 4.18 to 5.4 15 (discards), later 17 (flushes).
    let v11 = "1 2 3 4 5 6 7 8 9 10 11";
    let s = DiskStat::parse(v11).unwrap();
    assert_eq!(
        s.fields(Nanos::ZERO),
        [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 0, 0, 0, 0, 0, 0]
    );
    let v17 = "1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17";
    let s = DiskStat::parse(v17).unwrap();
    let all: Vec<u64> = (1..=17).collect();
    assert_eq!(s.fields(Nanos::ZERO).to_vec(), all);
    assert_eq!(s.read.ticks_ns, 4_000_000);
    assert_eq!(s.flush.ticks_ns, 17_000_000);
    assert_eq!((s.flush.merges, s.flush.sectors), (0, 0));
    let v15 = "1 2 3 4 5 6 7 8 9 10 11 12 13 14 15";
    let s = DiskStat::parse(v15).unwrap();
    assert_eq!(s.discard.ticks_ns, 15_000_000);
    assert_eq!(s.flush, DirStat::default());
    assert_eq!(
        DiskStat::parse("1 2 3 4 5 6 7 8 9 10").unwrap_err(),
        "10 fields, expected 11, 15 or 17"
    );
    let err = DiskStat::parse("1 2 x 4 5 6 7 8 9 10 11").unwrap_err();
    assert!(err.starts_with("field 3: \"x\": "), "{err}");
}

#[test]
fn since_is_the_difference_of_the_counters_and_the_present_in_flight() {
    let before = DiskStat::parse("1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17").unwrap();
    let after = DiskStat::parse("11 12 13 14 15 16 17 18 3 20 21 22 23 24 25 26 27").unwrap();
    let d = after.since(&before);
    assert_eq!(
        d.fields(Nanos::ZERO),
        [10, 10, 10, 10, 10, 10, 10, 10, 3, 10, 10, 10, 10, 10, 10, 10, 10]
    );
    // A counter that went backwards (the device was reset) reads 0, not a wrap.
    assert_eq!(before.since(&after).fields(Nanos::ZERO)[0], 0);
}

/// A hook with a timer; counts its firings.
struct Timed {
    name: &'static str,
    at: Option<Nanos>,
    fired: std::rc::Rc<std::cell::RefCell<Vec<(&'static str, Nanos)>>>,
}

impl QosHook for Timed {
    fn name(&self) -> &'static str {
        self.name
    }
    fn poll_timeout(&self) -> Option<Nanos> {
        self.at
    }
    fn handle_timeout(&mut self, now: Nanos) {
        self.fired.borrow_mut().push((self.name, now));
        self.at = None;
    }
}

#[test]
fn the_chain_keeps_its_order_and_fires_only_the_hooks_that_are_due() {
    let fired = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
    let hook = |name, at: Option<u64>| {
        Box::new(Timed {
            name,
            at: at.map(ms),
            fired: fired.clone(),
        })
    };
    let mut chain = QosChain::default();
    assert!(chain.is_empty());
    chain.push(hook("io.max", Some(20)));
    let mut more = QosChain::default();
    more.push(hook("io.cost", Some(10)));
    more.push(hook("io.latency", None));
    chain.append(more);
    assert!(!chain.is_empty());
    assert_eq!(chain.len(), 3);
    assert_eq!(chain.names(), ["io.max", "io.cost", "io.latency"]);
    assert_eq!(
        format!("{chain:?}"),
        r#"["io.max", "io.cost", "io.latency"]"#
    );
    assert_eq!(chain.poll_timeout(), Some(ms(10)));
    chain.handle_timeout(ms(9));
    assert!(fired.borrow().is_empty());
    chain.handle_timeout(ms(10));
    assert_eq!(*fired.borrow(), [("io.cost", ms(10))]);
    assert_eq!(chain.poll_timeout(), Some(ms(20)));
    // Through the layer: its timeout is the chain's, and it fires the hook.
    let mut blk: BlockLayer<Noop, ()> = BlockLayer::new(Noop::new(), Limits::depth(1));
    blk.set_qos(chain);
    assert_eq!(blk.qos().len(), 3);
    assert_eq!(blk.poll_timeout(), Some(ms(20)));
    blk.handle_timeout(ms(25));
    assert_eq!(fired.borrow()[1], ("io.max", ms(25)));
    assert_eq!(blk.poll_timeout(), None);
}
