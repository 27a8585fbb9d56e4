//! Statistics AS decides by, kept with the kernel's 7/8-decay fixed point: each process's
//! think time and seek distance (`as_io_context`), the means of new processes and the exit
//! probabilities (`as_data`), and the table that keeps each process's state while it matters.

use crate::id_map::IdMap;
use crate::request::CtxId;

use super::Anticipatory;

/// Fixed point: 1.0.
pub(super) const ONE: u64 = 256;

/// Seek samples up to which the generous seek clip applies.
pub(super) const SEEK_EARLY_SAMPLES: u64 = 60;

/// Per-process state (`struct as_io_context`).
#[derive(Clone, Debug)]
pub(super) struct Aic {
    /// AS_TASK_RUNNING: the process has not exited.
    pub(super) running: bool,
    /// AS_TASK_IOSTARTED: it has submitted a sync request.
    pub(super) io_started: bool,
    /// AS_TASK_IORUNNING: one of its sync requests has completed.
    pub(super) io_running: bool,
    pub(super) nr_queued: u32,
    /// Jiffies at the last sync completion.
    pub(super) last_end_request: u64,
    pub(super) last_request_pos: u64,
    pub(super) ttime_total: u64,
    pub(super) ttime_samples: u64,
    /// In jiffies.
    pub(super) ttime_mean: u64,
    pub(super) seek_total: u64,
    pub(super) seek_samples: u64,
    pub(super) seek_mean: u64,
}

impl Aic {
    pub(super) fn new() -> Aic {
        Aic {
            running: true,
            io_started: false,
            io_running: false,
            nr_queued: 0,
            last_end_request: 0,
            last_request_pos: 0,
            ttime_total: 0,
            ttime_samples: 0,
            ttime_mean: 0,
            seek_total: 0,
            seek_samples: 0,
            seek_mean: 0,
        }
    }
}

/// The global statistics of `struct as_data`.
#[derive(Clone, Debug, Default)]
pub(super) struct Globals {
    pub(super) exit_prob: u64,
    pub(super) exit_no_coop: u64,
    pub(super) new_ttime_total: u64,
    /// In jiffies.
    pub(super) new_ttime_mean: u64,
    pub(super) new_seek_total: u64,
    pub(super) new_seek_mean: u64,
}

/// `(7 * old + sample) / 8`: the kernel's decaying average step.
pub(super) fn decay(old: u64, sample: u64) -> u64 {
    (7 * old + sample) / 8
}

pub(super) fn update_thinktime(g: &mut Globals, aic: &mut Aic, ttime: u64) {
    if aic.ttime_samples == 0 {
        g.new_ttime_total = decay(g.new_ttime_total, ONE * ttime);
        g.new_ttime_mean = g.new_ttime_total / ONE;
        g.exit_prob = decay(g.exit_prob, 0);
    }
    aic.ttime_samples = decay(aic.ttime_samples, ONE);
    aic.ttime_total = decay(aic.ttime_total, ONE * ttime);
    aic.ttime_mean = (aic.ttime_total + ONE / 2) / aic.ttime_samples;
}

pub(super) fn update_seekdist(g: &mut Globals, aic: &mut Aic, sdist: u64) {
    if aic.seek_samples == 0 {
        g.new_seek_total = decay(g.new_seek_total, ONE * sdist);
        g.new_seek_mean = g.new_seek_total / ONE;
    }
    // The odd fragment or page-in must not blow up the mean: clip generously for the first
    // few samples, tighter afterwards.
    let clip = if aic.seek_samples <= SEEK_EARLY_SAMPLES {
        aic.seek_mean * 4 + 2 * 1024 * 1024
    } else {
        aic.seek_mean * 4 + 2 * 1024 * 64
    };
    let sdist = sdist.min(clip);
    aic.seek_samples = decay(aic.seek_samples, ONE);
    aic.seek_total = decay(aic.seek_total, ONE * sdist);
    aic.seek_mean = (aic.seek_total + aic.seek_samples / 2) / aic.seek_samples;
}

/// `as_update_iohist`: feed a sync request at `sector..end`, arriving at tick `jiffies`,
/// into `aic`'s history. Think times are capped just below `MAX_THINKTIME` = `hz / 50`.
pub(super) fn update_iohist(
    g: &mut Globals,
    aic: &mut Aic,
    (sector, end): (u64, u64),
    jiffies: u64,
    hz: u32,
) {
    if aic.io_running || aic.io_started {
        let mut ttime = 0;
        // The kernel adds the dispatched-but-not-activated count, always 0 here.
        if aic.io_running && aic.nr_queued == 0 {
            let max_thinktime = u64::from(hz) / 50;
            ttime = jiffies
                .saturating_sub(aic.last_end_request)
                .min(max_thinktime - 1);
        }
        update_thinktime(g, aic, ttime);
        update_seekdist(g, aic, aic.last_request_pos.abs_diff(sector));
    }
    aic.last_request_pos = end;
    aic.io_started = true;
}

/// Contexts below this id are kept in a plain vector (the common case: drivers number their
/// processes from zero); others in a hash map.
const DENSE_CTX: u32 = 4096;

/// Per-process state by context id, without hashing for small ids.
#[derive(Debug, Default)]
pub(super) struct AicTable {
    pub(super) dense: Vec<Option<Aic>>,
    pub(super) sparse: IdMap<CtxId, Aic>,
}

impl AicTable {
    pub(super) fn get(&self, ctx: &CtxId) -> Option<&Aic> {
        if ctx.0 < DENSE_CTX {
            self.dense.get(ctx.0 as usize)?.as_ref()
        } else {
            self.sparse.get(ctx)
        }
    }
    pub(super) fn get_mut(&mut self, ctx: &CtxId) -> Option<&mut Aic> {
        if ctx.0 < DENSE_CTX {
            self.dense.get_mut(ctx.0 as usize)?.as_mut()
        } else {
            self.sparse.get_mut(ctx)
        }
    }
    pub(super) fn get_or_insert(&mut self, ctx: CtxId) -> &mut Aic {
        if ctx.0 < DENSE_CTX {
            let i = ctx.0 as usize;
            if i >= self.dense.len() {
                self.dense.resize_with(i + 1, || None);
            }
            self.dense[i].get_or_insert_with(Aic::new)
        } else {
            self.sparse.entry(ctx).or_insert_with(Aic::new)
        }
    }
    pub(super) fn remove(&mut self, ctx: &CtxId) {
        if ctx.0 < DENSE_CTX {
            if let Some(a) = self.dense.get_mut(ctx.0 as usize) {
                *a = None;
            }
        } else {
            self.sparse.remove(ctx);
        }
    }
}

pub(super) type EndMap = IdMap<u64, u32>;

impl Anticipatory {
    /// Drop an exited process's state once nothing refers to it.
    pub(super) fn forget_if_done(&mut self, ctx: CtxId) {
        if self.exited == 0 || self.io_context == Some(ctx) {
            return;
        }
        if self
            .aics
            .get(&ctx)
            .is_some_and(|a| !a.running && a.nr_queued == 0)
        {
            self.aics.remove(&ctx);
            self.exited -= 1;
        }
    }
}
