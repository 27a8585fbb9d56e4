//! Recordings on disk: finding them ([`find_recordings`]), loading and checking one
//! (the requests the recorded device could carry, the groups file's processes), and replaying it
//! at each pace ([`diff_recording`], one [`Row`]).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use elevator_core::{IoPrio, Nanos};

use super::{diff_with_log, BfqLogTimes, DiffOptions, Pace, TraceDiff};
use crate::traces::ftrace::{Assembly, ContextGroups, Dir, KernelTrace, Recording, TracedRequest};

/// One recording compared at each pace.
#[derive(Clone, Debug)]
pub struct Row {
    /// The job mix (the recording's parent directory name).
    pub mix: String,
    /// The kernel's scheduler.
    pub scheduler: String,
    /// At [`Pace::Kernel`]: the agreement figure.
    pub kernel_pace: TraceDiff,
    /// At [`Pace::Device`]: how much of the kernel's choice is its queue's timing.
    pub device_pace: TraceDiff,
    /// At [`Pace::Early`]: the diagnostic of choices made before the issue event.
    pub early: TraceDiff,
    /// The kernel's requests, to describe a divergence.
    pub requests: Vec<TracedRequest>,
    /// What putting the trace's requests together could not match (events of no request,
    /// lost events), which the caller tells: the figures compare only what was matched.
    pub assembly: Assembly,
}

/// The kernel's schedulers in the order the table gives them.
pub const KERNEL_SCHEDULERS: [&str; 4] = ["none", "mq-deadline", "kyber", "bfq"];

/// The recordings under `root`: `root` itself when it holds a `meta.json`, else every
/// `MIX/SCHED` (or `SCHED`) directory below it that does, mixes by name, schedulers in
/// [`KERNEL_SCHEDULERS`] order then by name.
pub fn find_recordings(root: &Path) -> Result<Vec<PathBuf>, String> {
    // A file named here (often the recording's meta.json) was read as a directory:
    // "rec/meta.json/meta.json: Not a directory".
    if root.is_file() {
        return Err(format!(
            "{}: a file; name a recording's directory (the one holding meta.json and \
             trace.txt.gz) or a directory of recordings",
            root.display()
        ));
    }
    if has_meta(root)? {
        return Ok(vec![root.to_path_buf()]);
    }
    let subdirs = |d: &Path| -> Result<Vec<PathBuf>, String> {
        let mut v: Vec<PathBuf> = std::fs::read_dir(d)
            .map_err(|e| format!("{}: {e}", d.display()))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.is_dir())
            .collect();
        v.sort();
        Ok(v)
    };
    let rank = |p: &PathBuf| {
        let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
        let at = KERNEL_SCHEDULERS.iter().position(|&s| s == name);
        (at.unwrap_or(KERNEL_SCHEDULERS.len()), name.to_string())
    };
    let mut out = Vec::new();
    for d in subdirs(root)? {
        if has_meta(&d)? {
            out.push(d);
            continue;
        }
        let mut scheds = Vec::new();
        for s in subdirs(&d)? {
            if has_meta(&s)? {
                scheds.push(s);
            }
        }
        scheds.sort_by_key(rank);
        out.extend(scheds);
    }
    if out.is_empty() {
        return Err(format!(
            "{}: no recording (meta.json) in it or below",
            root.display()
        ));
    }
    Ok(out)
}

/// Whether `dir` is a recording: it holds a `meta.json` that is a file. A `meta.json` that
/// is there but cannot be followed to a file (a loop of symbolic links, ELOOP; a link to
/// nothing; a directory; a path it cannot look through, EACCES) is an error naming it and
/// why, not "no recording": a recording a link broke must not vanish from the comparison.
pub fn has_meta(dir: &Path) -> Result<bool, String> {
    let meta = dir.join("meta.json");
    let link = match std::fs::symlink_metadata(&meta) {
        Ok(m) => m.file_type().is_symlink(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(format!("{}: cannot look it up: {e}", meta.display())),
    };
    match std::fs::metadata(&meta) {
        Ok(m) if m.is_file() => Ok(true),
        Ok(_) => Err(format!(
            "{}: not a file (a recording's meta.json is the file kernel-record writes)",
            meta.display()
        )),
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => Err(format!(
            "{}: a loop of symbolic links (ELOOP: {e}): it leads to no file; point it at the \
             recording's meta.json",
            meta.display()
        )),
        Err(e) if link && e.kind() == std::io::ErrorKind::NotFound => Err(format!(
            "{}: a symbolic link to {}, which does not exist",
            meta.display(),
            std::fs::read_link(&meta).map_or_else(|_| "?".into(), |t| t.display().to_string())
        )),
        Err(e) => Err(format!("{}: cannot follow it: {e}", meta.display())),
    }
}

/// The most bytes a request or bio carries: the kernel holds them in an `unsigned int`
/// (`struct request`'s `__data_len`, `struct bvec_iter`'s `bi_size`).
pub(super) const MAX_REQUEST_SECTORS: u64 = (u32::MAX as u64) >> 9;

/// Check every request of `trace` against what the recorded device allowed (issue 32,
/// round 14): its extents inside the device (`device.bytes`: `bio_check_eod` ends a bio past
/// the end before it becomes a request), and its size within the queue's limits for its
/// operation (reads and writes at most `max_sectors_kb`, or `max_hw_sectors_kb` where
/// larger, which `bio_split_to_limits` and the merge checks (`blk_rq_get_max_sectors`)
/// enforce; discards `discard_max_bytes`; anything at most `u32::MAX` bytes). A trace edited
/// past them was replayed in silence: requests at sector 2^64 - 9 wrapped around in our
/// block layer, and requests of 2^31 sectors were split into millions of pieces, each
/// waiting for a scheduler tag, for minutes. The error names the trace's line (the
/// request's first dispatch) and the field.
pub(super) fn check_requests(rec: &Recording, trace: &KernelTrace) -> Result<(), String> {
    let meta = &rec.meta;
    let file = rec.trace_path().display().to_string();
    let capacity = meta.device.bytes / 512;
    let number = |key: &str| {
        meta.queue
            .get(key)
            .and_then(|v| v.trim().parse::<u64>().ok())
    };
    // The larger of each pair where both are recorded, else the one that is (`None` orders
    // below any number).
    let rw_limit = number("max_sectors_kb")
        .max(number("max_hw_sectors_kb"))
        .map(|k| k * 2);
    let discard_limit = number("discard_max_bytes")
        .max(number("discard_max_hw_bytes"))
        .map(|b| b >> 9);
    for r in &trace.requests {
        let line = r.dispatch_index.map_or(0, |d| trace.dispatches[d].line);
        let at = |field: &str, why: String| {
            let when = if line == 0 {
                format!(
                    " (the request created at {:.6} s, never dispatched)",
                    r.arrival().unwrap_or_default().as_secs_f64()
                )
            } else {
                String::new()
            };
            crate::traces::ftrace::located(&file, line, field, format!("{why}{when}")).to_string()
        };
        for (sector, sectors) in [(r.sector, r.sectors), (r.issued_sector, r.issued_sectors)] {
            let n = u64::from(sectors);
            if n == 0 {
                // A flush (at sector 2^64 - 1 in its completion) or an empty preflush write.
                continue;
            }
            let limit = match r.rwbs.dir {
                Dir::Read | Dir::Write => rw_limit,
                Dir::Discard => discard_limit,
                Dir::Flush | Dir::None => None,
            };
            if n > MAX_REQUEST_SECTORS {
                return Err(at(
                    "sectors",
                    format!(
                        "a request of {n} sectors: past what the kernel's requests carry \
                         ({MAX_REQUEST_SECTORS} sectors, u32::MAX bytes)"
                    ),
                ));
            }
            if let Some(l) = limit.filter(|&l| n > l) {
                return Err(at(
                    "sectors",
                    format!(
                        "a {} request of {n} sectors: past the recorded queue's limit of {l} \
                         sectors (meta.json's queue), which the kernel splits and merges to",
                        r.rwbs
                    ),
                ));
            }
            if sector.checked_add(n).is_none_or(|end| end > capacity) {
                return Err(at(
                    "sector",
                    format!(
                        "sectors {sector} + {n}: past the end of the recorded device \
                         ({capacity} sectors, meta.json's device.bytes {})",
                        meta.device.bytes
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// Every process groups.txt names ran in the recording: one of fio's job processes
/// (meta.json's `fio.jobs`) or a process of the trace's requests. A file naming others (the
/// groups of another recording copied beside this one, or pids edited) left every process
/// of the trace in the root group, and the figures compared bfq's groups in silence.
fn check_group_pids(
    rec: &Recording,
    trace: &KernelTrace,
    groups: &ContextGroups,
) -> Result<(), String> {
    if groups.by_pid.is_empty() {
        return Ok(());
    }
    let mut known: std::collections::HashSet<u32> =
        rec.meta.fio.jobs.iter().map(|j| j.pid).collect();
    known.extend(trace.requests.iter().flat_map(|r| [r.pid, r.ctx]));
    let mut unknown: Vec<(usize, u32)> = groups
        .by_pid
        .keys()
        .filter(|p| !known.contains(p))
        .map(|&p| (groups.pid_lines.get(&p).copied().unwrap_or(0), p))
        .collect();
    unknown.sort_unstable();
    if let Some(&(line, pid)) = unknown.first() {
        let file = rec.dir.join(crate::traces::ftrace::GROUPS_FILE);
        return Err(crate::traces::ftrace::located(
            &file.display().to_string(),
            line,
            "pid",
            format!(
                "process {pid} ran neither a fio job of this recording (meta.json's fio.jobs) \
                 nor any request of its trace{}: groups of another recording?",
                if unknown.len() > 1 {
                    format!(" ({} such processes)", unknown.len())
                } else {
                    String::new()
                }
            ),
        )
        .to_string());
    }
    Ok(())
}

/// A recording opened for the replay: its trace, what its bfq log shows, and each
/// context's priority and group.
pub(super) struct Loaded {
    pub(super) rec: Recording,
    pub(super) trace: KernelTrace,
    pub(super) bfq_log: BfqLogTimes,
    pub(super) prios: HashMap<u32, IoPrio>,
    pub(super) groups: ContextGroups,
}

/// Open the recording in `dir` for the replay, refusing what [`diff_recording`] refuses.
pub(super) fn load(dir: &Path) -> Result<Loaded, String> {
    let rec = Recording::open(dir).map_err(|e| e.to_string())?;
    let trace = rec.trace().map_err(|e| e.to_string())?;
    // Nothing the kernel decided: "0 decisions, 100.0% agree" was printed for an empty
    // trace, one of another device, or one whose issue events were renamed.
    if trace.dispatches.is_empty() {
        return Err(format!(
            "{}: no `block_rq_issue` of device {} among its {} events: nothing the kernel \
             decided to compare (a trace of another device, cut short, or edited)",
            rec.trace_path().display(),
            rec.meta.dev(),
            trace.stats.events
        ));
    }
    check_requests(&rec, &trace)?;
    let log = rec.bfq_log().map_err(|e| e.to_string())?;
    if let Some(l) = &log {
        // A log of another run (copied beside this trace) matched no process and was used
        // silently: its notes must fall within the trace's dispatches.
        let span = |t: &mut dyn Iterator<Item = Nanos>| {
            t.fold(None, |m: Option<(Nanos, Nanos)>, x| {
                Some(m.map_or((x, x), |(a, b)| (a.min(x), b.max(x))))
            })
        };
        let run = span(&mut trace.dispatches.iter().map(|d| d.time));
        let notes = span(&mut l.messages.iter().map(|m| m.0));
        if let (Some((a, b)), Some((c, d))) = (run, notes) {
            if d < a || c > b {
                return Err(format!(
                    "{}: its notes ({:.6} to {:.6} s) lie outside the trace's dispatches \
                     ({:.6} to {:.6} s): a log of another run",
                    rec.dir
                        .join(rec.meta.trace.bfq_log.as_deref().unwrap_or(""))
                        .display(),
                    c.as_secs_f64(),
                    d.as_secs_f64(),
                    a.as_secs_f64(),
                    b.as_secs_f64()
                ));
            }
        }
    }
    let bfq_log = log
        .map(|l| BfqLogTimes::read(&trace, &l))
        .unwrap_or_default();
    let prios = rec.context_priorities().map_err(|e| e.to_string())?;
    let groups = rec.context_groups().map_err(|e| e.to_string())?;
    check_group_pids(&rec, &trace, &groups)?;
    Ok(Loaded {
        rec,
        trace,
        bfq_log,
        prios,
        groups,
    })
}

/// Open the recording in `dir` and compare it at each pace (`opts.pace` is ignored).
pub fn diff_recording(dir: &Path, opts: &DiffOptions) -> Result<Row, String> {
    let Loaded {
        rec,
        trace,
        bfq_log,
        prios,
        groups,
    } = load(dir)?;
    let at = |pace| {
        // Notes are of the agreement's replay only.
        let o = DiffOptions {
            pace,
            notes: opts.notes && pace == Pace::Kernel,
            ..opts.clone()
        };
        diff_with_log(&trace, &rec.meta, &o, &bfq_log, &prios, &groups)
            .map_err(|e| format!("{}: {e}", dir.display()))
    };
    Ok(Row {
        mix: mix_name(dir, &rec.meta.scheduler),
        scheduler: rec.meta.scheduler.clone(),
        kernel_pace: at(Pace::Kernel)?,
        device_pace: at(Pace::Device)?,
        early: at(Pace::Early)?,
        requests: trace.requests,
        assembly: trace.stats,
    })
}

/// The mix a recording at `dir` is of, as the table names it: the directory above it in the
/// corpus's MIX/SCHED layout, followed by its own name where that is not the scheduler's
/// (`two/a` and `two/b` were both `two`), the path made absolute first (`kernel-diff rec` or
/// `.` named no mix).
pub(super) fn mix_name(dir: &Path, scheduler: &str) -> String {
    let dir = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    let name = |p: &Path| {
        p.file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    };
    let own = name(&dir);
    let above = dir.parent().map(name).unwrap_or_default();
    match (above.is_empty(), own == scheduler) {
        (_, true) if !above.is_empty() => above,
        (true, _) => own,
        _ => format!("{above}/{own}"),
    }
}

#[cfg(test)]
mod mix_name_tests {
    use super::mix_name;

    #[test]
    fn a_recording_is_named_by_its_mix_and_by_its_own_name_unless_that_is_the_schedulers() {
        let tmp = std::env::temp_dir().join(format!("elevator-mix-name-{}", std::process::id()));
        for sub in ["batches/bfq", "two/a"] {
            std::fs::create_dir_all(tmp.join(sub)).unwrap();
        }
        assert_eq!(mix_name(&tmp.join("batches/bfq"), "bfq"), "batches");
        assert_eq!(mix_name(&tmp.join("two/a"), "kyber"), "two/a");
        // A path that ends in `.` or `..` (as `kernel-diff .` gives) is named as the
        // directory it is.
        std::fs::create_dir_all(tmp.join("batches/bfq/inner")).unwrap();
        let dotted = tmp.join("batches/bfq/inner/..");
        assert_eq!(mix_name(&dotted, "bfq"), "batches");
        assert_eq!(mix_name(&dotted.join("."), "bfq"), "batches");
        std::fs::remove_dir_all(&tmp).unwrap();
    }
}
