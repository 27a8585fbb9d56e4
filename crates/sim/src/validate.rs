//! Validation against measured drives, the way DiskSim's `valid/runvalid` does it.
//!
//! A DiskSim validation trace has one request per line,
//! `R|W  Hit|Miss|Doub|Trip  blkno  nsectors  service_us  gap_us`, where the service time was
//! measured on the real drive and `gap_us` is the host's pause between that request's
//! completion and the next request's issue. [`replay`] issues the requests one at a time to a
//! model, each at the previous completion plus the recorded gap, and [`demerit`] compares the
//! simulated and measured access-time distributions as DiskSim's `rms.c` does: both are first
//! binned into DiskSim's "Physical access time" / "Trace access time" distributions (1 us
//! steps growing by 1 % per bucket), then the root mean square horizontal distance between the
//! two cumulative curves is taken at every 0.0001 of probability.

use crate::hdd::Hdd;
use elevator_workload::input::{self, InputError};
use std::path::{Path, PathBuf};

/// One traced request.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TraceRecord {
    /// Read (true) or write.
    pub read: bool,
    /// Whether the trace marks it as served by the drive's cache (`Hit`).
    pub hit: bool,
    /// First block.
    pub blkno: u64,
    /// Blocks.
    pub sectors: u32,
    /// Measured service time, ms.
    pub service_ms: f64,
    /// Pause after completion before the next request, ms.
    pub gap_ms: f64,
}

/// The largest validation trace read, bytes (DiskSim's are under 1 MiB).
pub const MAX_TRACE_BYTES: u64 = 64 << 20;

/// Reads a DiskSim validation trace from a file (at most [`MAX_TRACE_BYTES`]).
pub fn read_trace(path: impl AsRef<Path>) -> Result<Vec<TraceRecord>, InputError> {
    read_trace_within(path, None)
}

/// Reads a DiskSim validation trace from a file, refusing (naming the line) a request that
/// does not end within `capacity_sectors`, when given.
pub fn read_trace_within(
    path: impl AsRef<Path>,
    capacity_sectors: Option<u64>,
) -> Result<Vec<TraceRecord>, InputError> {
    let path = path.as_ref();
    let text = input::read_text(path, MAX_TRACE_BYTES, "validation trace")?;
    parse_trace_within(&text, path, capacity_sectors)
}

/// Parses trace text; `path` names it in errors. Blank lines and `#` comment lines are
/// skipped.
pub fn parse_trace(text: &str, path: &Path) -> Result<Vec<TraceRecord>, InputError> {
    parse_trace_within(text, path, None)
}

/// [`parse_trace`], refusing a request that does not end within `capacity_sectors`.
pub fn parse_trace_within(
    text: &str,
    path: &Path,
    capacity_sectors: Option<u64>,
) -> Result<Vec<TraceRecord>, InputError> {
    let mut out = Vec::with_capacity(text.len() / 40);
    for (n, line) in text.lines().enumerate() {
        let t = line.trim();
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        let err = |field: &str, message: String| InputError::at_line(path, n + 1, field, message);
        let mut it = line.split_whitespace();
        let mut col = |name: &str| it.next().ok_or_else(|| err(name, "missing".into()));
        let rw = col("R|W")?;
        let hit = col("Hit|Miss")?;
        let blk = col("blkno")?;
        let cnt = col("nsectors")?;
        let serv = col("service_us")?;
        let gap = col("gap_us")?;
        let read = match rw {
            "R" => true,
            "W" => false,
            o => return Err(err("R|W", format!("expected R or W, found `{}`", short(o)))),
        };
        let hit = match hit {
            "Hit" => true,
            "Miss" | "Doub" | "Trip" => false,
            o => {
                return Err(err(
                    "Hit|Miss",
                    format!("expected Hit, Miss, Doub or Trip, found `{}`", short(o)),
                ))
            }
        };
        let blkno: u64 = blk
            .parse()
            .map_err(|_| err("blkno", format!("not a block number: `{}`", short(blk))))?;
        let sectors: u32 = cnt.parse().ok().filter(|&c| c > 0).ok_or_else(|| {
            err(
                "nsectors",
                format!("not a positive count: `{}`", short(cnt)),
            )
        })?;
        let num = |s: &str, f: &str| -> Result<f64, InputError> {
            s.parse::<f64>()
                .ok()
                .filter(|x| x.is_finite() && *x >= 0.0)
                .ok_or_else(|| err(f, format!("not a non-negative number: `{}`", short(s))))
        };
        if let Some(cap) = capacity_sectors {
            if blkno.saturating_add(u64::from(sectors)) > cap {
                return Err(err(
                    "blkno",
                    format!(
                        "blocks {blkno}..{} run past the drive's end ({cap} blocks)",
                        blkno.saturating_add(u64::from(sectors))
                    ),
                ));
            }
        }
        out.push(TraceRecord {
            read,
            hit,
            blkno,
            sectors,
            service_ms: num(serv, "service_us")? / 1000.0,
            gap_ms: num(gap, "gap_us")? / 1000.0,
        });
    }
    Ok(out)
}

/// At most 40 characters of a field, for error messages.
fn short(s: &str) -> String {
    match s.char_indices().nth(40) {
        Some((i, _)) => format!("{}...", &s[..i]),
        None => s.to_string(),
    }
}

/// The outcome of replaying a trace on a model.
#[derive(Clone, Debug, PartialEq)]
pub struct Validation {
    /// Simulated access time of each request, ms.
    pub simulated_ms: Vec<f64>,
    /// Measured access time of each request, ms.
    pub measured_ms: Vec<f64>,
    /// The model's cache decision per request.
    pub simulated_hit: Vec<bool>,
    /// RMS horizontal distance between the two CDFs, ms (DiskSim's demerit).
    pub demerit_ms: f64,
    /// Mean simulated access time, ms.
    pub sim_mean_ms: f64,
    /// Mean measured access time, ms.
    pub measured_mean_ms: f64,
    /// Fraction of requests where the model's hit/miss agrees with the trace's column.
    pub hit_agreement: f64,
}

/// Replays `trace` on `hdd` as DiskSim does and compares.
pub fn replay(hdd: &mut Hdd, trace: &[TraceRecord]) -> Validation {
    let mut t = 0.0f64;
    let mut sim = Vec::with_capacity(trace.len());
    let mut hits = Vec::with_capacity(trace.len());
    let mut agree = 0usize;
    for r in trace {
        let (done, hit) = hdd.serve(r.read, r.blkno, r.sectors, t);
        sim.push(done - t);
        hits.push(hit);
        if hit == r.hit {
            agree += 1;
        }
        t = done + r.gap_ms;
    }
    let measured: Vec<f64> = trace.iter().map(|r| r.service_ms).collect();
    let mean = |v: &[f64]| {
        if v.is_empty() {
            0.0
        } else {
            v.iter().sum::<f64>() / v.len() as f64
        }
    };
    Validation {
        demerit_ms: demerit(&sim, &measured),
        sim_mean_ms: mean(&sim),
        measured_mean_ms: mean(&measured),
        hit_agreement: if trace.is_empty() {
            1.0
        } else {
            agree as f64 / trace.len() as f64
        },
        simulated_ms: sim,
        measured_ms: measured,
        simulated_hit: hits,
    }
}

/// DiskSim's access-time distribution: bucket upper bounds (ms) and the cumulative fraction of
/// values below each. Buckets start at 0 us and grow by 1 us plus 1 % of the bound.
pub fn binned_cdf(values_ms: &[f64]) -> (Vec<f64>, Vec<f64>) {
    const BUCKETS: usize = 1750;
    let mut starts = Vec::with_capacity(BUCKETS);
    let mut b: i64 = 0;
    for _ in 0..BUCKETS {
        starts.push(b);
        b += 1 + (b.abs() as f64 / 100.0) as i64;
    }
    let mut counts = vec![0u64; BUCKETS];
    for &v in values_ms {
        let us = (v * 1000.0) as i64;
        // Bucket i counts values with starts[i-1] <= us < starts[i]; the last takes the rest.
        let i = starts.partition_point(|&s| s <= us).min(BUCKETS - 1);
        counts[i] += 1;
    }
    let n = values_ms.len().max(1) as f64;
    let mut cum = 0.0;
    let mut xs = Vec::with_capacity(BUCKETS);
    let mut ys = Vec::with_capacity(BUCKETS);
    for i in 0..BUCKETS {
        cum += counts[i] as f64 / n;
        xs.push(starts[i] as f64 / 1000.0);
        ys.push(cum);
    }
    (xs, ys)
}

/// The demerit figure (ms) between two samples of access times, as DiskSim's `rms.c` computes
/// it from the binned distributions.
pub fn demerit(a_ms: &[f64], b_ms: &[f64]) -> f64 {
    if a_ms.is_empty() || b_ms.is_empty() {
        return 0.0;
    }
    let (x1, y1) = binned_cdf(a_ms);
    let (x2, y2) = binned_cdf(b_ms);
    let at = |x: &[f64], y: &[f64], i: &mut usize, p: f64| {
        while *i < y.len() - 1 && y[*i] < p {
            *i += 1;
        }
        if *i == 0 {
            return x[0];
        }
        let (y0, y1v) = (y[*i - 1], y[*i]);
        let frac = if y1v > y0 { (p - y0) / (y1v - y0) } else { 0.0 };
        x[*i - 1] + frac * (x[*i] - x[*i - 1])
    };
    let (mut i1, mut i2) = (0usize, 0usize);
    let mut sq = 0.0;
    let mut count = 0usize;
    let mut p = 0.0001f64;
    while p <= 1.0 {
        let d = at(&x1, &y1, &mut i1, p) - at(&x2, &y2, &mut i2, p);
        sq += d * d;
        count += 1;
        p += 0.0001;
    }
    (sq / count as f64).sqrt()
}

/// Finds DiskSim's validation data: `$ELEVATOR_DISKSIM_VALID`, else
/// `shared/data/disksim-valid` in the current directory or one of its ancestors (also as a
/// sibling `../shared/...` of a checkout).
pub fn find_data_dir() -> Option<PathBuf> {
    if let Some(d) = std::env::var_os("ELEVATOR_DISKSIM_VALID") {
        let d = PathBuf::from(d);
        return d.is_dir().then_some(d);
    }
    let mut dir = std::env::current_dir().ok()?;
    loop {
        for cand in [
            dir.join("shared/data/disksim-valid"),
            dir.join("../shared/data/disksim-valid"),
        ] {
            if cand.join("cheetah9LP.trace").is_file() {
                return Some(cand);
            }
        }
        if !dir.pop() {
            return None;
        }
    }
}

/// The five drives DiskSim 4.0 validated whose data ships in `shared/data/disksim-valid`, with
/// DiskSim's own demerit (ms) and simulated / measured means from its `runvalid`.
pub const DISKSIM_FIGURES: &[(&str, &str, f64)] = &[
    ("cheetah9lp", "cheetah9LP", 0.107),
    ("atlas10k", "atlas10k", 0.268),
    ("ibm18es", "ibm18es", 0.136),
    ("hp_c2247a", "hp_c2247a", 0.089),
    ("hp_c2490a", "hp_c2490a", 0.254),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identical_samples_have_zero_demerit() {
        let a: Vec<f64> = (0..1000).map(|i| f64::from(i) * 0.01).collect();
        assert_eq!(demerit(&a, &a), 0.0);
    }

    #[test]
    fn shifted_samples_have_demerit_near_the_shift() {
        let a: Vec<f64> = (0..10000).map(|i| 2.0 + f64::from(i) * 0.001).collect();
        let b: Vec<f64> = a.iter().map(|x| x + 0.5).collect();
        let d = demerit(&a, &b);
        assert!((d - 0.5).abs() < 0.05, "{d}");
    }

    #[test]
    fn trace_errors_name_line_and_field() {
        let text = "R Hit 10 4 1000.0 200.0\nR Hit 10 x 1000.0 200.0\n";
        let e = parse_trace(text, Path::new("t.trace")).unwrap_err();
        assert_eq!((e.line(), e.field.as_str()), (Some(2), "nsectors"));
        let e = parse_trace("Q Hit 1 1 1 1\n", Path::new("t")).unwrap_err();
        assert_eq!(e.field, "R|W");
        let e = parse_trace("R Hit 1 1 1\n", Path::new("t")).unwrap_err();
        assert_eq!(e.field, "gap_us");
    }
}
