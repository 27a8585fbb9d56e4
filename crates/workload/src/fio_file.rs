//! fio job files: the subset `elevator run` understands, parsed into [`FioJobConfig`]s.
//!
//! The format is fio's INI: `[name]` starts a job, `[global]` (as in fio, any section whose
//! name starts with `global`) sets defaults for the jobs that follow it (a later `[global]`
//! adds to them), `key=value` or a bare `key` sets an option,
//! and lines starting with `;` or `#` are comments. Sizes take fio's suffixes `k`, `m`, `g`,
//! `t` (also `KB`, `MB` ...), base 1024, and as in fio under its default `kb_base=1024` the
//! IEC spellings `KiB`, `MiB` ... base 1000 (`4KiB` is 4000 bytes); times take `us`, `ms`,
//! `s`, `m` (minutes), `h`. Values expand `${VAR}` from the environment and fio's keywords
//! `$pagesize`, `$mb_memory` and `$ncpus`, as fio does; fio's arithmetic (a value in
//! parentheses) is not supported, nor is `include`.
//!
//! Options understood (fio's meaning unless said otherwise):
//!
//! | option | value |
//! |---|---|
//! | `rw` / `readwrite` | read, write, randread, randwrite, rw / readwrite, randrw, trim, randtrim, trimwrite, randtrimwrite (trims are discards, `bssplit`/`bsrange` giving their sizes in a third part, as elevator_workload's `FioJob` says; `run` discards with `BLKDISCARD`'s io_uring command on a block device and punches a hole in a file, and asks the write permission a writer does; deviation: fio reports trims on lines of their own, elevator counts them with the job's writes); with fio's postfix, a sequential job's bytes added after each I/O (`read:8k` leaves holes, `read:-8k` goes backwards, as fio's `get_next_seq_offset` for a job at offset 0) or a random job's I/Os per random offset (`randread:8`) |
//! | `rw_sequencer` | `sequential` (default) or `identical`: where a `randread:<nr>` job's I/Os between its random ones go |
//! | `rwmixread`, `rwmixwrite` | percentage |
//! | `bs` / `blocksize` | size (one value for both directions) |
//! | `bsrange` / `blocksize_range`, `bssplit` | sizes drawn per I/O as fio draws them (`4k-64k`; `4k/10:64k/90`, a share left out splitting the rest), for both directions or `reads,writes`; random offsets are aligned to the smallest size; the job stops after `io_size` bytes (elevator_workload's `jobs::block_sizes`) |
//! | `name` | the job's name (in a job section; its figures are named by it), in place of the section's |
//! | `size`, `offset` | size, or `N%` of the target |
//! | `offset_increment` | size (a multiple of 512), or `N%` of the target: each `numjobs` clone's region starts that much after the one before (fio's `offset + subjob * offset_increment`, rounded up to the block size where either is a percentage) |
//! | `io_size` / `io_limit`, `number_ios` | size; count (0: fio's default, none) |
//! | `filename` | the target, when `--target` is not given (all jobs must agree); `a:b` is two files, as in fio (`\:` a colon in a name) |
//! | `numjobs` | clones of the job, each its own context (named `job.0`, `job.1` ...) |
//! | `iodepth` | I/Os outstanding per clone |
//! | `iodepth_batch_submit` / `iodepth_batch`, `iodepth_low`, `iodepth_batch_complete_min` / `iodepth_batch_complete`, `iodepth_batch_complete_max` | counts, as fio reads them (0 and out-of-range values fixed up as fio's `fixup_options` does): I/Os submitted per call (more than two are plugged in the block layer, as the kernel plugs such an io_uring or aio call), the low-water mark the queue drains to before it refills, and the completions each reap waits for and takes (elevator_workload's `FioJob` has fio's loop) |
//! | `ioengine` | `io_uring`, `libaio` (asynchronous, up to `iodepth`); `psync`, `sync`, `pvsync`, `pvsync2` (one synchronous request at a time; `pvsync2`'s `preadv2` flags come from options elevator refuses, so it is `pvsync`); `vsync` (`readv`/`writev`: one synchronous request at a time where fio submits each I/O alone, its default `iodepth_batch_submit=1`; with larger batches fio's `fio_vsyncio_queue` joins contiguous I/Os into one vectored call, not modelled: refused); `posixaio` (glibc's POSIX aio serves one file descriptor's requests one at a time in a helper thread, `__aio_enqueue_request` in rt/aio_misc.c, so the device sees one of the job's I/Os at a time, as `psync`. Deviations: fio queues up to `iodepth` in glibc, and its latencies include that wait, here not; the helper thread is an I/O context of its own in the kernel, the job's priority inherited, so only a scheduler telling processes apart by pid sees a difference) |
//! | `direct` | 0 or 1. The executor always does O_DIRECT I/O; `direct=0` marks the writes asynchronous, as page-cache writeback would issue them |
//! | `sync` | `none`/`0`, `sync`/`1` (O_SYNC), `dsync` (O_DSYNC). With `direct=1`: `run` writes with `RWF_SYNC`/`RWF_DSYNC`, each write as an O_SYNC/O_DSYNC open makes it, so the kernel marks it REQ_FUA; in the model the writes stay REQ_SYNC with the idle hint, as `dio_bio_write_op` (block/fops.c) leaves them, and carry no FUA (a deviation: the kernel never merges a FUA write, and a drive with a volatile cache writes it through). Without `direct=1` (buffered) each write is REQ_SYNC writeback without the idle hint, followed once it completes by a flush the job waits for and its figures leave out, as `generic_write_sync` -> `blkdev_fsync` does inside `write(2)` (one at a time: refused above `iodepth` 1; deviation: fio's write latency includes the flush) |
//! | `rate`, `rate_iops` | bytes/s (size suffixes), I/Os per second: one value for the job (0: no limit, as fio) |
//! | `rate_process` | `linear` (default) or `poisson`: a rated job's I/Os spaced by exponential gaps of mean fio's `1000000 / iops` microseconds, as fio's `usec_for_io` |
//! | `fsync`, `fdatasync`, `end_fsync` | counts; flag: a flush request after every so many writes (after a write), and one at the end, waited for; counted as fio's `sync` figures, not as writes (on a block device fsync and fdatasync both flush the device's cache). The flush is an I/O of the job's depth, as io_uring's `IORING_OP_FSYNC` is; fio's libaio does it synchronously, waiting for it alone (a deviation) |
//! | `thinktime` (default unit us), `thinktime_blocks` | time; count |
//! | `runtime` (default unit s), `time_based` | time; flag |
//! | `ramp_time` (default unit s) | time run before `runtime` starts, left out of the figures |
//! | `startdelay` (default unit s) | time, or a range `min-max` each clone draws from: the job starts that long after its phase (its figures count from then) |
//! | `stonewall` / `wait_for_previous`, `new_group` | flags: wait for all earlier jobs; start a new reporting group |
//! | `prio`, `prioclass` | 0..=7; 1 (real time), 0 or 2 (best effort), 3 (idle); as fio, a class given without `prio` is level 0, neither gives the kernel's best effort 4 |
//! | `randseed`, `norandommap` | number; flag |
//! | `random_distribution` | `random` (default), `zipf[:theta[:center]]`, `pareto[:h[:center]]`, `normal[:dev[:center]]`, `zoned:A/S:...` and `zoned_abs:A/SIZE:...` (one list, or `reads,writes`): a random job's random offsets, drawn as fio draws them, any but `random` turning the random map off (elevator_workload's `jobs::distribution`, which names the deviations) |
//! | `percentage_random` | percentage, or `reads,writes`: of a random job's I/Os, those taking a random offset (fio's `should_do_random`); the others follow the direction's last I/O |
//! | `blockalign` / `ba` | size (a multiple of 512), or `reads,writes`: what a random job's random offsets are aligned to (default: the direction's smallest size); another value turns the random map off, as in fio; sequential jobs ignore it |
//! | `zonemode`, `zonesize`, `zonerange`, `zoneskip` | `none` (default) or `strided` (`zbd` refused: zoned devices are not modelled); sizes: `zonesize` bytes done in each zone of `zonerange` (default `zonesize`) bytes, then on `zonerange + zoneskip` to the next, wrapping to the region's start at the device's end, as fio's `setup_strided_zone_mode` (a `zonesize` without `zonemode=strided` is refused, as fio refuses it); jobs with sizes drawn per I/O or an `rw` skip are refused with it, and a random job's zones larger than its region (fio ends the job at its first offset past the region) |
//! | `random_generator` | `tausworthe` (default), `tausworthe64`, `lfsr`: offsets are drawn by elevator's own generator whichever is named (a deviation); `lfsr` keeps uniform offsets once a pass under `norandommap`, as fio's LFSR visits each block once a period |
//! | `randrepeat` | flag, accepted: runs are always repeatable (fio's default, 1); fio's 0 seeds from the clock, which elevator does not |
//! | `elevator_cgroup` (alias `cgroup`), `elevator_weight` (alias `cgroup_weight`) | the job's group path (e.g. `/a`, nested `/a/b`; fio's relative `cgroup=a` means `/a`) and that group's weight, in the scheduler's weight scale |
//! | `cpus_allowed` | the CPUs the job may run on, fio's list (`0,5,8-15`); used by the simulator's host CPU model (`--host`), where a job pinned to one core submits and completes its I/O on that core |
//! | `cpus_allowed_policy` | `shared` (default: every clone may use the whole set) or `split` (each job gets one CPU of the set: the job's number in the file, counting every `numjobs` clone from 0, modulo the set's size, as fio's `fio_cpus_split` picks it) |
//! | `cmdprio_percentage`, `cmdprio_class`, `cmdprio`, `cmdprio_bssplit` | fio's io_uring and libaio engine options (refused with another engine), as engines/cmdprio.c reads them: one value for both directions or `reads,writes`; a percentage 0..=100, a class 1 (rt), 2 (be), 3 (idle), default rt, a level 0..=7, default 0; `cmdprio_bssplit` entries `bs/percent[/class/level]` separated by `:` (a class and level past their range clamped, a priority hint refused unless 0). A share of the I/Os drawn per I/O carries that priority, the rest the job's (elevator_workload's `jobs::cmdprio`, where the deviations are named) |
//! | `cgroup_nodelete`, `nonvectored` | flags accepted and ignored: fio leaves its cgroups in place after the run (elevator's groups live in the run); io_uring's `IORING_OP_READ`/`WRITE` in place of the vectored ops build the same bios |
//! | `thread` | flag accepted: fio runs the job as a thread of its process, not a process of its own; a thread is an I/O context of its own in the kernel all the same (`copy_io` shares one only under `CLONE_IO`). Refused with `cgroup`: fio then writes the thread's id to cgroup v2's `cgroup.procs`, which moves the whole fio process, every job's thread, into that group |
//! | `fadvise_hint` | `0`, `1`, `random`, `sequential`, `noreuse`: accepted and ignored: the advice steers the page cache's readahead, which elevator does not model (`run` does O_DIRECT I/O, the simulator's fio jobs have no cache) |
//! | `flow_id` | number, accepted and ignored: it only names the flow `flow` weighs, and `flow` is refused |
//! | `group_reporting`, `registerfiles`, `fixedbufs`, `allow_file_create`, `invalidate` | flags accepted and ignored: figures stay per job (fio would merge a group's jobs); the io_uring options only save host CPU time, and the host CPU model's costs were fitted to runs that used them; files are laid out by `elevator run` itself; no page cache is read (`run` does O_DIRECT I/O, the simulator's fio jobs have no cache), so there is none to drop |
//! | `write_iops_log`, `write_lat_log`, `write_bw_log`, `log_avg_msec` | accepted and ignored (no per-interval logs) |
//! | `elevator_io_max`, `elevator_io_latency_us`, `elevator_io_weight`, `elevator_io_bfq_weight` | the job's group's cgroup v2 io files: `io.max` as written after MAJ:MIN (`rbps=1048576 wiops=100`), io.latency's target in microseconds, `io.weight` (1..=10000), `io.bfq.weight` (1..=1000) |
//!
//! Anything else (`verify`, `flow`, `exitall` ...) is an error naming the file, the line and
//! the option. `exitall` (fio ends every job when one ends) is refused: the simulator and the
//! executor end each job by itself.
//!
//! Hostile input (docs/reliability.md): a file is read up to [`MAX_FILE_BYTES`], a line up to
//! [`MAX_LINE`] bytes, at most [`MAX_SECTIONS`] jobs of at most [`MAX_CLONES`] clones in all;
//! `offset + size` must fit in 64 bits. A UTF-8 byte-order mark is skipped and comments may
//! hold any bytes (fio reads Latin-1 there); other lines must be UTF-8. Errors quote at most a
//! short excerpt of the input.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use elevator_core::{IoClass, IoPrio};

use crate::fio_ini::{self, Entry, Item};
use crate::input::InputError;
use crate::jobs::cmdprio::{CmdPrioEntry, CmdPrioOptions};
use crate::jobs::fio::{
    FioJobConfig, RandomGenerator, RateProcess, RwMode, RwSequencer, SyncIo, ZoneMode,
};
use crate::jobs::{BlockSizes, RandomDistribution, SizeMix};

/// How a job submits its I/O (fio's `ioengine`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Engine {
    /// `io_uring` or `libaio`: asynchronous, up to `iodepth` outstanding.
    Async,
    /// `psync`, `sync`, `pvsync`: one synchronous request at a time.
    Sync,
}

/// One `[job]` section, with `[global]` applied.
#[derive(Clone, Debug, PartialEq)]
pub struct FioJobDef {
    /// The section's name.
    pub name: String,
    /// The line of its `[name]` header.
    pub line: usize,
    /// Its workload.
    pub config: FioJobConfig,
    /// `numjobs`: clones to run (default 1).
    pub numjobs: u32,
    /// `ioengine` (default io_uring's behaviour: asynchronous).
    pub engine: Engine,
    /// `ioengine` as the file names it (`None`: not given), for the checks that depend on
    /// the engine itself (`vsync`'s batches).
    pub ioengine: Option<String>,
    /// `thread`: fio runs the job as a thread of its process (refused with a `cgroup`).
    pub thread: bool,
    /// The trims' sizes of `bssplit` / `bsrange` (their third part, else the writes'), which
    /// a trimming job's config takes as its writes' once the section ends.
    pub trim_sizes: Option<SizeMix>,
    /// `cmdprio_percentage`, `cmdprio_class`, `cmdprio`, `cmdprio_bssplit` as given, resolved
    /// into the config's `cmdprio` once the job's section ends.
    pub cmdprio: CmdPrioOptions,
    /// `filename`: the files the job does I/O to (fio's `a:b` is two files, `\:` a colon
    /// in a name); empty if not given.
    pub filenames: Vec<String>,
    /// `stonewall`: start only after every earlier job has finished.
    pub stonewall: bool,
    /// `new_group`: start a new reporting group.
    pub new_group: bool,
    /// `prio` / `prioclass`.
    pub prio: IoPrio,
    /// `elevator_cgroup`: group path, e.g. `/a` (default: the root).
    pub cgroup: Option<String>,
    /// `elevator_weight`: the group's weight (default: the scheduler's default).
    pub weight: Option<u32>,
    /// `offset_increment`: how far each `numjobs` clone's region starts after the one
    /// before it (fio's `subjob_number * offset_increment`, added to `offset`), in bytes or
    /// as a fraction of the target; see [`FioJobDef::clone_config`].
    pub offset_increment: Option<Increment>,
    /// `cpus_allowed`: the CPUs the job may run on, ascending, without repeats (`None`: any).
    pub cpus_allowed: Option<Vec<u32>>,
    /// `cpus_allowed_policy=split`: each clone gets one CPU of `cpus_allowed` (see
    /// [`FioFile::clone_cpus`]); `false` (fio's `shared`, the default): all of them.
    pub cpus_split: bool,
    /// `startdelay`: how long after its phase starts each clone starts, nanoseconds: one
    /// value, or a range (`1-5`) each clone draws from (seeded). `None`: at once.
    pub start_delay: Option<(u64, u64)>,
    /// `elevator_io_max`, `elevator_io_latency_us`, `elevator_io_weight`,
    /// `elevator_io_bfq_weight`: the group's cgroup v2 io files (only those given are set).
    pub io: elevator_core::group::IoSettings,
    /// The line each option was last set on, by the name of the [`FioJobConfig`] field it
    /// set (e.g. `thinktime_us` for `thinktime`), so a later error on a field can name the line.
    pub lines: BTreeMap<&'static str, usize>,
}

/// fio's `offset_increment`: bytes, or `N%` of the target.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Increment {
    /// Bytes.
    Bytes(u64),
    /// A fraction 0..=1 of the target's size.
    Fraction(f64),
}

impl FioJobDef {
    /// The line that set the config field `field`, else the job's header line.
    pub fn line_of(&self, field: &str) -> usize {
        self.lines.get(field).copied().unwrap_or(self.line)
    }

    /// The workload of clone `subjob` (0-based, of `numjobs`) on a target of
    /// `capacity_bytes`: the job's own, with `offset_increment` applied as fio's
    /// `get_start_offset` does: the region starts at `offset + subjob * increment`, and
    /// where either is a percentage of the target, that start is rounded up to the block
    /// size. `None` when the start is past 2^64 bytes.
    pub fn clone_config(&self, subjob: u32, capacity_bytes: u64) -> Option<FioJobConfig> {
        let mut c = self.config.clone();
        let Some(inc) = self.offset_increment else {
            return Some(c);
        };
        let of = |f: f64| (f * capacity_bytes as f64) as u64;
        let (base, base_frac) = match (c.offset, c.offset_frac) {
            (_, Some(f)) => (of(f), true),
            (o, None) => (o.unwrap_or(0), false),
        };
        let (step, step_frac) = match inc {
            Increment::Bytes(b) => (b, false),
            Increment::Fraction(f) => (of(f), true),
        };
        let mut start = step.checked_mul(u64::from(subjob))?.checked_add(base)?;
        if base_frac || step_frac {
            // fio rounds to its smallest block (`td_min_bs`).
            let bs = c.min_size();
            start = start.div_ceil(bs).checked_mul(bs)?;
        }
        (c.offset, c.offset_frac) = (Some(start), None);
        Some(c)
    }
}

/// A parsed job file.
#[derive(Clone, Debug, PartialEq)]
pub struct FioFile {
    /// The file it came from.
    pub path: PathBuf,
    /// Its jobs, in file order.
    pub jobs: Vec<FioJobDef>,
}

impl FioFile {
    /// Refuse a job whose `runtime` or `ramp_time` is more than `max_s` seconds, naming its
    /// line: for the simulator, which computes every I/O of the simulated time (`sim` of a
    /// `runtime=1000h` job ran for hours of real time without a word). fio on a real device
    /// runs it as given, so `elevator run` does not call this.
    pub fn check_simulated_time(&self, max_s: f64) -> Result<(), InputError> {
        let max_ms = (max_s * 1000.0) as u64;
        for def in &self.jobs {
            for (key, ms) in [
                ("runtime_ms", def.config.runtime_ms),
                ("ramp_ms", Some(def.config.ramp_ms)),
            ] {
                if ms.is_some_and(|ms| ms > max_ms) {
                    return Err(self.job_error(
                        def,
                        key,
                        format!(
                            "more than a day of simulated time: the simulator runs at most \
                             {max_s} s (a scenario's bound); `elevator run` runs it on a device"
                        ),
                    ));
                }
            }
        }
        Ok(())
    }

    /// The CPUs each job may run on, one entry per job in run order (every `numjobs` clone
    /// of every section, as the jobs are built): `None` where the section sets no
    /// `cpus_allowed`. With `cpus_allowed_policy=split` a job gets the one CPU fio's
    /// `fio_cpus_split` leaves it: the `n`th (from 0) of the set in ascending order, `n` the
    /// job's number in the file (fio's `thread_number - 1`, counting every clone of every
    /// section before it) modulo the set's size.
    pub fn clone_cpus(&self) -> Vec<Option<Vec<u32>>> {
        let mut out = Vec::new();
        for def in &self.jobs {
            for _ in 0..def.numjobs {
                let n = out.len();
                out.push(def.cpus_allowed.as_ref().map(|set| {
                    if def.cpus_split {
                        vec![set[n % set.len()]]
                    } else {
                        set.clone()
                    }
                }));
            }
        }
        out
    }

    /// An error about job `def` of this file and its config field `field` (as
    /// [`FioJobDef::lines`] names it; empty for the job as a whole), placed on the line that
    /// set the field, else on the job's header.
    pub fn job_error(
        &self,
        def: &FioJobDef,
        field: &str,
        message: impl fmt::Display,
    ) -> InputError {
        InputError::at_line(
            &self.path,
            def.line_of(field),
            option_of(field),
            format!("job {}: {message}", excerpt(&def.name)),
        )
    }
}

/// The largest job file read, bytes (fio's own job files are a few KiB; this refuses
/// `/dev/zero` or a 1 GB sparse file after reading 1 MiB).
pub const MAX_FILE_BYTES: u64 = 1 << 20;
/// The longest line of a job file, bytes (fio's own limit on an option line is 8 KiB).
pub const MAX_LINE: usize = 8 * 1024;
/// The longest job name, bytes.
pub const MAX_NAME: usize = 256;
/// The most `[job]` sections in one file.
pub const MAX_SECTIONS: usize = 4096;
/// The most jobs a file may run, counting every `numjobs` clone.
pub const MAX_CLONES: u64 = 4096;
/// The most characters of an input value an error message quotes.
const EXCERPT: usize = 60;

/// `s` as an error message quotes it: at most `EXCERPT` (60) characters, then `...`.
pub fn excerpt(s: &str) -> String {
    match s.char_indices().nth(EXCERPT) {
        Some((i, _)) => format!("{}...", &s[..i]),
        None => s.to_string(),
    }
}

/// Read and parse the job file at `path` (at most [`MAX_FILE_BYTES`]).
pub fn read(path: &Path) -> Result<FioFile, InputError> {
    parse_bytes(path, &read_bytes(path)?)
}

/// The bytes of the job file at `path`, refused past [`MAX_FILE_BYTES`] (after reading no
/// more than that).
pub fn read_bytes(path: &Path) -> Result<Vec<u8>, InputError> {
    crate::input::read_bytes(path, MAX_FILE_BYTES, "job file")
}

struct Opt<'a> {
    key: &'a str,
    value: Option<&'a str>,
    line: usize,
}

/// Parse job-file `text`; `path` is only used in errors.
pub fn parse(path: &Path, text: &str) -> Result<FioFile, InputError> {
    parse_bytes(path, text.as_bytes())
}

/// Parse a job file's bytes; `path` is only used in errors. A UTF-8 byte-order mark is
/// skipped; comment lines may hold any bytes (fio reads Latin-1 comments); every other line
/// must be UTF-8 and at most [`MAX_LINE`] bytes.
pub fn parse_bytes(path: &Path, bytes: &[u8]) -> Result<FioFile, InputError> {
    let err = |line: usize, option: &str, reason: String| {
        InputError::at_line(path, line, &excerpt(option), excerpt_reason(reason))
    };
    let mut jobs: Vec<FioJobDef> = Vec::new();
    let mut names = std::collections::HashSet::new();
    // Every option of every [global] above the current line, applied in order.
    let mut global = FioJobDef {
        name: String::new(),
        line: 0,
        config: FioJobConfig::default(),
        numjobs: 1,
        engine: Engine::Async,
        ioengine: None,
        thread: false,
        trim_sizes: None,
        cmdprio: CmdPrioOptions::default(),
        filenames: Vec::new(),
        stonewall: false,
        new_group: false,
        prio: IoPrio::default(),
        cgroup: None,
        weight: None,
        offset_increment: None,
        cpus_allowed: None,
        cpus_split: false,
        start_delay: None,
        io: Default::default(),
        lines: BTreeMap::new(),
    };
    let mut in_global = false;
    let lines = bytes.split(|&b| b == b'\n').count();
    for Entry { line, raw, item } in fio_ini::entries(bytes) {
        if raw.len() > MAX_LINE {
            let first = raw
                .iter()
                .position(|b| !b.is_ascii_whitespace())
                .unwrap_or(0);
            return Err(err(
                line,
                &String::from_utf8_lossy(&raw[first..first + EXCERPT.min(raw.len() - first)]),
                format!("the line is longer than {MAX_LINE} bytes"),
            ));
        }
        let item = item.map_err(|e| {
            err(
                line,
                "",
                format!(
                    "not UTF-8 text (byte {:#04x} at column {})",
                    raw[e.valid_up_to()],
                    e.valid_up_to() + 1
                ),
            )
        })?;
        let (key, value) = match item {
            Item::Unclosed(l) => {
                return Err(err(line, l, "a section header ends with ']'".into()));
            }
            Item::Section {
                name,
                global: is_global,
            } => {
                if name.is_empty() {
                    let l = String::from_utf8_lossy(raw);
                    return Err(err(line, l.trim(), "a section needs a name".into()));
                }
                if name.len() > MAX_NAME {
                    return Err(err(
                        line,
                        name,
                        format!("a job name is at most {MAX_NAME} bytes"),
                    ));
                }
                // fio's parse_jobs_ini: a section whose name starts with "global" is a global
                // one: `[globals]` sets defaults, it runs no job.
                in_global = is_global;
                if !in_global {
                    new_name(&names, name).map_err(|reason| err(line, name, reason))?;
                    names.insert(name.to_string());
                    if jobs.len() == MAX_SECTIONS {
                        return Err(err(
                            line,
                            name,
                            format!("more than {MAX_SECTIONS} jobs in one file"),
                        ));
                    }
                    let mut def = global.clone();
                    (def.name, def.line) = (name.to_string(), line);
                    jobs.push(def);
                }
                continue;
            }
            Item::Option { key, value } => (key, value),
        };
        let expanded = match value {
            Some(v) if v.contains('$') => Some(expand(v).map_err(|reason| err(line, key, reason))?),
            _ => None,
        };
        let value = expanded.as_deref().or(value);
        let opt = Opt { key, value, line };
        // fio's `include FILE` reads another file in its place, wherever it stands; elevator
        // reads the one file it is given (an include could name itself, a device or a FIFO).
        if key == "include" || key.starts_with("include ") || key.starts_with("include\t") {
            return Err(err(
                line,
                "include",
                "`include` is not supported: put the included file's options here".into(),
            ));
        }
        let def = if in_global {
            &mut global
        } else if let Some(def) = jobs.last_mut() {
            def
        } else {
            return Err(err(line, key, "an option before any [section]".into()));
        };
        if key == "name" {
            // fio's `name=` in a job file renames the job its section started.
            let to = need(&opt).map_err(|reason| err(line, key, reason))?;
            if in_global {
                return Err(err(
                    line,
                    key,
                    "`name` in a [global] section would give every job one name; elevator \
                     names each job's figures by its name: set it in each job"
                        .into(),
                ));
            }
            if to != def.name {
                new_name(&names, to).map_err(|reason| err(line, to, reason))?;
                names.remove(&def.name);
                names.insert(to.to_string());
                def.name = to.to_string();
            }
            continue;
        }
        if !OPTIONS.contains(&key) && !ALIASES.contains(&key) {
            // Told in full, past the cap on a reason that quotes input: the field names the
            // option and the list of those read is ours.
            return Err(InputError::at_line(
                path,
                line,
                &excerpt(key),
                unsupported(key),
            ));
        }
        apply(def, &opt).map_err(|reason| err(line, key, reason))?;
    }
    let mut clones: u64 = 0;
    for def in &mut jobs {
        check_engine(def).map_err(|reason| {
            err(
                def.lines.get("ioengine").copied().unwrap_or(def.line),
                "ioengine",
                format!("job {}: {reason}", excerpt(&def.name)),
            )
        })?;
        if def.config.rw.trims() {
            // A trimming job's trims take the writes' place in its config.
            let trims = def.trim_sizes.clone();
            if def.config.rw == RwMode::TrimWrite && trims != def.config.block_sizes.write {
                let field = if def.lines.contains_key("bssplit") {
                    "bssplit"
                } else {
                    "bsrange"
                };
                return Err(err(
                    def.line_of(field),
                    field,
                    format!(
                        "job {}: trimwrite whose trims and writes have different sizes: fio \
                         walks them apart, so a write need not cover the block trimmed",
                        excerpt(&def.name)
                    ),
                ));
            }
            def.config.block_sizes = BlockSizes {
                read: None,
                write: trims,
            };
        }
        if def.cmdprio.given() {
            let line = ["cmdprio_percentage", "cmdprio_bssplit"]
                .iter()
                .filter_map(|k| def.lines.get(k).copied())
                .max()
                .unwrap_or(def.line);
            let option = if def.cmdprio.bssplit.is_some() {
                "cmdprio_bssplit"
            } else {
                "cmdprio_percentage"
            };
            if !matches!(def.ioengine.as_deref(), Some("io_uring" | "libaio")) {
                return Err(err(
                    line,
                    option,
                    format!(
                        "job {}: the cmdprio options are fio's io_uring and libaio engines' \
                         (ioengine={}): set ioengine=io_uring or libaio",
                        excerpt(&def.name),
                        def.ioengine.as_deref().unwrap_or("not given")
                    ),
                ));
            }
            def.config.cmdprio = def.cmdprio.resolve().map_err(|reason| {
                err(
                    line,
                    option,
                    format!("job {}: {reason}", excerpt(&def.name)),
                )
            })?;
        }
        if def.thread && def.cgroup.is_some() {
            return Err(err(
                def.lines.get("thread").copied().unwrap_or(def.line),
                "thread",
                format!(
                    "job {}: `thread` with `cgroup`: fio writes the thread's id to cgroup v2's \
                     cgroup.procs, which moves the whole fio process (every job's thread) into \
                     the group; elevator would put this job alone there. Run it as a process \
                     (thread=0)",
                    excerpt(&def.name)
                ),
            ));
        }
        if def.engine == Engine::Sync {
            def.config.iodepth = 1;
        }
        // Every engine but io_uring trims with the BLKDISCARD ioctl (fio's default engine,
        // psync, too): a synchronous discard bio.
        def.config.trim_sync = def.ioengine.as_deref() != Some("io_uring");
        // fio sets a job's priority (`ioprio_set`) once `prio` or `prioclass` is given, with
        // the other at its own default: `prio` has none, so a class given alone is level 0.
        // With neither, the job keeps the kernel's default (best effort 4 at nice 0).
        if def.lines.contains_key("prioclass") && !def.lines.contains_key("prio") {
            def.prio.level = 0;
        }
        clones += u64::from(def.numjobs);
        if clones > MAX_CLONES {
            return Err(err(
                def.lines.get("numjobs").copied().unwrap_or(def.line),
                "numjobs",
                format!(
                    "job {}: the file runs more than {MAX_CLONES} jobs (numjobs counted)",
                    excerpt(&def.name)
                ),
            ));
        }
        let c = &def.config;
        if let (Some(o), Some(s)) = (c.offset, c.size) {
            if o.checked_add(s).is_none() {
                return Err(err(
                    def.line_of("size"),
                    "size",
                    format!(
                        "job {}: offset {o} + size {s} bytes is past 2^64 bytes",
                        excerpt(&def.name)
                    ),
                ));
            }
        }
    }
    if jobs.is_empty() {
        return Err(err(lines.max(1), "", "the file defines no job".into()));
    }
    Ok(FioFile {
        path: path.to_path_buf(),
        jobs,
    })
}

/// Why job `def`'s engine cannot run it as elevator models that engine, if it cannot: `vsync`
/// with batches of more than one I/O (fio's `fio_vsyncio_queue` joins contiguous queued I/Os
/// into one `readv`/`writev`, and `td_io_queue` commits them once `iodepth_batch_submit` are
/// queued, fixed up as `fixup_options` does).
fn check_engine(def: &FioJobDef) -> Result<(), String> {
    if def.ioengine.as_deref() == Some("vsync") {
        let c = &def.config;
        let batch = match c.iodepth_batch_submit {
            0 => c.iodepth,
            b => b.min(c.iodepth),
        };
        if batch > 1 {
            return Err(format!(
                "vsync with batches of {batch} I/Os (iodepth_batch_submit, iodepth): fio joins \
                 contiguous I/Os of a batch into one readv/writev, which elevator does not \
                 model; with iodepth_batch_submit=1 (fio's default) each goes alone, as psync"
            ));
        }
    }
    Ok(())
}

/// Why `name` cannot name another job of the file, whose jobs' names are `names`.
fn new_name(names: &std::collections::HashSet<String>, name: &str) -> Result<(), String> {
    if name.len() > MAX_NAME {
        return Err(format!("a job name is at most {MAX_NAME} bytes"));
    }
    if names.contains(name) {
        return Err(
            "a job of this name already exists (fio runs both; elevator names each \
                    job's figures by its name: rename one)"
                .into(),
        );
    }
    Ok(())
}

/// A reason as an error message gives it: at most a few hundred characters.
fn excerpt_reason(reason: String) -> String {
    match reason.char_indices().nth(400) {
        Some((i, _)) => format!("{}...", &reason[..i]),
        None => reason,
    }
}

/// fio's `filename` list: names separated by `:`, where `\:` is a colon inside a name.
fn split_filenames(v: &str) -> Vec<String> {
    let mut names = vec![String::new()];
    let mut chars = v.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&':') => {
                chars.next();
                names.last_mut().expect("one name at least").push(':');
            }
            ':' => names.push(String::new()),
            c => names.last_mut().expect("one name at least").push(c),
        }
    }
    names
}

fn need<'a>(o: &Opt<'a>) -> Result<&'a str, String> {
    match o.value {
        Some(v) if !v.is_empty() => Ok(v),
        _ => Err("needs a value (key=value)".into()),
    }
}

fn flag(o: &Opt) -> Result<bool, String> {
    match o.value {
        None | Some("1") | Some("true") => Ok(true),
        Some("0") | Some("false") => Ok(false),
        Some(v) => Err(format!("{v:?} is not 0 or 1")),
    }
}

fn int<T: std::str::FromStr>(o: &Opt) -> Result<T, String> {
    let v = need(o)?;
    v.parse()
        .map_err(|_| format!("{v:?} is not a valid number here"))
}

/// `v` with what fio expands in a job file's values replaced: `${VAR}` by the environment
/// variable VAR (an unset one is an error naming it; fio fails to parse the option then), and
/// fio's reserved keywords `$pagesize`, `$mb_memory` and `$ncpus` by this host's page size,
/// memory in MiB and online CPUs (fio's `os_phys_mem() / (1024 * 1024)`, `cpus_online()`).
/// Any other `$` is refused: fio's arithmetic on them (`size=8*$mb_memory`) is not supported.
fn expand(v: &str) -> Result<String, String> {
    let mut out = String::with_capacity(v.len());
    let mut rest = v;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        rest = &rest[at..];
        if let Some(body) = rest.strip_prefix("${") {
            let Some(end) = body.find('}') else {
                return Err(format!("{v:?}: `${{` without its `}}`"));
            };
            let name = &body[..end];
            match std::env::var(name) {
                Ok(val) => out.push_str(&val),
                Err(_) => {
                    return Err(format!(
                        "{v:?}: the environment variable {:?} is not set (fio expands ${{VAR}} \
                         from the environment, and fails to parse the option without it)",
                        excerpt(name)
                    ))
                }
            }
            rest = &body[end + 1..];
            continue;
        }
        // SAFETY: sysconf reads a system constant.
        let sysconf = |n| unsafe { libc::sysconf(n) }.max(0) as u64;
        let keyword = [
            ("$pagesize", sysconf(libc::_SC_PAGESIZE)),
            (
                "$mb_memory",
                sysconf(libc::_SC_PHYS_PAGES).saturating_mul(sysconf(libc::_SC_PAGESIZE)) >> 20,
            ),
            ("$ncpus", sysconf(libc::_SC_NPROCESSORS_ONLN)),
        ]
        .into_iter()
        .find(|(k, _)| rest.starts_with(k));
        match keyword {
            Some((k, n)) => {
                out.push_str(&n.to_string());
                rest = &rest[k.len()..];
            }
            None => {
                return Err(format!(
                    "{v:?}: `$` expands only ${{VAR}} (the environment) and fio's $pagesize, \
                     $mb_memory and $ncpus"
                ))
            }
        }
    }
    out.push_str(rest);
    // fio evaluates arithmetic only in parentheses (`size=(2*$mb_memory)m`); a `/` is a
    // path's (`filename=${DIR}/f`).
    if out.trim_start().starts_with('(') {
        return Err(format!(
            "{v:?} (expanded {:?}): arithmetic in a value is not supported",
            excerpt(&out)
        ));
    }
    Ok(out)
}

/// fio's value for both directions (`4k/50:8k/50`) or for reads, then writes
/// (`4k/100,64k/100`), then trims: each part as `parse` reads it, an empty part leaving that
/// direction at `bs`. Returns the reads' and writes' sizes, and the trims': the third part,
/// else the writes', else the one value (fio's `str_split_parse`).
fn per_direction(
    v: &str,
    parse: impl Fn(&str) -> Result<SizeMix, String>,
) -> Result<(BlockSizes, Option<SizeMix>), String> {
    let v = v.trim();
    let part = |p: &str| -> Result<Option<SizeMix>, String> {
        let p = p.trim();
        if p.is_empty() {
            Ok(None)
        } else {
            parse(p).map(Some)
        }
    };
    match v.split_once(',') {
        None => {
            let both = part(v)?;
            Ok((
                BlockSizes {
                    read: both.clone(),
                    write: both.clone(),
                },
                both,
            ))
        }
        Some((read, rest)) => {
            let (write, trim) = match rest.split_once(',') {
                Some((write, trim)) => (part(write)?, part(trim)?),
                None => {
                    let write = part(rest)?;
                    (write.clone(), write)
                }
            };
            Ok((
                BlockSizes {
                    read: part(read)?,
                    write,
                },
                trim,
            ))
        }
    }
}

/// fio's value of an integer option per direction (`percentage_random`, `blockalign`): one
/// value for every direction, or `reads,writes` (the last given also the trims', left out),
/// as fio's `handle_option` stores `off1`, `off2`, `off3`; an empty part leaves its direction
/// as it was (`None`).
fn int_per_direction<T: Copy>(
    v: &str,
    parse: impl Fn(&str) -> Result<T, String>,
) -> Result<[Option<T>; 2], String> {
    let parts: Vec<&str> = v.split(',').map(str::trim).collect();
    if parts.len() > 3 {
        return Err(format!(
            "{v:?}: at most three values (reads, writes, trims)"
        ));
    }
    let mut out = [None, None];
    for (i, p) in parts.iter().enumerate() {
        let value = if p.is_empty() { None } else { Some(parse(p)?) };
        if i < 2 {
            out[i] = value;
        }
    }
    if parts.len() == 1 {
        out[1] = out[0];
    }
    Ok(out)
}

/// fio's integer option of two offsets (`off1` reads, `off2` writes), as `__handle_option`
/// stores it: `a` for both directions, `a,b` for reads, then writes (a third, trims', read
/// and left out); each within `lo..=hi`.
fn two_ints(v: &str, lo: u32, hi: u32) -> Result<[u32; 2], String> {
    let mut out = Vec::new();
    for part in v.split(',').take(3) {
        let n: u32 = part
            .trim()
            .parse()
            .ok()
            .filter(|n| (lo..=hi).contains(n))
            .ok_or_else(|| format!("{part:?} in {v:?} is not a number in {lo}..={hi}"))?;
        out.push(n);
    }
    Ok([out[0], *out.get(1).unwrap_or(&out[0])])
}

/// fio's `cmdprio_bssplit` (`str_split_parse` with `split_parse_prio_ddir`): entries
/// `bs/percent[/class/level[/hint]]` separated by `:` (an empty entry ends the list), for both
/// directions or `reads,writes` (a third part, trims', left out); a percentage above 100 is
/// 100, a class above 3 is 3 and a level above 7 is 7, as `parse_cmdprio_bssplit_entry`
/// clamps them; a hint other than 0 is refused (elevator does not model priority hints).
fn cmdprio_bssplit(v: &str) -> Result<[Vec<CmdPrioEntry>; 2], String> {
    let part = |p: &str| -> Result<Vec<CmdPrioEntry>, String> {
        let mut entries = Vec::new();
        for entry in p.trim().split(':').take_while(|e| !e.is_empty()) {
            let fields: Vec<&str> = entry.split('/').collect();
            let num = |f: &str| -> Result<u32, String> {
                f.trim()
                    .parse()
                    .map_err(|_| format!("{f:?} in {entry:?} is not a number"))
            };
            let bs = parse_size(fields[0])?;
            let percent = match fields.get(1) {
                Some(f) if !f.is_empty() => num(f)?.min(100),
                _ => 0,
            };
            let prio = match fields.len() {
                1 | 2 => None,
                4 | 5 => {
                    if fields.len() == 5 && num(fields[4])? != 0 {
                        return Err(format!(
                            "{entry:?}: a priority hint (the fifth field) is not modelled"
                        ));
                    }
                    Some((num(fields[2])?.min(3) as u8, num(fields[3])?.min(7) as u8))
                }
                _ => {
                    return Err(format!(
                        "{entry:?} is not bs/percent, bs/percent/class/level or \
                         bs/percent/class/level/hint"
                    ))
                }
            };
            entries.push((bs, percent, prio));
        }
        Ok(entries)
    };
    let mut parts = v.trim().splitn(3, ',');
    let read = part(parts.next().unwrap_or(""))?;
    let write = match parts.next() {
        Some(w) => part(w)?,
        None => read.clone(),
    };
    if let Some(trim) = parts.next() {
        part(trim)?;
    }
    Ok([read, write])
}

/// A size with fio's suffixes, as fio reads them under its default `kb_base=1024`
/// (`get_mult_bytes` in fio's parse.c): `k`, `kb`, `m`, `mb` ... are powers of 1024, and the
/// IEC spellings `kib`, `mib` ... powers of 1000 ("compatibility mode": fio's HOWTO, `kb_base`).
/// So `4KiB` is 4000 bytes, as fio runs it, not 4096.
pub fn parse_size(v: &str) -> Result<u64, String> {
    let s = v.trim();
    let digits = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    if digits == 0 {
        return Err(format!("{v:?} is not a size"));
    }
    let n: u64 = s[..digits]
        .parse()
        .map_err(|_| format!("{v:?} is too large"))?;
    let mult: u64 = match s[digits..].to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" => 1 << 10,
        "m" | "mb" => 1 << 20,
        "g" | "gb" => 1 << 30,
        "t" | "tb" => 1 << 40,
        "p" | "pb" => 1 << 50,
        "kib" => 1_000,
        "mib" => 1_000_000,
        "gib" => 1_000_000_000,
        "tib" => 1_000_000_000_000,
        "pib" => 1_000_000_000_000_000,
        other => return Err(format!("unknown size suffix {other:?} in {v:?}")),
    };
    n.checked_mul(mult)
        .ok_or_else(|| format!("{v:?} is too large"))
}

/// A time with fio's suffixes; a bare number is in `default_unit_ns`. Returns nanoseconds.
pub fn parse_time(v: &str, default_unit_ns: u64) -> Result<u64, String> {
    let s = v.trim();
    let digits = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    if digits == 0 {
        return Err(format!("{v:?} is not a time"));
    }
    let n: u64 = s[..digits]
        .parse()
        .map_err(|_| format!("{v:?} is too large"))?;
    let unit: u64 = match s[digits..].to_ascii_lowercase().as_str() {
        "" => default_unit_ns,
        "ns" | "nsec" => 1,
        "us" | "usec" => 1_000,
        "ms" | "msec" => 1_000_000,
        "s" | "sec" => 1_000_000_000,
        "m" | "min" => 60_000_000_000,
        "h" | "hour" => 3_600_000_000_000,
        other => return Err(format!("unknown time suffix {other:?} in {v:?}")),
    };
    n.checked_mul(unit)
        .ok_or_else(|| format!("{v:?} is too large"))
}

/// A size, or `N%` of the target (returned as a fraction).
fn size_or_percent(v: &str) -> Result<Result<u64, f64>, String> {
    if let Some(p) = v.strip_suffix('%') {
        let f: f64 = p
            .trim()
            .parse()
            .map_err(|_| format!("{v:?} is not a percentage"))?;
        if !(0.0..=100.0).contains(&f) {
            return Err(format!("{v:?} is not within 0%..=100%"));
        }
        return Ok(Err(f / 100.0));
    }
    parse_size(v).map(Ok)
}

/// The most CPUs a `cpus_allowed` list may name (fio's own limit is the machine's CPU count,
/// checked when the job starts; ours is checked against the host model's cores when a
/// simulation runs).
pub const MAX_CPU: u32 = 4096;

/// fio's CPU list (`cpus_allowed`): CPU numbers and ranges `a-b` separated by commas, e.g.
/// `0,5,8-15`; returned ascending without repeats.
fn cpu_list(v: &str) -> Result<Vec<u32>, String> {
    let mut cpus = std::collections::BTreeSet::new();
    for part in v.split(',') {
        let part = part.trim();
        let num = |s: &str| -> Result<u32, String> {
            let n: u32 = s
                .trim()
                .parse()
                .map_err(|_| format!("{s:?} is not a CPU number (in {v:?})"))?;
            if n >= MAX_CPU {
                return Err(format!("CPU {n} is too large (at most {})", MAX_CPU - 1));
            }
            Ok(n)
        };
        let (a, b) = match part.split_once('-') {
            Some((a, b)) => (num(a)?, num(b)?),
            None => {
                let n = num(part)?;
                (n, n)
            }
        };
        if a > b {
            return Err(format!("{part:?}: a range runs from low to high"));
        }
        cpus.extend(a..=b);
    }
    Ok(cpus.into_iter().collect())
}

/// The longest `startdelay`, nanoseconds: 30 days.
pub const MAX_START_DELAY_NS: u64 = 30 * 86_400 * 1_000_000_000;

/// The fio options elevator reads (the subset `sim` and `run` share), as the parser matches
/// them, each by fio's own name; [`ALIASES`] has the other names fio gives some of them. An
/// option among neither is refused with this list, or with the one it most likely meant.
pub const OPTIONS: &[&str] = &[
    "rw",
    "rwmixread",
    "rwmixwrite",
    "rw_sequencer",
    "bs",
    "bsrange",
    "bssplit",
    "size",
    "offset",
    "offset_increment",
    "io_size",
    "number_ios",
    "filename",
    "numjobs",
    "iodepth",
    "iodepth_batch_submit",
    "iodepth_low",
    "iodepth_batch_complete_min",
    "iodepth_batch_complete_max",
    "ioengine",
    "direct",
    "sync",
    "rate",
    "rate_iops",
    "rate_process",
    "zonemode",
    "zonesize",
    "zonerange",
    "zoneskip",
    "fsync",
    "fdatasync",
    "end_fsync",
    "thinktime",
    "thinktime_blocks",
    "runtime",
    "ramp_time",
    "time_based",
    "norandommap",
    "random_distribution",
    "random_generator",
    "percentage_random",
    "blockalign",
    "randseed",
    "randrepeat",
    "name",
    "startdelay",
    "stonewall",
    "new_group",
    "prio",
    "prioclass",
    "cgroup",
    "cgroup_weight",
    "cpus_allowed",
    "cpus_allowed_policy",
    "group_reporting",
    "cmdprio_percentage",
    "cmdprio_class",
    "cmdprio",
    "cmdprio_bssplit",
    "cgroup_nodelete",
    "thread",
    "nonvectored",
    "fadvise_hint",
    "flow_id",
    "registerfiles",
    "fixedbufs",
    "allow_file_create",
    "invalidate",
    "write_iops_log",
    "write_lat_log",
    "write_bw_log",
    "log_avg_msec",
    "elevator_io_max",
    "elevator_io_latency_us",
    "elevator_io_weight",
    "elevator_io_bfq_weight",
];

/// The other names of options in [`OPTIONS`]: fio's aliases (`readwrite` for `rw`,
/// `blocksize` for `bs`, `io_limit` for `io_size`, `timeout` for `runtime`,
/// `wait_for_previous` for `stonewall`, `iodepth_batch` for `iodepth_batch_submit`, `ba`
/// for `blockalign` (fio's own name for it, `blockalign` its HOWTO's),
/// `iodepth_batch_complete` for `iodepth_batch_complete_min`) and elevator's older names of
/// the cgroup options.
pub const ALIASES: &[&str] = &[
    "readwrite",
    "blocksize_range",
    "iodepth_batch",
    "iodepth_batch_complete",
    "blocksize",
    "io_limit",
    "timeout",
    "wait_for_previous",
    "elevator_cgroup",
    "elevator_weight",
    "ba",
];

/// The fio option that sets the [`FioJobConfig`] field `field`, as an error names it (the
/// file says `thinktime`, not `thinktime_us`); any other name as it is.
pub fn option_of(field: &str) -> &str {
    match field {
        "thinktime_us" => "thinktime",
        "fsync_blocks" => "fsync",
        "fdatasync_blocks" => "fdatasync",
        "runtime_ms" => "runtime",
        "ramp_ms" => "ramp_time",
        "size_frac" => "size",
        "offset_frac" => "offset",
        "rw_skip" => "rw",
        "sync_io" => "sync",
        other => other,
    }
}

/// Why `key` is refused: the option it most likely meant, or every option read.
fn unsupported(key: &str) -> String {
    let hint = crate::suggest::did_you_mean(key, OPTIONS.iter().chain(ALIASES).copied());
    if hint.is_empty() {
        format!(
            "not supported by elevator (sim and run read: {})",
            OPTIONS.join(", ")
        )
    } else {
        format!("not supported by elevator{hint}")
    }
}

fn apply(def: &mut FioJobDef, o: &Opt) -> Result<(), String> {
    let c = &mut def.config;
    let field: &'static str = match o.key {
        "rw" | "readwrite" => {
            let v = need(o)?;
            // fio's postfix (`str_rw_cb`): a sequential job's bytes added after each I/O
            // (`read:8k`, a hole; `read:-8k`, backwards), a random job's I/Os per random
            // offset (`randread:8`).
            let (mode, postfix) = match v.split_once(':') {
                Some((m, p)) => (m, Some(p.trim())),
                None => (v, None),
            };
            c.rw = RwMode::parse(mode).ok_or_else(|| {
                format!(
                    "{mode:?} is not one of read, write, randread, randwrite, rw, randrw, trim, \
                     randtrim, trimwrite, randtrimwrite"
                )
            })?;
            (c.rw_skip, c.rand_seq_nr) = (0, 1);
            match postfix {
                None => {}
                Some(p) if c.rw.is_random() => {
                    c.rand_seq_nr = p.parse().ok().filter(|&n: &u32| n > 0).ok_or_else(|| {
                        format!("{p:?} is not a count of I/Os per random offset (1 or more)")
                    })?;
                }
                Some(p) => {
                    let (sign, size) = match p.strip_prefix('-') {
                        Some(rest) => (-1, rest),
                        None => (1, p),
                    };
                    let bytes = i64::try_from(parse_size(size)?)
                        .map_err(|_| format!("{p:?} is too large a skip"))?;
                    c.rw_skip = sign * bytes;
                }
            }
            "rw"
        }
        "rw_sequencer" => {
            c.rw_sequencer = match need(o)? {
                "sequential" => RwSequencer::Sequential,
                "identical" => RwSequencer::Identical,
                v => return Err(format!("{v:?} is not sequential or identical")),
            };
            "rw_sequencer"
        }
        "rwmixread" | "rwmixwrite" => {
            let p: u32 = int(o)?;
            if p > 100 {
                return Err(format!("{p} is not a percentage"));
            }
            c.rwmixread = if o.key == "rwmixread" { p } else { 100 - p };
            "rwmixread"
        }
        "bs" | "blocksize" => {
            let v = need(o)?;
            if v.contains(',') || v.contains(':') {
                return Err("one block size for both directions only".into());
            }
            c.bs = parse_size(v)?;
            if !c.bs.is_multiple_of(512) && v.to_ascii_lowercase().ends_with("ib") {
                // fio would run this size; say why it is not the power of two meant.
                return Err(format!(
                    "{v:?} is {} bytes as fio reads it (its default kb_base=1024 reads KiB, \
                     MiB ... as powers of 1000), not a multiple of 512: write {}k for {} bytes",
                    c.bs,
                    c.bs / 1000,
                    c.bs / 1000 * 1024
                ));
            }
            "bs"
        }
        "bsrange" | "blocksize_range" => {
            (c.block_sizes, def.trim_sizes) = per_direction(need(o)?, |part| {
                let (lo, hi) = part
                    .split_once(['-', ':'])
                    .ok_or_else(|| format!("{part:?} is not a range: write min-max (4k-64k)"))?;
                Ok(SizeMix::Range {
                    min: parse_size(lo)?,
                    max: parse_size(hi)?,
                })
            })?;
            def.lines.insert("bsrange", o.line);
            return Ok(());
        }
        "bssplit" => {
            (c.block_sizes, def.trim_sizes) = per_direction(need(o)?, |part| {
                let mut split = Vec::new();
                for entry in part.split(':').take_while(|e| !e.is_empty()) {
                    let (bs, share) = match entry.split_once('/') {
                        Some((bs, share)) => {
                            let p: u64 = share.trim().parse().map_err(|_| {
                                format!("{share:?} in {entry:?} is not a percentage")
                            })?;
                            (bs, p.min(100) as u32)
                        }
                        None => (entry, 0),
                    };
                    split.push((parse_size(bs)?, share));
                }
                Ok(SizeMix::Split(split))
            })?;
            def.lines.insert("bssplit", o.line);
            return Ok(());
        }
        "size" => match size_or_percent(need(o)?)? {
            Ok(b) => {
                (c.size, c.size_frac) = (Some(b), None);
                "size"
            }
            Err(f) => {
                (c.size, c.size_frac) = (None, Some(f));
                "size_frac"
            }
        },
        "offset" => match size_or_percent(need(o)?)? {
            Ok(b) => {
                (c.offset, c.offset_frac) = (Some(b), None);
                "offset"
            }
            Err(f) => {
                (c.offset, c.offset_frac) = (None, Some(f));
                "offset_frac"
            }
        },
        "offset_increment" => {
            def.offset_increment = Some(match size_or_percent(need(o)?)? {
                Ok(b) if b % 512 != 0 => {
                    return Err(format!(
                        "{b} bytes is not a multiple of 512 (a sector): the clones' regions \
                         would start inside a sector"
                    ))
                }
                Ok(b) => Increment::Bytes(b),
                Err(f) => Increment::Fraction(f),
            });
            def.lines.insert("offset_increment", o.line);
            return Ok(());
        }
        // fio's 0 for these is its default: no limit (`io_size`: the region's `size`).
        "io_size" | "io_limit" => {
            c.io_size = Some(parse_size(need(o)?)?).filter(|&b| b > 0);
            "io_size"
        }
        "number_ios" => {
            c.number_ios = Some(int(o)?).filter(|&n| n > 0);
            "number_ios"
        }
        "filename" => {
            def.filenames = split_filenames(need(o)?);
            if def.filenames.iter().any(String::is_empty) {
                return Err("an empty file name (fio separates files with ':')".into());
            }
            "filename"
        }
        "numjobs" => {
            let n: u32 = int(o)?;
            if n == 0 {
                return Err("must be at least 1".into());
            }
            if u64::from(n) > MAX_CLONES {
                return Err(format!("{n} is more than {MAX_CLONES} clones"));
            }
            def.numjobs = n;
            "numjobs"
        }
        "iodepth" => {
            c.iodepth = int(o)?;
            "iodepth"
        }
        "iodepth_batch_submit" | "iodepth_batch" => {
            c.iodepth_batch_submit = int(o)?;
            "iodepth_batch_submit"
        }
        "iodepth_low" => {
            c.iodepth_low = int(o)?;
            "iodepth_low"
        }
        "iodepth_batch_complete_min" | "iodepth_batch_complete" => {
            c.iodepth_batch_complete_min = int(o)?;
            "iodepth_batch_complete_min"
        }
        "iodepth_batch_complete_max" => {
            c.iodepth_batch_complete_max = int(o)?;
            "iodepth_batch_complete_max"
        }
        "ioengine" => {
            let v = need(o)?;
            def.engine = match v {
                "io_uring" | "libaio" => Engine::Async,
                // posixaio: glibc serves a descriptor's requests one at a time (module doc).
                "psync" | "sync" | "pvsync" | "pvsync2" | "vsync" | "posixaio" => Engine::Sync,
                v => {
                    return Err(format!(
                        "{v:?} is not supported (io_uring, libaio, psync, sync, pvsync, \
                         pvsync2, vsync, posixaio)"
                    ))
                }
            };
            def.ioengine = Some(v.to_string());
            def.lines.insert("ioengine", o.line);
            return Ok(());
        }
        "direct" => {
            c.direct = flag(o)?;
            "direct"
        }
        "sync" => {
            // fio's `sync` (options.c): none / 0, sync / 1 (O_SYNC), dsync (O_DSYNC).
            c.sync_io = match need(o)? {
                "none" | "0" => SyncIo::None,
                "sync" | "1" => SyncIo::Sync,
                "dsync" => SyncIo::Dsync,
                v => return Err(format!("{v:?} is not one of none, 0, sync, 1, dsync")),
            };
            "sync_io"
        }
        "rate" => {
            let v = need(o)?;
            if v.contains(',') {
                return Err("one rate for both directions only".into());
            }
            c.rate = Some(parse_size(v)?).filter(|&r| r > 0);
            "rate"
        }
        "rate_iops" => {
            let v = need(o)?;
            if v.contains(',') {
                return Err("one rate for both directions only".into());
            }
            c.rate_iops = Some(int(o)?).filter(|&r| r > 0);
            "rate_iops"
        }
        "fsync" => {
            c.fsync_blocks = int(o)?;
            "fsync_blocks"
        }
        "fdatasync" => {
            c.fdatasync_blocks = int(o)?;
            "fdatasync_blocks"
        }
        "end_fsync" => {
            c.end_fsync = flag(o)?;
            "end_fsync"
        }
        "thinktime" => {
            c.thinktime_us = parse_time(need(o)?, 1_000)? / 1_000;
            "thinktime_us"
        }
        "thinktime_blocks" => {
            c.thinktime_blocks = int(o)?;
            "thinktime_blocks"
        }
        "runtime" | "timeout" => {
            // fio: `runtime=0` sets no limit (and `time_based` then has none to run for,
            // which is refused); any other runtime is at least 1 ms here.
            let ns = parse_time(need(o)?, 1_000_000_000)?;
            c.runtime_ms = (ns > 0).then(|| (ns / 1_000_000).max(1));
            "runtime_ms"
        }
        "ramp_time" => {
            c.ramp_ms = parse_time(need(o)?, 1_000_000_000)? / 1_000_000;
            "ramp_ms"
        }
        "time_based" => {
            c.time_based = flag(o)?;
            "time_based"
        }
        "norandommap" => {
            c.norandommap = flag(o)?;
            "norandommap"
        }
        "random_generator" => {
            c.random_generator = match need(o)? {
                "tausworthe" => RandomGenerator::Tausworthe,
                "tausworthe64" => RandomGenerator::Tausworthe64,
                "lfsr" => RandomGenerator::Lfsr,
                v => return Err(format!("{v:?} is not tausworthe, tausworthe64 or lfsr")),
            };
            "random_generator"
        }
        "percentage_random" => {
            let p = int_per_direction(need(o)?, |p| {
                p.parse::<u32>()
                    .ok()
                    .filter(|&n| n <= 100)
                    .ok_or_else(|| format!("{p:?} is not a percentage 0..=100"))
            })?;
            for (d, v) in p.into_iter().enumerate() {
                if let Some(v) = v {
                    c.percentage_random[d] = v;
                }
            }
            "percentage_random"
        }
        "blockalign" | "ba" => {
            let ba = int_per_direction(need(o)?, |p| {
                let b = parse_size(p)?;
                if b == 0 || b % 512 != 0 {
                    return Err(format!("{p:?} is not a positive multiple of 512 bytes"));
                }
                Ok(b)
            })?;
            for (d, v) in ba.into_iter().enumerate() {
                if let Some(v) = v {
                    c.blockalign[d] = v;
                }
            }
            "blockalign"
        }
        "rate_process" => {
            c.rate_process = match need(o)? {
                "linear" => RateProcess::Linear,
                "poisson" => RateProcess::Poisson,
                v => return Err(format!("{v:?} is not linear or poisson")),
            };
            "rate_process"
        }
        "zonemode" => {
            c.zonemode = match need(o)? {
                "none" => ZoneMode::None,
                "strided" => ZoneMode::Strided,
                "zbd" => {
                    return Err(
                        "`zbd` (zoned block devices: write pointers, open zones) is not \
                                modelled by elevator; `none` and `strided` are"
                            .into(),
                    )
                }
                v => return Err(format!("{v:?} is not none, strided or zbd")),
            };
            "zonemode"
        }
        "zonesize" | "zonerange" | "zoneskip" => {
            let v = parse_size(need(o)?)?;
            match o.key {
                "zonesize" => c.zone_size = v,
                "zonerange" => c.zone_range = v,
                _ => c.zone_skip = v,
            }
            def.lines.insert(
                match o.key {
                    "zonesize" => "zonesize",
                    "zonerange" => "zonerange",
                    _ => "zoneskip",
                },
                o.line,
            );
            return Ok(());
        }
        "random_distribution" => {
            c.random_distribution = RandomDistribution::parse(need(o)?, parse_size)?;
            "random_distribution"
        }
        "randseed" => {
            c.randseed = Some(int(o)?);
            "randseed"
        }
        // fio's default (1) seeds each job's generators the same way every run, as ours
        // always are (from `randseed`, else the run's seed); fio's 0 seeds them from the
        // clock, which a reproducible run does not: both are accepted, runs stay repeatable.
        "randrepeat" => {
            flag(o)?;
            return Ok(());
        }
        "startdelay" => {
            // fio's `irange` in seconds by default: one time, or `min-max`.
            let v = need(o)?;
            let (lo, hi) = v.split_once('-').unwrap_or((v, v));
            let (lo, hi) = (
                parse_time(lo, 1_000_000_000)?,
                parse_time(hi, 1_000_000_000)?,
            );
            if lo > hi {
                return Err(format!("{v:?}: the range's start is after its end"));
            }
            if hi > MAX_START_DELAY_NS {
                return Err(format!(
                    "{v:?} is more than 30 days: a start that far off is no simulated run"
                ));
            }
            def.start_delay = (hi > 0).then_some((lo, hi));
            def.lines.insert("startdelay", o.line);
            return Ok(());
        }
        "stonewall" | "wait_for_previous" => {
            def.stonewall = flag(o)?;
            return Ok(());
        }
        "new_group" => {
            def.new_group = flag(o)?;
            return Ok(());
        }
        "prio" => {
            let p: u8 = int(o)?;
            if p > 7 {
                return Err(format!("{p} is not a level 0..=7"));
            }
            def.prio.level = p;
            def.lines.insert("prio", o.line);
            return Ok(());
        }
        "prioclass" => {
            // fio takes 0..=3; its `ioprio_set` (os/os-linux.h) sets class 0 as best effort.
            def.prio.class = match int::<u8>(o)? {
                1 => IoClass::RealTime,
                0 | 2 => IoClass::BestEffort,
                3 => IoClass::Idle,
                p => {
                    return Err(format!(
                        "{p} is not a class: 0 or 2 (be), 1 (rt) or 3 (idle)"
                    ))
                }
            };
            def.lines.insert("prioclass", o.line);
            return Ok(());
        }
        "elevator_cgroup" | "cgroup" => {
            let v = need(o)?;
            let path = if v.starts_with('/') {
                v.to_string()
            } else {
                format!("/{v}")
            };
            // Checked here, where the line is known (the group tree checks it again).
            elevator_core::group::check_path(&path)?;
            def.cgroup = Some(path);
            return Ok(());
        }
        "elevator_weight" | "cgroup_weight" => {
            let w: u32 = int(o)?;
            if w == 0 {
                return Err("a weight is at least 1".into());
            }
            def.weight = Some(w);
            return Ok(());
        }
        "cpus_allowed" => {
            def.cpus_allowed = Some(cpu_list(need(o)?)?);
            "cpus_allowed"
        }
        "cpus_allowed_policy" => {
            def.cpus_split = match need(o)? {
                "shared" => false,
                "split" => true,
                v => return Err(format!("{v:?} is not a policy: shared or split")),
            };
            return Ok(());
        }
        "group_reporting" | "registerfiles" | "fixedbufs" | "allow_file_create" | "invalidate"
        | "cgroup_nodelete" | "nonvectored" => {
            flag(o)?;
            return Ok(());
        }
        "cmdprio_percentage" | "cmdprio_class" | "cmdprio" => {
            let (lo, hi) = match o.key {
                "cmdprio_percentage" => (0, 100),
                "cmdprio_class" => (1, 3),
                _ => (0, 7),
            };
            let v = two_ints(need(o)?, lo, hi)?;
            let cp = &mut def.cmdprio;
            let key = match o.key {
                "cmdprio_percentage" => {
                    cp.percentage = v;
                    "cmdprio_percentage"
                }
                "cmdprio_class" => {
                    cp.class = v.map(|c| c as u8);
                    "cmdprio_class"
                }
                _ => {
                    cp.level = v.map(|l| l as u8);
                    "cmdprio"
                }
            };
            def.lines.insert(key, o.line);
            return Ok(());
        }
        "cmdprio_bssplit" => {
            def.cmdprio.bssplit = Some(cmdprio_bssplit(need(o)?)?);
            def.lines.insert("cmdprio_bssplit", o.line);
            return Ok(());
        }
        "thread" => {
            def.thread = flag(o)?;
            def.lines.insert("thread", o.line);
            return Ok(());
        }
        "fadvise_hint" => {
            let v = need(o)?;
            if !["0", "1", "random", "sequential", "noreuse"].contains(&v) {
                return Err(format!(
                    "{v:?} is not one of 0, 1, random, sequential, noreuse"
                ));
            }
            return Ok(());
        }
        "flow_id" => {
            int::<i64>(o)?;
            return Ok(());
        }
        "write_iops_log" | "write_lat_log" | "write_bw_log" => {
            need(o)?;
            return Ok(());
        }
        "log_avg_msec" => {
            int::<u64>(o)?;
            return Ok(());
        }
        "elevator_io_max" => {
            def.io.max = elevator_core::group::IoMax::parse(need(o)?)?;
            return Ok(());
        }
        "elevator_io_latency_us" => {
            let us: u64 = int(o)?;
            if us == 0 || us > 86_400_000_000 {
                return Err(format!(
                    "{us} is not a target in 1..=86400000000 microseconds"
                ));
            }
            def.io.latency_target = Some(elevator_core::Nanos::from_us(us));
            return Ok(());
        }
        "elevator_io_weight" => {
            let w: u32 = int(o)?;
            if !(1..=10_000).contains(&w) {
                return Err(format!("{w} is not an io.weight in 1..=10000"));
            }
            def.io.weight = Some(w);
            return Ok(());
        }
        "elevator_io_bfq_weight" => {
            let w: u32 = int(o)?;
            if !(1..=1000).contains(&w) {
                return Err(format!("{w} is not an io.bfq.weight in 1..=1000"));
            }
            def.io.bfq_weight = Some(w);
            return Ok(());
        }
        other => return Err(unsupported(other)),
    };
    def.lines.insert(field, o.line);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(text: &str) -> Result<FioFile, InputError> {
        parse(Path::new("t.fio"), text)
    }

    /// fio's `name=` renames the job its section started; a name two jobs would share, or
    /// one set in [global] for every job, is refused (figures are named by job).
    #[test]
    fn name_renames_its_job_and_stays_unique() {
        let f = p("[a]\nname=reader\n[b]\n").unwrap();
        let names: Vec<&str> = f.jobs.iter().map(|j| j.name.as_str()).collect();
        assert_eq!(names, ["reader", "b"]);
        // The section's own name is free again once renamed.
        assert!(p("[a]\nname=x\n[a]\n").is_ok());
        let e = p("[a]\n[b]\nname=a\n").unwrap_err().to_string();
        assert!(e.contains("t.fio:3") && e.contains("already exists"), "{e}");
        let e = p("[global]\nname=x\n[a]\n").unwrap_err().to_string();
        assert!(e.contains("t.fio:2") && e.contains("[global]"), "{e}");
    }

    /// An error on a config field names the fio option the file wrote, on its line
    /// (`thinktime=999999999999` was told as field `thinktime_us`).
    #[test]
    fn a_jobs_error_names_the_option_as_the_file_wrote_it() {
        let f = p("[r]\nthinktime=5\nruntime=2\nramp_time=1\nsize=5%\n").unwrap();
        for (field, option, line) in [
            ("thinktime_us", "thinktime", 2),
            ("runtime_ms", "runtime", 3),
            ("ramp_ms", "ramp_time", 4),
            ("size_frac", "size", 5),
            ("iodepth", "iodepth", 1),
        ] {
            let e = f.job_error(&f.jobs[0], field, "why");
            assert_eq!(
                (e.field.as_str(), e.line()),
                (option, Some(line)),
                "{field}"
            );
        }
    }

    /// fio's 0 for `rate`, `rate_iops`, `number_ios` and `io_size` is their default (no
    /// limit; `io_size` the region's size), as `fio --cmdhelp` lists them; `randrepeat`
    /// is a flag accepted either way.
    #[test]
    fn zero_is_fios_no_limit_and_randrepeat_is_accepted() {
        let f = p("[j]\nrate=0\nrate_iops=0\nnumber_ios=0\nio_size=0\nrandrepeat=0\n").unwrap();
        let c = &f.jobs[0].config;
        assert_eq!(
            (c.rate, c.rate_iops, c.number_ios, c.io_size),
            (None, None, None, None)
        );
        let f = p("[j]\nrate=1m\nrate_iops=5\nnumber_ios=7\nio_size=8k\nrandrepeat=1\n").unwrap();
        let c = &f.jobs[0].config;
        assert_eq!(
            (c.rate, c.rate_iops, c.number_ios, c.io_size),
            (Some(1 << 20), Some(5), Some(7), Some(8192))
        );
        assert!(p("[j]\nrandrepeat=2\n").is_err());
    }

    /// fio's `get_start_offset`: clone `subjob` starts at `offset + subjob * increment`;
    /// where the offset or the increment is a percentage the start is rounded up to the
    /// block size.
    #[test]
    fn offset_increment_moves_each_clone_as_fios_get_start_offset() {
        let gib = 1u64 << 30;
        let f = p("[j]\nnumjobs=3\noffset=1m\noffset_increment=64m\nsize=16m\n").unwrap();
        let starts: Vec<Option<u64>> = (0..3)
            .map(|k| f.jobs[0].clone_config(k, gib).unwrap().offset)
            .collect();
        assert_eq!(
            starts,
            [
                Some(1 << 20),
                Some((1 << 20) + (64 << 20)),
                Some((1 << 20) + (128 << 20))
            ]
        );
        // 10% of 1 GiB is 107374182.4 bytes: rounded up to the 64 KiB block.
        let f = p("[j]\nnumjobs=2\nbs=64k\noffset_increment=10%\n").unwrap();
        let second = f.jobs[0].clone_config(1, gib).unwrap();
        assert_eq!(second.offset, Some(107_413_504));
        assert_eq!(second.offset_frac, None);
        // Without offset_increment each clone keeps the job's region.
        let f = p("[j]\nnumjobs=2\noffset=10%\n").unwrap();
        assert_eq!(
            f.jobs[0].clone_config(1, gib).unwrap().offset_frac,
            Some(0.1)
        );
        let e = p("[j]\noffset_increment=1000\n").unwrap_err().to_string();
        assert!(e.contains("offset_increment") && e.contains("512"), "{e}");
        let f = p("[j]\nnumjobs=2\noffset=18446744073709547520\noffset_increment=4096\n").unwrap();
        assert!(f.jobs[0].clone_config(0, gib).is_some());
        assert_eq!(f.jobs[0].clone_config(1, gib), None);
    }

    /// `startdelay` in seconds by default, one time or a range; a range backwards is refused
    /// naming the line.
    #[test]
    fn startdelay_is_a_time_or_a_range() {
        let f = p(
            "[a]\nstartdelay=2\n[b]\nstartdelay=1-3\n[c]\nstartdelay=500ms\n[d]\nstartdelay=0\n",
        )
        .unwrap();
        let d: Vec<Option<(u64, u64)>> = f.jobs.iter().map(|j| j.start_delay).collect();
        let s = 1_000_000_000;
        assert_eq!(
            d,
            [
                Some((2 * s, 2 * s)),
                Some((s, 3 * s)),
                Some((s / 2, s / 2)),
                None
            ]
        );
        let e = p("[j]\nstartdelay=3-1\n").unwrap_err();
        assert_eq!(
            (e.field.as_str(), e.at),
            ("startdelay", Some(crate::input::Position::Line(2)))
        );
    }

    /// fio's `rw` postfix: a sequential job's skip (`read:8k`, backwards `write:-8k`), a
    /// random job's I/Os per random offset (`randread:4`); `rw_sequencer`.
    #[test]
    fn rw_postfixes_and_rw_sequencer_are_read_as_fio_reads_them() {
        let f =
            p("[a]\nrw=read:8k\n[b]\nrw=write:-8k\n[c]\nrw=randread:4\nrw_sequencer=identical\n")
                .unwrap();
        assert_eq!(f.jobs[0].config.rw_skip, 8192);
        assert_eq!(
            (f.jobs[1].config.rw, f.jobs[1].config.rw_skip),
            (RwMode::Write, -8192)
        );
        let c = &f.jobs[2].config;
        assert_eq!(
            (c.rw, c.rand_seq_nr, c.rw_sequencer),
            (RwMode::RandRead, 4, RwSequencer::Identical)
        );
        for text in [
            "[j]\nrw=randread:0\n",
            "[j]\nrw=read:far\n",
            "[j]\nrw=read\nrw_sequencer=odd\n",
        ] {
            let e = p(text).unwrap_err();
            assert!(e.field == "rw" || e.field == "rw_sequencer", "{e}");
        }
    }

    /// `bssplit` and `bsrange` (`blocksize_range`) as fio writes them: one value for both
    /// directions or `reads,writes` (a third part, trims', read and left out; an empty part
    /// leaves its direction at `bs`), a share left out as 0, errors naming the option.
    #[test]
    fn bssplit_and_bsrange_are_read_per_direction() {
        let f = p("[a]\nbssplit=4k/10:64k/50:32k\n[b]\nbssplit=,16k/100\n\
                   [c]\nblocksize_range=4k-64k,8k:16k\n[d]\nbssplit=4k/20:8k/80,64k,1m\n")
        .unwrap();
        let split = |v: &[(u64, u32)]| Some(SizeMix::Split(v.to_vec()));
        let a = &f.jobs[0].config.block_sizes;
        assert_eq!(a.read, split(&[(4096, 10), (65536, 50), (32768, 0)]));
        assert_eq!(a.write, a.read);
        let b = &f.jobs[1].config.block_sizes;
        assert_eq!(
            (b.read.clone(), b.write.clone()),
            (None, split(&[(16384, 100)]))
        );
        let c = &f.jobs[2].config.block_sizes;
        assert_eq!(
            (c.read.clone(), c.write.clone()),
            (
                Some(SizeMix::Range {
                    min: 4096,
                    max: 65536
                }),
                Some(SizeMix::Range {
                    min: 8192,
                    max: 16384
                })
            )
        );
        assert_eq!(f.jobs[3].config.block_sizes.write, split(&[(65536, 0)]));
        assert_eq!(f.jobs[2].line_of("bsrange"), 6);
        for (text, field) in [
            ("[j]\nbssplit=4k/half\n", "bssplit"),
            ("[j]\nbsrange=4k\n", "bsrange"),
            ("[j]\nbsrange=4k-lots\n", "bsrange"),
        ] {
            let e = p(text).unwrap_err();
            assert_eq!(e.field, field, "{e}");
            assert_eq!(e.at, Some(crate::input::Position::Line(2)), "{e}");
        }
    }

    /// fio's batch and low-water options under both of their names, each error naming the
    /// option as written in the file's line.
    #[test]
    fn batch_and_low_water_options_are_read_under_fios_names() {
        let f = p("[a]\niodepth=32\niodepth_batch_submit=8\niodepth_low=4\n\
                   iodepth_batch_complete_min=2\niodepth_batch_complete_max=16\n\
                   [b]\niodepth=16\niodepth_batch=0\niodepth_batch_complete=4\n")
        .unwrap();
        let (a, b) = (&f.jobs[0].config, &f.jobs[1].config);
        assert_eq!(
            (
                a.iodepth_batch_submit,
                a.iodepth_low,
                a.iodepth_batch_complete_min,
                a.iodepth_batch_complete_max
            ),
            (8, 4, 2, 16)
        );
        assert_eq!(
            (b.iodepth_batch_submit, b.iodepth_batch_complete_min),
            (0, 4)
        );
        assert_eq!(f.jobs[0].line_of("iodepth_low"), 4);
        let e = p("[j]\niodepth_batch=lots\n").unwrap_err().to_string();
        assert!(e.contains("t.fio:2: field `iodepth_batch`"), "{e}");
    }

    #[test]
    fn globals_apply_to_following_jobs_and_jobs_override_them() {
        let f = p("; a comment\n[global]\nbs=64k\ndirect=1\nioengine=io_uring\n\n# another\n\
                   [writer]\nrw=write\nbs=1m\niodepth=32\nsize=1g\n\
                   [reader]\nrw=randread\nioengine=psync\niodepth=8\nthinktime=2ms\nruntime=10\ntime_based\nramp_time=1500ms\n")
            .unwrap();
        let (w, r) = (&f.jobs[0], &f.jobs[1]);
        assert_eq!((w.name.as_str(), w.line), ("writer", 8));
        assert_eq!(w.config.rw, RwMode::Write);
        assert_eq!(w.config.bs, 1 << 20);
        assert_eq!(w.config.size, Some(1 << 30));
        assert_eq!(w.config.iodepth, 32);
        assert!(w.config.direct);
        assert_eq!(r.config.bs, 64 << 10);
        assert_eq!(r.engine, Engine::Sync);
        assert_eq!(r.config.iodepth, 1, "psync is one request at a time");
        assert_eq!(r.config.thinktime_us, 2000);
        assert_eq!(r.config.runtime_ms, Some(10_000));
        assert_eq!(r.config.ramp_ms, 1500);
        assert_eq!(w.config.ramp_ms, 0);
        assert!(r.config.time_based);
        assert_eq!(r.line_of("thinktime_us"), 17);
    }

    #[test]
    fn every_listed_option_is_read_and_an_unknown_one_is_answered_with_the_nearest_or_the_list() {
        for key in OPTIONS.iter().chain(ALIASES) {
            // The value may be wrong for the option; the option itself must be one we read.
            if let Err(e) = p(&format!("[j]\n{key}=1\n")) {
                assert!(
                    !e.message.contains("not supported by elevator"),
                    "{key}: {e}"
                );
            }
        }
        assert!(p("[j]\nblocksze=4k\n")
            .unwrap_err()
            .message
            .ends_with("`blocksize`?)"));
        let e = p("[j]\nrw=read\niodeph=4\n").unwrap_err();
        assert_eq!(
            (e.at, e.field.as_str()),
            (Some(crate::input::Position::Line(3)), "iodeph")
        );
        assert!(e.message.ends_with("(did you mean `iodepth`?)"), "{e}");
        let e = p("[j]\nzonemode=zbd\n").unwrap_err();
        assert!(e.message.contains("not modelled"), "{e}");
        let e = p("[j]\nexitall\n").unwrap_err();
        assert!(
            e.message
                .contains("read: rw, rwmixread, rwmixwrite, rw_sequencer, bs"),
            "{e}"
        );
        assert!(e.message.contains("elevator_io_bfq_weight"), "{e}");
    }

    #[test]
    fn a_later_global_section_applies_only_to_later_jobs() {
        let f = p("[a]\n[global]\nbs=8k\n[b]\n").unwrap();
        assert_eq!(f.jobs[0].config.bs, 4096);
        assert_eq!(f.jobs[1].config.bs, 8192);
    }

    #[test]
    fn sizes_use_base_1024_and_percentages_become_fractions() {
        assert_eq!(parse_size("4k"), Ok(4096));
        assert_eq!(parse_size("1M"), Ok(1 << 20));
        // fio's default kb_base=1024 reads the IEC spellings as powers of 1000.
        assert_eq!(parse_size("2GiB"), Ok(2_000_000_000));
        assert_eq!(parse_size("4KiB"), Ok(4000));
        assert_eq!(parse_size("4KB"), Ok(4096));
        assert!(parse_size("4q").is_err());
        let f = p("[j]\nsize=50%\noffset=25%\n").unwrap();
        assert_eq!(f.jobs[0].config.size_frac, Some(0.5));
        assert_eq!(f.jobs[0].config.offset_frac, Some(0.25));
    }

    #[test]
    fn times_take_fio_units() {
        assert_eq!(parse_time("100", 1_000), Ok(100_000));
        assert_eq!(parse_time("5ms", 1_000), Ok(5_000_000));
        assert_eq!(parse_time("2m", 1_000_000_000), Ok(120_000_000_000));
    }

    #[test]
    fn every_supported_option_is_applied() {
        let f = p(
            "[j]\nrw=randrw\nrwmixwrite=30\nnumjobs=4\nrate=10m\nrate_iops=500\n\
                   thinktime_blocks=4\nstonewall\nnew_group\nprio=2\nprioclass=1\n\
                   elevator_cgroup=/fast\nelevator_weight=300\nfilename=/dev/loop0\n\
                   io_size=8m\nnumber_ios=100\nnorandommap\nrandseed=9\n\
                   random_distribution=zipf:1.2\nrandom_generator=lfsr\n\
                   percentage_random=30,70\nblockalign=512\nrate_process=poisson\n",
        )
        .unwrap();
        let j = &f.jobs[0];
        assert_eq!(j.config.rwmixread, 70);
        assert_eq!(j.numjobs, 4);
        assert_eq!(j.config.rate, Some(10 << 20));
        assert_eq!(j.config.rate_iops, Some(500));
        assert_eq!(j.config.thinktime_blocks, 4);
        assert!(j.stonewall && j.new_group);
        assert_eq!(
            j.prio,
            IoPrio {
                class: IoClass::RealTime,
                level: 2
            }
        );
        assert_eq!(j.cgroup.as_deref(), Some("/fast"));
        assert_eq!(j.weight, Some(300));
        assert_eq!(j.filenames, ["/dev/loop0"]);
        assert_eq!(j.config.io_size, Some(8 << 20));
        assert_eq!(j.config.number_ios, Some(100));
        assert!(j.config.norandommap);
        assert_eq!(j.config.randseed, Some(9));
        assert_eq!(
            j.config.random_distribution,
            RandomDistribution::Zipf {
                theta: 1.2,
                center: None
            }
        );
        assert_eq!(j.config.random_generator, RandomGenerator::Lfsr);
        assert_eq!(j.config.percentage_random, [30, 70]);
        assert_eq!(j.config.blockalign, [512, 512]);
        assert_eq!(j.config.rate_process, RateProcess::Poisson);
        // fio's `zonemode` defaults to `none` (its option's `.def`), so a zonesize alone is
        // not strided: the job is refused when it is built (`fixup_options`: "--zonemode=none
        // and --zonesize are not compatible"), naming the zonesize's line.
        let f = p(
            "[a]\nzonemode=strided\nzonesize=64k\nzonerange=1m\nzoneskip=960k\n[b]\n\
                   zonemode=strided\nzonesize=1m\n[c]\nzonemode=none\n[d]\nrw=randread\n\
                   size=1m\nzonesize=64k\n",
        )
        .unwrap();
        let c = &f.jobs[0].config;
        assert_eq!(
            (c.zonemode, c.zone_size, c.zone_range, c.zone_skip),
            (ZoneMode::Strided, 65536, 1 << 20, 960 << 10)
        );
        assert_eq!(f.jobs[1].config.zonemode, ZoneMode::Strided);
        assert_eq!(f.jobs[2].config.zonemode, ZoneMode::None);
        assert_eq!(f.jobs[0].line_of("zonerange"), 4);
        let d = &f.jobs[3];
        assert_eq!(d.config.zonemode, ZoneMode::None);
        let env = crate::BuildEnv::new(1 << 21, 1, "d");
        let e = crate::jobs::FioJob::new(d.config.clone(), &env).unwrap_err();
        assert_eq!(
            (e.field, d.line_of(e.field)),
            ("zonesize", 14),
            "{}",
            e.reason
        );
        // fio's `ba` names `blockalign`; reads then writes, an empty part left as it was.
        let f = p("[j]\nba=8k,1k\npercentage_random=40\n[k]\nba=,4k\n").unwrap();
        assert_eq!(f.jobs[0].config.blockalign, [8192, 1024]);
        assert_eq!(f.jobs[0].config.percentage_random, [40, 40]);
        assert_eq!(f.jobs[1].config.blockalign, [0, 4096]);
        // fio's relative cgroup names are under the root.
        assert_eq!(
            p("[j]\ncgroup=a\n").unwrap().jobs[0].cgroup.as_deref(),
            Some("/a")
        );
    }

    #[test]
    fn cpus_allowed_takes_fios_lists_and_split_gives_each_job_one_cpu() {
        // fio's HOWTO example: CPUs 0, 5 and 8 to 15.
        let f = p("[j]\ncpus_allowed=0,5,8-15\n").unwrap();
        let want: Vec<u32> = [0, 5].into_iter().chain(8..=15).collect();
        assert_eq!(f.jobs[0].cpus_allowed.as_deref(), Some(&want[..]));
        assert_eq!(f.jobs[0].line_of("cpus_allowed"), 2);
        // The ICPE'24 study's kyber runs: the reader on CPU 1, the writer on CPU 2.
        let f = p("[r]\ncpus_allowed=1\n[w]\ncpus_allowed=2\n[free]\n").unwrap();
        assert_eq!(
            f.clone_cpus(),
            [Some(vec![1]), Some(vec![2]), None],
            "one entry per job, None where not pinned"
        );
        // shared (default): every clone gets the whole set.
        let f = p("[j]\nnumjobs=2\ncpus_allowed=2-3\n").unwrap();
        assert_eq!(f.clone_cpus(), [Some(vec![2, 3]), Some(vec![2, 3])]);
        // split: fio_cpus_split(mask, thread_number - 1) keeps the (n mod |set|)th CPU of the
        // set, n counting every job of the file before it (here the unpinned one first).
        let f = p("[a]\n[j]\nnumjobs=4\ncpus_allowed=4,6-7\ncpus_allowed_policy=split\n").unwrap();
        assert_eq!(
            f.clone_cpus(),
            [
                None,
                Some(vec![6]),
                Some(vec![7]),
                Some(vec![4]),
                Some(vec![6])
            ]
        );
    }

    #[test]
    fn the_icpe24_studys_reporting_and_io_uring_options_are_accepted() {
        // The study's fio command lines carry these; none changes what a job issues.
        let f = p(
            "[global]\ngroup_reporting=1\nregisterfiles=1\nfixedbufs=1\n\
                   allow_file_create=0\nwrite_iops_log=iops\nwrite_lat_log=lat\n\
                   log_avg_msec=1000\n[j]\nrw=randread\n",
        )
        .unwrap();
        assert_eq!(f.jobs[0].config.rw, RwMode::RandRead);
        let e = p("[j]\nlog_avg_msec=often\n").unwrap_err();
        assert_eq!((e.line(), e.field.as_str()), (Some(2), "log_avg_msec"));
    }

    /// Options that change nothing elevator models are accepted (each with its reason in the
    /// module's table); `flow` and `exitall` stay refused; `thread` with a `cgroup` is
    /// refused, as fio's cgroup v2 write of a thread id moves its whole process.
    #[test]
    fn options_that_change_nothing_modelled_are_accepted_and_the_rest_refused() {
        let f = p(
            "[global]\ncgroup_nodelete=1\nthread\nnonvectored=1\nfadvise_hint=random\n\
                   flow_id=3\n[a]\nrw=randread\n[b]\nfadvise_hint=0\nthread=0\n",
        )
        .unwrap();
        assert!(f.jobs[0].thread && !f.jobs[1].thread);
        assert_eq!(f.jobs[0].config.rw, RwMode::RandRead);
        for (text, field) in [
            ("[j]\nfadvise_hint=often\n", "fadvise_hint"),
            ("[j]\nflow_id=one\n", "flow_id"),
            ("[j]\nflow_id=1\nflow=3\n", "flow"),
            ("[j]\nexitall=1\n", "exitall"),
        ] {
            let e = p(text).unwrap_err();
            assert_eq!(e.field, field, "{text}: {e}");
        }
        let e = p("[j]\nthread=1\ncgroup=/a\n").unwrap_err();
        assert_eq!((e.line(), e.field.as_str()), (Some(2), "thread"), "{e}");
        assert!(e.message.contains("cgroup.procs"), "{e}");
    }

    /// fio's synchronous engines are one request at a time: `vsync` where each I/O is
    /// submitted alone (`td_io_queue` commits after `iodepth_batch_submit` queued, default 1),
    /// `pvsync2`, and `posixaio` (glibc's aio serves one descriptor's requests in turn).
    /// `vsync` with larger batches joins contiguous I/Os (`fio_vsyncio_queue`): refused.
    #[test]
    fn vsync_pvsync2_and_posixaio_run_one_request_at_a_time() {
        let f = p(
            "[a]\nioengine=vsync\niodepth=8\n[b]\nioengine=posixaio\niodepth=8\n\
                   [c]\nioengine=pvsync2\n",
        )
        .unwrap();
        for j in &f.jobs {
            assert_eq!(
                (j.engine, j.config.iodepth),
                (Engine::Sync, 1),
                "{}",
                j.name
            );
        }
        assert_eq!(f.jobs[0].ioengine.as_deref(), Some("vsync"));
        for text in [
            "[j]\nioengine=vsync\niodepth=8\niodepth_batch_submit=4\n",
            "[j]\niodepth=4\niodepth_batch=0\nioengine=vsync\n",
        ] {
            let e = p(text).unwrap_err();
            assert_eq!(e.field, "ioengine", "{text}: {e}");
            assert!(e.message.contains("readv/writev"), "{e}");
        }
        // One I/O deep, a batch is one I/O whatever it is set to.
        assert!(p("[j]\nioengine=vsync\niodepth_batch_submit=4\n").is_ok());
    }

    /// fio's cmdprio options (engines/cmdprio.h, options.c `parse_cmdprio_bssplit_entry`):
    /// one value for both directions or `reads,writes`, a class default rt, entries' values
    /// clamped; refused with an engine other than io_uring and libaio, with both modes, or
    /// with a size's shares past 100%, each naming its line.
    #[test]
    fn cmdprio_options_are_read_as_fios_engines_read_them() {
        use crate::jobs::cmdprio::{CmdPrioShare, CmdPrioSplit};
        let sh = |percent, class, level| CmdPrioShare {
            percent,
            class,
            level,
        };
        let f = p(
            "[global]\nioengine=io_uring\n[a]\ncmdprio_percentage=30,60\n\
                   cmdprio_class=3\ncmdprio=7,2\n[b]\nioengine=libaio\n\
                   cmdprio_bssplit=4k/100/1/2:64k/200/9/9:8k/0:16k/40,8k/10\ncmdprio_class=2\n",
        )
        .unwrap();
        let a = &f.jobs[0].config.cmdprio;
        let one = |bs, shares| vec![CmdPrioSplit { bs, shares }];
        assert_eq!(a.read, one(None, vec![sh(30, 3, 7)]));
        assert_eq!(a.write, one(None, vec![sh(60, 3, 2)]));
        let b = &f.jobs[1].config.cmdprio;
        let want: Vec<(Option<u64>, Vec<CmdPrioShare>)> = vec![
            (Some(4096), vec![sh(100, 1, 2)]),
            (Some(16384), vec![sh(40, 2, 0)]),
            (Some(65536), vec![sh(100, 3, 7)]),
        ];
        let got: Vec<_> = b.read.iter().map(|s| (s.bs, s.shares.clone())).collect();
        assert_eq!(got, want);
        assert_eq!(b.write, one(Some(8192), vec![sh(10, 2, 0)]));
        for (text, line, field, why) in [
            (
                "[j]\nioengine=psync\ncmdprio_percentage=10\n",
                3,
                "cmdprio_percentage",
                "io_uring",
            ),
            (
                "[j]\ncmdprio_percentage=10\n",
                2,
                "cmdprio_percentage",
                "io_uring",
            ),
            (
                "[j]\nioengine=libaio\ncmdprio_percentage=10\ncmdprio_bssplit=4k/10\n",
                4,
                "cmdprio_bssplit",
                "exclusive",
            ),
            (
                "[j]\nioengine=libaio\ncmdprio_bssplit=4k/60:4k/50\n",
                3,
                "cmdprio_bssplit",
                "110%",
            ),
            (
                "[j]\ncmdprio_percentage=101\n",
                2,
                "cmdprio_percentage",
                "0..=100",
            ),
            ("[j]\ncmdprio_class=0\n", 2, "cmdprio_class", "1..=3"),
            ("[j]\ncmdprio=8\n", 2, "cmdprio", "0..=7"),
            (
                "[j]\ncmdprio_bssplit=4k/10/1\n",
                2,
                "cmdprio_bssplit",
                "bs/percent",
            ),
            (
                "[j]\ncmdprio_bssplit=4k/10/1/0/3\n",
                2,
                "cmdprio_bssplit",
                "hint",
            ),
        ] {
            let e = p(text).unwrap_err();
            assert_eq!(
                (e.line(), e.field.as_str()),
                (Some(line), field),
                "{text}: {e}"
            );
            assert!(e.message.contains(why), "{text}: {e}");
        }
    }

    /// fio's trim modes, their sizes from `bssplit`/`bsrange`'s third part (else the
    /// writes', else the one value: `str_split_parse`), and a trimwrite whose trims and
    /// writes differ in size refused.
    #[test]
    fn trim_modes_take_their_sizes_as_fios_str_split_parse_gives_them() {
        let f = p(
            "[a]\nrw=trim\nbssplit=4k/100,8k/100,64k/100\n[b]\nrw=randtrim\n\
                   bsrange=4k-8k,16k-32k\n[c]\nbssplit=16k/100\nrw=randtrimwrite\n\
                   [d]\nrw=trimwrite\nbs=8k\n",
        )
        .unwrap();
        let split = |bs| Some(SizeMix::Split(vec![(bs, 100)]));
        let sizes: Vec<_> = f
            .jobs
            .iter()
            .map(|j| j.config.block_sizes.clone())
            .collect();
        assert_eq!(
            sizes[0],
            BlockSizes {
                read: None,
                write: split(65536)
            }
        );
        assert_eq!(
            sizes[1].write,
            Some(SizeMix::Range {
                min: 16384,
                max: 32768
            })
        );
        assert_eq!(
            sizes[2],
            BlockSizes {
                read: None,
                write: split(16384)
            }
        );
        assert_eq!(
            (f.jobs[3].config.rw, f.jobs[3].config.bs),
            (RwMode::TrimWrite, 8192)
        );
        let e = p("[j]\nrw=trimwrite\nbssplit=4k/100,4k/100,8k/100\n").unwrap_err();
        assert_eq!((e.line(), e.field.as_str()), (Some(3), "bssplit"), "{e}");
        let e = p("[j]\nrw=sidetrim\n").unwrap_err();
        assert!(e.message.contains("randtrimwrite"), "{e}");
    }

    /// fio's `sync` (options.c): none / 0, sync / 1 (O_SYNC), dsync (O_DSYNC); buffered and
    /// more than one deep the job is refused when built, naming the `sync` line.
    #[test]
    fn sync_reads_fios_values_and_buffered_needs_one_deep() {
        let f = p(
            "[a]\nsync=1\ndirect=1\n[b]\nsync=dsync\niodepth=2\n[c]\nsync=none\n\
                   [d]\nsync=sync\n",
        )
        .unwrap();
        let got: Vec<SyncIo> = f.jobs.iter().map(|j| j.config.sync_io).collect();
        assert_eq!(
            got,
            [SyncIo::Sync, SyncIo::Dsync, SyncIo::None, SyncIo::Sync]
        );
        let env = crate::BuildEnv::new(1 << 21, 1, "b".to_string());
        let e = crate::jobs::FioJob::new(f.jobs[1].config.clone(), &env).unwrap_err();
        assert_eq!(e.field, "sync_io");
        let e = f.job_error(&f.jobs[1], e.field, e.reason);
        assert_eq!((e.line(), e.field.as_str()), (Some(5), "sync"), "{e}");
        assert!(crate::jobs::FioJob::new(f.jobs[0].config.clone(), &env).is_ok());
        assert!(crate::jobs::FioJob::new(f.jobs[3].config.clone(), &env).is_ok());
        let e = p("[j]\nsync=often\n").unwrap_err();
        assert_eq!((e.line(), e.field.as_str()), (Some(2), "sync"));
    }

    #[test]
    fn bad_cpu_lists_name_their_line() {
        for (text, field) in [
            ("[j]\ncpus_allowed=a\n", "cpus_allowed"),
            ("[j]\ncpus_allowed=3-1\n", "cpus_allowed"),
            ("[j]\ncpus_allowed=0,\n", "cpus_allowed"),
            ("[j]\ncpus_allowed=99999\n", "cpus_allowed"),
            ("[j]\ncpus_allowed_policy=both\n", "cpus_allowed_policy"),
        ] {
            let e = p(text).unwrap_err();
            assert_eq!((e.line(), e.field.as_str()), (Some(2), field), "{text}");
        }
    }

    #[test]
    fn an_unsupported_option_names_file_line_and_option() {
        let e = p("[global]\nbs=4k\n\n[j]\nrw=read\nverify=md5\n").unwrap_err();
        assert_eq!((e.line(), e.field.as_str()), (Some(6), "verify"));
        let msg = e.to_string();
        assert!(msg.starts_with("t.fio:6: field `verify`:"), "{msg}");
        assert!(msg.contains("not supported"), "{msg}");
    }

    /// fio's `ioprio_set` (os/os-linux.h) sets class 0 as best effort, and fio calls it once
    /// `prio` or `prioclass` is given, the other at its option default (`prio` has none: 0);
    /// a job with neither keeps the kernel's default (`IOPRIO_DEFAULT`: best effort 4).
    #[test]
    fn a_class_alone_is_level_0_and_class_0_is_best_effort_as_fio_sets_them() {
        let prios = |text: &str| -> Vec<(IoClass, u8)> {
            let f = parse(Path::new("t.fio"), text).unwrap();
            f.jobs
                .iter()
                .map(|j| (j.prio.class, j.prio.level))
                .collect()
        };
        let (rt, be, idle) = (IoClass::RealTime, IoClass::BestEffort, IoClass::Idle);
        let global =
            "[global]\nprio=6\n[a]\nprioclass=1\n[b]\nprioclass=0\n[c]\n[d]\nprioclass=3\n";
        assert_eq!(prios(global), [(rt, 6), (be, 6), (be, 6), (idle, 6)]);
        let own = "[a]\nprioclass=1\n[b]\nprioclass=0\n[c]\n[d]\nprio=2\n";
        assert_eq!(prios(own), [(rt, 0), (be, 0), (be, 4), (be, 2)]);
    }

    #[test]
    fn bad_values_name_their_line() {
        let cases = [
            ("[j]\nrw=sideways\n", 2, "rw"),
            ("[j]\n\nbs=4x\n", 3, "bs"),
            ("[j]\niodepth=many\n", 2, "iodepth"),
            ("[j]\nioengine=mmap\n", 2, "ioengine"),
            ("[j]\nprio=9\n", 2, "prio"),
            ("[j]\nprioclass=4\n", 2, "prioclass"),
            ("[j]\nnumjobs=0\n", 2, "numjobs"),
            ("[j]\nsize=120%\n", 2, "size"),
            ("[j]\nbs=4k,64k\n", 2, "bs"),
            ("[j]\ndirect=yes\n", 2, "direct"),
            ("[j]\nrwmixread=101\n", 2, "rwmixread"),
            ("[j]\nrate\n", 2, "rate"),
            (
                "[j]\nrandom_distribution=zipf:1\n",
                2,
                "random_distribution",
            ),
            (
                "[j]\nrandom_distribution=zoned:50/10\n",
                2,
                "random_distribution",
            ),
            ("[j]\nrandom_generator=mt\n", 2, "random_generator"),
            ("[j]\npercentage_random=101\n", 2, "percentage_random"),
            ("[j]\nblockalign=100\n", 2, "blockalign"),
            ("[j]\nba=4k,4k,4k,4k\n", 2, "ba"),
            ("[j]\nrate_process=bursty\n", 2, "rate_process"),
            ("[j]\nzonemode=zbd\n", 2, "zonemode"),
            ("[j]\nzoneskip=2z\n", 2, "zoneskip"),
            ("bs=4k\n", 1, "bs"),
            ("[j\n", 1, "[j"),
            ("[j]\n[j]\n", 2, "j"),
        ];
        for (text, line, option) in cases {
            let e = p(text).unwrap_err();
            assert_eq!(
                (e.line(), e.field.as_str()),
                (Some(line), option),
                "{text:?}: {e}"
            );
        }
        assert!(p("; nothing\n").unwrap_err().message.contains("no job"));
    }
}
