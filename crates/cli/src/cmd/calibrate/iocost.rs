//! `elevator calibrate --iocost`: the `io.cost.model` line of the device measured (the
//! `io.cost.qos` proposal beside it is [`super::iocost_qos`]).
//!
//! **The model** comes from [`IOCOST_PLAN`]: the six figures `io.cost.model` takes, measured
//! as the kernel tree's `tools/cgroup/iocost_coef_gen.py` measures them, with two differences
//! it is compared against (bench/iocost-coef.sh, docs/iocost.md): the sequential bandwidth is
//! that of 1 MiB I/Os at depth 32 (the script: 128 MiB I/Os at depth 1, which the block layer
//! splits at `max_sectors_kb` anyway), and a tenth of each point is ramp (the script has
//! none). The four 4 KiB points run at the script's depth 64. Every point goes through Linux
//! native AIO ([`elevator_real::AioBackend`]), each I/O in its own `io_submit` with completions
//! collected between submissions, as the script's fio (`run_fio`: `--ioengine=libaio`, default
//! `iodepth_batch` 1) submits them: no batch for the kernel's plug to merge, and no io_uring
//! worker threads (on a loop device io_uring hands most I/O to io-wq workers, and fio's own
//! io_uring engine measured it 1.3-2.0x faster than its libaio engine). The script also sets the device's scheduler to `none` and `nomerges` to 1 while it
//! runs; calibrate leaves the device's queue settings alone (bench/iocost-coef.sh sets the
//! script's for both).

use anyhow::Context;
use elevator_core::qos::iocost::Model;
use elevator_core::SECTOR_BYTES;
use elevator_sim::DriveModel;
use rayon::prelude::*;

use super::measure::{Figures, Point, IOCOST_PLAN};

/// The six figures of `io.cost.model` from the measured points (each must be present).
pub fn model(points: &[(Point, Figures)]) -> anyhow::Result<Model> {
    let get = |i: usize| -> anyhow::Result<Figures> {
        let p = IOCOST_PLAN[i];
        points
            .iter()
            .find(|(q, _)| *q == p)
            .map(|(_, f)| *f)
            .with_context(|| format!("no measurement of {} (io.cost.model needs it)", p.label()))
    };
    let bps = |f: Figures| (f.mb_s * 1e6).round() as u64;
    let iops = |f: Figures| f.iops.round() as u64;
    Ok(Model {
        rbps: bps(get(0)?),
        rseqiops: iops(get(1)?),
        rrandiops: iops(get(2)?),
        wbps: bps(get(3)?),
        wseqiops: iops(get(4)?),
        wrandiops: iops(get(5)?),
    })
}

/// The `io.cost.model` that `calibrate --iocost` measures, measured on a simulated `drive`
/// instead of a real device: the six points of [`IOCOST_PLAN`], each run on the simulator over
/// the whole drive (as iocost_coef_gen.py `--testdev` runs fio over the whole device) for
/// `span` ([`super::measure::simulate`], the same jobs and figures), then [`model`]. What a
/// user of the drive would write into io.cost.model after running the kernel's tool on it.
pub fn simulated_model(drive: &DriveModel, span: super::measure::Span) -> anyhow::Result<Model> {
    let points = IOCOST_PLAN
        .par_iter()
        .map(|p| {
            let whole = drive.capacity_sectors() * SECTOR_BYTES;
            let f = super::measure::simulate(p, drive.device(), whole, span)?;
            anyhow::ensure!(
                f.ios > 0,
                "{}: no I/O completed in {:?} simulated on {}",
                p.label(),
                span.runtime,
                drive.name()
            );
            Ok((*p, f))
        })
        .collect::<anyhow::Result<Vec<(Point, Figures)>>>()?;
    model(&points)
}

/// The scheduler the block device `path` is (or the one the file `path` is on) runs now: the
/// bracketed name in /sys/dev/block/MAJ:MIN/queue/scheduler, a partition's taken from its
/// disk; `None` where that cannot be read (no such device, no sysfs).
pub fn current_scheduler(path: &std::path::Path) -> Option<String> {
    let base = std::path::Path::new("/sys/dev/block").join(devno(path));
    ["queue/scheduler", "../queue/scheduler"]
        .iter()
        .find_map(|q| std::fs::read_to_string(base.join(q)).ok())
        .and_then(|text| selected_scheduler(&text))
}

/// The selected scheduler in the text of a `queue/scheduler` file: the bracketed name
/// (`mq-deadline kyber [bfq] none`), or the only one a queue that offers no choice lists.
pub fn selected_scheduler(text: &str) -> Option<String> {
    let mut names = text.split_whitespace();
    if let Some(chosen) = elevator_workload::traces::ftrace::recording::bracketed_choice(text) {
        return Some(chosen.to_string());
    }
    match (names.next(), names.next()) {
        (Some(only), None) => Some(only.to_string()),
        _ => None,
    }
}

/// The device number a user writes before the fields: the block device's own, or the one
/// the file lives on.
pub fn devno(path: &std::path::Path) -> String {
    use std::os::unix::fs::{FileTypeExt, MetadataExt};
    match std::fs::metadata(path) {
        Ok(m) => {
            let d = if m.file_type().is_block_device() {
                m.rdev()
            } else {
                m.dev()
            };
            // glibc's gnu_dev_major / gnu_dev_minor.
            let major = ((d >> 32) & 0xffff_f000) | ((d >> 8) & 0x0000_0fff);
            let minor = ((d >> 12) & 0xffff_ff00) | (d & 0x0000_00ff);
            format!("{major}:{minor}")
        }
        Err(_) => "MAJ:MIN".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The scheduler `calibrate --iocost`'s sweep defaults to is the bracketed one of the
    /// device's `queue/scheduler` (elv_iosched_show), or the only one listed.
    #[test]
    fn the_current_scheduler_is_the_bracketed_name() {
        assert_eq!(
            selected_scheduler("mq-deadline kyber [bfq] none\n").as_deref(),
            Some("bfq")
        );
        assert_eq!(
            selected_scheduler("[mq-deadline] kyber none").as_deref(),
            Some("mq-deadline")
        );
        assert_eq!(selected_scheduler("none\n").as_deref(), Some("none"));
        assert_eq!(selected_scheduler("mq-deadline none"), None);
        assert_eq!(selected_scheduler(""), None);
    }

    fn f(iops: f64, mb_s: f64) -> Figures {
        Figures {
            ios: 1000,
            iops,
            mb_s,
            mean_us: 100.0,
            p50_us: 90.0,
            p99_us: 300.0,
        }
    }

    /// Each figure of the model line comes from its own point: bandwidths in bytes per second
    /// from the 1 MiB sequential points, IOPS from the 4 KiB points.
    #[test]
    fn the_model_line_takes_each_figure_from_its_point() {
        let figs = [
            f(1000.0, 1048.6),
            f(50_000.0, 204.8),
            f(30_000.0, 122.9),
            f(800.0, 838.9),
            f(40_000.0, 163.8),
            f(20_000.0, 81.9),
        ];
        let points: Vec<(Point, Figures)> = IOCOST_PLAN.iter().copied().zip(figs).collect();
        let m = model(&points).unwrap();
        assert_eq!(
            (
                m.rbps,
                m.rseqiops,
                m.rrandiops,
                m.wbps,
                m.wseqiops,
                m.wrandiops
            ),
            (1_048_600_000, 50_000, 30_000, 838_900_000, 40_000, 20_000)
        );
        let e = model(&points[1..]).unwrap_err().to_string();
        assert!(e.contains("read 1m qd32"), "{e}");
    }
}
