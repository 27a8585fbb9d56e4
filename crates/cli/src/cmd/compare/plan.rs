//! What `elevator compare` runs, and in which order: every configuration once per round, round
//! after round (A B C ... A B C ...), so slow drifts of a shared device (the host's write-back,
//! another tenant, a compiler on the next core) fall on every configuration alike and a ratio
//! taken within a round compares runs minutes apart at most.

use std::fmt;

/// Who schedules a run's I/O.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Config {
    /// The workload's readers alone (fio, kernel scheduler `none`): their ceiling.
    Alone,
    /// fio under this kernel scheduler.
    Kernel(String),
    /// fio under the baseline kernel scheduler `sched` with every writing job at iodepth
    /// `depth`: a point of the device's reader/writer frontier, reached by holding the writers'
    /// queue short rather than by a scheduler.
    Frontier {
        /// The kernel scheduler (the comparison's baseline).
        sched: String,
        /// The writers' iodepth.
        depth: u32,
    },
    /// `elevator`'s executor under this scheduler of ours (the kernel's set to `none`).
    Ours(String),
}

impl Config {
    /// A short label for tables and file names: `alone`, `kernel-bfq`, `ours-bfq`.
    pub fn label(&self) -> String {
        match self {
            Config::Alone => "alone".into(),
            Config::Kernel(k) => format!("kernel-{k}"),
            Config::Frontier { sched, depth } => format!("kernel-{sched}-writers-qd{depth}"),
            Config::Ours(s) => format!("ours-{s}"),
        }
    }
}

impl fmt::Display for Config {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Config::Alone => f.write_str("readers alone"),
            Config::Kernel(k) => write!(f, "kernel {k}"),
            Config::Frontier { sched, depth } => {
                write!(f, "kernel {sched}, writers at iodepth {depth}")
            }
            Config::Ours(s) => write!(f, "elevator {s}"),
        }
    }
}

/// One run of the plan.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Step {
    /// Round, from 0.
    pub round: usize,
    /// Index into the workloads.
    pub workload: usize,
    /// What runs.
    pub config: Config,
}

/// The configurations of one round: the readers alone, the kernel's schedulers, the frontier
/// points (the first kernel scheduler with the writers at each of `frontier`'s depths), ours.
pub fn configs(kernel: &[String], frontier: &[u32], ours: &[String]) -> Vec<Config> {
    let mut v = vec![Config::Alone];
    v.extend(kernel.iter().cloned().map(Config::Kernel));
    if let Some(base) = kernel.first() {
        v.extend(frontier.iter().map(|&depth| Config::Frontier {
            sched: base.clone(),
            depth,
        }));
    }
    v.extend(ours.iter().cloned().map(Config::Ours));
    v
}

/// Every run, in order: round by round; within a round, workload by workload, each
/// configuration once in the order given.
pub fn interleave(rounds: usize, workloads: usize, configs: &[Config]) -> Vec<Step> {
    let mut steps = Vec::with_capacity(rounds * workloads * configs.len());
    for round in 0..rounds {
        for workload in 0..workloads {
            for config in configs {
                steps.push(Step {
                    round,
                    workload,
                    config: config.clone(),
                });
            }
        }
    }
    steps
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn every_configuration_runs_once_per_round_and_rounds_do_not_overlap() {
        let cs = configs(&names(&["none", "bfq"]), &[], &names(&["latency-guard"]));
        assert_eq!(cs.len(), 4);
        let steps = interleave(3, 2, &cs);
        assert_eq!(steps.len(), 3 * 2 * 4);
        // Rounds are contiguous and in order: A B C ... A B C ..., never A A A B B B.
        let rounds: Vec<usize> = steps.iter().map(|s| s.round).collect();
        let mut sorted = rounds.clone();
        sorted.sort();
        assert_eq!(rounds, sorted);
        for r in 0..3 {
            for w in 0..2 {
                let got: Vec<&Config> = steps
                    .iter()
                    .filter(|s| s.round == r && s.workload == w)
                    .map(|s| &s.config)
                    .collect();
                assert_eq!(got, cs.iter().collect::<Vec<_>>(), "round {r} workload {w}");
            }
        }
        // Consecutive runs of one configuration are a whole round apart.
        let first_two: Vec<usize> = steps
            .iter()
            .enumerate()
            .filter(|(_, s)| s.workload == 0 && s.config == Config::Kernel("bfq".into()))
            .map(|(i, _)| i)
            .collect();
        assert_eq!(first_two[1] - first_two[0], 2 * 4);
    }

    #[test]
    fn frontier_points_follow_the_kernel_schedulers_under_the_baseline() {
        let cs = configs(&names(&["none", "kyber"]), &[1, 2], &names(&["bfq"]));
        let labels: Vec<String> = cs.iter().map(Config::label).collect();
        assert_eq!(
            labels,
            [
                "alone",
                "kernel-none",
                "kernel-kyber",
                "kernel-none-writers-qd1",
                "kernel-none-writers-qd2",
                "ours-bfq"
            ]
        );
        assert_eq!(cs[3].to_string(), "kernel none, writers at iodepth 1");
    }
}
