//! noop (`none`) has no tunables: found unpinned by mutation testing (docs/mutation-testing.md,
//! "Mutation testing, the block layer and latency_guard").

use elevator_core::noop::Noop;
use elevator_core::Scheduler;

/// `none` registers no `elevator_attrs`, so its queue's `iosched/` directory has no files and
/// a write to any name there fails; ours refuses every name, a known one of another policy
/// included.
#[test]
fn none_refuses_every_tunable() {
    let mut s = Noop::new();
    for name in ["fifo_batch", "read_lat_nsec", "no_such_tunable"] {
        assert!(s.set_tunable(name, 1).is_err(), "{name}");
    }
}
