//! Shared by the executor's tests: a small job and helpers.

#![allow(dead_code)]

pub mod loopdev;

use elevator_core::{noop::Noop, GroupId, IoPrio, Nanos, Op};
use elevator_real::{ByteRange, RealJob};
use elevator_workload::{Action, IoSpec, Job};

/// Walks `blocks` blocks of `block_sectors` from `first_sector` upward, `depth` at a time.
pub struct Walk {
    pub op: Op,
    pub first_sector: u64,
    pub block_sectors: u32,
    pub blocks: u64,
    pub depth: usize,
    pub issued: u64,
    pub outstanding: usize,
    /// Keep going forever (wrapping) instead of stopping after `blocks`.
    pub forever: bool,
}

impl Walk {
    pub fn new(op: Op, first_sector: u64, blocks: u64, depth: usize) -> Walk {
        Walk {
            op,
            first_sector,
            block_sectors: 8,
            blocks,
            depth,
            issued: 0,
            outstanding: 0,
            forever: false,
        }
    }
}

impl Job for Walk {
    fn name(&self) -> &str {
        "walk"
    }
    fn poll(&mut self, _now: Nanos) -> Action {
        if !self.forever && self.issued >= self.blocks {
            return if self.outstanding == 0 {
                Action::Done
            } else {
                Action::Wait
            };
        }
        if self.outstanding >= self.depth {
            return Action::Wait;
        }
        let b = self.issued % self.blocks;
        self.issued += 1;
        self.outstanding += 1;
        Action::Issue(IoSpec {
            ctx: 0,
            op: self.op,
            sync: true,
            meta: false,
            idle_hint: false,
            sector: self.first_sector + b * u64::from(self.block_sectors),
            sectors: self.block_sectors,
            prio: None,
            tag: b,
        })
    }
    fn complete(&mut self, _tag: u64, _now: Nanos) {
        self.outstanding -= 1;
    }
}

/// A job for `walk`, allowed the region it walks.
pub fn real(name: &str, walk: Walk, phase: u32) -> RealJob {
    let start = walk.first_sector * 512;
    let end = start + walk.blocks * u64::from(walk.block_sectors) * 512;
    real_in(name, walk, phase, ByteRange { start, end })
}

/// A job for `walk` with an explicit region.
pub fn real_in(name: &str, walk: Walk, phase: u32, region: ByteRange) -> RealJob {
    RealJob {
        name: name.to_string(),
        job: Box::new(walk),
        group: GroupId::ROOT,
        group_path: "/".into(),
        prio: IoPrio::default(),
        region,
        phase,
        start_delay: Nanos::ZERO,
        rw_flags: 0,
    }
}

pub fn noop() -> Noop {
    Noop::new()
}

/// 1 MiB, the size of [`fresh_target`]'s file.
pub const MIB: u64 = 1 << 20;

/// A new 1 MiB target file at `path`, opened for writing; `None` (with a notice) where this
/// file system cannot give one (e.g. no O_DIRECT).
pub fn fresh_target(path: &std::path::Path) -> Option<elevator_real::target::Target> {
    let spec = elevator_real::target::OpenSpec {
        writes: true,
        allow_overwrite: false,
        need_bytes: MIB,
        ..elevator_real::target::OpenSpec::default()
    };
    match elevator_real::target::open(path, spec) {
        Ok(t) => Some(t),
        Err(e) => {
            eprintln!("skipping: {e}");
            None
        }
    }
}
