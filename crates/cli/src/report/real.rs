//! Plots of real runs (`elevator run --report`), from the executor's request log.

use elevator_real::RunReport;

use super::Sink;
use crate::plot;

fn jobs(run: &RunReport) -> Vec<String> {
    run.jobs.iter().map(|j| j.name.clone()).collect()
}

/// The seek map (offsets on `target`), queue depth and per-job throughput of `run`.
pub fn run_plots(sink: &Sink, target: &str, run: &RunReport) -> anyhow::Result<()> {
    if !sink.is_on() {
        return Ok(());
    }
    let ios = plot::ios_from_real(&run.requests);
    let title = format!("{} on {target}", run.scheduler);
    let end = run.elapsed.as_secs_f64();
    super::sim::request_plots(sink, &run.scheduler, &title, &ios, &jobs(run), end)
}

/// Every job's latency CDF under every scheduler run.
pub fn latency_cdf(sink: &Sink, runs: &[RunReport]) -> anyhow::Result<()> {
    sink.plot(
        "latency-cdf",
        "Latency CDF: every job under every scheduler",
        || {
            let mut series = Vec::new();
            for run in runs {
                let ios = plot::ios_from_real(&run.requests);
                let prefix = format!("{} ", run.scheduler);
                series.extend(plot::latencies_by_job(&ios, &jobs(run), &prefix));
            }
            plot::cdf::latency_cdf("every job under every scheduler", &series)
        },
    )
}
