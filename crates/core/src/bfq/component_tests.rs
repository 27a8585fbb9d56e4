//! Hand-built situations for BFQ's components (weight raising, injection, queue merging),
//! each pinned to the quantities the kernel function it names computes (mainline
//! bfq-iosched.c, Linux 6.9): raising coefficients and durations, the soft real-time
//! bound, the burst list, inject limits and baselines, merge chains and saved state.

use super::pos_tree::Lookup;
use super::tests::cfg_with;
use super::weight_raising::{RT_MAX_TIME, WR_COEFF};
use super::*;
use crate::harness::rq;
use crate::request::IoClass;

/// A new sync best-effort queue of the root group, created at `t` (no process, not busy).
fn queue(s: &mut Bfq, t: Tick) -> usize {
    s.new_queue(GroupId::ROOT, true, IoPrio::default(), t)
}

/// Raising duration with the initial peak-rate estimate of a rotational disk.
const WR_DURATION: Tick = 10_500 * MS;

/// ctx 1's queue, created and raised as interactive by one read at t = 0, still queued.
fn raised() -> (Bfq, usize) {
    let mut s = Bfq::new(Config::default());
    s.insert(rq(1, 1).sector(0).build(), Nanos::ZERO);
    let q = s.bics[&CtxId(1)].sync_q.unwrap();
    let qq = &s.queues[q];
    assert_eq!((qq.wr_coeff, qq.wr_cur_max_time), (WR_COEFF, WR_DURATION));
    assert_eq!((qq.last_wr_start_finish, s.wr_busy_queues), (0, 1));
    (s, q)
}

fn weight(s: &Bfq, q: usize) -> u64 {
    s.wf.entities[s.queues[q].eid].weight
}

// ----- weight raising -----

#[test]
fn bfq_wr_duration_scales_the_reference_duration_by_the_peak_rate_within_3_to_25_s() {
    // bfq_wr_duration: rate_dur_prod / peak_rate, clamped to 3..25 s. The estimate starts
    // at 2/3 of the reference rate: 14000 x 7000 / 9333 ms on a disk, 33000 x 2500 / 22000
    // on flash.
    let mut s = Bfq::new(Config::default());
    assert_eq!(s.wr_duration(), WR_DURATION);
    assert_eq!(
        Bfq::new(cfg_with(&[("rotational", 0)])).wr_duration(),
        3_750 * MS
    );
    s.peak.rate = 19_600;
    assert_eq!(s.wr_duration(), 5_000 * MS);
    s.peak.rate = 98_000;
    assert_eq!(s.wr_duration(), 3_000 * MS, "1 s, raised to 3 s");
    s.peak.rate = 980;
    assert_eq!(s.wr_duration(), 25_000 * MS, "100 s, cut to 25 s");
}

#[test]
fn bfq_update_wr_data_ends_interactive_raising_once_its_duration_has_passed() {
    // bfq_update_wr_data: raising ends when jiffies is after last_wr_start_finish +
    // wr_cur_max_time; bfq_bfqq_end_wr sets the coefficient to 1 (one raised busy queue
    // less) and the weight goes back to 40 at once, in the tree's weight sum too.
    let (mut s, q) = raised();
    assert_eq!(s.wf.sds[0].trees[1].wsum, 1200);
    s.update_wr_data(q, WR_DURATION);
    assert_eq!((s.queues[q].wr_coeff, weight(&s, q)), (30, 1200));
    s.update_wr_data(q, WR_DURATION + 1);
    let qq = &s.queues[q];
    assert_eq!((qq.wr_coeff, qq.wr_cur_max_time), (1, 0));
    assert_eq!(qq.last_wr_start_finish, WR_DURATION + 1);
    assert_eq!(qq.soft_rt_next_start, WR_DURATION + 1);
    assert_eq!((s.wr_busy_queues, weight(&s, q)), (0, 40));
    assert_eq!(s.wf.sds[0].trees[1].wsum, 40);
}

#[test]
fn bfq_update_wr_data_ends_interactive_raising_after_max_service_from_wr() {
    // bfq_update_wr_data: an interactive queue that received more than max_service_from_wr
    // (120000 sectors) while raised loses raising; a soft real-time one does not.
    let (mut s, q) = raised();
    s.queues[q].service_from_wr = 120_000;
    s.update_wr_data(q, MS);
    assert_eq!(s.queues[q].wr_coeff, 30);
    s.queues[q].service_from_wr = 120_001;
    s.update_wr_data(q, MS);
    assert_eq!((s.queues[q].wr_coeff, s.wr_busy_queues), (1, 0));
    let (mut s, q) = raised();
    let qq = &mut s.queues[q];
    (qq.wr_coeff, qq.wr_cur_max_time, qq.service_from_wr) = (3000, RT_MAX_TIME, 1_000_000);
    s.update_wr_data(q, MS);
    // Still raised, so the new coefficient's weight waits for the next activation or
    // requeue (the kernel's pending `prio_changed`).
    assert_eq!((s.queues[q].wr_coeff, weight(&s, q)), (3000, 1200));
}

#[test]
fn bfq_update_io_seektime_leaves_the_weight_of_a_switch_back_to_interactive_pending() {
    // bfq_update_io_seektime -> switch_back_to_interactive_wr sets entity.prio_changed: the
    // weight changes (120000 -> 1200) only when __bfq_entity_update_weight_prio next runs, at
    // the entity's activation or requeue; bfq_update_wr_data applies it at once only when
    // the queue starts or stops being raised. The recording
    // idle-reader-beside-buffered-writer-and-six-readers logs "WARN: pending prio change"
    // for the shared queue, whose 120000 kept a newly busy soft real-time queue (also
    // 120000) from preempting it (bfq_bfqq_higher_class_or_weight).
    let (mut s, q) = raised();
    let qq = &mut s.queues[q];
    (
        qq.wr_coeff,
        qq.wr_cur_max_time,
        qq.wr_start_at_switch_to_srt,
    ) = (3000, RT_MAX_TIME, 0);
    s.requeue_queue(q, false, 0);
    assert_eq!(weight(&s, q), 120_000);
    s.queues[q].seek_history = u32::MAX;
    s.update_io_seektime(q, &rq(9, 1).sector(1 << 30).build(), MS);
    assert_eq!((s.queues[q].wr_coeff, weight(&s, q)), (30, 120_000));
    s.update_wr_data(q, 2 * MS);
    assert_eq!(
        weight(&s, q),
        120_000,
        "still raised: no change at dispatch"
    );
    s.requeue_queue(q, false, 2 * MS);
    assert_eq!(weight(&s, q), 1200);
    // Raising that ends is applied at the in-service queue's next dispatch.
    s.end_wr(q, 3 * MS);
    assert_eq!(weight(&s, q), 1200);
    s.update_wr_data(q, 3 * MS);
    assert_eq!(weight(&s, q), 40);
}

#[test]
fn bfq_update_wr_data_ends_raising_in_a_large_burst_and_leaves_unraised_queues_alone() {
    // bfq_update_wr_data: a raised queue found in a large burst loses raising at once; a
    // queue that is not raised is not touched (bfq_bfqq_end_wr would move
    // last_wr_start_finish).
    let (mut s, q) = raised();
    s.queues[q].in_large_burst = true;
    s.update_wr_data(q, MS);
    assert_eq!(
        (s.queues[q].wr_coeff, s.queues[q].last_wr_start_finish),
        (1, MS)
    );
    s.update_wr_data(q, 2 * MS);
    assert_eq!(
        s.queues[q].last_wr_start_finish, MS,
        "not raised: untouched"
    );
    let (mut s, q) = raised();
    s.end_wr(q, MS);
    s.queues[q].service_from_wr = 500_000;
    s.queues[q].last_wr_start_finish = 0;
    s.update_wr_data(q, WR_DURATION + MS);
    assert_eq!(s.queues[q].last_wr_start_finish, 0);
}

/// ctx 1's queue raised as soft real-time since `last_start`, having switched from the
/// interactive raising that started at `switch`.
fn soft_rt(last_start: Tick, switch: Tick) -> (Bfq, usize) {
    let (mut s, q) = raised();
    let qq = &mut s.queues[q];
    qq.wr_coeff = 3000;
    qq.wr_cur_max_time = RT_MAX_TIME;
    qq.last_wr_start_finish = last_start;
    qq.wr_start_at_switch_to_srt = switch;
    (s, q)
}

#[test]
fn bfq_update_wr_data_switches_expired_soft_rt_raising_back_to_interactive_raising() {
    // bfq_update_wr_data: soft real-time raising (300 ms) over, the queue goes back to the
    // interactive raising it interrupted if that is still running
    // (switch_back_to_interactive_wr: coefficient 30, the interactive duration from its
    // old start), else raising ends.
    let (mut s, q) = soft_rt(1000 * MS, 500 * MS);
    s.update_wr_data(q, 1300 * MS);
    assert_eq!(s.queues[q].wr_coeff, 3000, "300 ms not passed yet");
    s.update_wr_data(q, 1300 * MS + 1);
    let qq = &s.queues[q];
    assert_eq!((qq.wr_coeff, qq.wr_cur_max_time), (30, WR_DURATION));
    assert_eq!(qq.last_wr_start_finish, 500 * MS);
    assert_eq!((weight(&s, q), s.wr_busy_queues), (1200, 1));
    // The interactive period ended at 500 ms + duration.
    let (mut s, q) = soft_rt(0, 500 * MS);
    s.update_wr_data(q, 500 * MS + WR_DURATION);
    assert_eq!(s.queues[q].wr_coeff, 30);
    let (mut s, q) = soft_rt(0, 500 * MS);
    s.update_wr_data(q, 500 * MS + WR_DURATION + 1);
    assert_eq!((s.queues[q].wr_coeff, weight(&s, q)), (1, 40));
    assert_eq!(
        s.queues[q].soft_rt_next_start, 0,
        "kept after soft real-time raising"
    );
}

#[test]
fn bfq_update_bfqq_wr_on_rq_arrival_starts_interactive_or_soft_rt_raising() {
    // bfq_update_bfqq_wr_on_rq_arrival, a queue not raised that deserves it: interactive,
    // coefficient 30 for the interactive duration, service_from_wr restarted; else soft
    // real-time, 30 x 100 for 300 ms with no interactive period to return to. Either way
    // the budget is cut to 2 x bfq_min_budget (16384 / 32 before autotuning).
    let mut s = Bfq::new(Config::default());
    let q = queue(&mut s, 0);
    let e = s.queues[q].eid;
    s.wf.entities[e].budget = 16_384;
    s.queues[q].service_from_wr = 7;
    s.update_wr_on_rq_arrival(q, 1, true, true, false, false, 5 * MS);
    let qq = &s.queues[q];
    assert_eq!(
        (qq.wr_coeff, qq.wr_cur_max_time, qq.service_from_wr),
        (30, WR_DURATION, 0)
    );
    assert_eq!(s.wf.entities[e].budget, 1024);
    let q = queue(&mut s, 0);
    let e = s.queues[q].eid;
    s.wf.entities[e].budget = 100;
    s.queues[q].service_from_wr = 7;
    s.queues[q].wr_start_at_switch_to_srt = 3;
    s.update_wr_on_rq_arrival(q, 1, true, false, false, true, 5 * MS);
    let qq = &s.queues[q];
    assert_eq!(
        (qq.wr_coeff, qq.wr_cur_max_time, qq.service_from_wr),
        (3000, RT_MAX_TIME, 7)
    );
    assert_eq!(qq.wr_start_at_switch_to_srt, PAST);
    assert_eq!(s.wf.entities[e].budget, 100, "already below 1024");
    // Not deserving: nothing.
    let q = queue(&mut s, 0);
    s.update_wr_on_rq_arrival(q, 1, false, true, false, true, 5 * MS);
    assert_eq!(s.queues[q].wr_coeff, 1);
}

#[test]
fn bfq_update_bfqq_wr_on_rq_arrival_renews_or_stops_raising_of_a_raised_queue() {
    // bfq_update_bfqq_wr_on_rq_arrival, a raised queue: interactive again renews
    // interactive raising; in a large burst it stops; soft real-time switches to (or
    // recharges) soft real-time raising, remembering where the interactive period started.
    let mut s = Bfq::new(Config::default());
    let mk = |s: &mut Bfq, coeff, max| {
        let q = queue(s, 0);
        let qq = &mut s.queues[q];
        (qq.wr_coeff, qq.wr_cur_max_time, qq.last_wr_start_finish) = (coeff, max, 40 * MS);
        qq.wr_start_at_switch_to_srt = 9;
        q
    };
    let q = mk(&mut s, 3000, RT_MAX_TIME);
    s.update_wr_on_rq_arrival(q, 3000, true, true, false, true, 50 * MS);
    let qq = &s.queues[q];
    assert_eq!((qq.wr_coeff, qq.wr_cur_max_time), (30, WR_DURATION));
    let q = mk(&mut s, 30, WR_DURATION);
    s.update_wr_on_rq_arrival(q, 30, true, false, true, true, 50 * MS);
    assert_eq!(s.queues[q].wr_coeff, 1, "in a large burst");
    let q = mk(&mut s, 30, WR_DURATION);
    s.update_wr_on_rq_arrival(q, 30, true, false, false, true, 50 * MS);
    let qq = &s.queues[q];
    assert_eq!((qq.wr_coeff, qq.wr_cur_max_time), (3000, RT_MAX_TIME));
    assert_eq!(
        (qq.wr_start_at_switch_to_srt, qq.last_wr_start_finish),
        (40 * MS, 50 * MS)
    );
    let q = mk(&mut s, 3000, RT_MAX_TIME);
    s.update_wr_on_rq_arrival(q, 3000, true, false, false, true, 50 * MS);
    let qq = &s.queues[q];
    assert_eq!(
        (qq.wr_start_at_switch_to_srt, qq.last_wr_start_finish),
        (9, 50 * MS)
    );
    let q = mk(&mut s, 30, WR_DURATION);
    s.update_wr_on_rq_arrival(q, 30, true, false, false, false, 50 * MS);
    let qq = &s.queues[q];
    assert_eq!(
        (qq.wr_coeff, qq.last_wr_start_finish),
        (30, 40 * MS),
        "nothing"
    );
}

#[test]
fn bfq_bfqq_softrt_next_start_is_the_latest_of_three_bounds() {
    // bfq_bfqq_softrt_next_start: max(soft_rt_next_start, last_idle_bklogged + the time
    // service_from_backlogged takes at 7000 sectors/s, now + slice_idle + 4 jiffies).
    let mut s = Bfq::new(Config::default());
    let q = queue(&mut s, 0);
    let qq = &mut s.queues[q];
    (
        qq.last_idle_bklogged,
        qq.service_from_backlogged,
        qq.soft_rt_next_start,
    ) = (1000 * MS, 3500, 0);
    assert_eq!(s.softrt_next_start(q, 100 * MS), 1500 * MS);
    s.queues[q].soft_rt_next_start = 1600 * MS;
    assert_eq!(s.softrt_next_start(q, 100 * MS), 1600 * MS);
    assert_eq!(s.softrt_next_start(q, 1590 * MS), 1602 * MS);
}

#[test]
fn bfq_set_in_service_queue_moves_soft_rt_raising_forward_by_the_time_not_served() {
    // __bfq_set_in_service_queue: a soft real-time queue set in service after its budget
    // timeout moves last_wr_start_finish forward by the time since that timeout (or to now
    // if the timeout is older than the raising start).
    let shifted = |coeff: u64, max: Tick, timeout: Tick, t: Tick| {
        let mut s = Bfq::new(Config::default());
        let q = queue(&mut s, 0);
        let qq = &mut s.queues[q];
        (qq.wr_coeff, qq.wr_cur_max_time) = (coeff, max);
        (qq.last_wr_start_finish, qq.budget_timeout) = (100 * MS, timeout);
        s.softrt_shift_on_service(q, t);
        s.queues[q].last_wr_start_finish
    };
    assert_eq!(shifted(3000, RT_MAX_TIME, 150 * MS, 200 * MS), 150 * MS);
    assert_eq!(shifted(3000, RT_MAX_TIME, 80 * MS, 200 * MS), 200 * MS);
    assert_eq!(shifted(3000, RT_MAX_TIME, 100 * MS, 200 * MS), 200 * MS);
    assert_eq!(
        shifted(3000, RT_MAX_TIME, 200 * MS, 200 * MS),
        100 * MS,
        "timeout now"
    );
    assert_eq!(
        shifted(3000, RT_MAX_TIME, 50 * MS, 100 * MS),
        100 * MS,
        "started now"
    );
    assert_eq!(
        shifted(30, WR_DURATION, 150 * MS, 200 * MS),
        100 * MS,
        "interactive"
    );
    assert_eq!(
        shifted(1, RT_MAX_TIME, 150 * MS, 200 * MS),
        100 * MS,
        "not raised"
    );
}

#[test]
fn bfq_handle_burst_makes_the_eighth_queue_created_within_180_ms_of_the_last_a_large_burst() {
    // bfq_handle_burst, bfq_add_to_burst, bfq_reset_burst_list: queues created within 180
    // ms of the previous one join the burst list; the eighth makes the burst large, marks
    // every member in_large_burst and empties the list; later ones within 180 ms are marked
    // at once; a creation 181 ms after the last starts a new burst (with the new queue as
    // its only member if no queue is busy, else an empty one).
    let mut s = Bfq::new(Config::default());
    let mut qs = Vec::new();
    for i in 0..7 {
        let q = queue(&mut s, i * 180 * MS);
        s.handle_burst(q, i * 180 * MS);
        qs.push(q);
    }
    assert_eq!(
        (s.burst.size, s.burst.list.len(), s.burst.large),
        (7, 7, false)
    );
    assert!(qs
        .iter()
        .all(|&q| s.queues[q].in_burst_list && !s.queues[q].in_large_burst));
    assert_eq!(s.burst.last_ins, 1080 * MS);
    let q7 = queue(&mut s, 1260 * MS);
    s.handle_burst(q7, 1260 * MS);
    qs.push(q7);
    assert!(s.burst.large && s.burst.list.is_empty() && s.burst.size == 8);
    assert!(qs
        .iter()
        .all(|&q| !s.queues[q].in_burst_list && s.queues[q].in_large_burst));
    let q8 = queue(&mut s, 1440 * MS);
    s.handle_burst(q8, 1440 * MS);
    assert!(s.queues[q8].in_large_burst && !s.queues[q8].in_burst_list);
    assert_eq!(s.burst.size, 8);
    // Already in a large burst: ignored (the burst's last insertion does not move).
    s.handle_burst(q8, 1500 * MS);
    assert_eq!(s.burst.last_ins, 1440 * MS);
    let q9 = queue(&mut s, 1621 * MS);
    s.handle_burst(q9, 1621 * MS);
    assert!(!s.burst.large && s.burst.size == 1 && s.burst.list == vec![q9]);
    assert!(s.queues[q9].in_burst_list && !s.queues[q9].in_large_burst);
    // Already in the burst list: ignored.
    s.handle_burst(q9, 3000 * MS);
    assert_eq!(s.burst.last_ins, 1621 * MS);
    // With a queue busy, a new burst starts empty.
    s.busy_queues[1] = 1;
    let q10 = queue(&mut s, 3000 * MS);
    s.handle_burst(q10, 3000 * MS);
    assert!(s.burst.size == 0 && s.burst.list.is_empty());
    assert!(!s.queues[q9].in_burst_list && !s.queues[q10].in_burst_list);
    assert_eq!(s.burst.last_ins, 3000 * MS);
}

#[test]
fn bfq_handle_burst_starts_a_new_burst_for_a_queue_of_another_group() {
    // bfq_handle_burst: a queue whose parent entity differs from the burst's starts a new
    // burst, however soon after the last one it comes; 180 ms after is still soon.
    let mut groups = GroupTree::new();
    let g = groups.add("/a", None).unwrap();
    let mut s = Bfq::with_groups(Config::default(), &groups).unwrap();
    let a = queue(&mut s, 0);
    s.handle_burst(a, 0);
    let b = queue(&mut s, 180 * MS);
    s.handle_burst(b, 180 * MS);
    assert_eq!(s.burst.size, 2);
    let c = s.new_queue(g, true, IoPrio::default(), 200 * MS);
    s.handle_burst(c, 200 * MS);
    assert_eq!((s.burst.size, s.burst.group), (1, g.0));
    assert_eq!(s.burst.list, vec![c]);
    assert!(!s.queues[a].in_burst_list && !s.queues[b].in_burst_list);
    s.burst_list_remove(c);
    assert!(s.burst.list.is_empty() && !s.queues[c].in_burst_list);
}

// ----- injection -----

/// ctx 1's queue in service at t = 0 with its one read in the driver (now empty).
fn in_service(cfg: Config) -> (Bfq, usize) {
    let mut s = Bfq::new(cfg);
    s.insert(rq(1, 1).sector(1000).build(), Nanos::ZERO);
    assert!(matches!(s.dispatch(Nanos::ZERO), Dispatch::Request(_)));
    let q = s.bics[&CtxId(1)].sync_q.unwrap();
    assert_eq!((s.in_service, s.rq_in_driver), (Some(q), 1));
    assert!(s.queues[q].is_empty());
    (s, q)
}

#[test]
fn bfq_add_request_resets_the_inject_limit_a_second_after_its_last_decrease() {
    // bfq_add_request: on a first request, 1 s (or more) after decrease_time_jif,
    // bfq_reset_inject_limit forgets the baseline and the waited request and restarts the
    // limit at 0 for a queue with short think time, 1 otherwise.
    let (mut s, q) = in_service(Config::default());
    let qq = &mut s.queues[q];
    (qq.inject_limit, qq.last_serv_time, qq.has_short_ttime) = (4, 5_000_000, false);
    s.inj.waited_rq = Some(1);
    s.inject_on_first_request(q, 1000 * MS - 1, 1000 * MS - 1);
    assert_eq!(
        (s.queues[q].inject_limit, s.queues[q].last_serv_time),
        (4, 5_000_000)
    );
    assert_eq!(s.inj.waited_rq, Some(1));
    s.inject_on_first_request(q, 1000 * MS, 1000 * MS);
    let qq = &s.queues[q];
    assert_eq!(
        (qq.inject_limit, qq.last_serv_time, qq.decrease_time),
        (1, 0, 1000 * MS)
    );
    assert_eq!(s.inj.waited_rq, None);
    let (mut s, q) = in_service(Config::default());
    s.queues[q].inject_limit = 4;
    s.inject_on_first_request(q, 1500 * MS, 1500 * MS);
    assert_eq!(s.queues[q].inject_limit, 0, "short think time");
}

#[test]
fn bfq_add_request_starts_measuring_only_with_an_empty_drive_or_after_injection() {
    // bfq_add_request: a first request of the in-service queue, at least 10 ms after the
    // limit last decreased, starts a measurement of its total service time
    // (last_empty_occupied_ns, wait_dispatch) if nothing is in the drive, or if a baseline
    // exists and the requests in the drive were injected; an empty drive clears
    // rqs_injected.
    let (mut s, q) = in_service(Config::default());
    s.rq_in_driver = 0;
    s.inj.rqs_injected = true;
    s.inject_on_first_request(q, 10 * MS - 1, 10 * MS - 1);
    assert!(!s.inj.wait_dispatch);
    s.inject_on_first_request(q, 10 * MS, 10 * MS);
    assert!(s.inj.wait_dispatch && !s.inj.rqs_injected);
    assert_eq!(s.inj.last_empty_occupied, 10 * MS);
    let busy_drive = |last_serv: u64, injected: bool| {
        let (mut s, q) = in_service(Config::default());
        s.rq_in_driver = 2;
        s.queues[q].last_serv_time = last_serv;
        s.inj.rqs_injected = injected;
        s.inject_on_first_request(q, 20 * MS, 20 * MS);
        (
            s.inj.wait_dispatch,
            s.inj.rqs_injected,
            s.inj.last_empty_occupied,
        )
    };
    assert_eq!(busy_drive(MS as u64, true), (true, true, 20 * MS));
    assert_eq!(busy_drive(0, true), (false, true, 0));
    assert_eq!(busy_drive(MS as u64, false), (false, false, 0));
    let (mut s, q) = in_service(Config::default());
    s.rq_in_driver = 0;
    s.in_service = None;
    s.inject_on_first_request(q, 20 * MS, 20 * MS);
    assert!(!s.inj.wait_dispatch, "not in service");
}

#[test]
fn bfq_add_request_counts_the_inject_limit_intervals_in_whole_jiffies() {
    // bfq_add_request, first request of a sync queue: the periodic reset waits
    // `time_is_before_eq_jiffies(decrease_time_jif + msecs_to_jiffies(1000))` and the
    // measurement `... + msecs_to_jiffies(10)`, both in jiffies (HZ = 250: 250 and 3 of
    // 4 ms). The recording rate-limited-readers-...-round2 (bfq26503S, real time, created at
    // 56985.494866 s): its third request, 9.996 ms later but 3 jiffies on, started the
    // measurement whose completion gave the limit 1 (bfq_update_inject_limit) and let
    // bfq_choose_bfqq_for_injection inject the be 7 reader at .505093.
    let hz250 = || cfg_with(&[("hz", 250)]);
    let stamp = 2 * MS + 866_000; // jiffy 0 (0-4 ms)
    let measured = |t: Tick| {
        let (mut s, q) = in_service(hz250());
        s.rq_in_driver = 0;
        s.queues[q].decrease_time = stamp;
        s.inject_on_first_request(q, t, t);
        s.inj.wait_dispatch
    };
    assert!(!measured(12 * MS - 1), "9.1 ms, jiffy 2: not yet");
    assert!(
        measured(12 * MS + 862_000),
        "9.996 ms, jiffy 3: 3 jiffies on"
    );
    let reset = |t: Tick| {
        let (mut s, q) = in_service(hz250());
        let qq = &mut s.queues[q];
        (qq.inject_limit, qq.last_serv_time, qq.decrease_time) = (4, 5_000_000, stamp);
        s.inject_on_first_request(q, t, t);
        (s.queues[q].inject_limit, s.queues[q].last_serv_time)
    };
    assert_eq!(reset(1000 * MS - 1), (4, 5_000_000), "jiffy 249");
    assert_eq!(reset(1000 * MS), (0, 0), "997.1 ms, jiffy 250: reset");
}

#[test]
fn bfq_update_has_short_ttime_waits_100_ms_in_whole_jiffies_to_reset_the_limit() {
    // bfq_update_has_short_ttime: a change of think-time state with no baseline resets the
    // inject limit if the change is to long, or once
    // `time_is_before_eq_jiffies(decrease_time_jif + msecs_to_jiffies(100))`: 25 jiffies
    // at HZ = 250, which a stamp late in its jiffy reaches up to 4 ms before 100 ms.
    let back_to_short = |t: Tick| {
        let (mut s, q) = in_service(cfg_with(&[("hz", 250), ("low_latency", 0)]));
        let qq = &mut s.queues[q];
        (qq.has_short_ttime, qq.inject_limit, qq.decrease_time) = (false, 1, 3 * MS + 900_000);
        (qq.ttime_samples, qq.ttime_mean) = (81, 1);
        s.update_has_short_ttime(q, CtxId(1), t);
        (s.queues[q].has_short_ttime, s.queues[q].inject_limit)
    };
    assert_eq!(back_to_short(100 * MS - 1), (true, 1), "jiffy 24: no reset");
    assert_eq!(
        back_to_short(100 * MS),
        (true, 0),
        "96.1 ms, jiffy 25: reset to 0"
    );
}

/// The inject limit, baseline and decrease time after `bfq_update_inject_limit` for a
/// measurement of `tot` with the given state (limit, baseline, rqs_injected, requests in
/// the driver, max_rq_in_driver).
fn limit_after(
    limit: u32,
    last_serv: u64,
    injected: bool,
    in_driver: u32,
    max_in_driver: u32,
    tot: Tick,
) -> (u32, u64, Tick) {
    let (mut s, q) = in_service(Config::default());
    let qq = &mut s.queues[q];
    (qq.inject_limit, qq.last_serv_time, qq.decrease_time) = (limit, last_serv, 0);
    s.inj.rqs_injected = injected;
    s.inj.last_empty_occupied = 100 * MS;
    s.inj.waited_rq = Some(1);
    s.rq_in_driver = in_driver;
    s.max_rq_in_driver = max_in_driver;
    s.update_inject_limit(q, 100 * MS + tot);
    assert!(s.inj.waited_rq.is_none() && !s.inj.rqs_injected);
    let qq = &s.queues[q];
    (qq.inject_limit, qq.last_serv_time, qq.decrease_time)
}

#[test]
fn bfq_init_bfqq_marks_an_idle_class_sync_queue_short_so_it_never_becomes_a_waker() {
    // bfq_init_bfqq skips the has_short_ttime mark for an idle-class queue, but tests the
    // class before bfq_init_entity copies it in (the zeroed queue is IOPRIO_CLASS_NONE):
    // every sync queue starts marked, and bfq_update_has_short_ttime never touches an
    // idle-class one. So bfq_check_waker always returns early for it (the recording
    // prio-readers-and-idle-writer-file: bfq12857S, idle class, logs short_ttime 1 and
    // never a tentative waker; ours made it bfq12854S's woken queue and injected its write).
    let mut s = Bfq::new(Config::default());
    let idle = IoPrio {
        class: IoClass::Idle,
        level: 7,
    };
    let w = queue(&mut s, 0);
    let q = s.new_queue(GroupId::ROOT, true, idle, 0);
    assert!(s.queues[q].has_short_ttime);
    for k in 1..=3 {
        s.last_completed_q = Some(w);
        s.last_completion = k * 10 * MS;
        s.check_waker(q, k * 10 * MS + MS);
    }
    assert_eq!(s.queues[q].waker, None);
    assert!(s.queues[w].woken.is_empty());
}

#[test]
fn bfq_notes_give_the_inject_limit_history_with_bfq_update_inject_limits_inputs() {
    // kernel-diff --inject-history: 6.18 logs neither bfq_update_inject_limit nor the
    // limit, so ours' notes carry each step with its inputs. None are kept unasked.
    let run = |keep: bool| {
        let (mut s, q) = in_service(Config::default());
        if keep {
            s.keep_notes();
        }
        let qq = &mut s.queues[q];
        (qq.inject_limit, qq.last_serv_time, qq.decrease_time) = (1, 23_000, 0);
        s.inj.rqs_injected = true;
        s.inj.last_empty_occupied = 100 * MS;
        s.inj.waited_rq = Some(1);
        s.max_rq_in_driver = 5;
        s.update_inject_limit(q, 100 * MS + 51_500);
        s.take_notes()
    };
    assert!(run(false).is_empty());
    let notes = run(true);
    assert_eq!(notes.len(), 1, "{notes:?}");
    let (t, n) = &notes[0];
    assert_eq!(*t, Nanos::from_ns(100_051_500));
    for part in [
        "bfq1S update_inject_limit: tot_time_ns 51500",
        "tot_rq_in_driver 1 rqs_injected true max_rq_in_driver 5 limit 1 ->",
        "[limit 0 last_serv_time_ns 23000",
    ] {
        assert!(n.contains(part), "{part:?} not in {n:?}");
    }
}

#[test]
fn bfq_update_inject_limit_follows_the_service_time_against_1_5_times_the_baseline() {
    // bfq_update_inject_limit: with a baseline and injection, the limit drops by one (and
    // decrease_time moves) once the total service time reaches 3/2 of the baseline, and
    // grows by one below it while the limit is <= max_rq_in_driver.
    let ms = |n: u64| n * MS as u64;
    assert_eq!(
        limit_after(2, ms(10), true, 2, 2, 15 * MS),
        (1, ms(10), 115 * MS)
    );
    assert_eq!(
        limit_after(2, ms(10), true, 2, 2, 15 * MS - 1),
        (3, ms(10), 0)
    );
    assert_eq!(
        limit_after(2, ms(10), true, 2, 1, 15 * MS - 1),
        (2, ms(10), 0)
    );
    assert_eq!(limit_after(0, ms(10), true, 2, 2, 20 * MS), (0, ms(10), 0));
    assert_eq!(
        limit_after(0, ms(10), true, 2, 2, 15 * MS),
        (0, ms(10), 0),
        "at 3/2: no growth"
    );
    assert_eq!(limit_after(2, ms(10), false, 2, 5, 20 * MS), (2, ms(10), 0));
    // An odd baseline: 3/2 of 10000001 ns is 15000001 ns (shifted, truncated).
    assert_eq!(
        limit_after(2, 10_000_001, true, 2, 5, 15_000_001),
        (1, 10_000_001, 100 * MS + 15_000_001)
    );
    assert_eq!(
        limit_after(2, 10_000_001, true, 2, 5, 15_000_000),
        (3, 10_000_001, 0)
    );
}

#[test]
fn bfq_update_inject_limit_takes_a_baseline_only_from_a_request_served_alone() {
    // bfq_update_inject_limit: the first baseline is taken when the measured request was
    // alone in the drive (tot_rq_in_driver == 1, before the completion decrements it), and
    // the limit becomes at least 1; a shorter time always lowers the baseline; without
    // injection and alone, a longer time replaces it.
    let ms = |n: u64| n * MS as u64;
    assert_eq!(limit_after(0, 0, false, 1, 0, 7 * MS), (1, ms(7), 0));
    assert_eq!(limit_after(3, 0, false, 1, 0, 7 * MS), (3, ms(7), 0));
    assert_eq!(limit_after(0, 0, false, 2, 0, 7 * MS), (0, 0, 0));
    assert_eq!(limit_after(2, ms(10), true, 2, 5, 8 * MS), (3, ms(8), 0));
    assert_eq!(limit_after(2, ms(10), false, 1, 5, 12 * MS), (2, ms(12), 0));
    assert_eq!(limit_after(2, ms(10), false, 2, 5, 12 * MS), (2, ms(10), 0));
    assert_eq!(limit_after(2, ms(10), true, 1, 5, 12 * MS), (3, ms(10), 0));
    // Injected requests but no baseline yet: no 3/2 comparison (nor a decrease), only the
    // first baseline.
    assert_eq!(limit_after(2, 0, true, 1, 5, 7 * MS), (2, ms(7), 0));
}

/// Queue q (ctx 1) in service with its read in the driver; r (ctx 2, level 5, so the
/// scenario is asymmetric and q keeps the device) busy with one 8-sector read. Low
/// latency off: nobody is raised unless a test says so.
fn injection_scene() -> (Bfq, usize, usize) {
    let (mut s, q) = in_service(cfg_with(&[("low_latency", 0)]));
    s.insert(
        rq(2, 2)
            .sector(5_000_000)
            .prio(IoClass::BestEffort, 5)
            .build(),
        Nanos::ZERO,
    );
    let r = s.bics[&CtxId(2)].sync_q.unwrap();
    assert_eq!(s.in_service, Some(q));
    assert!(s.queues[r].busy && r != q);
    (s, q, r)
}

#[test]
fn bfq_choose_bfqq_for_injection_injects_while_the_drive_holds_fewer_than_the_limit() {
    // bfq_choose_bfqq_for_injection: no injection once tot_rq_in_driver >= inject_limit;
    // below it, the first queue with budget left for its next request, and rqs_injected.
    let (mut s, q, r) = injection_scene();
    s.queues[q].inject_limit = 1;
    assert_eq!(s.choose_for_injection(0), None, "1 in the driver, limit 1");
    assert!(!s.inj.rqs_injected);
    s.queues[q].inject_limit = 2;
    assert_eq!(s.choose_for_injection(0), Some(r));
    assert!(s.inj.rqs_injected);
    // Budget: the 8-sector read needs 8 sectors left.
    let e = s.queues[r].eid;
    s.inj.rqs_injected = false;
    (s.wf.entities[e].budget, s.wf.entities[e].service) = (20, 12);
    assert_eq!(s.choose_for_injection(0), Some(r), "exactly enough");
    (s.wf.entities[e].service, s.inj.rqs_injected) = (13, false);
    assert_eq!(s.choose_for_injection(0), None);
    assert!(!s.inj.rqs_injected); // A queue still busy but with nothing queued (kept on its tree after a preemption)
                                  // has no request to give.
    s.wf.entities[e].service = 0;
    s.queues[r].sort.clear();
    s.queues[r].next_rq = None;
    assert_eq!(s.choose_for_injection(0), None);
}

#[test]
fn bfq_choose_bfqq_for_injection_walks_the_active_list_most_recent_insertion_first() {
    // bfq_choose_bfqq_for_injection walks bfqd->active_list, where bfq_active_insert puts a
    // queue at the head each time its entity goes on an active tree (activation or requeue)
    // and bfq_active_extract takes it off: the queue put there last is tried first, not the
    // oldest (the kernel's order in the recording weighted-seq-readers, decision 12: the
    // queue requeued after a budget exhaustion before the one activated earlier).
    let (mut s, q, r) = injection_scene();
    s.queues[q].inject_limit = 2;
    s.insert(
        rq(3, 3)
            .sector(9_000_000)
            .prio(IoClass::BestEffort, 6)
            .build(),
        Nanos::ZERO,
    );
    let n = s.bics[&CtxId(3)].sync_q.unwrap();
    assert!(s.queues[n].busy);
    assert_eq!(s.choose_for_injection(0), Some(n), "activated last, first");
    s.requeue_queue(r, false, 0);
    assert_eq!(
        s.choose_for_injection(0),
        Some(r),
        "requeued since: first now"
    );
}

#[test]
fn bfq_check_waker_confirms_a_waker_on_the_third_first_request_within_4_ms() {
    // bfq_check_waker: a first request of a long-thinking sync queue arriving under 4 ms
    // after another queue's completion names that queue its tentative waker; the third time
    // in a row it is its waker (and the queue heads the waker's woken list). Then
    // bfq_select_queue, the queue in service empty and idling, injects from its waker first,
    // whatever the inject limit (the kernel's decisions in the recording weighted-seq-readers:
    // `bfq5315S set waker bfq5317S`).
    let (mut s, q, r) = injection_scene();
    s.queues[r].has_short_ttime = false;
    let complete_then_arrive = |s: &mut Bfq, gap: Tick| {
        s.last_completed_q = Some(q);
        s.last_completion = 100 * MS;
        s.check_waker(r, 100 * MS + gap);
    };
    complete_then_arrive(&mut s, 4 * MS);
    assert_eq!(s.queues[r].tentative_waker, None, "4 ms is too late");
    complete_then_arrive(&mut s, 4 * MS - 1);
    complete_then_arrive(&mut s, MS);
    assert_eq!(
        (s.queues[r].tentative_waker, s.queues[r].waker),
        (Some(q), None)
    );
    assert_eq!(s.queues[r].waker_detections, 2);
    complete_then_arrive(&mut s, MS);
    assert_eq!(
        (s.queues[r].tentative_waker, s.queues[r].waker),
        (None, Some(q))
    );
    assert_eq!(s.queues[q].woken, vec![r]);
    // A short-thinking queue is never checked.
    let (mut s2, q2, r2) = injection_scene();
    s2.last_completed_q = Some(q2);
    s2.last_completion = 0;
    s2.check_waker(r2, 1);
    assert_eq!(s2.queues[r2].tentative_waker, None);
    // q in service and idling, limit 0: its woken queue r is injected all the same, and a
    // waker of q would be preferred to it.
    s.queues[q].inject_limit = 0;
    s.rq_in_driver = 0;
    assert_eq!(s.choose_for_injection(0), None, "limit 0");
    assert_eq!(s.injection_candidate(q, 0), Some(r), "the queue q wakes");
    s.queues[r].waker = None;
    s.queues[q].waker = Some(r);
    s.queues[q].woken.clear();
    assert_eq!(s.injection_candidate(q, 0), Some(r), "q's waker");
}

#[test]
fn bfq_completed_request_leaves_no_candidate_waker_after_a_shared_queue_completes() {
    // bfq_completed_request (5.14 on, "reset waker pointer with shared queues"): a completion
    // of a shared (coop) queue sets last_completed_rq_bfqq to NULL, so bfq_check_waker finds
    // no candidate until a queue of one process completes. The recording
    // idle-reader-beside-buffered-writer-and-six-readers: a random reader's queue took the
    // shared queue of the other five for its tentative waker after each of the shared
    // queue's completions, so it never confirmed the idle-class reader as its waker
    // (`bfq425S set waker bfq423S`) and ours injected other requests than the kernel.
    let complete_one = |coop: bool| {
        let (mut s, q) = in_service(Config::default());
        s.queues[q].coop = coop;
        s.complete_at(RequestId(1), CtxId(1), MS);
        (s.last_completed_q, q)
    };
    let (last, q) = complete_one(false);
    assert_eq!(last, Some(q));
    let (last, _) = complete_one(true);
    assert_eq!(last, None, "a shared queue is no waker");
    // So a long-thinking queue arriving right after the shared queue's completion keeps the
    // tentative waker it had.
    let (mut s, q, r) = injection_scene();
    s.queues[r].has_short_ttime = false;
    let other = queue(&mut s, 0);
    (s.queues[r].tentative_waker, s.queues[r].waker_detections) = (Some(other), 2);
    s.queues[r].waker_detection_started = 0;
    s.queues[q].coop = true;
    s.complete_at(RequestId(1), CtxId(1), MS);
    s.check_waker(r, 2 * MS);
    assert_eq!(
        (s.queues[r].tentative_waker, s.queues[r].waker_detections),
        (Some(other), 2)
    );
}

#[test]
fn bfq_merge_bfqqs_makes_the_shared_queue_inherit_the_merged_queues_waker() {
    // bfq_merge_bfqqs (6.18): when bfqq is merged into new_bfqq, new_bfqq takes bfqq's waker
    // unless it has one (or it is that waker), and goes to the head of the waker's woken
    // list, so the waker, idling in service, injects the shared queue's requests whatever its
    // inject limit (bfq_select_queue's blocked_bfqq). The recording twelve-procs-mixed-prio:
    // a real-time reader woken by another (`bfq26721S set waker bfq26720S`) merged with a
    // writer at 10596.648084 s, and the waker in service injected the shared queue twice.
    let (mut s, q, r) = injection_scene();
    // ctx 3's queue x is woken by q; it is merged into ctx 2's busy queue r.
    let x = queue(&mut s, 0);
    s.queues[x].bic = Some(CtxId(3));
    s.queues[x].proc_refs = 1;
    s.bics.entry(CtxId(3)).or_default().sync_q = Some(x);
    s.inherit_waker(x, q);
    assert_eq!(s.queues[q].woken, vec![x]);
    s.merge_bfqqs(CtxId(3), x, r, MS);
    assert_eq!(s.queues[r].waker, Some(q));
    assert_eq!(s.queues[q].woken.first(), Some(&r), "at the head");
    s.queues[q].inject_limit = 0;
    assert_eq!(
        s.injection_candidate(q, MS),
        Some(r),
        "limit 0, injected all the same"
    );
    // A shared queue that has a waker keeps it.
    let (mut s, q, r) = injection_scene();
    let (x, w) = (queue(&mut s, 0), queue(&mut s, 0));
    s.queues[x].bic = Some(CtxId(3));
    s.bics.entry(CtxId(3)).or_default().sync_q = Some(x);
    s.inherit_waker(x, q);
    s.inherit_waker(r, w);
    s.merge_bfqqs(CtxId(3), x, r, MS);
    assert_eq!(s.queues[r].waker, Some(w));
    assert_eq!(s.queues[q].woken, vec![x]);
}

#[test]
fn bfq_init_rq_gives_a_queue_split_off_a_shared_one_its_waker_and_injection_state() {
    // A process split off a shared queue (bfq_init_rq) gets a new queue that takes the shared
    // queue's waker (heading the waker's woken list), and bfq_bfqq_resume_state gives it back
    // the injection state bfq_bfqq_save_state kept at the merge: last_serv_time_ns,
    // inject_limit and decrease_time_jif. The recording twelve-procs-mixed-prio: a reader
    // split off kept the limit of 1 its long think time gave it and was injected into; a new
    // limit of 0 kept ours idling.
    let (mut s, q, r) = injection_scene();
    let qq = &mut s.queues[r];
    (qq.inject_limit, qq.last_serv_time, qq.decrease_time) = (1, 5_000_000, 7 * MS);
    s.merge_bfqqs(CtxId(2), r, q, 8 * MS);
    assert_eq!(s.bics[&CtxId(2)].sync_q, Some(q));
    let w = queue(&mut s, 0);
    s.inherit_waker(q, w);
    let shared = &mut s.queues[q];
    (shared.proc_refs, shared.split_coop) = (2, true);
    assert!(shared.coop);
    s.insert(rq(3, 2).sector(9_000_000).build(), Nanos::from_ms(10));
    let n = s.bics[&CtxId(2)].sync_q.unwrap();
    assert!(n != q && n != r, "a new queue");
    let nq = &s.queues[n];
    assert_eq!(
        (nq.inject_limit, nq.last_serv_time, nq.decrease_time),
        (1, 5_000_000, 7 * MS)
    );
    assert_eq!(nq.waker, Some(w));
    assert_eq!(s.queues[w].woken.first(), Some(&n));
}

#[test]
fn bfq_choose_bfqq_for_injection_limits_a_raised_short_thinking_queue_to_raised_sources() {
    // bfq_choose_bfqq_for_injection: a raised in-service queue with short think time takes
    // injection only from raised queues (in_serv_always_inject false); with a long think
    // time, or not raised, from any queue.
    let (mut s, q, r) = injection_scene();
    s.queues[q].inject_limit = 2;
    s.queues[q].wr_coeff = 30;
    assert_eq!(s.choose_for_injection(0), None);
    s.queues[q].has_short_ttime = false;
    assert_eq!(s.choose_for_injection(0), Some(r));
    s.queues[q].has_short_ttime = true;
    s.queues[r].wr_coeff = 30;
    assert_eq!(s.choose_for_injection(0), Some(r));
}

#[test]
fn bfq_choose_bfqq_for_injection_raises_a_zero_limit_only_after_slice_idle_jiffies() {
    // bfq_choose_bfqq_for_injection: limit 0, no baseline yet, plugging since
    // last_idling_start_jiffies: the limit counts as 1 once jiffies reaches that start +
    // bfq_slice_idle, a nanosecond count added to jiffies (8,000,000 ms at HZ = 1000).
    let (mut s, q, r) = injection_scene();
    s.rq_in_driver = 0;
    s.wait_request = true;
    s.last_idling_start = 10 * MS;
    let due = 10 * MS + 8_000_000 * MS;
    assert_eq!(s.choose_for_injection(due - 1), None);
    assert_eq!(s.choose_for_injection(due), Some(r));
    s.wait_request = false;
    assert_eq!(s.choose_for_injection(due), None, "not plugging");
    s.wait_request = true;
    s.queues[q].last_serv_time = 1;
    assert_eq!(s.choose_for_injection(due), None, "a baseline exists");
}

#[test]
fn bfq_select_queue_injects_for_a_raised_queue_only_beside_other_raised_queues() {
    // bfq_select_queue, the in-service queue empty and idling: injection is tried if
    // idling does not boost throughput without issues and the queue is not raised, or
    // more than one queue is raised (wr_busy_queues > 1), or its think time is long.
    let (mut s, q, r) = injection_scene();
    s.queues[q].io_bound = false;
    s.queues[q].inject_limit = 2;
    assert_eq!(s.injection_candidate(q, 0), Some(r), "not raised");
    (s.queues[q].wr_coeff, s.queues[r].wr_coeff) = (30, 30);
    for (raised_busy, expect) in [(1, None), (2, Some(r)), (3, Some(r))] {
        s.wr_busy_queues = raised_busy;
        assert_eq!(s.injection_candidate(q, 0), expect, "{raised_busy} raised");
    }
    s.wr_busy_queues = 1;
    s.queues[q].has_short_ttime = false;
    assert_eq!(s.injection_candidate(q, 0), Some(r), "long think time");
    // Idling boosts throughput (a disk without queueing, no raised queue): no injection.
    let (mut s, q, _) = injection_scene();
    s.queues[q].inject_limit = 2;
    s.hw_tag = 0;
    assert_eq!(s.injection_candidate(q, 0), None);
}

#[test]
fn bfq_select_queue_injects_the_processs_own_async_io_first() {
    // bfq_select_queue: the in-service queue's own process's async queue, busy with a
    // request of that process and budget for it, is served first, whatever the limit.
    let (mut s, q, _) = injection_scene();
    s.insert(rq(3, 1).sector(7_000_000).write().build(), Nanos::ZERO);
    let a = s.bics[&CtxId(1)].async_q.unwrap();
    assert!(s.queues[a].busy);
    s.queues[q].inject_limit = 0;
    assert_eq!(s.injection_candidate(q, 0), Some(a));
    let e = s.queues[a].eid;
    s.wf.entities[e].service = s.wf.entities[e].budget;
    assert_ne!(s.injection_candidate(q, 0), Some(a), "no budget left");
}

// ----- queue merging -----

#[test]
fn bfq_too_late_for_merging_100_ms_after_the_first_service_since_busy() {
    // bfq_too_late_for_merging: served since it last became busy
    // (service_from_backlogged > 0), and its first service then is more than
    // bfq_merge_time_limit (HZ / 10) ago.
    let mut s = Bfq::new(Config::default());
    let q = queue(&mut s, 0);
    s.queues[q].first_io_time = 50 * MS;
    assert!(!s.too_late_for_merging(q, 500 * MS), "not served yet");
    s.queues[q].service_from_backlogged = 8;
    assert!(!s.too_late_for_merging(q, 150 * MS));
    assert!(s.too_late_for_merging(q, 150 * MS + 1));
    s.cfg.merge_window = Nanos::ZERO;
    assert!(!s.too_late_for_merging(q, 500 * MS), "merge_window_ms = 0");
}

#[test]
fn bfq_pos_tree_add_move_files_a_queue_under_its_next_request_while_it_may_merge() {
    // bfq_pos_tree_add_move: the queue leaves the position tree, then is filed under its
    // next request's sector unless too late for merging, in the idle class or empty; a
    // sector another queue holds leaves it out.
    let mut s = Bfq::new(Config::default());
    s.insert(rq(1, 1).sector(4096).build(), Nanos::ZERO);
    let q = s.bics[&CtxId(1)].sync_q.unwrap();
    assert_eq!(s.queues[q].pos_key, Some(4096));
    assert_eq!(s.groups[0].pos_tree.lookup(4096), Lookup::Found(q));
    (
        s.queues[q].service_from_backlogged,
        s.queues[q].first_io_time,
    ) = (8, 0);
    s.pos_tree_add_move(q, 100 * MS + 1);
    assert_eq!(s.queues[q].pos_key, None);
    assert_eq!(s.groups[0].pos_tree.lookup(4096), Lookup::Parent(None));
    s.pos_tree_add_move(q, 100 * MS);
    assert_eq!(
        s.queues[q].pos_key,
        Some(4096),
        "exactly 100 ms: not too late"
    );
    // ctx 2's read at the same sector: its queue stays out.
    s.insert(rq(2, 2).sector(4096).build(), Nanos::from_ms(200));
    let r = s.bics[&CtxId(2)].sync_q.unwrap();
    assert_ne!(r, q);
    assert_eq!(s.queues[r].pos_key, None);
    assert_eq!(s.groups[0].pos_tree.lookup(4096), Lookup::Found(q));
    // With queue merging off nothing moves, not even out of the tree.
    s.cfg.queue_merging = false;
    s.pos_tree_add_move(q, 300 * MS);
    assert_eq!(s.queues[q].pos_key, Some(4096));
    s.cfg.queue_merging = true;
    // An idle-class queue never enters.
    s.insert(
        rq(3, 3).sector(1 << 30).prio(IoClass::Idle, 7).build(),
        Nanos::from_ms(200),
    );
    let i = s.bics[&CtxId(3)].sync_q.unwrap();
    assert!(s.queues[i].busy && s.queues[i].pos_key.is_none());
    // Emptied: out.
    s.queues[q].sort.clear();
    s.queues[q].next_rq = None;
    s.queues[q].service_from_backlogged = 0;
    s.pos_tree_add_move(q, 300 * MS);
    assert_eq!(s.queues[q].pos_key, None);
}

#[test]
fn bfq_setup_merge_follows_the_merge_chain_and_moves_the_process_references() {
    // bfq_setup_merge: no merge into a queue without process references; follow new_bfqq
    // to the chain's end, giving up on a cycle back to bfqq; no merge if either end has no
    // process left or they are in different groups; else bfqq->new_bfqq = that end, whose
    // references grow by bfqq's process references.
    let mut s = Bfq::new(Config::default());
    let [a, b, c, d, e, f] = [0; 6].map(|_| queue(&mut s, 0));
    for (x, refs) in [(a, 1), (b, 2), (c, 1), (d, 0), (e, 1), (f, 0)] {
        s.queues[x].proc_refs = refs;
    }
    assert_eq!(s.setup_merge(a, d), None, "d has no process");
    assert_eq!(s.setup_merge(d, a), None, "d's processes went away");
    assert_eq!(s.queues[d].new_queue, None);
    s.queues[e].new_queue = Some(f);
    assert_eq!(
        s.setup_merge(a, e),
        None,
        "the chain ends at f, without process"
    );
    assert_eq!(s.queues[a].new_queue, None);
    assert_eq!(s.setup_merge(b, c), Some(c));
    assert_eq!((s.queues[b].new_queue, s.queues[c].proc_refs), (Some(c), 3));
    assert_eq!(s.setup_merge(a, b), Some(c), "to the end of b's chain");
    assert_eq!(s.queues[a].new_queue, Some(c));
    assert_eq!((s.queues[c].proc_refs, s.queues[b].proc_refs), (4, 2));
    assert_eq!(s.setup_merge(c, a), None, "a's chain leads back to c");
    assert_eq!(s.queues[c].new_queue, None);
    // Different groups.
    let mut groups = GroupTree::new();
    let g = groups.add("/a", None).unwrap();
    let mut s = Bfq::with_groups(Config::default(), &groups).unwrap();
    let a = queue(&mut s, 0);
    let b = s.new_queue(g, true, IoPrio::default(), 0);
    (s.queues[a].proc_refs, s.queues[b].proc_refs) = (1, 1);
    assert_eq!(s.setup_merge(a, b), None);
    assert_eq!(s.queues[b].proc_refs, 1);
}

#[test]
fn bfq_may_be_close_cooperator_needs_two_sync_non_seeky_queues_of_one_non_idle_class() {
    // bfq_may_be_close_cooperator: not if new_bfqq is too late for merging, either is in
    // the idle class, their classes differ, either is seeky (BFQQ_SEEKY: more than 19 of
    // the last 32 requests), or either is async.
    let mut s = Bfq::new(Config::default());
    let a = queue(&mut s, 0);
    let b = queue(&mut s, 0);
    assert!(s.may_be_close_cooperator(a, b, 200 * MS));
    let with = |f: &dyn Fn(&mut Bfq)| {
        let mut s = s.clone();
        f(&mut s);
        s.may_be_close_cooperator(a, b, 200 * MS)
    };
    assert!(
        !with(&|s| s.queues[b].service_from_backlogged = 8),
        "b too late"
    );
    assert!(
        with(&|s| s.queues[a].service_from_backlogged = 8),
        "only b's age counts"
    );
    assert!(!with(&|s| s.queues[a].class = IoClass::Idle));
    assert!(!with(&|s| s.queues[b].class = IoClass::Idle));
    assert!(!with(&|s| s.queues[a].class = IoClass::RealTime));
    assert!(!with(&|s| s.queues[a].seek_history = (1 << 20) - 1));
    assert!(!with(&|s| s.queues[b].seek_history = (1 << 20) - 1));
    assert!(
        with(&|s| s.queues[b].seek_history = (1 << 19) - 1),
        "19 seeky"
    );
    assert!(!with(&|s| s.queues[a].sync = false));
    assert!(!with(&|s| s.queues[b].sync = false));
}

#[test]
fn bfq_setup_cooperator_follows_a_scheduled_merge_to_the_end_of_its_chain() {
    // bfq_setup_cooperator: a merge already set up is carried out first, with the last
    // queue of the new_bfqq chain.
    let mut s = Bfq::new(Config::default());
    let [a, b, c] = [0; 3].map(|_| queue(&mut s, 0));
    (s.queues[a].new_queue, s.queues[b].new_queue) = (Some(b), Some(c));
    assert_eq!(s.setup_cooperator(a, None, 0), Some(c));
    s.queues[c].new_queue = Some(a);
    assert_eq!(
        s.setup_cooperator(a, None, 0),
        Some(c),
        "stops before coming back"
    );
    s.cfg.queue_merging = false;
    assert_eq!(s.setup_cooperator(a, None, 0), None);
}

/// ctx `ctx` reads at t (ms) at a sector of its own with ioprio (best effort, `level`);
/// returns its sync queue.
fn read_at(s: &mut Bfq, ctx: u32, t_ms: u64, level: u8) -> usize {
    s.insert(
        rq(u64::from(ctx), ctx)
            .sector(u64::from(ctx) << 24)
            .prio(IoClass::BestEffort, level)
            .build(),
        Nanos::from_ms(t_ms),
    );
    s.bics[&CtxId(ctx)].sync_q.unwrap()
}

#[test]
fn bfq_do_or_sched_stable_merge_schedules_a_merge_with_the_queue_created_up_to_180_ms_before() {
    // bfq_do_or_sched_stable_merge: the group's last created queue stays the candidate
    // unless it was created more than 600 ms before the new one or has another ioprio or
    // class; a new queue created within 180 ms of it gets a stable merge scheduled with it
    // (a rotational disk); between 180 and 600 ms, nothing.
    let mut s = Bfq::new(Config::default());
    let a = read_at(&mut s, 1, 0, 4);
    assert_eq!(s.groups[0].last_created, Some(a));
    read_at(&mut s, 2, 180, 4);
    assert_eq!(s.bics[&CtxId(2)].stable_merge_q, Some(a));
    read_at(&mut s, 3, 181, 4);
    assert_eq!(s.bics[&CtxId(3)].stable_merge_q, None);
    assert_eq!(s.groups[0].last_created, Some(a));
    let d = read_at(&mut s, 4, 200, 5);
    assert_eq!(s.groups[0].last_created, Some(d), "another level");
    assert_eq!(s.bics[&CtxId(4)].stable_merge_q, None);
    let e = read_at(&mut s, 5, 250, 4);
    assert_eq!(s.groups[0].last_created, Some(e));
    assert_eq!(s.bics[&CtxId(5)].stable_merge_q, None);
    read_at(&mut s, 6, 850, 4);
    assert_eq!(s.groups[0].last_created, Some(e), "exactly 600 ms later");
    assert_eq!(s.bics[&CtxId(6)].stable_merge_q, None);
    let g = read_at(&mut s, 7, 851, 4);
    assert_eq!(s.groups[0].last_created, Some(g));
    s.insert(
        rq(8, 8).sector(8 << 24).prio(IoClass::RealTime, 4).build(),
        Nanos::from_ms(860),
    );
    let h = s.bics[&CtxId(8)].sync_q.unwrap();
    assert_eq!(s.groups[0].last_created, Some(h), "another class");
    // On a non-rotational drive with queueing the merge happens at once.
    let mut s = Bfq::new(cfg_with(&[("rotational", 0)]));
    let a = read_at(&mut s, 1, 0, 4);
    assert_eq!(read_at(&mut s, 2, 100, 4), a);
    assert!(s.queues[a].coop);
}

#[test]
fn bfq_release_process_ref_stops_the_shared_queue_being_the_stable_merge_candidate() {
    // bfq_release_process_ref calls bfq_reassign_last_bfqq(bfqq, NULL) whenever a process
    // lets go of bfqq, even one of several sharing it: a process leaving the shared queue
    // the burst was merged into ends the candidacy, and the next new queue, created within
    // bfq_burst_interval, starts a candidacy of its own instead of being merged. Seen in the
    // kernel's bfq log of burst-of-twelve-short-jobs-beside-long-readers: 14181 exits the
    // shared queue at 521.3 ms, and 14178's queue, created 3.6 ms after the queue the burst
    // shares, is "allocated" with no "scheduling merge".
    let mut s = Bfq::new(cfg_with(&[("rotational", 0)]));
    let a = read_at(&mut s, 1, 0, 4);
    assert_eq!(read_at(&mut s, 2, 1, 4), a, "merged at creation");
    assert_eq!(s.groups[0].last_created, Some(a));
    s.exit(CtxId(1), Nanos::from_ms(2));
    assert_eq!(s.queues[a].proc_refs, 1, "ctx 2 still shares a");
    assert_eq!(s.groups[0].last_created, None);
    let c = read_at(&mut s, 3, 3, 4);
    assert_ne!(c, a, "not merged");
    assert_eq!(s.groups[0].last_created, Some(c));
    // bfq_merge_bfqqs hands the candidacy of the queue it empties to the shared queue.
    let d = read_at(&mut s, 4, 4, 4);
    assert_eq!(d, c);
    s.groups[0].last_created = Some(a);
    s.bics.get_mut(&CtxId(2)).unwrap().sync_q = Some(a);
    s.queues[a].new_queue = Some(c);
    s.queues[c].proc_refs += 1;
    s.merge_bfqqs(CtxId(2), a, c, 5 * MS);
    assert_eq!(s.groups[0].last_created, Some(c));
}

/// ctx 1 reads at 0, ctx 2 at 100 ms: a stable merge of ctx 2's queue `b` into ctx 1's `a`
/// is scheduled.
fn stable_scene() -> (Bfq, usize, usize) {
    let mut s = Bfq::new(Config::default());
    let a = read_at(&mut s, 1, 0, 4);
    let b = read_at(&mut s, 2, 100, 4);
    assert_eq!(s.bics[&CtxId(2)].stable_merge_q, Some(a));
    assert!(!s.queues[b].just_created && s.wr_busy_queues == 2);
    (s, a, b)
}

#[test]
fn bfq_do_early_stable_merge_marks_both_processes_stably_merged_so_the_queue_is_never_split() {
    // bfq_do_or_sched_stable_merge on a non-rotational device with queueing
    // (nonrot_with_queueing, which bfq_init_queue starts true on a non-rotational queue):
    // the new queue is merged into the one created up to bfq_burst_interval before, at once,
    // by bfq_do_early_stable_merge, which sets stably_merged in both processes' bfq_io_cq;
    // bfq_get_bfqq_handle_split then never splits the shared queue, even when it is marked
    // split_coop (seeky). Seen in the kernel's bfq log of reader-beside-direct-writers
    // ("bfq4098S scheduling merge with queue 4109", then "merging with queue 4109").
    let mut s = Bfq::new(Config::default());
    s.nonrot_with_queueing = true;
    let a = read_at(&mut s, 1, 0, 4);
    let shared = read_at(&mut s, 2, 100, 4);
    assert_eq!(shared, a, "merged at creation");
    assert!(s.bics[&CtxId(1)].stably_merged && s.bics[&CtxId(2)].stably_merged);
    s.queues[a].coop = true;
    s.queues[a].split_coop = true;
    assert_eq!(read_at(&mut s, 2, 200, 4), a, "not split");
}

#[test]
fn bfq_setup_cooperator_performs_a_stable_merge_600_ms_after_creation_and_split() {
    // bfq_setup_cooperator: a scheduled stable merge is performed for a sync queue, not
    // just created, once more than bfq_late_stable_merging (600 ms) passed since its
    // creation and its last split; bfq_setup_stable_merge then deschedules it and, unless
    // idling boosts throughput for bfqq or a process is gone, merges and marks both
    // processes stably merged.
    let probe = |s: &mut Bfq, b: usize, t: Tick| {
        let r = rq(99, 2).sector(3 << 30).build();
        s.setup_cooperator(b, Some(&r), t)
    };
    let (mut s, a, b) = stable_scene();
    assert_eq!(probe(&mut s, b, 700 * MS), None);
    assert_eq!(s.bics[&CtxId(2)].stable_merge_q, Some(a), "still scheduled");
    assert_eq!(probe(&mut s, b, 700 * MS + 1), Some(a));
    assert_eq!(s.bics[&CtxId(2)].stable_merge_q, None);
    assert!(s.bics[&CtxId(2)].stably_merged && s.bics[&CtxId(1)].stably_merged);
    assert_eq!(s.queues[b].new_queue, Some(a));
    let (mut s, a, b) = stable_scene();
    s.queues[b].split_time = 200 * MS;
    assert_eq!(probe(&mut s, b, 800 * MS), None);
    assert_eq!(probe(&mut s, b, 800 * MS + 1), Some(a));
    // Idling boosts throughput for b (no raised queue): descheduled, no merge.
    let (mut s, _, b) = stable_scene();
    s.wr_busy_queues = 0;
    assert_eq!(probe(&mut s, b, 701 * MS), None);
    assert_eq!(s.bics[&CtxId(2)].stable_merge_q, None);
    assert_eq!(s.queues[b].new_queue, None);
    // a lost its process.
    let (mut s, a, b) = stable_scene();
    s.queues[a].proc_refs = 0;
    assert_eq!(probe(&mut s, b, 701 * MS), None);
    assert_eq!(s.bics[&CtxId(2)].stable_merge_q, None);
    assert!(!s.bics[&CtxId(2)].stably_merged);
    let (mut s, _, b) = stable_scene();
    s.queues[b].just_created = true;
    assert_eq!(probe(&mut s, b, 701 * MS), None);
    assert!(s.bics[&CtxId(2)].stable_merge_q.is_some());
}

#[test]
fn bfq_merge_bfqqs_redirects_the_process_and_carries_io_bound_over() {
    // bfq_merge_bfqqs: an I/O-bound bfqq makes new_bfqq I/O bound and stops being so; a
    // raised new_bfqq keeps its own raising while bfqq loses its (one raised busy queue
    // less); the process's bic points to new_bfqq, now shared (coop, no owner); bfqq
    // loses its owner and a process reference.
    let mut s = Bfq::new(Config::default());
    let n = read_at(&mut s, 1, 0, 4);
    let q = read_at(&mut s, 2, 200, 4);
    assert_eq!(s.bics[&CtxId(2)].stable_merge_q, None);
    assert_eq!(
        (s.queues[n].wr_coeff, s.queues[q].wr_coeff, s.wr_busy_queues),
        (30, 30, 2)
    );
    (s.queues[n].io_bound, s.queues[n].last_wr_start_finish) = (false, 77);
    assert_eq!(s.setup_merge(q, n), Some(n));
    s.merge_bfqqs(CtxId(2), q, n, 300 * MS);
    assert!(s.queues[n].io_bound && !s.queues[q].io_bound);
    assert_eq!(
        (s.queues[n].wr_coeff, s.queues[n].last_wr_start_finish),
        (30, 77)
    );
    assert_eq!(
        (s.queues[q].wr_coeff, weight(&s, q), s.wr_busy_queues),
        (1, 40, 1)
    );
    assert_eq!(s.bics[&CtxId(2)].sync_q, Some(n));
    assert!(s.queues[n].coop && s.queues[n].bic.is_none() && s.queues[q].bic.is_none());
    assert_eq!((s.queues[q].proc_refs, s.queues[n].proc_refs), (0, 2));
    assert!(s.bics[&CtxId(2)].saved.is_some() && s.bics[&CtxId(1)].saved.is_some());
    // Neither I/O bound: new_bfqq stays so.
    let mut s = Bfq::new(Config::default());
    let n = read_at(&mut s, 1, 0, 4);
    let q = read_at(&mut s, 2, 200, 4);
    (s.queues[n].io_bound, s.queues[q].io_bound) = (false, false);
    // Neither raised: nothing to give or take, the raised busy count stays 0.
    s.end_wr(q, 250 * MS);
    s.end_wr(n, 260 * MS);
    assert_eq!(s.wr_busy_queues, 0);
    s.setup_merge(q, n);
    s.merge_bfqqs(CtxId(2), q, n, 300 * MS);
    assert!(!s.queues[n].io_bound);
    assert_eq!(
        (s.queues[q].wr_coeff, s.queues[n].wr_coeff, s.wr_busy_queues),
        (1, 1, 0)
    );
    assert_eq!(s.queues[n].last_wr_start_finish, 260 * MS);
}

/// Raising state (coefficient, duration, start, start of the interrupted interactive
/// period) of a queue that resumed at `t` the state saved at 0 for ctx 1 by a queue with
/// raising `wr`; the new queue is `large` (in a large burst).
fn resumed(wr: (u64, Tick, Tick, Tick), large: bool, t: Tick) -> (u64, Tick, Tick) {
    let mut s = Bfq::new(Config::default());
    let ctx = CtxId(1);
    s.bics.entry(ctx).or_default();
    let d = queue(&mut s, 0);
    let dq = &mut s.queues[d];
    (dq.bic, dq.just_created) = (Some(ctx), false);
    (
        dq.wr_coeff,
        dq.wr_cur_max_time,
        dq.last_wr_start_finish,
        dq.wr_start_at_switch_to_srt,
    ) = wr;
    s.save_state(d, 0);
    let q = queue(&mut s, 0);
    s.queues[q].in_large_burst = large;
    s.resume_state(q, ctx, false, t);
    let qq = &s.queues[q];
    assert_eq!(weight(&s, q), 40 * qq.wr_coeff, "the weight follows");
    (qq.wr_coeff, qq.wr_cur_max_time, qq.last_wr_start_finish)
}

#[test]
fn bfq_bfqq_resume_state_keeps_raising_only_while_its_period_lasts() {
    // bfq_bfqq_resume_state: the saved raising comes back unless the queue is in a large
    // burst or the raising period is over; an expired soft real-time period goes back to
    // the interactive one it interrupted while that lasts (switch_back_to_interactive_wr).
    let d = WR_DURATION;
    let interactive = (30, d, 1000 * MS, PAST);
    assert_eq!(
        resumed(interactive, false, 1000 * MS + d),
        (30, d, 1000 * MS)
    );
    assert_eq!(
        resumed(interactive, false, 1000 * MS + d + 1),
        (1, d, 1000 * MS)
    );
    assert_eq!(resumed(interactive, true, 1001 * MS), (1, d, 1000 * MS));
    let srt = (3000, RT_MAX_TIME, 1000 * MS, 500 * MS);
    assert_eq!(
        resumed(srt, false, 1300 * MS),
        (3000, RT_MAX_TIME, 1000 * MS)
    );
    assert_eq!(resumed(srt, false, 1300 * MS + 1), (30, d, 500 * MS));
    assert_eq!(resumed(srt, true, 1001 * MS), (1, RT_MAX_TIME, 1000 * MS));
    let srt = (3000, RT_MAX_TIME, 0, 500 * MS);
    assert_eq!(resumed(srt, false, 500 * MS + d), (30, d, 500 * MS));
    assert_eq!(resumed(srt, false, 500 * MS + d + 1), (1, RT_MAX_TIME, 0));
    // Not raised (a soft real-time queue whose raising a large burst stopped): stays so.
    let stopped = (1, RT_MAX_TIME, 0, 500 * MS);
    assert_eq!(resumed(stopped, false, 1000 * MS), (1, RT_MAX_TIME, 0));
}

#[test]
fn bfq_bfqq_save_state_gives_a_just_created_queue_the_raising_it_would_have_had() {
    // bfq_bfqq_save_state: a queue merged right after its creation (not in a large burst,
    // low_latency on) saves interactive raising from now instead of its own state; the
    // bic remembers whether it was in the burst list or a large burst. Think time, I/O
    // bound and I/O intensity state are saved and restored as they were.
    let saved = |cfg: Config, large: bool| {
        let mut s = Bfq::new(cfg);
        let ctx = CtxId(1);
        s.bics.entry(ctx).or_default();
        let d = queue(&mut s, 0);
        let dq = &mut s.queues[d];
        (dq.bic, dq.in_large_burst, dq.in_burst_list) = (Some(ctx), large, true);
        (dq.has_short_ttime, dq.io_bound) = (false, false);
        (
            dq.ttime_samples,
            dq.ttime_total,
            dq.ttime_mean,
            dq.last_end_request,
        ) = (5, 6, 7, 8);
        (dq.io_start_time, dq.tot_idle_time) = (11, 12);
        s.save_state(d, 2000 * MS);
        let bic = &s.bics[&ctx];
        assert!(bic.was_in_burst_list);
        assert_eq!(bic.saved_in_large_burst, large);
        let q = queue(&mut s, 0);
        s.resume_state(q, ctx, false, 2000 * MS);
        let qq = &s.queues[q];
        assert!(!qq.has_short_ttime && !qq.io_bound);
        let ttime = (
            qq.ttime_samples,
            qq.ttime_total,
            qq.ttime_mean,
            qq.last_end_request,
        );
        assert_eq!(ttime, (5, 6, 7, 8));
        assert_eq!((qq.io_start_time, qq.tot_idle_time), (11, 12));
        (
            qq.wr_coeff,
            qq.wr_cur_max_time,
            qq.last_wr_start_finish,
            qq.wr_start_at_switch_to_srt,
        )
    };
    let fresh = (30, WR_DURATION, 2000 * MS, PAST);
    assert_eq!(saved(Config::default(), false), fresh);
    assert_eq!(saved(Config::default(), true), (1, 0, 0, PAST));
    assert_eq!(
        saved(cfg_with(&[("low_latency", 0)]), false),
        (1, 0, 0, PAST)
    );
}

#[test]
fn bfq_bfqq_resume_state_counts_a_busy_queue_among_the_raised_ones() {
    // bfq_bfqq_resume_state: for an already existing busy queue, wr_busy_queues follows the
    // change of its coefficient; the weight changes now only for a queue neither in
    // service nor queued (else at its next activation).
    let run = |saved_wr: u64, cur_wr: u64, existing: bool, in_service: bool, active: bool| {
        let mut s = Bfq::new(Config::default());
        let ctx = CtxId(1);
        s.bics.entry(ctx).or_default();
        let d = queue(&mut s, 0);
        let dq = &mut s.queues[d];
        (dq.bic, dq.just_created, dq.wr_coeff) = (Some(ctx), false, saved_wr);
        (dq.wr_cur_max_time, dq.last_wr_start_finish) = (WR_DURATION, 0);
        s.save_state(d, 0);
        let q = queue(&mut s, 0);
        (s.queues[q].busy, s.queues[q].wr_coeff) = (true, cur_wr);
        s.wr_busy_queues = 5;
        if in_service {
            s.in_service = Some(q);
        }
        if active {
            s.wf.activate(s.queues[q].eid, false, 1);
        }
        s.resume_state(q, ctx, existing, MS);
        (s.wr_busy_queues, weight(&s, q))
    };
    assert_eq!(run(30, 1, true, false, false), (6, 1200));
    assert_eq!(run(1, 30, true, false, false), (4, 40));
    assert_eq!(run(30, 30, true, false, false), (5, 1200));
    assert_eq!(run(1, 1, true, false, false), (5, 40));
    assert_eq!(run(30, 1, false, false, false), (5, 1200), "a new queue");
    assert_eq!(
        run(30, 1, true, true, false),
        (6, 40),
        "in service: weight later"
    );
    assert_eq!(
        run(30, 1, true, false, true),
        (6, 40),
        "queued: weight later"
    );
}

#[test]
fn bfq_split_bfqq_detaches_a_process_and_drops_its_scheduled_merge_references() {
    // bfq_split_bfqq: the last process of a shared queue keeps it (no longer coop nor to be
    // split); another process leaves it, its bic forgets the sync queue, and the references
    // its merges took along the new_bfqq chain are dropped (bfq_put_cooperator) with its
    // own.
    let mut s = Bfq::new(Config::default());
    let [q, n, m] = [0; 3].map(|_| queue(&mut s, 0));
    let ctx = CtxId(1);
    s.bics.entry(ctx).or_default().sync_q = Some(q);
    for (x, refs) in [(q, 2), (n, 3), (m, 2)] {
        s.queues[x].proc_refs = refs;
    }
    (s.queues[q].coop, s.queues[q].split_coop) = (true, true);
    (s.queues[q].new_queue, s.queues[n].new_queue) = (Some(n), Some(m));
    assert_eq!(s.split_bfqq(ctx, q, 0), None);
    assert_eq!(s.bics[&ctx].sync_q, None);
    let refs: Vec<u32> = [q, n, m].iter().map(|&x| s.queues[x].proc_refs).collect();
    assert_eq!(refs, vec![1, 2, 1]);
    assert!(s.queues[q].coop, "still shared by the other process");
    assert_eq!(s.split_bfqq(CtxId(2), q, 0), Some(q));
    assert!(!s.queues[q].coop && !s.queues[q].split_coop);
    assert_eq!(s.queues[q].proc_refs, 1);
    // A chain that comes back to q stops there.
    s.queues[m].new_queue = Some(q);
    s.put_cooperator(q);
    let refs: Vec<u32> = [q, n, m].iter().map(|&x| s.queues[x].proc_refs).collect();
    assert_eq!(refs, vec![1, 1, 0]);
}

#[test]
fn bfq_get_bfqq_handle_split_restores_the_burst_state_of_a_split_queue() {
    // bfq_get_bfqq_handle_split: a queue recreated on a split is in a large burst if its
    // process's queue was in the burst list while the burst became large, or was itself in
    // a large burst; else it goes back to the burst list if it was there; split_time = now.
    let split = |was_in_list: bool, large_now: bool, saved_large: bool| {
        let mut s = Bfq::new(Config::default());
        let ctx = CtxId(1);
        let bic = s.bics.entry(ctx).or_default();
        (bic.was_in_burst_list, bic.saved_in_large_burst) = (was_in_list, saved_large);
        s.burst.large = large_now;
        let q = queue(&mut s, 0);
        // The opposite of the outcome, so that both setting and clearing show.
        s.queues[q].in_large_burst = !(saved_large || (was_in_list && large_now));
        s.mark_split_queue(q, ctx, 7 * MS);
        let qq = &s.queues[q];
        assert_eq!(qq.split_time, 7 * MS);
        assert_eq!(s.burst.list.contains(&q), qq.in_burst_list);
        (qq.in_large_burst, qq.in_burst_list)
    };
    assert_eq!(split(true, true, false), (true, false));
    assert_eq!(split(false, false, true), (true, false));
    assert_eq!(split(true, false, false), (false, true));
    assert_eq!(split(false, true, false), (false, false));
}

/// ctx 1 reads at 1000, ctx 3 at 50,000,000 and ctx 4 at 20,000,000, all at t = 0; ctx
/// 1's queue is served first and empties (the drive's position is then 1008). Returns
/// (bfq, ctx 3's queue, ctx 4's queue); the position tree holds those two.
fn close_scene() -> (Bfq, usize, usize) {
    let mut s = Bfq::new(Config::default());
    for (id, ctx, sector) in [(1, 1, 1000), (2, 3, 50_000_000), (3, 4, 20_000_000)] {
        s.insert(rq(id, ctx).sector(sector).build(), Nanos::ZERO);
    }
    match s.dispatch(Nanos::ZERO) {
        Dispatch::Request(r) => assert_eq!(r.id, RequestId(1)),
        d => panic!("{d:?}"),
    }
    assert_eq!(s.in_serv_last_pos, 1008);
    let c = s.bics[&CtxId(3)].sync_q.unwrap();
    let d = s.bics[&CtxId(4)].sync_q.unwrap();
    assert!(c != d && s.queues[c].pos_key.is_some() && s.queues[d].pos_key.is_some());
    (s, c, d)
}

/// The queue ctx 2's first read, at `sector` 1 ms into `close_scene`, goes to.
fn joins(sector: u64) -> Option<u32> {
    let (mut s, _, _) = close_scene();
    s.insert(rq(9, 2).sector(sector).build(), Nanos::from_ms(1));
    let q = s.bics[&CtxId(2)].sync_q;
    [1, 3, 4]
        .into_iter()
        .find(|&c| s.bics[&CtxId(c)].sync_q == q)
}

#[test]
fn bfq_setup_cooperator_merges_with_the_in_service_queue_within_8192_sectors_of_its_position() {
    // bfq_setup_cooperator: a request within BFQQ_CLOSE_THR (8192 sectors) of
    // in_serv_last_pos merges its queue with the in-service one (bfq_rq_close_to_sector).
    assert_eq!(joins(1008 + 8192), Some(1));
    assert_eq!(joins(1008 + 8193), None);
}

#[test]
fn bfq_find_close_cooperator_takes_a_queue_within_8192_sectors_of_the_request() {
    // bfqq_find_close: the last node of the search path if within 8192 sectors, else its
    // neighbour towards the sector if within 8192. The tree: 20,000,000 (ctx 4) at the
    // root, 50,000,000 (ctx 3) to its right.
    assert_eq!(
        joins(20_000_000 - 8192),
        Some(4),
        "the search ends at ctx 4"
    );
    assert_eq!(joins(20_000_000 - 8193), None);
    assert_eq!(
        joins(50_000_000 - 8192),
        Some(3),
        "the search ends at ctx 3"
    );
    assert_eq!(joins(50_000_000 - 8193), None, "its neighbour ctx 4 is far");
    assert_eq!(
        joins(20_000_000 + 8192),
        Some(4),
        "ends at ctx 3, ctx 4 the neighbour"
    );
    assert_eq!(joins(20_000_000 + 8193), None);
}

#[test]
fn bfq_setup_cooperator_looks_for_no_cooperator_for_a_late_or_lone_queue() {
    // bfq_setup_cooperator: no merge for a queue too late for merging, with no request to
    // place, or when it is the only busy queue.
    let (mut s, _, d) = close_scene();
    s.insert(rq(9, 2).sector(80_000_000).build(), Nanos::from_ms(1));
    let q = s.bics[&CtxId(2)].sync_q.unwrap();
    let near = rq(10, 2).sector(20_000_100).build();
    assert_eq!(
        s.clone().setup_cooperator(q, Some(&near), 200 * MS),
        Some(d)
    );
    assert_eq!(s.clone().setup_cooperator(q, None, 200 * MS), None);
    let mut late = s.clone();
    (
        late.queues[q].service_from_backlogged,
        late.queues[q].first_io_time,
    ) = (8, 0);
    assert_eq!(late.setup_cooperator(q, Some(&near), 200 * MS), None);
    s.busy_queues = [0, 1, 0];
    assert_eq!(s.setup_cooperator(q, Some(&near), 200 * MS), None);
}

#[test]
fn bfq_bfqq_end_wr_counts_only_a_busy_raised_queue_out_of_wr_busy_queues() {
    // bfq_bfqq_end_wr: wr_busy_queues drops only for a busy queue that was raised.
    let (mut s, q) = raised();
    s.queues[q].busy = false;
    s.end_wr(q, MS);
    assert_eq!(s.wr_busy_queues, 1, "not busy");
    let (mut s, q) = raised();
    s.end_wr(q, MS);
    assert_eq!(s.wr_busy_queues, 0);
    s.end_wr(q, 2 * MS);
    assert_eq!(s.wr_busy_queues, 0, "no longer raised");
    assert_eq!(s.queues[q].last_wr_start_finish, 2 * MS);
}

#[test]
fn bfq_merge_bfqqs_gives_the_raising_to_an_unraised_shared_queue_with_its_weight() {
    // bfq_merge_bfqqs: new_bfqq, not raised, inherits bfqq's raising (coefficient, duration,
    // start, switch time), counts among the raised busy queues, and its weight follows
    // unless it is in service (then at its next activation).
    let run = |n_in_service: bool| {
        let mut s = Bfq::new(Config::default());
        let n = read_at(&mut s, 1, 0, 4);
        let q = read_at(&mut s, 2, 200, 4);
        s.end_wr(n, 100 * MS);
        s.apply_weight(n);
        let qq = &mut s.queues[q];
        (qq.last_wr_start_finish, qq.wr_start_at_switch_to_srt) = (150 * MS, 120 * MS);
        assert_eq!(s.wr_busy_queues, 1);
        if n_in_service {
            s.in_service = Some(n);
        }
        s.setup_merge(q, n);
        s.merge_bfqqs(CtxId(2), q, n, 300 * MS);
        let nn = &s.queues[n];
        assert_eq!((nn.wr_coeff, nn.wr_cur_max_time), (30, WR_DURATION));
        assert_eq!(
            (nn.last_wr_start_finish, nn.wr_start_at_switch_to_srt),
            (150 * MS, 120 * MS)
        );
        assert_eq!(s.wr_busy_queues, 1, "n in, q out");
        (weight(&s, n), weight(&s, q))
    };
    assert_eq!(run(false), (1200, 40));
    assert_eq!(run(true), (40, 40));
}

#[test]
fn bfq_do_or_sched_stable_merge_does_nothing_without_queue_merging() {
    // elevator's queue_merging = 0 turns stable merging off too.
    let mut s = Bfq::new(cfg_with(&[("queue_merging", 0)]));
    read_at(&mut s, 1, 0, 4);
    read_at(&mut s, 2, 10, 4);
    assert_eq!(s.groups[0].last_created, None);
    assert_eq!(s.bics[&CtxId(2)].stable_merge_q, None);
}

#[test]
fn bfq_select_queue_injects_own_async_io_only_of_the_same_process_with_budget() {
    // bfq_select_queue: the in-service queue's process's async queue is injected from only
    // if its next request is that process's and fits its budget left.
    let (mut s, q, _) = injection_scene();
    s.insert(rq(3, 2).sector(7_000_000).write().build(), Nanos::ZERO);
    let a = s.bics[&CtxId(2)].async_q.unwrap();
    s.bics.get_mut(&CtxId(1)).unwrap().async_q = Some(a);
    assert_eq!(s.injection_candidate(q, 0), None, "ctx 2's write");
    s.insert(rq(4, 1).sector(2000).write().build(), Nanos::ZERO);
    assert_eq!(s.queues[a].next().unwrap().id, RequestId(4));
    let charge = s.next_charge(a);
    let e = s.queues[a].eid;
    s.wf.entities[e].service = s.wf.entities[e].budget - charge;
    assert_eq!(
        s.injection_candidate(q, 0),
        Some(a),
        "exactly enough budget"
    );
    s.wf.entities[e].service += 1;
    assert_eq!(s.injection_candidate(q, 0), None);
}

#[test]
fn bfqq_find_close_looks_at_the_successor_of_a_path_ending_below_the_sector() {
    // bfqq_find_close: when the search path ends at a node below the sector and that node
    // is not close, the neighbour looked at is its successor (rb_next), not its
    // predecessor. Tree: 50,000,000 (ctx 3) at the root, 49,980,000 (ctx 4) to its left;
    // a read at 49,992,000 ends at ctx 4 (12000 sectors away), whose successor ctx 3 is
    // 8000 away.
    let mut s = Bfq::new(Config::default());
    s.insert(rq(1, 3).sector(50_000_000).build(), Nanos::ZERO);
    s.insert(rq(2, 4).sector(49_980_000).build(), Nanos::ZERO);
    assert_eq!(s.in_service, None);
    s.insert(rq(3, 2).sector(49_992_000).build(), Nanos::from_ms(1));
    assert_eq!(s.bics[&CtxId(2)].sync_q, s.bics[&CtxId(3)].sync_q);
}

#[test]
fn bfq_handle_idle_busy_switch_deems_a_queue_interactive_after_2_s_without_io() {
    // bfq_bfqq_handle_idle_busy_switch: idle_for_long = time_is_before_jiffies(
    // budget_timeout + bfq_wr_min_idle_time), 2 s: a queue back exactly 2 s after it went
    // idle is not interactive, 1 ns later it is.
    let back_after = |idle: Tick| {
        let mut s = Bfq::new(Config::default());
        let r = rq(1, 1).sector(0).build();
        s.insert(r.clone(), Nanos::ZERO);
        assert!(matches!(s.dispatch(Nanos::ZERO), Dispatch::Request(_)));
        s.complete(&r, Nanos::from_ms(1));
        let _ = s.dispatch(Nanos::from_ms(100));
        let q = s.bics[&CtxId(1)].sync_q.unwrap();
        assert!(!s.queues[q].busy);
        s.end_wr(q, 100 * MS);
        s.queues[q].soft_rt_next_start = Tick::MAX / 2;
        let t = s.queues[q].budget_timeout + idle;
        s.insert(rq(2, 1).sector(8).build(), Nanos(t as u64));
        s.queues[q].wr_coeff
    };
    assert_eq!(back_after(2000 * MS), 1);
    assert_eq!(back_after(2000 * MS + 1), 30);
}

#[test]
fn bfq_add_request_raises_an_async_queue_after_500_ms_without_arrivals() {
    // bfq_add_request: a busy async queue, not raised, is raised as interactive when a
    // request arrives more than bfq_wr_min_inter_arr_async (500 ms) after the last one.
    let mut s = Bfq::new(Config::default());
    s.insert(rq(1, 1).sector(0).write().build(), Nanos::ZERO);
    let a = s.bics[&CtxId(1)].async_q.unwrap();
    assert_eq!(s.queues[a].wr_coeff, 1);
    s.insert(
        rq(2, 1).sector(1 << 20).write().build(),
        Nanos::from_ms(500),
    );
    assert_eq!(
        (s.queues[a].wr_coeff, s.queues[a].last_wr_start_finish),
        (1, 500 * MS)
    );
    s.insert(
        rq(3, 1).sector(1 << 21).write().build(),
        Nanos(1_000_000_001),
    );
    let qq = &s.queues[a];
    assert_eq!(
        (qq.wr_coeff, qq.wr_cur_max_time, s.wr_busy_queues),
        (30, WR_DURATION, 1)
    );
}

#[test]
fn bfq_check_waker_ignores_a_completion_after_the_plug_cached_its_time() {
    // Since 6.9 bfq_add_request stamps its arrival with blk_time_get_ns: in the submitter's
    // context, the time its plug cached at its first allocation. A completion bfq handled in
    // between (softirq, the real time) is later than that stamp, and bfq_check_waker's u64
    // `now_ns - bfqd->last_completion` wraps far above 4 ms: no waker candidate. The kernel's
    // decision in the recording cgroup-weights-three-groups at 34121.626712: fio 21818's
    // first request, allocated 1 us before fio 21816's completion reached bfq, named no
    // tentative waker (its log has none there), so 21816 was not confirmed as its waker.
    let (mut s, q, r) = injection_scene();
    s.queues[r].has_short_ttime = false;
    s.last_completed_q = Some(q);
    s.last_completion = 100 * MS;
    s.check_waker(r, 100 * MS - 1_000);
    assert_eq!(
        s.queues[r].tentative_waker, None,
        "stamped before the completion"
    );
    s.check_waker(r, 100 * MS + 1_000);
    assert_eq!(s.queues[r].tentative_waker, Some(q), "stamped after it");
}

#[test]
fn bfq_completed_request_reads_its_clock_before_arming_the_idle_timer() {
    // bfq_finish_requeue_request takes bfqd->lock, then bfq_completed_request reads the clock
    // (now_ns: last_completion, last_end_request) and, for the in-service queue left empty
    // that must idle, arms the idle timer (bfq_arm_slice_timer) before bfq_put_queue logs
    // the first note a replay sees. The recording buffered-writeback-beside-readers-wbt-file
    // at 43581.147217: fio 15539's read completed at .147197 (in service, idling), its note
    // came at .147213, and fio 15540's first read, allocated at .147208, still named 15539's
    // queue its tentative waker: the clock was read before .147208.
    let (mut s, q, r) = injection_scene();
    s.queues[r].has_short_ttime = false;
    assert!(
        s.must_idle(q),
        "the in-service queue idles once its read completes"
    );
    let done = rq(1, 1).sector(1000).build();
    let (clock, now) = (Nanos(100 * MS as u64), Nanos(100 * MS as u64 + 16_000));
    Scheduler::complete_clocked(&mut s, &done, clock, now);
    assert_eq!(s.last_completion, 100 * MS);
    assert_eq!(s.queues[q].last_end_request, 100 * MS);
    s.check_waker(r, 100 * MS + 11_000);
    assert_eq!(
        s.queues[r].tentative_waker,
        Some(q),
        "stamped after the clock"
    );
}

#[test]
fn bfq_allow_bio_merge_merges_queues_at_a_bio_that_merges_into_nothing() {
    // bfq_bio_merge -> elv_merge offers a bio to bfq_allow_bio_merge for q->last_merge when
    // blk_rq_merge_ok passes (same operation, I/O priority and cgroup), and that runs
    // bfq_setup_cooperator at the bio's sector and bfq_merge_bfqqs before the bio's request
    // is allocated, whether the bio then merges or not. ctx 2's queue (its read at
    // 90,000,000 is q->last_merge) joins ctx 4's (next request at 20,000,000) at a read
    // 100 sectors before that.
    let scene = || {
        let (mut s, _, d) = close_scene();
        s.insert(rq(9, 2).sector(90_000_000).build(), Nanos::from_ms(1));
        assert_eq!(s.last_merge, Some(9));
        let own = s.bics[&CtxId(2)].sync_q;
        assert!(own.is_some() && own != Some(d));
        (s, own, d)
    };
    let (mut s, _, d) = scene();
    s.bio_not_merged(
        &rq(10, 2).sector(20_000_000 - 100).build(),
        Nanos::from_ms(2),
    );
    assert_eq!(s.bics[&CtxId(2)].sync_q, Some(d), "merged at the bio");
    // A bio no candidate is offered for (a sync write: last_merge is a read) merges no queue.
    let (mut s, own, _) = scene();
    let write = rq(10, 2).sector(20_000_000 - 100).sync_write().build();
    s.bio_not_merged(&write, Nanos::from_ms(2));
    assert_eq!(s.bics[&CtxId(2)].sync_q, own);
    // Nor one after q->last_merge left (bfq_remove_request clears it).
    let (mut s, own, _) = scene();
    s.last_merge = None;
    s.bio_not_merged(
        &rq(10, 2).sector(20_000_000 - 100).build(),
        Nanos::from_ms(2),
    );
    assert_eq!(s.bics[&CtxId(2)].sync_q, own);
}

// ----- a process's bios in another group (bfq_bic_update_cgroup) -----

/// Groups /a and /b; ctx 1 reads in /a at 0 ms with two reads queued.
fn reader_in_a() -> (Bfq, GroupId, GroupId, usize) {
    let mut groups = GroupTree::new();
    let ga = groups.add("/a", None).unwrap();
    let gb = groups.add("/b", None).unwrap();
    let mut s = Bfq::with_groups(Config::default(), &groups).unwrap();
    for (id, sector) in [(1, 1 << 20), (2, (1 << 20) + 8)] {
        s.insert(rq(id, 1).sector(sector).group(ga.0).build(), Nanos::ZERO);
    }
    let q = s.bics[&CtxId(1)].sync_q.unwrap();
    (s, ga, gb, q)
}

#[test]
fn bfq_bic_update_cgroup_moves_a_process_queue_to_its_bios_new_group() {
    // __bfq_bic_change_cgroup -> bfq_sync_bfqq_move: a sync queue no other process shares
    // goes with its process to the new group (bfq_bfqq_move: taken off the old group's
    // trees, put on the new one's, its queued requests with it); blk-throttle's kworker
    // resubmitting another group's bios is such a process.
    let (mut s, ga, gb, q) = reader_in_a();
    assert_eq!(s.queues[q].group, ga);
    let e = s.queues[q].eid;
    assert_eq!(s.wf.entities[e].sd, s.groups[ga.0 as usize].sd);
    s.insert(
        rq(3, 1).sector((1 << 20) + 4096).group(gb.0).build(),
        Nanos::from_ms(1),
    );
    assert_eq!(s.bics[&CtxId(1)].sync_q, Some(q), "the same queue");
    assert_eq!(s.queues[q].group, gb);
    assert_eq!(s.wf.entities[e].sd, s.groups[gb.0 as usize].sd);
    assert_eq!(s.queues[q].fifo.len(), 3, "its requests went with it");
    assert!(s.queues[q].busy);
    assert_eq!(s.groups[ga.0 as usize].queues_pending, 0);
    assert_eq!(s.groups[gb.0 as usize].queues_pending, 1);
    // All three are served, from the new group.
    let mut served = Vec::new();
    for k in 0..20 {
        match s.dispatch(Nanos::from_ms(2 + k)) {
            Dispatch::Request(r) => {
                served.push(r.id.0);
                s.complete(&r, Nanos::from_ms(2 + k));
            }
            _ => continue,
        }
    }
    served.sort();
    assert_eq!(served, vec![1, 2, 3]);
}

#[test]
fn bfq_bic_update_cgroup_leaves_a_shared_queue_of_another_group_for_a_new_one() {
    // bfq_sync_bfqq_move: a process whose queue was merged (coop) and whose merge chain has
    // a queue of another group than its new bio's leaves the shared queue
    // (bfq_put_cooperator, bfq_release_process_ref) and gets a queue of its own in the new
    // group (bfq_get_queue). The kernel's log of blkthrottle-...-round3: kworker 23281, in a
    // shared queue of group 281, logs `put_queue` with 281, then `bfq23281S allocated` with
    // 295 for a write of group 295's writer.
    let (mut s, ga, gb, q) = reader_in_a();
    s.queues[q].coop = true;
    s.queues[q].proc_refs += 1; // a second process shares it
    s.insert(
        rq(3, 1).sector((1 << 20) + 4096).group(gb.0).build(),
        Nanos::from_ms(1),
    );
    let n = s.bics[&CtxId(1)].sync_q.unwrap();
    assert_ne!(n, q, "a queue of its own");
    assert_eq!(s.queues[n].group, gb);
    assert_eq!(s.queues[q].group, ga, "the shared queue stays");
    assert_eq!(s.queues[q].proc_refs, 1, "one process left it");
    // The async queue of another group is dropped too: a write takes /b's own.
    s.insert(
        rq(4, 1).sector(1 << 24).write().group(ga.0).build(),
        Nanos::from_ms(2),
    );
    let a = s.bics[&CtxId(1)].async_q.unwrap();
    assert_eq!(s.queues[a].group, ga);
    s.insert(
        rq(5, 1).sector(2 << 24).write().group(gb.0).build(),
        Nanos::from_ms(3),
    );
    let b = s.bics[&CtxId(1)].async_q.unwrap();
    assert_ne!(a, b);
    assert_eq!(s.queues[b].group, gb);
}
