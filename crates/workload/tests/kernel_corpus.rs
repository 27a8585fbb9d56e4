//! The kernel corpus (tests/data/kernel/MIX/SCHED, recorded by `elevator kernel-record`
//! through tests/data/kernel/record.sh): every recording reads without root, and its requests
//! are whole and consistent with how the kernel's block layer moves a request (created,
//! inserted, dispatched, completed; `none` dispatches in arrival order) and with the job that
//! made them (whose process, which priority).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use elevator_core::{IoClass, Op};
use elevator_workload::traces::ftrace::{KernelTrace, KyberEvent, PrioClass, Recording};

const SCHEDULERS: [&str; 4] = ["none", "mq-deadline", "kyber", "bfq"];
const MIXES: [&str; 5] = [
    "batches",
    "interleaved-readers",
    "prio-classes",
    "process-burst",
    "readers-writers",
];

fn corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/kernel")
}

/// Every recording, with its mix and trace.
fn recordings() -> Vec<(String, Recording, KernelTrace)> {
    let mut out = Vec::new();
    for mix in MIXES {
        for sched in SCHEDULERS {
            let dir = corpus().join(mix).join(sched);
            let rec = Recording::open(&dir).unwrap_or_else(|e| panic!("{e}"));
            let trace = rec.trace().unwrap_or_else(|e| panic!("{e}"));
            out.push((mix.to_string(), rec, trace));
        }
    }
    out
}

#[test]
fn every_mix_is_recorded_under_every_scheduler_with_its_job_and_kernel() {
    for (mix, rec, _) in recordings() {
        let m = &rec.meta;
        let here = rec.dir.display();
        assert_eq!(
            Some(m.scheduler.as_str()),
            rec.dir.file_name().and_then(|n| n.to_str()),
            "{here}"
        );
        assert!(m.kernel.release.starts_with("6."), "{here}: {:?}", m.kernel);
        let job = std::fs::read_to_string(rec.job_path()).unwrap();
        let source =
            std::fs::read_to_string(corpus().join("jobs").join(format!("{mix}.fio"))).unwrap();
        assert_eq!(job, source, "{here}: job.fio is not jobs/{mix}.fio");
        assert_eq!(
            m.settings.get("nr_requests").map(String::as_str),
            Some("8"),
            "{here}"
        );
        assert_eq!(
            m.queue.get("nr_requests").map(String::as_str),
            Some("8"),
            "{here}"
        );
        assert!(m.device.direct_io && m.device.backing == "tmpfs", "{here}");
        assert_eq!(m.trace.lost, 0, "{here}");
        assert!(!m.fio.jobs.is_empty(), "{here}: no job pids");
        if m.scheduler != "none" {
            assert!(!m.iosched.is_empty(), "{here}: no tunables");
        }
    }
}

#[test]
fn every_request_is_whole_and_in_the_order_of_the_block_layer() {
    for (_, rec, t) in recordings() {
        let here = rec.dir.display();
        let s = &t.stats;
        assert_eq!(s.lost_events, 0, "{here}");
        assert_eq!(
            (s.orphan_inserts, s.orphan_issues, s.orphan_completions),
            (0, 0, 0),
            "{here}: {s:?}"
        );
        assert_eq!(s.unmatched_merges, 0, "{here}: {s:?}");
        // No two requests in flight had the same extents: every match was certain.
        assert_eq!(s.ambiguous, 0, "{here}: {s:?}");
        assert_eq!((s.never_issued, s.never_completed), (0, 0), "{here}: {s:?}");
        assert!(
            t.requests.len() > 200,
            "{here}: {} requests",
            t.requests.len()
        );
        let requeues: u32 = t.requests.iter().map(|r| r.requeues).sum();
        let issued = t.requests.iter().filter(|r| r.issued.is_some()).count();
        assert_eq!(t.dispatches.len(), issued + requeues as usize, "{here}");
        for r in &t.requests {
            let at = format!("{here}: request {} ({:?})", r.index, r);
            let created = r.created.expect(&at);
            assert!(r.queued.is_none_or(|q| q <= created), "{at}");
            if let Some(into) = r.merged_into {
                assert!(r.issued.is_none() && into != r.index, "{at}");
                continue;
            }
            let issued = r.issued.expect(&at);
            let completed = r.completed.expect(&at);
            assert!(created <= issued && issued <= completed, "{at}");
            assert_eq!(r.error, 0, "{at}");
            if r.op() == Some(Op::Flush) {
                continue;
            }
            // Under a scheduler every request passes through it; none inserts only what it
            // could not issue at once.
            if rec.meta.scheduler != "none" {
                let inserted = r.inserted.expect(&at);
                assert!(created <= inserted && inserted <= issued, "{at}");
            }
            let bio = r.bio().expect(&at);
            assert_eq!(
                (bio.sector, bio.sectors, bio.submitted),
                (r.sector, r.sectors, r.arrival()),
                "{at}"
            );
            let d = r.dispatch_index.expect(&at);
            assert_eq!(t.dispatches[d].request, r.index, "{at}");
            assert!(r.issued_sectors >= r.sectors && r.sectors > 0, "{at}");
        }
    }
}

/// Per process, `none` dispatches requests in the order they were made: it has no queue of
/// its own to reorder (a plugged batch is issued as it was plugged).
#[test]
fn none_dispatches_each_process_in_arrival_order() {
    for (_, rec, t) in recordings() {
        if rec.meta.scheduler != "none" {
            continue;
        }
        let mut last: HashMap<u32, usize> = HashMap::new();
        for d in &t.dispatches {
            let r = &t.requests[d.request];
            if let Some(&before) = last.get(&r.pid) {
                assert!(
                    before < r.index,
                    "{}: pid {} dispatched request {} after {}",
                    rec.dir.display(),
                    r.pid,
                    r.index,
                    before
                );
            }
            last.insert(r.pid, r.index);
        }
    }
}

/// mq-deadline and bfq reorder: in the batch mix each dispatches some request ahead of one
/// that arrived before it (mq-deadline sorts a batch by sector; bfq serves one process's
/// queue at a time). kyber does not here: it keeps arrival order within a domain, and on this
/// device no domain ever runs out of tokens, so only reads and writes pending together could
/// cross, and the mix's processes rarely have both pending.
#[test]
fn mq_deadline_and_bfq_reorder_the_batches() {
    for (mix, rec, t) in recordings() {
        if mix != "batches" || !["mq-deadline", "bfq"].contains(&rec.meta.scheduler.as_str()) {
            continue;
        }
        let arrival: Vec<usize> = t.arrivals().iter().map(|r| r.index).collect();
        let rank: HashMap<usize, usize> =
            arrival.iter().enumerate().map(|(k, &i)| (i, k)).collect();
        let inversions = t
            .dispatches
            .windows(2)
            .filter(|w| rank[&w[1].request] < rank[&w[0].request])
            .count();
        assert!(
            inversions > 0,
            "{}: dispatched in arrival order",
            rec.dir.display()
        );
    }
}

/// Each request belongs to the fio job that made it (by pid), and carries that job's
/// priority.
#[test]
fn requests_belong_to_their_jobs_with_the_jobs_priority() {
    for (mix, rec, t) in recordings() {
        let here = rec.dir.display();
        let mut per_job: HashMap<&str, usize> = HashMap::new();
        for r in &t.requests {
            let Some(job) = rec.meta.job_of(r.pid) else {
                panic!(
                    "{here}: request {} from pid {} ({}), no fio job",
                    r.index, r.pid, r.comm
                );
            };
            *per_job.entry(job.name.as_str()).or_default() += 1;
            if mix == "prio-classes" {
                let p = r.prio.expect("6.18 prints priorities");
                let want = match job.name.as_str() {
                    "rt0" => (PrioClass::RealTime, 0),
                    "be0" => (PrioClass::BestEffort, 0),
                    "be7" => (PrioClass::BestEffort, 7),
                    "idle" => (PrioClass::Idle, 7),
                    other => panic!("{here}: job {other}"),
                };
                assert_eq!((p.class, p.level), want, "{here}: request {}", r.index);
                assert_eq!(
                    p.io_prio().map(|p| p.class),
                    Some(match want.0 {
                        PrioClass::RealTime => IoClass::RealTime,
                        PrioClass::Idle => IoClass::Idle,
                        _ => IoClass::BestEffort,
                    })
                );
            }
        }
        let jobs: Vec<&str> = rec.meta.fio.jobs.iter().map(|j| j.name.as_str()).collect();
        for j in &jobs {
            assert!(
                per_job.get(j).copied().unwrap_or(0) > 0,
                "{here}: job {j} made no request"
            );
        }
        if mix == "process-burst" {
            assert_eq!(jobs.iter().filter(|&&j| j == "burst").count(), 9, "{here}");
        }
    }
}

/// The flags the jobs ask for are the flags the kernel printed: O_DIRECT psync reads and
/// libaio writes are REQ_SYNC, libaio reads are not (reads are sync to the kernel all the
/// same), and the buffered writer's writeback is asynchronous and merged. A job may also make
/// a request of another kind: writeback of dirty pages runs in whichever process's context
/// the kernel starts it (one of the readers does, under mq-deadline), so each check takes
/// the job's own kind of request.
#[test]
fn flags_follow_the_way_each_job_does_its_io() {
    for (mix, rec, t) in recordings() {
        if mix != "readers-writers" {
            continue;
        }
        let here = rec.dir.display();
        let job = |pid| rec.meta.job_of(pid).map(|j| j.name.as_str()).unwrap_or("");
        let of = |name: &'static str, op: Op| {
            t.requests
                .iter()
                .filter(move |r| job(r.pid) == name && r.op() == Some(op))
        };
        assert_eq!(of("seq-reader", Op::Read).count(), 100, "{here}");
        assert!(of("seq-reader", Op::Read).all(|r| r.rwbs.sync), "{here}");
        assert_eq!(of("rand-reader", Op::Read).count(), 64, "{here}");
        assert!(
            of("rand-reader", Op::Read).all(|r| !r.rwbs.sync && r.is_sync()),
            "{here}"
        );
        // Its own 64, and the writeback the kernel may start from its context.
        assert!(of("sync-writer", Op::Write).count() >= 64, "{here}");
        assert!(of("sync-writer", Op::Write).all(|r| r.rwbs.sync), "{here}");
        let writeback: Vec<_> = of("async-writer", Op::Write).collect();
        assert!(writeback.iter().any(|r| !r.is_sync()), "{here}");
        // Its 4 KiB writes reach the device merged.
        assert!(writeback.iter().any(|r| r.sectors > 8), "{here}");
        let reads = t
            .requests
            .iter()
            .filter(|r| r.op() == Some(Op::Read))
            .count();
        assert_eq!(reads, 164, "{here}");
    }
}

#[test]
fn kyber_reports_its_domains_and_bfq_its_log() {
    for (mix, rec, t) in recordings() {
        let here = rec.dir.display();
        if rec.meta.scheduler != "kyber" {
            assert!(t.kyber.is_empty(), "{here}");
        } else if mix == "prio-classes" {
            // kyber_timer_fn reports a domain's latency after 500 samples or a second: only
            // this mix runs that long.
            assert!(
                t.kyber.iter().any(|(_, k)| matches!(k, KyberEvent::Latency { domain, samples, .. } if domain == "READ" && *samples > 0)),
                "{here}: {:?}",
                t.kyber
            );
        }
        let log = rec.bfq_log().unwrap();
        let logged = ["interleaved-readers", "process-burst"].contains(&mix.as_str());
        if logged && rec.meta.scheduler == "bfq" {
            let log = log.expect("a bfq log");
            assert!(log.messages.len() > 1000, "{here}");
            assert!(log.requests.is_empty(), "{here}");
            // One queue per process (`bfqPIDS`, S for sync); the burst's each weight-raised
            // as new (the interleaved readers' are soon merged into one shared queue).
            for j in &rec.meta.fio.jobs {
                let q = format!("bfq{}S ", j.pid);
                let raised = mix == "process-burst";
                assert!(
                    log.messages.iter().any(
                        |(_, m)| m.starts_with(&q) && (!raised || m.contains("raising period"))
                    ),
                    "{here}: no queue {q}"
                );
            }
            if mix == "interleaved-readers" {
                // The interleaved readers' queues are merged (close cooperators).
                assert!(
                    log.messages.iter().any(|(_, m)| m.contains("merge_bfqqs")),
                    "{here}"
                );
            }
        } else {
            assert!(log.is_none(), "{here}");
        }
    }
}

#[test]
fn a_fifo_baseline_agrees_with_none_and_not_with_the_schedulers_that_choose() {
    use elevator_workload::agreement::{compare, kendall_distance, Decision, QueueEvent};
    for (mix, rec, t) in recordings() {
        let here = rec.dir.display();
        let kernel = t.decisions();
        let dispatched = t
            .requests
            .iter()
            .filter(|r| r.issued.is_some() && r.op() != Some(Op::Flush))
            .count();
        assert_eq!(kernel.len(), dispatched, "{here}");
        assert!(
            kernel.iter().all(|d| d.queued.contains(&d.chosen)),
            "{here}"
        );
        // FIFO: from the same queued set, the request that arrived first.
        let mut arrived = HashMap::new();
        let mut fifo = Vec::new();
        for (seq, e) in t.queue_log.iter().enumerate() {
            match *e {
                QueueEvent::Arrive(i) => {
                    arrived.insert(i, seq);
                }
                QueueEvent::Dispatch(i) => {
                    arrived.entry(i).or_insert(seq);
                    let d = &kernel[fifo.len()];
                    assert_eq!(d.chosen, i);
                    let first = *d.queued.iter().min_by_key(|q| arrived[*q]).unwrap();
                    fifo.push(Decision {
                        queued: d.queued.clone(),
                        chosen: first,
                    });
                }
                QueueEvent::Leave(_) => {}
            }
        }
        let a = compare(&kernel, &fifo);
        assert_eq!(a.same_set, kernel.len(), "{here}");
        let choices = kernel.iter().filter(|d| d.queued.len() > 1).count();
        let order: Vec<usize> = t.dispatches.iter().map(|d| d.request).collect();
        let arrival: Vec<usize> = t.arrivals().iter().map(|r| r.index).collect();
        let tau = kendall_distance(&arrival, &order).unwrap();
        eprintln!(
            "{mix:>20} {:>12}: {:4} decisions, {:4} with a choice, FIFO agrees {:.3}, Kendall(arrival, dispatch) {:.4}",
            rec.meta.scheduler,
            kernel.len(),
            choices,
            a.share(),
            tau
        );
        match rec.meta.scheduler.as_str() {
            "none" => assert_eq!(a.share(), 1.0, "{here}: {a:?}"),
            "mq-deadline" | "bfq" if mix == "batches" => {
                assert!(a.share() < 0.95, "{here}: {a:?}")
            }
            _ => {}
        }
    }
}
