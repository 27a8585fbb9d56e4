//! Every streaming trace reader, format detection and both blktrace views on arbitrary bytes:
//! records or an error, never a panic.
#![no_main]

use elevator_workload::traces::blkparse::BlkparseReader;
use elevator_workload::traces::blktrace::{BlkRequests, BlkView, EventReader};
use elevator_workload::traces::disksim_ascii::{AsciiFormat, AsciiReader, AsciiTrace};
use elevator_workload::traces::fio_iolog::FioIologReader;
use elevator_workload::traces::lines::Lines;
use elevator_workload::traces::{alibaba, detect, msr, s_startup, spc, tencent, TraceRecord};
use libfuzzer_sys::fuzz_target;

const LIMIT: usize = 10_000;

fn drain<I: Iterator<Item = Result<TraceRecord, E>>, E>(it: I) {
    for r in it.take(LIMIT) {
        if r.is_err() {
            break;
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let _ = detect(data);
    let lines = || Lines::from_bytes(data.to_vec(), "fuzz");
    for view in [BlkView::Queue, BlkView::Dispatch] {
        let bin = EventReader::new(Box::new(std::io::Cursor::new(data.to_vec())), "fuzz");
        drain(BlkRequests::new(bin, view));
        drain(BlkRequests::new(BlkparseReader::new(lines()), view));
    }
    if let Ok(r) = FioIologReader::new(lines()) {
        drain(r);
    }
    drain(msr::MsrReader::new(lines()));
    drain(spc::SpcReader::new(lines()));
    drain(alibaba::AlibabaReader::new(lines()));
    drain(tencent::TencentReader::new(lines()));
    drain(AsciiReader::new(lines(), AsciiFormat::Disksim));
    drain(AsciiReader::new(lines(), AsciiFormat::Mqsim));
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = AsciiTrace::parse(text, "fuzz", AsciiFormat::Disksim);
        let _ = AsciiTrace::parse(text, "fuzz", AsciiFormat::Mqsim);
        let _ = s_startup::StartupTrace::parse(text, "fuzz");
    }
});
