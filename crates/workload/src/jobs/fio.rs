//! `FioJob`: fio's sequential and random readers and writers, as one job with fio's knobs.
//!
//! One context (ctx 0), like one fio job with `numjobs=1`; a job file's `numjobs=N` becomes N
//! jobs. The knobs are fio's, under fio's names where the unit is fio's (`bs`, `size`,
//! `offset`, `iodepth`, `rwmixread`, `rate`, `rate_iops`, `number_ios`, `time_based`,
//! `thinktime_blocks`, `norandommap`, `randseed`, `direct`) and with the unit in the name where
//! fio's string parsing would otherwise decide it (`thinktime_us`, `runtime_ms`).
//!
//! Behaviour, and where it differs from fio 3.x:
//! - The job covers the region `[offset, offset + size)` in blocks of `bs` bytes aligned to
//!   `offset` (fio's default `blockalign = bs`). Sequential jobs walk it upward, each direction
//!   of a mixed `rw` job with its own cursor (as fio keeps `last_pos` per direction), wrapping
//!   at the end. Random jobs visit every block once per pass in a seeded pseudo-random order
//!   (fio's random map; ours is a keyed Feistel permutation, not fio's bitmap, so the order
//!   differs from fio's); `norandommap = true` draws blocks uniformly with replacement.
//!   `rw_skip` (fio's `rw=read:<skip>`) leaves a hole after each sequential I/O; a pass then
//!   covers the positions `offset + k * (bs + rw_skip)` that fit in the region.
//! - `random_distribution` ([`super::distribution`], which names its deviations) draws a
//!   random job's random offsets from fio's zipf, pareto, normal (gauss) or zoned generators
//!   instead of uniformly; any but `random` turns the random map off, as fio's
//!   `fixup_options` does, so blocks repeat. zipf, pareto and normal values are blocks of the
//!   job's smallest size (fio's `nranges`), scattered over the region by fio's hash; zoned
//!   zones are shares of the region's blocks, or bytes (`zoned_abs`, refused when they end
//!   past the region). `random_generator` is accepted: elevator's generator is its own
//!   whichever is named; `lfsr` keeps uniform offsets once a pass under `norandommap`, as
//!   fio's LFSR does.
//! - `percentage_random` (per direction): of a random job's I/Os that would take a random
//!   offset, that percentage does (a seeded draw of its own, fio's `should_do_random`); the
//!   others go on from where the direction's last I/O ended, or take a random offset where
//!   that leaves no room for the direction's smallest I/O (fio's `get_next_seq_offset` fails
//!   only past the device's end, or wraps a time-based job to the region's start: a
//!   deviation at the region's end).
//! - `blockalign` (per direction, random jobs only, as in fio): random offsets are multiples
//!   of it at which the direction's smallest I/O fits (fio's `last_block` and `b * ba`) in
//!   place of blocks of the smallest size; one other than the direction's smallest size
//!   turns the random map off, as fio's `fixup_options` does. A zipf, pareto or normal value
//!   (counted in the job's smallest size) past those offsets is folded back into them, where
//!   fio's I/O would fail.
//! - `block_sizes` (fio's `bsrange`, `bssplit`; [`super::block_sizes`]) draws each I/O's
//!   size per direction. Random offsets are then counted in the smallest size of the
//!   directions the job does (fio's `min_bs`) and aligned down to the smallest of the I/O's
//!   direction; a sequential direction goes on from where its last I/O ended (plus
//!   `rw_skip`) and wraps when its smallest size no longer fits (with holes, unless
//!   time-based, it ends there, after one pass); the job stops after `io_size` (default
//!   `size`) bytes, as fio does. Deviation: the random map does not mark
//!   the blocks a larger I/O covers past its first (fio's does, and skips them), so a later
//!   I/O may overlap an earlier one of the same pass.
//! - Mixed jobs choose each I/O's direction by a seeded draw against `rwmixread` (fio keeps
//!   the same ratio but switches direction in runs).
//! - It stops issuing after `number_ios` I/Os, after `io_size` (default `size`) bytes unless
//!   `time_based`, or when `ramp_ms + runtime_ms` has passed since its first poll (fio's
//!   `ramp_time` lengthens the run; what it excludes from the figures is the executor's
//!   business), whichever comes first;
//!   then it waits for its outstanding I/O and is done. `time_based` without `runtime_ms` or
//!   `number_ios` runs until the run ends (a background job).
//! - `zonemode = strided` (fio's `setup_strided_zone_mode`): the job does `zone_size` bytes
//!   in a zone of `zone_range` (default `zone_size`) bytes from the region's start, then
//!   moves `zone_range + zone_skip` on, past the region if the device goes on (as fio's
//!   zones walk the file), back to the region's start where the next I/O would not fit
//!   before the device's end. A sequential direction goes on from its last I/O (which may
//!   straddle the zone's end, as in fio), back to the zone's start once one ended at or past
//!   it (`zone_size` over `zone_range` reads the zone again); random offsets fall within the
//!   zone (the random map starts a new pass every `zone_range` bytes; a random job's zones
//!   larger than its region are refused, as fio ends the job at its first offset past the
//!   region). At a zone change both directions of a mixed job start from the new zone (fio's
//!   `fio_file_reset` there resets both). The job still stops after `io_size` (default
//!   `size`) bytes. Deviations: sizes drawn per I/O and `rw` skips are refused with zones; an
//!   I/O that would pass the device's end starts its zone again (fio's fails).
//! - `iodepth` bounds fio's `cur_depth`: I/Os queued, in flight, or complete and not yet
//!   reaped. The job follows fio's `do_io` loop (backend.c, io_u.c, ioengines.c, at fio
//!   commit f534438, August 2026) for an asynchronous engine: each I/O is queued, and once
//!   `iodepth_batch_submit` are queued they are submitted in one call ([`Action::Batch`];
//!   one alone is an [`Action::Issue`]). When the queue is full the job reaps
//!   (`wait_for_completions`): it submits what is queued, waits for
//!   `iodepth_batch_complete_min` completions, reaps up to `iodepth_batch_complete_max`, and
//!   again while more than `iodepth_low` are left. Completions are reaped only then, at a
//!   quiesce and at the end (fio's `cur_depth` counts them until reaped). With both
//!   completion bounds 0 (fio's polling) it reaps after every I/O queued, waiting for one as
//!   fio's code does. The defaults (1, `iodepth`, 1, 1) keep `iodepth` in flight, refilled
//!   as each completes.
//! - With `thinktime_us > 0`, after every `thinktime_blocks` I/Os issued the job quiesces
//!   (submits what is queued and waits for all its I/O to complete, reaping as they come,
//!   fio's `io_u_quiesce`), then thinks `thinktime_us`. Deviation: after its last I/O the
//!   job ends once quiesced, where fio sleeps the think time first.
//! - `rate` (bytes/s) and `rate_iops` cap the job's total, both directions together: an I/O
//!   is not issued before `start + bytes issued / rate` (the k-th, from 0, of fixed-size
//!   I/Os: `start + k * bs / rate`). fio applies one rate value to
//!   each direction separately; for pure read or write jobs the two agree. A job ahead of its
//!   rate quiesces, then sleeps what it was ahead when it looked (`rate_ddir`), so from the
//!   last completion: its I/Os are not in flight together unless it falls behind.
//!   `rate_process = poisson` (fio's `usec_for_io`) spaces them instead by exponential gaps
//!   of mean fio's `1000000 / iops` whole microseconds (iops: `rate` over the smallest block,
//!   else `rate_iops`), each `mean * -ln(u)` truncated to a microsecond, the k-th I/O not
//!   before the sum of k gaps (its own seeded draws).
//! - With `iodepth_batch_complete_min` above 1 an I/O's latency runs to when the job reaps
//!   it ([`Job::reaps_late`]), as fio stamps `clat` then: the first of a batch waits for the
//!   last. Otherwise it runs to its completion, which is when fio reaps it, save for the I/Os
//!   left at the job's end: fio waits for them all in one reap and stamps them together, here
//!   each is stamped as it completes (a deviation).
//! - `cmdprio` (fio's `cmdprio_*` options): a share of the reads and writes, drawn per I/O
//!   from a generator of their own (seeded), carries a priority of its own; the others, and
//!   flushes, the job's ([`super::cmdprio`] names the deviations).
//! - `rw` = `trim` / `randtrim` issue discards (`Op::Discard`, no idle hint; REQ_SYNC with
//!   `trim_sync`, as the BLKDISCARD ioctl's `submit_bio_wait` marks them, else not, as
//!   io_uring's discard command builds them) where a
//!   writer would write: the write direction's sizes, cursor and random map. `trimwrite` /
//!   `randtrimwrite` follow each trim with a write of the block it trimmed (fio's
//!   `set_rw_ddir`; randtrimwrite's write takes the trim's offset and length, outside the
//!   random map), and count their bytes and `number_ios` twice, as fio's `do_io` does.
//!   Deviation: fio's libaio and psync engines trim synchronously (`do_io_u_trim`), its libaio
//!   engine waiting for the queue to empty first; here a trim is an I/O of the job's depth, as
//!   fio's io_uring engine's. Drivers count discards in the job's write figures (fio reports
//!   them apart, as `trim`). A sequential `trimwrite` with sizes drawn per I/O is refused (fio
//!   draws its writes' sizes apart from its trims').
//! - `direct = true` makes writes synchronous (O_DIRECT sets REQ_SYNC); `false` makes them
//!   asynchronous, as page-cache writeback issues them. Reads are always synchronous.

use elevator_core::{IoPrio, Nanos, Op, SECTOR_BYTES};
use rand::{Rng, RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use super::block_sizes::{BlockSizes, SizeDraw, SizeMix};
use super::distribution::{OffsetDraw, RandomDistribution};
use crate::job::{Action, IoSpec, Job};
use crate::spec::{
    mix64, resolve_bytes, resolve_region, BuildEnv, BuildError, Region, REGION_FIELDS,
};

/// fio's `rw_sequencer`: where a random job's I/Os between its random ones go
/// (`rw=randread:<nr>`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RwSequencer {
    /// Right after the last I/O of its direction (a random one where that runs past the end).
    #[default]
    Sequential,
    /// At the last I/O's offset again.
    Identical,
}

/// fio's `random_generator`: what draws a random job's uniform offsets.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RandomGenerator {
    /// `tausworthe` (fio's default): draws checked against the random map, unless
    /// `norandommap`.
    #[default]
    Tausworthe,
    /// `tausworthe64`: the same, 64 bits wide.
    Tausworthe64,
    /// `lfsr`: a sequence visiting every block once a period, with or without the random map.
    Lfsr,
}

/// fio's `rate_process`: how a rated job spaces its I/Os.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RateProcess {
    /// `linear` (fio's default): the k-th I/O at k times the rate's interval.
    #[default]
    Linear,
    /// `poisson`: exponential gaps of mean the rate's interval (fio's `usec_for_io`).
    Poisson,
}

/// fio's `zonemode` (without `zbd`, which elevator does not model).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ZoneMode {
    /// `none` (fio's default without `zonesize`): the job's region as a whole.
    #[default]
    None,
    /// `strided`: `zone_size` bytes in a zone of `zone_range`, then on `zone_range +
    /// zone_skip` bytes to the next.
    Strided,
}

/// fio's `sync`: the flag a job opens its files with, which makes each write durable before
/// it completes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SyncIo {
    /// `none` / `0`: neither (the default).
    #[default]
    None,
    /// `sync` / `1`: O_SYNC (data and metadata).
    Sync,
    /// `dsync`: O_DSYNC (data).
    Dsync,
}

/// fio's `rw` (`readwrite`) option.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RwMode {
    /// `read`: sequential reads.
    #[default]
    Read,
    /// `write`: sequential writes.
    Write,
    /// `randread`: random reads.
    RandRead,
    /// `randwrite`: random writes.
    RandWrite,
    /// `rw` (alias `readwrite`): sequential mixed reads and writes.
    #[serde(alias = "readwrite")]
    Rw,
    /// `randrw`: random mixed reads and writes.
    RandRw,
    /// `trim`: sequential trims (discards).
    Trim,
    /// `randtrim`: random trims.
    RandTrim,
    /// `trimwrite`: sequential trims, each followed by a write of the block it trimmed.
    TrimWrite,
    /// `randtrimwrite`: random trims, each followed by a write of the block it trimmed.
    RandTrimWrite,
}

impl RwMode {
    /// Parse fio's spelling (`read`, `write`, `randread`, `randwrite`, `rw`, `readwrite`,
    /// `randrw`, `trim`, `randtrim`, `trimwrite`, `randtrimwrite`).
    pub fn parse(s: &str) -> Option<RwMode> {
        Some(match s {
            "read" => RwMode::Read,
            "write" => RwMode::Write,
            "randread" => RwMode::RandRead,
            "randwrite" => RwMode::RandWrite,
            "rw" | "readwrite" => RwMode::Rw,
            "randrw" => RwMode::RandRw,
            "trim" => RwMode::Trim,
            "randtrim" => RwMode::RandTrim,
            "trimwrite" => RwMode::TrimWrite,
            "randtrimwrite" => RwMode::RandTrimWrite,
            _ => return None,
        })
    }
    /// fio's spelling.
    pub fn name(self) -> &'static str {
        match self {
            RwMode::Read => "read",
            RwMode::Write => "write",
            RwMode::RandRead => "randread",
            RwMode::RandWrite => "randwrite",
            RwMode::Rw => "rw",
            RwMode::RandRw => "randrw",
            RwMode::Trim => "trim",
            RwMode::RandTrim => "randtrim",
            RwMode::TrimWrite => "trimwrite",
            RwMode::RandTrimWrite => "randtrimwrite",
        }
    }
    /// Whether offsets are random.
    pub fn is_random(self) -> bool {
        matches!(
            self,
            RwMode::RandRead
                | RwMode::RandWrite
                | RwMode::RandRw
                | RwMode::RandTrim
                | RwMode::RandTrimWrite
        )
    }
    /// Whether the job trims (fio's `td_trim`).
    pub fn trims(self) -> bool {
        matches!(
            self,
            RwMode::Trim | RwMode::RandTrim | RwMode::TrimWrite | RwMode::RandTrimWrite
        )
    }
    /// Whether each trim is followed by a write of its block (fio's `td_trimwrite`).
    pub fn trim_writes(self) -> bool {
        matches!(self, RwMode::TrimWrite | RwMode::RandTrimWrite)
    }
    /// Whether the job changes the target's data: it writes or trims.
    pub fn changes_data(self, rwmixread: u32) -> bool {
        self.read_percent(rwmixread) < 100
    }
    /// The percentage of reads this mode implies, given fio's `rwmixread` for mixed modes.
    /// Trims take the writes' place (their sizes, cursor and random map).
    fn read_percent(self, rwmixread: u32) -> u32 {
        match self {
            RwMode::Read | RwMode::RandRead => 100,
            RwMode::Write | RwMode::RandWrite => 0,
            RwMode::Rw | RwMode::RandRw => rwmixread,
            RwMode::Trim | RwMode::RandTrim | RwMode::TrimWrite | RwMode::RandTrimWrite => 0,
        }
    }
}

/// A fio-like job's configuration. Every field has fio's default unless its doc says otherwise.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct FioJobConfig {
    /// fio `rw`: direction and pattern. Default `read`.
    pub rw: RwMode,
    /// fio `rwmixread`: percentage of reads in `rw` / `randrw` jobs, 0..=100. Default 50.
    pub rwmixread: u32,
    /// fio `rw=read:<skip>`: bytes skipped after each sequential I/O, a multiple of 512.
    /// Default 0. N processes reading one file in interleaved chunks are N jobs with
    /// `bs = chunk`, `rw_skip = (N - 1) * chunk` and `offset = file + i * chunk`. Negative
    /// goes backwards (`rw=read:-8k` with 4 KiB blocks reads each block below the last).
    pub rw_skip: i64,
    /// fio `rw=randread:<nr>` (its `ddir_seq_nr`): every `nr`-th I/O of a random job takes a
    /// new random offset, the ones between are placed by `rw_sequencer`. Default 1 (every
    /// I/O random).
    pub rand_seq_nr: u32,
    /// fio `rw_sequencer`: where the I/Os between a random job's random ones go. Default
    /// `sequential`.
    pub rw_sequencer: RwSequencer,
    /// fio `bs`: bytes per I/O, a positive multiple of 512. Default 4096.
    pub bs: u64,
    /// fio `bsrange` / `bssplit`, per direction: sizes drawn per I/O in place of `bs`
    /// ([`SizeMix`]). Default none for both: every I/O is `bs`.
    pub block_sizes: BlockSizes,
    /// fio `offset`: where the job's region starts, bytes (rounded down to a sector).
    /// Default 0. Exclusive with `offset_frac`.
    pub offset: Option<u64>,
    /// fio `offset=N%`: where the region starts, as a fraction 0..=1 of the device.
    pub offset_frac: Option<f64>,
    /// fio `size`: the region's length, bytes. Default: to the end of the device. Exclusive
    /// with `size_frac`.
    pub size: Option<u64>,
    /// fio `size=N%`: the region's length as a fraction 0..=1 of the device.
    pub size_frac: Option<f64>,
    /// fio `io_size`: bytes to transfer before stopping (unless `time_based`). Default: `size`.
    pub io_size: Option<u64>,
    /// fio `iodepth`: I/Os outstanding at once, >= 1. Default 1 (`ioengine=psync` is 1).
    pub iodepth: u32,
    /// fio `iodepth_batch_submit` (`iodepth_batch`): I/Os queued before they are submitted in
    /// one call. Default 1 (each as it is queued); 0, or more than `iodepth`, is `iodepth`.
    pub iodepth_batch_submit: u32,
    /// fio `iodepth_low`: once the queue is full, completions are reaped until no more than
    /// this many I/Os are left before it is filled again. Default 0, which (like more than
    /// `iodepth`) is `iodepth`: refill as soon as one completes.
    pub iodepth_low: u32,
    /// fio `iodepth_batch_complete_min` (`iodepth_batch_complete`): completions waited for at
    /// least, each time the job reaps. Default 1.
    pub iodepth_batch_complete_min: u32,
    /// fio `iodepth_batch_complete_max`: completions reaped at most, each time. Default 0,
    /// which (like less than the minimum) is `iodepth_batch_complete_min`.
    pub iodepth_batch_complete_max: u32,
    /// fio `fsync`: a flush after every this many writes issued (0: none). Default 0.
    pub fsync_blocks: u32,
    /// fio `fdatasync`: the same, fio's `fdatasync` (on a block device, a flush as `fsync`'s).
    /// Default 0.
    pub fdatasync_blocks: u32,
    /// fio `end_fsync`: a flush once the job's I/O is done, waited for before it ends.
    /// Default false.
    pub end_fsync: bool,
    /// fio `thinktime`: microseconds to think after every `thinktime_blocks` I/Os (after they
    /// complete). Default 0.
    pub thinktime_us: u64,
    /// fio `thinktime_blocks`: I/Os between think times, >= 1. Default 1.
    pub thinktime_blocks: u32,
    /// fio `rate`: cap on the job's bytes per second (both directions together). Default none.
    pub rate: Option<u64>,
    /// fio `rate_iops`: cap on the job's I/Os per second. Default none.
    pub rate_iops: Option<u64>,
    /// fio `number_ios`: stop after this many I/Os. Default none.
    pub number_ios: Option<u64>,
    /// fio `runtime`, in milliseconds here: stop issuing this long after the job starts
    /// (after `ramp_ms`, when there is one). Default none.
    pub runtime_ms: Option<u64>,
    /// fio `ramp_time`, in milliseconds here: a lead-in before `runtime_ms` starts, whose I/O
    /// the executor leaves out of the figures (as fio does). Default 0.
    pub ramp_ms: u64,
    /// fio `time_based`: keep going over the region (wrapping) until `runtime_ms`, ignoring
    /// `io_size`. Default false.
    pub time_based: bool,
    /// fio `direct`: writes are synchronous (O_DIRECT); otherwise asynchronous writeback.
    /// Default false.
    pub direct: bool,
    /// fio `sync`: O_SYNC or O_DSYNC writes. With `direct` the kernel's direct-I/O write
    /// paths mark each such write REQ_FUA (`dio_bio_write_op` in block/fops.c, iomap's
    /// `iomap_dio_bio_opflags`) and keep REQ_SYNC | REQ_IDLE; elevator's requests carry no
    /// FUA, so these writes are issued as other direct writes (a deviation: the kernel never
    /// merges a FUA request, REQ_NOMERGE_FLAGS, and a drive with a volatile cache writes it
    /// through). Without `direct` each write(2) writes its pages back (REQ_SYNC, no idle
    /// hint: `file_write_and_wait_range` under WB_SYNC_ALL) and then flushes the device's
    /// cache (`generic_write_sync` -> `blkdev_fsync`) before it returns: the job issues the
    /// write, then, once it completes, a flush it waits for, left out of the figures (one
    /// request at a time: refused above `iodepth` 1). Deviation: fio's write latency
    /// includes that flush, here the write's is its own. Default none.
    pub sync_io: SyncIo,
    /// Whether its trims are synchronous bios: fio's libaio, psync and sync engines trim
    /// with the BLKDISCARD ioctl (`do_io_u_trim`, `os_trim`), whose `submit_bio_wait` marks
    /// the discard REQ_SYNC (blktrace's `DS`); io_uring's discard command does not. A job
    /// file sets it from `ioengine`. Default false.
    pub trim_sync: bool,
    /// fio `norandommap`: random blocks drawn with replacement instead of once per pass.
    /// Default false.
    pub norandommap: bool,
    /// fio `randseed`: the job's seed, mixed with the job's name as fio mixes it with the
    /// thread's number, so each job and clone draws its own sequence, the same in every run.
    /// Default: derived from the run's seed and the job's name.
    pub randseed: Option<u64>,
    /// fio `random_distribution`: where a random job's random offsets fall
    /// ([`RandomDistribution`]: `random`, zipf, pareto, normal, zoned, zoned_abs). Any but
    /// `random` turns the random map off, as fio's `fixup_options` does. Sequential jobs
    /// ignore it, as fio's do. Default `random`.
    pub random_distribution: RandomDistribution,
    /// fio `random_generator`. elevator draws with its own generator whatever this says;
    /// `lfsr` keeps the once-a-pass order of uniform offsets under `norandommap` too, as
    /// fio's LFSR does. Default `tausworthe`.
    pub random_generator: RandomGenerator,
    /// fio `percentage_random`, [reads, writes]: percent of a random job's I/Os (of those
    /// that take a new offset, with `rand_seq_nr`) whose offset is random; the others go on
    /// from where the direction's last I/O ended (fio's `should_do_random`). 0..=100.
    /// Default [100, 100].
    pub percentage_random: [u32; 2],
    /// fio `blockalign` (`ba`), [reads, writes]: bytes a random job's random offsets are
    /// aligned to, a multiple of 512 (0: the direction's smallest size, as fio's 0). Sequential jobs ignore it, as fio's do; one that differs from the
    /// direction's smallest size turns the random map off, as in fio. Default none.
    pub blockalign: [u64; 2],
    /// fio `rate_process`: `linear` or `poisson` spacing of a rated job's I/Os. Default
    /// `linear`.
    pub rate_process: RateProcess,
    /// fio `zonemode`. Default `none`.
    pub zonemode: ZoneMode,
    /// fio `zonesize`: bytes done in each zone before the next (required with
    /// `zonemode = strided`). Default 0.
    pub zone_size: u64,
    /// fio `zonerange`: each zone's size, bytes (0: `zone_size`, as fio's default). Default 0.
    pub zone_range: u64,
    /// fio `zoneskip`: bytes skipped after a zone before the next starts. Default 0.
    pub zone_skip: u64,
    /// fio's `cmdprio_percentage`, `cmdprio_class`, `cmdprio`, `cmdprio_bssplit` (its io_uring
    /// and libaio engines' options): a share of the reads and writes drawn per I/O carries a
    /// priority of its own ([`CmdPrio`](super::cmdprio::CmdPrio)). Default none.
    pub cmdprio: super::cmdprio::CmdPrio,
}

/// The tag bit of the flushes inside buffered O_SYNC / O_DSYNC writes, which fio does not
/// see (its figures leave them out).
const HIDDEN_FLUSH: u64 = 1 << 63;

/// The longest `thinktime`, microseconds: fio holds it in an `unsigned int`
/// (`thread_options.thinktime`). A longer one wrapped on its way to the clock here (18 x 10^15
/// us thought for a few microseconds and reported 3000 IOPS).
pub const MAX_THINKTIME_US: u64 = u32::MAX as u64;

impl Default for FioJobConfig {
    fn default() -> Self {
        FioJobConfig {
            rw: RwMode::Read,
            rwmixread: 50,
            rw_skip: 0,
            rand_seq_nr: 1,
            rw_sequencer: RwSequencer::Sequential,
            bs: 4096,
            block_sizes: BlockSizes::default(),
            offset: None,
            offset_frac: None,
            size: None,
            size_frac: None,
            io_size: None,
            iodepth: 1,
            iodepth_batch_submit: 1,
            iodepth_low: 0,
            iodepth_batch_complete_min: 1,
            iodepth_batch_complete_max: 0,
            fsync_blocks: 0,
            fdatasync_blocks: 0,
            end_fsync: false,
            thinktime_us: 0,
            thinktime_blocks: 1,
            rate: None,
            rate_iops: None,
            number_ios: None,
            runtime_ms: None,
            ramp_ms: 0,
            time_based: false,
            direct: false,
            sync_io: SyncIo::None,
            trim_sync: false,
            norandommap: false,
            randseed: None,
            random_distribution: RandomDistribution::Random,
            random_generator: RandomGenerator::Tausworthe,
            percentage_random: [100, 100],
            blockalign: [0, 0],
            rate_process: RateProcess::Linear,
            zonemode: ZoneMode::None,
            zone_size: 0,
            zone_range: 0,
            zone_skip: 0,
            cmdprio: Default::default(),
        }
    }
}

impl FioJobConfig {
    /// The directions the job does: [reads, writes].
    fn directions(&self) -> [bool; 2] {
        let p = self.rw.read_percent(self.rwmixread);
        [p > 0, p < 100]
    }

    /// How each direction's sizes are drawn: its `block_sizes`, else `bs`.
    fn size_draws(&self) -> [SizeDraw; 2] {
        std::array::from_fn(|d| {
            self.block_sizes
                .of(d)
                .map_or(SizeDraw::fixed(self.bs), SizeDraw::of)
        })
    }

    /// The largest size of an I/O the job does, bytes (fio's `max_bs` over its directions):
    /// its bytes over this are the fewest I/Os that move them.
    pub fn max_size(&self) -> u64 {
        let dirs = self.directions();
        (0..2)
            .filter(|&d| dirs[d])
            .map(|d| {
                self.block_sizes
                    .of(d)
                    .map_or(self.bs, |m| m.sizes().into_iter().max().unwrap_or(self.bs))
            })
            .max()
            .unwrap_or(self.bs)
    }

    /// The smallest size of an I/O the job does, bytes (fio's `min_bs` over its
    /// directions).
    pub fn min_size(&self) -> u64 {
        let draws = self.size_draws();
        let dirs = self.directions();
        (0..2)
            .filter(|&d| dirs[d])
            .map(|d| draws[d].min)
            .min()
            .unwrap_or(self.bs)
    }

    /// The zones' size under `zonemode = strided`: `zone_range`, else `zone_size` (fio's
    /// `fixup_options`).
    fn zone_range(&self) -> u64 {
        if self.zone_range > 0 {
            self.zone_range
        } else {
            self.zone_size
        }
    }

    /// The option that set [`Self::zone_range`], as an error names it: `zonerange`, else the
    /// `zonesize` it defaults to.
    fn zone_range_option(&self) -> &'static str {
        if self.zone_range > 0 {
            "zonerange"
        } else {
            "zonesize"
        }
    }

    /// Check the configuration against the device of `env`; returns the job's region.
    pub fn validate(&self, env: &BuildEnv) -> Result<Region, BuildError> {
        let err = |field, reason: String| Err(BuildError::new(env, field, reason));
        if self.rwmixread > 100 {
            return err(
                "rwmixread",
                format!("{} is not a percentage", self.rwmixread),
            );
        }
        if self.bs == 0 || !self.bs.is_multiple_of(SECTOR_BYTES) {
            return err(
                "bs",
                format!("{} is not a positive multiple of 512", self.bs),
            );
        }
        if self.bs / SECTOR_BYTES > u64::from(u32::MAX) {
            return err(
                "bs",
                format!("{} bytes is too large for one request", self.bs),
            );
        }
        for mix in self.block_sizes.given() {
            let field = mix.option();
            for size in mix.sizes() {
                if size == 0 || !size.is_multiple_of(SECTOR_BYTES) {
                    return err(
                        field,
                        format!("{size} bytes is not a positive multiple of 512"),
                    );
                }
                if size / SECTOR_BYTES > u64::from(u32::MAX) {
                    return err(field, format!("{size} bytes is too large for one request"));
                }
            }
            if let Err(reason) = mix.check() {
                return err(field, reason);
            }
        }
        if let Err(reason) = self.random_distribution.check() {
            return err("random_distribution", reason);
        }
        if self.rw == RwMode::TrimWrite && !self.size_draws()[1].is_fixed() {
            // fio's sequential trimwrite walks its trims and its writes with cursors of their
            // own, each drawing its sizes: the writes would leave the trims' blocks.
            return err(
                self.block_sizes.of(1).map_or("bs", SizeMix::option),
                "sequential trimwrite with sizes drawn per I/O: fio draws the writes' sizes \
                 apart from the trims', so a write need not cover the block trimmed; give one \
                 size, or use randtrimwrite (whose writes take the trim's length)"
                    .into(),
            );
        }
        if self.sync_io != SyncIo::None && !self.direct && self.iodepth > 1 {
            return err(
                "sync_io",
                "buffered O_SYNC / O_DSYNC writes more than one deep: each write(2) writes back \
                 and flushes before it returns, one at a time (a synchronous engine, or \
                 iodepth=1)"
                    .into(),
            );
        }
        if let Err(reason) = self.cmdprio.check() {
            return err("cmdprio", reason);
        }
        if self.rand_seq_nr == 0 {
            return err(
                "rw",
                "the I/Os per random offset (`randread:<nr>`) are at least 1".into(),
            );
        }
        if self.rand_seq_nr > 1 && !self.rw.is_random() {
            return err(
                "rw",
                "`<mode>:<nr>` I/Os per random offset applies to random jobs only".into(),
            );
        }
        if !self.rw_skip.unsigned_abs().is_multiple_of(SECTOR_BYTES) {
            return err(
                "rw_skip",
                format!("{} is not a multiple of 512", self.rw_skip),
            );
        }
        if self.rw_skip != 0 && self.rw.is_random() {
            return err("rw_skip", "applies to sequential jobs only".into());
        }
        if self.iodepth == 0 {
            return err("iodepth", "must be at least 1".into());
        }
        if self.thinktime_us > MAX_THINKTIME_US {
            return err(
                "thinktime_us",
                format!(
                    "{} us is more than fio's thinktime holds (32 bits of microseconds: at most \
                     {MAX_THINKTIME_US} us, about 71 minutes)",
                    self.thinktime_us
                ),
            );
        }
        if self.thinktime_blocks == 0 {
            return err("thinktime_blocks", "must be at least 1".into());
        }
        if self.rate == Some(0) {
            return err("rate", "must be positive".into());
        }
        if self.rate_iops == Some(0) {
            return err("rate_iops", "must be positive".into());
        }
        if self.percentage_random.iter().any(|&p| p > 100) {
            return err(
                "percentage_random",
                format!("{:?} is not a percentage", self.percentage_random),
            );
        }
        for ba in self.blockalign {
            if !ba.is_multiple_of(SECTOR_BYTES) {
                return err("blockalign", format!("{ba} is not a multiple of 512"));
            }
        }
        match self.zonemode {
            ZoneMode::None if self.zone_size > 0 => {
                return err(
                    "zonesize",
                    "zonemode=none and a zonesize do not go together (as fio says)".into(),
                )
            }
            ZoneMode::None => {}
            ZoneMode::Strided => {
                if self.zone_size == 0 {
                    return err(
                        "zonesize",
                        "zonemode=strided needs a zonesize (as fio says)".into(),
                    );
                }
                for (field, v) in [
                    ("zonesize", self.zone_size),
                    ("zonerange", self.zone_range),
                    ("zoneskip", self.zone_skip),
                ] {
                    if !v.is_multiple_of(SECTOR_BYTES) {
                        return err(field, format!("{v} is not a multiple of 512"));
                    }
                }
                if self.zone_range() < self.max_size() {
                    return err(
                        self.zone_range_option(),
                        format!(
                            "a zone of {} bytes holds no {}-byte I/O",
                            self.zone_range(),
                            self.max_size()
                        ),
                    );
                }
                if self.min_size() != self.max_size() || self.rw_skip != 0 {
                    return err(
                        "zonemode",
                        "strided zones with bsrange, bssplit or an rw skip are not supported"
                            .into(),
                    );
                }
            }
        }
        if self.rate_process == RateProcess::Poisson {
            // fio's `usec_for_io` divides by the rate in I/Os a second (the rate over the
            // smallest block): less than one would divide by zero.
            if self.rate.is_some_and(|r| r < self.min_size()) {
                return err(
                    "rate",
                    format!(
                        "with rate_process=poisson, a rate below one {}-byte I/O a second",
                        self.min_size()
                    ),
                );
            }
        }
        if self.number_ios == Some(0) {
            return err("number_ios", "must be positive".into());
        }
        if self.runtime_ms == Some(0) {
            return err("runtime_ms", "must be positive".into());
        }
        if let Some(o) = self.offset {
            if o % SECTOR_BYTES != 0 {
                return err(
                    "offset",
                    format!(
                        "{o} bytes is not a multiple of 512 (a sector); it would be rounded \
                         down and the region cut"
                    ),
                );
            }
        }
        let mut region = resolve_region(
            env,
            self.offset,
            self.offset_frac,
            self.size,
            self.size_frac,
            REGION_FIELDS,
        )?;
        // As fio does: an offset given as a percentage is rounded up to the block size, a size
        // given as one down to it (`get_start_offset`, `setup_files`).
        let bs = self.min_size() / SECTOR_BYTES;
        if self.offset_frac.is_some() {
            let start = region.start.div_ceil(bs) * bs;
            let end = env.capacity_bytes() / SECTOR_BYTES;
            region.len = region.len.min(end.saturating_sub(start));
            region.start = start;
        }
        if self.size_frac.is_some() {
            region.len -= region.len % bs;
        }
        if region.len * SECTOR_BYTES < self.min_size() {
            return err(
                "size",
                format!(
                    "the region ({} bytes) is smaller than one block (bs = {})",
                    region.len * SECTOR_BYTES,
                    self.min_size()
                ),
            );
        }
        // Each direction's smallest block must fit (fio's `get_next_buflen` ends the job at
        // an I/O whose smallest size does not).
        let bytes = region.len * SECTOR_BYTES;
        let draws = self.size_draws();
        let dirs = self.directions();
        for d in (0..2).filter(|&d| dirs[d]) {
            if bytes < draws[d].min {
                let field = self.block_sizes.of(d).map_or("size", SizeMix::option);
                return err(
                    field,
                    format!(
                        "the region ({bytes} bytes) is smaller than the {} block of {} bytes",
                        if d == 0 {
                            "reads' smallest"
                        } else {
                            "writes' smallest"
                        },
                        draws[d].min
                    ),
                );
            }
        }
        // Backwards, each I/O must start before the last one did, and the step must fit in
        // the region (fio would repeat or move forward, or end the job at once).
        if self.rw_skip < 0 {
            let back = self.rw_skip.unsigned_abs();
            if back <= self.max_size() || back > bytes {
                return err(
                    "rw_skip",
                    format!(
                        "a backward skip of {back} bytes must be more than the largest block \
                         ({} bytes: less repeats or moves forward) and at most the region \
                         ({bytes} bytes)",
                        self.max_size()
                    ),
                );
            }
        }
        // fio's `last_block` is 0 for a direction whose alignment leaves no room.
        if self.rw.is_random() {
            for d in (0..2).filter(|&d| dirs[d]) {
                if let Some(ba) = Some(self.blockalign[d]).filter(|&ba| ba > 0) {
                    if aligned_blocks(bytes, draws[d].min, ba) == 0 {
                        return err(
                            "blockalign",
                            format!(
                                "no {ba}-byte aligned offset leaves room for a {}-byte I/O in \
                                 the region ({bytes} bytes)",
                                draws[d].min
                            ),
                        );
                    }
                }
            }
        }
        // A random job's offsets in a strided zone are drawn over `zone_range` (fio's
        // `last_block`), but fio's `get_next_offset` fails one at or past the region's size
        // (`f->io_size`), ending the job: zones larger than the region are refused.
        let strided = self.zonemode == ZoneMode::Strided;
        if strided && self.rw.is_random() && self.zone_range() > bytes {
            return err(
                self.zone_range_option(),
                format!(
                    "a random job's zones of {} bytes are larger than its region ({bytes} \
                     bytes): fio ends the job at its first offset past the region",
                    self.zone_range()
                ),
            );
        }
        // fio fails the first I/O whose `zoned_abs` zone ends past the region (past the zone,
        // under `zonemode=strided`: fio's `last_block`).
        let unit = self.min_size();
        let span = if strided { self.zone_range() } else { bytes };
        for d in (0..2).filter(|&d| dirs[d] && self.rw.is_random()) {
            if !OffsetDraw::zones_fit(&self.random_distribution, d, span / unit, unit) {
                return err(
                    "random_distribution",
                    format!(
                        "the {} zoned_abs zones end past the {} ({span} bytes)",
                        if d == 0 { "reads'" } else { "writes'" },
                        if strided { "strided zone" } else { "region" }
                    ),
                );
            }
        }
        if let Some(io) = resolve_bytes(env, self.io_size, "io_size", None, "io_size")? {
            if io < self.min_size() {
                return err("io_size", format!("{io} bytes is less than one block"));
            }
        }
        Ok(region)
    }
}

/// fio's `last_block` for alignment `ba`: the aligned offsets of a region of `bytes` where an
/// I/O of `min` bytes fits.
fn aligned_blocks(bytes: u64, min: u64, ba: u64) -> u64 {
    bytes.saturating_sub(min.saturating_sub(ba)) / ba
}

/// A fio-like job. See the module documentation for its behaviour.
#[derive(Clone, Debug)]
pub struct FioJob {
    name: String,
    cfg: FioJobConfig,
    region: Region,
    blocks: u64,
    /// Sequential positions in one pass.
    positions: u64,
    /// Sectors from one sequential position to the next (bs + rw_skip).
    stride_sectors: u64,
    /// Sectors per I/O when every I/O has one size; with sizes drawn per I/O, the unit
    /// random offsets are counted in (the smallest size).
    block_sectors: u32,
    /// Sizes drawn per I/O (`bsrange`, `bssplit`), when they vary.
    sizes: Option<Box<VariableSizes>>,
    /// Bytes issued so far.
    bytes_issued: u64,
    /// Writes issued so far (fio's `io_issues[DDIR_WRITE]`).
    writes_issued: u64,
    /// The last I/O issued was a write (fio's `last_ddir_issued`): a flush may follow.
    last_was_write: bool,
    /// The end's flush (`end_fsync`), once issued: outside the figures.
    end_flush: Option<u64>,
    /// `trimwrite`, `randtrimwrite`: the block (first sector, sectors) the last trim
    /// discarded, which the next I/O writes.
    trimmed: Option<(u64, u32)>,
    /// A buffered O_SYNC write was issued: its flush follows once it completes.
    osync_due: bool,
    /// The next I/O's tag (flushes take tags too, so it runs ahead of `issued`).
    next_tag: u64,
    /// Where each direction's last I/O started and ended, bytes into the region (fio's
    /// `last_start`, `last_pos`).
    last_start: [Option<u64>; 2],
    last_end: [u64; 2],
    /// I/Os left before a random job's next random offset (fio's `td->ddir_seq_nr`).
    seq_left: u32,
    read_percent: u32,
    rng: ChaCha8Rng,
    /// The per-I/O priority draws' own generator (fio's `prio_state`), so a job without
    /// `cmdprio` draws as it did before.
    prio_rng: ChaCha8Rng,
    map: BlockOrder,
    /// Random blocks come from `map`, each once a pass (fio's random map), rather than with
    /// replacement.
    uses_map: bool,
    /// A non-uniform `random_distribution`'s generator (random jobs only).
    dist: Option<Box<OffsetDraw>>,
    /// Per direction, a random job's `blockalign` where it differs from the direction's
    /// smallest size, and the aligned offsets where that fits (fio's `last_block`).
    align: [Option<(u64, u64)>; 2],
    /// `percentage_random`'s own generator (fio's `seq_rand_state`).
    pct_rng: ChaCha8Rng,
    /// `rate_process=poisson`'s clock, if the job is rated so.
    poisson: Option<Poisson>,
    /// `zonemode=strided`'s zone, if the job has one.
    strided: Option<Strided>,
    cursors: [u64; 2],
    /// I/Os to issue at most, `None` for unbounded.
    limit: Option<u64>,
    issued: u64,
    /// I/Os queued and not yet submitted (fio's `io_u_queued`), waiting for the batch.
    queued: Vec<IoSpec>,
    /// Tags of the I/Os submitted and not yet complete (at most `iodepth`: a list is cheaper
    /// than a set).
    outstanding: Vec<u64>,
    /// Tags of the I/Os complete and not yet reaped, in the order they completed: they still
    /// count in fio's `cur_depth`.
    unreaped: Vec<u64>,
    /// Tags reaped and not yet handed to the driver ([`Job::take_reaped`]), when the job
    /// [reaps late](Job::reaps_late).
    reaped: Vec<u64>,
    /// The effective `iodepth_batch_submit`, `iodepth_low`, `iodepth_batch_complete_min`
    /// and `_max` (fio's `fixup_options`).
    depths: Depths,
    /// Reaping completions (fio's `wait_for_completions`), if the job is.
    reap: Option<Reap>,
    start: Option<Nanos>,
    deadline: Option<Nanos>,
    /// I/Os issued since the last think time.
    batch: u32,
    /// Waiting for every submitted I/O to complete before it sleeps, if it is.
    quiesce: Option<Quiesce>,
    think_until: Option<Nanos>,
    last_completion: Nanos,
}

/// Where an I/O goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Place {
    /// A random block, in units of the job's smallest size.
    Block(u64),
    /// This many bytes into the region (moved back where its smallest size must fit).
    At(u64),
    /// The next position of the sequential walk.
    Next,
}

/// A job whose I/Os vary in size: how each direction's are drawn, and where each sequential
/// direction goes on.
#[derive(Clone, Debug)]
struct VariableSizes {
    draws: [SizeDraw; 2],
    /// Byte offsets in the region of each direction's next sequential I/O.
    cursors: [u64; 2],
    /// Bytes to issue before stopping (fio's `io_size`, else the region), unless time-based.
    byte_limit: Option<u64>,
    /// A sequential job with holes (`rw_skip`) passed the region's end: unless time-based
    /// it is done (fio's `get_next_offset` fails past `io_size`).
    pass_over: bool,
    /// The sizes' own generator (fio's `bsrange_state`).
    rng: ChaCha8Rng,
}

/// fio's depths after `fixup_options` (init.c).
#[derive(Clone, Copy, Debug)]
struct Depths {
    submit: u32,
    low: u32,
    complete_min: u32,
    complete_max: u32,
}

impl Depths {
    fn of(cfg: &FioJobConfig) -> Depths {
        let depth = cfg.iodepth;
        let or_depth = |v: u32| if v == 0 || v > depth { depth } else { v };
        Depths {
            submit: or_depth(cfg.iodepth_batch_submit),
            low: or_depth(cfg.iodepth_low),
            complete_min: cfg.iodepth_batch_complete_min,
            complete_max: cfg
                .iodepth_batch_complete_max
                .max(cfg.iodepth_batch_complete_min),
        }
    }

    /// Both completion bounds 0: fio reaps after every I/O it queues (`io_in_polling`).
    fn polling(self) -> bool {
        self.complete_min == 0 && self.complete_max == 0
    }
}

/// One `wait_for_completions` call.
#[derive(Clone, Copy, Debug)]
struct Reap {
    /// Completions each `io_u_queued_complete` waits for.
    min: u32,
    /// The queue was full when it began: reap again while more than `iodepth_low` are left.
    full: bool,
}

/// Why the job quiesces (fio's `io_u_quiesce`: submit what is queued, reap until nothing is
/// in flight), and what it does then.
#[derive(Clone, Copy, Debug)]
enum Quiesce {
    /// Its think time (`handle_thinktime`): then it thinks `thinktime_us` from the last
    /// completion.
    Think,
    /// Ahead of its rate (`rate_ddir`): then it sleeps `sleep`, what it was ahead when it
    /// looked, from when the last I/O completed (or from then, with none in flight).
    Rate { looked: Nanos, sleep: Nanos },
}

impl FioJob {
    /// Build the job for the device and run of `env`.
    pub fn new(cfg: FioJobConfig, env: &BuildEnv) -> Result<FioJob, BuildError> {
        let region = cfg.validate(env)?;
        // fio's `setup_random_seeds`: `randseed` seeds each job from itself and the job's
        // thread number, so the clones of `numjobs` and the jobs of a `[global]` seed draw
        // apart; here from itself and the job's name (a clone's carries its number).
        let seed = match cfg.randseed {
            Some(s) => env.named_seed(s),
            None => env.job_seed(None),
        };
        let draws = cfg.size_draws();
        let dirs = cfg.directions();
        let used: Vec<&SizeDraw> = (0..2).filter(|&d| dirs[d]).map(|d| &draws[d]).collect();
        let one_size =
            used.iter().all(|d| d.is_fixed()) && used.windows(2).all(|w| w[0].min == w[1].min);
        // One size for every I/O (`bs`, or the one size of `block_sizes`); else the smallest,
        // the unit of random offsets.
        let bs = cfg.min_size();
        let blocks = region.len * SECTOR_BYTES / bs;
        // Sequential positions per pass: with a skip, fewer than the blocks.
        let stride = bs + cfg.rw_skip.max(0).unsigned_abs();
        let positions = if cfg.rw.is_random() {
            blocks
        } else {
            (region.len * SECTOR_BYTES - bs) / stride + 1
        };
        // Strided zones (fio's `setup_strided_zone_mode`): random offsets fall in the zone
        // (fio's `last_block` and random map over `zone_range`).
        let strided = (cfg.zonemode == ZoneMode::Strided).then(|| Strided {
            size: cfg.zone_size,
            range: cfg.zone_range(),
            step: cfg.zone_range().saturating_add(cfg.zone_skip),
            start: 0,
            done: 0,
            device_end: env.capacity_bytes() - region.start * SECTOR_BYTES,
        });
        let span = strided
            .as_ref()
            .map_or(region.len * SECTOR_BYTES, |z| z.range.min(z.device_end));
        let blocks = span / bs;
        let pairs = if cfg.rw.trim_writes() { 2 } else { 1 };
        let sizes = (!one_size).then(|| {
            Box::new(VariableSizes {
                draws: draws.clone(),
                cursors: [0, 0],
                byte_limit: (!cfg.time_based)
                    .then(|| pairs * cfg.io_size.unwrap_or(region.len * SECTOR_BYTES)),
                pass_over: false,
                rng: ChaCha8Rng::seed_from_u64(mix64(seed ^ 0x6273_7a00)),
            })
        });
        // fio's `fixup_options`: any distribution but `random` turns the random map off.
        // fio's `fixup_options`: a random job's `blockalign` other than a direction's
        // smallest size aligns its offsets (and turns the random map off).
        let region_bytes = span;
        let align: [Option<(u64, u64)>; 2] = std::array::from_fn(|d| {
            Some(cfg.blockalign[d])
                .filter(|&ba| ba > 0 && cfg.rw.is_random() && ba != draws[d].min)
                .map(|ba| (ba, aligned_blocks(region_bytes, draws[d].min, ba).max(1)))
        });
        // fio's LFSR visits each block once a period whether or not there is a map.
        let uses_map = cfg.random_distribution.is_uniform()
            && ((!cfg.norandommap && align.iter().all(Option::is_none))
                || cfg.random_generator == RandomGenerator::Lfsr);
        let poisson = (cfg.rate_process == RateProcess::Poisson)
            .then(|| {
                let bps = cfg.rate.or(cfg.rate_iops.map(|i| i.saturating_mul(bs)))?;
                Some(Poisson {
                    mean_us: 1_000_000 / (bps / bs).max(1),
                    next_ns: 0,
                    rng: ChaCha8Rng::seed_from_u64(mix64(seed ^ 0x706f_6900)),
                })
            })
            .flatten();
        let dist = cfg
            .rw
            .is_random()
            .then(|| OffsetDraw::new(&cfg.random_distribution, blocks, mix64(seed ^ 0x6469_7374)))
            .flatten()
            .map(Box::new);
        let limit = {
            let by_size = if cfg.time_based {
                None
            } else if let Some(v) = &sizes {
                // At most this many: the bytes in I/Os of the smallest size.
                v.byte_limit.map(|b| b.div_ceil(bs))
            } else {
                let bytes = cfg.io_size.unwrap_or(positions * bs);
                Some((bytes / bs).max(1))
            };
            // fio's `do_io`: a trimwrite job trims and then writes each byte, so its bytes
            // and `number_ios` count twice.
            let by_size = by_size.map(|n| n * pairs);
            match (by_size, cfg.number_ios.map(|n| n * pairs)) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            }
        };
        Ok(FioJob {
            name: env.name.clone(),
            region,
            blocks,
            positions,
            stride_sectors: stride / SECTOR_BYTES,
            block_sectors: (bs / SECTOR_BYTES) as u32,
            sizes,
            bytes_issued: 0,
            writes_issued: 0,
            last_was_write: false,
            end_flush: None,
            trimmed: None,
            osync_due: false,
            next_tag: 0,
            last_start: [None, None],
            last_end: [0, 0],
            seq_left: cfg.rand_seq_nr,
            read_percent: cfg.rw.read_percent(cfg.rwmixread),
            rng: ChaCha8Rng::seed_from_u64(seed),
            prio_rng: ChaCha8Rng::seed_from_u64(mix64(seed ^ 0x7072_696f)),
            map: BlockOrder::new(blocks, mix64(seed ^ 0x6d61_7000)),
            uses_map,
            dist,
            align,
            pct_rng: ChaCha8Rng::seed_from_u64(mix64(seed ^ 0x7063_7400)),
            poisson,
            strided,
            cursors: [0, 0],
            limit,
            issued: 0,
            queued: Vec::new(),
            outstanding: Vec::new(),
            unreaped: Vec::new(),
            reaped: Vec::new(),
            depths: Depths::of(&cfg),
            reap: None,
            start: None,
            deadline: None,
            batch: 0,
            quiesce: None,
            think_until: None,
            last_completion: Nanos::ZERO,
            cfg,
        })
    }

    /// The configuration the job was built from.
    pub fn config(&self) -> &FioJobConfig {
        &self.cfg
    }

    /// The job's region on the device.
    pub fn region(&self) -> Region {
        self.region
    }

    /// The most I/Os the job issues: `number_ios`, or its bytes (`io_size`, else a pass over
    /// its region) over `bs`, whichever is fewer; `None` when only time ends it
    /// (`time_based`). `runtime_ms` may end it sooner.
    pub fn io_limit(&self) -> Option<u64> {
        self.limit
    }

    fn stopped_issuing(&self, now: Nanos) -> bool {
        let by_bytes = self.sizes.as_ref().and_then(|v| v.byte_limit);
        let pass_over = self
            .sizes
            .as_ref()
            .is_some_and(|v| v.pass_over && !self.cfg.time_based);
        (self.sizes.is_none() && self.limit.is_some_and(|l| self.issued >= l))
            || self
                .cfg
                .number_ios
                .is_some_and(|n| self.issued >= n * if self.cfg.rw.trim_writes() { 2 } else { 1 })
            || by_bytes.is_some_and(|b| self.bytes_issued >= b)
            || pass_over
            || self.deadline.is_some_and(|d| now >= d)
    }

    /// Earliest time the next I/O may be issued under `rate` / `rate_iops`.
    fn rate_gate(&self, start: Nanos) -> Nanos {
        if let Some(p) = &self.poisson {
            return start.saturating_add(Nanos(p.next_ns));
        }
        let mut t = start;
        if let Some(rate) = self.cfg.rate {
            let ns = u128::from(self.bytes_issued) * 1_000_000_000 / u128::from(rate);
            t = t.max(start.saturating_add(Nanos(ns.min(u128::from(u64::MAX)) as u64)));
        }
        if let Some(iops) = self.cfg.rate_iops {
            let ns = u128::from(self.issued) * 1_000_000_000 / u128::from(iops);
            t = t.max(start.saturating_add(Nanos(ns.min(u128::from(u64::MAX)) as u64)));
        }
        t
    }

    fn next_io(&mut self) -> IoSpec {
        if let Some((offset, sectors)) = self.trimmed.take() {
            // fio's `set_rw_ddir` for trimwrite: after a trim, a write; randtrimwrite's write
            // takes the trim's offset and length (`get_next_block`, `get_next_buflen`).
            let tag = self.next_tag;
            self.next_tag += 1;
            self.issued += 1;
            self.bytes_issued += u64::from(sectors) * SECTOR_BYTES;
            // A write like any other to fio's engine: its cmdprio share applies.
            let prio = self.cmdprio(false, sectors);
            return IoSpec {
                ctx: 0,
                op: Op::Write,
                sync: self.cfg.direct || self.buffered_sync(),
                meta: false,
                idle_hint: self.cfg.direct,
                sector: self.region.start + offset,
                sectors,
                prio,
                tag,
            };
        }
        let read = match self.read_percent {
            100 => true,
            0 => false,
            p => self.rng.gen_range(0..100) < p,
        };
        let dir = usize::from(!read);
        let end = self.region.len * SECTOR_BYTES;
        let smallest = self
            .sizes
            .as_ref()
            .map_or(u64::from(self.block_sectors) * SECTOR_BYTES, |v| {
                v.draws[dir].min
            });
        if self.strided.is_some() {
            return self.strided_io(dir, read);
        }
        let place = self.place(dir, end, smallest);
        let (offset, sectors) = if let Some(v) = self.sizes.as_deref_mut() {
            let draw = &v.draws[dir];
            let at = match place {
                // Aligned to this direction's smallest size, and where that fits.
                Place::Block(block) => {
                    let at = block * u64::from(self.block_sectors) * SECTOR_BYTES;
                    let at = at - at % draw.min;
                    at.min((end - draw.min) / draw.min * draw.min)
                }
                Place::At(at) => at.min(end - draw.min),
                // A pass ends where this direction's smallest size no longer fits.
                Place::Next if v.cursors[dir] + draw.min > end => 0,
                Place::Next => v.cursors[dir],
            };
            let rng = &mut v.rng;
            let len = draw.draw(end - at, || rng.next_u32());
            if place == Place::Next {
                v.cursors[dir] = at + len + self.cfg.rw_skip.unsigned_abs();
                v.pass_over |= self.cfg.rw_skip > 0 && v.cursors[dir] + draw.min > end;
            }
            (at / SECTOR_BYTES, (len / SECTOR_BYTES) as u32)
        } else {
            match place {
                Place::Block(block) => (block * u64::from(self.block_sectors), self.block_sectors),
                Place::At(at) => (at.min(end - smallest) / SECTOR_BYTES, self.block_sectors),
                Place::Next => {
                    let p = self.cursors[dir];
                    self.cursors[dir] = (p + 1) % self.positions;
                    (p * self.stride_sectors, self.block_sectors)
                }
            }
        };
        self.last_start[dir] = Some(offset * SECTOR_BYTES);
        self.last_end[dir] = (offset + u64::from(sectors)) * SECTOR_BYTES;
        self.data_io(read, offset, sectors)
    }

    /// The priority of a read (`read`) or write of `sectors`: fio's engines pick it as they
    /// queue each read or write (`fio_cmdprio_set_ioprio` from `fio_ioring_queue` and
    /// `fio_libaio_prep`), a trimwrite's writes included.
    fn cmdprio(&mut self, read: bool, sectors: u32) -> Option<IoPrio> {
        if self.cfg.cmdprio.is_empty() {
            return None;
        }
        let rng = &mut self.prio_rng;
        let bytes = u64::from(sectors) * SECTOR_BYTES;
        self.cfg
            .cmdprio
            .pick(usize::from(!read), bytes, || rng.gen_range(0..100))
            .flatten()
    }

    /// The data I/O of direction `read` at `offset` sectors into the region, counted.
    fn data_io(&mut self, read: bool, offset: u64, sectors: u32) -> IoSpec {
        let tag = self.next_tag;
        self.next_tag += 1;
        self.issued += 1;
        self.bytes_issued += u64::from(sectors) * SECTOR_BYTES;
        if self.cfg.rw.trims() {
            // A trim: the block layer's discard, which neither `blkdev_issue_discard`
            // (BLKDISCARD) nor io_uring's `blkdev_cmd_discard` marks REQ_SYNC.
            if self.cfg.rw.trim_writes() {
                self.trimmed = Some((offset, sectors));
            }
            return IoSpec {
                ctx: 0,
                op: Op::Discard,
                sync: self.cfg.trim_sync,
                meta: false,
                idle_hint: false,
                sector: self.region.start + offset,
                sectors,
                prio: None,
                tag,
            };
        }
        let prio = self.cmdprio(read, sectors);
        // A buffered O_SYNC write reaches the device as `file_write_and_wait_range`'s
        // writeback, WB_SYNC_ALL: REQ_SYNC without the idle hint.
        let osync = !read && self.buffered_sync();
        IoSpec {
            ctx: 0,
            op: if read { Op::Read } else { Op::Write },
            sync: read || self.cfg.direct || osync,
            meta: false,
            idle_hint: !read && self.cfg.direct,
            sector: self.region.start + offset,
            sectors,
            prio,
            tag,
        }
    }
}

impl Job for FioJob {
    /// Its seed feeds only the random offsets (`BlockOrder`, or the RNG with `norandommap`),
    /// the draws of a mixed job's directions (`next_io`) and of varying sizes: a
    /// sequential job of one direction and one size uses none.
    fn draws_from_seed(&self) -> bool {
        self.cfg.rw.is_random() || !matches!(self.read_percent, 0 | 100) || self.sizes.is_some()
    }

    fn name(&self) -> &str {
        &self.name
    }

    fn poll(&mut self, now: Nanos) -> Action {
        let start = *self.start.get_or_insert(now);
        if self.deadline.is_none() {
            self.deadline = self
                .cfg
                .runtime_ms
                .map(|ms| start + Nanos::from_ms(self.cfg.ramp_ms + ms));
        }
        // One pass of fio's `do_io` loop per I/O queued, the reaping and sleeping it does
        // in between resumed where the job last waited.
        loop {
            if let Some(r) = self.reap {
                // `io_u_queued_complete` -> `td_io_getevents`: what is queued is submitted
                // first, then `min` completions are waited for and up to `max` reaped.
                if !self.queued.is_empty() {
                    return self.submit_queued();
                }
                let min = r.min.min(self.cur_depth());
                if (self.unreaped.len() as u32) < min {
                    return Action::Wait;
                }
                let max = self.depths.complete_max.min(self.cur_depth()).max(min);
                self.reap((max as usize).min(self.unreaped.len()));
                if !(r.full && self.cur_depth() > self.depths.low) {
                    self.reap = None;
                }
                continue;
            }
            if self.osync_due && self.queued.is_empty() && self.outstanding.is_empty() {
                // A buffered O_SYNC / O_DSYNC write(2) goes on once its writeback is done:
                // `generic_write_sync` -> `blkdev_fsync` flushes the device's cache, and
                // the call returns after it, before fio looks at its think time or its end.
                self.osync_due = false;
                let mut flush = self.flush();
                flush.tag |= HIDDEN_FLUSH;
                self.outstanding.push(flush.tag);
                return Action::Issue(flush);
            }
            // fio's `handle_thinktime` quiesces after the I/O that completes a think block,
            // before its loop looks whether the job is done.
            if let Some(q) = self.quiesce {
                if !self.queued.is_empty() {
                    return self.submit_queued();
                }
                if !self.outstanding.is_empty() {
                    // `io_u_quiesce` reaps as they come (`io_u_queued_complete(td, 1)`), up
                    // to `iodepth_batch_complete_max` at a time.
                    let max = self.depths.complete_max.max(1) as usize;
                    self.reap(self.unreaped.len().min(max));
                    return Action::Wait;
                }
                self.reap(self.unreaped.len());
                self.quiesce = None;
                if self.stopped_issuing(now) {
                    // The job ends here: fio would still sleep its think time before its
                    // loop looks (a deviation: it ends at its last completion).
                    continue;
                }
                let since = self.last_completion.max(start);
                self.think_until = Some(match q {
                    Quiesce::Think => since + Nanos::from_us(self.cfg.thinktime_us),
                    Quiesce::Rate { looked, sleep } => since.max(looked) + sleep,
                });
            }
            if self.stopped_issuing(now) {
                // The loop ends: what is queued is submitted and everything reaped.
                if !self.queued.is_empty() {
                    return self.submit_queued();
                }
                if !self.outstanding.is_empty() {
                    return Action::Wait;
                }
                // fio reaps what is left (`io_u_queued_complete(td, cur_depth)`) before its
                // end flush.
                self.reap(self.unreaped.len());
                if self.cfg.end_fsync && self.writes_issued > 0 && self.end_flush.is_none() {
                    // `end_fsync`: one flush, waited for; fio runs it in `TD_FSYNCING`,
                    // outside its figures (`should_account`).
                    let flush = self.flush();
                    self.end_flush = Some(flush.tag);
                    self.outstanding.push(flush.tag);
                    return Action::Issue(flush);
                }
                self.reap(self.unreaped.len());
                return Action::Done;
            }
            if let Some(t) = self.think_until {
                if now < t {
                    return self.sleep_until(t);
                }
                self.think_until = None;
            }
            if self.cur_depth() >= self.cfg.iodepth {
                // `get_io_u` finds the queue full: reap.
                self.reap = Some(self.wait_for_completions(true));
                continue;
            }
            if self.sync_due() {
                // `get_rw_ddir`: a flush after every `fsync` (`fdatasync`) writes, before the
                // rate is looked at, queued as any I/O; it is not a data I/O (no count,
                // bytes, rate or think time).
                self.last_was_write = false;
                let flush = self.flush();
                self.queued.push(flush);
                let full = self.cur_depth() >= self.cfg.iodepth;
                if full || self.depths.polling() {
                    self.reap = Some(self.wait_for_completions(full));
                }
                if self.queued.len() >= self.depths.submit as usize {
                    return self.submit_queued();
                }
                continue;
            }
            let gate = self.rate_gate(start);
            if now < gate {
                // `rate_ddir`: ahead of the rate, quiesce, then sleep what it is ahead.
                self.quiesce = Some(Quiesce::Rate {
                    looked: now,
                    sleep: gate - now,
                });
                continue;
            }
            let io = self.next_io();
            if let Some(p) = &mut self.poisson {
                p.advance();
            }
            self.last_was_write = io.op == Op::Write;
            self.osync_due = self.last_was_write && self.buffered_sync();
            self.writes_issued += u64::from(self.last_was_write);
            self.queued.push(io);
            if self.cfg.thinktime_us > 0 {
                self.batch += 1;
                if self.batch >= self.cfg.thinktime_blocks {
                    self.batch = 0;
                    self.quiesce = Some(Quiesce::Think);
                }
            }
            // `td_io_queue` submits a whole batch; then fio reaps if the queue is full.
            let full = self.cur_depth() >= self.cfg.iodepth;
            if full || self.depths.polling() {
                self.reap = Some(self.wait_for_completions(full));
            }
            if self.queued.len() >= self.depths.submit as usize {
                return self.submit_queued();
            }
        }
    }

    /// Waiting for more than one completion at a time, fio stamps an I/O's latency when it
    /// reaps it, later than it completed. Otherwise each is reaped as it completes (save at
    /// the job's end: fio waits for all that are left in one reap and stamps them together,
    /// here each at its completion, a deviation).
    fn reaps_late(&self) -> bool {
        self.depths.complete_min > 1
    }

    fn take_reaped(&mut self, out: &mut Vec<u64>) {
        out.append(&mut self.reaped);
    }

    /// The end's flush (`end_fsync`) is left out, as fio leaves it out of its `sync` figures,
    /// and so are the flushes inside buffered O_SYNC writes (fio sees only its `write(2)`).
    fn counts_in_figures(&self, tag: u64) -> bool {
        self.end_flush != Some(tag) && tag & HIDDEN_FLUSH == 0
    }

    fn complete(&mut self, tag: u64, now: Nanos) {
        if let Some(i) = self.outstanding.iter().position(|&t| t == tag) {
            self.outstanding.swap_remove(i);
            self.unreaped.push(tag);
            self.last_completion = now;
        }
    }
}

impl FioJob {
    /// fio's `cur_depth`: I/Os queued, in flight, or complete and not yet reaped.
    fn cur_depth(&self) -> u32 {
        (self.queued.len() + self.outstanding.len() + self.unreaped.len()) as u32
    }

    /// Reap the first `n` completions.
    fn reap(&mut self, n: usize) {
        if self.reaps_late() {
            self.reaped.extend(self.unreaped.drain(..n));
        } else {
            self.unreaped.drain(..n);
        }
    }

    /// `wait_for_completions` begins: the completions each reap waits for.
    fn wait_for_completions(&self, full: bool) -> Reap {
        let mut min = self.depths.complete_min.min(self.cur_depth());
        if (full && min == 0) || self.depths.complete_min == 0 {
            min = 1;
        }
        Reap { min, full }
    }

    /// Submit the queued I/Os in one call (`td_io_commit`).
    fn submit_queued(&mut self) -> Action {
        self.outstanding.extend(self.queued.iter().map(|io| io.tag));
        if self.queued.len() == 1 {
            Action::Issue(self.queued.pop().expect("one queued"))
        } else {
            Action::Batch(std::mem::take(&mut self.queued))
        }
    }

    /// Where direction `dir`'s next I/O goes (fio's `get_next_offset`), in a region of `end`
    /// bytes whose smallest I/O there is `smallest` bytes.
    fn place(&mut self, dir: usize, end: u64, smallest: u64) -> Place {
        if self.cfg.rw.is_random() {
            let nr = self.cfg.rand_seq_nr;
            let random = nr <= 1 || {
                self.seq_left -= 1;
                if self.seq_left == 0 {
                    self.seq_left = nr;
                }
                self.seq_left == nr
            };
            // After the last I/O of the direction, where that fits (`get_next_seq_offset`).
            let after_last = Some(self.last_end[dir]).filter(|&at| at + smallest <= end);
            let (random, between) = if random {
                // fio's `should_do_random`: `percentage_random` of these are random, the
                // others sequential.
                (self.should_do_random(dir), after_last)
            } else {
                let between = match self.cfg.rw_sequencer {
                    RwSequencer::Sequential => after_last,
                    RwSequencer::Identical => Some(self.last_start[dir].unwrap_or(0)),
                };
                (false, between)
            };
            return match between {
                Some(at) if !random => Place::At(at),
                _ => self.random_place(dir),
            };
        }
        if self.cfg.rw_skip >= 0 {
            return Place::Next;
        }
        // Backwards (`get_next_seq_offset` with a negative `ddir_seq_add`): the first I/O at
        // the region's start, then each `skip` from where the last ended, wrapping to
        // `skip` from the end when that leaves the region.
        let last = self.last_end[dir];
        if last == 0 {
            return Place::At(0);
        }
        let skip = self.cfg.rw_skip.unsigned_abs();
        Place::At(match last.checked_sub(skip) {
            Some(at) if at < end => at,
            _ => end.saturating_sub(skip),
        })
    }

    /// The next I/O of direction `dir` under `zonemode=strided` (fio's
    /// `setup_strided_zone_mode`, then `get_next_offset` within the zone): once `zone_size`
    /// bytes are done in a zone the next starts `zone_range + zone_skip` on (back at the
    /// region's start where the I/O would not fit before the device's end, as fio wraps at
    /// the file's); a sequential direction goes on from its last I/O (which may straddle the
    /// zone's end, as in fio), back to the zone's start once that I/O ended at or past the
    /// zone's end (fio keeps the zone until `zone_size` is done); a random one
    /// draws within the zone, its random map (if any) starting a new pass at each zone.
    /// Positions (`last_start`, `last_end`) are kept relative to the zone.
    fn strided_io(&mut self, dir: usize, read: bool) -> IoSpec {
        let bs = u64::from(self.block_sectors) * SECTOR_BYTES;
        let mut z = self.strided.take().expect("strided");
        if z.done >= z.size {
            z.done = 0;
            z.start = z.start.saturating_add(z.step);
            if z.start.saturating_add(bs) > z.device_end {
                z.start = 0;
            }
            // fio's `fio_file_reset` (below, as `zone_bytes` is 0) moves both directions'
            // `last_pos` to the new zone.
            self.last_start = [None, None];
            self.last_end = [0, 0];
        }
        if z.done.is_multiple_of(z.range) {
            // fio resets the random map each `zone_range` bytes done.
            self.map.new_pass();
        }
        let room = z.range.min(z.device_end - z.start);
        // fio keeps a direction in the zone until its last I/O ends at or past the zone's end
        // (`last_pos >= file_offset + zone_range`), so an I/O may straddle that end; one that
        // would pass the device's end starts the zone again here (fio's would fail).
        if self.last_end[dir] >= z.range || self.last_end[dir] + bs > z.device_end - z.start {
            self.last_end[dir] = 0;
        }
        let rel = if self.cfg.rw.is_random() {
            match self.place(dir, room, bs) {
                Place::Block(b) => (b * bs).min(room - bs),
                Place::At(at) => at.min(room - bs),
                Place::Next => self.last_end[dir],
            }
        } else {
            self.last_end[dir]
        };
        z.done += bs;
        self.last_start[dir] = Some(rel);
        self.last_end[dir] = rel + bs;
        let offset = (z.start + rel) / SECTOR_BYTES;
        self.strided = Some(z);
        self.data_io(read, offset, self.block_sectors)
    }

    /// A random offset for direction `dir` (fio's `get_next_rand_offset`): from the
    /// distribution's generator, else the random map, else uniform with replacement
    /// (`norandommap`). A block of the job's smallest size, or with `blockalign` a multiple
    /// of it where the direction's smallest I/O fits (fio's `b * ba`; a zipf, pareto or
    /// normal value past those folded back into them, where fio's I/O would fail).
    fn random_place(&mut self, dir: usize) -> Place {
        let (unit, lastb) = match self.align[dir] {
            Some(a) => a,
            None => (u64::from(self.block_sectors) * SECTOR_BYTES, self.blocks),
        };
        let b = if let Some(d) = self.dist.as_deref_mut() {
            d.next(dir, lastb, unit)
        } else if self.uses_map {
            self.map.next()
        } else {
            self.rng.gen_range(0..lastb)
        };
        match self.align[dir] {
            Some((ba, lastb)) => Place::At(b % lastb * ba),
            None => Place::Block(b),
        }
    }

    /// fio's `should_do_random`: whether a random job's I/O in direction `dir` takes a random
    /// offset (`percentage_random`; drawn only below 100).
    fn should_do_random(&mut self, dir: usize) -> bool {
        let p = self.cfg.percentage_random[dir];
        p >= 100 || self.pct_rng.gen_range(1..=100) <= p
    }

    /// Whether its writes are buffered O_SYNC / O_DSYNC ones (`sync` without `direct`).
    fn buffered_sync(&self) -> bool {
        self.cfg.sync_io != SyncIo::None && !self.cfg.direct
    }

    /// Whether a flush is due before the next I/O (fio's `get_rw_ddir`: the last I/O was a
    /// write, and the writes issued are a multiple of `fsync` or `fdatasync`).
    fn sync_due(&self) -> bool {
        let every = |n: u32| n > 0 && self.writes_issued.is_multiple_of(u64::from(n));
        self.last_was_write
            && self.writes_issued > 0
            && (every(self.cfg.fsync_blocks) || every(self.cfg.fdatasync_blocks))
    }

    /// A flush (fio's `DDIR_SYNC` / `DDIR_DATASYNC`): the block layer's empty flush request.
    fn flush(&mut self) -> IoSpec {
        let tag = self.next_tag;
        self.next_tag += 1;
        IoSpec {
            ctx: 0,
            op: Op::Flush,
            sync: true,
            meta: false,
            idle_hint: false,
            sector: 0,
            sectors: 0,
            prio: None,
            tag,
        }
    }

    /// Sleep until `t`, or until the run's deadline if that comes first.
    fn sleep_until(&self, t: Nanos) -> Action {
        Action::Think {
            until: self.deadline.map_or(t, |d| t.min(d)),
        }
    }
}

/// `zonemode=strided`'s state: the zone's start (bytes from the region's start) and the
/// bytes done in it (fio's `file_offset`, `zone_bytes`).
#[derive(Clone, Debug)]
struct Strided {
    size: u64,
    range: u64,
    step: u64,
    start: u64,
    done: u64,
    /// Bytes from the region's start to the device's end (fio's `real_file_size`).
    device_end: u64,
}

/// `rate_process=poisson` (fio's `usec_for_io`): the next I/O's time from the job's start is
/// the sum of exponential gaps, each `mean_us * -ln(u)` whole microseconds for `u` uniform in
/// (0, 1], the mean fio's `1000000 / iops` (iops the rate over the smallest block).
#[derive(Clone, Debug)]
struct Poisson {
    mean_us: u64,
    next_ns: u64,
    rng: ChaCha8Rng,
}

impl Poisson {
    /// One I/O issued: the next may go one gap later (fio's `last_usec += val`).
    fn advance(&mut self) {
        // fio's `__rand_0_1`, and its single-precision `logf` and product.
        let u = (f64::from(self.rng.next_u32()) + 1.0) / 4_294_967_296.0;
        let gap_us = (self.mean_us as f32 * -(u as f32).ln()) as u64;
        self.next_ns = self.next_ns.saturating_add(gap_us.saturating_mul(1_000));
    }
}

/// Every block of `[0, n)` once per pass, in a keyed pseudo-random order: a four-round Feistel
/// permutation over the next even power of two, cycle-walked into range. O(1) memory.
#[derive(Clone, Debug)]
struct BlockOrder {
    n: u64,
    half_bits: u32,
    key: u64,
    pass: u64,
    index: u64,
    /// The four rounds' keys of this pass (the key mixed with the pass and the round): the
    /// same for every block of a pass, so computed once a pass, not at every round.
    round_keys: [u64; 4],
}

impl BlockOrder {
    fn new(n: u64, key: u64) -> BlockOrder {
        let bits = (64 - n.saturating_sub(1).leading_zeros()).max(2);
        BlockOrder {
            n,
            half_bits: bits.div_ceil(2),
            key,
            pass: 0,
            index: 0,
            round_keys: Self::round_keys(key, 0),
        }
    }

    /// The round keys of `pass` under `key`.
    fn round_keys(key: u64, pass: u64) -> [u64; 4] {
        std::array::from_fn(|round| key ^ mix64(pass.wrapping_add((round as u64) << 56)))
    }

    fn permute(&self, x: u64) -> u64 {
        let mask = (1u64 << self.half_bits) - 1;
        let (mut l, mut r) = (x >> self.half_bits, x & mask);
        for k in self.round_keys {
            let f = mix64(r ^ k) & mask;
            (l, r) = (r, l ^ f);
        }
        (l << self.half_bits) | r
    }

    /// Start a new pass (fio's `fio_file_reset` of the random map at a new zone).
    fn new_pass(&mut self) {
        if self.index != 0 {
            self.index = 0;
            self.pass += 1;
            self.round_keys = Self::round_keys(self.key, self.pass);
        }
    }

    fn next(&mut self) -> u64 {
        let mut y = self.permute(self.index);
        while y >= self.n {
            y = self.permute(y);
        }
        self.index += 1;
        if self.index == self.n {
            self.index = 0;
            self.pass += 1;
            self.round_keys = Self::round_keys(self.key, self.pass);
        }
        y
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::HandDriver;
    use std::collections::BTreeSet;

    const MIB: u64 = 1 << 20;

    fn env() -> BuildEnv {
        BuildEnv::new(1 << 21, 42, "fio") // 1 GiB
    }

    /// fio's `setup_random_seeds` seeds each thread from `randseed` and its thread number:
    /// two clones of one `randseed` draw different offsets (the recording
    /// `bigsplit-pareto-...-one-8m-region`: 854 distinct of its two clones' 1,000 where ours,
    /// one sequence twice, gave 434); the same job seeded alike repeats, whatever the run's
    /// seed.
    #[test]
    fn randseed_seeds_each_clone_apart_and_repeats() {
        let offsets = |name: &str, run_seed: u64| -> Vec<u64> {
            let cfg = FioJobConfig {
                rw: RwMode::RandRead,
                randseed: Some(6005),
                number_ios: Some(50),
                ..FioJobConfig::default()
            };
            let mut job = FioJob::new(cfg, &BuildEnv::new(1 << 21, run_seed, name)).unwrap();
            HandDriver::new(1, Nanos::from_ms(1), Nanos::from_secs(3600))
                .run(&mut job)
                .issued
                .iter()
                .map(|i| i.spec.sector)
                .collect()
        };
        assert_ne!(offsets("pareto.0", 1), offsets("pareto.1", 1));
        assert_eq!(offsets("pareto.0", 1), offsets("pareto.0", 2));
    }

    fn run(cfg: FioJobConfig, depth: usize) -> crate::testkit::Record {
        let mut job = FioJob::new(cfg, &env()).unwrap();
        HandDriver::new(depth, Nanos::from_ms(1), Nanos::from_secs(3600)).run(&mut job)
    }

    fn sectors(cfg: FioJobConfig) -> Vec<(Op, u64)> {
        run(cfg, 1)
            .issued
            .iter()
            .map(|i| (i.spec.op, i.spec.sector))
            .collect()
    }

    /// fio's `fixup_options` turns the random map off for any distribution but `random`: a
    /// zipf:1.2 reader's 1024 reads over 1024 blocks come back to its hot blocks (a random
    /// map would visit each once), each a whole block inside the region.
    #[test]
    fn a_zipf_job_repeats_its_hot_blocks_without_a_random_map() {
        let cfg = FioJobConfig {
            rw: RwMode::RandRead,
            offset: Some(MIB),
            size: Some(4 * MIB),
            number_ios: Some(1024),
            random_distribution: RandomDistribution::Zipf {
                theta: 1.2,
                center: None,
            },
            ..Default::default()
        };
        let s = sectors(cfg);
        assert_eq!(s.len(), 1024);
        assert!(s
            .iter()
            .all(|&(_, x)| x % 8 == 0 && (2048..2048 + 8192).contains(&x)));
        let distinct: BTreeSet<u64> = s.iter().map(|&(_, x)| x).collect();
        assert!(distinct.len() < 600, "{} distinct blocks", distinct.len());
    }

    /// `zoned_abs:100/1M,` on a random mixed job: every read in the region's first MiB
    /// (fio's `__get_next_rand_offset_zoned_abs`), the writes, given no zones, uniform over
    /// the region (fio's `bail`).
    #[test]
    fn zoned_abs_sends_each_direction_to_its_own_zones() {
        use crate::jobs::Zone;
        let cfg = FioJobConfig {
            rw: RwMode::RandRw,
            size: Some(16 * MIB),
            number_ios: Some(2000),
            random_distribution: RandomDistribution::ZonedAbs {
                zones: [
                    vec![Zone {
                        access: 100,
                        size: MIB,
                    }],
                    vec![],
                ],
            },
            ..Default::default()
        };
        let s = sectors(cfg);
        let (reads, writes): (Vec<_>, Vec<_>) = s.iter().partition(|(op, _)| *op == Op::Read);
        assert!(
            reads.iter().all(|&&(_, x)| x < 2048),
            "reads in the first MiB"
        );
        let high = writes.iter().filter(|&&&(_, x)| x >= 16_384).count();
        assert!(
            high > writes.len() / 3,
            "{high} of {} writes past 8 MiB",
            writes.len()
        );
    }

    /// Zones past the region are refused naming the option (fio fails the first I/O
    /// there); a sequential job ignores the distribution, as fio's do.
    #[test]
    fn zones_past_the_region_are_refused_and_sequential_jobs_ignore_the_distribution() {
        use crate::jobs::Zone;
        let z = |access, size| Zone { access, size };
        let cfg = FioJobConfig {
            rw: RwMode::RandWrite,
            size: Some(4 * MIB),
            random_distribution: RandomDistribution::ZonedAbs {
                zones: [vec![], vec![z(50, 2 * MIB), z(50, 4 * MIB)]],
            },
            ..Default::default()
        };
        let e = FioJob::new(cfg.clone(), &env()).unwrap_err();
        assert_eq!(e.field, "random_distribution", "{}", e.reason);
        let seq = FioJobConfig {
            rw: RwMode::Write,
            number_ios: Some(16),
            ..cfg.clone()
        };
        let plain = FioJobConfig {
            random_distribution: RandomDistribution::Random,
            ..seq.clone()
        };
        assert_eq!(sectors(seq), sectors(plain));
    }

    /// `random_generator=lfsr` under `norandommap`: fio's LFSR still visits every block once
    /// a period, where the default generator draws with replacement.
    #[test]
    fn lfsr_keeps_a_pass_over_every_block_under_norandommap() {
        let cfg = FioJobConfig {
            rw: RwMode::RandRead,
            size: Some(MIB),
            norandommap: true,
            random_generator: RandomGenerator::Lfsr,
            ..Default::default()
        };
        let s = sectors(cfg.clone());
        let distinct: BTreeSet<u64> = s.iter().map(|&(_, x)| x).collect();
        assert_eq!((s.len(), distinct.len()), (256, 256));
        let tausworthe = FioJobConfig {
            random_generator: RandomGenerator::Tausworthe,
            ..cfg
        };
        let distinct: BTreeSet<u64> = sectors(tausworthe).iter().map(|&(_, x)| x).collect();
        assert!(distinct.len() < 256, "with replacement");
    }

    /// fio's `should_do_random`: `percentage_random=0` makes a random reader sequential
    /// (each read after the last, from the region's start); 50 makes about half its reads
    /// follow the one before; per direction, `100,0` leaves the reads random and the writes
    /// sequential.
    #[test]
    fn percentage_random_mixes_random_and_sequential_offsets_per_direction() {
        let cfg = FioJobConfig {
            rw: RwMode::RandRead,
            size: Some(64 * MIB),
            number_ios: Some(2000),
            percentage_random: [0, 0],
            ..Default::default()
        };
        let s = sectors(cfg.clone());
        assert!(s.iter().enumerate().all(|(i, &(_, x))| x == i as u64 * 8));
        let half = sectors(FioJobConfig {
            percentage_random: [50, 50],
            ..cfg.clone()
        });
        let follow = half.windows(2).filter(|w| w[1].1 == w[0].1 + 8).count();
        assert!((900..1100).contains(&follow), "{follow} of 1999 followed");
        let mixed = sectors(FioJobConfig {
            rw: RwMode::RandRw,
            percentage_random: [100, 0],
            ..cfg
        });
        let of = |op| -> Vec<u64> {
            mixed
                .iter()
                .filter(|(o, _)| *o == op)
                .map(|&(_, x)| x)
                .collect()
        };
        let (reads, writes) = (of(Op::Read), of(Op::Write));
        assert!(writes.iter().enumerate().all(|(i, &x)| x == i as u64 * 8));
        let followed = reads.windows(2).filter(|w| w[1] == w[0] + 8).count();
        assert!(followed < reads.len() / 20, "{followed} reads followed");
    }

    /// fio's `blockalign`: a 4 KiB random reader aligned to 512 bytes starts reads between
    /// 4 KiB blocks, inside the region, with the random map off (blocks repeat); aligned to
    /// 12 KiB it starts them at multiples of 12 KiB; aligned to its own size it keeps the
    /// map (each block once a pass); a sequential job ignores it.
    #[test]
    fn blockalign_aligns_random_offsets_and_turns_the_map_off() {
        let cfg = FioJobConfig {
            rw: RwMode::RandRead,
            size: Some(MIB),
            number_ios: Some(256),
            blockalign: [512, 512],
            ..Default::default()
        };
        let s = sectors(cfg.clone());
        assert!(s.iter().all(|&(_, x)| x + 8 <= 2048));
        assert!(
            s.iter().any(|&(_, x)| x % 8 != 0),
            "some reads between blocks"
        );
        let distinct: BTreeSet<u64> = s.iter().map(|&(_, x)| x).collect();
        assert!(distinct.len() < 256, "the map is off: offsets repeat");
        let s = sectors(FioJobConfig {
            blockalign: [12 * 1024, 0],
            ..cfg.clone()
        });
        assert!(
            s.iter().all(|&(_, x)| x % 24 == 0 && x + 8 <= 2048),
            "{s:?}"
        );
        assert!(s.iter().any(|&(_, x)| x > 1900), "up to the last that fits");
        let own = sectors(FioJobConfig {
            blockalign: [4096, 4096],
            ..cfg.clone()
        });
        let distinct: BTreeSet<u64> = own.iter().map(|&(_, x)| x).collect();
        assert_eq!(distinct.len(), 256, "the map kept: each block once");
        let seq = sectors(FioJobConfig {
            rw: RwMode::Read,
            number_ios: Some(4),
            ..cfg.clone()
        });
        assert_eq!(
            seq,
            [(Op::Read, 0), (Op::Read, 8), (Op::Read, 16), (Op::Read, 24)]
        );
        let e = FioJob::new(
            FioJobConfig {
                blockalign: [2 * MIB, 0],
                ..cfg
            },
            &env(),
        )
        .unwrap_err();
        assert_eq!(e.field, "blockalign", "{}", e.reason);
    }

    /// fio's `usec_for_io` under `rate_process=poisson`: a reader rated at 100 I/Os a second
    /// issues at exponential gaps of mean 10 ms (fio's 1000000 / iops): over 2000 reads the
    /// mean gap is 10 ms, about half the gaps are under the median 10 ms * ln 2, and the
    /// gaps vary as much as they average (where `linear` spaces them all 10 ms apart).
    #[test]
    fn poisson_rate_spaces_ios_by_exponential_gaps() {
        let cfg = FioJobConfig {
            rw: RwMode::RandRead,
            rate_iops: Some(100),
            rate_process: RateProcess::Poisson,
            number_ios: Some(2000),
            ..Default::default()
        };
        let rec = run(cfg.clone(), 1);
        assert_eq!(rec.issued[0].at, Nanos::ZERO);
        let gaps: Vec<f64> = rec
            .issued
            .windows(2)
            .map(|w| (w[1].at.0 - w[0].at.0) as f64 / 1e6)
            .collect();
        let n = gaps.len() as f64;
        let mean = gaps.iter().sum::<f64>() / n;
        let sd = (gaps.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / n).sqrt();
        assert!((9.3..10.7).contains(&mean), "mean gap {mean} ms");
        assert!((0.85..1.15).contains(&(sd / mean)), "sd {sd} ms");
        let short = gaps.iter().filter(|&&g| g < 10.0 * 2f64.ln()).count() as f64 / n;
        assert!((0.45..0.55).contains(&short), "{short} under the median");
        let linear = run(
            FioJobConfig {
                rate_process: RateProcess::Linear,
                number_ios: Some(5),
                ..cfg.clone()
            },
            1,
        );
        let at: Vec<u64> = linear.issued.iter().map(|i| i.at.as_ms()).collect();
        assert_eq!(at, [0, 10, 20, 30, 40]);
        let slow = FioJobConfig {
            rate: Some(1000),
            ..cfg
        };
        assert_eq!(FioJob::new(slow, &env()).unwrap_err().field, "rate");
    }

    /// fio's `setup_strided_zone_mode`: a 16 KiB reader doing 64 KiB a zone, zones of 1 MiB
    /// 960 KiB apart, reads four blocks from each zone's start, the zones 1984 KiB apart;
    /// with `zone_size` over `zone_range` it goes back to the zone's start until the zone's
    /// bytes are done; at the device's end the zones start again at the region's start.
    #[test]
    fn strided_zones_step_over_the_device_as_fio_does() {
        let kib = |v: &[(Op, u64)]| -> Vec<u64> { v.iter().map(|&(_, x)| x / 2).collect() };
        let cfg = FioJobConfig {
            bs: 16 * 1024,
            size: Some(64 * MIB),
            number_ios: Some(10),
            zonemode: ZoneMode::Strided,
            zone_size: 64 * 1024,
            zone_range: MIB,
            zone_skip: 960 * 1024,
            ..Default::default()
        };
        assert_eq!(
            kib(&sectors(cfg.clone())),
            [0, 16, 32, 48, 1984, 2000, 2016, 2032, 3968, 3984]
        );
        let cfg = FioJobConfig {
            zone_size: 128 * 1024,
            zone_range: 64 * 1024,
            zone_skip: 0,
            ..cfg
        };
        assert_eq!(
            kib(&sectors(cfg.clone())),
            [0, 16, 32, 48, 0, 16, 32, 48, 64, 80]
        );
        // A 2 MiB device: zones at 0 and 1 MiB, then back to the start.
        let small = BuildEnv::new(4096, 42, "fio");
        let cfg = FioJobConfig {
            bs: 64 * 1024,
            size: Some(MIB),
            number_ios: Some(4),
            zone_size: 64 * 1024,
            zone_range: 64 * 1024,
            zone_skip: 960 * 1024,
            ..cfg
        };
        let mut job = FioJob::new(cfg, &small).unwrap();
        let rec = HandDriver::new(1, Nanos::from_ms(1), Nanos::from_secs(60)).run(&mut job);
        let at: Vec<u64> = rec.issued.iter().map(|i| i.spec.sector / 2).collect();
        assert_eq!(at, [0, 1024, 0, 1024]);
    }

    /// fio's `setup_strided_zone_mode` moves a direction back to the zone's start only once
    /// its last I/O ended at or past the zone's end: with 6 KiB zones, 8 KiB a zone and 4 KiB
    /// reads fio 3.33 reads at 0, 4, 6, 10, 12, 16 KiB (the second read of each zone straddles
    /// its end); a read that would pass the device's end starts the zone again.
    #[test]
    fn a_sequential_read_straddles_a_strided_zones_end_as_in_fio() {
        let kib = |v: &[(Op, u64)]| -> Vec<u64> { v.iter().map(|&(_, x)| x / 2).collect() };
        let cfg = FioJobConfig {
            bs: 4096,
            size: Some(MIB),
            number_ios: Some(6),
            zonemode: ZoneMode::Strided,
            zone_size: 8 * 1024,
            zone_range: 6 * 1024,
            ..Default::default()
        };
        assert_eq!(kib(&sectors(cfg.clone())), [0, 4, 6, 10, 12, 16]);
        // A 2 MiB device, zones at 0 and 2042 KiB: the second zone's second read would end
        // past the device, so it reads the zone's start again.
        let small = BuildEnv::new(4096, 42, "fio");
        let cfg = FioJobConfig {
            zone_skip: 2 * MIB - 12 * 1024,
            ..cfg
        };
        let mut job = FioJob::new(cfg, &small).unwrap();
        let rec = HandDriver::new(1, Nanos::from_ms(1), Nanos::from_secs(60)).run(&mut job);
        let at: Vec<u64> = rec.issued.iter().map(|i| i.spec.sector / 2).collect();
        assert_eq!(at, [0, 4, 2042, 2042, 0, 4]);
    }

    /// fio draws a random job's offsets in a strided zone over `zone_range` and ends the job
    /// at the first one past the region's size (fio 3.33, `size=1m`, `zonesize=2m`: one read,
    /// then done): such zones are refused, naming `zonesize` when it sets the range; and
    /// `zoned_abs` zones must fit in the strided zone (fio's `last_block`), not the region.
    #[test]
    fn random_strided_zones_must_fit_in_the_region_and_hold_zoned_abs_zones() {
        use crate::jobs::Zone;
        let cfg = FioJobConfig {
            rw: RwMode::RandRead,
            size: Some(MIB),
            number_ios: Some(8),
            zonemode: ZoneMode::Strided,
            zone_size: 2 * MIB,
            ..Default::default()
        };
        let e = FioJob::new(cfg.clone(), &env()).unwrap_err();
        assert_eq!(e.field, "zonesize", "{}", e.reason);
        let e = FioJob::new(
            FioJobConfig {
                zone_size: 64 * 1024,
                zone_range: 2 * MIB,
                ..cfg.clone()
            },
            &env(),
        )
        .unwrap_err();
        assert_eq!(e.field, "zonerange", "{}", e.reason);
        let e = FioJob::new(
            FioJobConfig {
                zone_size: 2048,
                ..cfg.clone()
            },
            &env(),
        )
        .unwrap_err();
        assert_eq!(e.field, "zonesize", "{}", e.reason);
        // A sequential job keeps such zones (fio reads on from each zone's start).
        let seq = FioJobConfig {
            rw: RwMode::Read,
            ..cfg.clone()
        };
        assert!(FioJob::new(seq, &env()).is_ok());
        let abs = |size| FioJobConfig {
            zone_size: 64 * 1024,
            random_distribution: RandomDistribution::ZonedAbs {
                zones: [vec![Zone { access: 100, size }], vec![]],
            },
            ..cfg.clone()
        };
        assert!(FioJob::new(abs(64 * 1024), &env()).is_ok());
        let e = FioJob::new(abs(512 * 1024), &env()).unwrap_err();
        assert_eq!(e.field, "random_distribution", "{}", e.reason);
    }

    /// A random reader in strided zones (32 KiB in each 512 KiB zone, 480 KiB skipped) reads
    /// 4 KiB blocks inside each zone in turn, a new random pass each zone; a zonesize is
    /// required, and sizes drawn per I/O are refused with zones.
    #[test]
    fn a_random_job_in_strided_zones_stays_in_each_zone() {
        let cfg = FioJobConfig {
            rw: RwMode::RandRead,
            size: Some(64 * MIB),
            number_ios: Some(64),
            zonemode: ZoneMode::Strided,
            zone_size: 32 * 1024,
            zone_range: 512 * 1024,
            zone_skip: 480 * 1024,
            ..Default::default()
        };
        let s = sectors(cfg.clone());
        for (i, &(_, x)) in s.iter().enumerate() {
            let zone = (i / 8) as u64 * 992 * 2;
            assert!(
                (zone..zone + 1024 - 8).contains(&x) && x % 8 == 0,
                "read {i} at sector {x}"
            );
        }
        let e = |cfg| FioJob::new(cfg, &env()).unwrap_err().field;
        assert_eq!(
            e(FioJobConfig {
                zone_size: 0,
                ..cfg.clone()
            }),
            "zonesize"
        );
        assert_eq!(
            e(FioJobConfig {
                block_sizes: crate::jobs::BlockSizes {
                    read: Some(SizeMix::Range {
                        min: 4096,
                        max: 8192
                    }),
                    write: None
                },
                ..cfg
            }),
            "zonemode"
        );
    }

    /// fio's cmdprio (engines/cmdprio.c, `fio_cmdprio_set_ioprio`): a share of each
    /// direction's I/Os, drawn per I/O, carries the given priority, the rest the job's (no
    /// priority of their own); `cmdprio_bssplit` picks by the I/O's size; the draws are the
    /// seed's, so a run repeats, and the job's other draws are those of a job without them.
    /// A trimwrite's writes are writes to fio's engine: `fio_ioring_queue` (and libaio's
    /// prep) call `fio_cmdprio_set_ioprio` for each, so `cmdprio_percentage`'s write share
    /// applies to them as to any job's writes; the trims keep the job's priority.
    #[test]
    fn a_trimwrite_jobs_writes_take_their_cmdprio_share() {
        use super::super::cmdprio::CmdPrioOptions;
        let opts = CmdPrioOptions {
            percentage: [0, 50],
            ..Default::default()
        };
        for rw in [RwMode::TrimWrite, RwMode::RandTrimWrite] {
            let rec = run(
                FioJobConfig {
                    rw,
                    bs: 4096,
                    size: Some(4 * MIB),
                    direct: true,
                    cmdprio: opts.resolve().unwrap(),
                    ..Default::default()
                },
                4,
            );
            let writes: Vec<_> = rec
                .issued
                .iter()
                .filter(|i| i.spec.op == Op::Write)
                .collect();
            let marked = writes.iter().filter(|i| i.spec.prio.is_some()).count();
            let share = 100.0 * marked as f64 / writes.len() as f64;
            // 1024 writes: 3 standard deviations of a binomial share are < 4.7%.
            assert!(
                (share - 50.0).abs() < 5.0,
                "{rw:?}: {share:.1}% of writes for 50%"
            );
            assert!(rec
                .issued
                .iter()
                .filter(|i| i.spec.op == Op::Discard)
                .all(|i| i.spec.prio.is_none()));
        }
    }

    #[test]
    fn cmdprio_gives_its_share_of_the_ios_its_priority_as_fio_cmdprio_set_ioprio() {
        use super::super::cmdprio::CmdPrioOptions;
        use elevator_core::{IoClass, IoPrio};
        let n = 4000u64;
        let base = FioJobConfig {
            rw: RwMode::RandRw,
            rwmixread: 50,
            number_ios: Some(n),
            ..Default::default()
        };
        let opts = CmdPrioOptions {
            percentage: [30, 80],
            class: [3, 0],
            level: [7, 1],
            ..Default::default()
        };
        let cfg = FioJobConfig {
            cmdprio: opts.resolve().unwrap(),
            ..base.clone()
        };
        let rec = run(cfg.clone(), 4);
        let idle7 = IoPrio {
            class: IoClass::Idle,
            level: 7,
        };
        let rt1 = IoPrio {
            class: IoClass::RealTime,
            level: 1,
        };
        for (op, want, pct) in [(Op::Read, idle7, 30.0), (Op::Write, rt1, 80.0)] {
            let ios: Vec<_> = rec.issued.iter().filter(|i| i.spec.op == op).collect();
            let marked = ios.iter().filter(|i| i.spec.prio.is_some()).count();
            assert!(ios.iter().all(|i| i.spec.prio.is_none_or(|p| p == want)));
            let share = 100.0 * marked as f64 / ios.len() as f64;
            // ~2000 I/Os a direction: 3 standard deviations of a binomial share are < 3.1%.
            assert!((share - pct).abs() < 3.5, "{op:?}: {share:.1}% for {pct}%");
        }
        // Repeatable, and the offsets and directions are those of the job without cmdprio.
        let again = run(cfg, 4);
        let plain = run(base.clone(), 4);
        let key = |r: &crate::testkit::Record| -> Vec<(u64, Op)> {
            r.issued
                .iter()
                .map(|i| (i.spec.sector, i.spec.op))
                .collect()
        };
        assert_eq!(key(&rec), key(&plain));
        let prios = |r: &crate::testkit::Record| -> Vec<Option<IoPrio>> {
            r.issued.iter().map(|i| i.spec.prio).collect()
        };
        assert_eq!(prios(&rec), prios(&again));
        assert!(plain.issued.iter().all(|i| i.spec.prio.is_none()));

        // cmdprio_bssplit=4k/100/1/2:64k/50/3/0 over bssplit=4k/50:16k/25:64k/25, as the
        // corpus's cbssplit job: every 4 KiB I/O rt 2, half the 64 KiB idle 0, 16 KiB none.
        let opts = CmdPrioOptions {
            bssplit: Some(std::array::from_fn(|_| {
                vec![(4096, 100, Some((1, 2))), (65536, 50, Some((3, 0)))]
            })),
            ..Default::default()
        };
        let split = SizeMix::Split(vec![(4096, 50), (16384, 25), (65536, 25)]);
        let cfg = FioJobConfig {
            block_sizes: BlockSizes {
                read: Some(split.clone()),
                write: Some(split),
            },
            cmdprio: opts.resolve().unwrap(),
            ..base
        };
        let rec = run(cfg, 4);
        let rt2 = IoPrio {
            class: IoClass::RealTime,
            level: 2,
        };
        let idle0 = IoPrio {
            class: IoClass::Idle,
            level: 0,
        };
        let of = |sectors: u32| rec.issued.iter().filter(move |i| i.spec.sectors == sectors);
        assert!(of(8).count() > 1000 && of(8).all(|i| i.spec.prio == Some(rt2)));
        assert!(of(32).count() > 500 && of(32).all(|i| i.spec.prio.is_none()));
        let big = of(128).count();
        let idle = of(128).filter(|i| i.spec.prio == Some(idle0)).count();
        assert!(of(128).all(|i| i.spec.prio.is_none_or(|p| p == idle0)));
        let share = 100.0 * idle as f64 / big as f64;
        assert!(
            (share - 50.0).abs() < 6.0,
            "{share:.1}% of {big} 64 KiB I/Os"
        );
    }

    /// fio's trims (io_u.c): `trim`/`randtrim` issue discards where a writer would write,
    /// asynchronous and without the idle hint (`blkdev_issue_discard` sets neither);
    /// `trimwrite` alternates a trim and a write of the same block (`set_rw_ddir`),
    /// `randtrimwrite` writes each trimmed block at its offset and length
    /// (`get_next_block`, `get_next_buflen`), and both count their bytes and `number_ios`
    /// twice (`do_io`).
    #[test]
    fn trims_are_discards_and_trimwrite_writes_each_trimmed_block_as_fio() {
        let region = FioJobConfig {
            bs: 8192,
            offset: Some(MIB),
            size: Some(64 * 8192),
            direct: true,
            ..Default::default()
        };
        let rec = run(
            FioJobConfig {
                rw: RwMode::Trim,
                ..region.clone()
            },
            1,
        );
        assert_eq!(rec.issued.len(), 64);
        assert!(rec
            .issued
            .iter()
            .all(|i| i.spec.op == Op::Discard && !i.spec.sync && !i.spec.idle_hint));
        let sectors: Vec<u64> = rec.issued.iter().map(|i| i.spec.sector).collect();
        assert_eq!(sectors, (0..64).map(|k| 2048 + 16 * k).collect::<Vec<_>>());
        let rec = run(
            FioJobConfig {
                rw: RwMode::RandTrim,
                ..region.clone()
            },
            4,
        );
        let set: BTreeSet<u64> = rec.issued.iter().map(|i| i.spec.sector).collect();
        assert_eq!((rec.issued.len(), set.len()), (64, 64), "each block once");
        for (rw, depth) in [(RwMode::TrimWrite, 1), (RwMode::RandTrimWrite, 4)] {
            let rec = run(
                FioJobConfig {
                    rw,
                    ..region.clone()
                },
                depth,
            );
            // The region's bytes trimmed, then written: twice its I/Os.
            assert_eq!(rec.issued.len(), 128, "{rw:?}");
            for pair in rec.issued.chunks(2) {
                let (t, w) = (&pair[0].spec, &pair[1].spec);
                assert_eq!((t.op, w.op), (Op::Discard, Op::Write), "{rw:?}");
                assert_eq!((t.sector, t.sectors), (w.sector, w.sectors), "{rw:?}");
                assert!(w.sync && w.idle_hint, "a direct write");
            }
            let trimmed: BTreeSet<u64> = rec.issued.iter().map(|i| i.spec.sector).collect();
            assert_eq!(trimmed.len(), 64, "{rw:?}: every block once");
            let rec = run(
                FioJobConfig {
                    rw,
                    number_ios: Some(10),
                    ..region.clone()
                },
                depth,
            );
            assert_eq!(rec.issued.len(), 20, "{rw:?}: number_ios counts twice");
        }
        // randtrimwrite with sizes drawn: each write takes its trim's length.
        let rec = run(
            FioJobConfig {
                rw: RwMode::RandTrimWrite,
                block_sizes: BlockSizes {
                    read: None,
                    write: Some(SizeMix::Range {
                        min: 4096,
                        max: 65536,
                    }),
                },
                number_ios: Some(50),
                size: Some(64 * MIB),
                ..region.clone()
            },
            2,
        );
        assert_eq!(rec.issued.len(), 100);
        assert!(rec.issued.chunks(2).all(|p| p[0].spec.op == Op::Discard
            && (p[0].spec.sector, p[0].spec.sectors) == (p[1].spec.sector, p[1].spec.sectors)));
        assert!(rec
            .issued
            .iter()
            .any(|i| i.spec.sectors != rec.issued[0].spec.sectors));
        // Sequential trimwrite with sizes drawn is refused (fio's writes would wander off).
        let e = FioJob::new(
            FioJobConfig {
                rw: RwMode::TrimWrite,
                block_sizes: BlockSizes {
                    read: None,
                    write: Some(SizeMix::Range {
                        min: 4096,
                        max: 65536,
                    }),
                },
                ..region
            },
            &env(),
        )
        .unwrap_err();
        assert_eq!(e.field, "bsrange");
    }

    /// A buffered O_SYNC write(2) (fio's `sync=1` without `direct`): the write reaches the
    /// device as WB_SYNC_ALL writeback (REQ_SYNC, no idle hint), and once it completes
    /// `generic_write_sync` -> `blkdev_fsync` flushes the cache before the call returns, so
    /// before the think time; the flushes are left out of the figures (fio sees its write).
    #[test]
    fn a_buffered_osync_write_is_sync_writeback_then_a_flush_before_the_think_time() {
        let cfg = FioJobConfig {
            rw: RwMode::RandWrite,
            sync_io: SyncIo::Sync,
            number_ios: Some(3),
            thinktime_us: 5000,
            ..Default::default()
        };
        let mut job = FioJob::new(cfg, &env()).unwrap();
        let rec = HandDriver::new(1, Nanos::from_ms(1), Nanos::from_secs(3600)).run(&mut job);
        let seq: Vec<(Op, u64)> = rec
            .issued
            .iter()
            .map(|i| (i.spec.op, i.at.as_us()))
            .collect();
        // Write at 0, done at 1 ms; flush at 1, done at 2; think 5 ms; the next write at 7.
        assert_eq!(
            seq,
            [
                (Op::Write, 0),
                (Op::Flush, 1000),
                (Op::Write, 7000),
                (Op::Flush, 8000),
                (Op::Write, 14000),
                (Op::Flush, 15000)
            ]
        );
        for i in &rec.issued {
            let s = &i.spec;
            assert!(s.sync && !s.idle_hint, "{s:?}");
            assert_eq!(job.counts_in_figures(s.tag), s.op == Op::Write, "{s:?}");
        }
        assert_eq!(rec.outstanding_at_done, 0);
        // Direct, the same writes are O_DIRECT ones (REQ_SYNC | REQ_IDLE), with no flush.
        let rec = run(
            FioJobConfig {
                rw: RwMode::RandWrite,
                sync_io: SyncIo::Dsync,
                direct: true,
                number_ios: Some(3),
                ..Default::default()
            },
            1,
        );
        assert!(rec
            .issued
            .iter()
            .all(|i| i.spec.op == Op::Write && i.spec.sync && i.spec.idle_hint));
        assert_eq!(rec.issued.len(), 3);
    }

    #[test]
    fn sequential_reader_walks_its_region_once_and_finishes() {
        let cfg = FioJobConfig {
            bs: 64 * 1024,
            offset: Some(MIB),
            size: Some(MIB),
            ..Default::default()
        };
        let rec = run(cfg, 1);
        let sectors: Vec<u64> = rec.issued.iter().map(|i| i.spec.sector).collect();
        let want: Vec<u64> = (0..16).map(|i| 2048 + i * 128).collect();
        assert_eq!(sectors, want);
        assert!(rec
            .issued
            .iter()
            .all(|i| i.spec.op == Op::Read && i.spec.sync));
        assert_eq!(rec.done_at, Some(Nanos::from_ms(16)));
        assert_eq!(rec.outstanding_at_done, 0);
    }

    #[test]
    fn random_reader_visits_every_block_once_per_pass() {
        let cfg = FioJobConfig {
            rw: RwMode::RandRead,
            size: Some(1000 * 4096),
            io_size: Some(2000 * 4096),
            ..Default::default()
        };
        let rec = run(cfg, 1);
        assert_eq!(rec.issued.len(), 2000);
        for pass in rec.issued.chunks(1000) {
            let set: BTreeSet<u64> = pass.iter().map(|i| i.spec.sector / 8).collect();
            assert_eq!(set.len(), 1000);
            assert_eq!(set.last(), Some(&999));
        }
        let first: Vec<u64> = rec.issued[..10].iter().map(|i| i.spec.sector).collect();
        let sorted = {
            let mut s = first.clone();
            s.sort();
            s
        };
        assert_ne!(first, sorted, "random order should not be ascending");
    }

    #[test]
    fn iodepth_bounds_outstanding_and_is_reached() {
        let cfg = FioJobConfig {
            rw: RwMode::RandWrite,
            iodepth: 8,
            number_ios: Some(200),
            ..Default::default()
        };
        let rec = run(cfg, 4);
        assert_eq!(rec.max_outstanding, 8);
        assert_eq!(rec.issued.len(), 200);
        assert!(rec
            .issued
            .iter()
            .all(|i| i.spec.op == Op::Write && !i.spec.sync));
    }

    /// O_DIRECT writes carry REQ_SYNC | REQ_IDLE (`dio_bio_write_op`, block/fops.c; the same
    /// flags in fs/direct-io.c and iomap's direct I/O); direct reads carry neither hint and
    /// buffered writes (writeback) are async without it.
    #[test]
    fn direct_writes_are_sync_with_the_idle_hint() {
        let cfg = FioJobConfig {
            rw: RwMode::RandRw,
            direct: true,
            number_ios: Some(40),
            ..Default::default()
        };
        let rec = run(cfg.clone(), 1);
        let (writes, reads): (Vec<_>, Vec<_>) =
            rec.issued.iter().partition(|i| i.spec.op == Op::Write);
        assert!(!writes.is_empty() && !reads.is_empty());
        assert!(writes.iter().all(|i| i.spec.sync && i.spec.idle_hint));
        assert!(reads.iter().all(|i| i.spec.sync && !i.spec.idle_hint));
        let buffered = run(
            FioJobConfig {
                direct: false,
                ..cfg
            },
            1,
        );
        assert!(buffered
            .issued
            .iter()
            .filter(|i| i.spec.op == Op::Write)
            .all(|i| !i.spec.sync && !i.spec.idle_hint));
    }

    #[test]
    fn thinktime_follows_completion_of_each_batch() {
        let cfg = FioJobConfig {
            number_ios: Some(4),
            iodepth: 4,
            thinktime_us: 5000,
            thinktime_blocks: 2,
            ..Default::default()
        };
        let rec = run(cfg, 4);
        let at: Vec<u64> = rec.issued.iter().map(|i| i.at.as_us()).collect();
        // Two at once, both complete at 1 ms, think 5 ms, two more at 6 ms.
        assert_eq!(at, vec![0, 0, 6000, 6000]);
    }

    /// `td_io_queue` submits once `iodepth_batch_submit` are queued: at iodepth 8 and batches
    /// of 4, two calls of four at 0; then, the queue full, fio reaps one and queues one, whose
    /// call `td_io_getevents` makes as it waits again (`io_u_queued_complete` commits first).
    #[test]
    fn iodepth_batch_submit_submits_in_calls_of_that_many() {
        let cfg = FioJobConfig {
            rw: RwMode::RandRead,
            iodepth: 8,
            iodepth_batch_submit: 4,
            number_ios: Some(12),
            ..Default::default()
        };
        let rec = run(cfg, 1);
        assert_eq!(rec.batches, [4, 4]);
        let at: Vec<u64> = rec.issued.iter().map(|i| i.at.as_ms()).collect();
        assert_eq!(at, [0, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4]);
        assert_eq!(rec.max_outstanding, 8);
    }

    /// `iodepth_low`: once full at 8, fio reaps until no more than 4 are left
    /// (`wait_for_completions` loops while `cur_depth > iodepth_low`): one device slot
    /// completes one a millisecond, so the queue refills by four at 4 ms and 8 ms.
    #[test]
    fn iodepth_low_lets_the_queue_drain_before_it_refills() {
        let cfg = FioJobConfig {
            rw: RwMode::RandRead,
            iodepth: 8,
            iodepth_low: 4,
            number_ios: Some(16),
            ..Default::default()
        };
        let rec = run(cfg, 1);
        let at: Vec<u64> = rec.issued.iter().map(|i| i.at.as_ms()).collect();
        assert_eq!(at, [0, 0, 0, 0, 0, 0, 0, 0, 4, 4, 4, 4, 8, 8, 8, 8]);
        assert!(rec.batches.is_empty(), "each I/O submitted as it is queued");
    }

    /// `iodepth_batch_complete_min`: each reap waits for 4 completions (and takes up to
    /// `_max`, 4): the queue, full at 8, refills by four each time four complete.
    #[test]
    fn iodepth_batch_complete_min_waits_for_that_many_completions() {
        let cfg = FioJobConfig {
            rw: RwMode::RandRead,
            iodepth: 8,
            iodepth_batch_complete_min: 4,
            iodepth_batch_complete_max: 4,
            number_ios: Some(16),
            ..Default::default()
        };
        let rec = run(cfg.clone(), 1);
        let at: Vec<u64> = rec.issued.iter().map(|i| i.at.as_ms()).collect();
        assert_eq!(at, [0, 0, 0, 0, 0, 0, 0, 0, 4, 4, 4, 4, 8, 8, 8, 8]);
        // With `_max` 8 a reap at 4 ms takes what has completed, still four.
        let cfg = FioJobConfig {
            iodepth_batch_complete_max: 8,
            ..cfg
        };
        let again: Vec<u64> = run(cfg, 1).issued.iter().map(|i| i.at.as_ms()).collect();
        assert_eq!(again, at);
    }

    /// `fixup_options`: a batch of 0, or of more than `iodepth`, is `iodepth`; an
    /// `iodepth_low` of 0 or above `iodepth` is `iodepth`; a `_max` below `_min` is `_min`.
    #[test]
    fn fio_fixes_up_batch_and_low_water_values_as_its_init_does() {
        for (submit, want) in [(0, 8), (100, 8), (3, 3)] {
            let cfg = FioJobConfig {
                iodepth: 8,
                iodepth_batch_submit: submit,
                iodepth_low: 9,
                iodepth_batch_complete_min: 2,
                ..Default::default()
            };
            let d = Depths::of(&cfg);
            assert_eq!(
                (d.submit, d.low, d.complete_min, d.complete_max),
                (want, 8, 2, 2)
            );
        }
    }

    /// Both completion bounds 0 (`io_in_polling`): fio reaps after every I/O it queues, and
    /// `wait_for_completions` then waits for one (`min_evts` 1 when
    /// `iodepth_batch_complete_min` is 0), so one is in flight at a time.
    #[test]
    fn polling_completion_bounds_reap_after_every_io_as_fio_does() {
        let cfg = FioJobConfig {
            rw: RwMode::RandRead,
            iodepth: 8,
            iodepth_batch_complete_min: 0,
            iodepth_batch_complete_max: 0,
            number_ios: Some(4),
            ..Default::default()
        };
        let rec = run(cfg, 8);
        let at: Vec<u64> = rec.issued.iter().map(|i| i.at.as_ms()).collect();
        assert_eq!(at, [0, 1, 2, 3]);
    }

    /// `bssplit=4k/50:64k/50` over a random reader of 16 MiB: only the two sizes, about half
    /// of the I/Os each, offsets aligned to the smallest (fio's `blockalign`, `min_bs`),
    /// every I/O inside the region, and the job stops once it has issued its 16 MiB
    /// (`io_size`, fio's `bytes_issued >= total_bytes`).
    #[test]
    fn a_bssplit_job_draws_its_sizes_and_stops_after_its_bytes() {
        use crate::jobs::{BlockSizes, SizeMix};
        let mix = SizeMix::Split(vec![(4096, 50), (65536, 50)]);
        let cfg = FioJobConfig {
            rw: RwMode::RandRead,
            iodepth: 4,
            offset: Some(MIB),
            size: Some(16 * MIB),
            block_sizes: BlockSizes {
                read: Some(mix.clone()),
                write: Some(mix),
            },
            ..Default::default()
        };
        let rec = run(cfg, 4);
        let sizes: Vec<u64> = rec
            .issued
            .iter()
            .map(|i| u64::from(i.spec.sectors) * 512)
            .collect();
        assert!(sizes.iter().all(|&b| b == 4096 || b == 65536));
        let big = sizes.iter().filter(|&&b| b == 65536).count() as f64 / sizes.len() as f64;
        assert!((0.4..0.6).contains(&big), "{big} of the I/Os were 64 KiB");
        let total: u64 = sizes.iter().sum();
        let last = sizes.last().copied().unwrap();
        assert!(
            total >= 16 * MIB && total - last < 16 * MIB,
            "{total} bytes issued"
        );
        for i in &rec.issued {
            let (start, end) = (
                i.spec.sector * 512,
                (i.spec.sector + u64::from(i.spec.sectors)) * 512,
            );
            assert!(
                start % 4096 == 0 && start >= MIB && end <= 17 * MIB,
                "{start}..{end}"
            );
        }
    }

    /// A sequential writer with `bsrange=4k-16k` goes on from where each I/O ended, and wraps
    /// to the region's start when the smallest size no longer fits (time-based).
    #[test]
    fn a_sequential_bsrange_job_goes_on_from_each_ios_end_and_wraps() {
        use crate::jobs::{BlockSizes, SizeMix};
        let cfg = FioJobConfig {
            rw: RwMode::Write,
            offset: Some(MIB),
            size: Some(64 * 1024),
            time_based: true,
            number_ios: Some(64),
            block_sizes: BlockSizes {
                read: None,
                write: Some(SizeMix::Range {
                    min: 4096,
                    max: 16384,
                }),
            },
            ..Default::default()
        };
        let rec = run(cfg, 1);
        assert_eq!(rec.issued.len(), 64);
        let mut next = MIB;
        let mut wraps = 0;
        for i in &rec.issued {
            let (start, len) = (i.spec.sector * 512, u64::from(i.spec.sectors) * 512);
            if start != next {
                assert_eq!(
                    start, MIB,
                    "an I/O starts where the last ended or at the start"
                );
                assert!(
                    next + 4096 > MIB + 64 * 1024,
                    "wrapped with room left at {next}"
                );
                wraps += 1;
            }
            assert!((4096..=16384).contains(&len) && start + len <= MIB + 64 * 1024);
            next = start + len;
        }
        assert!(wraps >= 2, "{wraps} passes wrapped");
    }

    /// `bssplit=4k/100,64k/100`: reads of 4 KiB, writes of 64 KiB aligned to 64 KiB.
    #[test]
    fn bssplit_per_direction_sizes_reads_and_writes_apart() {
        use crate::jobs::{BlockSizes, SizeMix};
        let cfg = FioJobConfig {
            rw: RwMode::RandRw,
            size: Some(16 * MIB),
            number_ios: Some(200),
            block_sizes: BlockSizes {
                read: Some(SizeMix::Split(vec![(4096, 100)])),
                write: Some(SizeMix::Split(vec![(65536, 100)])),
            },
            ..Default::default()
        };
        let rec = run(cfg, 1);
        assert_eq!(rec.issued.len(), 200);
        for i in &rec.issued {
            let (start, len) = (i.spec.sector * 512, u64::from(i.spec.sectors) * 512);
            match i.spec.op {
                Op::Read => assert_eq!(len, 4096),
                _ => assert!(len == 65536 && start % 65536 == 0, "{start}+{len}"),
            }
        }
    }

    /// `fsync=4`: after every fourth write a flush (fio's `get_rw_ddir`, once the last I/O
    /// was a write), none after the last write (the loop ends first); `end_fsync`: one once
    /// the writes are done, waited for. Flushes are not data I/Os: the job still does its 8
    /// writes.
    #[test]
    fn fsync_flushes_after_every_so_many_writes_and_end_fsync_at_the_end() {
        let cfg = FioJobConfig {
            rw: RwMode::Write,
            direct: true,
            fsync_blocks: 4,
            end_fsync: true,
            number_ios: Some(8),
            ..Default::default()
        };
        let rec = run(cfg, 1);
        let ops: Vec<Op> = rec.issued.iter().map(|i| i.spec.op).collect();
        let (w, f) = (Op::Write, Op::Flush);
        assert_eq!(ops, [w, w, w, w, f, w, w, w, w, f]);
        let tags = rec.tags();
        assert_eq!(tags, (0..10).collect::<Vec<u64>>(), "every I/O its own tag");
        assert!(rec
            .issued
            .iter()
            .filter(|i| i.spec.op == f)
            .all(|i| i.spec.sectors == 0));
        // The end's flush waits for the writes: it is issued after the last completes.
        let last_write = rec.issued[8].done.unwrap();
        assert!(rec.issued[9].at >= last_write);
        // A reader never flushes.
        let cfg = FioJobConfig {
            rw: RwMode::Read,
            fdatasync_blocks: 1,
            end_fsync: true,
            number_ios: Some(4),
            ..Default::default()
        };
        assert!(run(cfg, 1).issued.iter().all(|i| i.spec.op == Op::Read));
    }

    /// `rw=read:-8k` with 4 KiB blocks over 64 KiB (fio's `get_next_seq_offset` with a
    /// negative `ddir_seq_add`): the first read at the start, then each 8 KiB back from where
    /// the last ended, wrapping to 8 KiB before the end: 0, 56k, 52k ... 4k, 0, 56k.
    #[test]
    fn a_negative_rw_skip_reads_backwards_as_fio_does() {
        let cfg = FioJobConfig {
            rw: RwMode::Read,
            rw_skip: -8192,
            size: Some(64 * 1024),
            time_based: true,
            number_ios: Some(17),
            ..Default::default()
        };
        let rec = run(cfg, 1);
        let kib: Vec<u64> = rec.issued.iter().map(|i| i.spec.sector / 2).collect();
        let mut want = vec![0];
        want.extend((1..=14).rev().map(|k| 4 * k));
        want.extend([0, 56]);
        assert_eq!(kib, want);
    }

    /// `rw=randread:4` (fio's `ddir_seq_nr`): every fourth read takes a new random offset
    /// and the three between follow the last read (`rw_sequencer=sequential`), the first
    /// three from the region's start; with `identical` they repeat the last read's offset.
    #[test]
    fn randread_with_a_count_takes_a_random_offset_every_so_many_ios() {
        let cfg = FioJobConfig {
            rw: RwMode::RandRead,
            rand_seq_nr: 4,
            size: Some(64 * MIB),
            number_ios: Some(12),
            ..Default::default()
        };
        let rec = run(cfg.clone(), 1);
        let s: Vec<u64> = rec.issued.iter().map(|i| i.spec.sector).collect();
        assert_eq!(&s[..3], [0, 8, 16]);
        for k in [4, 5, 6, 8, 9, 10] {
            assert_eq!(s[k], s[k - 1] + 8, "read {k} follows the one before: {s:?}");
        }
        assert!(
            s[3] != 24 && s[7] != s[6] + 8,
            "reads 3 and 7 random: {s:?}"
        );
        let cfg = FioJobConfig {
            rw_sequencer: RwSequencer::Identical,
            ..cfg
        };
        let s: Vec<u64> = run(cfg, 1).issued.iter().map(|i| i.spec.sector).collect();
        assert_eq!(&s[..3], [0, 0, 0]);
        assert_eq!([s[4], s[5], s[6]], [s[3]; 3], "{s:?}");
    }

    /// A region smaller than one direction's smallest block is refused naming that
    /// direction's option (fio's `get_next_buflen` would end the job at once); so is a
    /// backward skip that would not go back (no more than the largest block) or leaves the
    /// region.
    #[test]
    fn sizes_and_backward_skips_that_cannot_fit_are_refused() {
        use crate::jobs::{BlockSizes, SizeMix};
        let cfg = FioJobConfig {
            rw: RwMode::RandRw,
            size: Some(16 * 1024),
            block_sizes: BlockSizes {
                read: Some(SizeMix::Split(vec![(4096, 100)])),
                write: Some(SizeMix::Split(vec![(65536, 100)])),
            },
            ..Default::default()
        };
        let e = FioJob::new(cfg, &env()).unwrap_err();
        assert_eq!(e.field, "bssplit", "{}", e.reason);
        for skip in [-4096, -2048, -(2 * MIB as i64)] {
            let cfg = FioJobConfig {
                rw_skip: skip,
                size: Some(MIB),
                ..Default::default()
            };
            let e = FioJob::new(cfg, &env()).unwrap_err();
            assert_eq!(e.field, "rw_skip", "{skip}: {}", e.reason);
        }
    }

    /// With holes (`rw=write:4k`) and sizes drawn per I/O, a job that is not time-based ends
    /// at the region's end, after one pass (fio's `get_next_offset` fails past it), not after
    /// the region's bytes.
    #[test]
    fn a_sequential_job_with_holes_and_drawn_sizes_makes_one_pass() {
        use crate::jobs::{BlockSizes, SizeMix};
        let range = SizeMix::Range {
            min: 4096,
            max: 8192,
        };
        let cfg = FioJobConfig {
            rw: RwMode::Write,
            rw_skip: 4096,
            size: Some(MIB),
            block_sizes: BlockSizes {
                read: Some(range.clone()),
                write: Some(range),
            },
            ..Default::default()
        };
        let rec = run(cfg, 1);
        let starts: Vec<u64> = rec.issued.iter().map(|i| i.spec.sector).collect();
        assert!(
            starts.windows(2).all(|w| w[1] > w[0]),
            "one pass, upward: {starts:?}"
        );
        let bytes: u64 = rec
            .issued
            .iter()
            .map(|i| u64::from(i.spec.sectors) * 512)
            .sum();
        assert!(bytes < MIB, "{bytes} bytes: the holes are not written");
    }

    /// fio's `get_rw_ddir` issues the flush before it looks at the rate: a writer at 100
    /// writes a second with `fsync=1` flushes right after each write, not after its sleep.
    #[test]
    fn a_flush_goes_before_the_rate_sleep() {
        let cfg = FioJobConfig {
            rw: RwMode::Write,
            rate_iops: Some(100),
            fsync_blocks: 1,
            number_ios: Some(3),
            ..Default::default()
        };
        let rec = run(cfg, 1);
        let at: Vec<(Op, u64)> = rec
            .issued
            .iter()
            .map(|i| (i.spec.op, i.at.as_ms()))
            .collect();
        let (w, f) = (Op::Write, Op::Flush);
        assert_eq!(at, [(w, 0), (f, 1), (w, 10), (f, 11), (w, 20)]);
    }

    #[test]
    fn rate_caps_bandwidth() {
        let cfg = FioJobConfig {
            rw: RwMode::Write,
            bs: 4096,
            iodepth: 16,
            rate: Some(4096 * 100), // 100 I/Os per second
            runtime_ms: Some(1000),
            time_based: true,
            ..Default::default()
        };
        let rec = run(cfg, 16);
        assert_eq!(rec.issued.len(), 100);
        // fio's `rate_ddir`: ahead of its rate at 0, the job quiesces (its write completes
        // at 1 ms), then sleeps the 10 ms it was ahead: never more than one in flight.
        assert_eq!(rec.issued[1].at, Nanos::from_ms(11));
        assert_eq!(rec.issued[2].at, Nanos::from_ms(21));
        assert_eq!(rec.issued[99].at, Nanos::from_ms(991));
        assert_eq!(rec.max_outstanding, 1);
    }

    #[test]
    fn rate_iops_caps_iops() {
        let cfg = FioJobConfig {
            rate_iops: Some(50),
            number_ios: Some(5),
            ..Default::default()
        };
        let rec = run(cfg, 1);
        let at: Vec<u64> = rec.issued.iter().map(|i| i.at.as_ms()).collect();
        assert_eq!(at, vec![0, 20, 40, 60, 80]);
    }

    #[test]
    fn runtime_stops_a_time_based_job_and_it_drains() {
        let cfg = FioJobConfig {
            size: Some(MIB),
            runtime_ms: Some(500),
            time_based: true,
            iodepth: 2,
            ..Default::default()
        };
        let rec = run(cfg, 1);
        let done = rec.done_at.expect("finished");
        assert!(done >= Nanos::from_ms(500) && done <= Nanos::from_ms(502));
        assert_eq!(rec.outstanding_at_done, 0);
        // It wrapped around its 256-block region.
        assert!(rec.issued.len() > 256);
        assert_eq!(rec.issued[256].spec.sector, 0);
    }

    #[test]
    fn ramp_time_lengthens_a_time_based_run_by_the_ramp() {
        let cfg = FioJobConfig {
            size: Some(MIB),
            runtime_ms: Some(500),
            ramp_ms: 200,
            time_based: true,
            ..Default::default()
        };
        let done = run(cfg, 1).done_at.expect("finished");
        assert!(
            done >= Nanos::from_ms(700) && done <= Nanos::from_ms(702),
            "{done:?}"
        );
    }

    #[test]
    fn mixed_job_honours_rwmixread_with_separate_cursors() {
        let cfg = FioJobConfig {
            rw: RwMode::Rw,
            rwmixread: 70,
            number_ios: Some(1000),
            ..Default::default()
        };
        let rec = run(cfg, 1);
        let reads: Vec<u64> = rec
            .issued
            .iter()
            .filter(|i| i.spec.op == Op::Read)
            .map(|i| i.spec.sector)
            .collect();
        assert!((650..=750).contains(&reads.len()), "{} reads", reads.len());
        assert!(reads.iter().enumerate().all(|(i, s)| *s == i as u64 * 8));
    }

    #[test]
    fn same_seed_same_sequence_other_seed_other_sequence() {
        let cfg = FioJobConfig {
            rw: RwMode::RandRw,
            number_ios: Some(100),
            ..Default::default()
        };
        let a = run(cfg.clone(), 1).issued;
        let b = run(cfg.clone(), 1).issued;
        assert_eq!(a, b);
        let mut job = FioJob::new(cfg, &BuildEnv::new(1 << 21, 43, "fio")).unwrap();
        let c = HandDriver::new(1, Nanos::from_ms(1), Nanos::MAX)
            .run(&mut job)
            .issued;
        assert_ne!(a, c);
    }

    #[test]
    fn bad_settings_name_their_field() {
        let e = |cfg: FioJobConfig| FioJob::new(cfg, &env()).unwrap_err().field;
        assert_eq!(
            e(FioJobConfig {
                bs: 1000,
                ..Default::default()
            }),
            "bs"
        );
        assert_eq!(
            e(FioJobConfig {
                iodepth: 0,
                ..Default::default()
            }),
            "iodepth"
        );
        assert_eq!(
            e(FioJobConfig {
                rwmixread: 101,
                ..Default::default()
            }),
            "rwmixread"
        );
        assert_eq!(
            e(FioJobConfig {
                size: Some(2 << 30),
                ..Default::default()
            }),
            "size"
        );
        assert_eq!(
            e(FioJobConfig {
                size: Some(512),
                ..Default::default()
            }),
            "size"
        );
        assert_eq!(
            e(FioJobConfig {
                offset: Some(0),
                offset_frac: Some(0.5),
                ..Default::default()
            }),
            "offset_frac"
        );
    }

    #[test]
    fn percentages_are_rounded_to_the_block_size_as_fio_does() {
        // 1001 sectors: half is 250 KiB and a quarter sector, which no 4 KiB write may start.
        let env = BuildEnv::new(1001, 1, "fio");
        let cfg = FioJobConfig {
            bs: 4096,
            offset_frac: Some(0.5),
            size_frac: Some(0.25),
            ..Default::default()
        };
        let r = FioJob::new(cfg, &env).unwrap().region();
        // The offset rounds up to a block, the size down.
        assert_eq!((r.start, r.len), (504, 248));
    }

    #[test]
    fn interleaved_readers_with_rw_skip_cover_a_file_between_them() {
        let chunk = 16 * 1024;
        let file = 1 << 20;
        let mut seen = BTreeSet::new();
        for i in 0..4u64 {
            let cfg = FioJobConfig {
                bs: chunk,
                rw_skip: 3 * chunk as i64,
                offset: Some(file + i * chunk),
                size: Some(file - i * chunk),
                ..Default::default()
            };
            let rec = run(cfg, 1);
            assert_eq!(rec.issued.len(), 16, "reader {i}");
            for w in rec.issued.windows(2) {
                assert_eq!(w[1].spec.sector - w[0].spec.sector, 4 * chunk / 512);
            }
            for io in &rec.issued {
                assert!(seen.insert(io.spec.sector), "chunk read twice");
            }
        }
        assert_eq!(seen.len() as u64, file / chunk);
        assert_eq!(seen.first(), Some(&2048));
        assert_eq!(seen.last(), Some(&(2048 + (file - chunk) / 512)));
    }

    #[test]
    fn rw_parses_fio_spellings() {
        assert_eq!(RwMode::parse("readwrite"), Some(RwMode::Rw));
        assert_eq!(RwMode::parse("randrw"), Some(RwMode::RandRw));
        assert_eq!(RwMode::parse("trim"), Some(RwMode::Trim));
        assert_eq!(RwMode::parse("randtrimwrite"), Some(RwMode::RandTrimWrite));
        assert_eq!(RwMode::parse("sideways"), None);
        for m in [
            RwMode::Read,
            RwMode::RandRw,
            RwMode::TrimWrite,
            RwMode::RandTrim,
        ] {
            assert_eq!(RwMode::parse(m.name()), Some(m));
        }
    }

    #[test]
    fn block_order_is_a_permutation_for_awkward_sizes() {
        for n in [1u64, 2, 3, 5, 17, 1000, 4097] {
            let mut o = BlockOrder::new(n, 9);
            let set: BTreeSet<u64> = (0..n).map(|_| o.next()).collect();
            assert_eq!(set.len() as u64, n);
            assert!(set.iter().all(|&b| b < n));
        }
    }

    /// A job's seed feeds its random offsets and a mixed job's directions only: a
    /// sequential job of one direction issues the same I/Os at any seed and says it draws
    /// nothing from it; a random or mixed one says it does.
    #[test]
    fn only_random_or_mixed_jobs_draw_from_their_seed() {
        let issued = |cfg: &FioJobConfig, seed: u64| -> (bool, Vec<u64>) {
            let mut job = FioJob::new(cfg.clone(), &BuildEnv::new(1 << 21, seed, "fio")).unwrap();
            let sectors = (0..64).map(|_| job.next_io().sector).collect();
            (job.draws_from_seed(), sectors)
        };
        for (rw, draws) in [
            (RwMode::Read, false),
            (RwMode::Write, false),
            (RwMode::RandRead, true),
            (RwMode::RandWrite, true),
            (RwMode::Rw, true),
            (RwMode::RandRw, true),
        ] {
            let cfg = FioJobConfig {
                rw,
                bs: 4096,
                ..FioJobConfig::default()
            };
            let (a, at_1) = issued(&cfg, 1);
            let (_, at_2) = issued(&cfg, 2);
            assert_eq!(a, draws, "{rw:?}");
            if !draws {
                assert_eq!(at_1, at_2, "{rw:?}");
            }
        }
    }

    /// The round keys a pass computes once are the ones each round computed for itself
    /// before (2026-12-01): over three passes of awkward sizes the order is block for block
    /// the Feistel rounds' with the key mixed in at every round, so every random job's
    /// offsets, and every figure made of them, are unchanged.
    #[test]
    fn block_order_with_round_keys_per_pass_is_the_order_mixed_at_every_round() {
        fn reference(n: u64, key: u64, pass: u64, x: u64) -> u64 {
            let bits = (64 - n.saturating_sub(1).leading_zeros()).max(2);
            let half = bits.div_ceil(2);
            let mask = (1u64 << half) - 1;
            let (mut l, mut r) = (x >> half, x & mask);
            for round in 0..4u64 {
                let f = mix64(r ^ key ^ mix64(pass.wrapping_add(round << 56))) & mask;
                (l, r) = (r, l ^ f);
            }
            (l << half) | r
        }
        for (n, key) in [(1u64, 3u64), (5, 9), (1000, 0x6d61_7000), (4097, u64::MAX)] {
            let mut o = BlockOrder::new(n, key);
            for pass in 0..3 {
                for index in 0..n {
                    let mut y = reference(n, key, pass, index);
                    while y >= n {
                        y = reference(n, key, pass, y);
                    }
                    assert_eq!(o.next(), y, "n {n} key {key} pass {pass} index {index}");
                }
            }
        }
    }
}
