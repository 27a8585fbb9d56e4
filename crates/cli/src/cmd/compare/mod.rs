//! `elevator compare`: the kernel's schedulers (through fio) against ours (through the
//! executor) on the same workloads and the same device, in a form that holds on a noisy one.
//!
//! Each configuration (the workload's readers alone, fio under each kernel scheduler, our
//! executor under each of our schedulers with the kernel's set to `none`) runs once per round,
//! round after round (plan.rs); every run has a ramp (fio's `ramp_time`) and a runtime; ratios
//! are taken between runs of the same round and summarised by their median and range over the
//! rounds (stats.rs); "dominated" is judged on medians. The JSON of every run is kept.
//!
//! Needs root (a loop device, the kernel's scheduler in sysfs) and fio; refuses without.

mod device;
mod plan;
mod stats;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::Ordering;
use std::time::Duration;

use anyhow::{bail, Context};
use elevator_core::{registry, GroupTree, Settings};
use elevator_real::report::fio_json;
use elevator_real::target::{self, OpenSpec};
use elevator_real::{RunOptions, UringBackend};
use elevator_workload::fio_file::{self, FioFile};
use elevator_workload::jobs::fio::RwMode;
use serde_json::{json, Value};

use super::run::{build_jobs, install_stop_handler, STOP};
use device::{Device, On};
use plan::Config;
use stats::{Goal, Measure, Metric, Row, RunFigures, Runs, Spread};

/// Built-in workloads: (name, what it is, job file).
const BUILTIN: &[(&str, &str, &str)] = &[
    (
        "w1",
        "1 MiB streaming writer at iodepth 32 + dependent 4 KiB random reader",
        include_str!("../../../../../bench/jobs/w1.fio"),
    ),
    (
        "w2",
        "1 MiB streaming writer at iodepth 32 + dependent 64 KiB sequential reader",
        include_str!("../../../../../bench/jobs/w2.fio"),
    ),
    (
        "w3",
        "1 MiB streaming writer at iodepth 32 + dependent readers of 4 KiB (random), 16 KiB \
         (random) and 128 KiB (sequential)",
        include_str!("../../../../../bench/jobs/w3.fio"),
    ),
];

/// `--kernel`'s default list.
const DEFAULT_KERNEL: [&str; 4] = ["none", "mq-deadline", "kyber", "bfq"];

/// Compare the kernel's schedulers (fio) with ours (the executor) on the same device, round
/// by round, with paired ratios.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Workloads: fio job files, or the built-in w1, w2, w3 (default: w1 w2). Each job's
    /// `filename` is ignored; `runtime`, `ramp_time` and `time_based` are set from the options.
    pub workloads: Vec<String>,
    /// Run on a direct-io loop device over a scratch file, or on a scratch file.
    #[arg(long, value_enum, default_value_t = On::Loop)]
    pub on: On,
    /// Directory for the scratch file (removed at the end).
    #[arg(long, default_value = "/var/tmp")]
    pub workdir: PathBuf,
    /// Rounds: each configuration runs once per round.
    #[arg(long, default_value_t = 5)]
    pub rounds: usize,
    /// Seconds each run runs before its figures count (fio's ramp_time).
    #[arg(long, default_value_t = 5)]
    pub ramp: u64,
    /// Seconds each run is measured (fio's runtime).
    #[arg(long, default_value_t = 20)]
    pub runtime: u64,
    /// Kernel schedulers, run through fio. The first is the baseline of the ratios.
    /// (Default: none, mq-deadline, kyber and bfq, those of them the device offers.)
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "none,mq-deadline,kyber,bfq"
    )]
    pub kernel: Vec<String>,
    /// Points of the device's reader/writer frontier to run beside them: fio under the first
    /// kernel scheduler with every writing job at each of these iodepths (`--frontier 1,2`).
    /// They show what holding the writers' queue short gives the readers and costs the
    /// writers on this device, paired with the rest. 0 runs none.
    #[arg(long, value_delimiter = ',', default_value = "1")]
    pub frontier: Vec<u32>,
    /// Our schedulers, run through the executor with the kernel's set to none.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "none,mq-deadline,kyber,bfq,latency-guard"
    )]
    pub ours: Vec<String>,
    /// Set a tunable of our schedulers (`--set target_read_lat=800`); applies to each that has it.
    #[arg(long = "set", value_name = "NAME=VALUE")]
    pub set: Vec<String>,
    /// Directory for the JSON of every run, the derived job files and the summary
    /// (default: `./elevator-compare-<unix time>`).
    #[arg(long)]
    pub json_dir: Option<PathBuf>,
    /// Seed for the jobs' random offsets and the executor's job order (varied per round).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Run every configuration at real-time priority (SCHED_FIFO at this priority, 1-99): our
    /// executor thread and fio (which inherits it) then get a CPU the moment a completion wakes
    /// them, whatever else the machine is running. On a shared, loaded machine this measures
    /// the schedulers instead of the CPU queue; both sides get the same priority. 0 (default)
    /// leaves the priority alone.
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u8).range(0..=99))]
    pub rt: u8,
    /// Also write the tables as a self-contained HTML page, DIR/index.html.
    #[arg(long, value_name = "DIR")]
    pub report: Option<PathBuf>,
    /// Keep every request's way through our executor (inserted, dispatched, completed) as CSV
    /// beside each of our runs' JSON (`runs/rN-WORKLOAD-ours-SCHED.csv`), as `run --request-log`.
    #[arg(long)]
    pub request_log: bool,
}

impl Args {
    /// The writers' iodepths of the frontier points to run (`--frontier`; 0 runs none).
    fn frontier_depths(&self) -> Vec<u32> {
        self.frontier.iter().copied().filter(|&d| d > 0).collect()
    }
}

/// One workload as run: its derived job file and what the table follows.
struct Workload {
    name: String,
    about: String,
    /// The derived job file (written to the JSON directory).
    path: PathBuf,
    /// The derived job file with the writers at each frontier depth: (depth, path).
    frontier: Vec<(u32, PathBuf)>,
    file: FioFile,
    /// Jobs that do not write: run alone for the ceiling.
    readers: Vec<String>,
    metrics: Vec<Metric>,
    need_bytes: u64,
}

/// The job file with `filename` lines commented out and, at the end of every job section,
/// `ramp_time`, `runtime` and `time_based` (later lines win, in fio and in ours), and what
/// `more` gives for the job of that name. Line numbers of the original lines are kept, so
/// errors point at the right place.
fn derive(text: &str, ramp_s: u64, runtime_s: u64, more: &dyn Fn(&str) -> String) -> String {
    let common = format!("ramp_time={ramp_s}\nruntime={runtime_s}\ntime_based\n");
    let mut out = String::new();
    let mut job: Option<String> = None;
    for line in text.lines() {
        let t = line.trim();
        if t.starts_with('[') {
            if let Some(name) = &job {
                out.push_str(&common);
                out.push_str(&more(name));
            }
            let name = t.trim_start_matches('[').trim_end_matches(']').trim();
            job = (name != "global").then(|| name.to_string());
        }
        let key = t.split('=').next().unwrap_or("").trim();
        if key == "filename" {
            out.push_str("; elevator compare: filename given on the command line\n");
            continue;
        }
        out.push_str(line);
        out.push('\n');
    }
    if let Some(name) = &job {
        out.push_str(&common);
        out.push_str(&more(name));
    }
    out
}

fn load_workload(spec: &str, dir: &Path, args: &Args) -> anyhow::Result<Workload> {
    let (name, about, text) = match BUILTIN.iter().find(|(n, _, _)| *n == spec) {
        Some((n, about, text)) => (n.to_string(), about.to_string(), text.to_string()),
        None => {
            let p = Path::new(spec);
            let bytes = fio_file::read_bytes(p).with_context(|| {
                let names: Vec<&str> = BUILTIN.iter().map(|b| b.0).collect();
                format!(
                    "{spec:?} is neither a built-in workload ({}) nor a readable job file",
                    names.join(", ")
                )
            })?;
            // Check the original first so errors name the user's file.
            fio_file::parse_bytes(p, &bytes)?;
            let text = String::from_utf8_lossy(&bytes).into_owned();
            let stem = p
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_else(|| spec.to_string());
            (stem, spec.to_string(), text)
        }
    };
    let derived = derive(&text, args.ramp, args.runtime, &|_| String::new());
    let path = dir.join(format!("{name}.fio"));
    // `compare ./w.fio --json-dir .`: the derived job (its runtime and ramp replaced) was
    // written over the user's own job file. Refused, compared by device and inode.
    if !BUILTIN.iter().any(|(n, _, _)| *n == spec) {
        use std::os::unix::fs::MetadataExt;
        let same = |a: &Path, b: &Path| match (std::fs::metadata(a), std::fs::metadata(b)) {
            (Ok(x), Ok(y)) => x.dev() == y.dev() && x.ino() == y.ino(),
            _ => false,
        };
        anyhow::ensure!(
            !same(Path::new(spec), &path),
            "{spec}: --json-dir {} would hold the derived job file {} in its place, \
             overwriting the workload's own file: choose another --json-dir",
            dir.display(),
            path.display()
        );
    }
    std::fs::write(&path, &derived).with_context(|| format!("write {}", path.display()))?;
    let file = fio_file::parse(&path, &derived)?;
    let mut readers = Vec::new();
    let mut writers = Vec::new();
    let mut metrics = Vec::new();
    let mut need_bytes = 0;
    for def in &file.jobs {
        let c = &def.config;
        let (reads, writes) = match c.rw {
            RwMode::Read | RwMode::RandRead => (true, false),
            RwMode::Write | RwMode::RandWrite => (false, true),
            RwMode::Rw | RwMode::RandRw => (c.rwmixread > 0, c.rwmixread < 100),
            RwMode::Trim | RwMode::RandTrim | RwMode::TrimWrite | RwMode::RandTrimWrite => {
                (false, true)
            }
        };
        if writes {
            writers.push(def.name.clone());
        } else {
            readers.push(def.name.clone());
        }
        if reads {
            metrics.push(Metric {
                job: def.name.clone(),
                measure: Measure::ReadIops,
            });
        }
        if writes {
            metrics.push(Metric {
                job: def.name.clone(),
                measure: Measure::WriteMbs,
            });
        }
        let (Some(size), None, None) = (c.size, c.size_frac, c.offset_frac) else {
            return Err(elevator_workload::InputError::at_line(
                spec,
                def.line,
                "",
                format!(
                    "job {}: elevator compare makes its own target, so `size` (and `offset`) must be given in bytes",
                    fio_file::excerpt(&def.name)
                ),
            )
            .into());
        };
        need_bytes = need_bytes.max(c.offset.unwrap_or(0) + size);
    }
    let mut frontier = Vec::new();
    for depth in args.frontier_depths() {
        let text = derive(&text, args.ramp, args.runtime, &|job| {
            if writers.iter().any(|w| w == job) {
                format!("iodepth={depth}\n")
            } else {
                String::new()
            }
        });
        let p = dir.join(format!("{name}-writers-qd{depth}.fio"));
        std::fs::write(&p, &text).with_context(|| format!("write {}", p.display()))?;
        frontier.push((depth, p));
    }
    Ok(Workload {
        name,
        about,
        path,
        frontier,
        file,
        readers,
        metrics,
        need_bytes,
    })
}

/// The figures of a run from fio's JSON (ours writes the same shape), summed over a job's
/// clones (`numjobs`): fio names every clone after the job, ours appends `.N`.
fn figures(v: &Value, defs: &FioFile) -> RunFigures {
    let mut out = RunFigures::new();
    let mut lat_weight: BTreeMap<String, (f64, f64)> = BTreeMap::new();
    for j in v["jobs"].as_array().into_iter().flatten() {
        let name = j["jobname"].as_str().unwrap_or("").to_string();
        let name = if defs.jobs.iter().any(|d| d.name == name) {
            name
        } else {
            match name.rsplit_once('.') {
                Some((base, n)) if n.parse::<u32>().is_ok() => base.to_string(),
                _ => name,
            }
        };
        let f = out.entry(name.clone()).or_default();
        let r = &j["read"];
        f.read_iops += r["iops"].as_f64().unwrap_or(0.0);
        f.write_mb_s += j["write"]["bw_bytes"].as_f64().unwrap_or(0.0) / 1e6;
        let n = r["clat_ns"]["N"].as_f64().unwrap_or(0.0);
        let mean = r["clat_ns"]["mean"].as_f64().unwrap_or(0.0);
        let w = lat_weight.entry(name).or_default();
        w.0 += n * mean;
        w.1 += n;
    }
    for (name, (sum, n)) in lat_weight {
        if let Some(f) = out.get_mut(&name) {
            f.read_lat_ms = if n > 0.0 { sum / n / 1e6 } else { 0.0 };
        }
    }
    out
}

/// fio's JSON from a file fio wrote (skipping anything fio printed before the JSON).
fn read_fio_json(path: &Path) -> anyhow::Result<Value> {
    let text = elevator_workload::input::read_text(path, 256 << 20, "fio JSON output")?;
    let start = text
        .find('{')
        .with_context(|| format!("{}: no JSON in fio's output", path.display()))?;
    serde_json::from_str(&text[start..]).with_context(|| format!("{}: fio's JSON", path.display()))
}

fn run_fio(
    dev: &Device,
    job_file: &Path,
    sections: &[String],
    out: &Path,
) -> anyhow::Result<Value> {
    let mut cmd = Command::new("fio");
    cmd.arg("--output-format=json")
        .arg(format!("--output={}", out.display()))
        .arg(format!("--filename={}", dev.target.display()));
    for s in sections {
        cmd.arg(format!("--section={s}"));
    }
    cmd.arg(job_file);
    // fio ends with elevator, even killed: the next run cleans the device it wrote.
    let mut child = elevator_real::leftovers::die_with_parent(&mut cmd)
        .spawn()
        .context("run fio")?;
    // SIGTERM reaches elevator alone (Ctrl-C reaches the whole process group, fio too): on
    // either, fio is told to stop (SIGTERM: it ends its jobs and writes its output), instead
    // of the command waiting out fio's ramp and runtime before it stops.
    let mut told = false;
    let st = loop {
        if let Some(st) = child.try_wait().context("wait for fio")? {
            break st;
        }
        if STOP.load(Ordering::SeqCst) && !told {
            // SAFETY: kill(2) on the pid of a child not yet reaped (try_wait saw it running).
            unsafe {
                libc::kill(child.id() as libc::pid_t, libc::SIGTERM);
            }
            told = true;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    if STOP.load(Ordering::SeqCst) {
        bail!("interrupted");
    }
    if !st.success() {
        bail!(
            "fio on {} failed ({st}); its output is in {}",
            job_file.display(),
            out.display()
        );
    }
    read_fio_json(out)
}

struct Ours<'a> {
    dev: &'a Device,
    file: std::fs::File,
    size: u64,
    extra: Settings,
    /// The target's `queue/rotational`, read once.
    rotational: Option<bool>,
    args: &'a Args,
}

impl Ours<'_> {
    fn run(&self, wl: &Workload, sched: &str, round: usize, out: &Path) -> anyhow::Result<Value> {
        let info = registry::find(sched).with_context(|| format!("unknown scheduler {sched:?}"))?;
        let mut groups = GroupTree::new();
        let seed = self.args.seed.wrapping_add(round as u64);
        let (jobs, groupids) = build_jobs(&wl.file, self.size, self.args.seed, &mut groups)?;
        let mut s = info
            .build(
                &super::settings_on_device(&info, &self.extra, self.rotational),
                &groups,
            )
            .map_err(|e| anyhow::anyhow!("scheduler {}: {e}", info.name))?;
        let fd = self
            .file
            .try_clone()
            .context("duplicate the target's handle")?;
        let mut backend =
            UringBackend::new(fd, self.size, elevator_real::uring::DEFAULT_ENTRIES)
                .context("set up io_uring (is it disabled by kernel.io_uring_disabled?)")?;
        let opts = RunOptions {
            verify: false,
            stop: Some(&STOP),
            // A safety limit well past the jobs' own ramp + runtime.
            time_limit: Some(Duration::from_secs(
                2 * (self.args.ramp + self.args.runtime) + 60,
            )),
            run_id: seed,
            seed,
            ramp: Duration::from_secs(self.args.ramp),
            request_log: self.args.request_log,
            progress: None,
            ties_in_job_order: false,
            groups: groups.clone(),
            non_rotational: self.rotational == Some(false),
        };
        let target = self.dev.target.display().to_string();
        let (report, err) = match elevator_real::run(&mut backend, s.as_mut(), jobs, &opts) {
            Ok(r) => (r, None),
            Err(f) => (*f.partial, Some(f.error)),
        };
        let v = fio_json(&report, &groupids, &target);
        elevator_workload::input::write_output(out, serde_json::to_string_pretty(&v)? + "\n")
            .with_context(|| format!("write {}", out.display()))?;
        if self.args.request_log {
            let csv = out.with_extension("csv");
            elevator_workload::input::write_output(
                &csv,
                elevator_real::report::request_log_csv(&report),
            )
            .with_context(|| format!("write {}", csv.display()))?;
        }
        if let Some(e) = err {
            bail!("{}: scheduler {sched}: {e}", wl.name);
        }
        if report.interrupted {
            bail!("interrupted");
        }
        Ok(v)
    }
}

/// Our scheduler's kernel namesake, when the kernel has it and the comparison runs it.
fn twin_of(ours: &str, kernel: &[String]) -> Option<String> {
    let name = registry::find(ours)?.name;
    let k = match name {
        "noop" => "none",
        "mq-deadline" | "kyber" | "bfq" => name,
        _ => return None,
    };
    kernel.iter().any(|x| x == k).then(|| k.to_string())
}

/// SCHED_FIFO at `prio` for this process; children (fio) inherit it.
fn set_realtime(prio: u8) -> anyhow::Result<()> {
    let param = libc::sched_param {
        sched_priority: i32::from(prio),
    };
    // SAFETY: `param` is a valid sched_param for the duration of the call; pid 0 is this thread,
    // and the compare command runs its executor on this (the main) thread before any other
    // thread exists that could need another policy.
    if unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) } != 0 {
        bail!(
            "--rt {prio}: sched_setscheduler(SCHED_FIFO): {}",
            std::io::Error::last_os_error()
        );
    }
    Ok(())
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "?".into())
}

fn utc_now() -> String {
    Command::new("date")
        .args(["-u", "+%Y-%m-%d %H:%M:%S UTC"])
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "?".into())
}

fn group_digits(x: f64) -> String {
    let s = format!("{:.0}", x.max(0.0));
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn ratio(x: f64) -> String {
    if x >= 100.0 {
        format!("{x:.0}")
    } else if x >= 10.0 {
        format!("{x:.1}")
    } else {
        format!("{x:.2}")
    }
}

/// A row's median paired ratios to the baseline, metric by metric: `reader 30.3x, writer 0.56x`.
fn ratios_line(row: &Row, metrics: &[Metric]) -> String {
    metrics
        .iter()
        .zip(&row.cells)
        .filter_map(|(m, c)| Some(format!("{} {}x", m.job, ratio(c.vs_baseline?.median))))
        .collect::<Vec<_>>()
        .join(", ")
}

fn cell(s: Option<Spread>, f: fn(f64) -> String) -> String {
    match s {
        None => "-".into(),
        Some(s) if s.n == 1 => f(s.median),
        Some(s) => format!("{} ({}-{})", f(s.median), f(s.min), f(s.max)),
    }
}

/// A workload's table, markdown.
/// The comparison table of one workload: its header and one row of cells per configuration.
fn table_cells(wl: &Workload, rows: &[Row], baseline: &Config) -> (Vec<String>, Vec<Vec<String>>) {
    let base = match baseline {
        Config::Kernel(k) => k.clone(),
        c => c.label(),
    };
    let mut head = vec!["configuration".to_string()];
    for m in &wl.metrics {
        head.push(m.heading());
        head.push(format!("x {base}"));
        if m.measure == Measure::ReadIops {
            head.push("of alone".into());
        }
        head.push("x kernel's".into());
    }
    head.push("dominated by".into());
    let body = rows
        .iter()
        .map(|row| {
            let mut cells = vec![row.config.to_string()];
            for (m, c) in wl.metrics.iter().zip(&row.cells) {
                cells.push(cell(c.value, group_digits));
                cells.push(cell(c.vs_baseline, ratio));
                if m.measure == Measure::ReadIops {
                    cells.push(cell(c.vs_alone, ratio));
                }
                cells.push(cell(c.vs_kernel_twin, ratio));
            }
            cells.push(match (&row.config, row.dominated_by.is_empty()) {
                (Config::Ours(_), true) => "-".into(),
                (Config::Ours(_), false) => row.dominated_by.join(", "),
                _ => String::new(),
            });
            cells
        })
        .collect();
    (head, body)
}

/// A markdown table: the first and last columns left-aligned, the figures right-aligned.
fn markdown(head: &[String], body: &[Vec<String>]) -> String {
    let mut out = format!("| {} |\n", head.join(" | "));
    let aligns: Vec<&str> = (0..head.len())
        .map(|i| {
            if i == 0 || i == head.len() - 1 {
                "---"
            } else {
                "---:"
            }
        })
        .collect();
    let _ = writeln!(out, "|{}|", aligns.join("|"));
    for cells in body {
        let _ = writeln!(out, "| {} |", cells.join(" | "));
    }
    out
}

fn spread_json(s: Option<Spread>) -> Value {
    s.map_or(
        Value::Null,
        |s| json!({"median": s.median, "min": s.min, "max": s.max, "n": s.n}),
    )
}

/// Run the subcommand.
/// What `compare` checks before it touches anything: root, fio, the flags and our schedulers'
/// names and settings. Returns the settings every one of ours gets.
fn preflight(args: &Args) -> anyhow::Result<Settings> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        bail!(
            "elevator compare needs root: it creates a loop device (losetup) and switches the \
             kernel's I/O scheduler in /sys/block/*/queue/scheduler; run it with sudo"
        );
    }
    if Command::new("fio").arg("--version").output().is_err() {
        bail!("elevator compare needs fio for the kernel's schedulers: install it (apt-get install fio)");
    }
    if args.rounds == 0 || args.runtime == 0 {
        bail!("--rounds and --runtime must be at least 1");
    }
    // Bounded before the plan is built: `--rounds 4294967295` laid out the device, then
    // aborted allocating the plan (4.5 TB).
    if args.rounds > MAX_ROUNDS {
        bail!(
            "--rounds {}: at most {MAX_ROUNDS} (each round runs every configuration)",
            args.rounds
        );
    }
    for (flag, s) in [("--ramp", args.ramp), ("--runtime", args.runtime)] {
        if s > MAX_RUN_S {
            bail!("{flag} {s}: at most {MAX_RUN_S} seconds (a day) per run");
        }
    }
    if let Some(d) = args.frontier.iter().find(|&&d| d > MAX_FRONTIER_DEPTH) {
        bail!("--frontier {d}: an iodepth of at most {MAX_FRONTIER_DEPTH} (fio's limit)");
    }
    if args.kernel.is_empty() {
        bail!("--kernel: at least one kernel scheduler (the first is the ratios' baseline)");
    }
    // Each configuration once: `--kernel bfq,bfq` (or `--ours noop,none`, one scheduler by
    // its alias) ran it twice per round and tabled both under one name.
    once("--kernel", &args.kernel, |k| k.to_string())?;
    once("--ours", &args.ours, |s| {
        registry::find(s).map_or(s.to_string(), |i| i.name.to_string())
    })?;
    let depths: Vec<String> = args.frontier_depths().iter().map(u32::to_string).collect();
    once("--frontier", &depths, |d| d.to_string())?;
    let extra = super::parse_sets(&args.set)?;
    for s in &args.ours {
        registry::find(s).with_context(|| {
            let known: Vec<&str> = registry::all().iter().map(|i| i.name).collect();
            format!(
                "--ours: unknown scheduler {s:?} (known: {})",
                known.join(", ")
            )
        })?;
    }
    super::check_sets(&extra, &args.ours)?;
    Ok(extra)
}

/// The most rounds `compare` runs: each runs every configuration for ramp + runtime.
const MAX_ROUNDS: usize = 1000;
/// The longest `--ramp` or `--runtime`, seconds.
const MAX_RUN_S: u64 = 86_400;
/// The deepest `--frontier` iodepth (fio's iodepth is at most 65536).
const MAX_FRONTIER_DEPTH: u32 = 65_536;

/// Refuse a list naming one item twice (`key` gives what names it: a scheduler's registry
/// name, so an alias counts as its scheduler).
fn once(flag: &str, items: &[String], key: impl Fn(&str) -> String) -> anyhow::Result<()> {
    let mut seen = std::collections::HashMap::new();
    for it in items {
        if let Some(first) = seen.insert(key(it), it) {
            bail!(
                "{flag}: {:?} and {:?} name one configuration: give each once",
                elevator_workload::fio_file::excerpt(first),
                elevator_workload::fio_file::excerpt(it)
            );
        }
    }
    Ok(())
}

/// Fill the first `need` bytes of the device with fio, so reads find written blocks.
fn lay_out(dev: &Device, need: u64) -> anyhow::Result<()> {
    let layout = elevator_real::leftovers::die_with_parent(&mut Command::new("fio"))
        .args(["--name=layout", "--rw=write", "--bs=1m", "--direct=1"])
        .args(["--ioengine=io_uring", "--iodepth=16", "--output=/dev/null"])
        .arg(format!("--filename={}", dev.target.display()))
        .arg(format!("--size={need}"))
        .status()
        .context("run fio to lay out the target")?;
    if !layout.success() {
        bail!("fio could not lay out {}", dev.target.display());
    }
    Ok(())
}

/// A progress bar on a terminal, `None` elsewhere (each step is then a line).
fn progress(steps: usize) -> Option<indicatif::ProgressBar> {
    std::io::stderr().is_terminal().then(|| {
        let b = indicatif::ProgressBar::new(steps as u64);
        b.set_style(
            indicatif::ProgressStyle::with_template(
                "{msg:40} [{bar:30}] {pos}/{len} runs, {elapsed} (eta {eta})",
            )
            .expect("a valid template")
            .progress_chars("=> "),
        );
        b
    })
}

/// Run every step, round by round, each configuration's fio JSON into `dir/runs`; the figures
/// per workload and the index of runs for the summary.
fn run_steps(
    args: &Args,
    dev: &Device,
    ours: &Ours,
    workloads: &[Workload],
    steps: &[plan::Step],
    dir: &Path,
) -> anyhow::Result<(Vec<Runs>, Vec<Value>)> {
    let bar = progress(steps.len());
    let mut runs: Vec<Runs> = workloads.iter().map(|_| Runs::default()).collect();
    let mut index = Vec::new();
    for (i, step) in steps.iter().enumerate() {
        let wl = &workloads[step.workload];
        let what = format!(
            "round {}/{} {} {}",
            step.round + 1,
            args.rounds,
            wl.name,
            step.config
        );
        match &bar {
            Some(b) => b.set_message(what.clone()),
            None => crate::output::tell!("[{}/{}] {what}", i + 1, steps.len()),
        }
        let out = dir.join("runs").join(format!(
            "r{}-{}-{}.json",
            step.round + 1,
            wl.name,
            step.config.label()
        ));
        let v = match &step.config {
            Config::Alone => {
                dev.set_scheduler(&args.kernel[0])?;
                run_fio(dev, &wl.path, &wl.readers, &out)?
            }
            Config::Kernel(k) => {
                dev.set_scheduler(k)?;
                run_fio(dev, &wl.path, &[], &out)?
            }
            Config::Frontier { sched, depth } => {
                dev.set_scheduler(sched)?;
                let (_, path) = wl
                    .frontier
                    .iter()
                    .find(|(d, _)| d == depth)
                    .with_context(|| format!("no job file for the writers at iodepth {depth}"))?;
                run_fio(dev, path, &[], &out)?
            }
            Config::Ours(s) => {
                dev.set_scheduler("none")?;
                ours.run(wl, s, step.round, &out)?
            }
        };
        let f = figures(&v, &wl.file);
        index.push(json!({
            "round": step.round + 1,
            "workload": wl.name,
            "config": step.config.label(),
            "json": out.strip_prefix(dir).unwrap_or(&out).display().to_string(),
            "figures": f.iter().map(|(k, f)| (k.clone(), json!({
                "read_iops": f.read_iops, "read_lat_ms": f.read_lat_ms, "write_mb_s": f.write_mb_s
            }))).collect::<serde_json::Map<_, _>>(),
        }));
        runs[step.workload].add(step.round, step.config.clone(), f);
        if let Some(b) = &bar {
            b.inc(1);
        }
    }
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    Ok((runs, index))
}

/// Whether latency-guard's row meets the goal, and if not, why: the readers' ceiling alone
/// and the device's frontier.
fn goal_verdict(
    goal: &Goal,
    row: &Row,
    wl: &Workload,
    ceiling: Option<f64>,
    beyond: Option<(u32, u32)>,
    points: &[(u32, &Row)],
    base: &str,
) -> String {
    let met = goal.met(row, &wl.metrics);
    let mut verdict = match (met, ceiling) {
        (true, _) => "met".to_string(),
        (false, None) => "NOT met".to_string(),
        (false, Some(x)) => format!(
            "NOT met, and out of reach on this device: the readers alone do \
             only {x:.1}x {} (median)",
            base
        ),
    };
    if let (false, Some((light, heavy))) = (met, beyond) {
        let _ = write!(
            verdict,
            "; beyond this device's frontier: with the writers at iodepth \
             {light} they keep under {:.0}% and the readers get under {}x, and \
             at iodepth {heavy} the readers get less still",
            goal.write_frac * 100.0,
            goal.read_x
        );
    }
    for (_, f) in points {
        let _ = write!(
            verdict,
            "; {}: {} ({})",
            f.config,
            if goal.reached_by(f, &wl.metrics) {
                "reaches it"
            } else {
                "does not reach it"
            },
            ratios_line(f, &wl.metrics)
        );
    }
    verdict
}

/// One workload's rows, as summary.json carries them.
fn workload_json(
    wl: &Workload,
    rows: &[Row],
    goal: &Goal,
    ceiling: Option<f64>,
    beyond: Option<(u32, u32)>,
    points: &[(u32, &Row)],
) -> Value {
    json!({
        "workload": wl.name,
        "about": wl.about,
        // The readers alone's ratio to the baseline where it is under the goal's.
        "goal_out_of_reach": ceiling,
        // The frontier's two points that put the goal out of reach: writers' iodepths.
        "goal_beyond_frontier": beyond.map(|(light, heavy)| json!({"light": light, "heavy": heavy})),
        // Whether each frontier point reaches the goal's figures (domination aside).
        "frontier_reaches_goal": points.iter().map(|(_, f)| json!({
            "config": f.config.label(),
            "reaches_goal": goal.reached_by(f, &wl.metrics),
        })).collect::<Vec<_>>(),
        "rows": rows.iter().map(|row| json!({
            "config": row.config.label(),
            "dominated_by": row.dominated_by,
            "metrics": wl.metrics.iter().zip(&row.cells).map(|(m, c)| json!({
                "metric": m.heading(),
                "value": spread_json(c.value),
                "vs_baseline": spread_json(c.vs_baseline),
                "vs_alone": spread_json(c.vs_alone),
                "vs_kernel_twin": spread_json(c.vs_kernel_twin),
            })).collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
    })
}

/// `elevator compare`: our schedulers and the kernel's on one device, round by round.
pub fn run(mut args: Args) -> anyhow::Result<()> {
    let extra = preflight(&args)?;
    let now_s = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let dir = args
        .json_dir
        .clone()
        .unwrap_or_else(|| PathBuf::from(format!("elevator-compare-{now_s}")));
    std::fs::create_dir_all(dir.join("runs"))
        .with_context(|| format!("create {}", dir.join("runs").display()))?;
    let specs: Vec<String> = if args.workloads.is_empty() {
        vec!["w1".into(), "w2".into()]
    } else {
        args.workloads.clone()
    };
    // Two workloads of one name (a/w.fio and b/w.fio) would share a derived job file and
    // every table row: refused before anything is written.
    let mut stems = std::collections::HashSet::new();
    for s in &specs {
        let stem = Path::new(s)
            .file_stem()
            .map_or_else(|| s.clone(), |x| x.to_string_lossy().into_owned());
        anyhow::ensure!(
            stems.insert(stem.clone()),
            "{s}: a second workload named {stem:?}: each workload's runs and rows are named \
             by its file name (rename one)"
        );
    }
    if let Some(r) = &args.report {
        super::common::check_dir("--report", r)?;
    }
    let workloads = specs
        .iter()
        .map(|s| load_workload(s, &dir, &args))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let need = workloads.iter().map(|w| w.need_bytes).max().unwrap_or(0);
    let need = need.div_ceil(1 << 20) << 20;

    install_stop_handler();
    if args.rt > 0 {
        set_realtime(args.rt)?;
    }
    let dev = Device::set_up(args.on, &args.workdir, need)?;
    let (offered, _) = device::available(&dev.queue)?;
    // The default list on a kernel without one of them (bfq is a module some kernels lack)
    // runs the rest, said; a scheduler the user named and the device lacks is an error.
    if args.kernel == DEFAULT_KERNEL && args.kernel.iter().any(|k| offered.contains(k)) {
        let lacking: Vec<String> = args
            .kernel
            .iter()
            .filter(|k| !offered.contains(k))
            .cloned()
            .collect();
        if !lacking.is_empty() {
            crate::output::tell!(
                "elevator compare: note: {} offers {}: the default --kernel list runs without {}",
                dev.queue,
                offered.join(", "),
                lacking.join(", ")
            );
            args.kernel.retain(|k| offered.contains(k));
        }
    }
    for k in &args.kernel {
        if !offered.contains(k) {
            bail!(
                "--kernel {k}: {} offers {} (modprobe {k}?)",
                dev.queue,
                offered.join(", ")
            );
        }
    }
    let date = utc_now();
    let load_start = load_average();
    let kernel_release = std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .unwrap_or_default()
        .trim()
        .to_string();
    crate::output::tell!(
        "elevator compare: {}; kernel {kernel_release}; laying it out",
        dev.describe
    );
    lay_out(&dev, need)?;
    let tgt = target::open(
        &dev.target,
        OpenSpec {
            writes: true,
            allow_overwrite: true,
            need_bytes: need,
            write_regions: vec![elevator_real::ByteRange {
                start: 0,
                end: need,
            }],
            stop: Some(&STOP),
        },
    )?;
    let ours = Ours {
        dev: &dev,
        file: tgt.file,
        size: tgt.size,
        extra,
        rotational: elevator_real::target::rotational(&dev.target),
        args: &args,
    };

    let configs = plan::configs(&args.kernel, &args.frontier_depths(), &args.ours);
    let steps: Vec<plan::Step> = plan::interleave(args.rounds, workloads.len(), &configs)
        .into_iter()
        .filter(|s| s.config != Config::Alone || !workloads[s.workload].readers.is_empty())
        .collect();
    let (runs, index) = run_steps(&args, &dev, &ours, &workloads, &steps, &dir)?;
    let load_end = load_average();

    let baseline = Config::Kernel(args.kernel[0].clone());
    let twin = |s: &str| twin_of(s, &args.kernel);
    let goal = Goal {
        read_x: 25.0,
        write_frac: 0.9,
    };
    let command: Vec<String> = std::env::args().collect();
    let mut text = String::new();
    let _ = writeln!(
        text,
        "elevator compare, {date}: {}; kernel {kernel_release}\n{} rounds, ramp {} s, runtime {} s; \
         load average {load_start} at the start, {load_end} at the end\n\
         command: {}\n\
         Each cell: median (min-max) over the rounds; ratios are taken within a round. \
         \"x kernel's\": ours over the kernel's scheduler of the same name. \
         \"dominated by\": kernel schedulers whose medians are at least ours on every figure.",
        dev.describe,
        args.rounds,
        args.ramp,
        args.runtime,
        command.join(" ")
    );
    let mut summary = Vec::new();
    let mut page = crate::report::Report::new("elevator compare");
    page.para(text.trim_end());
    for (wl, r) in workloads.iter().zip(&runs) {
        let rows = stats::table(r, &configs, &wl.metrics, &baseline, &twin);
        let _ = writeln!(text, "\n{} ({}):\n", wl.name, wl.about);
        let (head, body) = table_cells(wl, &rows, &baseline);
        let head_refs: Vec<&str> = head.iter().map(String::as_str).collect();
        page.table(&format!("{}: {}", wl.name, wl.about), &head_refs, &body);
        text.push_str(&markdown(&head, &body));
        let alone = rows.iter().find(|r| r.config == Config::Alone);
        let ceiling = alone.and_then(|a| goal.out_of_reach(a, &wl.metrics));
        let points: Vec<(u32, &Row)> = rows
            .iter()
            .filter_map(|r| match r.config {
                Config::Frontier { depth, .. } => Some((depth, r)),
                _ => None,
            })
            .collect();
        let beyond = goal.beyond_frontier(&points, &wl.metrics);
        for row in &rows {
            let guard = matches!(&row.config, Config::Ours(s)
                if registry::find(s).is_some_and(|i| i.name == "latency-guard"));
            if guard {
                let base = &args.kernel[0];
                let verdict = goal_verdict(&goal, row, wl, ceiling, beyond, &points, base);
                let _ = writeln!(
                    text,
                    "\n{}: goal (readers >= {}x {base}, writers >= {:.0}% of it, undominated, on medians): {verdict}",
                    row.config,
                    goal.read_x,
                    goal.write_frac * 100.0,
                );
            }
        }
        summary.push(workload_json(wl, &rows, &goal, ceiling, beyond, &points));
    }
    crate::output::out_str(&text);
    let summary = json!({
        "date": date,
        "command": command,
        "device": dev.describe,
        "kernel": kernel_release,
        "rounds": args.rounds,
        "ramp_s": args.ramp,
        "runtime_s": args.runtime,
        "load_average": {"start": load_start, "end": load_end},
        "rt_priority": args.rt,
        "baseline": baseline.label(),
        "workloads": summary,
        "runs": index,
    });
    // Whole or not at all (a temporary file renamed into place): Ctrl-C never leaves a cut
    // table or summary.
    elevator_workload::input::write_output(&dir.join("table.md"), &text)?;
    if let Some(report) = &args.report {
        let index = page.write(report)?;
        crate::output::tell!("elevator compare: report in {}", index.display());
    }
    elevator_workload::input::write_output(
        &dir.join("summary.json"),
        serde_json::to_string_pretty(&summary)? + "\n",
    )?;
    crate::output::tell!(
        "elevator compare: every run's JSON and the summary are in {}",
        dir.display()
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn report_and_markdown_carry_the_same_table_row_by_row() {
        let head: Vec<String> = ["configuration", "writer MB/s"].map(String::from).into();
        let body = vec![
            vec!["kernel none".to_string(), "2,621 (1,650-3,941)".to_string()],
            vec!["elevator none".to_string(), "2,171".to_string()],
        ];
        let md = markdown(&head, &body);
        assert_eq!(
            md,
            "| configuration | writer MB/s |\n|---|---|\n| kernel none | 2,621 (1,650-3,941) |\n\
             | elevator none | 2,171 |\n"
        );
        let mut page = crate::report::Report::new("t");
        page.table("w1", &["configuration", "writer MB/s"], &body);
        assert_eq!(page.counts(), (1, 0));
        let dir = tempfile::tempdir().unwrap();
        let html = std::fs::read_to_string(page.write(dir.path()).unwrap()).unwrap();
        assert!(html.contains("2,621 (1,650-3,941)"), "{html}");
        assert!(html.contains("elevator none"));
        assert!(!html.contains("---:"), "the separator row is not a row");
    }

    #[test]
    fn derive_gives_only_the_named_jobs_their_extra_lines() {
        let text = "[global]\niodepth=8\n[writer]\nrw=write\niodepth=32\n[reader]\nrw=read\n";
        let d = derive(text, 1, 2, &|job| {
            if job == "writer" {
                "iodepth=1\n".into()
            } else {
                String::new()
            }
        });
        let f = fio_file::parse(Path::new("d.fio"), &d).unwrap();
        let depth = |n: &str| f.jobs.iter().find(|j| j.name == n).unwrap().config.iodepth;
        assert_eq!(depth("writer"), 1, "the later line wins");
        assert_eq!(depth("reader"), 8, "from [global], untouched");
    }

    #[test]
    fn derive_sets_ramp_and_runtime_in_every_job_and_drops_filename() {
        let text = "[global]\ndirect=1\nruntime=10\nfilename=/dev/sdz\n[writer]\nrw=write\n[reader]\nrw=read\n";
        let d = derive(text, 5, 20, &|_| String::new());
        let f = fio_file::parse(Path::new("d.fio"), &d).unwrap();
        for j in &f.jobs {
            assert_eq!(j.config.ramp_ms, 5000, "{}", j.name);
            assert_eq!(j.config.runtime_ms, Some(20_000), "{}", j.name);
            assert!(j.config.time_based);
            assert!(j.filenames.is_empty());
        }
        // The original lines keep their numbers.
        assert_eq!(d.lines().nth(5), Some("rw=write"));
    }

    #[test]
    fn figures_sum_clones_and_weigh_latency_by_count() {
        let v = json!({"jobs": [
            {"jobname": "w", "read": {"iops": 0.0}, "write": {"bw_bytes": 1.5e9}},
            {"jobname": "r.0", "read": {"iops": 100.0, "clat_ns": {"N": 100, "mean": 1e6}}, "write": {}},
            {"jobname": "r.1", "read": {"iops": 300.0, "clat_ns": {"N": 300, "mean": 3e6}}, "write": {}},
        ]});
        let f = fio_file::parse(
            Path::new("x.fio"),
            "[w]\nrw=write\n[r]\nrw=read\nnumjobs=2\n",
        )
        .unwrap();
        let figs = figures(&v, &f);
        assert_eq!(figs["w"].write_mb_s, 1500.0);
        assert_eq!(figs["r"].read_iops, 400.0);
        assert_eq!(figs["r"].read_lat_ms, 2.5);
    }

    /// One round of 1 s after 1 s of ramp on a loop device in `workdir`: the default
    /// workloads under the kernel's none, frontier depth 1, none of ours, seed 1.
    fn one_round_in(workdir: &Path) -> Args {
        Args {
            workloads: vec![],
            on: On::Loop,
            workdir: workdir.into(),
            rounds: 1,
            ramp: 1,
            runtime: 1,
            kernel: vec!["none".into()],
            frontier: vec![1],
            ours: vec![],
            set: vec![],
            json_dir: None,
            seed: 1,
            rt: 0,
            report: None,
            request_log: false,
        }
    }

    #[test]
    fn builtin_workloads_parse_and_follow_their_readers_and_writer() {
        let dir = tempfile::tempdir().unwrap();
        let args = one_round_in(dir.path());
        for (name, _, _) in BUILTIN {
            let w = load_workload(name, dir.path(), &args).unwrap();
            assert!(!w.readers.is_empty(), "{name}");
            assert!(w.readers.iter().all(|r| r != "writer"), "{name}");
            assert!(
                w.metrics.iter().any(|m| m.measure == Measure::WriteMbs),
                "{name}"
            );
            assert!(w.need_bytes <= 9 << 30, "{name}");
            assert_eq!(w.frontier.len(), 1, "{name}");
            let f = fio_file::parse(
                &w.frontier[0].1,
                &std::fs::read_to_string(&w.frontier[0].1).unwrap(),
            )
            .unwrap();
            for (j, base) in f.jobs.iter().zip(&w.file.jobs) {
                let want = if w.readers.contains(&j.name) {
                    base.config.iodepth
                } else {
                    1
                };
                assert_eq!(j.config.iodepth, want, "{name} {}", j.name);
            }
            assert!(w.file.jobs.iter().any(|j| j.config.iodepth > 1), "{name}");
        }
    }

    #[test]
    fn our_schedulers_are_paired_with_their_kernel_namesakes() {
        let k: Vec<String> = ["none", "mq-deadline", "bfq"].map(String::from).to_vec();
        assert_eq!(twin_of("none", &k).as_deref(), Some("none"));
        assert_eq!(twin_of("mq-deadline", &k).as_deref(), Some("mq-deadline"));
        assert_eq!(twin_of("kyber", &k), None, "not run under the kernel here");
        assert_eq!(twin_of("latency-guard", &k), None);
        assert_eq!(
            twin_of("deadline", &k),
            None,
            "the single-queue deadline is not mq-deadline"
        );
    }

    #[test]
    fn without_root_it_refuses_clearly() {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } == 0 {
            crate::output::tell!("skipping: running as root");
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let args = Args {
            ramp: 0,
            json_dir: Some(dir.path().join("out")),
            ..one_round_in(dir.path())
        };
        let e = run(args).unwrap_err().to_string();
        assert!(e.contains("needs root"), "{e}");
    }
}
