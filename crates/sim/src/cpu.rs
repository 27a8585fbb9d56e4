//! The host's processors on the submission path: what an I/O costs the CPU before it reaches
//! the scheduler, and what a scheduler that serialises its work under one lock per device
//! costs when several cores submit at once.
//!
//! Our own model (no simulator we know of has one), made for the ICPE'24 study "BFQ,
//! Multiqueue-Deadline, or Kyber?" (fig. 7: 1..15 processes of 4 KiB random reads at QD 128
//! on 10 cores; the measured per-job CPU use shows one process saturating a core, and bfq's and
//! mq-deadline's processes spending most of it in the kernel as processes are added). It
//! follows the shape of Linux 6.3's blk-mq submission path, not its code:
//!
//! - A host has `cores` cores; context `c` (a process, in the order the engine first sees
//!   them) runs on core `c mod cores`; processes sharing a core take turns on it.
//! - Every I/O costs its core `io_us`: the work outside any device-wide lock (the system call,
//!   the block layer, the driver, the completion's reaping). With `io_uring` and one NVMe queue
//!   pair per core, this is what limits one process.
//! - A scheduler that does its insert and dispatch under one lock per device (`lock_us` > 0)
//!   then holds that lock for `lock_us` per I/O, plus `handoff_us` when the previous holder
//!   was another core: the lock's cache line and the queue state it guards come from that
//!   core's cache, so a lock passed between cores is held longer than one a single process
//!   takes again and again. A core waiting for the lock spins: the wait costs it as much as the
//!   work. The lock goes to the core that wants it first (a gap-filling timeline: an I/O issued
//!   later whose core is ready earlier is not put behind one whose core is still busy).
//! - The I/O reaches the scheduler when its core is done with it; the latency a job sees
//!   includes the wait for its core and the lock (fio's `lat`, submission plus completion).
//! - A host with several drives ([`HostCpu::set_drives`], one by default): every process
//!   spreads its I/O evenly over `drives` identical drives (fio's `filename=a:b:...`, as the
//!   study's fig. 10 and fig. 11 ran on eight), and the simulation is one of them. Per I/O on
//!   this drive, the process's core also serves `drives - 1` I/Os on the others, each costing
//!   it what this one did, its wait for this drive's lock included; then it is free. Each
//!   drive has its own lock: this drive's lock sees only this drive's I/Os, from every core.
//!
//! Deviations and simplifications: each I/O's CPU work is charged once, at submission (the
//! completion's share is folded into `io_us` and `lock_us`: a closed-loop workload's
//! throughput does not tell them apart); dispatch from the completion path costs nothing; no
//! interrupts, no scheduler preemption, no migration between cores, no batching of
//! submissions (`io_uring` submits many at once; the fitted costs are per I/O averages).
//! The other drives of a multi-drive host are a mean field, not simulated: they are taken to
//! be in the same state as this one at every moment (symmetric drives, jobs and locks), so an
//! I/O there costs what this one cost, not what that drive's own lock wait would have been;
//! their I/Os are charged after this one's, in one block, where a process interleaves them.
//!
//! Costs are per scheduler, in a host spec (TOML, `kind = "host-cpu"`): a default `io_us`
//! for any scheduler not listed and a `[scheduler.NAME]` table (`io_us`, `lock_us`,
//! `handoff_us`) for those listed. Built in: `icpe24-10core`, fitted to the study's fig. 7
//! (docs/ssd-model.md says what each figure comes from).

use std::collections::BTreeMap;
use std::num::NonZeroU32;
use std::path::Path;

use elevator_core::{registry, CtxId, Nanos};
use serde::{Deserialize, Serialize};

use std::collections::VecDeque;

use elevator_workload::InputError;

use crate::spec_file::{fault, placed, toml_error, BuiltinSpec};

/// A host's processors: how many, and what each scheduler costs them per I/O.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CpuSpec {
    /// Always `"host-cpu"`.
    pub kind: String,
    /// Command-line name.
    pub name: String,
    /// Provenance.
    #[serde(default)]
    pub description: String,
    /// Cores submitting I/O.
    pub cores: u32,
    /// CPU time per I/O, microseconds, under a scheduler the spec does not list.
    pub io_us: f64,
    /// Costs of the schedulers listed, by name (any name `--sched` takes).
    #[serde(default)]
    pub scheduler: BTreeMap<String, SchedulerCost>,
}

/// What one scheduler costs per I/O.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SchedulerCost {
    /// CPU time per I/O outside the device-wide lock, microseconds.
    pub io_us: f64,
    /// Time the device-wide lock is held per I/O, microseconds; 0: no such lock.
    #[serde(default)]
    pub lock_us: f64,
    /// Added to `lock_us` when the previous holder ran on another core, microseconds.
    #[serde(default)]
    pub handoff_us: f64,
}

const BUILTINS: &[(&str, &str)] = &[("icpe24-10core", include_str!("../hosts/icpe24-10core.toml"))];

impl BuiltinSpec for CpuSpec {
    const WHAT: &'static str = "host";
    const FILES: &'static [(&'static str, &'static str)] = BUILTINS;
    fn parse(text: &str, path: &Path) -> Result<CpuSpec, InputError> {
        CpuSpec::parse(text, path)
    }
}

impl CpuSpec {
    /// Names of the built-in hosts.
    pub fn builtin_names() -> Vec<&'static str> {
        <CpuSpec as BuiltinSpec>::builtin_names()
    }

    /// A built-in host by name (case-insensitive).
    pub fn builtin(name: &str) -> Option<CpuSpec> {
        <CpuSpec as BuiltinSpec>::builtin(name)
    }

    /// A built-in name or, failing that, a TOML file path.
    pub fn resolve(name_or_path: &str) -> Result<CpuSpec, InputError> {
        <CpuSpec as BuiltinSpec>::resolve(name_or_path)
    }

    /// Parses and checks TOML text; `path` names it in errors.
    pub fn parse(text: &str, path: &Path) -> Result<CpuSpec, InputError> {
        let spec: CpuSpec = toml::from_str(text).map_err(|e| toml_error(&e, text, path))?;
        spec.validate().map_err(|e| placed(e, text, path))?;
        Ok(spec)
    }

    /// Checks every field; the error names the first wrong one and the host (`host NAME`),
    /// not yet its file ([`CpuSpec::parse`] places it there).
    fn validate(&self) -> Result<(), InputError> {
        let bad =
            |field: &str, message: &str| Err(fault("host", &self.name, field, message.into()));
        if self.kind != "host-cpu" {
            return bad("kind", "must be \"host-cpu\"");
        }
        if !(1..=4096).contains(&self.cores) {
            return bad("cores", "must be 1 to 4096");
        }
        let time = |field: &str, v: f64| {
            if v.is_finite() && (0.0..=1e6).contains(&v) {
                Ok(())
            } else {
                bad(field, &format!("{v} is not a time of 0 to 1 s (us)"))
            }
        };
        time("io_us", self.io_us)?;
        for (name, c) in &self.scheduler {
            if registry::find(name).is_none() {
                return bad(
                    &format!("scheduler.{name}"),
                    "no such scheduler (elevator list schedulers)",
                );
            }
            time(&format!("scheduler.{name}.io_us"), c.io_us)?;
            time(&format!("scheduler.{name}.lock_us"), c.lock_us)?;
            time(&format!("scheduler.{name}.handoff_us"), c.handoff_us)?;
        }
        Ok(())
    }

    /// The costs of the scheduler named `name` (as `Scheduler::name` gives it, or any alias):
    /// its table, or the default `io_us` with no lock.
    pub fn cost(&self, name: &str) -> SchedulerCost {
        let canonical = |n: &str| registry::find(n).map_or(n.to_string(), |i| i.name.to_string());
        let want = canonical(name);
        self.scheduler
            .iter()
            .find(|(k, _)| canonical(k) == want)
            .map(|(_, c)| *c)
            .unwrap_or(SchedulerCost {
                io_us: self.io_us,
                lock_us: 0.0,
                handoff_us: 0.0,
            })
    }
}

fn us_to_ns(us: f64) -> u64 {
    (us * 1000.0).round() as u64
}

/// The cores and the device-wide lock over a run: when each is next free.
#[derive(Clone, Debug)]
pub struct HostCpu {
    core_free: Vec<Nanos>,
    io_ns: u64,
    lock_ns: u64,
    handoff_ns: u64,
    lock: LockTimeline,
    /// Identical drives each process spreads its I/O over, this one among them.
    drives: u64,
}

impl HostCpu {
    /// Idle cores of `spec` running the scheduler named `scheduler`.
    pub fn new(spec: &CpuSpec, scheduler: &str) -> HostCpu {
        let c = spec.cost(scheduler);
        HostCpu {
            core_free: vec![Nanos::ZERO; spec.cores.max(1) as usize],
            io_ns: us_to_ns(c.io_us),
            lock_ns: us_to_ns(c.lock_us),
            handoff_ns: us_to_ns(c.handoff_us),
            lock: LockTimeline::default(),
            drives: 1,
        }
    }

    /// Every process spreads its I/O evenly over `drives` identical drives, this one among
    /// them (the module's mean field): per I/O here its core serves `drives - 1` more.
    pub fn set_drives(&mut self, drives: NonZeroU32) {
        self.drives = u64::from(drives.get());
    }

    /// The host's cores.
    pub fn cores(&self) -> usize {
        self.core_free.len()
    }

    /// An I/O of context `ctx` issued at `now`: when its core (and the lock) are done with it
    /// and it reaches the scheduler. The core is `ctx mod cores` (an unpinned process).
    pub fn submit(&mut self, ctx: CtxId, now: Nanos) -> Nanos {
        let core = ctx.0 as usize % self.core_free.len();
        self.submit_core(core, now)
    }

    /// As [`HostCpu::submit`], for a process allowed on the cores `cpus` (fio's
    /// `cpus_allowed`; `None` or empty: [`HostCpu::submit`]'s placement): the I/O goes to the
    /// core of the set free first (the lowest-numbered among equals), as the kernel's
    /// scheduler runs a runnable task on an idle CPU of its affinity mask. A job pinned to one
    /// core always uses it, for its submissions and (folded into `io_us`) its completions, as
    /// the NVMe queue pair of that CPU takes its commands and interrupts. A core number the
    /// host does not have wraps round (`cpu mod cores`; `elevator sim` refuses such a file).
    pub fn submit_on(&mut self, ctx: CtxId, cpus: Option<&[u32]>, now: Nanos) -> Nanos {
        let n = self.core_free.len();
        let core = match cpus {
            Some(set) if !set.is_empty() => set
                .iter()
                .map(|&c| c as usize % n)
                .min_by_key(|&c| (self.core_free[c].max(now), c))
                .expect("a set that is not empty"),
            _ => ctx.0 as usize % n,
        };
        self.submit_core(core, now)
    }

    fn submit_core(&mut self, core: usize, now: Nanos) -> Nanos {
        let start = now.max(self.core_free[core]);
        let mut t = start + Nanos(self.io_ns);
        if self.lock_ns > 0 {
            self.lock.forget(now);
            t = self.lock.hold(core, t, self.lock_ns, self.handoff_ns);
        }
        // The same work on each of the other drives, after this one.
        self.core_free[core] = t + Nanos((self.drives - 1) * (t - start).0);
        t
    }
}

/// The device-wide lock: its holds still in the future, in time order, each with its core.
#[derive(Clone, Debug, Default)]
struct LockTimeline {
    holds: VecDeque<(Nanos, Nanos, usize)>,
    /// The core of the last hold forgotten.
    before: Option<usize>,
}

impl LockTimeline {
    /// Forget the holds that ended by `horizon`.
    fn forget(&mut self, horizon: Nanos) {
        while let Some(&(_, end, core)) = self.holds.front() {
            if end > horizon {
                break;
            }
            self.before = Some(core);
            self.holds.pop_front();
        }
    }

    /// `core` takes the lock in the first gap at or after `ready` that fits its hold (`lock`,
    /// plus `handoff` if the hold before it is another core's); returns when it lets go.
    fn hold(&mut self, core: usize, ready: Nanos, lock: u64, handoff: u64) -> Nanos {
        let len = |prev: Option<usize>| {
            lock + if prev.is_some_and(|p| p != core) {
                handoff
            } else {
                0
            }
        };
        let mut at = 0;
        let mut start = ready;
        let mut prev = self.before;
        while at < self.holds.len() {
            let (s, e, c) = self.holds[at];
            if e <= start {
                prev = Some(c);
                at += 1;
                continue;
            }
            if start + Nanos(len(prev)) <= s {
                break;
            }
            start = start.max(e);
            prev = Some(c);
            at += 1;
        }
        let end = start + Nanos(len(prev));
        self.holds.insert(at, (start, end, core));
        end
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> CpuSpec {
        CpuSpec::parse(
            r#"
kind = "host-cpu"
name = "t"
cores = 2
io_us = 1.0
[scheduler.mq-deadline]
io_us = 2.0
lock_us = 1.0
handoff_us = 3.0
[scheduler.kyber]
io_us = 2.0
lock_us = 1.0
"#,
            Path::new("t.toml"),
        )
        .expect("valid")
    }

    #[test]
    fn a_core_serves_its_processes_one_io_at_a_time() {
        let mut cpu = HostCpu::new(&spec(), "none");
        // Contexts 0 and 2 share core 0; context 1 has core 1.
        assert_eq!(cpu.submit(CtxId(0), Nanos(0)), Nanos(1000));
        assert_eq!(cpu.submit(CtxId(2), Nanos(0)), Nanos(2000));
        assert_eq!(cpu.submit(CtxId(1), Nanos(0)), Nanos(1000));
        assert_eq!(cpu.submit(CtxId(1), Nanos(5000)), Nanos(6000));
    }

    #[test]
    fn the_lock_serialises_cores_and_a_handoff_costs_more() {
        let mut cpu = HostCpu::new(&spec(), "mq-deadline");
        // Core 0: 2 us of work, then 1 us under the lock.
        assert_eq!(cpu.submit(CtxId(0), Nanos(0)), Nanos(3000));
        // Core 1 is ready at 2 us, waits for the lock until 3 us, holds it 1 + 3 us.
        assert_eq!(cpu.submit(CtxId(1), Nanos(0)), Nanos(7000));
        // Core 1 again: it held the lock last, no handoff.
        assert_eq!(cpu.submit(CtxId(1), Nanos(7000)), Nanos(10_000));
        // Core 0 after core 1, the lock free: a handoff all the same.
        assert_eq!(cpu.submit(CtxId(0), Nanos(20_000)), Nanos(26_000));
    }

    #[test]
    fn the_lock_goes_to_the_core_ready_first() {
        let mut cpu = HostCpu::new(&spec(), "kyber");
        // Core 1's two I/Os want the lock at 2 and 5 us.
        assert_eq!(cpu.submit(CtxId(1), Nanos(0)), Nanos(3000));
        assert_eq!(cpu.submit(CtxId(1), Nanos(0)), Nanos(6000));
        // Core 0's, issued after them, wants it at 2 us, waits for core 1's first and takes
        // it before core 1's second.
        assert_eq!(cpu.submit(CtxId(0), Nanos(0)), Nanos(4000));
    }

    fn drives(n: u32) -> NonZeroU32 {
        NonZeroU32::new(n).expect("not zero")
    }

    /// I/Os of `ctx` issued back to back from `0` (each when its core could take it): when
    /// the last reaches the scheduler.
    fn back_to_back(cpu: &mut HostCpu, ctx: CtxId, ios: u32) -> Nanos {
        (0..ios).fold(Nanos::ZERO, |_, _| cpu.submit(ctx, Nanos::ZERO))
    }

    #[test]
    fn a_process_over_n_drives_gets_an_nth_of_its_core_on_each() {
        // none: 1 us per I/O. One drive: 100 I/Os in 100 us; eight: each I/O here is followed
        // by seven on the other drives, so this drive gets one every 8 us.
        let mut one = HostCpu::new(&spec(), "none");
        assert_eq!(back_to_back(&mut one, CtxId(0), 100), Nanos(100_000));
        let mut eight = HostCpu::new(&spec(), "none");
        eight.set_drives(drives(8));
        assert_eq!(eight.submit(CtxId(0), Nanos(0)), Nanos(1000));
        assert_eq!(eight.submit(CtxId(0), Nanos(0)), Nanos(9000));
        let mut eight = HostCpu::new(&spec(), "none");
        eight.set_drives(drives(8));
        assert_eq!(back_to_back(&mut eight, CtxId(0), 100), Nanos(793_000));
        // A core idle since its last block of work starts the next at once.
        assert_eq!(eight.submit(CtxId(0), Nanos(2_000_000)), Nanos(2_001_000));
    }

    #[test]
    fn the_other_drives_cost_what_this_one_did_lock_wait_included() {
        // mq-deadline (2 us of work, then 1 us under the lock, 3 more for a handoff) on two
        // drives. Core 0 holds this drive's lock at 2-3 us, then does the same 3 us of work
        // for the other drive (free at 6 us).
        let mut cpu = HostCpu::new(&spec(), "mq-deadline");
        cpu.set_drives(drives(2));
        assert_eq!(cpu.submit(CtxId(0), Nanos(0)), Nanos(3000));
        // Core 1 waits for the lock from 2 to 3 us and holds it 1 + 3 us: 7 us here, 7 more
        // for the other drive, the wait included (free at 14 us).
        assert_eq!(cpu.submit(CtxId(1), Nanos(0)), Nanos(7000));
        // Core 0 from 6 us: 2 us of work, the lock 8-12 us (a handoff from core 1); free at 18.
        assert_eq!(cpu.submit(CtxId(0), Nanos(0)), Nanos(12_000));
        // Core 1 from 14 us: the lock 16-20 us, a handoff from core 0.
        assert_eq!(cpu.submit(CtxId(1), Nanos(0)), Nanos(20_000));
        assert_eq!(cpu.submit(CtxId(0), Nanos(0)), Nanos(18_000 + 6000));
    }

    #[test]
    fn a_pinned_process_uses_its_core_alone_and_a_set_takes_the_core_free_first() {
        // none: 1 us per I/O. Contexts 0 and 1 would get cores 0 and 1 unpinned; pinned both
        // to core 1 (fio cpus_allowed=1) they take turns on it.
        let mut cpu = HostCpu::new(&spec(), "none");
        assert_eq!(cpu.submit_on(CtxId(0), Some(&[1]), Nanos(0)), Nanos(1000));
        assert_eq!(cpu.submit_on(CtxId(1), Some(&[1]), Nanos(0)), Nanos(2000));
        // Core 0 stayed idle: an unpinned context 0 finds it free.
        assert_eq!(cpu.submit_on(CtxId(0), None, Nanos(0)), Nanos(1000));
        // A set of both cores: core 1 is busy until 2 us and core 0 until 1 us, so core 0.
        assert_eq!(
            cpu.submit_on(CtxId(3), Some(&[0, 1]), Nanos(0)),
            Nanos(2000)
        );
        // Now both are free at 2 us: the lower-numbered one.
        assert_eq!(
            cpu.submit_on(CtxId(3), Some(&[1, 0]), Nanos(0)),
            Nanos(3000)
        );
        assert_eq!(cpu.core_free, [Nanos(3000), Nanos(2000)]);
        // A pinned process at QD128 gets one core's rate however many cores are idle:
        // 128 I/Os issued together reach the scheduler 1 us apart.
        let mut cpu = HostCpu::new(&spec(), "none");
        let last = (0..128).fold(Nanos::ZERO, |_, _| {
            cpu.submit_on(CtxId(1), Some(&[0]), Nanos::ZERO)
        });
        assert_eq!(last, Nanos(128_000));
        assert_eq!(cpu.core_free[1], Nanos::ZERO);
    }

    #[test]
    fn aliases_find_their_scheduler_and_others_get_the_default() {
        let s = spec();
        assert_eq!(s.cost("mq-deadline").lock_us, 1.0);
        assert_eq!(s.cost("noop").io_us, 1.0);
        assert_eq!(s.cost("none").lock_us, 0.0);
    }

    #[test]
    fn bad_specs_name_the_field_and_line() {
        let e = CpuSpec::parse(
            "kind = \"host-cpu\"\nname = \"t\"\ncores = 2\nio_us = 1.0\n[scheduler.nosuch]\nio_us = 1.0\n",
            Path::new("h.toml"),
        )
        .unwrap_err();
        assert_eq!(e.field, "scheduler.nosuch");
        let e = CpuSpec::parse(
            "kind = \"host-cpu\"\nname = \"t\"\ncores = 0\nio_us = 1.0\n",
            Path::new("h.toml"),
        )
        .unwrap_err();
        assert_eq!((e.field.as_str(), e.line()), ("cores", Some(3)));
    }

    #[test]
    fn builtin_hosts_parse() {
        let names = CpuSpec::builtin_names();
        assert!(names.contains(&"icpe24-10core"), "{names:?}");
        for n in names {
            assert!(CpuSpec::builtin(n).is_some(), "{n}");
        }
    }

    #[test]
    fn a_time_outside_0_to_1_s_is_refused_by_its_field() {
        let host = |costs: &str| {
            CpuSpec::parse(
                &format!("kind = \"host-cpu\"\nname = \"t\"\ncores = 2\n{costs}"),
                Path::new("h.toml"),
            )
        };
        assert!(host("io_us = 0.0\n").is_ok());
        assert_eq!(host("io_us = -1.0\n").unwrap_err().field, "io_us");
        let e = host("io_us = 1.0\n[scheduler.bfq]\nio_us = 1.0\nlock_us = 2e6\n").unwrap_err();
        assert_eq!(
            (e.field.as_str(), e.line()),
            ("scheduler.bfq.lock_us", Some(7))
        );
        for v in ["nan", "inf"] {
            assert!(host(&format!("io_us = {v}\n")).is_err(), "{v}");
        }
    }

    #[test]
    fn a_scheduler_without_a_lock_takes_no_handoff() {
        // lock_us = 0 means no device-wide lock (the spec's field doc), so a handoff_us with
        // it costs nothing: two cores submitting at once each take only their io_us.
        let spec = CpuSpec::parse(
            "kind = \"host-cpu\"\nname = \"t\"\ncores = 2\nio_us = 1.0\n\
             [scheduler.kyber]\nio_us = 2.0\nhandoff_us = 3.0\n",
            Path::new("h.toml"),
        )
        .expect("valid");
        let mut cpu = HostCpu::new(&spec, "kyber");
        assert_eq!(cpu.submit(CtxId(0), Nanos(0)), Nanos(2000));
        assert_eq!(cpu.submit(CtxId(1), Nanos(0)), Nanos(2000));
        assert_eq!(cpu.submit(CtxId(0), Nanos(2000)), Nanos(4000));
    }

    #[test]
    fn the_lock_forgets_the_holds_that_ended() {
        // A long run keeps only the lock's holds still ahead of the latest submission, not
        // every hold since the start (each submission scans them).
        let mut cpu = HostCpu::new(&spec(), "mq-deadline");
        let mut now = Nanos::ZERO;
        for i in 0..10_000u32 {
            now = cpu.submit(CtxId(i % 4), now);
        }
        assert!(
            cpu.lock.holds.len() <= 4,
            "{} holds kept",
            cpu.lock.holds.len()
        );
    }
}
