//! The job interface: what a process model says it does next.

use elevator_core::{IoPrio, Nanos, Op};

/// One I/O a job wants issued.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IoSpec {
    /// Which of the job's contexts (processes) issues it: 0-based, local to the job. The driver
    /// maps it to a run-wide [`CtxId`](elevator_core::CtxId).
    pub ctx: u32,
    /// Read, write, flush or discard.
    pub op: Op,
    /// Whether the issuer waits for it (reads always do).
    pub sync: bool,
    /// Filesystem metadata.
    pub meta: bool,
    /// Linux REQ_IDLE, which the kernel's direct-I/O paths set on O_DIRECT writes (with
    /// `sync`): more I/O follows. False for reads, writeback and fsync/O_SYNC writes. See
    /// [`Request::idle_hint`](elevator_core::Request::idle_hint).
    pub idle_hint: bool,
    /// First sector on the device.
    pub sector: u64,
    /// Length in sectors.
    pub sectors: u32,
    /// Priority; `None` for the job's default.
    pub prio: Option<IoPrio>,
    /// The job's own label for this I/O, handed back on completion.
    pub tag: u64,
}

impl IoSpec {
    /// The bio this I/O is, issued by the run-wide context `ctx` of a job in `group` whose
    /// I/O has priority `prio` unless it names its own.
    pub fn bio(
        &self,
        ctx: elevator_core::CtxId,
        group: elevator_core::GroupId,
        prio: IoPrio,
    ) -> elevator_core::block::Bio {
        elevator_core::block::Bio {
            ctx,
            group,
            op: self.op,
            sync: self.sync,
            meta: self.meta,
            idle_hint: self.idle_hint,
            sector: self.sector,
            sectors: self.sectors,
            prio: self.prio.unwrap_or(prio),
            submitted: None,
            own_request: false,
            issue_directly: false,
            insertion_merge: false,
            cpu: 0,
        }
    }
}

/// What a job does next.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action {
    /// Issue this I/O now, then ask again (a job may issue several before waiting).
    Issue(IoSpec),
    /// Issue these I/Os now in one submission call (fio's commit of its queued I/Os: one
    /// `io_uring_enter` or `io_submit` for them all), in order, then ask again. The driver
    /// plugs a batch of more than `elevator_core::block::PLUG_THRESHOLD` I/Os of one context in the block layer
    /// (`BlockLayer::handle_plug`), as the kernel's io_uring and aio submissions do.
    Batch(Vec<IoSpec>),
    /// Context `ctx` exits (a process ends); ask again.
    Exit {
        /// The local context index.
        ctx: u32,
    },
    /// Compute (think) until `until`; ask again then, or at the next completion.
    Think {
        /// When the job wants to run again.
        until: Nanos,
    },
    /// Blocked until one of its I/Os completes.
    Wait,
    /// Finished: the job issues nothing more.
    Done,
}

/// A sans-IO workload: a process model or a trace replayer.
///
/// The driver calls [`poll`](Job::poll) at start, after each completion (reported through
/// [`complete`](Job::complete)) and when a `Think` deadline passes, each time repeatedly until it
/// answers `Think`, `Wait` or `Done`. Jobs read no clock and own their RNG (seeded from the
/// scenario), so a run is deterministic.
pub trait Job {
    /// The job's name, as reports print it.
    fn name(&self) -> &str;
    /// What next?
    fn poll(&mut self, now: Nanos) -> Action;
    /// The I/O labelled `tag` completed at `now`.
    fn complete(&mut self, tag: u64, now: Nanos);
    /// The pid and command name context `ctx` stands for, where the job knows better than
    /// its own name (a trace replay's recorded processes); `None` by default.
    fn ctx_label(&self, _ctx: u32) -> Option<(u32, String)> {
        None
    }
    /// Why the job ended before its input did, if it did: a trace replay whose file changed
    /// between its check and its run. A run with such a job did not run its input, so its
    /// figures must not be reported as the input's. `None` by default.
    fn error(&self) -> Option<String> {
        None
    }
    /// How far the job is through the work that ends it by itself, as (done, total) in units
    /// of its own (bytes, files, steps), so a caller can tell the work a whole run implies
    /// from its start (`elevator_sim::work`). `None` (the default) when its end is not a
    /// count it knows: its run's time, its input, a size counted elsewhere.
    fn progress(&self) -> Option<(u64, u64)> {
        None
    }

    /// Whether the job learns of its completions later than they happen (fio reaping
    /// `iodepth_batch_complete_min` of them at a time): the driver then counts each I/O's
    /// latency to when the job hands its tag back through [`take_reaped`](Job::take_reaped),
    /// as fio stamps `clat` when it reaps, not to its completion. Fixed once the job is built:
    /// drivers ask once ([`CompletionRecorder`](crate::metrics::CompletionRecorder)). False
    /// by default.
    fn reaps_late(&self) -> bool {
        false
    }

    /// Append the tags of the I/Os the job reaped since it was last asked, in order (a job
    /// that [`reaps_late`](Job::reaps_late); the default has none). The driver asks after
    /// each [`poll`](Job::poll).
    fn take_reaped(&mut self, _out: &mut Vec<u64>) {}

    /// Whether the I/O labelled `tag` counts in the job's figures: true (the default) for
    /// all but the I/Os a job does outside its measured work (fio's `end_fsync`, which it
    /// leaves out of its `sync` figures).
    fn counts_in_figures(&self, _tag: u64) -> bool {
        true
    }

    /// Steps of its own model this job computed so far besides its I/Os (a compile's
    /// page-cache operations, each a page looked up, brought in or aged), for the work bound
    /// of a simulated run (`elevator_sim::Simulation::work_done`): a job whose model costs
    /// compute per page, not per I/O, counts it here. 0 (the default) for the rest.
    fn model_steps(&self) -> u64 {
        0
    }

    /// Whether what the job does depends on the seed it was built with (its
    /// [`crate::spec::BuildEnv`]'s): true (the default) unless the job knows it draws nothing
    /// from it, as a sequential fio job of one direction does. Two runs of the same jobs,
    /// drive and scheduler whose jobs all say false are the same run whatever their seeds.
    fn draws_from_seed(&self) -> bool {
        true
    }
}
