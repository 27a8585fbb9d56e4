//! From the runs of `elevator compare` to the table: ratios paired within a round, their
//! median and range over the rounds, and which kernel schedulers dominate ours on medians.
//!
//! Pairing is the point. On a shared device the level moves between runs (docs/real-io.md,
//! "Measured on this machine", has examples), so a ratio of two medians taken over different
//! moments says little; a ratio of two runs of the same round, minutes apart, says more, and
//! its spread over the rounds says how much.

use std::collections::BTreeMap;

use super::plan::Config;

/// What one job did in one run.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct JobFigures {
    /// Reads per second.
    pub read_iops: f64,
    /// Mean read latency, milliseconds (issue to completion).
    pub read_lat_ms: f64,
    /// Megabytes (10^6 bytes) written per second.
    pub write_mb_s: f64,
}

/// One run's figures, by job name.
pub type RunFigures = BTreeMap<String, JobFigures>;

/// Which figure of a job the table follows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Measure {
    /// Reads per second (a reader's figure of merit).
    ReadIops,
    /// Write bandwidth (a writer's).
    WriteMbs,
}

/// One column group of the table: a job and the figure followed for it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Metric {
    /// The job's name in the job file.
    pub job: String,
    /// Its figure.
    pub measure: Measure,
}

impl Metric {
    /// The figure in one run (absent when the job did not run in it).
    pub fn value(&self, run: &RunFigures) -> Option<f64> {
        let j = run.get(&self.job)?;
        Some(match self.measure {
            Measure::ReadIops => j.read_iops,
            Measure::WriteMbs => j.write_mb_s,
        })
    }

    /// Column heading: `reader IOPS`, `writer MB/s`.
    pub fn heading(&self) -> String {
        match self.measure {
            Measure::ReadIops => format!("{} IOPS", self.job),
            Measure::WriteMbs => format!("{} MB/s", self.job),
        }
    }
}

/// Median and range of a figure over the rounds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Spread {
    /// The median (the mean of the two middle values for an even count).
    pub median: f64,
    /// The smallest.
    pub min: f64,
    /// The largest.
    pub max: f64,
    /// How many rounds it rests on.
    pub n: usize,
}

/// The spread of `values`, or `None` for none.
pub fn spread(values: &[f64]) -> Option<Spread> {
    if values.is_empty() {
        return None;
    }
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    let median = if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    };
    Some(Spread {
        median,
        min: v[0],
        max: v[n - 1],
        n,
    })
}

/// Every run of one workload: (round, configuration) -> figures.
#[derive(Clone, Debug, Default)]
pub struct Runs {
    /// The figures of each run done.
    pub figures: BTreeMap<(usize, Config), RunFigures>,
}

impl Runs {
    /// Record a run.
    pub fn add(&mut self, round: usize, config: Config, figures: RunFigures) {
        self.figures.insert((round, config), figures);
    }

    /// The metric's value for `config` in each round it ran, by round.
    fn values(&self, config: &Config, metric: &Metric) -> BTreeMap<usize, f64> {
        self.figures
            .iter()
            .filter(|((_, c), _)| c == config)
            .filter_map(|((r, _), f)| Some((*r, metric.value(f)?)))
            .collect()
    }

    /// `config`'s metric over `reference`'s, taken within each round where both ran (and the
    /// reference's figure is positive), then spread over those rounds.
    pub fn paired_ratio(
        &self,
        config: &Config,
        reference: &Config,
        metric: &Metric,
    ) -> Option<Spread> {
        let a = self.values(config, metric);
        let b = self.values(reference, metric);
        let ratios: Vec<f64> = a
            .iter()
            .filter_map(|(r, x)| b.get(r).filter(|&&y| y > 0.0).map(|y| x / y))
            .collect();
        spread(&ratios)
    }

    /// The metric's spread for `config` over the rounds.
    pub fn spread_of(&self, config: &Config, metric: &Metric) -> Option<Spread> {
        let v: Vec<f64> = self.values(config, metric).into_values().collect();
        spread(&v)
    }
}

/// One row of a workload's table.
#[derive(Clone, Debug)]
pub struct Row {
    /// The configuration.
    pub config: Config,
    /// Per metric (in the table's order): the figure, its paired ratio to the baseline, to
    /// the readers alone (read metrics), and to the kernel's scheduler of the same name (ours).
    pub cells: Vec<Cell>,
    /// Kernel schedulers whose medians are at least ours on every metric (ours only).
    pub dominated_by: Vec<String>,
}

/// One metric of one row.
#[derive(Clone, Copy, Debug, Default)]
pub struct Cell {
    /// The figure itself.
    pub value: Option<Spread>,
    /// Over the baseline's, paired within rounds.
    pub vs_baseline: Option<Spread>,
    /// Over the readers alone, paired within rounds (read metrics).
    pub vs_alone: Option<Spread>,
    /// Over the kernel's scheduler of the same name, paired within rounds (ours).
    pub vs_kernel_twin: Option<Spread>,
}

/// The table of one workload: a row per configuration in `configs` order.
///
/// `baseline` is what ratios are taken against (the kernel's `none`); `twin` names, for one of
/// our schedulers, the kernel scheduler of the same policy.
pub fn table(
    runs: &Runs,
    configs: &[Config],
    metrics: &[Metric],
    baseline: &Config,
    twin: &dyn Fn(&str) -> Option<String>,
) -> Vec<Row> {
    let medians = |c: &Config| -> Vec<Option<f64>> {
        metrics
            .iter()
            .map(|m| runs.spread_of(c, m).map(|s| s.median))
            .collect()
    };
    configs
        .iter()
        .map(|c| {
            let twin_cfg = match c {
                Config::Ours(s) => twin(s).map(Config::Kernel),
                _ => None,
            };
            let cells = metrics
                .iter()
                .map(|m| Cell {
                    value: runs.spread_of(c, m),
                    vs_baseline: runs.paired_ratio(c, baseline, m),
                    vs_alone: match (m.measure, c) {
                        (Measure::ReadIops, Config::Alone) => None,
                        (Measure::ReadIops, _) => runs.paired_ratio(c, &Config::Alone, m),
                        _ => None,
                    },
                    vs_kernel_twin: twin_cfg.as_ref().and_then(|t| runs.paired_ratio(c, t, m)),
                })
                .collect();
            let dominated_by = match c {
                Config::Ours(_) => {
                    let mine = medians(c);
                    configs
                        .iter()
                        .filter_map(|k| match k {
                            Config::Kernel(name) if dominates(&medians(k), &mine) => {
                                Some(name.clone())
                            }
                            _ => None,
                        })
                        .collect()
                }
                _ => Vec::new(),
            };
            Row {
                config: c.clone(),
                cells,
                dominated_by,
            }
        })
        .collect()
}

/// Whether `a` is at least `b` on every metric (both known everywhere).
fn dominates(a: &[Option<f64>], b: &[Option<f64>]) -> bool {
    !a.is_empty()
        && a.iter()
            .zip(b)
            .all(|(x, y)| matches!((x, y), (Some(x), Some(y)) if x >= y))
}

/// The goal for our own policy: every read metric at least `read_x` times the baseline's and
/// every write metric at least `write_frac` of it (medians of paired ratios), undominated.
#[derive(Clone, Copy, Debug)]
pub struct Goal {
    /// Reader IOPS over the baseline's, at least.
    pub read_x: f64,
    /// Writer MB/s as a fraction of the baseline's, at least.
    pub write_frac: f64,
}

impl Goal {
    /// Whether `row` meets the goal.
    pub fn met(&self, row: &Row, metrics: &[Metric]) -> bool {
        row.dominated_by.is_empty() && self.reached_by(row, metrics)
    }

    /// Whether `row`'s figures reach the goal's, whoever dominates it.
    pub fn reached_by(&self, row: &Row, metrics: &[Metric]) -> bool {
        !metrics.is_empty()
            && metrics.iter().zip(&row.cells).all(|(m, c)| {
                let need = match m.measure {
                    Measure::ReadIops => self.read_x,
                    Measure::WriteMbs => self.write_frac,
                };
                c.vs_baseline.is_some_and(|s| s.median >= need)
            })
    }

    /// The medians of `row`'s paired ratios to the baseline: the lowest over its read metrics,
    /// the lowest over its write metrics.
    fn worst_ratios(row: &Row, metrics: &[Metric]) -> (Option<f64>, Option<f64>) {
        let worst = |want: Measure| {
            metrics
                .iter()
                .zip(&row.cells)
                .filter(|(m, _)| m.measure == want)
                .filter_map(|(_, c)| c.vs_baseline.map(|s| s.median))
                .min_by(f64::total_cmp)
        };
        (worst(Measure::ReadIops), worst(Measure::WriteMbs))
    }

    /// Whether the measured frontier puts the goal out of reach: `points` are the frontier's
    /// (writers' iodepth, row). Returns the depths (light, heavy) of two points that show it:
    /// at `light` the writers keep under `write_frac` of the baseline, so a schedule that meets
    /// the writers' half must keep more writing in flight than `light` does, and the readers
    /// already get under `read_x`; at `heavy`, with more writing in flight, the readers get no
    /// more than at `light`. Reads that slow as writes are added can then not reach `read_x`
    /// wherever the writers reach `write_frac`. `None` when the points show no such pair.
    pub fn beyond_frontier(
        &self,
        points: &[(u32, &Row)],
        metrics: &[Metric],
    ) -> Option<(u32, u32)> {
        let ratios: Vec<(u32, f64, f64)> = points
            .iter()
            .filter_map(|(d, row)| match Self::worst_ratios(row, metrics) {
                (Some(r), Some(w)) => Some((*d, r, w)),
                _ => None,
            })
            .collect();
        ratios.iter().find_map(|&(light, r_light, w_light)| {
            if w_light >= self.write_frac || r_light >= self.read_x {
                return None;
            }
            ratios
                .iter()
                .find(|&&(heavy, r_heavy, _)| heavy > light && r_heavy <= r_light)
                .map(|&(heavy, _, _)| (light, heavy))
        })
    }

    /// Where the readers *alone* (row `alone`) stay under `read_x` times the baseline on some
    /// read metric (medians of paired ratios), that ratio, the lowest such: the reader can do
    /// no better than alone, so no scheduler can meet the goal on this device.
    pub fn out_of_reach(&self, alone: &Row, metrics: &[Metric]) -> Option<f64> {
        metrics
            .iter()
            .zip(&alone.cells)
            .filter(|(m, _)| m.measure == Measure::ReadIops)
            .filter_map(|(_, c)| c.vs_baseline.map(|s| s.median))
            .filter(|&x| x < self.read_x)
            .min_by(f64::total_cmp)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fig(read_iops: f64, write_mb_s: f64) -> RunFigures {
        let mut f = RunFigures::new();
        if read_iops > 0.0 {
            f.insert(
                "reader".into(),
                JobFigures {
                    read_iops,
                    ..Default::default()
                },
            );
        }
        if write_mb_s > 0.0 {
            f.insert(
                "writer".into(),
                JobFigures {
                    write_mb_s,
                    ..Default::default()
                },
            );
        }
        f
    }

    fn metrics() -> Vec<Metric> {
        vec![
            Metric {
                job: "reader".into(),
                measure: Measure::ReadIops,
            },
            Metric {
                job: "writer".into(),
                measure: Measure::WriteMbs,
            },
        ]
    }

    fn goal_of(read_x: f64, write_frac: f64) -> Goal {
        Goal { read_x, write_frac }
    }

    fn k(s: &str) -> Config {
        Config::Kernel(s.into())
    }
    fn o(s: &str) -> Config {
        Config::Ours(s.into())
    }

    #[test]
    fn spread_gives_median_and_range() {
        let s = spread(&[3.0, 1.0, 2.0]).unwrap();
        assert_eq!((s.median, s.min, s.max, s.n), (2.0, 1.0, 3.0, 3));
        assert_eq!(spread(&[4.0, 1.0, 2.0, 3.0]).unwrap().median, 2.5);
        assert!(spread(&[]).is_none());
    }

    #[test]
    fn ratios_are_paired_within_rounds_not_taken_of_medians() {
        // The device's level moves 100x between rounds; ours is 1.5-3x the kernel's none
        // within each round. Pairing gives a median of 2x; the ratio of the two medians says 3x.
        let mut runs = Runs::default();
        for (round, level, x) in [(0, 100.0, 3.0), (1, 1000.0, 1.5), (2, 10.0, 2.0)] {
            runs.add(round, k("none"), fig(level, 1000.0));
            runs.add(round, o("x"), fig(x * level, 1000.0));
        }
        let m = &metrics()[0];
        let r = runs.paired_ratio(&o("x"), &k("none"), m).unwrap();
        assert_eq!((r.median, r.min, r.max, r.n), (2.0, 1.5, 3.0, 3));
        let medians = runs.spread_of(&o("x"), m).unwrap().median
            / runs.spread_of(&k("none"), m).unwrap().median;
        assert_eq!(medians, 3.0, "the unpaired ratio");
    }

    #[test]
    fn a_round_missing_either_side_is_left_out_of_the_ratio() {
        let mut runs = Runs::default();
        runs.add(0, k("none"), fig(100.0, 1.0));
        runs.add(0, o("x"), fig(300.0, 1.0));
        runs.add(1, o("x"), fig(1e6, 1.0)); // no baseline in round 1
        runs.add(2, k("none"), fig(0.0, 1.0)); // baseline read nothing (no reader figures)
        runs.add(2, o("x"), fig(500.0, 1.0));
        let r = runs
            .paired_ratio(&o("x"), &k("none"), &metrics()[0])
            .unwrap();
        assert_eq!((r.median, r.n), (3.0, 1));
    }

    #[test]
    fn table_pairs_against_baseline_alone_and_the_kernel_twin_and_judges_dominance_on_medians() {
        let mut runs = Runs::default();
        for round in 0..3 {
            let f = round as f64;
            runs.add(round, Config::Alone, fig(20_000.0, 0.0));
            runs.add(round, k("none"), fig(100.0 + f, 2000.0));
            runs.add(round, k("bfq"), fig(1000.0, 1900.0 + f));
            // Ours: the reader better than the kernel's bfq in two rounds of three, the
            // writer always below: on medians, bfq dominates ours.
            let r = [1200.0, 900.0, 800.0][round];
            runs.add(round, o("bfq"), fig(r, 1800.0));
            runs.add(round, o("latency-guard"), fig(5000.0, 1950.0));
        }
        let configs = [
            Config::Alone,
            k("none"),
            k("bfq"),
            o("bfq"),
            o("latency-guard"),
        ];
        let twin = |s: &str| (s == "bfq").then(|| "bfq".to_string());
        let rows = table(&runs, &configs, &metrics(), &k("none"), &twin);
        let row = |c: &Config| rows.iter().find(|r| &r.config == c).unwrap();
        let ours_bfq = row(&o("bfq"));
        assert_eq!(ours_bfq.dominated_by, vec!["bfq".to_string()]);
        let twin_ratio = ours_bfq.cells[0].vs_kernel_twin.unwrap();
        assert_eq!(
            (twin_ratio.median, twin_ratio.min, twin_ratio.max),
            (0.9, 0.8, 1.2)
        );
        let lg = row(&o("latency-guard"));
        assert!(lg.dominated_by.is_empty());
        assert!(
            lg.cells[0].vs_kernel_twin.is_none(),
            "no kernel latency-guard"
        );
        assert_eq!(lg.cells[0].vs_alone.unwrap().median, 0.25);
        assert!(
            lg.cells[1].vs_alone.is_none(),
            "a writer has no alone figure"
        );
        let x = lg.cells[0].vs_baseline.unwrap();
        assert_eq!((x.max, x.min), (50.0, 5000.0 / 102.0));
        assert!(
            row(&k("none")).dominated_by.is_empty(),
            "only ours are judged"
        );
        // The goal: 25x the reader, 90% of the writer, undominated.
        let goal = goal_of(25.0, 0.9);
        assert!(goal.met(lg, &metrics()));
        assert!(!goal.met(ours_bfq, &metrics()));
        let strict = goal_of(25.0, 0.99);
        assert!(!strict.met(lg, &metrics()), "1950/2000 < 0.99");
        // The readers alone do 20000 / 101 = 198x the baseline (median of the rounds): 25x is
        // within reach, 250x is not.
        let alone = row(&Config::Alone);
        assert_eq!(goal.out_of_reach(alone, &metrics()), None);
        let high = goal_of(250.0, 0.9);
        assert_eq!(high.out_of_reach(alone, &metrics()), Some(20_000.0 / 101.0));
    }

    #[test]
    fn a_frontier_point_is_judged_on_its_figures_and_dominates_no_one() {
        let front = Config::Frontier {
            sched: "none".into(),
            depth: 1,
        };
        let mut runs = Runs::default();
        for round in 0..3 {
            runs.add(round, k("none"), fig(100.0, 2000.0));
            // The writers at iodepth 1: the reader 30x, the writer 60%.
            runs.add(round, front.clone(), fig(3000.0, 1200.0));
            // Ours is below the frontier point on the reader, above it on the writer.
            runs.add(round, o("latency-guard"), fig(1000.0, 1700.0));
            runs.add(round, o("slow"), fig(150.0, 1000.0));
        }
        let configs = [k("none"), front.clone(), o("latency-guard"), o("slow")];
        let rows = table(&runs, &configs, &metrics(), &k("none"), &|_| None);
        let row = |c: &Config| rows.iter().find(|r| &r.config == c).unwrap();
        assert!(
            row(&o("slow")).dominated_by.is_empty(),
            "a frontier point is not a scheduler: it dominates nothing"
        );
        let goal = goal_of(25.0, 0.9);
        assert!(!goal.reached_by(row(&front), &metrics()), "0.6 < 0.9");
        let lenient = goal_of(25.0, 0.5);
        assert!(lenient.reached_by(row(&front), &metrics()));
        assert!(
            !lenient.reached_by(row(&o("latency-guard")), &metrics()),
            "10x < 25x"
        );
        // Dominated or not, reached_by looks at the figures only; met also asks for no
        // dominating kernel scheduler.
        runs.add(0, k("kyber"), fig(5000.0, 2000.0));
        runs.add(1, k("kyber"), fig(5000.0, 2000.0));
        runs.add(2, k("kyber"), fig(5000.0, 2000.0));
        let configs = [k("none"), k("kyber"), o("latency-guard")];
        let rows = table(&runs, &configs, &metrics(), &k("none"), &|_| None);
        let lg = rows
            .iter()
            .find(|r| r.config == o("latency-guard"))
            .unwrap();
        assert_eq!(lg.dominated_by, vec!["kyber".to_string()]);
        let easy = goal_of(5.0, 0.5);
        assert!(easy.reached_by(lg, &metrics()));
        assert!(!easy.met(lg, &metrics()));
    }

    #[test]
    fn the_goal_is_beyond_the_frontier_when_the_lighter_point_misses_both_and_more_writing_reads_less(
    ) {
        let at = |d: u32| Config::Frontier {
            sched: "none".into(),
            depth: d,
        };
        // none: reader 100, writer 2000. Writers at iodepth 1: reader 12x, writer 0.66x; at 2:
        // reader 9x, writer 1.1x; at 4: reader 3x.
        let mut runs = Runs::default();
        for round in 0..3 {
            runs.add(round, k("none"), fig(100.0, 2000.0));
            runs.add(round, at(1), fig(1200.0, 1320.0));
            runs.add(round, at(2), fig(900.0, 2200.0));
            runs.add(round, at(4), fig(300.0, 2400.0));
        }
        let configs = [k("none"), at(1), at(2), at(4)];
        let rows = table(&runs, &configs, &metrics(), &k("none"), &|_| None);
        let points: Vec<(u32, &Row)> = rows[1..]
            .iter()
            .map(|r| match r.config {
                Config::Frontier { depth, .. } => (depth, r),
                _ => unreachable!(),
            })
            .collect();
        let goal = goal_of(25.0, 0.9);
        assert_eq!(goal.beyond_frontier(&points, &metrics()), Some((1, 2)));
        // A goal the light point's readers reach (10x) is not shown out of reach by it.
        let reachable = goal_of(10.0, 0.9);
        assert_eq!(reachable.beyond_frontier(&points, &metrics()), None);
        // Writers that keep the goal's share at the light point: nothing shown either.
        let modest = goal_of(25.0, 0.6);
        assert_eq!(modest.beyond_frontier(&points, &metrics()), None);
        // One point alone shows nothing: more writing might have helped the readers.
        assert_eq!(goal.beyond_frontier(&points[..1], &metrics()), None);
        // If the heavier point's readers did better, the shape is not the frontier's.
        let mut odd = Runs::default();
        for round in 0..3 {
            odd.add(round, k("none"), fig(100.0, 2000.0));
            odd.add(round, at(1), fig(1200.0, 1320.0));
            odd.add(round, at(2), fig(1300.0, 2200.0));
        }
        let rows = table(&odd, &configs[..3], &metrics(), &k("none"), &|_| None);
        let points = [(1, &rows[1]), (2, &rows[2])];
        assert_eq!(goal.beyond_frontier(&points, &metrics()), None);
    }
}
