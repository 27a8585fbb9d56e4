//! The kernel corpus replayed into our schedulers (issue 27's `kernel-diff`): every recording
//! of tests/data/kernel/MIX/SCHED through our policy of the same name, without root. Prints
//! the agreement table (the one in docs/testing.md) and the divergences, and fails when
//! agreement drops below what was measured.

use std::path::{Path, PathBuf};

use elevator_workload::kernel_diff::{diff_recording, divergences, find_recordings, markdown};
use elevator_workload::kernel_diff::{DiffOptions, Row};

fn corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/kernel")
}

fn rows() -> Vec<Row> {
    find_recordings(&corpus())
        .unwrap()
        .iter()
        .map(|d| diff_recording(d, &DiffOptions::default()).unwrap_or_else(|e| panic!("{e}")))
        .collect()
}

/// The fresh recording (issue 27: a job mix not in the first corpus, recorded on the day the
/// seed rows were worked, Linux 6.18.44), and bfq's second recording of the same job
/// (`mixed-sizes-rerun`, with the bfq log): kept apart from the corpus-wide figures below.
const FRESH: &str = "mixed-sizes";

/// Two more fresh recordings (29 November 2026, Linux 6.18.44): a sequential reader that
/// thinks beside O_DIRECT writers (`reader-beside-direct-writers`, with a burst of five new
/// readers; `reader-beside-batched-writers`, writers and a random reader submitting 8 at a
/// time), bfq with its log. Also kept apart from the corpus-wide figures.
const FRESH_TODAY: &str = "reader-beside-";

/// The fresh recording of branch seeds3 (29 November 2026, Linux 6.18.44): writers of the
/// idle class and of best effort 7 beside a sequential reader and a real-time reader, bfq
/// with its log. Kept apart from the corpus-wide figures. bfq agreed on 2.4% of it until ours
/// counted the soft real-time bound in the kernel's jiffies (HZ = 250) and computed it at the
/// expiry of an interactive queue too (`bfq_bfqq_softrt_next_start`, `bfq_bfqq_expire`;
/// docs/testing.md, docs/bfq.md).
const FRESH_SEEDS3: &str = "prio-writers-beside-reader";

/// The fresh recording of branch kdiff4 (29 November 2026, 16:53 UTC, Linux 6.18.44, HZ =
/// 250): three sequential readers at best effort 0, 4 and 7 and a late random reader. Kept
/// apart from the corpus-wide figures (docs/testing.md).
const FRESH_KDIFF4: &str = "weighted-seq-readers";

/// The fresh recordings of stop 40 (29 November 2026, 22:30 UTC, Linux 6.18.44, HZ = 250):
/// six random readers beside a random writer that fsyncs every 8 writes and a late 128 KiB
/// reader; 1 MiB reads (which the kernel split for its segments in two of the four
/// recordings and issued whole in the others) beside two 4 KiB sequential writers of one
/// region and a 16 KiB random reader. Kept apart from the corpus-wide figures.
const FRESH_STOP40: [&str; 2] = [
    "many-random-readers-fsync-writer",
    "split-reads-beside-small-writes",
];

/// bfq's agreement on `split-reads-beside-small-writes`, as measured (10.2% until the replay submitted the bios and requests the kernel merged
/// into a request already in the scheduler; 15.0% until ours kept each scheduling data's next
/// entity cached as the kernel does, `sd->next_in_service`: `bfq_get_next_queue` sets it in
/// service without a lookup, so B-WF2Q+'s virtual time does not jump at every selection).
/// All 46 real choices agree now; the first divergence is at decision 105 (docs/testing.md).
/// 75.7% with the cache alone, 66.5% with processes also exiting where bfq's log shows
/// (kfid10): after decision 105 the exits move which queue is in service. 100% since a
/// shared queue's completion leaves no candidate waker (`bfq_completed_request`, kfid11).
const BFQ_SPLIT_READS: f64 = 100.0;

/// The fresh recording of branch kfid7 (30 November 2026, 01:53 UTC, Linux 6.18.44, HZ =
/// 250): an 8 KiB sequential reader that skips 8 KiB after every read, beside a 4 KiB random
/// read/write psync job at best effort 6 and a 32 KiB sequential writer. Kept apart from the
/// corpus-wide figures.
const FRESH_KFID7: &str = "holey-reader-beside-randrw";

/// bfq's agreement on the kfid7 recording, as measured: within 2 points of issue 27's 90%
/// target but **not** of the corpus (97.8%). Its first divergence (decision 22) is of class 1
/// (docs/testing.md): the kernel's log shows bfq serving the reader's 672+16 at 80939.446641 s
/// (trace clock), before the writer's 196736+64 was inserted on the other CPU (.446648); both
/// issue events come after (.446682, .446683), and ours, replaying from them, chose between
/// both. 97.5% decided earliest. 100% since the replay takes bfq's choices in its log's order
/// and at its log's times (kfid20, `LogOrder`).
const BFQ_HOLEY: f64 = 100.0;

/// The fresh recordings of branch kfid10 (30 November 2026, Linux 6.18.44, HZ = 250): a
/// real-time random psync reader beside a 64 KiB sequential reader, a deep 8 KiB random
/// writer and a 16 KiB psync writer at three best-effort levels (recorded at 04:37 UTC by the
/// coordinator); an idle-class sequential reader beside a buffered writer's writeback and six
/// random psync readers (04:55 UTC). Kept apart from the corpus-wide figures.
const FRESH_KFID10: [&str; 2] = [
    "rt-reader-beside-deep-randwrite",
    "idle-reader-beside-buffered-writer-and-six-readers",
];

/// bfq's agreement on the kfid10 recordings, as measured. The first agreed on 32.8% until the
/// replay made processes exit where bfq's log shows (`bfq_exit_bfqq` ends the idling for the
/// real-time reader's queue when its job exits); the second, 23.7% until the exit of a
/// process sharing the queue in service was replayed too (the bfq log's `bfqSHARED-S
/// exit_bfqq`), 39.2% with the next-entity cache of kfid9 as well (41.9% without it); 87.9%
/// since a shared queue's completion leaves no candidate waker (`bfq_completed_request`:
/// the idle-class reader became a random reader's waker as in the kernel) and 89.7% since a
/// change of raising coefficient waits for the next requeue (`prio_changed`), within 2
/// points of issue 27's 90% but not of the corpus (kfid11, docs/testing.md); 90.9% since the
/// replay keeps apart the requests the kernel kept apart (kfid13). The second, 69.2% since the
/// replay takes bfq's choices in its log's order (kfid20, `LogOrder`): the divergences of
/// decisions 171-200 went, and from decision 322 on ours does not inject the idle-class
/// reader's read where the kernel did (its log: `bfq423S select_queue: returned this queue`
/// with the shared queue in service, no waker yet on either side): ours' inject limit for
/// the shared queue is 0 there (`bfq_update_inject_limit`), the kernel's at least 1
/// (`bfq_choose_bfqq_for_injection`); by the issue events ours had made the reader the
/// shared queue's waker too early and injected through that (traced by kfid23: ours
/// lowered the limit from 1 to 0 at 2893.452050). 68.4% beside the allocation at
/// `block_getrq` (kfid19); 69.2% since bfq's budget timeout counts whole jiffies
/// (kfresh16, `bfq_set_budget_timeout`); 100% since the replay completes each request no
/// earlier than bfq's log shows the kernel learned of it (kfid26, `Replay::completion_at`).
const BFQ_KFID10: [f64; 2] = [100.0, 100.0];

/// mq-deadline's agreement on the first kfid10 recording, as measured: 96.9% until the
/// replay asked ours where the kernel's queue ran and returned nothing (its refused aged
/// dispatches start write batches), 98.0% until two CPUs' dispatches issued within 10 us
/// were left unordered (kfid13); what is left are swaps of two processes' requests inserted
/// 1 µs apart that the trace orders (class 1 in docs/testing.md).
const MQ_DEADLINE_RT: f64 = 99.3;

/// The fresh recordings of branch kfid13 (30 November 2026, 07:03 and 08:02 UTC, Linux
/// 6.18.44, HZ = 250; load average 5.6 and 8.5), each a kind of mix the corpus did not have:
/// deep mixed read/write queues of two engines; 256 KiB reads beside 4 KiB readers one, eight
/// and sixteen deep; discards beside readers and a writer; twelve processes of three classes
/// and seven levels; readers that think beside fsync-heavy writers; deep writers of three
/// classes beside a real-time reader; an SQPOLL io_uring job beside pvsync2 and fdatasync
/// writers; 128 KiB buffered writers' writeback beside sync readers; buffered readers through
/// readahead beside an O_DIRECT writer; eight readers of adjacent regions beside 512-byte and
/// 2 KiB writers. Kept apart from the corpus-wide figures. They led to three fixes of the replay
/// (docs/testing.md): a request the kernel kept apart is not merged by ours (kyber on the
/// first 56.3 -> 98.5%), a pair of dispatches two CPUs issued within 10 us is unordered, and
/// none's direct issues pass a request waiting for kblockd.
const FRESH_KFID13: [&str; 10] = [
    "deep-randrw-two-engines",
    "direct-256k-reads-beside-deep-4k-readers",
    "trim-beside-readers-and-writer",
    "twelve-procs-mixed-prio",
    "thinking-readers-fsync-writers",
    "prio-writers-deep-beside-rt-reader",
    "sqpoll-and-pvsync2-mixed-rw",
    "buffered-128k-writers-beside-sync-readers",
    "buffered-readahead-readers-beside-direct-writer",
    "eight-adjacent-seq-readers-and-sub-page-writer",
];

/// bfq's agreement on three kfid13 recordings, as measured (30 November 2026, 08:45 UTC, with
/// the shared-queue waker rule of `bfq_completed_request`): twelve-procs-mixed-prio 78.5%
/// (26.4% before it; first divergence at decision 178), 94.2% since the replay completes a
/// request where bfq's log shows bfq learned of it and asks ours at bfq's refused dispatch
/// calls that changed its state, and ours keeps a merged queue's injection state and passes
/// its waker on (kfid16; first divergence at decision 247): within 2 points of issue 27's
/// target, not of the corpus. prio-writers-deep-beside-rt-reader 22.3% (decision 4: 6.18's
/// tag allocation at shallow depths, docs/bfq.md; 22.1% since kfid16) is **not**;
/// sqpoll-and-pvsync2-mixed-rw meets both marks (100% since its SQPOLL thread and that
/// thread's io_uring workers submit in the ring owner's io_context, as `create_io_thread`'s
/// CLONE_IO makes them: kfid17; 90.9% before, 89.1% before kfid13).
/// Since the replay completes each request no earlier than bfq's log shows the kernel
/// learned of it (kfid26): twelve-procs-mixed-prio 92.6%, prio-writers-deep-beside-rt-reader
/// 19.1%.
/// Since bfq's idle slice timer fires at its own time in the replay (stop 48):
/// twelve-procs-mixed-prio 93.6%.
const BFQ_KFID13: [f64; 3] = [93.6, 19.1, 100.0];

/// The held-out recordings of branch kfresh15 (30 November 2026, 10:36-10:37 UTC, Linux
/// 6.18.44, HZ = 250; load average 9.6), each forcing what the corpus did not: posixaio's
/// helper threads and the sync and pvsync engines with 16 scheduler tags; three waves of
/// short-lived processes (the third a large burst); readers thinking 10-40 ms, longer than
/// bfq's slice_idle; a zero-think depth-1 reader beside depth-32 readers with 32 tags; four
/// processes reading and writing the same 4 MiB with 4 tags; 2 MiB reads split at
/// `max_sectors_kb` 256; fsync-every-N writers beside sequential discards. Recorded and
/// replayed without any change to the schedulers or the replay: every row of these seven met
/// issue 27's targets less 2 points (none 98, mq-deadline 97, kyber 95, bfq 88) and its
/// corpus figure less 2. An eighth mix, per-I/O priorities (`cmdprio_percentage`), was held
/// out of the corpus until the replay gave bfq each task's io_context priority and each
/// io_uring worker its owner's context (FRESH_KFID17). Three more (10:44-10:45 UTC, load
/// average 9.4) make the kernel choose among batches: four priorities' batches of 16 on one
/// region with 16 tags; readers thinking around slice_idle beside batched sync writers;
/// real-time and idle batches beside psync readers with 4 tags. Of these, bfq on the first
/// misses its target (BFQ_BATCHED), and none on the first and the third was under 100% but
/// within 2 points (98.2 and 99.8%) until the replay gave none its per-CPU software queues
/// (branch kfid22, below); the rest meet both marks.
const FRESH_KFRESH15: [&str; 10] = [
    "posixaio-and-sync-engines-nr16",
    "three-waves-of-short-processes",
    "readers-thinking-past-slice-idle",
    "qd1-zero-think-beside-qd32-readers-nr32",
    "same-blocks-readers-and-writers-nr4",
    "two-mib-reads-split-at-256k-max-sectors",
    "fsync-every-n-writers-and-seq-trims",
    "batched-readers-writers-one-region-nr16",
    "thinking-readers-beside-batched-sync-writers",
    "rt-and-idle-batches-beside-be-readers-nr4",
];

/// bfq's agreement on `batched-readers-writers-one-region-nr16`, as measured: within 2 points
/// of issue 27's target since kfid19 and kfid20, not of the corpus. Its bfq log showed why it
/// was far below: one process's queue run
/// (`__blk_mq_do_dispatch_sched`, on CPU 1) took 14 of another process's 16 reads from bfq a
/// few us after each was inserted on CPU 0 (`dispatch requests: 1 busy queues`,
/// `bfqq_served 8 secs` after each `add_request`), choosing by `bfq_choose_req` among the one
/// to four then queued, and issued them some 100 us later, after all 16 were in (and after
/// CPU 0 had issued the other two): the replay, deciding at the issue events, has up to 16
/// queued at each decision, in another order (docs/testing.md, class 1). 4.0% until the
/// replay allocated each request at its `block_getrq` and inserted it at its
/// `block_rq_insert`, the tag held in between (kfid19): 84.7%, first divergence at decision
/// 12; with bfq's choices also taken in its log's order (kfid20, `LogOrder`; 6.4% alone):
/// 90.5%, first divergence at decision 1097.
const BFQ_BATCHED: f64 = 90.5;

/// The recordings where `none` did not dispatch in the replay's arrival order, until branch
/// kfid22 (98.2 and 99.8%, now 100%): two processes' plugs flushed on two CPUs within a
/// microsecond or two, and the kernel's run took CPU 0's software queue first whatever the
/// order of the insertions (`blk_mq_flush_busy_ctxs` walks the software queues by CPU). The
/// replay now stages each request in its CPU's software queue and decides a run where it
/// started (`kernel_diff::own_runs`).
const NONE_CPU_ORDER: [&str; 2] = [
    "batched-readers-writers-one-region-nr16",
    "rt-and-idle-batches-beside-be-readers-nr4",
];

/// The recording kfresh15 held out (30 November 2026, 10:36-10:37 UTC, Linux 6.18.44, HZ =
/// 250), moved into the corpus by branch kfid17: per-I/O priorities through fio's
/// `cmdprio_percentage` beside each job's own `prioclass`/`prio`, one job on io_uring (its
/// reads submitted by `iou-wrk` workers). bfq agreed on 0.7% while the replay gave it each
/// request's own priority and each worker a context of its own; 96.7% since bfq takes the
/// io_context's priority (`bfq_check_ioprio_change`, `bic->ioprio`) and the workers share
/// their owner's io_context (`create_io_thread`, CLONE_IO). Kept apart from the corpus-wide
/// figures; every row meets issue 27's targets and its corpus figure less 2.
const FRESH_KFID17: &str = "per-io-priorities-cmdprio";

/// The recording kfresh15 held out for bfq's groups (30 November 2026), re-recorded by branch
/// kfid21 (13:35 UTC, load average 12.3-12.9, Linux 6.18.44, HZ = 250) with fio's `cgroup`
/// options and moved into the corpus: four jobs each in a cgroup v1 blkio group of its own,
/// `blkio.bfq.weight` 100, 300, 900 and 50. bfq agreed on 46.1% with every request in the root
/// group; the replay now gives each process its group from the recording's groups.txt and our
/// bfq a group entity of that weight per group. Kept apart from the corpus-wide figures.
const FRESH_KFID21: &str = "cgroup-weights-three-groups";

/// bfq's agreement on `cgroup-weights-three-groups`, as measured: issue 27's target (90%) met,
/// not its corpus figure less 2 (95.8%). At its first divergence, decision 520, two CPUs
/// issued 3 us apart in the other order than bfq decided (its log: CPU 0's run served the
/// in-service queue's 137440 at .643572, CPU 1's injected the 50-weight group's 256728 at
/// .643577 while that queue waited, `bfq_choose_bfqq_for_injection`); ours took 137440 first,
/// as bfq did, then served the in-service queue's next read instead of injecting. The two
/// other recordings made in the same round agree on 100% (docs/testing.md).
///
/// With bfq's log order (branch kfid20) merged beside the groups: 37.2% (diverging at 518,
/// where ours is asked after two more of the group's reads arrived). Branch kfid26: 37.3%
/// with bfq's insertion stamps on the plug's cached clock (`blk_time_get_ns`); the kernel
/// injected there through `bfq_select_queue`'s waker branch (fio 21819, fio 21818's waker
/// since 34121.619834), ours through the inject limit, having confirmed fio 21816 as the
/// waker after a detection the kernel did not make (docs/testing.md). 100% since the replay
/// completes each request no earlier than bfq's log shows the kernel learned of it
/// (`Replay::completion_at`): ours dispatched at the log's choice, a few microseconds before
/// the issue event the service time counts from, so a completion reached ours before
/// insertions it followed in the kernel, and `bfq_check_waker` saw a candidate the kernel
/// did not.
const BFQ_KFID21: f64 = 100.0;

/// The recordings branch kfresh16 held out (30 November 2026, 16:11-16:13 UTC, load average
/// 2.2-9.4, Linux 6.18.44, HZ = 250): the first with scheduler tunables and queue attributes
/// changed from their defaults (each job's header gives its `--set` flags): mq-deadline's
/// fifo_batch 1, 2, 4 and 8, writes_starved 1, 3 and 4, read_expire 5, 20 and 50 ms,
/// write_expire 50 ms, front_merges 0, prio_aging_expire 40 ms; kyber's read and write
/// targets from 100 us to 1 s; bfq's slice_idle 0 and 2 ms, low_latency 0, strict_guarantees
/// 1, back_seek_max 0, back_seek_penalty 1, timeout_sync 20 and 250 ms, max_budget 512,
/// fifo_expire_sync 20 and 50 ms; 4, 8, 16, 32 and 64 tags, max_sectors_kb 64, rotational 1,
/// nomerges 1 and 2, wbt_lat_usec 500; three on a loop device over a file on the disk
/// (rotational, as the disk is) and one of 4096-byte sectors. Recorded and replayed without
/// any change to the schedulers or the replay: none, mq-deadline and kyber meet issue 27's
/// targets less 2 points on every one (none 100% on all nine), kyber on one not its corpus
/// figure less 2 (KYBER_SPLIT_64K); bfq missed on four, on three since its budget timeout
/// counts whole jiffies, on two since its service trees order equal finish times by insertion
/// (BFQ_KFRESH16).
const FRESH_KFRESH16: [&str; 9] = [
    "short-read-expire-batch1-randrw-nr16",
    "writes-starved-1-seq-reads-vs-writes-nomerges2",
    "front-merges-off-descending-readers-nr32",
    "prio-aging-rt-beside-idle-writers-file",
    "short-budgets-seq-readers-rotational-nr16",
    "four-k-sectors-mixed-sizes-nr4",
    "large-writes-split-at-64k-nr64",
    "buffered-writeback-beside-readers-wbt-file",
    "seq-readers-rotational-nomerges1-file",
];

/// kyber's agreement on `large-writes-split-at-64k-nr64`, as measured: issue 27's target less 2
/// (95%) met, not the corpus figure less 2 (97.6%). From its first divergence, decision 284,
/// two queue runs took requests from kyber's one read list at once (CPU 0 in one process's
/// context, CPU 1 in the submitter's: `kyber_dispatch_cur_domain` under `khd->lock`, each run
/// issuing its own list in `blk_mq_dispatch_rq_list`), and their issue events interleave
/// within 5 us: the trace does not say which run took which request first.
const KYBER_SPLIT_64K: f64 = 96.7;

/// bfq's agreement on three of FRESH_KFRESH16, as measured (docs/testing.md names each first
/// divergence and the kernel function deciding it): `writes-starved-1-...-nomerges2` 95.7%
/// (issue 27's target less 2 met, the corpus figure less 2, 95.8, not: at decision 15 the
/// kernel's early stable merge put the new O_DIRECT writer's queue into a reader's
/// (`bfq_do_or_sched_stable_merge`; its log: `scheduling merge`, `merging with queue`) and
/// one queue run took all six writes; ours dispatched four and held the last two until a
/// third process's read arrived, which it served first); `prio-aging-...-file` 38.3% and
/// `buffered-writeback-...-file` 81.7%, on the rotational file-backed device. The first was
/// 16.1%, and `seq-readers-rotational-nomerges1-file` 30.5% (now 100%), until bfq's budget
/// timeout counted whole jiffies as the kernel's (`bfq_set_budget_timeout`,
/// `bfq_bfqq_budget_timeout`): the kernel expired the in-service queue at a request's arrival
/// 123 ms after setting it in service (`bfq_rq_enqueued`), ours waited for 124 ms. What is
/// left: in the first, at decision 467, the idle-class timeout serves the other of the two
/// idle-class writers' queues (`bfq_lookup_next_entity`, B-WF2Q+ within the idle class); in
/// the second, at decision 71, the kernel injects the async writer's queue that became busy
/// first (`bfq_choose_bfqq_for_injection`), ours the sync reader's. Since the replay
/// completes each request no earlier than bfq's log shows the kernel learned of it (kfid26):
/// 95.8, 38.2 and 76.2% (the third's first divergence moves to decision 373). Since the
/// service trees keep equal finish times in insertion order (kfid29; `bfq_insert`,
/// `bfq_first_active_entity`), `prio-aging-...-file` agrees on 100%: at decision 467 the two
/// idle-class writers' queues had the same start and finish, and the kernel served the one
/// requeued first, ours the one created first. The third agrees at every decision since bfq
/// reads a completion's clock before arming the idle timer (`bfq_completed_request`, kfid30:
/// the waker `bfq_check_waker` found was the kernel's).
const BFQ_KFRESH16: [f64; 3] = [95.8, 100.0, 100.0];

/// The recordings branch kfresh17 held out (30 November 2026, 19:10-19:14 UTC, load average
/// 1.8-11.9, Linux 6.18.44, HZ = 250): nine mixes not in the corpus, aimed at bfq: processes
/// of several I/O priority classes and levels with think times, readers held to a rate
/// (`rate_iops`), four threads of one process reading one region interleaved, a burst of
/// twelve short processes beside long readers, fsync-heavy and O_SYNC writers beside readers,
/// block sizes of 4 KiB to 1 MiB within a job (`bssplit`), cgroup v1 weights 1000, 100 and 40
/// beside readers in the root group, bfq's max_budget 1024, slice_idle 2 ms and low_latency 0
/// (with mq-deadline's fifo_batch 4 and kyber's targets; 16 tags), and a file-backed
/// (rotational) loop device at the defaults. Recorded and replayed without any change to the
/// schedulers or the replay: none, mq-deadline and kyber meet issue 27's fresh targets (98, 97,
/// 95%) and their corpus figures less 2 on all nine; bfq misses its corpus figure less 2 on
/// five (BFQ_KFRESH17; four since kfid31), issue 27's fresh target (88%) on three (two).
const FRESH_KFRESH17: [&str; 9] = [
    "bssplit-readers-and-writer",
    "burst-of-twelve-short-jobs-beside-long-readers",
    "cgroup-unequal-weights-thinking-and-root-readers",
    "four-threads-interleaved-one-region-beside-writer",
    "osync-and-fsync-writers-beside-deep-readers",
    "prio-readers-and-idle-writer-file",
    "rate-limited-readers-beside-greedy-randreader",
    "thinking-readers-across-prio-levels",
    "tuned-budget-thinking-readers-and-writer-nr16",
];

/// bfq's agreement on four of FRESH_KFRESH17, as measured on merged main (docs/testing.md names
/// each first divergence and the kernel function deciding it): `burst-of-twelve-...` 95.6%
/// (issue 27's fresh target, 88%, met, not the corpus figure less 2); `cgroup-unequal-weights-...`
/// 92.9% (46.1% as recorded, 79.3% once bfq read a completion's clock before arming the idle
/// timer, kfid30; decision 383 was ours charging the in-service queue's service at the weight
/// its raising had just ended to, `__bfq_requeue_entity` charges it at the old one; 96.8%
/// until kfid33, first diverging at 1364 then and now: the kernel's idle slice timer expired
/// the shared queue 0.9 ms before its next request, ours, asked nothing between, served it;
/// what follows differs since the inject limit counts jiffies, where before ours injected the
/// kernel's next request with a limit the kernel did not have, docs/testing.md);
/// `prio-readers-and-idle-writer-file` 54.1% (89.0% before kfid30's clock: the first divergence
/// is decision 609 with and without it, an idle-class injection ours did not make,
/// `bfq_choose_bfqq_for_injection`; what follows it differs); `tuned-budget-...-nr16` 79.1%
/// (decision 31: the kernel's idle slice timer expires the random reader's queue,
/// `bfq_idle_slice_timer`, before its next request arrives; ours checks the timer only at a
/// dispatch, which the kernel-pace replay does not ask for in between, and serves the
/// returning queue). `thinking-readers-across-prio-levels` left the list at 99.7%, now 99.9% (11.8%
/// before, decision 162) when the idle class's timeout counted whole jiffies as
/// `bfq_lookup_next_entity`'s `time_is_before_jiffies(bfq_class_idle_last_service +
/// BFQ_CL_IDLE_TIMEOUT)` does (kfid29, kfid31).
/// Since bfq's idle slice timer fires at its own time in the replay (kfid34's bcc1975, applied
/// in stop 48 after kfid33's jiffies) and a process letting go of a queue ends its
/// stable-merge candidacy (kfid36's `bfq_reassign_last_bfqq`): 100.0, 100.0, 91.0 and 99.8%.
const BFQ_KFRESH17: [f64; 4] = [100.0, 100.0, 91.0, 99.8];

/// The same nine jobs recorded a second time by the same commands (30 November 2026,
/// 19:56:16-19:57:50 UTC, load average 12.7-14.3, Linux 6.18.44, HZ = 250), kept out of the
/// corpus (kernel-pending/kfresh17-round2) until stop 48, now in it as `MIX-round2`: one
/// round's agreement under bfq does not carry to the next (single rows moved up to 90 points
/// between the two), so both rounds are held. Measured at the move (30 November 2026, 22:30 UTC, docs/testing.md): none 100.0%, mq-deadline 99.9%, kyber 99.9%, bfq 78.9%.
const FRESH_KFRESH17_ROUND2: [&str; 9] = [
    "bssplit-readers-and-writer-round2",
    "burst-of-twelve-short-jobs-beside-long-readers-round2",
    "cgroup-unequal-weights-thinking-and-root-readers-round2",
    "four-threads-interleaved-one-region-beside-writer-round2",
    "osync-and-fsync-writers-beside-deep-readers-round2",
    "prio-readers-and-idle-writer-file-round2",
    "rate-limited-readers-beside-greedy-randreader-round2",
    "thinking-readers-across-prio-levels-round2",
    "tuned-budget-thinking-readers-and-writer-nr16-round2",
];

/// bfq's agreement on three of FRESH_KFRESH17_ROUND2, as measured (docs/testing.md names
/// each first divergence): `burst-of-twelve-...` 88.9% (decision 74),
/// `thinking-readers-across-prio-levels` 85.1% (960; 75.2% at the move, decision 806),
/// `tuned-budget-...-nr16` 88.3% (11). `prio-readers-and-idle-writer-file` (63.6% at the
/// move, decision 529) and `rate-limited-...` (29.0%, decision 4) left the list at 100% and
/// 99.3% when the inject limit's intervals counted whole jiffies as `bfq_add_request` does
/// (`decrease_time_jif + msecs_to_jiffies(10)`: the measurement that gave the real-time
/// queue its limit started 9.996 ms, 3 jiffies, after its creation; kfid33). The other four
/// agree on 100%.
/// Since the idle timer fires at its own time and a released process ends its stable-merge
/// candidacy (stop 48): 92.4, 85.1 and 88.7%.
const BFQ_KFRESH17_ROUND2: [f64; 3] = [92.4, 85.1, 88.7];

/// The recordings of branch kfresh18 (30 November 2026, Linux 6.18.44, HZ = 250): nine plain
/// mixes not in the corpus, of the kind a storage engineer writes first (fio's classic
/// randread at iodepth 1, 4, 16 and 32, randwrite through io_uring 32 deep with numjobs=2,
/// randrw at rwmixread=70 four deep with numjobs=4 and 64 tags, 1 MiB sequential reads then
/// 128 KiB sequential writes, a sequential reader beside a sequential writer, a buffered writer
/// with end_fsync beside O_DIRECT readers, mixed 4 KiB and 64 KiB randrw with nr_requests
/// written as 2 (the kernel keeps 4), readers and a writer on the file-backed loop device, and
/// blkio weights 500 and 100), each recorded twice: round 1 at 22:33-22:34 UTC (load average
/// 8.3-11.9), round 2, the same commands, at 22:40-22:41 UTC (8.5-8.7) as `MIX-round2`.
/// Replayed without any change to the schedulers or the replay: none, mq-deadline and kyber
/// 100.0% in both rounds (kyber 99.9% on one recording of each), bfq 99.6% and 98.1%; bfq
/// misses its corpus figure less 2 on three (BFQ_KFRESH18), issue 27's fresh target (88%) on
/// one.
const FRESH_KFRESH18: [&str; 18] = [
    "buffered-writer-end-fsync-beside-direct-readers",
    "buffered-writer-end-fsync-beside-direct-readers-round2",
    "cgroup-weights-randreaders-and-seq-reader",
    "cgroup-weights-randreaders-and-seq-reader-round2",
    "mixed-4k-64k-randrw70-nr2",
    "mixed-4k-64k-randrw70-nr2-round2",
    "randread-qd1-qd4-qd16-qd32-libaio",
    "randread-qd1-qd4-qd16-qd32-libaio-round2",
    "randrw70-libaio-qd4-numjobs4-nr64",
    "randrw70-libaio-qd4-numjobs4-nr64-round2",
    "randwrite-iouring-qd32-numjobs2",
    "randwrite-iouring-qd32-numjobs2-round2",
    "seq-and-rand-readers-beside-randwriter-file",
    "seq-and-rand-readers-beside-randwriter-file-round2",
    "seq-read-1m-then-write-128k-stonewall",
    "seq-read-1m-then-write-128k-stonewall-round2",
    "seq-reader-beside-seq-writer",
    "seq-reader-beside-seq-writer-round2",
];

/// bfq's agreement on three of FRESH_KFRESH18, as measured (docs/testing.md):
/// `seq-read-1m-then-write-128k-stonewall` 94.5% (round 1, decision 600) and 95.0% (round 2,
/// 598), `seq-reader-beside-seq-writer-round2` 73.0% (257). Each first divergence is a sync
/// write the kernel dispatched at its insertion and ours held for a scheduler tag: 6.18's
/// `bfq_limit_depth` gives a sync write `async_depths[0][1]` = 6 of the 8 tags (a count over
/// the whole bitmap since 6.17; its log prints `depth 6`), ours 6.9's `word_depths`, one bit of
/// each 2-bit word, 4 (the `whole_map_depths` deviation, docs/bfq.md). With `whole_map_depths`
/// all three, and every other bfq row of the set, agree on 100%.
const BFQ_KFRESH18: [f64; 3] = [94.5, 95.0, 73.0];

fn fresh(mix: &str) -> bool {
    FRESH_KFRESH18.contains(&mix)
        || FRESH_KFRESH17.contains(&mix)
        || FRESH_KFRESH17_ROUND2.contains(&mix)
        || FRESH_KFRESH16.contains(&mix)
        || FRESH_KFID10.contains(&mix)
        || mix == FRESH_KFID17
        || mix == FRESH_KFID21
        || FRESH_KFID13.contains(&mix)
        || FRESH_KFRESH15.contains(&mix)
        || mix.starts_with(FRESH)
        || mix.starts_with(FRESH_TODAY)
        || mix == FRESH_SEEDS3
        || mix == FRESH_KDIFF4
        || mix == FRESH_KFID7
        || FRESH_STOP40.contains(&mix)
}

/// bfq's agreement on `per-io-priorities-cmdprio` (FRESH_KFID17), as measured: 99.7% until
/// bfq's idle slice timer fired at its own time in the replay (kfid34's bcc1975, applied in
/// stop 48), 73.9% since, with 283 of 297 real choices agreed. The timer matches the kernel
/// there (ours expires bfq26021S TOO_IDLE at 657.78 ms, the kernel at 657.791, so its next
/// request starts no inject-limit sample, as in the kernel's `bfq_add_request`); before, ours
/// took a sample the kernel never took and a later injection agreed by it. Now at decision 773
/// the kernel issued 26020's write before 26019's read arrived and ours, with both queued,
/// took the read: every later decision is shifted by one (docs/testing.md).
const BFQ_CMDPRIO: f64 = 73.9;

/// bfq's agreement on the seeds3 recording, as measured.
const BFQ_SEEDS3: f64 = 100.0;

/// Agreement at the kernel's pace as measured (per cent of decisions), one point under.
const FLOOR: [(&str, &str, f64); 329] = [
    // The held-out recordings of branch kfresh15 (FRESH_KFRESH15).
    (NONE_CPU_ORDER[0], "none", 100.0),
    (
        "batched-readers-writers-one-region-nr16",
        "mq-deadline",
        99.0,
    ),
    ("batched-readers-writers-one-region-nr16", "kyber", 99.4),
    (
        "batched-readers-writers-one-region-nr16",
        "bfq",
        BFQ_BATCHED,
    ),
    ("batches", "none", 100.0),
    ("batches", "mq-deadline", 100.0),
    ("batches", "kyber", 100.0),
    ("batches", "bfq", 98.0),
    // The held-out recordings of branch kfresh17 (FRESH_KFRESH17).
    ("bssplit-readers-and-writer", "none", 100.0),
    ("bssplit-readers-and-writer", "mq-deadline", 100.0),
    ("bssplit-readers-and-writer", "kyber", 100.0),
    ("bssplit-readers-and-writer", "bfq", 100.0),
    // The second round of branch kfresh17's recordings (FRESH_KFRESH17_ROUND2).
    ("bssplit-readers-and-writer-round2", "none", 100.0),
    ("bssplit-readers-and-writer-round2", "mq-deadline", 100.0),
    ("bssplit-readers-and-writer-round2", "kyber", 100.0),
    ("bssplit-readers-and-writer-round2", "bfq", 100.0),
    // The fresh recordings of branch kfid13 (FRESH_KFID13).
    ("buffered-128k-writers-beside-sync-readers", "none", 100.0),
    (
        "buffered-128k-writers-beside-sync-readers",
        "mq-deadline",
        100.0,
    ),
    ("buffered-128k-writers-beside-sync-readers", "kyber", 100.0),
    ("buffered-128k-writers-beside-sync-readers", "bfq", 100.0),
    (
        "buffered-readahead-readers-beside-direct-writer",
        "none",
        100.0,
    ),
    (
        "buffered-readahead-readers-beside-direct-writer",
        "mq-deadline",
        100.0,
    ),
    (
        "buffered-readahead-readers-beside-direct-writer",
        "kyber",
        100.0,
    ),
    (
        "buffered-readahead-readers-beside-direct-writer",
        "bfq",
        100.0,
    ),
    // The held-out recordings of branch kfresh16 (FRESH_KFRESH16).
    ("buffered-writeback-beside-readers-wbt-file", "none", 100.0),
    (
        "buffered-writeback-beside-readers-wbt-file",
        "mq-deadline",
        100.0,
    ),
    ("buffered-writeback-beside-readers-wbt-file", "kyber", 100.0),
    (
        "buffered-writeback-beside-readers-wbt-file",
        "bfq",
        BFQ_KFRESH16[2],
    ),
    // The recordings of branch kfresh18 (FRESH_KFRESH18).
    (
        "buffered-writer-end-fsync-beside-direct-readers",
        "none",
        100.0,
    ),
    (
        "buffered-writer-end-fsync-beside-direct-readers",
        "mq-deadline",
        100.0,
    ),
    (
        "buffered-writer-end-fsync-beside-direct-readers",
        "kyber",
        100.0,
    ),
    (
        "buffered-writer-end-fsync-beside-direct-readers",
        "bfq",
        100.0,
    ),
    // The second round of branch kfresh18's recordings (FRESH_KFRESH18).
    (
        "buffered-writer-end-fsync-beside-direct-readers-round2",
        "none",
        100.0,
    ),
    (
        "buffered-writer-end-fsync-beside-direct-readers-round2",
        "mq-deadline",
        100.0,
    ),
    (
        "buffered-writer-end-fsync-beside-direct-readers-round2",
        "kyber",
        100.0,
    ),
    (
        "buffered-writer-end-fsync-beside-direct-readers-round2",
        "bfq",
        100.0,
    ),
    // The held-out recordings of branch kfresh17 (FRESH_KFRESH17).
    (
        "burst-of-twelve-short-jobs-beside-long-readers",
        "none",
        100.0,
    ),
    (
        "burst-of-twelve-short-jobs-beside-long-readers",
        "mq-deadline",
        100.0,
    ),
    (
        "burst-of-twelve-short-jobs-beside-long-readers",
        "kyber",
        100.0,
    ),
    (
        "burst-of-twelve-short-jobs-beside-long-readers",
        "bfq",
        BFQ_KFRESH17[0],
    ),
    // The second round of branch kfresh17's recordings (FRESH_KFRESH17_ROUND2).
    (
        "burst-of-twelve-short-jobs-beside-long-readers-round2",
        "none",
        100.0,
    ),
    (
        "burst-of-twelve-short-jobs-beside-long-readers-round2",
        "mq-deadline",
        100.0,
    ),
    (
        "burst-of-twelve-short-jobs-beside-long-readers-round2",
        "kyber",
        100.0,
    ),
    (
        "burst-of-twelve-short-jobs-beside-long-readers-round2",
        "bfq",
        BFQ_KFRESH17_ROUND2[0],
    ),
    // The held-out recordings of branch kfresh17 (FRESH_KFRESH17).
    (
        "cgroup-unequal-weights-thinking-and-root-readers",
        "none",
        100.0,
    ),
    (
        "cgroup-unequal-weights-thinking-and-root-readers",
        "mq-deadline",
        100.0,
    ),
    (
        "cgroup-unequal-weights-thinking-and-root-readers",
        "kyber",
        100.0,
    ),
    (
        "cgroup-unequal-weights-thinking-and-root-readers",
        "bfq",
        BFQ_KFRESH17[1],
    ),
    // The second round of branch kfresh17's recordings (FRESH_KFRESH17_ROUND2).
    (
        "cgroup-unequal-weights-thinking-and-root-readers-round2",
        "none",
        100.0,
    ),
    (
        "cgroup-unequal-weights-thinking-and-root-readers-round2",
        "mq-deadline",
        100.0,
    ),
    (
        "cgroup-unequal-weights-thinking-and-root-readers-round2",
        "kyber",
        100.0,
    ),
    (
        "cgroup-unequal-weights-thinking-and-root-readers-round2",
        "bfq",
        100.0,
    ),
    // The recordings of branch kfresh18 (FRESH_KFRESH18).
    ("cgroup-weights-randreaders-and-seq-reader", "none", 100.0),
    (
        "cgroup-weights-randreaders-and-seq-reader",
        "mq-deadline",
        100.0,
    ),
    ("cgroup-weights-randreaders-and-seq-reader", "kyber", 100.0),
    ("cgroup-weights-randreaders-and-seq-reader", "bfq", 100.0),
    // The second round of branch kfresh18's recordings (FRESH_KFRESH18).
    (
        "cgroup-weights-randreaders-and-seq-reader-round2",
        "none",
        100.0,
    ),
    (
        "cgroup-weights-randreaders-and-seq-reader-round2",
        "mq-deadline",
        100.0,
    ),
    (
        "cgroup-weights-randreaders-and-seq-reader-round2",
        "kyber",
        100.0,
    ),
    (
        "cgroup-weights-randreaders-and-seq-reader-round2",
        "bfq",
        100.0,
    ),
    // Held out by kfresh15 until the replay gave each process its cgroup (FRESH_KFID21): bfq
    // 46.1% with every request in the root group.
    ("cgroup-weights-three-groups", "none", 100.0),
    ("cgroup-weights-three-groups", "mq-deadline", 100.0),
    ("cgroup-weights-three-groups", "kyber", 100.0),
    ("cgroup-weights-three-groups", "bfq", BFQ_KFID21),
    // kyber agreed on 56.3% until a request the kernel kept apart was no longer merged by
    // ours.
    ("deep-randrw-two-engines", "none", 100.0),
    ("deep-randrw-two-engines", "mq-deadline", 100.0),
    ("deep-randrw-two-engines", "kyber", 98.5),
    ("deep-randrw-two-engines", "bfq", 99.8),
    ("direct-256k-reads-beside-deep-4k-readers", "none", 100.0),
    (
        "direct-256k-reads-beside-deep-4k-readers",
        "mq-deadline",
        100.0,
    ),
    ("direct-256k-reads-beside-deep-4k-readers", "kyber", 100.0),
    ("direct-256k-reads-beside-deep-4k-readers", "bfq", 100.0),
    (
        "eight-adjacent-seq-readers-and-sub-page-writer",
        "none",
        100.0,
    ),
    (
        "eight-adjacent-seq-readers-and-sub-page-writer",
        "mq-deadline",
        100.0,
    ),
    (
        "eight-adjacent-seq-readers-and-sub-page-writer",
        "kyber",
        100.0,
    ),
    (
        "eight-adjacent-seq-readers-and-sub-page-writer",
        "bfq",
        100.0,
    ),
    // The held-out recordings of branch kfresh16 (FRESH_KFRESH16).
    ("four-k-sectors-mixed-sizes-nr4", "none", 100.0),
    ("four-k-sectors-mixed-sizes-nr4", "mq-deadline", 100.0),
    ("four-k-sectors-mixed-sizes-nr4", "kyber", 100.0),
    ("four-k-sectors-mixed-sizes-nr4", "bfq", 100.0),
    // The held-out recordings of branch kfresh17 (FRESH_KFRESH17).
    (
        "four-threads-interleaved-one-region-beside-writer",
        "none",
        100.0,
    ),
    (
        "four-threads-interleaved-one-region-beside-writer",
        "mq-deadline",
        100.0,
    ),
    (
        "four-threads-interleaved-one-region-beside-writer",
        "kyber",
        100.0,
    ),
    (
        "four-threads-interleaved-one-region-beside-writer",
        "bfq",
        100.0,
    ),
    // The second round of branch kfresh17's recordings (FRESH_KFRESH17_ROUND2).
    (
        "four-threads-interleaved-one-region-beside-writer-round2",
        "none",
        100.0,
    ),
    (
        "four-threads-interleaved-one-region-beside-writer-round2",
        "mq-deadline",
        99.8,
    ),
    (
        "four-threads-interleaved-one-region-beside-writer-round2",
        "kyber",
        100.0,
    ),
    (
        "four-threads-interleaved-one-region-beside-writer-round2",
        "bfq",
        100.0,
    ),
    ("front-merges-off-descending-readers-nr32", "none", 100.0),
    (
        "front-merges-off-descending-readers-nr32",
        "mq-deadline",
        100.0,
    ),
    ("front-merges-off-descending-readers-nr32", "kyber", 100.0),
    ("front-merges-off-descending-readers-nr32", "bfq", 100.0),
    // The held-out recordings of branch kfresh15 (FRESH_KFRESH15).
    ("fsync-every-n-writers-and-seq-trims", "none", 100.0),
    ("fsync-every-n-writers-and-seq-trims", "mq-deadline", 100.0),
    ("fsync-every-n-writers-and-seq-trims", "kyber", 100.0),
    ("fsync-every-n-writers-and-seq-trims", "bfq", 100.0),
    // The fresh recording of branch kfid7 (FRESH_KFID7).
    ("holey-reader-beside-randrw", "none", 100.0),
    ("holey-reader-beside-randrw", "mq-deadline", 100.0),
    ("holey-reader-beside-randrw", "kyber", 100.0),
    ("holey-reader-beside-randrw", "bfq", BFQ_HOLEY),
    // The second fresh recording of branch kfid10 (FRESH_KFID10).
    (
        "idle-reader-beside-buffered-writer-and-six-readers",
        "none",
        100.0,
    ),
    (
        "idle-reader-beside-buffered-writer-and-six-readers",
        "mq-deadline",
        100.0,
    ),
    (
        "idle-reader-beside-buffered-writer-and-six-readers",
        "kyber",
        100.0,
    ),
    (
        "idle-reader-beside-buffered-writer-and-six-readers",
        "bfq",
        BFQ_KFID10[1],
    ),
    ("interleaved-readers", "none", 100.0),
    ("interleaved-readers", "mq-deadline", 100.0),
    ("interleaved-readers", "kyber", 100.0),
    ("interleaved-readers", "bfq", 100.0),
    // The held-out recordings of branch kfresh16 (FRESH_KFRESH16).
    ("large-writes-split-at-64k-nr64", "none", 100.0),
    ("large-writes-split-at-64k-nr64", "mq-deadline", 98.0),
    ("large-writes-split-at-64k-nr64", "kyber", KYBER_SPLIT_64K),
    ("large-writes-split-at-64k-nr64", "bfq", 100.0),
    // The fresh recordings of stop 40 (FRESH_STOP40).
    ("many-random-readers-fsync-writer", "none", 100.0),
    ("many-random-readers-fsync-writer", "mq-deadline", 100.0),
    ("many-random-readers-fsync-writer", "kyber", 100.0),
    ("many-random-readers-fsync-writer", "bfq", 100.0),
    // The recordings of branch kfresh18 (FRESH_KFRESH18).
    ("mixed-4k-64k-randrw70-nr2", "none", 100.0),
    ("mixed-4k-64k-randrw70-nr2", "mq-deadline", 100.0),
    ("mixed-4k-64k-randrw70-nr2", "kyber", 100.0),
    ("mixed-4k-64k-randrw70-nr2", "bfq", 100.0),
    // The second round of branch kfresh18's recordings (FRESH_KFRESH18).
    ("mixed-4k-64k-randrw70-nr2-round2", "none", 100.0),
    ("mixed-4k-64k-randrw70-nr2-round2", "mq-deadline", 100.0),
    ("mixed-4k-64k-randrw70-nr2-round2", "kyber", 100.0),
    ("mixed-4k-64k-randrw70-nr2-round2", "bfq", 100.0),
    // The fresh recording. bfq agreed on 26.3% until ours marked the processes of an early
    // stable merge stably merged (bfq_do_early_stable_merge): the shared queue is no longer
    // split, and the O_DIRECT writer's requests go to the queue in service (docs/bfq.md).
    ("mixed-sizes", "none", 100.0),
    ("mixed-sizes", "mq-deadline", 100.0),
    ("mixed-sizes", "kyber", 100.0),
    ("mixed-sizes", "bfq", 98.5),
    // The same job under bfq again, minutes later: 96.4%. bfq's agreement on this mix depends
    // on the run (docs/testing.md). 100% since bfq's choices are taken in its log's order
    // (kfid20).
    ("mixed-sizes-rerun", "bfq", 100.0),
    // The held-out recordings of branch kfresh17 (FRESH_KFRESH17).
    ("osync-and-fsync-writers-beside-deep-readers", "none", 100.0),
    (
        "osync-and-fsync-writers-beside-deep-readers",
        "mq-deadline",
        100.0,
    ),
    (
        "osync-and-fsync-writers-beside-deep-readers",
        "kyber",
        100.0,
    ),
    ("osync-and-fsync-writers-beside-deep-readers", "bfq", 100.0),
    // The second round of branch kfresh17's recordings (FRESH_KFRESH17_ROUND2).
    (
        "osync-and-fsync-writers-beside-deep-readers-round2",
        "none",
        100.0,
    ),
    (
        "osync-and-fsync-writers-beside-deep-readers-round2",
        "mq-deadline",
        100.0,
    ),
    (
        "osync-and-fsync-writers-beside-deep-readers-round2",
        "kyber",
        100.0,
    ),
    (
        "osync-and-fsync-writers-beside-deep-readers-round2",
        "bfq",
        100.0,
    ),
    // The recording kfresh15 held out (FRESH_KFID17): bfq 0.7% until it read the io_context's
    // priority and io_uring workers shared their owner's context.
    ("per-io-priorities-cmdprio", "none", 100.0),
    ("per-io-priorities-cmdprio", "mq-deadline", 98.8),
    ("per-io-priorities-cmdprio", "kyber", 100.0),
    ("per-io-priorities-cmdprio", "bfq", BFQ_CMDPRIO),
    ("posixaio-and-sync-engines-nr16", "none", 100.0),
    ("posixaio-and-sync-engines-nr16", "mq-deadline", 100.0),
    ("posixaio-and-sync-engines-nr16", "kyber", 100.0),
    ("posixaio-and-sync-engines-nr16", "bfq", 100.0),
    // The held-out recordings of branch kfresh16 (FRESH_KFRESH16).
    ("prio-aging-rt-beside-idle-writers-file", "none", 100.0),
    (
        "prio-aging-rt-beside-idle-writers-file",
        "mq-deadline",
        100.0,
    ),
    ("prio-aging-rt-beside-idle-writers-file", "kyber", 100.0),
    (
        "prio-aging-rt-beside-idle-writers-file",
        "bfq",
        BFQ_KFRESH16[1],
    ),
    ("prio-classes", "none", 100.0),
    ("prio-classes", "mq-deadline", 100.0),
    ("prio-classes", "kyber", 100.0),
    ("prio-classes", "bfq", 100.0),
    // The held-out recordings of branch kfresh17 (FRESH_KFRESH17).
    ("prio-readers-and-idle-writer-file", "none", 100.0),
    ("prio-readers-and-idle-writer-file", "mq-deadline", 100.0),
    ("prio-readers-and-idle-writer-file", "kyber", 99.8),
    ("prio-readers-and-idle-writer-file", "bfq", BFQ_KFRESH17[2]),
    // The second round of branch kfresh17's recordings (FRESH_KFRESH17_ROUND2).
    ("prio-readers-and-idle-writer-file-round2", "none", 100.0),
    (
        "prio-readers-and-idle-writer-file-round2",
        "mq-deadline",
        100.0,
    ),
    ("prio-readers-and-idle-writer-file-round2", "kyber", 100.0),
    ("prio-readers-and-idle-writer-file-round2", "bfq", 100.0),
    // The fresh recording of branch seeds3: bfq diverged from decision 4 (ours found the
    // returning sequential reader soft real-time 20 ms after its expiry and let it preempt
    // the real-time reader; the kernel, at HZ = 250, bounds it 6 jiffies = 24 ms ahead).
    ("prio-writers-beside-reader", "none", 100.0),
    ("prio-writers-beside-reader", "mq-deadline", 100.0),
    ("prio-writers-beside-reader", "kyber", 100.0),
    ("prio-writers-beside-reader", "bfq", BFQ_SEEDS3),
    ("prio-writers-deep-beside-rt-reader", "none", 100.0),
    ("prio-writers-deep-beside-rt-reader", "mq-deadline", 100.0),
    ("prio-writers-deep-beside-rt-reader", "kyber", 100.0),
    ("prio-writers-deep-beside-rt-reader", "bfq", BFQ_KFID13[1]),
    ("process-burst", "none", 100.0),
    ("process-burst", "mq-deadline", 100.0),
    ("process-burst", "kyber", 100.0),
    ("process-burst", "bfq", 100.0),
    ("qd1-zero-think-beside-qd32-readers-nr32", "none", 100.0),
    (
        "qd1-zero-think-beside-qd32-readers-nr32",
        "mq-deadline",
        99.4,
    ),
    ("qd1-zero-think-beside-qd32-readers-nr32", "kyber", 99.9),
    ("qd1-zero-think-beside-qd32-readers-nr32", "bfq", 100.0),
    // The recordings of branch kfresh18 (FRESH_KFRESH18).
    ("randread-qd1-qd4-qd16-qd32-libaio", "none", 100.0),
    ("randread-qd1-qd4-qd16-qd32-libaio", "mq-deadline", 100.0),
    ("randread-qd1-qd4-qd16-qd32-libaio", "kyber", 100.0),
    ("randread-qd1-qd4-qd16-qd32-libaio", "bfq", 100.0),
    // The second round of branch kfresh18's recordings (FRESH_KFRESH18).
    ("randread-qd1-qd4-qd16-qd32-libaio-round2", "none", 100.0),
    (
        "randread-qd1-qd4-qd16-qd32-libaio-round2",
        "mq-deadline",
        100.0,
    ),
    ("randread-qd1-qd4-qd16-qd32-libaio-round2", "kyber", 99.8),
    ("randread-qd1-qd4-qd16-qd32-libaio-round2", "bfq", 100.0),
    // The recordings of branch kfresh18 (FRESH_KFRESH18).
    ("randrw70-libaio-qd4-numjobs4-nr64", "none", 100.0),
    ("randrw70-libaio-qd4-numjobs4-nr64", "mq-deadline", 100.0),
    ("randrw70-libaio-qd4-numjobs4-nr64", "kyber", 99.8),
    ("randrw70-libaio-qd4-numjobs4-nr64", "bfq", 100.0),
    // The second round of branch kfresh18's recordings (FRESH_KFRESH18).
    ("randrw70-libaio-qd4-numjobs4-nr64-round2", "none", 100.0),
    (
        "randrw70-libaio-qd4-numjobs4-nr64-round2",
        "mq-deadline",
        100.0,
    ),
    ("randrw70-libaio-qd4-numjobs4-nr64-round2", "kyber", 100.0),
    ("randrw70-libaio-qd4-numjobs4-nr64-round2", "bfq", 100.0),
    // The recordings of branch kfresh18 (FRESH_KFRESH18).
    ("randwrite-iouring-qd32-numjobs2", "none", 100.0),
    ("randwrite-iouring-qd32-numjobs2", "mq-deadline", 100.0),
    ("randwrite-iouring-qd32-numjobs2", "kyber", 100.0),
    ("randwrite-iouring-qd32-numjobs2", "bfq", 100.0),
    // The second round of branch kfresh18's recordings (FRESH_KFRESH18).
    ("randwrite-iouring-qd32-numjobs2-round2", "none", 100.0),
    (
        "randwrite-iouring-qd32-numjobs2-round2",
        "mq-deadline",
        100.0,
    ),
    ("randwrite-iouring-qd32-numjobs2-round2", "kyber", 100.0),
    ("randwrite-iouring-qd32-numjobs2-round2", "bfq", 100.0),
    // The held-out recordings of branch kfresh17 (FRESH_KFRESH17).
    (
        "rate-limited-readers-beside-greedy-randreader",
        "none",
        100.0,
    ),
    (
        "rate-limited-readers-beside-greedy-randreader",
        "mq-deadline",
        99.8,
    ),
    (
        "rate-limited-readers-beside-greedy-randreader",
        "kyber",
        100.0,
    ),
    (
        "rate-limited-readers-beside-greedy-randreader",
        "bfq",
        100.0,
    ),
    // The second round of branch kfresh17's recordings (FRESH_KFRESH17_ROUND2).
    (
        "rate-limited-readers-beside-greedy-randreader-round2",
        "none",
        100.0,
    ),
    (
        "rate-limited-readers-beside-greedy-randreader-round2",
        "mq-deadline",
        99.5,
    ),
    (
        "rate-limited-readers-beside-greedy-randreader-round2",
        "kyber",
        100.0,
    ),
    (
        "rate-limited-readers-beside-greedy-randreader-round2",
        "bfq",
        99.3,
    ),
    ("reader-beside-batched-writers", "none", 100.0),
    ("reader-beside-batched-writers", "mq-deadline", 100.0),
    ("reader-beside-batched-writers", "kyber", 100.0),
    ("reader-beside-batched-writers", "bfq", 100.0),
    ("reader-beside-direct-writers", "none", 100.0),
    ("reader-beside-direct-writers", "mq-deadline", 100.0),
    ("reader-beside-direct-writers", "kyber", 99.3),
    ("reader-beside-direct-writers", "bfq", 98.6),
    ("readers-thinking-past-slice-idle", "none", 100.0),
    ("readers-thinking-past-slice-idle", "mq-deadline", 100.0),
    ("readers-thinking-past-slice-idle", "kyber", 100.0),
    ("readers-thinking-past-slice-idle", "bfq", 100.0),
    ("readers-writers", "none", 100.0),
    ("readers-writers", "mq-deadline", 100.0),
    ("readers-writers", "kyber", 100.0),
    ("readers-writers", "bfq", 94.8),
    (NONE_CPU_ORDER[1], "none", 100.0),
    (
        "rt-and-idle-batches-beside-be-readers-nr4",
        "mq-deadline",
        99.7,
    ),
    ("rt-and-idle-batches-beside-be-readers-nr4", "kyber", 99.4),
    ("rt-and-idle-batches-beside-be-readers-nr4", "bfq", 100.0),
    // The first fresh recording of branch kfid10 (FRESH_KFID10).
    ("rt-reader-beside-deep-randwrite", "none", 100.0),
    (
        "rt-reader-beside-deep-randwrite",
        "mq-deadline",
        MQ_DEADLINE_RT,
    ),
    ("rt-reader-beside-deep-randwrite", "kyber", 100.0),
    ("rt-reader-beside-deep-randwrite", "bfq", BFQ_KFID10[0]),
    ("same-blocks-readers-and-writers-nr4", "none", 100.0),
    ("same-blocks-readers-and-writers-nr4", "mq-deadline", 100.0),
    ("same-blocks-readers-and-writers-nr4", "kyber", 100.0),
    ("same-blocks-readers-and-writers-nr4", "bfq", 100.0),
    // The recordings of branch kfresh18 (FRESH_KFRESH18).
    ("seq-and-rand-readers-beside-randwriter-file", "none", 100.0),
    (
        "seq-and-rand-readers-beside-randwriter-file",
        "mq-deadline",
        100.0,
    ),
    (
        "seq-and-rand-readers-beside-randwriter-file",
        "kyber",
        100.0,
    ),
    ("seq-and-rand-readers-beside-randwriter-file", "bfq", 100.0),
    // The second round of branch kfresh18's recordings (FRESH_KFRESH18).
    (
        "seq-and-rand-readers-beside-randwriter-file-round2",
        "none",
        100.0,
    ),
    (
        "seq-and-rand-readers-beside-randwriter-file-round2",
        "mq-deadline",
        100.0,
    ),
    (
        "seq-and-rand-readers-beside-randwriter-file-round2",
        "kyber",
        100.0,
    ),
    (
        "seq-and-rand-readers-beside-randwriter-file-round2",
        "bfq",
        100.0,
    ),
    // The recordings of branch kfresh18 (FRESH_KFRESH18).
    ("seq-read-1m-then-write-128k-stonewall", "none", 100.0),
    (
        "seq-read-1m-then-write-128k-stonewall",
        "mq-deadline",
        100.0,
    ),
    ("seq-read-1m-then-write-128k-stonewall", "kyber", 100.0),
    (
        "seq-read-1m-then-write-128k-stonewall",
        "bfq",
        BFQ_KFRESH18[0],
    ),
    // The second round of branch kfresh18's recordings (FRESH_KFRESH18).
    (
        "seq-read-1m-then-write-128k-stonewall-round2",
        "none",
        100.0,
    ),
    (
        "seq-read-1m-then-write-128k-stonewall-round2",
        "mq-deadline",
        100.0,
    ),
    (
        "seq-read-1m-then-write-128k-stonewall-round2",
        "kyber",
        100.0,
    ),
    (
        "seq-read-1m-then-write-128k-stonewall-round2",
        "bfq",
        BFQ_KFRESH18[1],
    ),
    // The recordings of branch kfresh18 (FRESH_KFRESH18).
    ("seq-reader-beside-seq-writer", "none", 100.0),
    ("seq-reader-beside-seq-writer", "mq-deadline", 100.0),
    ("seq-reader-beside-seq-writer", "kyber", 100.0),
    ("seq-reader-beside-seq-writer", "bfq", 99.3),
    // The second round of branch kfresh18's recordings (FRESH_KFRESH18).
    ("seq-reader-beside-seq-writer-round2", "none", 100.0),
    ("seq-reader-beside-seq-writer-round2", "mq-deadline", 100.0),
    ("seq-reader-beside-seq-writer-round2", "kyber", 100.0),
    (
        "seq-reader-beside-seq-writer-round2",
        "bfq",
        BFQ_KFRESH18[2],
    ),
    // The held-out recordings of branch kfresh16 (FRESH_KFRESH16).
    ("seq-readers-rotational-nomerges1-file", "none", 100.0),
    (
        "seq-readers-rotational-nomerges1-file",
        "mq-deadline",
        100.0,
    ),
    ("seq-readers-rotational-nomerges1-file", "kyber", 100.0),
    // bfq 30.5% until its budget timeout counted whole jiffies (bfq_set_budget_timeout).
    ("seq-readers-rotational-nomerges1-file", "bfq", 100.0),
    ("short-budgets-seq-readers-rotational-nr16", "none", 100.0),
    (
        "short-budgets-seq-readers-rotational-nr16",
        "mq-deadline",
        100.0,
    ),
    ("short-budgets-seq-readers-rotational-nr16", "kyber", 100.0),
    ("short-budgets-seq-readers-rotational-nr16", "bfq", 99.8),
    ("short-read-expire-batch1-randrw-nr16", "none", 100.0),
    ("short-read-expire-batch1-randrw-nr16", "mq-deadline", 100.0),
    ("short-read-expire-batch1-randrw-nr16", "kyber", 99.8),
    ("short-read-expire-batch1-randrw-nr16", "bfq", 100.0),
    // The fresh recording of branch kdiff4. bfq agreed on 40.0% until its injection walked
    // the kernel's active_list order (42.0%) and injected the in-service queue's waker queue
    // (bfq_check_waker; its bfq log: `set waker`): 100%.
    // none and kyber agreed on 10.3% and 76.8% until the replay stopped splitting at 128
    // pages the 1 MiB reads the kernel issued whole; bfq agreed on 10.2% until the replay
    // submitted the kernel's merges into queued requests, 15.0% until ours cached
    // sd->next_in_service, 66.5% until a shared queue was no waker (BFQ_SPLIT_READS).
    ("split-reads-beside-small-writes", "none", 100.0),
    ("split-reads-beside-small-writes", "mq-deadline", 100.0),
    ("split-reads-beside-small-writes", "kyber", 100.0),
    ("split-reads-beside-small-writes", "bfq", BFQ_SPLIT_READS),
    ("sqpoll-and-pvsync2-mixed-rw", "none", 100.0),
    ("sqpoll-and-pvsync2-mixed-rw", "mq-deadline", 100.0),
    ("sqpoll-and-pvsync2-mixed-rw", "kyber", 100.0),
    ("sqpoll-and-pvsync2-mixed-rw", "bfq", BFQ_KFID13[2]),
    // The held-out recordings of branch kfresh17 (FRESH_KFRESH17).
    ("thinking-readers-across-prio-levels", "none", 100.0),
    ("thinking-readers-across-prio-levels", "mq-deadline", 100.0),
    ("thinking-readers-across-prio-levels", "kyber", 100.0),
    ("thinking-readers-across-prio-levels", "bfq", 99.9),
    // The second round of branch kfresh17's recordings (FRESH_KFRESH17_ROUND2).
    ("thinking-readers-across-prio-levels-round2", "none", 100.0),
    (
        "thinking-readers-across-prio-levels-round2",
        "mq-deadline",
        99.7,
    ),
    ("thinking-readers-across-prio-levels-round2", "kyber", 100.0),
    (
        "thinking-readers-across-prio-levels-round2",
        "bfq",
        BFQ_KFRESH17_ROUND2[1],
    ),
    (
        "thinking-readers-beside-batched-sync-writers",
        "none",
        100.0,
    ),
    (
        "thinking-readers-beside-batched-sync-writers",
        "mq-deadline",
        100.0,
    ),
    (
        "thinking-readers-beside-batched-sync-writers",
        "kyber",
        99.6,
    ),
    ("thinking-readers-beside-batched-sync-writers", "bfq", 99.5),
    ("thinking-readers-fsync-writers", "none", 100.0),
    ("thinking-readers-fsync-writers", "mq-deadline", 100.0),
    ("thinking-readers-fsync-writers", "kyber", 100.0),
    ("thinking-readers-fsync-writers", "bfq", 100.0),
    ("three-waves-of-short-processes", "none", 100.0),
    ("three-waves-of-short-processes", "mq-deadline", 100.0),
    ("three-waves-of-short-processes", "kyber", 100.0),
    ("three-waves-of-short-processes", "bfq", 100.0),
    ("trim-beside-readers-and-writer", "none", 100.0),
    ("trim-beside-readers-and-writer", "mq-deadline", 100.0),
    ("trim-beside-readers-and-writer", "kyber", 100.0),
    ("trim-beside-readers-and-writer", "bfq", 100.0),
    // The held-out recordings of branch kfresh17 (FRESH_KFRESH17).
    (
        "tuned-budget-thinking-readers-and-writer-nr16",
        "none",
        100.0,
    ),
    (
        "tuned-budget-thinking-readers-and-writer-nr16",
        "mq-deadline",
        100.0,
    ),
    (
        "tuned-budget-thinking-readers-and-writer-nr16",
        "kyber",
        100.0,
    ),
    (
        "tuned-budget-thinking-readers-and-writer-nr16",
        "bfq",
        BFQ_KFRESH17[3],
    ),
    // The second round of branch kfresh17's recordings (FRESH_KFRESH17_ROUND2).
    (
        "tuned-budget-thinking-readers-and-writer-nr16-round2",
        "none",
        100.0,
    ),
    (
        "tuned-budget-thinking-readers-and-writer-nr16-round2",
        "mq-deadline",
        100.0,
    ),
    (
        "tuned-budget-thinking-readers-and-writer-nr16-round2",
        "kyber",
        99.6,
    ),
    (
        "tuned-budget-thinking-readers-and-writer-nr16-round2",
        "bfq",
        BFQ_KFRESH17_ROUND2[2],
    ),
    ("twelve-procs-mixed-prio", "none", 100.0),
    ("twelve-procs-mixed-prio", "mq-deadline", 100.0),
    ("twelve-procs-mixed-prio", "kyber", 100.0),
    ("twelve-procs-mixed-prio", "bfq", BFQ_KFID13[0]),
    ("two-mib-reads-split-at-256k-max-sectors", "none", 100.0),
    (
        "two-mib-reads-split-at-256k-max-sectors",
        "mq-deadline",
        100.0,
    ),
    ("two-mib-reads-split-at-256k-max-sectors", "kyber", 100.0),
    ("two-mib-reads-split-at-256k-max-sectors", "bfq", 100.0),
    ("weighted-seq-readers", "none", 100.0),
    ("weighted-seq-readers", "mq-deadline", 100.0),
    ("weighted-seq-readers", "kyber", 100.0),
    ("weighted-seq-readers", "bfq", 100.0),
    // The held-out recordings of branch kfresh16 (FRESH_KFRESH16).
    (
        "writes-starved-1-seq-reads-vs-writes-nomerges2",
        "none",
        100.0,
    ),
    (
        "writes-starved-1-seq-reads-vs-writes-nomerges2",
        "mq-deadline",
        99.3,
    ),
    (
        "writes-starved-1-seq-reads-vs-writes-nomerges2",
        "kyber",
        99.0,
    ),
    (
        "writes-starved-1-seq-reads-vs-writes-nomerges2",
        "bfq",
        BFQ_KFRESH16[0],
    ),
];

#[test]
fn the_corpus_agrees_with_the_kernel_as_measured() {
    let rows = rows();
    println!("{}", markdown(&rows));
    for r in &rows {
        for d in divergences(r, 3) {
            println!("{d}");
        }
    }
    assert_eq!(rows.len(), FLOOR.len());
    for (r, (mix, sched, floor)) in rows.iter().zip(FLOOR) {
        assert_eq!((r.mix.as_str(), r.scheduler.as_str()), (mix, sched));
        let share = 100.0 * r.kernel_pace.agreement.share();
        assert!(
            share >= floor - 1.0,
            "{mix}/{sched}: {share:.1}% of the kernel's decisions, measured {floor}%"
        );
        // The sets agree wherever the choices did: a divergence is a choice, never lost
        // requests.
        assert!(r.kernel_pace.agreement.same_set >= r.kernel_pace.agreement.same_choice);
        if sched == "none" {
            // blk-mq without an elevator dispatches each run's software queues CPU by CPU,
            // each in arrival order: exactly ours (NONE_CPU_ORDER since kfid22).
            assert_eq!(r.kernel_pace.agreement.first_divergence, None, "{mix}");
        }
    }
    // Over the corpus, per scheduler, as measured minus a point (measured: none 100%,
    // mq-deadline 100%, kyber 100% since kfid13, 99.0% and 99.6% before; bfq 97.8%; issue
    // 27's targets 100, 99, 97 and 90).
    for (sched, floor) in [
        ("none", 100.0),
        ("mq-deadline", 99.0),
        ("kyber", 99.0),
        ("bfq", 96.8),
    ] {
        let (n, a) = rows
            .iter()
            .filter(|r| r.scheduler == sched && !fresh(&r.mix))
            .fold((0, 0), |(n, a), r| {
                (
                    n + r.kernel_pace.agreement.decisions,
                    a + r.kernel_pace.agreement.same_choice,
                )
            });
        let share = 100.0 * a as f64 / n as f64;
        assert!(
            share >= floor,
            "{sched}: {share:.1}% over the corpus, floor {floor}%"
        );
    }
    // Issue 27: on every fresh recording (a job mix not in the corpus when it was recorded)
    // each scheduler's agreement is within 2 points of its corpus figure. Measured: FRESH
    // none 100%, mq-deadline 98.5%, kyber 100%, bfq 97.8%; the two FRESH_TODAY recordings
    // 100 / 100%, 100 / 100%, 100 / 99.3%, 100 / 98.6%; FRESH_SEEDS3 (bfq since it counts
    // jiffies at the kernel's HZ) and FRESH_KDIFF4 (bfq since it walks the active list and
    // injects waker queues) 100% under each.
    let corpus = [
        ("none", 100.0),
        ("mq-deadline", 99.0),
        ("kyber", 99.6),
        ("bfq", 97.8),
    ];
    for mix in [
        FRESH,
        FRESH_SEEDS3,
        FRESH_KDIFF4,
        FRESH_STOP40[0],
        FRESH_STOP40[1],
        FRESH_KFID7,
        FRESH_KFID10[0],
        FRESH_KFID10[1],
        FRESH_KFID17,
        FRESH_KFID21,
    ]
    .into_iter()
    .chain(FRESH_KFID13)
    .chain(FRESH_KFRESH15)
    .chain(FRESH_KFRESH16)
    .chain(FRESH_KFRESH17)
    .chain(FRESH_KFRESH17_ROUND2)
    .chain(FRESH_KFRESH18)
    {
        for (sched, _) in corpus {
            assert!(
                rows.iter().any(|r| r.mix == mix && r.scheduler == sched),
                "{mix}/{sched}: not recorded"
            );
        }
    }
    for r in rows.iter().filter(|r| fresh(&r.mix)) {
        if [
            (FRESH_KFID7, "bfq"),
            (FRESH_KFID17, "bfq"),
            (FRESH_KFID13[3], "bfq"),
            (FRESH_KFID13[5], "bfq"),
            (FRESH_KFRESH15[7], "bfq"),
            (FRESH_KFRESH16[1], "bfq"),
            (FRESH_KFRESH16[6], "kyber"),
            (FRESH_KFRESH16[7], "bfq"),
            (FRESH_KFRESH17[1], "bfq"),
            (FRESH_KFRESH17[2], "bfq"),
            (FRESH_KFRESH17[5], "bfq"),
            (FRESH_KFRESH17[8], "bfq"),
            (FRESH_KFRESH17_ROUND2[1], "bfq"),
            (FRESH_KFRESH17_ROUND2[7], "bfq"),
            (FRESH_KFRESH17_ROUND2[8], "bfq"),
            (FRESH_KFRESH18[14], "bfq"),
            (FRESH_KFRESH18[15], "bfq"),
            (FRESH_KFRESH18[17], "bfq"),
        ]
        .contains(&(r.mix.as_str(), r.scheduler.as_str()))
        {
            // The known misses (BFQ_HOLEY, BFQ_KFID10, BFQ_KFID13, BFQ_BATCHED, BFQ_KFID21),
            // held at their measured figures above; BFQ_HOLEY, twelve-procs-mixed-prio and
            // BFQ_BATCHED (since kfid19 and kfid20) within 2 points of issue 27's target
            // (90%), not of the corpus.
            if [FRESH_KFID7, FRESH_KFID13[3], FRESH_KFRESH15[7]].contains(&r.mix.as_str()) {
                assert!(100.0 * r.kernel_pace.agreement.share() >= 90.0 - 2.0);
            }
            // KYBER_SPLIT_64K and BFQ_KFRESH16's first within 2 points of issue 27's targets
            // (97 and 90%).
            if (r.mix.as_str(), r.scheduler.as_str()) == (FRESH_KFRESH16[6], "kyber") {
                assert!(100.0 * r.kernel_pace.agreement.share() >= 97.0 - 2.0);
            }
            if (r.mix.as_str(), r.scheduler.as_str()) == (FRESH_KFRESH16[1], "bfq") {
                assert!(100.0 * r.kernel_pace.agreement.share() >= 90.0 - 2.0);
            }
            // BFQ_KFRESH17's first at issue 27's fresh-recording target for bfq (88%).
            if (r.mix.as_str(), r.scheduler.as_str()) == (FRESH_KFRESH17[1], "bfq") {
                assert!(100.0 * r.kernel_pace.agreement.share() >= 88.0);
            }
            // BFQ_KFRESH18's first two at issue 27's fresh-recording target for bfq (88%).
            if [FRESH_KFRESH18[14], FRESH_KFRESH18[15]].contains(&r.mix.as_str()) {
                assert!(100.0 * r.kernel_pace.agreement.share() >= 88.0);
            }
            continue;
        }
        let Some(&(_, floor)) = corpus.iter().find(|(s, _)| *s == r.scheduler) else {
            continue;
        };
        let share = 100.0 * r.kernel_pace.agreement.share();
        assert!(
            share >= floor - 2.0,
            "{}/{}: {share:.1}%, corpus {floor}%",
            r.mix,
            r.scheduler
        );
    }
}

/// `kernel-diff --divergences N` printed a divergence whose queued set on our side held a
/// request the kernel never had (an insertion merge ours did not make becomes a request of
/// its own, numbered past the kernel's) by indexing the kernel's requests with it, and
/// panicked: `batched-readers-writers-one-region-nr16`/bfq at N = 5000 (index 1280 of 1279).
/// Since the replay allocates at `block_getrq` (kfid19) ours makes every insertion merge
/// there, and `prio-writers-deep-beside-rt-reader`/bfq is the recording with such a request.
#[test]
fn a_divergence_naming_a_request_only_ours_had_prints_without_panicking() {
    let dir = corpus().join("prio-writers-deep-beside-rt-reader/bfq");
    let row = diff_recording(&dir, &DiffOptions::default()).unwrap();
    let kernel_requests = row.requests.len();
    let all = divergences(&row, usize::MAX);
    assert!(all.len() > 100, "{} divergences", all.len());
    assert!(
        all.iter()
            .any(|d| d.contains("(ours only: not a kernel request)")),
        "no request of ours past the kernel's {kernel_requests}"
    );
}

/// A user who writes `nr_requests` 2 gets 4 tags from the kernel (`queue_requests_store`
/// raises anything under `BLKDEV_MIN_RQ`), and the replay must give ours the 4 the queue kept,
/// not the 2 that was written: `mixed-4k-64k-randrw70-nr2` (branch kfresh18) was recorded with
/// `--set nr_requests=2`, which the recording's settings keep as written and its queue
/// snapshot shows as 4. (Our kyber has no `nr_requests`: its 256 tags are a named deviation,
/// crates/core/src/kyber.rs.)
#[test]
fn nr_requests_written_as_two_replays_as_the_four_the_kernel_kept() {
    for round in ["", "-round2"] {
        for sched in ["mq-deadline", "bfq"] {
            let dir = corpus().join(format!("mixed-4k-64k-randrw70-nr2{round}/{sched}"));
            let rec = elevator_workload::traces::ftrace::Recording::open(&dir).unwrap();
            assert_eq!(
                rec.meta.settings.get("nr_requests").map(String::as_str),
                Some("2"),
                "{}",
                dir.display()
            );
            let row = diff_recording(&dir, &DiffOptions::default()).unwrap();
            assert!(
                row.kernel_pace
                    .settings
                    .contains(&("nr_requests".to_string(), 4)),
                "{}: {:?}",
                dir.display(),
                row.kernel_pace.settings
            );
        }
    }
}
