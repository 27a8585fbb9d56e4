//! Drive spec TOML on arbitrary text; a spec that parses is also built into a drive model that
//! serves a read and a write, so a spec the parser accepts cannot crash the model.
#![no_main]

use elevator_core::{CtxId, GroupId, IoPrio, Nanos, Op, Request, RequestId};
use elevator_sim::hdd::{DriveSpec, Hdd};
use elevator_sim::Device;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(spec) = DriveSpec::parse(text, std::path::Path::new("fuzz.toml")) else {
        return;
    };
    let mut hdd = Hdd::new(spec);
    let cap = hdd.capacity_sectors();
    for (i, op) in [Op::Read, Op::Write].into_iter().enumerate() {
        let rq = Request {
            id: RequestId(i as u64 + 1),
            ctx: CtxId(1),
            group: GroupId::ROOT,
            op,
            sync: true,
            meta: false,
            idle_hint: false,
            sector: cap / 2,
            sectors: 8.min(cap.saturating_sub(cap / 2)) as u32,
            prio: IoPrio::default(),
            submitted: Nanos::ZERO,
        };
        let _ = hdd.submit(&rq, Nanos::from_ms(i as u64));
    }
});
