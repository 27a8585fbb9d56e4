//! Reported latency figures are those of a dense hdrhistogram of every completion (issue 32:
//! jobs keep their latencies sparsely while few; the figures must not move).

use elevator_core::{registry, GroupTree, Op, Settings};
use elevator_sim::hdd::{DriveSpec, Hdd};
use elevator_sim::{Device, JobSlot, Simulation};
use elevator_workload::jobs::fio::{FioJob, FioJobConfig, RwMode};
use elevator_workload::spec::BuildEnv;
use hdrhistogram::Histogram;

/// A normal run: a random reader at depth 8 (thousands of distinct latencies: dense), a
/// sequential reader, and a random writer of a few I/Os (sparse), under deadline on the
/// Cheetah 9LP; every figure of every job equals the figure of a dense histogram (3
/// significant figures, what each job kept before) built from the run's request records.
#[test]
fn every_reported_latency_figure_is_a_dense_histograms() {
    let spec = DriveSpec::builtin("cheetah9lp").expect("built-in drive");
    let dev = Hdd::new(spec);
    let capacity = dev.capacity_sectors();
    let groups = GroupTree::new();
    let s = registry::find("deadline")
        .unwrap()
        .build(&Settings::new(), &groups)
        .unwrap();
    let mut sim = Simulation::new(Box::new(dev), s, groups);
    sim.record_requests();
    let jobs = [
        ("randread", RwMode::RandRead, 8, 6000),
        ("seqread", RwMode::Read, 1, 3000),
        ("randwrite", RwMode::RandWrite, 1, 40),
    ];
    for (i, &(name, rw, iodepth, n)) in jobs.iter().enumerate() {
        let cfg = FioJobConfig {
            rw,
            bs: 4096,
            iodepth,
            number_ios: Some(n),
            ..FioJobConfig::default()
        };
        let job = FioJob::new(cfg, &BuildEnv::new(capacity, i as u64 + 1, name)).unwrap();
        sim.add_job(JobSlot::new(name, Box::new(job)));
    }
    let r = sim.run(None);
    let mut reference: Vec<[Histogram<u64>; 2]> = (0..jobs.len())
        .map(|_| [0, 1].map(|_| Histogram::new(3).unwrap()))
        .collect();
    for q in &r.requests {
        let lat = q.completed.saturating_sub(q.inserted).as_ns().max(1);
        let dir = usize::from(q.op != Op::Read);
        reference[q.job as usize][dir].record(lat).unwrap();
    }
    let mut sparse = 0;
    for (j, refs) in r.jobs.iter().zip(&reference) {
        let s = j.metrics.summary(&j.name, "/", r.end);
        for (d, summary, h) in [
            (&j.metrics.read, &s.read, &refs[0]),
            (&j.metrics.write, &s.write, &refs[1]),
        ] {
            assert_eq!(d.ios, h.len(), "{}", j.name);
            sparse += usize::from(d.latency.is_sparse() && d.ios > 0);
            let ms = |ns: u64| ns as f64 / 1e6;
            let mean = if h.is_empty() { 0.0 } else { h.mean() / 1e6 };
            let want = [
                mean,
                ms(h.value_at_quantile(0.50)),
                ms(h.value_at_quantile(0.90)),
                ms(h.value_at_quantile(0.95)),
                ms(h.value_at_quantile(0.99)),
                ms(h.value_at_quantile(0.999)),
                ms(h.max()),
            ];
            let got = [
                summary.lat_mean_ms,
                summary.lat_p50_ms,
                summary.lat_p90_ms,
                summary.lat_p95_ms,
                summary.lat_p99_ms,
                summary.lat_p999_ms,
                summary.lat_max_ms,
            ];
            assert_eq!(got, want, "{}", j.name);
            assert_eq!(d.latency.min(), h.min(), "{}", j.name);
            assert_eq!(
                d.latency.histogram().stdev().to_bits(),
                h.stdev().to_bits(),
                "{}",
                j.name
            );
        }
    }
    // Both stores were exercised: the writer's few latencies stayed sparse, the random
    // reader's went dense.
    assert!(sparse >= 1, "no job kept its latencies sparsely");
    assert!(!r.jobs[0].metrics.read.latency.is_sparse());
}
