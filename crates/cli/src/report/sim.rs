//! Plots of simulated runs kept with [`Simulation::record_requests`]: what `sim --report`
//! shows for every scheduler, and what the reproduced experiments draw.
//!
//! [`Simulation::record_requests`]: elevator_sim::Simulation::record_requests

use elevator_sim::RunReport;

use super::Sink;
use crate::plot::{self, Io, Samples, Timed};

/// The requests of `run` as plot data, and its job names.
pub fn ios(run: &RunReport) -> (Vec<Io>, Vec<String>) {
    let names = run.jobs.iter().map(|j| j.name.clone()).collect();
    (plot::ios_from_sim(&run.requests), names)
}

/// The seek map of `run`, titled `title`.
pub fn seek_map(sink: &Sink, name: &str, title: &str, run: &RunReport) -> anyhow::Result<()> {
    sink.plot(name, &format!("Seek map: {title}"), || {
        plot::seek_map::seek_map(title, &ios(run).0)
    })
}

/// The seek map, queue depth and per-job throughput of `run`, titled `title`.
pub fn run_plots(sink: &Sink, name: &str, title: &str, run: &RunReport) -> anyhow::Result<()> {
    if !sink.is_on() {
        return Ok(());
    }
    let (ios, jobs) = ios(run);
    request_plots(sink, name, title, &ios, &jobs, run.end.as_secs_f64())
}

/// The seek map, queue depth and per-job throughput of the requests `ios` of a run of `end_s`
/// seconds whose jobs are named `jobs` (simulated or real).
pub fn request_plots(
    sink: &Sink,
    name: &str,
    title: &str,
    ios: &[Io],
    jobs: &[String],
    end_s: f64,
) -> anyhow::Result<()> {
    sink.plot(
        &format!("{name}-seek-map"),
        &format!("Seek map: {title}"),
        || plot::seek_map::seek_map(title, ios),
    )?;
    sink.plot(
        &format!("{name}-queue-depth"),
        &format!("Queue depth: {title}"),
        || plot::queue_depth::queue_depth(title, ios),
    )?;
    let series = plot::completions_by_job(ios, jobs);
    let bin = plot::bin_width(end_s, plot::throughput::BIN_S, 3000);
    sink.plot(
        &format!("{name}-throughput"),
        &format!("Throughput per job: {title}"),
        || plot::throughput::throughput(title, &series, bin),
    )
}

/// The latency CDF of the jobs named in `jobs` (every job if empty) of each run in `runs`,
/// one line per (run label, job); of their reads only if `reads_only`.
pub fn latency_cdf(
    sink: &Sink,
    name: &str,
    title: &str,
    runs: &[(&str, &RunReport)],
    jobs: &[&str],
    reads_only: bool,
) -> anyhow::Result<()> {
    sink.plot(name, &format!("Latency CDF: {title}"), || {
        let mut series: Vec<Samples> = Vec::new();
        for (label, run) in runs {
            let (mut ios, names) = ios(run);
            if reads_only {
                ios.retain(|io| !io.write);
            }
            let by_job = plot::latencies_by_job(&ios, &names, &format!("{label} "));
            series.extend(by_job.into_iter().filter(|s| {
                jobs.is_empty() || jobs.iter().any(|j| s.label == format!("{label} {j}"))
            }));
        }
        plot::cdf::latency_cdf(title, &series)
    })
}

/// Each group's share of the bytes completed over time in `run`.
pub fn group_share(sink: &Sink, name: &str, title: &str, run: &RunReport) -> anyhow::Result<()> {
    sink.plot(name, &format!("Group share: {title}"), || {
        let (ios, _) = ios(run);
        let mut groups: Vec<&str> = run.jobs.iter().map(|j| j.group_path.as_str()).collect();
        groups.sort_unstable();
        groups.dedup();
        let series: Vec<Timed> = groups
            .iter()
            .map(|g| Timed {
                label: g.to_string(),
                events: ios
                    .iter()
                    .filter(|io| run.jobs[io.job].group_path == *g)
                    .map(|io| (io.completed, io.bytes()))
                    .collect(),
            })
            .collect();
        let bin = plot::bin_width(run.end.as_secs_f64(), plot::throughput::BIN_S, 3000);
        plot::share::group_share(title, &series, bin)
    })
}
