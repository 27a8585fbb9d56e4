//! The page of `elevator mount --report`: what each process did through the mount, from the
//! submission engine's request log ([`MountLog`]).
//!
//! One table (per process: requests, bytes, latency percentiles) and the request plots of a
//! real run: latency CDF per process, throughput per process over time, queue depth over time
//! and the seek map (in the engine's sector space: file `n` of the mount starts at sector
//! `n << 32`). Latency is from insertion into the scheduler to completion, as for `run`.

use elevator_core::Op;
use elevator_mount::MountLog;

use super::Sink;
use crate::plot::{self, Io};

/// Each process's label: its name and pid ("writeback" alone for the flusher).
pub fn process_labels(log: &MountLog) -> Vec<String> {
    log.requests
        .contexts
        .iter()
        .zip(&log.names)
        .map(|(ctx, name)| match ctx.0 {
            0 => name.clone(),
            pid => format!("{name} ({pid})"),
        })
        .collect()
}

/// Header of [`table_rows`].
pub const TABLE_HEADER: [&str; 10] = [
    "process", "reads", "read MB", "writes", "write MB", "flushes", "mean ms", "p50 ms", "p99 ms",
    "max ms",
];

/// The `p`-quantile (0..=1) of sorted `xs` (nearest rank).
fn quantile(sorted: &[f64], p: f64) -> f64 {
    let i = ((p * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[i - 1]
}

/// One row per process that completed a request: counts, megabytes and the latency of its
/// reads and writes.
pub fn table_rows(log: &MountLog, ios: &[Io]) -> Vec<Vec<String>> {
    let labels = process_labels(log);
    let mb = |b: u64| format!("{:.1}", b as f64 / 1e6);
    labels
        .iter()
        .enumerate()
        .filter_map(|(p, label)| {
            let mine: Vec<&Io> = ios.iter().filter(|io| io.job == p).collect();
            let flushes = log
                .requests
                .requests
                .iter()
                .filter(|r| r.job == p && r.op == Op::Flush)
                .count();
            if mine.is_empty() && flushes == 0 {
                return None;
            }
            let (reads, writes): (Vec<&Io>, Vec<&Io>) = mine.iter().partition(|io| !io.write);
            let mut lat: Vec<f64> = mine.iter().map(|io| io.latency_ms()).collect();
            lat.sort_by(f64::total_cmp);
            let ms = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.2}"));
            let mean = (!lat.is_empty()).then(|| lat.iter().sum::<f64>() / lat.len() as f64);
            let q = |p: f64| (!lat.is_empty()).then(|| quantile(&lat, p));
            Some(vec![
                label.clone(),
                reads.len().to_string(),
                mb(reads.iter().map(|io| io.bytes()).sum()),
                writes.len().to_string(),
                mb(writes.iter().map(|io| io.bytes()).sum()),
                flushes.to_string(),
                ms(mean),
                ms(q(0.5)),
                ms(q(0.99)),
                ms(q(1.0)),
            ])
        })
        .collect()
}

/// The mount's page: a paragraph on what was logged, the per-process table, the latency
/// CDF per process and the request plots. `title` names the mount.
pub fn mount_page(sink: &Sink, title: &str, log: &MountLog) -> anyhow::Result<()> {
    if !sink.is_on() {
        return Ok(());
    }
    let records = &log.requests.requests;
    let ios = plot::ios_from_real(records);
    let end = records
        .iter()
        .map(|r| r.completed.as_secs_f64())
        .fold(0.0, f64::max);
    let mut note = format!(
        "{} requests logged over {end:.1} s from {} processes; scheduler at unmount: {}.",
        records.len(),
        log.requests.contexts.len(),
        log.scheduler
    );
    if log.requests.dropped > 0 {
        note.push_str(&format!(
            " {} earlier requests were not kept (--log-limit): the figures cover the latest.",
            log.requests.dropped
        ));
    }
    sink.para(&note);
    sink.table(
        &format!("Requests per process: {title}"),
        &TABLE_HEADER,
        &table_rows(log, &ios),
    );
    let labels = process_labels(log);
    sink.plot(
        "latency-cdf",
        &format!("Latency CDF per process: {title}"),
        || {
            let series = plot::latencies_by_job(&ios, &labels, "");
            plot::cdf::latency_cdf(title, &series)
        },
    )?;
    super::sim::request_plots(sink, "mount", title, &ios, &labels, end)
}
