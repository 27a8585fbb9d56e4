//! Reports the way fio prints them: fio-like text, and JSON with fio's field names and units
//! (`--output-format=json`), so tools that read fio's JSON read ours.
//!
//! Per job and direction: `io_bytes`, `io_kbytes`, `bw_bytes` (B/s), `bw` (KiB/s), `iops`,
//! `runtime` (ms), `total_ios`, and `clat_ns` / `lat_ns` with `min`, `max`, `mean`, `stddev`,
//! `N` and a `percentile` map over fio's default list. Latency is measured from the moment
//! the job issued the I/O (its insertion into our scheduler) to its completion, so `clat_ns`
//! and `lat_ns` are the same figure here (fio's clat also includes the time its I/O spends in
//! the kernel's scheduler); `slat_ns` is reported as zero.

use elevator_workload::metrics::DirMetrics;
use serde_json::{json, Map, Value};

use crate::exec::{JobReport, RunError, RunReport};

/// fio's default completion-latency percentiles.
pub const FIO_PERCENTILES: [f64; 17] = [
    1.0, 5.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 80.0, 90.0, 95.0, 99.0, 99.5, 99.9, 99.95,
    99.99,
];

/// A job's run time in milliseconds (at least 1, as fio divides by it).
fn runtime_ms(job: &JobReport, end: elevator_core::Nanos) -> u64 {
    let stop = job.metrics.finished.unwrap_or(end);
    (stop.saturating_sub(job.metrics.started).as_ns() / 1_000_000).max(1)
}

fn lat_stats(d: &DirMetrics, with_percentiles: bool) -> Value {
    let h = d.latency.histogram();
    let n = d.ios;
    let mut v = json!({
        "min": if n == 0 { 0 } else { h.min() },
        "max": if n == 0 { 0 } else { h.max() },
        "mean": if n == 0 { 0.0 } else { h.mean() },
        "stddev": if n == 0 { 0.0 } else { h.stdev() },
        "N": n,
    });
    if with_percentiles && n > 0 {
        let mut p = Map::new();
        for q in FIO_PERCENTILES {
            p.insert(format!("{q:.6}"), json!(h.value_at_quantile(q / 100.0)));
        }
        v["percentile"] = Value::Object(p);
    }
    v
}

fn dir_json(d: &DirMetrics, runtime_ms: u64) -> Value {
    let secs = runtime_ms as f64 / 1000.0;
    let bw_bytes = (d.bytes as f64 / secs) as u64;
    json!({
        "io_bytes": d.bytes,
        "io_kbytes": d.bytes / 1024,
        "bw_bytes": bw_bytes,
        "bw": bw_bytes / 1024,
        "iops": d.ios as f64 / secs,
        "runtime": if d.ios == 0 { 0 } else { runtime_ms },
        "total_ios": d.ios,
        "short_ios": 0,
        "drop_ios": 0,
        "slat_ns": {"min": 0, "max": 0, "mean": 0.0, "stddev": 0.0, "N": 0},
        "clat_ns": lat_stats(d, true),
        "lat_ns": lat_stats(d, false),
    })
}

/// fio-compatible JSON for one run. `groupids[i]` is job i's reporting group (fio's
/// `groupid`); `target` is what was run against.
pub fn fio_json(report: &RunReport, groupids: &[u32], target: &str) -> Value {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let jobs: Vec<Value> = report
        .jobs
        .iter()
        .enumerate()
        .map(|(i, j)| {
            let rt = runtime_ms(j, report.elapsed);
            json!({
                "jobname": j.name,
                "groupid": groupids.get(i).copied().unwrap_or(0),
                "error": 0,
                "job_runtime": rt,
                "elapsed": rt.div_ceil(1000),
                "read": dir_json(&j.metrics.read, rt),
                "write": dir_json(&j.metrics.write, rt),
                "trim": dir_json(&DirMetrics::default(), rt),
                "sync": {"total_ios": j.metrics.sync.ios, "lat_ns": lat_stats(&j.metrics.sync, false)},
                "elevator": {"group": j.group, "phase": j.phase, "finished": j.metrics.finished.is_some()},
            })
        })
        .collect();
    json!({
        "fio version": concat!("elevator-", env!("CARGO_PKG_VERSION")),
        "timestamp": now,
        "time": "",
        "global options": {"filename": target},
        "jobs": jobs,
        "disk_util": [disk_util_json(&report.disk, "elevator", report.elapsed)],
        "elevator": {
            "scheduler": report.scheduler,
            "target": target,
            "interrupted": report.interrupted,
            "abandoned_requests": report.abandoned,
            "verified_bytes": report.verified_bytes,
            "elapsed_ms": report.elapsed.as_ns() / 1_000_000,
        },
    })
}

/// One entry of fio's `disk_util` array from the block layer's counters: requests, merges
/// and ticks (ms) per direction, the summed time in queue (`in_queue`, ms) and the share of
/// `elapsed` the device was busy (`util`, percent), as fio computes them from
/// `/sys/block/<dev>/stat`.
pub fn disk_util_json(
    disk: &elevator_core::block::DiskStat,
    name: &str,
    elapsed: elevator_core::Nanos,
) -> Value {
    let ms = |ns: u64| ns / 1_000_000;
    let busy = disk.io_ticks_at(elapsed).as_ns() as f64;
    let util = if elapsed.as_ns() == 0 {
        0.0
    } else {
        (100.0 * busy / elapsed.as_ns() as f64).min(100.0)
    };
    json!({
        "name": name,
        "read_ios": disk.read.ios,
        "write_ios": disk.write.ios,
        "read_sectors": disk.read.sectors,
        "write_sectors": disk.write.sectors,
        "read_merges": disk.read.merges,
        "write_merges": disk.write.merges,
        "read_ticks": ms(disk.read.ticks_ns),
        "write_ticks": ms(disk.write.ticks_ns),
        "in_queue": ms(disk.time_in_queue_ns),
        "util": util,
    })
}

/// The errno fio would report for `error`: the device's own where there is one, `EIO` for a
/// short transfer or a stall, `EINVAL` for an I/O the executor refused, `EILSEQ` for a
/// verification failure (as fio's verify does).
pub fn errno_of(error: &RunError) -> i32 {
    match error {
        RunError::Io { error, .. } | RunError::Backend(error) => {
            error.raw_os_error().unwrap_or(libc::EIO)
        }
        RunError::OutOfRegion { .. }
        | RunError::Unsupported { .. }
        | RunError::Misaligned { .. } => libc::EINVAL,
        RunError::Verify(_) => libc::EILSEQ,
        _ => libc::EIO,
    }
}

/// The job a failure is one job's, if it is.
fn culprit(error: &RunError) -> Option<&str> {
    match error {
        RunError::Io { job, .. }
        | RunError::Short { job, .. }
        | RunError::Misaligned { job, .. }
        | RunError::OutOfRegion { job, .. }
        | RunError::Unsupported { job, .. } => Some(job.as_str()),
        _ => None,
    }
}

/// Mark a report from [`fio_json`] as failed by `error`: the job at fault (every job when
/// the failure is not one job's) gets fio's `error` (the errno, see [`errno_of`]) and
/// `elevator.error` (the message); the run's `elevator.error` holds the message too.
pub fn fio_json_failed(v: &mut Value, error: &RunError) {
    let errno = errno_of(error);
    let message = error.to_string();
    let culprit = culprit(error);
    if let Some(jobs) = v["jobs"].as_array_mut() {
        for j in jobs {
            if culprit.is_none_or(|c| j["jobname"] == c) {
                j["error"] = json!(errno);
                j["elevator"]["error"] = json!(message);
            }
        }
    }
    v["elevator"]["error"] = json!(message);
    v["elevator"]["errno"] = json!(errno);
}

/// Bytes with a binary unit, as fio prints them.
fn human(bytes: f64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = bytes;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    format!("{v:.1}{}", UNITS[u])
}

fn dir_text(name: &str, d: &DirMetrics, rt: u64, out: &mut String) {
    if d.ios == 0 {
        return;
    }
    let secs = rt as f64 / 1000.0;
    out.push_str(&format!(
        "  {name}: IOPS={:.0}, BW={}/s ({:.1}MB/s)({}/{}msec)\n",
        d.ios as f64 / secs,
        human(d.bytes as f64 / secs),
        d.bytes as f64 / 1e6 / secs,
        human(d.bytes as f64),
        rt
    ));
    latency_lines("clat", d, out);
}

/// fio's two latency lines (`{label} (usec): min=...`, `{label} percentiles (usec): ...`).
fn latency_lines(label: &str, d: &DirMetrics, out: &mut String) {
    let h = d.latency.histogram();
    out.push_str(&format!(
        "    {label} (usec): min={:.0}, max={:.0}, avg={:.2}, stdev={:.2}\n",
        h.min() as f64 / 1e3,
        h.max() as f64 / 1e3,
        h.mean() / 1e3,
        h.stdev() / 1e3
    ));
    let pick = [1.0, 50.0, 90.0, 99.0, 99.9];
    let ps: Vec<String> = pick
        .iter()
        .map(|q| {
            format!(
                "{q:.2}th=[{:.0}]",
                h.value_at_quantile(q / 100.0) as f64 / 1e3
            )
        })
        .collect();
    out.push_str(&format!(
        "     {label} percentiles (usec): {}\n",
        ps.join(", ")
    ));
}

/// fio's lines for a job's fsyncs and fdatasyncs, if it did any.
fn sync_text(d: &DirMetrics, out: &mut String) {
    if d.ios == 0 {
        return;
    }
    // fio's `show_ddir_status` for `DDIR_SYNC`: the header, then its latency lines.
    out.push_str("  fsync/fdatasync/sync_file_range/syncfs:\n");
    latency_lines("sync", d, out);
}

/// fio-like text for one run; `error` when it failed: the job at fault (every job when the
/// failure is not one job's) shows its errno as fio prints it (`err=%2d`, [`errno_of`]), as
/// [`fio_json_failed`] marks the JSON. A failed run's text said `err= 0` for the job whose
/// write had failed (ETXTBSY on an active swap file, ENOSPC), beside the error.
pub fn fio_text(report: &RunReport, groupids: &[u32], error: Option<&RunError>) -> String {
    let mut out = format!("scheduler: {}\n", report.scheduler);
    for (i, j) in report.jobs.iter().enumerate() {
        let rt = runtime_ms(j, report.elapsed);
        let errno = error
            .filter(|e| culprit(e).is_none_or(|c| c == j.name))
            .map_or(0, errno_of);
        out.push_str(&format!(
            "{}: (groupid={}, jobs=1, group={}): err={errno:2}\n",
            j.name,
            groupids.get(i).copied().unwrap_or(0),
            j.group
        ));
        dir_text("read", &j.metrics.read, rt, &mut out);
        dir_text("write", &j.metrics.write, rt, &mut out);
        sync_text(&j.metrics.sync, &mut out);
    }
    if report.verified_bytes > 0 {
        out.push_str(&format!(
            "verify: read back and checked {}\n",
            human(report.verified_bytes as f64)
        ));
    }
    if report.interrupted {
        out.push_str(&format!(
            "interrupted: partial figures; {} queued request(s) never dispatched, none left in flight\n",
            report.abandoned
        ));
    }
    out
}

/// The request log of a run (`RunOptions::request_log`) as CSV, one line per request in
/// completion order: the job's name, the operation, first sector and length (512-byte
/// sectors), when it was inserted, dispatched and completed (microseconds since the executor
/// started), and the time it spent queued in our scheduler and at the device (microseconds).
pub fn request_log_csv(report: &RunReport) -> String {
    let mut out = String::from(
        "job,op,sector,sectors,inserted_us,dispatched_us,completed_us,queued_us,device_us\n",
    );
    let us = |n: elevator_core::Nanos| n.as_ns() as f64 / 1000.0;
    for r in &report.requests {
        let job = report.jobs.get(r.job).map_or("?", |j| j.name.as_str());
        out.push_str(&format!(
            "{job},{:?},{},{},{:.1},{:.1},{:.1},{:.1},{:.1}\n",
            r.op,
            r.sector,
            r.sectors,
            us(r.inserted),
            us(r.dispatched),
            us(r.completed),
            us(r.dispatched.saturating_sub(r.inserted)),
            us(r.completed.saturating_sub(r.dispatched)),
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use elevator_core::{Nanos, Op};
    use elevator_workload::metrics::JobMetrics;

    fn report() -> RunReport {
        let mut m = JobMetrics {
            started: Nanos::ZERO,
            finished: Some(Nanos::from_secs(2)),
            ..Default::default()
        };
        for i in 1..=1000u64 {
            m.record(Op::Read, 4096, Nanos::from_us(i));
        }
        m.record(Op::Write, 1 << 20, Nanos::from_ms(3));
        RunReport {
            scheduler: "noop".into(),
            jobs: vec![JobReport {
                name: "j".into(),
                group: "/".into(),
                phase: 0,
                metrics: m,
            }],
            elapsed: Nanos::from_secs(2),
            interrupted: false,
            abandoned: 0,
            verified_bytes: 0,
            requests: Vec::new(),
            disk: Default::default(),
        }
    }

    #[test]
    fn json_has_fios_fields_units_and_percentile_keys() {
        let v = fio_json(&report(), &[3], "/tmp/t");
        let j = &v["jobs"][0];
        assert_eq!(j["jobname"], "j");
        assert_eq!(j["groupid"], 3);
        assert_eq!(j["job_runtime"], 2000);
        let r = &j["read"];
        assert_eq!(r["io_bytes"], 4_096_000);
        assert_eq!(r["total_ios"], 1000);
        assert_eq!(r["bw_bytes"], 2_048_000);
        assert_eq!(r["bw"], 2000);
        assert_eq!(r["iops"], 500.0);
        assert_eq!(r["runtime"], 2000);
        let p = r["clat_ns"]["percentile"].as_object().unwrap();
        assert_eq!(p.len(), 17);
        let p50 = p["50.000000"].as_u64().unwrap();
        assert!((499_000..=501_000).contains(&p50), "{p50}");
        assert!(p.contains_key("99.990000"));
        assert_eq!(r["clat_ns"]["N"], 1000);
        assert_eq!(j["write"]["total_ios"], 1);
        assert_eq!(j["trim"]["total_ios"], 0);
    }

    /// Flushes are fio's `sync` figures: their own JSON object and text lines, apart from
    /// the writes.
    #[test]
    fn flushes_are_reported_as_fios_sync_figures() {
        let mut r = report();
        let m = &mut r.jobs[0].metrics;
        m.record(Op::Flush, 0, Nanos::from_us(700));
        m.record(Op::Flush, 0, Nanos::from_us(900));
        let v = fio_json(&r, &[0], "/tmp/t");
        let j = &v["jobs"][0];
        assert_eq!(j["sync"]["total_ios"], 2);
        assert_eq!(j["write"]["total_ios"], 1, "flushes are not writes");
        let mean = j["sync"]["lat_ns"]["mean"].as_f64().unwrap();
        assert!((799_000.0..=801_000.0).contains(&mean), "{mean}");
        let text = fio_text(&r, &[0], None);
        assert!(
            text.contains("  fsync/fdatasync/sync_file_range/syncfs:\n    sync (usec): min=700"),
            "{text}"
        );
        assert!(text.contains("     sync percentiles (usec): "), "{text}");
        assert!(!fio_text(&report(), &[0], None).contains("sync"));
    }

    #[test]
    fn a_failed_jobs_text_shows_its_errno_not_err_0() {
        let e = RunError::Io {
            job: "j".into(),
            op: "write",
            offset: 0,
            len: 4096,
            error: std::io::Error::from_raw_os_error(libc::ETXTBSY),
        };
        let t = fio_text(&report(), &[0], Some(&e));
        assert!(t.contains("j: (groupid=0, jobs=1, group=/): err=26"), "{t}");
        let other = RunError::Io {
            job: "another".into(),
            op: "write",
            offset: 0,
            len: 4096,
            error: std::io::Error::from_raw_os_error(libc::ETXTBSY),
        };
        let t = fio_text(&report(), &[0], Some(&other));
        assert!(t.contains("err= 0"), "{t}");
    }

    #[test]
    fn text_reports_each_direction_like_fio() {
        let t = fio_text(&report(), &[0], None);
        assert!(t.contains("j: (groupid=0, jobs=1, group=/): err= 0"), "{t}");
        assert!(
            t.contains("  read: IOPS=500, BW=2.0MiB/s (2.0MB/s)(3.9MiB/2000msec)"),
            "{t}"
        );
        assert!(t.contains("  write: IOPS=0"), "{t}");
    }
}
