//! foreground-first: two classes, the background one served in the foreground's quiet time,
//! with an aging bound.
//!
//! Not a kernel scheduler: elevator's example of a policy written outside the registry. It
//! follows no kernel version; the nearest kernel idea is CFQ's idle class (served once the
//! other classes have been idle for `CFQ_IDLE_DELAY`, 200 ms), without CFQ's queues, slices
//! or groups, and with a bound on how long a background request waits.
//!
//! - A request is **background** when its I/O priority class is idle (`ionice -c3`, fio's
//!   `prioclass=3`, a scenario job's `prio = "idle"`), **foreground** otherwise.
//! - Each class is served first in, first out.
//! - A foreground request is dispatched before any background request.
//! - A background request is dispatched only when no foreground request is queued or at the
//!   device, and the last foreground completion is at least `quiet_ms` ago: otherwise the
//!   policy keeps the device idle (`Dispatch::Idle`) until then. Unlike CFQ's idle class
//!   (`cfq_may_dispatch`), background requests are not held to one at the device: tried,
//!   it cost the scrubber of docs/extending.md's job 54% of its throughput on the simulated
//!   980 PRO and changed nothing on the laptop drive.
//! - Aging: a background request queued for `max_wait_ms` or more is dispatched next,
//!   ahead of the foreground. So no background request waits much more than `max_wait_ms`
//!   plus the service of the requests at the device when it expires.
//! - Merging: a read or write is merged into one of the last [`MERGE_LOOKBACK`] requests of
//!   its class that it continues (back) or precedes (front), of the same operation, group and
//!   priority, up to the device's limit. Merged requests are not merged further
//!   ([`Scheduler::merge_next`] keeps its default).

use std::collections::VecDeque;

use elevator_core::registry::{Kind, SchedulerInfo};
use elevator_core::tunable::{check_range, lookup, Tunable, Unit};
use elevator_core::{
    Dispatch, IoClass, Nanos, Op, Request, RequestId, Scheduler, Settings, TunableError,
};

/// The name the policy reports.
pub const NAME: &str = "foreground-first";

/// How many of the newest requests of a class a new one may merge into.
pub const MERGE_LOOKBACK: usize = 8;

/// The policy's tunables, in sysfs style: integers in the unit given.
pub const TUNABLES: &[Tunable] = &[
    Tunable {
        name: "quiet_ms",
        unit: Unit::Ms,
        default: 20,
        min: 0,
        max: 60_000,
        doc: "how long after the last foreground completion background requests may go",
    },
    Tunable {
        name: "max_wait_ms",
        unit: Unit::Ms,
        default: 500,
        min: 0,
        max: 600_000,
        doc: "a background request queued this long goes next, ahead of the foreground",
    },
];

/// The policy as the registry describes a scheduler: for the APIs that take a
/// [`SchedulerSpec`](elevator_core::registry::SchedulerSpec) (`INFO.spec()`), such as the
/// FUSE mount's `elevator_mount::mount_spec`. It is not in the registry's list.
pub static INFO: SchedulerInfo = SchedulerInfo {
    name: NAME,
    aliases: &[],
    summary: "elevator's example of an outside policy: idle-class requests in the \
              foreground's quiet time, with an aging bound",
    tunables: TUNABLES,
    kind: Kind::Policy(|settings, _groups| Ok(Box::new(ForegroundFirst::from_settings(settings)?))),
};

/// A request waiting here, with the time it was queued.
#[derive(Clone, Debug)]
struct Queued {
    rq: Request,
    at: Nanos,
}

/// The foreground-first policy (see the module documentation).
#[derive(Clone, Debug)]
pub struct ForegroundFirst {
    quiet: Nanos,
    max_wait: Nanos,
    foreground: VecDeque<Queued>,
    background: VecDeque<Queued>,
    foreground_at_device: usize,
    last_foreground_done: Option<Nanos>,
}

impl Default for ForegroundFirst {
    fn default() -> ForegroundFirst {
        ForegroundFirst::from_settings(&Settings::new()).expect("the defaults are in range")
    }
}

/// Whether `rq` is in the background class.
fn is_background(rq: &Request) -> bool {
    rq.prio.class == IoClass::Idle
}

impl ForegroundFirst {
    /// The policy with every tunable at its default.
    pub fn new() -> ForegroundFirst {
        ForegroundFirst::default()
    }

    /// The policy with `settings` (names from [`TUNABLES`]) over the defaults; an unknown
    /// name or a value out of range is an error naming it.
    pub fn from_settings(settings: &Settings) -> Result<ForegroundFirst, TunableError> {
        settings.validate(NAME, TUNABLES)?;
        let ms = |name| Nanos::from_ms(settings.get(TUNABLES, name) as u64);
        Ok(ForegroundFirst {
            quiet: ms("quiet_ms"),
            max_wait: ms("max_wait_ms"),
            foreground: VecDeque::new(),
            background: VecDeque::new(),
            foreground_at_device: 0,
            last_foreground_done: None,
        })
    }

    /// When the background may go, if the foreground is quiet: `None` while a foreground
    /// request is queued or at the device.
    fn quiet_from(&self) -> Option<Nanos> {
        if !self.foreground.is_empty() || self.foreground_at_device > 0 {
            return None;
        }
        Some(
            self.last_foreground_done
                .map_or(Nanos::ZERO, |t| t + self.quiet),
        )
    }
}

impl Scheduler for ForegroundFirst {
    fn name(&self) -> &'static str {
        NAME
    }

    fn try_merge(&mut self, rq: &Request, max_sectors: u32, _now: Nanos) -> Option<RequestId> {
        if !matches!(rq.op, Op::Read | Op::Write) {
            return None;
        }
        let class = if is_background(rq) {
            &mut self.background
        } else {
            &mut self.foreground
        };
        let q = class
            .iter_mut()
            .rev()
            .take(MERGE_LOOKBACK)
            .map(|q| &mut q.rq)
            .find(|q| {
                q.op == rq.op
                    && q.group == rq.group
                    && q.prio == rq.prio
                    && q.sectors + rq.sectors <= max_sectors
                    && (q.end() == rq.sector || rq.end() == q.sector)
            })?;
        if rq.end() == q.sector {
            q.sector = rq.sector;
        }
        q.sectors += rq.sectors;
        Some(q.id)
    }

    fn insert(&mut self, rq: Request, now: Nanos) {
        let class = if is_background(&rq) {
            &mut self.background
        } else {
            &mut self.foreground
        };
        class.push_back(Queued { rq, at: now });
    }

    fn dispatch(&mut self, now: Nanos) -> Dispatch {
        let expires = self.background.front().map(|q| q.at + self.max_wait);
        let background_goes = match (expires, self.quiet_from()) {
            (None, _) => false,
            (Some(e), _) if e <= now => true,
            (Some(_), Some(quiet)) => quiet <= now,
            (Some(_), None) => false,
        };
        if background_goes {
            let q = self.background.pop_front().expect("a background request");
            return Dispatch::Request(q.rq);
        }
        if let Some(q) = self.foreground.pop_front() {
            self.foreground_at_device += 1;
            return Dispatch::Request(q.rq);
        }
        match (expires, self.quiet_from()) {
            // Background requests wait for the quiet time or their expiry, whichever comes
            // first; a completion before then asks again.
            (Some(e), Some(quiet)) => Dispatch::Idle {
                until: e.min(quiet),
            },
            (Some(e), None) => Dispatch::Idle { until: e },
            (None, _) => Dispatch::Empty,
        }
    }

    fn complete(&mut self, rq: &Request, now: Nanos) {
        if !is_background(rq) {
            self.foreground_at_device = self.foreground_at_device.saturating_sub(1);
            self.last_foreground_done = Some(now);
        }
    }

    fn queued(&self) -> usize {
        self.foreground.len() + self.background.len()
    }

    fn set_tunable(&mut self, name: &str, value: i64) -> Result<(), TunableError> {
        let t = lookup(NAME, TUNABLES, name)?;
        check_range(t, value)?;
        let value = Nanos::from_ms(value as u64);
        match name {
            "quiet_ms" => self.quiet = value,
            _ => self.max_wait = value,
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use elevator_core::harness::rq;

    fn idle(b: elevator_core::harness::RequestBuilder) -> Request {
        b.prio(IoClass::Idle, 7).build()
    }

    #[test]
    fn foreground_goes_first_and_background_waits_for_the_quiet_time() {
        let mut s = ForegroundFirst::new();
        let t0 = Nanos::ZERO;
        s.insert(idle(rq(1, 1).sector(1000)), t0);
        s.insert(rq(2, 2).sector(50).build(), t0);
        let Dispatch::Request(fg) = s.dispatch(t0) else {
            panic!("the foreground request first")
        };
        assert_eq!(fg.id, RequestId(2));
        // The foreground request is at the device: the background one waits for its expiry
        // at the latest.
        assert_eq!(
            s.dispatch(t0),
            Dispatch::Idle {
                until: Nanos::from_ms(500)
            }
        );
        let done = Nanos::from_ms(5);
        s.complete(&fg, done);
        // Quiet from 5 ms + 20 ms.
        assert_eq!(
            s.dispatch(done),
            Dispatch::Idle {
                until: Nanos::from_ms(25)
            }
        );
        let Dispatch::Request(bg) = s.dispatch(Nanos::from_ms(25)) else {
            panic!("the background request once the foreground is quiet")
        };
        assert_eq!(bg.id, RequestId(1));
        assert_eq!(s.dispatch(Nanos::from_ms(25)), Dispatch::Empty);
    }

    #[test]
    fn an_expired_background_request_goes_ahead_of_the_foreground() {
        let mut s = ForegroundFirst::new();
        s.insert(idle(rq(1, 1)), Nanos::ZERO);
        s.insert(rq(2, 2).build(), Nanos::from_ms(499));
        let Dispatch::Request(first) = s.dispatch(Nanos::from_ms(500)) else {
            panic!()
        };
        assert_eq!(first.id, RequestId(1), "expired at 500 ms");
    }

    #[test]
    fn a_bio_merges_into_the_request_it_continues_in_its_own_class_only() {
        let mut s = ForegroundFirst::new();
        s.insert(rq(1, 1).sector(0).sectors(8).build(), Nanos::ZERO);
        s.insert(idle(rq(2, 2).sector(100).sectors(8)), Nanos::ZERO);
        let back = rq(3, 1).sector(8).sectors(8).build();
        assert_eq!(s.try_merge(&back, 256, Nanos::ZERO), Some(RequestId(1)));
        // Adjacent to the background request, but foreground: no merge across classes.
        let other_class = rq(4, 1).sector(108).sectors(8).build();
        assert_eq!(s.try_merge(&other_class, 256, Nanos::ZERO), None);
        let front = idle(rq(5, 2).sector(92).sectors(8));
        assert_eq!(s.try_merge(&front, 256, Nanos::ZERO), Some(RequestId(2)));
        let too_big = rq(6, 1).sector(16).sectors(250).build();
        assert_eq!(
            s.try_merge(&too_big, 256, Nanos::ZERO),
            None,
            "past the limit"
        );
        let Dispatch::Request(r) = s.dispatch(Nanos::ZERO) else {
            panic!()
        };
        assert_eq!((r.sector, r.sectors), (0, 16));
    }

    #[test]
    fn tunables_are_checked_by_name_and_range() {
        let mut s = ForegroundFirst::new();
        assert!(s.set_tunable("quiet_ms", 0).is_ok());
        assert!(matches!(
            s.set_tunable("quiet", 1),
            Err(TunableError::Unknown { .. })
        ));
        assert!(matches!(
            s.set_tunable("max_wait_ms", -1),
            Err(TunableError::OutOfRange { .. })
        ));
        let mut bad = Settings::new();
        bad.set("max_wait_ms", 600_001);
        assert!(ForegroundFirst::from_settings(&bad).is_err());
    }
}
