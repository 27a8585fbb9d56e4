//! The registry of policies: one entry per scheduler, feeding the CLI, `elevator list`,
//! scenario files and the docs from one place.
//!
//! The registry also owns composition. A *layer* (dm-ioband) is a controller that holds
//! requests above a policy and passes them down to it; `LAYER+POLICY` (e.g. `ioband+cfq`)
//! names the layer over any registered policy, and the layer's own name runs it over its
//! default policy. [`find`] answers with a [`SchedulerSpec`] by value: the name, the tunables
//! (the layer's, then the policy's) and how to build it. Every such name and joined tunable
//! table is generated at compile time by the `registry!` table below: nothing is allocated,
//! interned or leaked at run time.

use crate::group::GroupTree;
use crate::scheduler::Scheduler;
use crate::tunable::{Settings, Tunable, TunableError, Unit};
use crate::{
    anticipatory, bfq, cfq, deadline, ioband, kyber, latency_guard, linus, mq_deadline, noop,
};

/// Builds a policy from its settings and the run's group tree.
pub type Build = fn(&Settings, &GroupTree) -> Result<Box<dyn Scheduler>, TunableError>;

/// Builds a layer from its own settings and the run's group tree over `inner` (the policy it
/// passes requests down to); the result reports `name` as its name.
pub type BuildOver = fn(
    &Settings,
    &GroupTree,
    Box<dyn Scheduler>,
    &'static str,
) -> Result<Box<dyn Scheduler>, TunableError>;

/// How a registered scheduler is built.
#[derive(Clone, Copy)]
pub enum Kind {
    /// A policy: it queues and orders the requests itself.
    Policy(Build),
    /// A controller above a policy (dm-ioband).
    Layer(Layer),
}

/// A layer's registry data.
#[derive(Clone, Copy)]
pub struct Layer {
    /// The policy it runs over when named alone (`ioband` is `ioband` over `cfq`).
    pub over: &'static str,
    /// One line on `LAYER+POLICY`, for `elevator list`.
    pub stacked_summary: &'static str,
    /// Its constructor, over an inner scheduler already built.
    pub build: BuildOver,
    /// `LAYER+POLICY` for every registered entry, in registry order: its name and its joined
    /// tunables (the layer's, then the policy's).
    stacks: &'static [Stacked],
}

/// One generated `LAYER+POLICY` composition.
struct Stacked {
    name: &'static str,
    tunables: &'static [Tunable],
}

/// One registered scheduler.
#[derive(Clone, Copy)]
pub struct SchedulerInfo {
    /// The name users type, e.g. `"anticipatory"`.
    pub name: &'static str,
    /// Other accepted names, e.g. `"as"`.
    pub aliases: &'static [&'static str],
    /// One line: what it is and which kernel it follows.
    pub summary: &'static str,
    /// Its own tunables (a layer's, without those of the policy below it).
    pub tunables: &'static [Tunable],
    /// A policy or a layer, and its constructor.
    pub kind: Kind,
}

impl std::fmt::Debug for SchedulerInfo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SchedulerInfo")
            .field("name", &self.name)
            .finish()
    }
}

impl PartialEq for SchedulerInfo {
    fn eq(&self, other: &SchedulerInfo) -> bool {
        self.name == other.name
    }
}

impl Eq for SchedulerInfo {}

impl SchedulerInfo {
    /// Whether `name` is this entry's name or one of its aliases.
    pub fn answers_to(&self, name: &str) -> bool {
        self.name == name || self.aliases.contains(&name)
    }

    /// This entry as [`find`] gives it for its own name: a policy alone, or a layer over its
    /// default policy.
    pub fn spec(&'static self) -> SchedulerSpec {
        match self.kind {
            Kind::Policy(_) => SchedulerSpec {
                name: self.name,
                summary: self.summary,
                tunables: self.tunables,
                layer: None,
                policy: self,
            },
            Kind::Layer(l) => SchedulerSpec {
                name: self.name,
                summary: self.summary,
                tunables: self.tunables,
                layer: Some(self),
                policy: policy(l.over).expect("a layer's default policy is registered"),
            },
        }
    }
}

/// What [`find`] answers: a runnable scheduler, a policy alone or a layer over a policy,
/// with its name and tunables. Small and `Copy`; everything it refers to is static.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SchedulerSpec {
    /// The canonical name (`"anticipatory"` for `as`, `"ioband+cfq"`); the built scheduler
    /// reports the same.
    pub name: &'static str,
    /// One line: what it is.
    pub summary: &'static str,
    /// The tunables it accepts: a layer's own, then (for `LAYER+POLICY`) the policy's.
    pub tunables: &'static [Tunable],
    layer: Option<&'static SchedulerInfo>,
    policy: &'static SchedulerInfo,
}

impl SchedulerSpec {
    /// Whether it has a tunable named `name`.
    pub fn has_tunable(&self, name: &str) -> bool {
        self.tunables.iter().any(|t| t.name == name)
    }

    /// The layer on top, if any.
    pub fn layer(&self) -> Option<&'static SchedulerInfo> {
        self.layer
    }

    /// The policy at the bottom (for a layer named alone, its default policy).
    pub fn policy(&self) -> &'static SchedulerInfo {
        self.policy
    }

    /// Check that every name in `settings` is one of [`tunables`](Self::tunables) and every
    /// value in range.
    pub fn validate(&self, settings: &Settings) -> Result<(), TunableError> {
        settings.validate(self.name, self.tunables)
    }

    /// Build it from `settings` over the run's `groups`. A layer takes the settings its own
    /// table names and passes the rest to the policy below it.
    pub fn build(
        &self,
        settings: &Settings,
        groups: &GroupTree,
    ) -> Result<Box<dyn Scheduler>, TunableError> {
        let Kind::Policy(build_policy) = self.policy.kind else {
            unreachable!("a spec's policy is a policy")
        };
        let Some(layer) = self.layer else {
            return build_policy(settings, groups);
        };
        let Kind::Layer(l) = layer.kind else {
            unreachable!("a spec's layer is a layer")
        };
        let (own, rest) = split(settings, layer.tunables);
        own.validate(layer.name, layer.tunables)?;
        let inner = build_policy(&rest, groups)?;
        (l.build)(&own, groups, inner, self.name)
    }

    /// `settings` with `rotational` set from the device the scheduler runs on, where it has
    /// that tunable and `settings` does not give it already: the kernel's schedulers read it
    /// from the request queue (`blk_queue_nonrot`), not from a tunable. `None` (the device
    /// cannot tell) leaves the default.
    pub fn on_device(&self, mut settings: Settings, rotational: Option<bool>) -> Settings {
        if let Some(r) = rotational {
            if self.has_tunable("rotational") && settings.raw("rotational").is_none() {
                settings.set("rotational", i64::from(r));
            }
        }
        settings
    }
}

/// Split `settings` into those `table` names and the rest.
fn split(settings: &Settings, table: &[Tunable]) -> (Settings, Settings) {
    let (mut own, mut rest) = (Settings::new(), Settings::new());
    for name in settings.names() {
        let v = settings.raw(name).expect("name listed");
        if table.iter().any(|t| t.name == name) {
            own.set(name, v);
        } else {
            rest.set(name, v);
        }
    }
    (own, rest)
}

/// Every registered scheduler, in the order `elevator list` prints them.
pub fn all() -> &'static [SchedulerInfo] {
    REGISTRY
}

/// The registered policy (not layer) named `name` or aliased so.
fn policy(name: &str) -> Option<&'static SchedulerInfo> {
    REGISTRY
        .iter()
        .find(|i| i.answers_to(name) && matches!(i.kind, Kind::Policy(_)))
}

/// The scheduler named `name` (or one of its aliases). `LAYER+POLICY` (e.g. `ioband+cfq`,
/// `ioband+as`) gives the layer over that policy, with both tunable tables; a layer cannot
/// sit over a layer.
pub fn find(name: &str) -> Option<SchedulerSpec> {
    if let Some(info) = REGISTRY.iter().find(|i| i.answers_to(name)) {
        return Some(info.spec());
    }
    REGISTRY.iter().find_map(|layer| {
        let Kind::Layer(l) = layer.kind else {
            return None;
        };
        let inner = name.strip_prefix(layer.name)?.strip_prefix('+')?;
        let policy = policy(inner)?;
        let at = REGISTRY.iter().position(|i| std::ptr::eq(i, policy))?;
        let stacked = &l.stacks[at];
        Some(SchedulerSpec {
            name: stacked.name,
            summary: l.stacked_summary,
            tunables: stacked.tunables,
            layer: Some(layer),
            policy,
        })
    })
}

/// What `join` fills its table with before copying.
const FILLER: Tunable = Tunable {
    name: "",
    unit: Unit::Count,
    default: 0,
    min: 0,
    max: 0,
    doc: "",
};

/// `a` then `b`, as one table (for a layer's stacks, at compile time).
const fn join<const N: usize>(a: &[Tunable], b: &[Tunable]) -> [Tunable; N] {
    let mut out = [FILLER; N];
    let mut i = 0;
    while i < a.len() {
        out[i] = a[i];
        i += 1;
    }
    let mut j = 0;
    while j < b.len() {
        out[i + j] = b[j];
        j += 1;
    }
    out
}

/// The registry's one declaration: each entry once, `policy` or `layer`. A layer entry also
/// gets, for every entry, its `LAYER+NAME` name and joined tunables.
macro_rules! registry {
    ($( $name:literal : $kind:ident {
        aliases: $aliases:expr,
        summary: $summary:expr,
        tunables: $tunables:expr,
        $( over: $over:literal, stacked: $stacked:literal, )?
        build: $build:expr $(,)?
    } ),* $(,)?) => {
        registry!(@rows [$( ($name, $tunables) ),*]
            $( $name, $kind, $aliases, $summary, $tunables, [$($over, $stacked)?], $build; )*);
    };
    (@rows $all:tt $( $name:literal, $kind:ident, $aliases:expr, $summary:expr, $tunables:expr,
        $over:tt, $build:expr; )*) => {
        static REGISTRY: &[SchedulerInfo] = &[ $( SchedulerInfo {
            name: $name,
            aliases: $aliases,
            summary: $summary,
            tunables: $tunables,
            kind: registry!(@kind $kind, $name, $tunables, $over, $build, $all),
        } ),* ];
    };
    (@kind policy, $name:literal, $tunables:expr, [], $build:expr, $all:tt) => {
        Kind::Policy($build)
    };
    (@kind layer, $name:literal, $tunables:expr, [$over:literal, $stacked:literal], $build:expr,
        [$( ($p:literal, $pt:expr) ),*]) => {
        Kind::Layer(Layer {
            over: $over,
            stacked_summary: $stacked,
            build: $build,
            stacks: &[ $( Stacked {
                name: concat!($name, "+", $p),
                tunables: &join::<{ $tunables.len() + $pt.len() }>($tunables, $pt),
            } ),* ],
        })
    };
}

registry! {
    "noop": policy {
        aliases: &["none", "fifo"],
        summary: "first in, first out (Linux noop / none)",
        tunables: noop::TUNABLES,
        build: |s, _| Ok(Box::new(noop::Noop::from_settings(s)?)),
    },
    "linus": policy {
        aliases: &["elevator_linus", "2.4"],
        summary: "the 2.4.20 elevator: one sorted queue with per-request pass-over budgets",
        tunables: linus::TUNABLES,
        build: |s, _| Ok(Box::new(linus::Linus::from_settings(s)?)),
    },
    "deadline": policy {
        aliases: &[],
        summary: "2.6.32 deadline-iosched: sector-sorted batches of fifo_batch requests, \
                  read/write FIFO expiry",
        tunables: deadline::TUNABLES,
        build: |s, _| Ok(Box::new(deadline::Deadline::from_settings(s)?)),
    },
    "deadline-2.5": policy {
        aliases: &["deadline-2.5.59"],
        summary: "2.5.59 deadline-iosched (Morton's 2003 baseline): a seek ends the batch, \
                  the sweep wraps to the lowest sector",
        tunables: deadline::TUNABLES,
        build: |s, _| Ok(Box::new(deadline::v2_5::Deadline25::from_settings(s)?)),
    },
    "anticipatory": policy {
        aliases: &["as"],
        summary: "the anticipatory scheduler as in 2.6.32 (Nick Piggin)",
        tunables: anticipatory::TUNABLES,
        build: |s, _| Ok(Box::new(anticipatory::Anticipatory::from_settings(s)?)),
    },
    "cfq": policy {
        aliases: &["cfq-groups"],
        summary:
            "CFQ with blkio group scheduling as in Linux 4.19 (Jens Axboe; groups: Vivek Goyal)",
        tunables: cfq::TUNABLES,
        build: |s, g| Ok(Box::new(cfq::Cfq::from_settings(s, g)?)),
    },
    "cfq-flat": policy {
        aliases: &["cfq-vanilla"],
        summary:
            "CFQ as in Linux 4.19 built without group scheduling: every request in the root group",
        tunables: cfq::FLAT_TUNABLES,
        build: |s, g| Ok(Box::new(cfq::Cfq::flat_from_settings(s, g)?)),
    },
    "ioband": layer {
        aliases: &["dm-ioband"],
        summary:
            "dm-ioband's weight policy (token per request) over cfq; ioband+<policy> wraps any",
        tunables: ioband::TUNABLES,
        over: "cfq",
        stacked: "dm-ioband's weight policy over the named scheduler",
        build: |s, g, inner, name| {
            Ok(Box::new(ioband::IoBand::from_settings(s, g, inner)?.named(name)))
        },
    },
    "bfq": policy {
        aliases: &["bfq-iosched"],
        summary: "Budget Fair Queueing as in mainline v6.x: B-WF2Q+, budgets, weight raising, \
                  injection, queue merging with the 100 ms window, groups",
        tunables: bfq::TUNABLES,
        build: |s, g| Ok(Box::new(bfq::Bfq::from_settings(s, g)?)),
    },
    "mq-deadline": policy {
        aliases: &["mq-deadline-iosched"],
        summary: "blk-mq deadline as in mainline v6.x: deadline batches per I/O priority level, \
                  priority aging, async_depth",
        tunables: mq_deadline::TUNABLES,
        build: |s, _| Ok(Box::new(mq_deadline::MqDeadline::from_settings(s)?)),
    },
    "kyber": policy {
        aliases: &["kyber-iosched"],
        summary: "kyber as in mainline v6.x: per-domain token depths steered by p90/p99 \
                  latency histograms, round-robin batches",
        tunables: kyber::TUNABLES,
        build: |s, _| Ok(Box::new(kyber::Kyber::from_settings(s)?)),
    },
    "latency-guard": policy {
        aliases: &["lg"],
        summary: "elevator's own (not a kernel scheduler): reads first, write depth steered by measured read latency",
        tunables: latency_guard::TUNABLES,
        build: |s, _| Ok(Box::new(latency_guard::LatencyGuard::from_settings(s)?)),
    },
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness::{rq, Harness};
    use crate::time::Nanos;
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
            let spec = i.spec();
            let s = spec.build(&Settings::new(), &groups).unwrap();
            assert_eq!(s.name(), i.name);
            let mut bad = Settings::new();
            bad.set("no_such_tunable", 1);
            assert!(spec.build(&bad, &groups).is_err(), "{}", i.name);
        }
    }

    fn groups_ab() -> GroupTree {
        let mut t = GroupTree::new();
        t.add("/a", None).unwrap();
        t.add("/b", None).unwrap();
        t
    }

    #[test]
    fn a_layer_stacks_over_any_registered_policy_by_name_or_alias() {
        let spec = find("ioband+cfq").expect("ioband+cfq");
        assert_eq!(spec.name, "ioband+cfq");
        assert_eq!(
            spec,
            find("ioband+cfq-groups").unwrap(),
            "by the policy's alias"
        );
        assert_eq!(spec.policy().name, "cfq");
        assert_eq!(spec.layer().map(|l| l.name), Some("ioband"));
        let names: Vec<&str> = spec.tunables.iter().map(|t| t.name).collect();
        let want: Vec<&str> = ioband::TUNABLES
            .iter()
            .chain(cfq::TUNABLES)
            .map(|t| t.name)
            .collect();
        assert_eq!(names, want, "the layer's tunables, then the policy's");
        let mut s = Settings::new();
        s.set("io_limit", 64).set("slice_idle", 4);
        spec.validate(&s).unwrap();
        let sched = spec.build(&s, &groups_ab()).unwrap();
        assert_eq!(sched.name(), "ioband+cfq");
        let mut bad = Settings::new();
        bad.set("no_such", 1);
        assert!(spec.build(&bad, &groups_ab()).is_err());
        assert_eq!(find("as").unwrap().name, "anticipatory");
        assert_eq!(find("ioband+as").unwrap().name, "ioband+anticipatory");
        assert!(find("ioband+nosuch").is_none());
        assert!(find("ioband+ioband").is_none(), "a layer over a layer");
        assert!(find("ioband+").is_none());
        assert!(find("iobandcfq").is_none());
    }

    #[test]
    fn a_layer_alone_runs_over_its_default_policy_with_its_own_tunables() {
        let spec = find("dm-ioband").unwrap();
        assert_eq!(spec.name, "ioband");
        assert_eq!(spec.policy().name, "cfq");
        assert_eq!(spec.tunables, ioband::TUNABLES);
        let mut s = Settings::new();
        s.set("slice_idle", 0);
        // The policy below still takes its tunables at build time.
        let sched = spec.build(&s, &groups_ab()).unwrap();
        assert_eq!(sched.name(), "ioband");
    }

    #[test]
    fn every_stack_is_named_and_joined_in_registry_order() {
        for layer in all() {
            let Kind::Layer(l) = layer.kind else { continue };
            assert_eq!(l.stacks.len(), all().len());
            for (p, stacked) in all().iter().zip(l.stacks) {
                assert_eq!(stacked.name, format!("{}+{}", layer.name, p.name));
                assert_eq!(
                    stacked.tunables.len(),
                    layer.tunables.len() + p.tunables.len()
                );
                assert_eq!(&stacked.tunables[..layer.tunables.len()], layer.tunables);
                assert_eq!(&stacked.tunables[layer.tunables.len()..], p.tunables);
            }
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(48))]
        #[test]
        fn ioband_over_cfq_dispatches_every_request_exactly_once(
            reqs in proptest::collection::vec((0u64..3_000, 1u32..8, 0u64..2_000_000, proptest::bool::ANY, 0u32..3), 1..150),
            io_limit in 1i64..16,
            depth in 1usize..4,
            v1_10 in proptest::bool::ANY,
        ) {
            let mut s = Settings::new();
            s.set("io_limit", io_limit).set("token", 8);
            if v1_10 {
                // dm-ioband v1.10: read/write classes, one held count per group.
                s.set("release", 10);
            }
            let sched = find("ioband+cfq").unwrap().build(&s, &groups_ab()).unwrap();
            let mut h = Harness::new(sched, depth, |_| Nanos::from_us(700));
            for (i, &(at, ctx, sector, write, g)) in reqs.iter().enumerate() {
                let b = rq(i as u64, ctx).sector(sector).group(g).at(Nanos::from_us(at * 100));
                h.submit(if write { b.write() } else { b.read() });
            }
            h.run();
        }
    }
}
