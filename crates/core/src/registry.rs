//! The registry of policies: one entry per scheduler, feeding the CLI, `elevator list`,
//! scenario files and the docs from one place.

use crate::group::GroupTree;
use crate::scheduler::Scheduler;
use crate::tunable::{Settings, Tunable, TunableError};
use crate::{
    anticipatory, bfq, cfq, deadline, ioband, kyber, latency_guard, linus, mq_deadline, noop,
};

/// Builds a policy from its settings and the run's group tree.
pub type Build = fn(&Settings, &GroupTree) -> Result<Box<dyn Scheduler>, TunableError>;

/// One registered policy.
#[derive(Clone, Copy)]
pub struct SchedulerInfo {
    /// The name users type, e.g. `"anticipatory"`.
    pub name: &'static str,
    /// Other accepted names, e.g. `"as"`.
    pub aliases: &'static [&'static str],
    /// One line: what it is and which kernel it follows.
    pub summary: &'static str,
    /// Its tunables.
    pub tunables: &'static [Tunable],
    /// Its constructor.
    pub build: Build,
}

impl std::fmt::Debug for SchedulerInfo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SchedulerInfo")
            .field("name", &self.name)
            .finish()
    }
}

impl SchedulerInfo {
    /// `settings` with `rotational` set from the device the policy runs on, where it has that
    /// tunable and `settings` does not give it already: the kernel's schedulers read it from
    /// the request queue (`blk_queue_nonrot`), not from a tunable. `None` (the device cannot
    /// tell) leaves the policy's default.
    pub fn on_device(&self, mut settings: Settings, rotational: Option<bool>) -> Settings {
        if let Some(r) = rotational {
            let has = self.tunables.iter().any(|t| t.name == "rotational");
            if has && settings.raw("rotational").is_none() {
                settings.set("rotational", i64::from(r));
            }
        }
        settings
    }
}

/// Every policy, in the order `elevator list` prints them.
pub fn all() -> &'static [SchedulerInfo] {
    &REGISTRY
}

/// The policy named `name` (or one of its aliases). A composite name `ioband+<policy>`
/// (e.g. `ioband+cfq`) gives dm-ioband over that policy, with both tunable tables.
pub fn find(name: &str) -> Option<&'static SchedulerInfo> {
    REGISTRY
        .iter()
        .find(|i| i.name == name || i.aliases.contains(&name))
        .or_else(|| ioband::composite(name))
}

static REGISTRY: [SchedulerInfo; 12] = [
    SchedulerInfo {
        name: "noop",
        aliases: &["none", "fifo"],
        summary: "first in, first out (Linux noop / none)",
        tunables: noop::TUNABLES,
        build: |s, _| Ok(Box::new(noop::Noop::from_settings(s)?)),
    },
    SchedulerInfo {
        name: "linus",
        aliases: &["elevator_linus", "2.4"],
        summary: "the 2.4.20 elevator: one sorted queue with per-request pass-over budgets",
        tunables: linus::TUNABLES,
        build: |s, _| Ok(Box::new(linus::Linus::from_settings(s)?)),
    },
    SchedulerInfo {
        name: "deadline",
        aliases: &[],
        summary: "2.6.32 deadline-iosched: sector-sorted batches of fifo_batch requests, \
                  read/write FIFO expiry",
        tunables: deadline::TUNABLES,
        build: |s, _| Ok(Box::new(deadline::Deadline::from_settings(s)?)),
    },
    SchedulerInfo {
        name: "deadline-2.5",
        aliases: &["deadline-2.5.59"],
        summary: "2.5.59 deadline-iosched (Morton's 2003 baseline): a seek ends the batch, \
                  the sweep wraps to the lowest sector",
        tunables: deadline::TUNABLES,
        build: |s, _| Ok(Box::new(deadline::v2_5::Deadline25::from_settings(s)?)),
    },
    SchedulerInfo {
        name: "anticipatory",
        aliases: &["as"],
        summary: "the anticipatory scheduler as in 2.6.32 (Nick Piggin)",
        tunables: anticipatory::TUNABLES,
        build: |s, _| Ok(Box::new(anticipatory::Anticipatory::from_settings(s)?)),
    },
    SchedulerInfo {
        name: "cfq",
        aliases: &["cfq-groups"],
        summary:
            "CFQ with blkio group scheduling as in Linux 4.19 (Jens Axboe; groups: Vivek Goyal)",
        tunables: cfq::TUNABLES,
        build: |s, g| Ok(Box::new(cfq::Cfq::from_settings(s, g)?)),
    },
    SchedulerInfo {
        name: "cfq-flat",
        aliases: &["cfq-vanilla"],
        summary:
            "CFQ as in Linux 4.19 built without group scheduling: every request in the root group",
        tunables: cfq::FLAT_TUNABLES,
        build: |s, g| Ok(Box::new(cfq::Cfq::flat_from_settings(s, g)?)),
    },
    SchedulerInfo {
        name: "ioband",
        aliases: &["dm-ioband"],
        summary:
            "dm-ioband's weight policy (token per request) over cfq; ioband+<policy> wraps any",
        tunables: ioband::TUNABLES,
        build: |s, g| {
            let inner = find("cfq").expect("cfq is registered");
            ioband::build_over("ioband", inner, s, g)
        },
    },
    SchedulerInfo {
        name: "bfq",
        aliases: &["bfq-iosched"],
        summary: "Budget Fair Queueing as in mainline v6.x: B-WF2Q+, budgets, weight raising, \
                  injection, queue merging with the 100 ms window, groups",
        tunables: bfq::TUNABLES,
        build: |s, g| Ok(Box::new(bfq::Bfq::from_settings(s, g)?)),
    },
    SchedulerInfo {
        name: "mq-deadline",
        aliases: &["mq-deadline-iosched"],
        summary: "blk-mq deadline as in mainline v6.x: deadline batches per I/O priority level, \
                  priority aging, async_depth",
        tunables: mq_deadline::TUNABLES,
        build: |s, _| Ok(Box::new(mq_deadline::MqDeadline::from_settings(s)?)),
    },
    SchedulerInfo {
        name: "kyber",
        aliases: &["kyber-iosched"],
        summary: "kyber as in mainline v6.x: per-domain token depths steered by p90/p99 \
                  latency histograms, round-robin batches",
        tunables: kyber::TUNABLES,
        build: |s, _| Ok(Box::new(kyber::Kyber::from_settings(s)?)),
    },
    SchedulerInfo {
        name: "latency-guard",
        aliases: &["lg"],
        summary: "elevator's own (not a kernel scheduler): reads first, write depth steered by measured read latency",
        tunables: latency_guard::TUNABLES,
        build: |s, _| Ok(Box::new(latency_guard::LatencyGuard::from_settings(s)?)),
    },
];

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn names_and_aliases_are_unique() {
        let mut seen = HashSet::new();
        for i in all() {
            assert!(seen.insert(i.name), "duplicate {}", i.name);
            for a in i.aliases {
                assert!(seen.insert(a), "duplicate alias {a}");
            }
        }
    }

    #[test]
    fn every_tunable_is_documented_and_its_default_in_range() {
        for i in all() {
            let mut names = HashSet::new();
            for t in i.tunables {
                assert!(names.insert(t.name), "{}: duplicate {}", i.name, t.name);
                assert!(!t.doc.is_empty(), "{}: {} has no doc", i.name, t.name);
                assert!(
                    t.min <= t.default && t.default <= t.max,
                    "{}: {}",
                    i.name,
                    t.name
                );
            }
        }
    }

    #[test]
    fn every_policy_builds_with_defaults_and_refuses_unknown_tunables() {
        let groups = GroupTree::new();
        for i in all() {
            let s = (i.build)(&Settings::new(), &groups).unwrap();
            assert_eq!(s.name(), i.name);
            let mut bad = Settings::new();
            bad.set("no_such_tunable", 1);
            assert!((i.build)(&bad, &groups).is_err(), "{}", i.name);
        }
    }
}
