//! The anticipatory scheduler's decisions in the situations 2.6.32's as-iosched.c was written
//! for, each built by hand: the seven rules that end anticipation, the timer, process exit,
//! batches, the write-batch autotuning, FIFO expiry, merging.

use super::tests_closed_loop::{self as as_closed_loop, Job, Step};
use super::*;
use crate::harness::{rq, Harness};
use crate::request::{CtxId, DEFAULT_MERGE_SECTORS};
use crate::{Dispatch, Nanos, Request, Scheduler, Settings};

/// Which kind of batch is running.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum BatchDir {
    /// Reads and sync writes.
    Sync,
    /// Async writes (writeback).
    Async,
}

/// One process's statistics as AS keeps them (a read-only view of `as_io_context`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct CtxStats {
    /// Whether the process is still running (has not exited).
    pub(super) running: bool,
    /// Requests queued in AS (not yet dispatched).
    pub(super) queued: u32,
    /// Think-time sample weight, fixed point (256 = 1.0; it saturates at 249).
    pub(super) ttime_samples: u64,
    /// Mean think time.
    pub(super) ttime_mean: Nanos,
    /// Seek sample weight, fixed point.
    pub(super) seek_samples: u64,
    /// Mean seek distance, in sectors.
    pub(super) seek_mean: u64,
}

/// Views of the state the tests below assert on: white-box, through the fields.
impl Anticipatory {
    /// The anticipation state.
    pub(super) fn antic_state(&self) -> AnticState {
        self.antic_status
    }

    /// The process being anticipated (issuer of the last sync dispatch), if any.
    pub(super) fn anticipated(&self) -> Option<CtxId> {
        self.io_context
    }

    /// When the anticipation timer fires, while it is armed.
    pub(super) fn next_timer(&self) -> Option<Nanos> {
        (self.antic_status == AnticState::WaitNext).then_some(self.antic_deadline)
    }

    /// The kind of batch running (or being switched to).
    pub(super) fn batch(&self) -> BatchDir {
        if self.batch_dir == SYNC {
            BatchDir::Sync
        } else {
            BatchDir::Async
        }
    }

    /// The autotuned number of writes per write batch.
    pub(super) fn write_batch_count(&self) -> i64 {
        self.write_batch_count
    }

    /// Requests dispatched and not yet completed, as AS counts them.
    pub(super) fn in_flight(&self) -> usize {
        self.nr_dispatched
    }

    /// Statistics kept for `ctx`, if AS knows it.
    pub(super) fn ctx_stats(&self, ctx: CtxId) -> Option<CtxStats> {
        self.aics.get(&ctx).map(|a| CtxStats {
            running: a.running,
            queued: a.nr_queued,
            ttime_samples: a.ttime_samples,
            ttime_mean: Nanos(a.ttime_mean * self.cfg.jiffy().as_ns()),
            seek_samples: a.seek_samples,
            seek_mean: a.seek_mean,
        })
    }
}

fn ms(n: u64) -> Nanos {
    Nanos::from_ms(n)
}

fn us(n: u64) -> Nanos {
    Nanos::from_us(n)
}

/// The dispatch must be a request; returns it.
fn take(s: &mut Anticipatory, now: Nanos) -> Request {
    match s.dispatch(now) {
        Dispatch::Request(r) => r,
        other => panic!("expected a request at {now}, got {other:?}"),
    }
}

/// Insert, dispatch at once (expecting exactly `id`), complete `service` later.
fn serve(s: &mut Anticipatory, r: Request, now: Nanos, service: Nanos) -> Nanos {
    let id = r.id;
    s.insert(r, now);
    let got = take(s, now);
    assert_eq!(got.id, id, "expected {id:?} to be dispatched at {now}");
    s.complete(&got, now + service);
    now + service
}

fn no_antic() -> Config {
    Config {
        antic_expire: Nanos::ZERO,
        ..Config::default()
    }
}

const P: u32 = 1;
const Q: u32 = 2;
const P_SECTOR: u64 = 1_000_000;
const FAR: u64 = 50_000_000;

/// `s` once process P's read at `P_SECTOR`, dispatched at 0, has completed at `done` and
/// process Q's far read (id 2) has arrived at `q_at`.
fn p_served_then_q(mut s: Anticipatory, done: Nanos, q_at: Nanos) -> Anticipatory {
    s.insert(rq(1, P).sector(P_SECTOR).build(), ms(0));
    let first = take(&mut s, ms(0));
    s.complete(&first, done);
    s.insert(rq(2, Q).sector(FAR).build(), q_at);
    s
}

/// The standard situation: process P's read at `P_SECTOR` was dispatched at 0 and completed
/// at 5 ms; process Q's far read (id 2) is queued. P has no history and nothing else is
/// known, so AS anticipates P until 5 + antic_expire = 11 ms.
fn anticipating_p() -> Anticipatory {
    let mut s = p_served_then_q(Anticipatory::default(), ms(5), ms(5));
    assert_eq!(s.dispatch(ms(5)), Dispatch::Idle { until: ms(11) });
    assert_eq!(s.antic_state(), AnticState::WaitNext);
    assert_eq!(s.anticipated(), Some(CtxId(P)));
    s
}

// ----- the seven rules of as_can_break_anticipation, in order -----

#[test]
fn as_breaks_anticipation_for_any_request_from_the_anticipated_process() {
    // Rule 1: even far away, a request from the process we wait for ends the wait ...
    let mut s = anticipating_p();
    s.insert(rq(3, P).sector(90_000_000).build(), ms(7));
    assert_eq!(s.antic_state(), AnticState::Finished);
    // ... and the elevator then takes the nearer of the two requests.
    assert_eq!(take(&mut s, ms(7)).id.0, 2);
}

#[test]
fn as_breaks_anticipation_when_the_anticipated_process_writes() {
    // Rule 1 for a write (an fsync or O_SYNC write: the process will not read soon).
    let mut s = anticipating_p();
    s.insert(rq(3, P).sector(90_000_000).write().build(), ms(7));
    assert_eq!(s.antic_state(), AnticState::Finished);
    // The read batch goes on with Q's read; the write waits for its batch.
    assert_eq!(take(&mut s, ms(7)).id.0, 2);
}

#[test]
fn as_does_not_anticipate_once_antic_expire_has_passed_since_the_completion() {
    // Rule 2: P's read completed at 5 ms and nobody asked for a dispatch until Q's read
    // arrived at 20 ms: the would-be timer has already run out, so Q goes at once.
    let mut s = p_served_then_q(Anticipatory::default(), ms(5), ms(20));
    assert_eq!(take(&mut s, ms(20)).id.0, 2);

    // Within antic_expire of the completion it would have waited.
    let mut s = p_served_then_q(Anticipatory::default(), ms(5), ms(8));
    assert_eq!(s.dispatch(ms(8)), Dispatch::Idle { until: ms(11) });
}

#[test]
fn as_breaks_anticipation_when_the_anticipated_process_has_requests_queued() {
    // Rule 3: P has a second read queued (far away), so there is nothing to anticipate:
    // Q's read goes to the device while P's first read is still in flight.
    let mut s = Anticipatory::default();
    s.insert(rq(1, P).sector(P_SECTOR).build(), ms(0));
    s.insert(rq(2, Q).sector(FAR).build(), ms(0));
    s.insert(rq(3, P).sector(80_000_000).build(), ms(0));
    assert_eq!(take(&mut s, ms(0)).id.0, 1);
    assert_eq!(take(&mut s, ms(0)).id.0, 2);

    // Without P's second read, AS holds Q back until P's read completes (one read at a time).
    let mut s = Anticipatory::default();
    s.insert(rq(1, P).sector(P_SECTOR).build(), ms(0));
    s.insert(rq(2, Q).sector(FAR).build(), ms(0));
    assert_eq!(take(&mut s, ms(0)).id.0, 1);
    assert_eq!(s.dispatch(ms(0)), Dispatch::Empty);
    assert_eq!(s.antic_state(), AnticState::WaitReq);
}

/// 2.6.32 `as_close_req`: the wait counts as no delay while the anticipated process's request
/// is still in flight (`!ad->ioc_finished`), so the close window stays at its base and a far
/// request is held however long that request takes: a far read from a third process arriving
/// 30 ms into P's read does not end the wait (20 jiffies of delay would make anything close).
#[test]
fn as_close_req_counts_no_delay_while_the_anticipated_request_is_in_flight() {
    let mut s = Anticipatory::default();
    s.insert(rq(1, P).sector(P_SECTOR).build(), ms(0));
    s.insert(rq(2, Q).sector(FAR).build(), ms(0));
    assert_eq!(take(&mut s, ms(0)).id.0, 1);
    assert_eq!(s.dispatch(ms(0)), Dispatch::Empty);
    s.insert(rq(3, 3).sector(FAR + 10_000_000).build(), ms(30));
    assert_eq!(s.antic_state(), AnticState::WaitReq);
    assert_eq!(s.dispatch(ms(30)), Dispatch::Empty);
}

#[test]
fn as_breaks_anticipation_for_close_request_from_other_process() {
    // Rule 4: a sync request from another process next to where P left the head is as good
    // as P's own: take it, and count it in P's history (cooperating processes).
    let mut s = anticipating_p();
    assert_eq!(s.ctx_stats(CtxId(P)).unwrap().seek_samples, 0);
    s.insert(rq(3, 3).sector(P_SECTOR + 100).build(), ms(7));
    assert_eq!(s.antic_state(), AnticState::Finished);
    assert_eq!(take(&mut s, ms(7)).id.0, 3);
    let p = s.ctx_stats(CtxId(P)).unwrap();
    assert_eq!(
        p.seek_samples, 32,
        "the cooperating request fed P's seek history"
    );
    assert_eq!(p.seek_mean, 100 - 8, "distance from the end of P's read");
}

#[test]
fn as_close_window_widens_with_time_since_the_anticipated_completion() {
    // Right at the completion, "close" is 8192 sectors ahead; after d ms it is 8192 << d.
    let mut s = anticipating_p();
    let end = P_SECTOR + 8;
    s.insert(rq(3, 3).sector(end + 20_000).build(), ms(5));
    assert_eq!(
        s.antic_state(),
        AnticState::WaitNext,
        "20000 > 8192: not close at 0 ms"
    );
    s.insert(rq(4, 4).sector(end + 20_100).build(), ms(6));
    assert_eq!(
        s.antic_state(),
        AnticState::WaitNext,
        "20000 > 16384: not close at 1 ms"
    );
    s.insert(rq(5, 5).sector(end + 40_000).build(), ms(8));
    assert_eq!(
        s.antic_state(),
        AnticState::Finished,
        "40000 <= 65536: close at 3 ms"
    );
}

#[test]
fn as_close_window_reaches_half_as_far_behind_the_head() {
    let mut s = anticipating_p();
    let end = P_SECTOR + 8;
    s.insert(rq(3, 3).sector(end - 5_000).build(), ms(5));
    assert_eq!(s.antic_state(), AnticState::WaitNext, "5000 behind > 4096");
    s.insert(rq(4, 4).sector(end - 4_000).build(), ms(5));
    assert_eq!(s.antic_state(), AnticState::Finished, "4000 behind <= 4096");
}

#[test]
fn as_treats_request_within_the_anticipated_seek_mean_as_close() {
    // P seeks about 4,000,000 sectors between reads, so a request 3,000,000 away is better
    // than what P itself is expected to bring: break.
    let mut s = Anticipatory::default();
    let mut t = ms(0);
    let mut sector = 0;
    for i in 0..8 {
        t = serve(&mut s, rq(10 + i, P).sector(sector).build(), t, ms(1)) + us(500);
        sector += 4_000_000;
    }
    let p = s.ctx_stats(CtxId(P)).unwrap();
    assert!(p.seek_mean > 3_000_000, "seek mean {}", p.seek_mean);
    let last_end = sector - 4_000_000 + 8;
    t = t - us(500);
    s.insert(rq(2, Q).sector(last_end + 3_000_000).build(), t);
    assert_eq!(
        take(&mut s, t).id.0,
        2,
        "closer than P's mean seek: no anticipation"
    );

    // The same request for a process that seeks little (the standard fixture) is far.
    let mut s = anticipating_p();
    s.insert(rq(3, 3).sector(P_SECTOR + 3_000_000).build(), ms(7));
    assert_eq!(s.antic_state(), AnticState::WaitNext);
}

/// 2.6.32 `as_update_seekdist`: while a process has few seek samples (`seek_samples <= 60`),
/// a seek is clipped at four times the mean plus 2M sectors; a first seek of 4M sectors thus
/// counts as 2,097,152 (the later, tighter clip would make it 131,072).
#[test]
fn as_update_seekdist_clips_an_early_seek_at_2m_sectors_past_four_means() {
    let mut s = Anticipatory::default();
    let t = serve(&mut s, rq(1, P).sector(0).build(), ms(0), ms(1)) + us(500);
    serve(&mut s, rq(2, P).sector(4_000_000).build(), t, ms(1));
    assert_eq!(s.ctx_stats(CtxId(P)).unwrap().seek_mean, 2 * 1024 * 1024);
}

/// Process P reads at sector 0 and then after seeks of `seeks` sectors (from each request's
/// end), each served in 1 ms after 0.5 ms of thinking. Returns the scheduler.
fn seeker(seeks: &[u64]) -> Anticipatory {
    let mut s = Anticipatory::default();
    let mut t = serve(&mut s, rq(1, P).sector(0).build(), ms(0), ms(1)) + us(500);
    let mut end = 8;
    for (i, &seek) in seeks.iter().enumerate() {
        let sector = end + seek;
        t = serve(&mut s, rq(2 + i as u64, P).sector(sector).build(), t, ms(1)) + us(500);
        end = sector + 8;
    }
    s
}

/// 2.6.32 `as_update_seekdist`: the early clip is four times the current mean plus 2M
/// sectors. After a first seek of 4M sectors (mean 2,097,152) a seek of 100M counts as
/// 4 x 2,097,152 + 2,097,152 = 10,485,760, and the decayed mean becomes 6,571,076.
#[test]
fn as_update_seekdist_clips_a_second_seek_at_four_means_plus_2m_sectors() {
    let s = seeker(&[4_000_000, 100_000_000]);
    assert_eq!(s.ctx_stats(CtxId(P)).unwrap().seek_mean, 6_571_076);
}

/// 2.6.32 `as_update_seekdist`: once `seek_samples` passes 60 (the fourth seek) the clip
/// tightens to four times the mean plus 128K sectors: after three seeks of 1000 sectors a
/// seek of 100M counts as 4000 + 131,072, giving a mean of 41,876.
#[test]
fn as_update_seekdist_clips_later_seeks_at_four_means_plus_128k_sectors() {
    let s = seeker(&[1000, 1000, 1000, 100_000_000]);
    assert_eq!(s.ctx_stats(CtxId(P)).unwrap().seek_mean, 41_876);
}

/// 2.6.32 `as_update_seekdist`: `new_seek_mean` (shown in `est_time`) learns from each
/// process's first seek only, decayed as (7 x total + 256 x seek) / 8: a first seek of
/// 800,000 sectors makes it 100,000, and the process's next seek leaves it there.
#[test]
fn as_update_seekdist_learns_new_processes_seeks_from_their_first_seek_only() {
    let s = seeker(&[800_000]);
    assert_eq!(s.est_time().new_seek_mean, 100_000);
    let s = seeker(&[800_000, 8_000_000]);
    assert_eq!(s.est_time().new_seek_mean, 100_000);
}

/// `est_time` prints its probabilities in whole percent of the fixed-point 256.
#[test]
fn as_est_time_prints_probabilities_in_percent() {
    let e = EstTime {
        exit_prob: 128,
        exit_no_coop: 64,
        new_ttime_mean: Nanos::ZERO,
        new_seek_mean: 0,
    };
    assert_eq!((e.exit_prob_percent(), e.exit_no_coop_percent()), (50, 25));
}

/// 2.6.32 `as_close_req`: more than 20 ms (`20 * HZ / 1000` jiffies) into an anticipation
/// every request is close, so any request breaks the wait (antic_expire raised to 200 ms).
#[test]
fn as_close_req_counts_every_request_as_close_past_20_ms_of_anticipation() {
    let mut s = p_served_then_q(
        Anticipatory::new(Config {
            antic_expire: ms(200),
            ..Config::default()
        }),
        ms(5),
        ms(5),
    );
    assert!(matches!(s.dispatch(ms(5)), Dispatch::Idle { .. }));
    // 10 ms in, a far request is not close: the wait goes on.
    s.insert(rq(3, 3).sector(FAR + 1_000_000).build(), ms(15));
    assert!(matches!(s.dispatch(ms(15)), Dispatch::Idle { .. }));
    // 60 ms in, the same kind of request breaks it.
    s.insert(rq(4, 4).sector(FAR + 2_000_000).build(), ms(65));
    assert!(matches!(s.dispatch(ms(65)), Dispatch::Request(_)));
}

/// P_k (context `ctx`) reads twice 1 ms apart (so it has think-time history), its second
/// read completes at `t0 + 3 ms`; a far read from `ctx + 100` arrives and AS anticipates.
/// Returns the time of the completion.
fn anticipate_thinking(s: &mut Anticipatory, ctx: u32, t0: Nanos) -> Nanos {
    let base = 10_000_000 + u64::from(ctx) * 1_000_000;
    let id = u64::from(ctx) * 10;
    let t = serve(s, rq(id, ctx).sector(base).build(), t0, ms(1));
    let t = serve(
        s,
        rq(id + 1, ctx).sector(base + 8).build(),
        t + ms(1),
        ms(1),
    );
    s.insert(
        rq(id + 2, ctx + 100).sector(FAR + u64::from(ctx)).build(),
        t,
    );
    assert_eq!(s.dispatch(t), Dispatch::Idle { until: t + ms(6) });
    t
}

/// Serve whatever is queued, completing each request 1 ms after dispatch.
fn drain(s: &mut Anticipatory, mut t: Nanos) -> Nanos {
    loop {
        match s.dispatch(t) {
            Dispatch::Request(r) => {
                t += ms(1);
                s.complete(&r, t);
            }
            Dispatch::Idle { until } => t = until,
            Dispatch::Empty => return t,
        }
    }
}

#[test]
fn as_breaks_anticipation_for_exited_process_once_exits_are_rarely_rescued() {
    // Rule 5. While exit_no_coop <= 128, an exited process is still waited for (a
    // cooperating process may take over its work); every timeout after such an exit moves
    // exit_no_coop towards 256: 32, 60, 84, 105, 123, 139.
    let mut s = Anticipatory::default();
    let mut t = ms(0);
    for k in 0..6u32 {
        let ctx = 1 + k;
        let done = anticipate_thinking(&mut s, ctx, t);
        s.exit(CtxId(ctx), done + ms(1));
        s.insert(
            rq(1000 + u64::from(k), 200).sector(FAR + 5_000).build(),
            done + ms(2),
        );
        assert_eq!(
            s.antic_state(),
            AnticState::WaitNext,
            "round {k}: still waiting"
        );
        assert_eq!(
            s.dispatch(done + ms(2)),
            Dispatch::Idle {
                until: done + ms(6)
            }
        );
        t = drain(&mut s, done + ms(6)) + ms(100);
    }
    assert_eq!(s.est_time().exit_no_coop, 139);
    assert_eq!(s.est_time().exit_prob, 0, "these processes had samples");
    // Now an exit during anticipation ends it at the next arriving request.
    let done = anticipate_thinking(&mut s, 7, t);
    s.exit(CtxId(7), done + ms(1));
    s.insert(rq(2000, 200).sector(FAR + 5_000).build(), done + ms(2));
    assert_eq!(s.antic_state(), AnticState::Finished);
}

/// `n` processes whose first think time is 25 ms (19 jiffies once capped below
/// `MAX_THINKTIME`): new processes look like thinkers.
fn teach_long_new_thinktimes(s: &mut Anticipatory, n: u32) -> Nanos {
    let mut t = ms(0);
    for k in 0..n {
        let ctx = 50 + k;
        let sector = 20_000_000 + u64::from(k) * 1_000_000;
        t = serve(
            s,
            rq(u64::from(ctx) * 10, ctx).sector(sector).build(),
            t,
            ms(1),
        );
        t = serve(
            s,
            rq(u64::from(ctx) * 10 + 1, ctx).sector(sector + 8).build(),
            t + ms(25),
            ms(1),
        );
        t += ms(30);
    }
    t
}

#[test]
fn as_does_not_anticipate_new_process_when_new_processes_think_long() {
    // Rule 6 (first half): with no history of its own, a process is judged by the mean
    // first think time of new processes, `new_ttime_total / 256` in whole jiffies
    // (as_update_thinktime, 2.6.32). Four such processes: 19 * (1 - (7/8)^4) = 7.9 -> 7.
    let mut s = Anticipatory::default();
    let t = teach_long_new_thinktimes(&mut s, 4);
    assert_eq!(s.est_time().new_ttime_mean, ms(7));
    let t = serve(&mut s, rq(1, P).sector(P_SECTOR).build(), t, ms(1));
    s.insert(rq(2, Q).sector(FAR).build(), t);
    assert_eq!(take(&mut s, t).id.0, 2);

    // After three the mean is 19 * (1 - (7/8)^3) = 6.3 -> 6 jiffies, not above antic_expire:
    // anticipate (the ns mean, 6.3 ms, would not).
    let mut s = Anticipatory::default();
    let t = teach_long_new_thinktimes(&mut s, 3);
    assert_eq!(s.est_time().new_ttime_mean, ms(6));
    let t = serve(&mut s, rq(1, P).sector(P_SECTOR).build(), t, ms(1));
    s.insert(rq(2, Q).sector(FAR).build(), t);
    assert_eq!(s.dispatch(t), Dispatch::Idle { until: t + ms(6) });
}

#[test]
fn as_does_not_anticipate_new_process_when_waited_on_processes_tend_to_exit() {
    // Rule 6 (second half): exit_prob * exit_no_coop > 128 * 256. Processes with a single
    // read exit while anticipated, again and again.
    let mut s = Anticipatory::default();
    let mut t = ms(0);
    let mut rounds = 0;
    while s.est_time().exit_prob * s.est_time().exit_no_coop <= 128 * 256 {
        rounds += 1;
        assert!(
            rounds < 100,
            "exit statistics never grew: {:?}",
            s.est_time()
        );
        let ctx = 1000 + rounds;
        let done = serve(
            &mut s,
            rq(u64::from(ctx) * 10, ctx).sector(P_SECTOR).build(),
            t,
            ms(1),
        );
        s.insert(rq(u64::from(ctx) * 10 + 1, 7).sector(FAR).build(), done);
        let _ = s.dispatch(done);
        s.exit(CtxId(ctx), done + ms(1));
        t = drain(&mut s, done + ms(1)) + ms(100);
    }
    let est = s.est_time();
    assert!(est.exit_no_coop <= 128 || est.exit_prob > 128, "{est:?}");
    // A brand-new, running process is not anticipated any more.
    let done = serve(&mut s, rq(1, P).sector(P_SECTOR).build(), t, ms(1));
    s.insert(rq(2, Q).sector(FAR).build(), done);
    assert_eq!(take(&mut s, done).id.0, 2);
}

/// P reads sequentially `n` times, thinking `think` between reads.
fn reader_with_think(s: &mut Anticipatory, think: Nanos, n: u64) -> Nanos {
    let mut t = ms(0);
    for i in 0..n {
        t = serve(s, rq(100 + i, P).sector(P_SECTOR + 8 * i).build(), t, ms(1));
        if i + 1 < n {
            t += think;
        }
    }
    t
}

#[test]
fn as_does_not_anticipate_process_that_thinks_longer_than_antic_expire() {
    // Rule 7.
    let mut s = Anticipatory::default();
    let t = reader_with_think(&mut s, ms(15), 6);
    assert!(s.ctx_stats(CtxId(P)).unwrap().ttime_mean > ms(6));
    s.insert(rq(2, Q).sector(FAR).build(), t);
    assert_eq!(take(&mut s, t).id.0, 2);
}

#[test]
fn as_keeps_waiting_for_far_request_from_thinking_process() {
    // The converse of rules 4 and 7: P thinks 1 ms between reads; far requests from others
    // do not end the wait, P's next read does, and it is served before them. P's mean is
    // (total + 128) / samples jiffies: 5, 3, 2, 2, 2 after each sample.
    let mut s = Anticipatory::default();
    let t = reader_with_think(&mut s, ms(1), 6);
    let p = s.ctx_stats(CtxId(P)).unwrap();
    assert_eq!(p.ttime_mean, ms(2));
    s.insert(rq(2, Q).sector(FAR).build(), t);
    assert_eq!(s.dispatch(t), Dispatch::Idle { until: t + ms(6) });
    s.insert(rq(3, 3).sector(FAR + 1_000_000).build(), t + ms(1));
    assert_eq!(s.antic_state(), AnticState::WaitNext);
    assert_eq!(s.dispatch(t + ms(1)), Dispatch::Idle { until: t + ms(6) });
    s.insert(rq(4, P).sector(P_SECTOR + 8 * 6).build(), t + ms(1));
    assert_eq!(take(&mut s, t + ms(1)).id.0, 4);
}

// ----- jiffies: 2.6.32 keeps every AS time in ticks of 1/HZ s -----

/// P reads at `P_SECTOR`, its read completing at `first_done`, then reads the next block at
/// `second_at`, which completes 1 ms later. Returns the scheduler and that completion time.
fn young_reader(first_done: Nanos, second_at: Nanos) -> (Anticipatory, Nanos) {
    let mut s = Anticipatory::default();
    s.insert(rq(1, P).sector(P_SECTOR).build(), ms(0));
    let first = take(&mut s, ms(0));
    s.complete(&first, first_done);
    let done = serve(
        &mut s,
        rq(2, P).sector(P_SECTOR + 8).build(),
        second_at,
        ms(1),
    );
    (s, done)
}

#[test]
fn as_update_thinktime_bias_refuses_a_young_process_whose_first_think_time_is_3_jiffies() {
    // as_update_thinktime (2.6.32): samples = 32 and total = 32 * ttime after the first
    // sample, mean = (total + 128) / samples = ttime + 4 jiffies. A first think time of 3 ms
    // gives 7 > antic_expire (6): AS does not anticipate P and serves Q's far read at once.
    let (mut s, done) = young_reader(ms(1), ms(4));
    let p = s.ctx_stats(CtxId(P)).unwrap();
    assert_eq!((p.ttime_samples, p.ttime_mean), (32, ms(7)));
    s.insert(rq(3, Q).sector(FAR).build(), done);
    assert_eq!(take(&mut s, done).id.0, 3);

    // 2 ms gives exactly 6, not above antic_expire: anticipate.
    let (mut s, done) = young_reader(ms(1), ms(3));
    assert_eq!(s.ctx_stats(CtxId(P)).unwrap().ttime_mean, ms(6));
    s.insert(rq(3, Q).sector(FAR).build(), done);
    assert_eq!(
        s.dispatch(done),
        Dispatch::Idle {
            until: done + ms(6)
        }
    );
}

#[test]
fn as_update_iohist_think_time_is_a_difference_of_tick_counts() {
    // as_update_iohist (2.6.32): thinktime = jiffies - last_end_request. 0.2 ms across a tick
    // is 1 jiffy (mean 1 + 4), 0.8 ms within one tick is 0 (mean 0 + 4).
    let (s, _) = young_reader(us(1_900), us(2_100));
    assert_eq!(s.ctx_stats(CtxId(P)).unwrap().ttime_mean, ms(5));
    let (s, _) = young_reader(us(1_100), us(1_900));
    assert_eq!(s.ctx_stats(CtxId(P)).unwrap().ttime_mean, ms(4));
}

#[test]
fn as_antic_waitnext_timer_fires_antic_expire_jiffies_after_the_completion_tick() {
    // as_completed_request sets antic_start = jiffies; as_antic_waitnext arms the timer for
    // antic_start + antic_expire: a completion at 5.5 ms (tick 5) waits until 11 ms, 5.5 ms.
    let mut s = p_served_then_q(Anticipatory::default(), us(5_500), us(5_500));
    assert_eq!(s.dispatch(us(5_500)), Dispatch::Idle { until: ms(11) });
    assert_eq!(
        s.dispatch(ms(11) - Nanos(1)),
        Dispatch::Idle { until: ms(11) }
    );
    assert_eq!(take(&mut s, ms(11)).id.0, 2);
}

#[test]
fn as_close_req_window_widens_per_elapsed_jiffy_not_per_elapsed_ms() {
    // as_close_req (2.6.32): delay = jiffies - antic_start, delta = 8192 << delay. P's read
    // completes at 5.9 ms (tick 5); a read 10,000 sectors ahead at 5.95 ms (same tick) is not
    // close, the same at 6.1 ms (0.2 ms later, next tick) is.
    let at_close = |arrival: Nanos| {
        let mut s = Anticipatory::default();
        s.insert(rq(1, P).sector(P_SECTOR).build(), ms(0));
        let first = take(&mut s, ms(0));
        s.complete(&first, us(5_900));
        s.insert(rq(2, Q).sector(FAR).build(), us(5_900));
        assert_eq!(s.dispatch(us(5_900)), Dispatch::Idle { until: ms(11) });
        s.insert(rq(3, 3).sector(P_SECTOR + 8 + 10_000).build(), arrival);
        s.antic_state()
    };
    assert_eq!(at_close(us(5_950)), AnticState::WaitNext);
    assert_eq!(at_close(us(6_100)), AnticState::Finished);
}

#[test]
fn as_defaults_are_fractions_of_hz_and_ms_become_whole_jiffies() {
    // as_init_queue (2.6.32): HZ/8, HZ/4, HZ/2, HZ/8, HZ/150 (at least 1); write_batch_count
    // = batch_expire[ASYNC] / 10 (at least 2); as_var_store: msecs_to_jiffies, rounding up.
    let mut set = Settings::new();
    set.set("hz", 250);
    let c = Config::from_settings(&set).unwrap();
    assert_eq!(c.jiffy(), ms(4));
    assert_eq!(
        (
            c.read_expire,
            c.write_expire,
            c.read_batch_expire,
            c.write_batch_expire,
            c.antic_expire
        ),
        (ms(124), ms(248), ms(500), ms(124), ms(4))
    );
    assert_eq!(Anticipatory::new(c).write_batch_count(), 3);
    set.set("antic_expire", 6);
    let mut s = Anticipatory::from_settings(&set).unwrap();
    assert_eq!(s.config().antic_expire, ms(8), "6 ms is 1.5 jiffies: 2");
    s.set_tunable("read_expire", 1).unwrap();
    assert_eq!(s.config().read_expire, ms(4));
    assert!(s.set_tunable("hz", 100).is_err(), "CONFIG_HZ is build time");
    // At HZ = 250 a completion at 5 ms falls in tick 1 (4 ms): the timer fires at 12 ms.
    s.insert(rq(1, P).sector(P_SECTOR).build(), ms(0));
    let first = take(&mut s, ms(0));
    s.complete(&first, ms(5));
    s.insert(rq(2, Q).sector(FAR).build(), ms(5));
    assert_eq!(s.dispatch(ms(5)), Dispatch::Idle { until: ms(12) });
}

// ----- the timer and process exit -----

#[test]
fn as_anticipation_ends_at_antic_expire_after_the_completion_and_the_queue_resumes() {
    let mut s = anticipating_p();
    assert_eq!(s.next_timer(), Some(ms(11)));
    assert_eq!(
        s.dispatch(ms(11) - Nanos(1)),
        Dispatch::Idle { until: ms(11) }
    );
    let r = take(&mut s, ms(11));
    assert_eq!(r.id.0, 2);
    assert_eq!(s.antic_state(), AnticState::Off);
    // P had no history: the timeout counts as "a waited-on process went away".
    assert_eq!(s.est_time().exit_prob, 32);
    assert_eq!(s.est_time().exit_no_coop, 0, "P is still running");
}

#[test]
fn as_timer_runs_lazily_on_insert_complete_and_exit_too() {
    // Whatever call comes first after the deadline runs the timeout.
    let mut s = anticipating_p();
    s.insert(rq(3, 3).sector(FAR + 100_000_000).build(), ms(12));
    assert_eq!(s.antic_state(), AnticState::Finished);
    assert_eq!(s.est_time().exit_prob, 32);

    let mut s = anticipating_p();
    s.exit(CtxId(9), ms(11));
    assert_eq!(s.antic_state(), AnticState::Finished);
}

#[test]
fn as_idles_the_disk_for_antic_expire_in_the_harness() {
    // Same story on the shared harness: P's read 0..5 ms, Q's far read waits until 11 ms.
    let mut h = Harness::new(Anticipatory::default(), 1, |_| ms(5));
    h.submit(rq(1, P).sector(P_SECTOR));
    h.submit(rq(2, Q).sector(FAR).at(ms(1)));
    let out = h.run();
    assert_eq!(out.idles, vec![(ms(5), ms(11))]);
    assert_eq!(out.of(2).dispatched, ms(11));
}

#[test]
fn as_waits_for_exited_process_until_the_timer_then_learns_from_it() {
    // P exits during anticipation; with no evidence yet that exits go unrescued, AS keeps
    // waiting (a cooperating process may pick up where P left) until the timer, which then
    // records both that the anticipated process went away and that nobody took over.
    let mut s = anticipating_p();
    s.exit(CtxId(P), ms(7));
    s.insert(rq(3, 3).sector(FAR + 1_000_000).build(), ms(8));
    assert_eq!(s.antic_state(), AnticState::WaitNext);
    assert_eq!(s.dispatch(ms(8)), Dispatch::Idle { until: ms(11) });
    let r = take(&mut s, ms(11));
    assert_eq!(r.id.0, 2);
    let est = s.est_time();
    // Rule 5 bumped exit_prob when it looked at the exited P (no samples) on Q's and 3's
    // arrival and on each dispatch, then the timeout: 32, 60, 84, 105.
    assert!(est.exit_prob >= 32, "{est:?}");
    assert_eq!(est.exit_no_coop, 32);
    // Once anticipation moved on, AS forgets the exited process.
    assert!(s.ctx_stats(CtxId(P)).is_none());
}

#[test]
fn as_close_request_after_exit_counts_as_cooperation() {
    // An exited process rescued by a close request from another: exit_no_coop decays.
    let mut s = anticipating_p();
    // Teach exit_no_coop something first.
    let mut s2 = anticipating_p();
    s2.exit(CtxId(P), ms(7));
    let _ = take(&mut s2, ms(11));
    assert_eq!(s2.est_time().exit_no_coop, 32);
    s2.complete(&rq(2, Q).sector(FAR).build(), ms(12));
    let done = serve(&mut s2, rq(5, 5).sector(P_SECTOR).build(), ms(100), ms(1));
    s2.insert(rq(6, 6).sector(FAR).build(), done);
    assert!(matches!(s2.dispatch(done), Dispatch::Idle { .. }));
    s2.exit(CtxId(5), done + ms(1));
    s2.insert(rq(7, 7).sector(P_SECTOR + 100).build(), done + ms(2));
    assert_eq!(s2.antic_state(), AnticState::Finished);
    assert_eq!(s2.est_time().exit_no_coop, 28, "32 * 7 / 8");

    s.exit(CtxId(P), ms(7));
    s.insert(rq(3, 3).sector(P_SECTOR + 100).build(), ms(8));
    assert_eq!(s.antic_state(), AnticState::Finished);
    assert_eq!(s.est_time().exit_no_coop, 0);
}

// ----- batches -----

#[test]
fn as_switches_batches_only_after_the_old_batch_completes() {
    let cfg = Config {
        read_batch_expire: ms(10),
        ..no_antic()
    };
    let mut s = Anticipatory::new(cfg);
    // Read 4 arrives before read 3: the read FIFO head differs from the elevator order.
    for i in [0, 1, 2, 4, 3] {
        s.insert(rq(i, P).sector(1000 * i).build(), ms(0));
    }
    s.insert(rq(10, Q).sector(9_000_000).write().build(), ms(0));
    let r0 = take(&mut s, ms(0));
    assert_eq!((r0.id.0, s.batch()), (0, BatchDir::Sync));
    s.complete(&r0, ms(1)); // the read batch clock starts: expires at 11 ms
    let r1 = take(&mut s, ms(1));
    let r2 = take(&mut s, ms(1));
    s.complete(&r1, ms(5));
    // The read batch has expired with writes waiting, but r2 is still on the device.
    assert_eq!(s.dispatch(ms(12)), Dispatch::Empty);
    assert_eq!(s.batch(), BatchDir::Async);
    assert_eq!(s.dispatch(ms(13)), Dispatch::Empty);
    s.complete(&r2, ms(14));
    let w = take(&mut s, ms(14));
    assert_eq!(w.id.0, 10);
    // No more writes: back to reads, again only once the write has completed.
    assert_eq!(s.dispatch(ms(14)), Dispatch::Empty);
    assert_eq!(s.batch(), BatchDir::Sync);
    s.complete(&w, ms(20));
    assert_eq!(
        take(&mut s, ms(20)).id.0,
        3,
        "after the wait, the read batch resumes in elevator order"
    );
}

/// 2.6.32 `as_batch_expired` is false while `new_batch` is set: a read batch's clock starts
/// when its first read completes (`as_completed_request`), and until then the batch cannot
/// expire. Its first read takes 15 ms, longer than `read_batch_expire` (10 ms); 12 ms in, with
/// a write waiting, AS still serves the next read rather than switching to writes.
#[test]
fn as_batch_expired_keeps_a_new_read_batch_until_its_first_read_completes() {
    let cfg = Config {
        read_batch_expire: ms(10),
        write_batch_expire: ms(5),
        ..no_antic()
    };
    let mut s = Anticipatory::new(cfg);
    s.insert(rq(10, Q).sector(9_000_000).write().build(), ms(0));
    s.insert(rq(11, Q).sector(9_001_000).write().build(), ms(0));
    let w = take(&mut s, ms(0));
    for i in 0..3 {
        s.insert(rq(i, P).sector(1000 * i).build(), ms(1));
    }
    s.complete(&w, ms(20));
    assert_eq!(take(&mut s, ms(20)).id.0, 0);
    assert_eq!(s.batch(), BatchDir::Sync);
    assert_eq!(take(&mut s, ms(32)).id.0, 1, "the read batch goes on");
    assert_eq!(s.batch(), BatchDir::Sync);
}

#[test]
fn as_new_write_batch_starts_at_the_write_fifo_head() {
    let mut s = Anticipatory::new(no_antic());
    s.insert(rq(1, P).sector(0).build(), ms(0));
    s.insert(rq(2, Q).sector(9_000_000).write().build(), ms(0));
    s.insert(rq(3, Q).sector(100).write().build(), ms(0));
    let r = take(&mut s, ms(0));
    assert_eq!(r.id.0, 1);
    s.complete(&r, ms(1));
    // Elevator order would take sector 100 first; a new batch starts at the oldest write.
    assert_eq!(take(&mut s, ms(1)).id.0, 2);
    assert_eq!(s.batch(), BatchDir::Async);
}

#[test]
fn as_read_batch_clock_runs_down_only_while_writes_wait() {
    let cfg = Config {
        read_batch_expire: ms(10),
        ..no_antic()
    };
    let mut s = Anticipatory::new(cfg);
    let mut write_at = None;
    for i in 0..80u64 {
        let t = ms(i);
        if i == 50 {
            s.insert(rq(1000, Q).sector(90_000_000).write().build(), t);
        }
        s.insert(rq(i, P).sector(8 * i).build(), t);
        let r = take(&mut s, t);
        if r.id.0 == 1000 {
            write_at = Some(t);
            s.complete(&r, t + us(500));
            let read = take(&mut s, t + us(500));
            s.complete(&read, t + us(600));
        } else {
            s.complete(&r, t + us(500));
        }
    }
    // 50 ms of reads alone did not age the batch; the last read-only dispatch at 49 ms
    // set the expiry to 59 ms, so the write goes at 60 ms.
    assert_eq!(write_at, Some(ms(60)));
}

/// A fresh scheduler after its first read (whose completion runs the initial autotune),
/// then one write batch of writes costing `write_cost` each, with a read waiting from the
/// batch's first dispatch on (or, if `idle`, arriving only after the batch ran dry).
/// Returns the write batch count before, and after the completion of the read that follows.
fn write_batch_tuning(write_cost: Nanos, idle: bool) -> (i64, i64) {
    let mut s = Anticipatory::default();
    let mut t = serve(&mut s, rq(1, P).sector(0).build(), ms(0), ms(1));
    let before = s.write_batch_count();
    let n = if idle { before as u64 / 2 } else { 100 };
    for i in 0..n {
        s.insert(rq(100 + i, Q).sector(10_000_000 + 8 * i).write().build(), t);
    }
    let mut read_inserted = false;
    loop {
        match s.dispatch(t) {
            Dispatch::Request(r) if r.id.0 == 2 => {
                s.complete(&r, t + ms(1));
                return (before, s.write_batch_count());
            }
            Dispatch::Request(r) => {
                assert_eq!(s.batch(), BatchDir::Async);
                if !idle && !read_inserted {
                    s.insert(rq(2, P).sector(16).build(), t);
                    read_inserted = true;
                }
                t += write_cost;
                s.complete(&r, t);
            }
            // AS first waits for P (it might read again), then the writes get their batch.
            Dispatch::Idle { until } => t = until,
            Dispatch::Empty if idle && !read_inserted => {
                // The write batch ran dry before any read arrived.
                t += ms(300);
                s.insert(rq(2, P).sector(16).build(), t);
                read_inserted = true;
            }
            Dispatch::Empty => panic!("nothing to dispatch at {t}"),
        }
    }
}

#[test]
fn as_write_batch_doubles_when_a_full_batch_finishes_well_inside_write_batch_expire() {
    let (before, after) = write_batch_tuning(us(100), false);
    assert_eq!(after, before * 2);
}

#[test]
fn as_write_batch_grows_by_one_when_a_full_batch_finishes_inside_write_batch_expire() {
    let (before, after) = write_batch_tuning(ms(3), false);
    assert_eq!(after, before + 1);
}

#[test]
fn as_write_batch_shrinks_by_one_when_the_batch_overran_write_batch_expire() {
    let (before, after) = write_batch_tuning(ms(200), false);
    assert_eq!(after, before - 1);
}

#[test]
fn as_write_batch_halves_when_the_batch_took_over_three_times_write_batch_expire() {
    let (before, after) = write_batch_tuning(ms(400), false);
    assert_eq!(after, before / 2);
}

/// 2.6.32 `update_write_batch` halves only past three times `write_batch_expire`
/// (`write_time > batch * 3`). `write_time` runs from the write batch's start to the first
/// read completion after it: one 374 ms write and a 1 ms read make exactly 375 jiffies, 3 x 125,
/// and the batch shrinks by one.
#[test]
fn as_write_batch_shrinks_by_one_when_the_batch_took_exactly_three_times_write_batch_expire() {
    let (before, after) = write_batch_tuning(ms(374), false);
    assert!(
        before > 2,
        "{before}: halving and shrinking by one must differ"
    );
    assert_eq!(after, before - 1);
    let (before, after) = write_batch_tuning(ms(375), false);
    assert_eq!(after, before / 2, "one jiffy more halves it");
}

/// 2.6.32 `as_dispatch_request` marks a write batch idled (so `update_write_batch` leaves
/// it alone) only when no read is waiting. A batch that used up its whole count (24 writes of
/// 5.3 ms, 127 ms) with a read waiting since its first write overran `write_batch_expire`
/// (125 ms) and shrinks by one.
#[test]
fn as_write_batch_that_used_its_count_with_a_read_waiting_is_not_idled() {
    let (before, after) = write_batch_tuning(us(5300), false);
    assert_eq!(before, 24);
    assert_eq!(after, before - 1);
}

#[test]
fn as_write_batch_is_not_shrunk_for_a_batch_that_went_idle() {
    let (before, after) = write_batch_tuning(ms(200), true);
    assert_eq!(after, before);
}

#[test]
fn as_write_batch_starts_at_a_tenth_of_write_batch_expire_in_ms() {
    let mut set = Settings::new();
    set.set("write_batch_expire", 300);
    assert_eq!(
        Anticipatory::from_settings(&set)
            .unwrap()
            .write_batch_count(),
        30
    );
    set.set("write_batch_expire", 5);
    assert_eq!(
        Anticipatory::from_settings(&set)
            .unwrap()
            .write_batch_count(),
        2
    );
}

#[test]
fn as_does_not_anticipate_after_an_async_write() {
    let cfg = Config {
        read_batch_expire: ms(10),
        ..Config::default()
    };
    let mut s = Anticipatory::new(cfg);
    s.insert(rq(1, Q).sector(5_000_000).write().build(), ms(0));
    let w = take(&mut s, ms(0));
    s.complete(&w, ms(1));
    s.insert(rq(2, P).sector(FAR).build(), ms(1));
    assert_eq!(take(&mut s, ms(1)).id.0, 2);
    assert_eq!(s.anticipated(), Some(CtxId(P)));
}

// ----- FIFO expiry -----

#[test]
fn as_serves_expired_reads_but_at_most_one_per_read_expire_interval() {
    // P streams dependent reads at 50M+ (think 0.5 ms); Q's and R's reads sit behind the
    // head, out of the elevator's way, from time 0. Anticipation keeps serving P until the
    // FIFO check finds Q expired; R, expired too, waits for the next check.
    let mut s = Anticipatory::default();
    let p = Job {
        ctx: P,
        start: ms(0),
        steps: (0..400).map(|i| Step::read(us(500), FAR + 8 * i)).collect(),
    };
    let q = Job {
        ctx: Q,
        start: ms(0),
        steps: vec![Step::read(Nanos::ZERO, 10_000_000)],
    };
    let r = Job {
        ctx: 3,
        start: ms(0),
        steps: vec![Step::read(Nanos::ZERO, 0)],
    };
    let out = as_closed_loop::run(&mut s, vec![p, q, r], 1, |_| ms(1));
    let q_at = out.of_ctx(Q)[0].dispatched;
    let r_at = out.of_ctx(3)[0].dispatched;
    assert!(q_at > ms(125) && q_at <= ms(252), "Q served at {q_at}");
    assert!(
        r_at >= q_at + ms(125),
        "R at {r_at}, one check after Q at {q_at}"
    );
    assert!(
        r_at <= q_at + ms(130),
        "R at {r_at}, within the next check after {q_at}"
    );
}

#[test]
fn as_read_expire_zero_checks_the_fifo_every_time() {
    let mut set = Settings::new();
    set.set("read_expire", 0);
    let mut s = Anticipatory::from_settings(&set).unwrap();
    s.insert(rq(1, P).sector(P_SECTOR).build(), ms(0));
    let first = take(&mut s, ms(0));
    s.insert(rq(2, Q).sector(FAR).build(), ms(1));
    s.insert(rq(3, 3).sector(P_SECTOR + 16).build(), ms(1));
    s.complete(&first, ms(2));
    // Q is the FIFO head and expired (deadline = arrival): it goes before the close request.
    assert_eq!(take(&mut s, ms(2)).id.0, 2);
}

// ----- elevator order -----

/// AS without anticipation once P's 8-sector read at `head` has completed at 1 ms, with Q's
/// request 2 at `q` and a third process's request 3 at `r` queued while it was on the device
/// (the head now at `head + 8`).
fn after_a_read_at(head: u64, q: u64, r: u64) -> Anticipatory {
    let mut s = Anticipatory::new(no_antic());
    s.insert(rq(1, P).sector(head).build(), ms(0));
    let first = take(&mut s, ms(0));
    s.insert(rq(2, Q).sector(q).build(), ms(0));
    s.insert(rq(3, 3).sector(r).build(), ms(0));
    s.complete(&first, ms(1));
    s
}

#[test]
fn as_prefers_a_short_backward_seek_at_twice_its_cost() {
    let mut s = after_a_read_at(100_000, 100_008 + 3_000, 100_008 - 1_000);
    assert_eq!(take(&mut s, ms(1)).id.0, 3, "2 * 1000 < 3000");

    let mut s = after_a_read_at(100_000, 100_008 + 1_500, 100_008 - 1_000);
    assert_eq!(take(&mut s, ms(1)).id.0, 2, "2 * 1000 > 1500");
}

/// 2.6.32 `as_choose_req`: a backward seek is weighed (at twice its distance) as far back as
/// `MAXBACK` (1024 * 1024 sectors): 1,000,000 sectors back beats 2,500,000 ahead.
#[test]
fn as_seeks_back_as_far_as_maxback() {
    let mut s = after_a_read_at(5_000_000, 5_000_008 + 2_500_000, 5_000_008 - 1_000_000);
    assert_eq!(take(&mut s, ms(1)).id.0, 3, "2 * 1,000,000 < 2,500,000");
}

/// 2.6.32 `as_choose_req`: at equal weighted distance (2000 ahead, 1000 back at twice the
/// cost) the request with the higher sector wins.
#[test]
fn as_choose_req_breaks_a_distance_tie_for_the_higher_sector() {
    let mut s = after_a_read_at(100_000, 100_008 - 1_000, 100_008 + 2_000);
    assert_eq!(
        take(&mut s, ms(1)).id.0,
        3,
        "2 * 1000 == 2000: the higher sector"
    );
}

#[test]
fn as_never_seeks_back_beyond_maxback() {
    let mut s = after_a_read_at(5_000_000, 90_000_000, 5_000_000 - 1_100_000);
    assert_eq!(
        take(&mut s, ms(1)).id.0,
        2,
        "1.1M sectors back is beyond MAXBACK"
    );
    s.insert(rq(4, 4).sector(10).build(), ms(1));
    // Both behind the head beyond MAXBACK: the lowest sector starts the next sweep.
    assert_eq!(take(&mut s, ms(1)).id.0, 4);
}

// ----- merging -----

#[test]
fn as_merges_adjacent_requests_up_to_128_kib() {
    let mut s = Anticipatory::default();
    s.insert(rq(1, P).sector(1000).sectors(8).build(), ms(0));
    s.insert(rq(2, Q).sector(5000).sectors(8).write().build(), ms(0));
    // Back merge.
    let id = s.try_merge(
        &rq(3, P).sector(1008).sectors(8).build(),
        DEFAULT_MERGE_SECTORS,
        ms(0),
    );
    assert_eq!(id.map(|i| i.0), Some(1));
    // Front merge.
    let id = s.try_merge(
        &rq(4, P).sector(992).sectors(8).build(),
        DEFAULT_MERGE_SECTORS,
        ms(0),
    );
    assert_eq!(id.map(|i| i.0), Some(1));
    // Reads do not merge with writes.
    assert_eq!(
        s.try_merge(&rq(5, P).sector(5008).build(), DEFAULT_MERGE_SECTORS, ms(0)),
        None
    );
    // A sync write may grow an async write (the merge hash is keyed by position only).
    let id = s.try_merge(
        &rq(8, P).sector(5008).sync_write().build(),
        DEFAULT_MERGE_SECTORS,
        ms(0),
    );
    assert_eq!(id.map(|i| i.0), Some(2));
    // Not beyond 256 sectors.
    assert_eq!(
        s.try_merge(
            &rq(6, P).sector(1016).sectors(240).build(),
            DEFAULT_MERGE_SECTORS,
            ms(0)
        ),
        None
    );
    let big = s.try_merge(
        &rq(7, P).sector(1016).sectors(232).build(),
        DEFAULT_MERGE_SECTORS,
        ms(0),
    );
    assert_eq!(big.map(|i| i.0), Some(1));
    let r = take(&mut s, ms(0));
    assert_eq!((r.id.0, r.sector, r.sectors), (1, 992, 256));
}

#[test]
fn as_merged_requests_complete_with_their_parent_in_the_harness() {
    let mut h = Harness::new(Anticipatory::default(), 1, |_| ms(2));
    h.submit(rq(1, P).sector(0));
    for i in 0..6 {
        h.submit(rq(10 + i, Q).sector(8_000 + 8 * i).write().at(ms(1)));
    }
    let out = h.run();
    assert_eq!(out.dispatch_order(), vec![1, 10]);
    assert_eq!(out.of(10).rq.sectors, 48);
}

#[test]
fn as_dispatches_an_alias_at_once() {
    // Two queued requests may not start at the same sector: the older goes to the device.
    let mut s = Anticipatory::default();
    s.insert(rq(1, P).sector(700).build(), ms(0));
    s.insert(rq(2, Q).sector(700).sectors(16).build(), ms(0));
    assert_eq!(s.queued(), 2);
    assert_eq!(take(&mut s, ms(0)).id.0, 1);
}

#[test]
fn as_drains_the_queue_before_a_flush() {
    use crate::request::Op;
    let mut s = Anticipatory::default();
    s.insert(rq(1, P).sector(900).build(), ms(0));
    s.insert(rq(2, P).sector(100).build(), ms(0));
    s.insert(rq(3, Q).sector(500).write().build(), ms(0));
    let mut flush = rq(4, Q).build();
    flush.op = Op::Flush;
    s.insert(flush, ms(0));
    let order: Vec<u64> = (0..4).map(|_| take(&mut s, ms(0)).id.0).collect();
    assert_eq!(order.last(), Some(&4));
    assert_eq!(s.queued(), 0);
}

// ----- tunables -----

#[test]
fn as_tunables_have_the_2_6_32_defaults_in_ms() {
    let c = Config::default();
    assert_eq!(c.read_expire, ms(125));
    assert_eq!(c.write_expire, ms(250));
    assert_eq!(c.read_batch_expire, ms(500));
    assert_eq!(c.write_batch_expire, ms(125));
    assert_eq!(c.antic_expire, ms(6));
    let mut s = Anticipatory::default();
    s.set_tunable("antic_expire", 10).unwrap();
    assert_eq!(s.config().antic_expire, ms(10));
    assert!(s.set_tunable("antic_expire", -1).is_err());
    assert!(s.set_tunable("slice_idle", 1).is_err());
}

#[test]
fn as_with_antic_expire_zero_never_idles() {
    let mut s = Anticipatory::new(no_antic());
    s.insert(rq(1, P).sector(P_SECTOR).build(), ms(0));
    s.insert(rq(2, Q).sector(FAR).build(), ms(0));
    assert_eq!(take(&mut s, ms(0)).id.0, 1);
    assert_eq!(
        take(&mut s, ms(0)).id.0,
        2,
        "no one-at-a-time without anticipation"
    );
}

/// Each sysfs file of 2.6.32 AS written at run time takes effect (in whole jiffies, HZ 1000).
#[test]
fn as_set_tunable_sets_each_batch_and_fifo_expiry() {
    let mut s = Anticipatory::default();
    for (name, v) in [
        ("read_expire", 90),
        ("write_expire", 190),
        ("read_batch_expire", 250),
        ("write_batch_expire", 60),
        ("antic_expire", 4),
    ] {
        s.set_tunable(name, v).unwrap();
    }
    let c = s.config();
    assert_eq!(
        (
            c.read_expire,
            c.write_expire,
            c.read_batch_expire,
            c.write_batch_expire,
            c.antic_expire
        ),
        (ms(90), ms(190), ms(250), ms(60), ms(4))
    );
}

// ----- survivors of the third sample (shard 7/9) -----

/// 2.6.32 `as_dispatch_request` counts each request it hands to the driver
/// (`ad->nr_dispatched`), `as_completed_request` counts it down; a new batch waits for the
/// count to reach 0.
#[test]
fn as_counts_dispatched_requests_until_they_complete() {
    let mut s = Anticipatory::new(no_antic());
    s.insert(rq(1, P).sector(0).build(), ms(0));
    s.insert(rq(2, P).sector(8).build(), ms(0));
    let a = take(&mut s, ms(0));
    let b = take(&mut s, ms(0));
    assert_eq!(s.in_flight(), 2);
    s.complete(&a, ms(1));
    assert_eq!(s.in_flight(), 1);
    s.complete(&b, ms(2));
    assert_eq!(s.in_flight(), 0);
}

/// A request without data is never merged into a queued one, even where one ends at its
/// sector.
#[test]
fn as_does_not_merge_an_empty_request() {
    let mut s = Anticipatory::default();
    s.insert(rq(1, P).sector(1000).sectors(8).build(), ms(0));
    assert_eq!(
        s.try_merge(
            &rq(2, P).sector(1008).sectors(0).build(),
            DEFAULT_MERGE_SECTORS,
            ms(0)
        ),
        None
    );
}

/// 2.6.32 `as_dispatch_request` checks the FIFO of the running batch at each dispatch
/// (`as_fifo_expired`, at most once per `fifo_expire`): a write batch going up the disk
/// serves an expired write out of sector order. With `write_expire` 100 ms the far write,
/// oldest after the batch's first, is not yet expired at the 100 ms check (`time_after`) and
/// goes at the 200 ms one, not last in sector order (about 401 ms).
#[test]
fn as_fifo_expired_serves_an_expired_write_first_within_a_write_batch() {
    let cfg = Config {
        write_expire: ms(100),
        ..no_antic()
    };
    let mut h = Harness::new(Anticipatory::new(cfg), 1, |_| ms(1));
    h.submit(rq(0, Q).sector(0).write());
    h.submit(rq(1, Q).sector(FAR).write());
    for i in 2..400u64 {
        // Not adjacent, so none merges.
        h.submit(rq(i, Q).sector(i * 16).write());
    }
    let out = h.run();
    assert_eq!(out.of(1).dispatched, ms(200));
}

// ----- survivors of the fourth sample (shard 2/9) -----

/// 2.6.32 `as_can_break_anticipation`, rule 5: a wait for an exited process ends only once
/// `exit_no_coop` is above half (> 128 of 256); at exactly 128 AS still waits. A timeout after
/// an exit raises it (`as_antic_timeout`), a close read of another process that rescues the
/// wait lowers it (rule 4): up, up, down, up, down, up, up, up from 0 lands on 128 exactly
/// (32, 60, 52, 77, 67, 90, 110, 128).
#[test]
fn as_still_waits_for_an_exited_process_at_exit_no_coop_exactly_half() {
    let mut s = Anticipatory::default();
    let mut t = ms(0);
    let steps = [true, true, false, true, false, true, true, true];
    for (k, up) in steps.into_iter().enumerate() {
        let ctx = 1 + k as u32;
        let done = anticipate_thinking(&mut s, ctx, t);
        s.exit(CtxId(ctx), done + ms(1));
        if !up {
            // A read of another process right where the exited one left the head.
            let base = 10_000_000 + u64::from(ctx) * 1_000_000;
            s.insert(
                rq(5000 + k as u64, 300 + ctx).sector(base + 16).build(),
                done + ms(2),
            );
            assert_eq!(s.antic_state(), AnticState::Finished, "step {k}: rescued");
        }
        t = drain(&mut s, done + ms(2)) + ms(100);
    }
    assert_eq!(s.est_time().exit_no_coop, 128);
    let done = anticipate_thinking(&mut s, 20, t);
    s.exit(CtxId(20), done + ms(1));
    s.insert(rq(6000, 250).sector(FAR + 5_000).build(), done + ms(2));
    assert_eq!(s.antic_state(), AnticState::WaitNext);
}
/// 2.6.32 `update_write_batch` leaves the count alone when a full batch took exactly
/// `write_batch_expire`: it grows only for `write_time < batch` and shrinks only for
/// `write_time > batch`. 24 writes of 5.18 ms and the read after them make 125 jiffies;
/// 5.16 ms make 124 (one more write next time), 5.21 ms 126 (one fewer).
#[test]
fn as_write_batch_keeps_its_count_when_the_batch_took_exactly_write_batch_expire() {
    let (before, after) = write_batch_tuning(us(5180), false);
    assert_eq!(after, before);
    assert_eq!(write_batch_tuning(us(5160), false).1, before + 1);
    assert_eq!(write_batch_tuning(us(5210), false).1, before - 1);
}
