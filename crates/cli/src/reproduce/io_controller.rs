//! Vivek Goyal's IO-controller comparison (shared/seeds/001_*, 2009: spring or September,
//! docs/ioband.md "Which release Goyal measured"): group A = 16
//! sequential readers against group B = n sequential readers (n = 1, 2, 4, 8, 16), two
//! cgroups of equal weight on one disk, under vanilla CFQ (groups ignored), the IO scheduler
//! controller (CFQ group scheduling) and dm-ioband over vanilla CFQ.
//!
//! Ours: the built-in 4200 rpm ATA drive `laptop-4200` (the built-in drive whose totals come
//! nearest Goyal's: about 12-15 MB/s with these 17 readers under each setup, where his rows
//! total 12.5-14.1 MB/s; the DiskSim-validated drives, bus-limited at about 4.4 MB/s, pass
//! a third of his bios; `DRIVE`), every reader an fio
//! sequential reader with fio's default 4 KiB blocks, one at a time (under dm-ioband: the
//! 128 KiB readahead bios 2.6.31 sends for such a reader, two in flight, [`Reader`]), over its
//! own file (1/40 of the disk, files side by side), for 30 simulated seconds; the policies are `cfq-flat`,
//! `cfq` and `ioband+cfq-flat`, all at their defaults. Bandwidths are KB/s
//! (1024 bytes, as fio printed them) over the run, latencies the largest completion latency
//! of any request of the group.

use anyhow::Context;
use elevator_core::{Nanos, Settings};
use elevator_sim::scenario::Scenario;
use elevator_sim::RunReport;
use rayon::prelude::*;
use serde::Serialize;

use crate::output::{self, say};
use crate::progress;
use crate::report::{self, Sink};
use crate::stats::Estimate;

/// The published table (targets/io-controller-2009.csv): setup, n, A max / min / aggregate
/// KB/s, A max latency ms, B aggregate KB/s, B max latency ms.
type Published = (&'static str, u32, f64, f64, f64, f64, f64, f64);

/// The published rows.
const PUBLISHED: [Published; 15] = [
    (
        "vanilla-cfq",
        1,
        1015.0,
        293.0,
        13705.0,
        2573.0,
        714.0,
        1619.0,
    ),
    (
        "vanilla-cfq",
        2,
        885.0,
        263.0,
        12372.0,
        2110.0,
        1507.0,
        1890.0,
    ),
    (
        "vanilla-cfq",
        4,
        833.0,
        248.0,
        11156.0,
        1924.0,
        2276.0,
        1924.0,
    ),
    (
        "vanilla-cfq",
        8,
        679.0,
        180.0,
        9351.0,
        2368.0,
        4136.0,
        2367.0,
    ),
    (
        "vanilla-cfq",
        16,
        518.0,
        149.0,
        6739.0,
        3168.0,
        6626.0,
        3169.0,
    ),
    (
        "io-controller+cfq",
        1,
        513.0,
        167.0,
        7003.0,
        3415.0,
        5826.0,
        427.0,
    ),
    (
        "io-controller+cfq",
        2,
        505.0,
        169.0,
        6892.0,
        3245.0,
        6553.0,
        334.0,
    ),
    (
        "io-controller+cfq",
        4,
        514.0,
        123.0,
        6939.0,
        3457.0,
        6556.0,
        1013.0,
    ),
    (
        "io-controller+cfq",
        8,
        495.0,
        130.0,
        6808.0,
        3148.0,
        6591.0,
        1648.0,
    ),
    (
        "io-controller+cfq",
        16,
        502.0,
        124.0,
        6717.0,
        3132.0,
        6481.0,
        3132.0,
    ),
    (
        "dm-ioband+cfq",
        1,
        944.0,
        278.0,
        11020.0,
        1468.0,
        1749.0,
        1438.0,
    ),
    (
        "dm-ioband+cfq",
        2,
        809.0,
        305.0,
        9110.0,
        1456.0,
        3709.0,
        1330.0,
    ),
    (
        "dm-ioband+cfq",
        4,
        834.0,
        228.0,
        8162.0,
        1751.0,
        4941.0,
        1717.0,
    ),
    (
        "dm-ioband+cfq",
        8,
        730.0,
        179.0,
        8367.0,
        2098.0,
        5485.0,
        2095.0,
    ),
    (
        "dm-ioband+cfq",
        16,
        630.0,
        166.0,
        7197.0,
        2851.0,
        6446.0,
        2795.0,
    ),
];

/// The three setups, the policy each runs under here and how its readers issue.
const SETUPS: [(&str, &str, &str, Reader); 3] = [
    (
        "vanilla-cfq",
        "cfq-flat",
        "vanilla CFQ (groups ignored)",
        FIO_READER,
    ),
    (
        "io-controller+cfq",
        "cfq",
        "IO scheduler controller + CFQ (CFQ group scheduling)",
        FIO_READER,
    ),
    (
        "dm-ioband+cfq",
        "ioband+cfq-flat",
        "dm-ioband + vanilla CFQ",
        READAHEAD_READER,
    ),
];

/// How every reader of a setup issues: the size of its requests and how many it keeps in
/// flight.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reader {
    /// Bytes per request.
    pub bs: u64,
    /// Requests in flight per reader.
    pub depth: u32,
}

/// fio's default block size, one read at a time: the readers' requests for vanilla CFQ and
/// the group scheduler (docs/cfq.md says why they keep 4 KiB).
const FIO_READER: Reader = Reader { bs: 4096, depth: 1 };

/// What reaches dm-ioband from a buffered sequential reader (fio's default, `direct=0`) on
/// 2.6.31: one bio per readahead window, and the window of `ondemand_readahead` settles at
/// the default maximum `VM_MAX_READAHEAD` of 128 KiB with `async_size` equal to its size, so
/// `PG_readahead` marks the first page of each window. `do_generic_file_read` starts the
/// next window (`page_cache_async_readahead`) when the reader reaches that page, before it
/// waits for the page to come uptodate: reaching window k starts window k + 1 while k may
/// still be in flight, so while the disk is the bottleneck every reader has two windows in
/// flight, and the next starts as soon as the older completes. dm-ioband charges one token
/// per bio whatever its size (`prepare_token`), so the bio size sets its token clock.
/// On a 2.6.31 dm device (`max_sectors` 255) the submitter builds each window as two bios,
/// 31 pages and 1 (ioband's `dm_max_sectors` tunable); the reproduce does not set it yet:
/// docs/ioband.md ("The dm device's bio size") gives what it does to the table.
/// docs/ioband.md ("Goyal's table").
const READAHEAD_READER: Reader = Reader {
    bs: 128 * 1024,
    depth: 2,
};

const NS: [u32; 5] = [1, 2, 4, 8, 16];
pub(crate) const RUNTIME_S: u64 = 30;

/// The drive of the reproduce: the built-in drive whose totals come nearest the published
/// ones. Goyal's mail names no drive; it gives every row's aggregate bandwidth, 12.5-14.1
/// MB/s (A + B) under every setup. `laptop-4200` (UDMA/100, 27 MB/s at the outer zone)
/// moves 10.7-11.8 MB/s under vanilla CFQ (4 KiB readers), 8.7-13.3 under CFQ's groups and
/// 13.2-15.2 under dm-ioband (128 KiB readahead bios); the DiskSim-validated drives move
/// 2.6-4.5 MB/s (the 18ES, the Atlas 10K and the Cheetah 9LP are bus-limited at 0.1 ms a
/// sector) and the HP drives less. dm-ioband acts once per token epoch, and an epoch is a
/// count of bios, so a drive passing a third of Goyal's bios sees a third of his epochs in
/// the same 30 s (docs/ioband.md, "The drive"). Chosen on the totals, never on B's share.
pub(crate) const DRIVE: &str = "laptop-4200";

/// The drive the reproduce ran on until branch seeds6 (DiskSim-validated, bus-limited at
/// about 4.4 MB/s): io-control-today's share runs start from its scenario, and the tests
/// that show what a third of Goyal's bio rate does to dm-ioband run on it.
const DRIVE_18ES: &str = "ibm18es";

/// One run (one setup, one n, one seed), with the CSV's column names.
#[derive(Clone, Debug, PartialEq)]
pub struct Sample {
    /// Largest per-reader bandwidth in A, KB/s.
    pub a_max_bw: f64,
    /// Smallest per-reader bandwidth in A, KB/s.
    pub a_min_bw: f64,
    /// A's aggregate bandwidth, KB/s.
    pub a_agg_bw: f64,
    /// A's largest completion latency, ms.
    pub a_max_lat_ms: f64,
    /// B's aggregate bandwidth, KB/s.
    pub b_agg_bw: f64,
    /// B's largest completion latency, ms.
    pub b_max_lat_ms: f64,
}

impl Sample {
    /// B's share of the aggregate bandwidth.
    pub fn b_share(&self) -> f64 {
        self.b_agg_bw / (self.a_agg_bw + self.b_agg_bw)
    }
}

/// One row of the table and the JSON: a setup at one n, published or ours over the seeds.
#[derive(Serialize, Clone, Debug, PartialEq)]
pub struct Row {
    /// vanilla-cfq, io-controller+cfq or dm-ioband+cfq.
    pub setup: String,
    /// Readers in group B.
    pub n: u32,
    /// Largest per-reader bandwidth in A, KB/s.
    pub a_max_bw: Estimate,
    /// Smallest per-reader bandwidth in A, KB/s.
    pub a_min_bw: Estimate,
    /// A's aggregate bandwidth, KB/s.
    pub a_agg_bw: Estimate,
    /// A's largest completion latency, ms.
    pub a_max_lat_ms: Estimate,
    /// B's aggregate bandwidth, KB/s.
    pub b_agg_bw: Estimate,
    /// B's largest completion latency, ms.
    pub b_max_lat_ms: Estimate,
    /// B's share of the aggregate bandwidth (ours: per seed, then over the seeds).
    pub b_share: Estimate,
    /// published or elevator.
    pub source: &'static str,
}

impl Row {
    /// Our row from one sample per seed.
    fn of(setup: &str, n: u32, samples: &[Sample]) -> Row {
        let e = |f: fn(&Sample) -> f64| Estimate::of(samples.iter().map(f).collect());
        Row {
            setup: setup.to_string(),
            n,
            a_max_bw: e(|s| s.a_max_bw),
            a_min_bw: e(|s| s.a_min_bw),
            a_agg_bw: e(|s| s.a_agg_bw),
            a_max_lat_ms: e(|s| s.a_max_lat_ms),
            b_agg_bw: e(|s| s.b_agg_bw),
            b_max_lat_ms: e(|s| s.b_max_lat_ms),
            b_share: e(Sample::b_share),
            source: "elevator",
        }
    }
}

#[derive(Serialize)]
struct Out {
    experiment: &'static str,
    /// The seeds every measured figure ran with, in the order of its `per_seed` values.
    seeds: Vec<u64>,
    rows: Vec<Row>,
    /// Today's controllers (io_control_today): protection and share tables.
    today: super::io_control_today::Today,
}

/// The scenario for `n` readers in B on the IBM Ultrastar 18ES (`drive = "ibm18es"`, which
/// io-control-today's share runs replace by their own drive), as scenario-file text.
pub fn scenario_text(n: u32) -> String {
    scenario_text_reader(n, FIO_READER, DRIVE_18ES)
}

/// The scenario for `n` readers in B on `drive`, every reader issuing as `reader` says.
fn scenario_text_reader(n: u32, reader: Reader, drive: &str) -> String {
    let Reader { bs, depth } = reader;
    let mut s = format!(
        "name = \"io-controller-n{n}\"\n\
         description = \"16 sequential readers in /a against {n} in /b, equal weights\"\n\
         drive = \"{drive}\"\nseed = 1\n\n\
         [[group]]\npath = \"/a\"\n\n[[group]]\npath = \"/b\"\n"
    );
    let jobs = (0..16).map(|i| ("a", i)).chain((0..n).map(|i| ("b", i)));
    for (slot, (g, i)) in jobs.enumerate() {
        s.push_str(&format!(
            "\n[[job]]\nname = \"{g}{i}\"\ngroup = \"/{g}\"\nkind = \"fio\"\nrw = \"read\"\n\
             bs = {bs}\niodepth = {depth}\noffset_frac = {:.6}\nsize_frac = 0.025\ntime_based = true\n\
             runtime_ms = {}\n",
            slot as f64 / 40.0,
            RUNTIME_S * 1000
        ));
    }
    s
}

/// One setup at one `n` and one seed on `drive`, its requests recorded if `record`.
fn simulate(
    policy: &str,
    n: u32,
    reader: Reader,
    drive: &str,
    wakeup: Nanos,
    seed: u64,
    record: bool,
) -> anyhow::Result<RunReport> {
    let mut scenario = Scenario::parse(
        &scenario_text_reader(n, reader, drive),
        "builtin:io-controller",
        None,
    )
    .context("the io-controller scenario")?;
    scenario.wakeup = wakeup;
    let sched = scenario.scheduler(policy, &Settings::new())?;
    let mut sim = scenario.simulation(sched, Some(seed))?;
    if record {
        sim.record_requests();
    }
    Ok(sim.run(scenario.limit))
}

/// The figures of one run with `n` readers in B.
fn sample_of(report: &RunReport, n: u32) -> anyhow::Result<Sample> {
    let kb_s = |bytes: u64| bytes as f64 / 1024.0 / RUNTIME_S as f64;
    let group = |path: &str| {
        report
            .jobs
            .iter()
            .filter(|j| j.group_path == path)
            .map(|j| {
                (
                    kb_s(j.metrics.read.bytes),
                    j.metrics.read.latency.max() as f64 / 1e6,
                )
            })
            .collect::<Vec<_>>()
    };
    let (a, b) = (group("/a"), group("/b"));
    anyhow::ensure!(
        a.len() == 16 && b.len() == n as usize,
        "jobs missing from the report"
    );
    let max = |v: &[(f64, f64)], f: fn(&(f64, f64)) -> f64| v.iter().map(f).fold(0.0, f64::max);
    Ok(Sample {
        a_max_bw: max(&a, |x| x.0),
        a_min_bw: a.iter().map(|x| x.0).fold(f64::INFINITY, f64::min),
        a_agg_bw: a.iter().map(|x| x.0).sum(),
        a_max_lat_ms: max(&a, |x| x.1),
        b_agg_bw: b.iter().map(|x| x.0).sum(),
        b_max_lat_ms: max(&b, |x| x.1),
    })
}

/// The readers in B of the runs the report draws ([`plots`]).
const PLOTTED_N: u32 = 1;

/// Every setup at every n over `seeds` (in parallel), in the published order; with
/// `record_seed`, also each setup's run with [`PLOTTED_N`] readers in B at that seed, its
/// requests recorded, in [`SETUPS`] order (the report's pictures: a run the figures need
/// anyway, where a second run of the same setup and seed only to record it was made before).
pub fn measure(
    wakeup: Nanos,
    seeds: &[u64],
    record_seed: Option<u64>,
) -> anyhow::Result<(Vec<Row>, Vec<RunReport>)> {
    let cases: Vec<(&str, &str, Reader, u32)> = SETUPS
        .iter()
        .flat_map(|&(setup, policy, _, reader)| NS.iter().map(move |&n| (setup, policy, reader, n)))
        .collect();
    let runs: Vec<(usize, u64)> = (0..cases.len())
        .flat_map(|c| seeds.iter().map(move |&s| (c, s)))
        .collect();
    let bar = progress::bar(runs.len(), "io-controller");
    let measured: Vec<(Sample, Option<RunReport>)> = runs
        .par_iter()
        .map(|&(c, seed)| {
            let (_, policy, reader, n) = cases[c];
            let record = n == PLOTTED_N && record_seed == Some(seed);
            let r = simulate(policy, n, reader, DRIVE, wakeup, seed, record).and_then(|run| {
                let sample = sample_of(&run, n)?;
                Ok((sample, record.then_some(run)))
            });
            bar.inc(1);
            r
        })
        .collect::<anyhow::Result<_>>()?;
    bar.finish_and_clear();
    let mut samples = Vec::with_capacity(measured.len());
    let mut recorded = Vec::new();
    for (sample, run) in measured {
        samples.push(sample);
        recorded.extend(run);
    }
    let rows = cases
        .iter()
        .zip(samples.chunks(seeds.len()))
        .map(|(&(setup, _, _, n), s)| Row::of(setup, n, s))
        .collect();
    Ok((rows, recorded))
}

fn published_row(p: &Published) -> Row {
    let e = Estimate::published;
    Row {
        setup: p.0.to_string(),
        n: p.1,
        a_max_bw: e(p.2),
        a_min_bw: e(p.3),
        a_agg_bw: e(p.4),
        a_max_lat_ms: e(p.5),
        b_agg_bw: e(p.6),
        b_max_lat_ms: e(p.7),
        b_share: e(p.6 / (p.4 + p.6)),
        source: "published",
    }
}

/// The report's pictures: each group's share over time with one reader in B, under every
/// setup (`runs`: the recorded run of each at `seed`, in [`SETUPS`] order).
fn plots(report: &Sink, runs: &[RunReport], seed: u64) -> anyhow::Result<()> {
    if !report.is_on() {
        return Ok(());
    }
    for ((_, policy, title, _), run) in SETUPS.iter().zip(runs) {
        report::sim::group_share(
            report,
            &format!("io-controller-share-{policy}"),
            &format!("{title} [{policy}]: 16 readers in /a, 1 in /b (seed {seed})"),
            run,
        )?;
    }
    Ok(())
}

/// Print the tables; return the JSON.
pub fn run(opts: &super::Opts) -> anyhow::Result<serde_json::Value> {
    let report = &opts.report;
    say!("IO controller comparison (Vivek Goyal, 2009): group A = 16 sequential");
    say!("readers, group B = n sequential readers, equal weights; 4 KiB reads (under");
    say!("dm-ioband 128 KiB readahead bios, two in flight per reader) for {RUNTIME_S} s on a");
    say!("simulated 4200 rpm ATA drive ({DRIVE}: the built-in drive whose totals come");
    say!("nearest Goyal's). Each cell: published / ours.");
    say!(
        "Bandwidth KB/s, latency ms. {}\n",
        super::seeds_note(&opts.seeds)
    );
    super::note_wakeup(opts.wakeup);
    let seed = opts.seeds[0];
    let (ours, recorded) = measure(opts.wakeup, &opts.seeds, report.is_on().then_some(seed))?;
    let mut json_rows = Vec::new();
    for (setup, policy, title, _) in SETUPS {
        say!("{title} [{policy}]");
        let mut rows = Vec::new();
        for p in PUBLISHED.iter().filter(|p| p.0 == setup) {
            let theirs = published_row(p);
            let r = ours
                .iter()
                .find(|r| r.setup == setup && r.n == p.1)
                .expect("measured");
            let cell = |a: &Estimate, b: &Estimate| format!("{} / {}", a.show(0), b.show(0));
            let pct = |e: &Estimate| Estimate {
                mean: 100.0 * e.mean,
                ci95: e.ci95.map(|c| 100.0 * c),
                per_seed: Vec::new(),
            };
            rows.push(vec![
                format!("{}", p.1),
                cell(&theirs.a_max_bw, &r.a_max_bw),
                cell(&theirs.a_min_bw, &r.a_min_bw),
                cell(&theirs.a_agg_bw, &r.a_agg_bw),
                cell(&theirs.a_max_lat_ms, &r.a_max_lat_ms),
                cell(&theirs.b_agg_bw, &r.b_agg_bw),
                cell(&theirs.b_max_lat_ms, &r.b_max_lat_ms),
                format!(
                    "{}% / {}%",
                    pct(&theirs.b_share).show(0),
                    pct(&r.b_share).show(0)
                ),
            ]);
            json_rows.push(theirs);
            json_rows.push(r.clone());
        }
        let header = [
            "n",
            "A max-bw",
            "A min-bw",
            "A agg-bw",
            "A max-lat",
            "B agg-bw",
            "B max-lat",
            "B share",
        ];
        output::say_str(&output::figures_table(&header, &rows));
        say!();
        if report.is_on() && setup == SETUPS[0].0 {
            report.heading("The IO controller comparison (Vivek Goyal, 2009)");
            report.para(
                "Group A = 16 sequential readers, group B = n sequential readers, equal \
                 weights, on a simulated 4200 rpm ATA drive (laptop-4200, the built-in drive \
                 whose totals come nearest Goyal's). Each cell: published / ours; bandwidth \
                 KB/s, latency ms.",
            );
        }
        report.table(
            &format!("{title} [{policy}]. {}", super::seeds_note(&opts.seeds)),
            &header,
            &rows,
        );
    }
    plots(report, &recorded, seed)?;
    let today = super::io_control_today::run(&opts.seeds, &super::io_control_today::DRIVES)?;
    Ok(serde_json::to_value(Out {
        experiment: "io-controller",
        seeds: opts.seeds.clone(),
        rows: json_rows,
        today,
    })?)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Run one policy at one `n` and one seed on the reproduce's drive, its readers issuing as
    /// `reader` says.
    fn measure_one(
        policy: &str,
        n: u32,
        reader: Reader,
        wakeup: Nanos,
        seed: u64,
    ) -> anyhow::Result<Sample> {
        measure_on(policy, n, reader, DRIVE, wakeup, seed)
    }

    /// The same on `drive`.
    fn measure_on(
        policy: &str,
        n: u32,
        reader: Reader,
        drive: &str,
        wakeup: Nanos,
        seed: u64,
    ) -> anyhow::Result<Sample> {
        sample_of(&simulate(policy, n, reader, drive, wakeup, seed, false)?, n)
    }

    fn share(policy: &str, n: u32) -> Sample {
        measure_one(policy, n, FIO_READER, Nanos::ZERO, 1).unwrap()
    }

    fn share_reader(policy: &str, n: u32, reader: Reader) -> Sample {
        measure_one(policy, n, reader, Nanos::ZERO, 1).unwrap()
    }

    /// The same on the 18ES, the reproduce's drive until branch seeds6.
    fn share_18es(policy: &str, n: u32, reader: Reader) -> Sample {
        measure_on(policy, n, reader, DRIVE_18ES, Nanos::ZERO, 1).unwrap()
    }

    #[test]
    fn vanilla_cfq_gives_b_a_share_growing_with_its_readers() {
        assert!(share("cfq-flat", 1).b_share() <= 0.15);
        assert!(share("cfq-flat", 16).b_share() >= 0.40);
    }

    #[test]
    fn group_scheduling_gives_b_half_for_every_n_and_cuts_its_latency() {
        for n in NS {
            let r = share("cfq", n);
            assert!(
                (0.45..=0.55).contains(&r.b_share()),
                "n={n}: {:.3}",
                r.b_share()
            );
        }
        let vanilla = share("cfq-flat", 1);
        let groups = share("cfq", 1);
        assert!(groups.b_max_lat_ms < vanilla.b_max_lat_ms);
    }

    /// The published aggregate (A + B) of `setup` at `n`, KB/s.
    fn published_total(setup: &str, n: u32) -> f64 {
        let p = PUBLISHED
            .iter()
            .find(|p| p.0 == setup && p.1 == n)
            .expect("published row");
        p.4 + p.6
    }

    #[test]
    fn the_reproduce_drive_moves_about_goyals_totals_where_the_18es_moves_a_third() {
        // The drive is chosen on the totals Goyal's mail gives for every row (A + B, 12.5 to
        // 14.1 MB/s), never on B's share. laptop-4200 moves 0.65 to 1.2 times them under
        // every setup and n (fewest under CFQ's groups with 8 and 16 readers in B: its group
        // switches seek between the two groups' files); the DiskSim-validated 18ES, whose
        // bus takes 0.101 ms a sector, a fifth to a third.
        for (setup, policy, _, reader) in SETUPS {
            for n in NS {
                let want = published_total(setup, n);
                let s = share_reader(policy, n, reader);
                let ours = (s.a_agg_bw + s.b_agg_bw) / want;
                assert!(
                    (0.65..=1.25).contains(&ours),
                    "{setup} n={n}: {ours:.2} of the published total"
                );
                let s = share_18es(policy, n, reader);
                let slow = (s.a_agg_bw + s.b_agg_bw) / want;
                assert!(
                    slow < 0.35,
                    "{setup} n={n} on the 18ES: {slow:.2} of the published total"
                );
            }
        }
    }

    #[test]
    fn ioband_with_readahead_bios_is_within_ten_points_at_one_two_eight_and_sixteen_readers_in_b() {
        // Published (dm-ioband + CFQ): B's share 14, 29, 40 and 47 % at n = 1, 2, 8, 16. n = 4
        // (38 %) is not reached: the next test. Under both releases the mail may have
        // measured (docs/ioband.md, "Which release Goyal measured"): the late-2009 source
        // (the reproduce's) and the read/write one (v1.10 and before, release = 10).
        let mut v1_10 = Settings::new();
        v1_10.set("release", 10);
        for (n, published) in [(1, 0.14), (2, 0.29), (8, 0.40), (16, 0.47)] {
            let band = share_reader("ioband+cfq-flat", n, READAHEAD_READER).b_share();
            let old = share_of(
                DRIVE,
                "ioband+cfq-flat",
                n,
                READAHEAD_READER,
                &v1_10,
                RUNTIME_S,
            );
            for (release, s) in [(14, band), (10, old)] {
                assert!(
                    (s - published).abs() <= 0.10,
                    "release {release}, n={n}: {s:.3} against {published}"
                );
            }
        }
    }

    #[test]
    fn four_readers_in_b_take_half_once_epochs_come_on_either_drive() {
        // Why 38 % at n = 4 is not reached (docs/ioband.md, "n = 4"). B's four buffered
        // readers keep eight readahead windows in flight, twice io_throttle (4). Once B is
        // the dominant group (really active, with the most tokens: consume_token) and A has
        // spent its tokens, make_global_epoch refuses a new epoch while B's iopriority *
        // PROCEED_THRESHOLD exceeds IOBAND_IOPRIO_BASE and io_throttle or more bios are in
        // flight: until B has spent 7/8 of its tokens, A waits in the target and CFQ below
        // serves B alone. Each epoch B passes nearly as many bios as A, so B gets about half
        // once epochs come: on the reproduce's drive within 30 s, on the 18ES within 120 s
        // (its 33 % in 30 s was its first epoch's). The read/write release (v1.10 and before:
        // ioband's release = 10, docs/ioband.md "Which release Goyal measured") takes the same
        // veto with smaller epochs (set_weight: 171 tokens a group, not 256), and B gets half
        // too.
        let fast = share_reader("ioband+cfq-flat", 4, READAHEAD_READER).b_share();
        let slow_long = share_over(DRIVE_18ES, "ioband+cfq-flat", 4, READAHEAD_READER, 120);
        let mut v1_10 = Settings::new();
        v1_10.set("release", 10);
        let release_10 = share_of(
            DRIVE,
            "ioband+cfq-flat",
            4,
            READAHEAD_READER,
            &v1_10,
            RUNTIME_S,
        );
        for (what, s) in [
            ("reproduce, 30 s", fast),
            ("18ES, 120 s", slow_long),
            ("release 10, reproduce, 30 s", release_10),
        ] {
            assert!((0.45..=0.52).contains(&s), "{what}: {s:.3}");
        }
        assert!(fast - 0.38 > 0.10, "{fast:.3}");
    }

    #[test]
    fn on_the_18es_group_a_passes_too_few_bios_in_30_s_for_a_second_refill() {
        // The epoch-count bound behind the 18ES's n = 1 and 2 (docs/ioband.md, "The drive").
        // A spends one token per bio (prepare_token). It starts with 256 (768 * 100 / 300:
        // __set_weight), and its first refill hands it its 256 plus 512 of the tokens nobody
        // claimed in the first epoch (is_token_left's extra; core's
        // `the_first_refill_hands_the_drained_group_the_tokens_nobody_claimed_in_the_first_epoch`):
        // 1024 bios before a second refill can come. On the 18ES A passes fewer than that in
        // 30 s, so dm-ioband refills it at most once and B's one or two readers get vanilla
        // CFQ's share. A refill is at most 1024 tokens (an allowance of up to carryover = 2
        // epochs of 256, and an extra under 512), so on the reproduce's drive, where A passes
        // over 256 + 2 * 1024 bios, A goes through at least three epochs and B gets more than
        // vanilla CFQ's share.
        let a_bios = |s: &Sample| s.a_agg_bw * RUNTIME_S as f64 / 128.0;
        for n in [1, 2] {
            let slow = share_18es("ioband+cfq-flat", n, READAHEAD_READER);
            let vanilla = share_18es("cfq-flat", n, READAHEAD_READER).b_share();
            assert!(a_bios(&slow) < 1024.0, "n={n}: {:.0}", a_bios(&slow));
            assert!(
                (slow.b_share() - vanilla).abs() <= 0.01,
                "n={n}: {:.3} against vanilla CFQ's {vanilla:.3}",
                slow.b_share()
            );
            let fast = share_reader("ioband+cfq-flat", n, READAHEAD_READER);
            assert!(a_bios(&fast) > 2304.0, "n={n}: {:.0}", a_bios(&fast));
            assert!(
                fast.b_share() > vanilla + 0.05,
                "n={n}: {:.3} against vanilla CFQ's {vanilla:.3}",
                fast.b_share()
            );
        }
    }

    #[test]
    fn with_readahead_bios_an_epoch_outlasts_most_of_the_run_so_one_reader_gets_vanillas_share() {
        // On the 18ES (docs/ioband.md, "Goyal's table"). dm-ioband
        // charges a token per bio (prepare_token). Each epoch group A gets its 256 tokens (the
        // bucket of 768 over the default group, /a and /b: __set_weight) plus about as many
        // again of the tokens the default group and B left unclaimed (is_token_left's extra).
        // With 128 KiB readahead bios (two in flight per reader) this disk passes about 32
        // of A's bios a second, so A runs dry about every 16 s: in 30 s dm-ioband holds A
        // about once, and the lone reader of B gets vanilla CFQ's share. Its two windows
        // never make io_throttle (4) bios in flight on their own, so even then the veto
        // holds only while A's own bios drain (core's
        // `a_lone_readers_two_readahead_windows_hold_the_epoch_only_while_the_drained_groups_own_bios_drain`). With 4 KiB requests A runs dry every second or so and
        // each time make_global_epoch's veto (B dominant, really active after 256 / 8 = 32
        // tokens: consume_token) holds A until fewer than io_throttle requests are in flight,
        // and B gets about half. The published 14 % lies between the two.
        let vanilla = share_18es("cfq-flat", 1, READAHEAD_READER).b_share();
        let band = share_18es("ioband+cfq-flat", 1, READAHEAD_READER).b_share();
        assert!((band - vanilla).abs() <= 0.01, "{vanilla:.3} {band:.3}");
        assert!(band < 0.14, "{band:.3}");
        let band_4k = share_18es("ioband+cfq-flat", 1, FIO_READER).b_share();
        assert!(band_4k > 0.14 + 0.20, "{band_4k:.3}");
    }

    /// B's share of the bandwidth in a run of `seconds` on `drive` (seed 1).
    fn share_over(drive: &str, policy: &str, n: u32, reader: Reader, seconds: u64) -> f64 {
        share_of(drive, policy, n, reader, &Settings::new(), seconds)
    }

    /// The same with `settings` for the policy.
    fn share_of(
        drive: &str,
        policy: &str,
        n: u32,
        reader: Reader,
        settings: &Settings,
        seconds: u64,
    ) -> f64 {
        let text = scenario_text_reader(n, reader, drive).replace(
            &format!("runtime_ms = {}\n", RUNTIME_S * 1000),
            &format!("runtime_ms = {}\n", seconds * 1000),
        );
        let scenario = Scenario::parse(&text, "test:io-controller-long", None).unwrap();
        let sched = scenario.scheduler(policy, settings).unwrap();
        let report = scenario
            .simulation(sched, Some(1))
            .unwrap()
            .run(scenario.limit);
        let bytes = |path: &str| {
            report
                .jobs
                .iter()
                .filter(|j| j.group_path == path)
                .map(|j| j.metrics.read.bytes)
                .sum::<u64>() as f64
        };
        bytes("/b") / (bytes("/a") + bytes("/b"))
    }

    #[test]
    fn two_readers_in_b_do_not_take_half_once_epochs_come_in_a_long_run() {
        // docs/ioband.md. On the 18ES. B's two buffered readers keep exactly io_throttle (4) readahead
        // windows in flight. When A runs dry, make_global_epoch holds A's refill while B
        // (dominant) has over 1/8 of its tokens and 4 or more bios are in flight; the
        // kernel decides that from ioband_end_io's conductor, queued before the completed
        // bio wakes its reader, so with 3 in flight A is refilled at B's next completion.
        // When our conductor ran at the next dispatch instead, after the reader's
        // same-instant resubmission had brought B back to 4, the veto held until B had
        // spent 7/8 of its tokens, and in 120 s (a few epochs on this disk) B took 49%.
        let vanilla = share_over(DRIVE_18ES, "cfq-flat", 2, READAHEAD_READER, 120);
        let band = share_over(DRIVE_18ES, "ioband+cfq-flat", 2, READAHEAD_READER, 120);
        assert!(band < 0.25, "{band:.3}");
        assert!(
            band > vanilla,
            "{band:.3} against vanilla CFQ's {vanilla:.3}"
        );
    }

    #[test]
    fn weights_100_200_400_on_the_simulated_disk() {
        let mut text = format!("name = \"weights\"\ndrive = \"{DRIVE_18ES}\"\nseed = 1\n");
        for (g, w) in [("x", 100), ("y", 200), ("z", 400)] {
            text.push_str(&format!("\n[[group]]\npath = \"/{g}\"\nweight = {w}\n"));
        }
        for (slot, g) in ["x", "y", "z"].iter().flat_map(|g| [g; 4]).enumerate() {
            text.push_str(&format!(
                "\n[[job]]\nname = \"{g}{slot}\"\ngroup = \"/{g}\"\nkind = \"fio\"\nrw = \"read\"\n\
                 bs = 4096\noffset_frac = {:.6}\nsize_frac = 0.05\ntime_based = true\n\
                 runtime_ms = 60000\n",
                slot as f64 / 15.0
            ));
        }
        let scenario = Scenario::parse(&text, "test:weights", None).unwrap();
        let sched = scenario.scheduler("cfq", &Settings::new()).unwrap();
        let report = scenario
            .simulation(sched, None)
            .unwrap()
            .run(scenario.limit);
        let bytes = |path: &str| -> u64 {
            report
                .jobs
                .iter()
                .filter(|j| j.group_path == path)
                .map(|j| j.metrics.read.bytes)
                .sum()
        };
        let total = (bytes("/x") + bytes("/y") + bytes("/z")) as f64;
        for (g, want) in [("/x", 1.0 / 7.0), ("/y", 2.0 / 7.0), ("/z", 4.0 / 7.0)] {
            let share = bytes(g) as f64 / total;
            crate::output::tell!("{g}: share {share:.3} (want {want:.3})");
            assert!(
                (share - want).abs() <= 0.05,
                "{g}: {share:.3} want {want:.3}"
            );
        }
    }

    #[test]
    fn published_table_matches_the_target_csv() {
        // shared/ sits beside the checkout (/work/shared for /work/main).
        let rel = "shared/targets/io-controller-2009.csv";
        let found = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .ancestors()
            .map(|d| d.join(rel))
            .find(|p| p.exists());
        let Some(text) = found.and_then(|p| std::fs::read_to_string(p).ok()) else {
            crate::output::tell!(
                "skipping: {rel} not found above {}",
                env!("CARGO_MANIFEST_DIR")
            );
            return;
        };
        let rows: Vec<&str> = text
            .lines()
            .filter(|l| !l.starts_with('#') && !l.starts_with("setup"))
            .collect();
        assert_eq!(rows.len(), PUBLISHED.len());
        for (line, p) in rows.iter().zip(PUBLISHED.iter()) {
            let f: Vec<&str> = line.split(',').collect();
            assert_eq!(f[0], p.0);
            assert_eq!(f[1].parse::<u32>().unwrap(), p.1);
            let nums: Vec<f64> = f[2..].iter().map(|x| x.parse().unwrap()).collect();
            assert_eq!(nums, vec![p.2, p.3, p.4, p.5, p.6, p.7], "{line}");
        }
    }
}
