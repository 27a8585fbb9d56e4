//! What the layer asks of its policy, counted through a wrapper: decisions mutation testing
//! found unpinned (docs/mutation-testing.md, "The rest of the tags and the block layer's new code
//! (mutants32)").

use super::*;
use std::cell::{Cell, RefCell};

/// mq-deadline, with the layer's calls of [`Scheduler::holds_sched_tag`] counted and the bios
/// it is told were not merged ([`Scheduler::bio_not_merged`]) logged by first sector.
struct Asked {
    inner: MqDeadline,
    holds: Cell<u64>,
    not_merged: RefCell<Vec<u64>>,
}

impl Asked {
    fn new(inner: MqDeadline) -> Asked {
        Asked {
            inner,
            holds: Cell::new(0),
            not_merged: RefCell::new(Vec::new()),
        }
    }
}

impl Scheduler for Asked {
    fn name(&self) -> &'static str {
        "asked"
    }
    fn try_merge(&mut self, rq: &Request, max_sectors: u32, now: Nanos) -> Option<RequestId> {
        self.inner.try_merge(rq, max_sectors, now)
    }
    fn bio_not_merged(&mut self, bio: &Request, now: Nanos) {
        self.not_merged.borrow_mut().push(bio.sector);
        self.inner.bio_not_merged(bio, now);
    }
    fn merge_next(
        &mut self,
        into: RequestId,
        grown: GrownBy,
        max_sectors: u32,
        now: Nanos,
    ) -> Option<RequestsMerged> {
        self.inner.merge_next(into, grown, max_sectors, now)
    }
    fn insert(&mut self, rq: Request, now: Nanos) {
        self.inner.insert(rq, now);
    }
    fn dispatch(&mut self, now: Nanos) -> Dispatch {
        self.inner.dispatch(now)
    }
    fn complete(&mut self, rq: &Request, now: Nanos) {
        self.inner.complete(rq, now);
    }
    fn queued(&self) -> usize {
        self.inner.queued()
    }
    fn bounds_own_requests(&self) -> bool {
        self.inner.bounds_own_requests()
    }
    fn holds_sched_tag(&self, id: RequestId) -> Option<bool> {
        self.holds.set(self.holds.get() + 1);
        self.inner.holds_sched_tag(id)
    }
    fn sched_tags_admitted(&self) -> Option<u64> {
        self.inner.sched_tags_admitted()
    }
    fn set_tunable(&mut self, name: &str, value: i64) -> Result<(), crate::TunableError> {
        self.inner.set_tunable(name, value)
    }
}

/// mq-deadline with `nr_requests` 4 behind a one-request device, wrapped.
fn asked_mq_deadline() -> BlockLayer<Asked, u64> {
    let mut set = crate::Settings::new();
    set.set("nr_requests", 4);
    let dd = MqDeadline::from_settings(&set).expect("nr_requests 4");
    BlockLayer::new(Asked::new(dd), Limits::depth(1))
}

/// `blk_mq_get_tag` hands the scheduler tags to the requests sleeping for one in the order
/// they went to sleep (`sbitmap_queue_wake_up` wakes the oldest waiters first), and a
/// request's `start_time_ns` is when it got its tag (`blk_mq_rq_time_init`). 64 reads on
/// mq-deadline's 4 tags: 60 wait; each completion frees a tag that the oldest waiting read
/// takes, and is stamped then. The layer learns who got a tag by asking the policy
/// ([`Scheduler::holds_sched_tag`]); told how many were admitted since it last looked
/// ([`Scheduler::sched_tags_admitted`]), it stops once it has found them: a number of asks
/// linear in the requests, where asking of every waiting read after every completion is
/// quadratic (cubic over a fio job; issue 32's 4096 requests waiting ran for minutes).
#[test]
fn the_layer_looks_for_the_admitted_requests_only_until_it_has_found_them() {
    let n = 64u64;
    let mut blk = asked_mq_deadline();
    for i in 0..n {
        blk.handle_submit(Bio::new(CtxId(1), Op::Read, i * 100, 8), i, ms(0));
    }
    let mut out = drain(&mut blk, ms(0));
    let (mut done, mut t) = (Vec::new(), 1);
    while let Some(rq) = out.pop() {
        blk.handle_complete(rq.id, true, ms(t), &mut done);
        out.extend(drain(&mut blk, ms(t)));
        t += 1;
    }
    assert_eq!(done.len() as u64, n);
    // Read i (i >= 4) takes the tag read i - 4 frees at its completion, at i - 3 ms.
    for d in &done {
        let want = ms(d.token.saturating_sub(3) * u64::from(d.token >= 4));
        assert_eq!(d.tagged, want, "read {}", d.token);
    }
    let asks = blk.scheduler().holds.get();
    assert!(asks <= 3 * n, "{asks} asks for {n} requests");
}

/// `blk_mq_attempt_bio_merge`: a bio's merge is attempted (`blk_mq_sched_bio_merge`, the
/// policy's `bio_merge`, where bfq's `bfq_allow_bio_merge` may merge queues) only when the
/// queue allows merges (`!blk_queue_nomerges`) and the bio may merge (`bio_mergeable`; the
/// layer offers reads and writes only). A replay's own request, which the kernel's attempt
/// did not merge, is told to the policy as that attempt ([`Scheduler::bio_not_merged`]);
/// any other bio's attempt is the policy's [`Scheduler::try_merge`], and it is not told.
#[test]
fn only_an_own_request_whose_merge_was_attempted_is_told_it_did_not_merge() {
    let own = |op, sector| {
        let mut bio = Bio::new(CtxId(1), op, sector, 8);
        bio.own_request = true;
        bio
    };
    let mut blk = asked_mq_deadline();
    blk.handle_submit(own(Op::Read, 0), 0, ms(0));
    blk.handle_submit(Bio::new(CtxId(1), Op::Read, 1000, 8), 1, ms(0));
    blk.handle_submit(own(Op::Discard, 2000), 2, ms(0));
    blk.handle_submit(own(Op::Write, 3000), 3, ms(0));
    assert_eq!(*blk.scheduler().not_merged.borrow(), [0, 3000]);

    let mut set = crate::Settings::new();
    set.set("nr_requests", 4);
    let dd = MqDeadline::from_settings(&set).expect("nr_requests 4");
    let limits = Limits::depth(1).nomerges(NoMerges::None);
    let mut blk: BlockLayer<Asked, u64> = BlockLayer::new(Asked::new(dd), limits);
    blk.handle_submit(own(Op::Read, 0), 0, ms(0));
    assert!(blk.scheduler().not_merged.borrow().is_empty(), "nomerges 2");
}
