//! `elevator kernel-diff`: replay recorded kernel traces (from `elevator kernel-record`) into
//! our scheduler of the same name and print how often ours made the kernel's decision (a thin
//! shell over `elevator_workload::kernel_diff`).

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use anyhow::{anyhow, Context, Result};
use elevator_workload::agreement::Agreement;
use elevator_workload::kernel_diff::{self, DiffOptions};
use elevator_workload::traces;
use elevator_workload::traces::ftrace::recording::Recording;

use crate::output::out_str;

/// The recordings `kernel-diff` compares when given none: the repository's corpus, relative
/// to the current directory.
const DEFAULT_CORPUS: &str = "crates/workload/tests/data/kernel";

/// Replay recorded kernel traces into our schedulers and compare the dispatch decisions.
///
/// Each recording (a directory with meta.json, or every MIX/SCHED below a directory) is
/// replayed through the block layer into our policy of the kernel scheduler's name (none is
/// noop), with the recorded sysfs tunables our policy has, each request arriving at its
/// recorded time and completing after the kernel's service time. Prints, per recording, the
/// share of the kernel's dispatches where ours chose the same request from the same queued
/// set (our queue run where the kernel's ran), the real choices among them, the first
/// divergence, the Kendall distance over windows and the share when our queue runs after
/// every event instead; then totals per scheduler. No root needed.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Recordings, or directories holding MIX/SCHED recordings (default: the repository's
    /// corpus, when run from the repository's top directory).
    #[arg(default_value = DEFAULT_CORPUS)]
    pub dirs: Vec<PathBuf>,
    /// The device's queue depth (default: the recording's hardware queue depth, else the
    /// most the kernel had in flight).
    #[arg(long, value_name = "N")]
    pub depth: Option<usize>,
    /// Requests per Kendall window.
    #[arg(long, default_value_t = 32)]
    pub window: usize,
    /// Print up to N divergent decisions per recording, with both queued sets.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub divergences: usize,
    /// Print our policy's notes of its internal state at the kernel's pace (bfq: every
    /// inject-limit reset, measurement start, armed request, update with its inputs, and
    /// injection through `bfq_choose_bfqq_for_injection`), which the kernel's log lacks.
    #[arg(long)]
    pub inject_history: bool,
    /// Measure how much of each recording's disagreement is the trace's resolution: replay
    /// it again, up to N times, with each divergence's kernel decision moved before
    /// insertions another CPU traced within 10 us before its issue, keeping what makes ours
    /// agree (`kernel_diff::resolve`); prints agreement before and after, the moves kept
    /// and the first divergence no move settles (with --divergences M, the first M moves
    /// kept per recording).
    #[arg(long, value_name = "N")]
    pub resolve: Option<usize>,
    /// Count every decision as recorded: set none aside. By default a queue run's decision
    /// that another CPU's insertion, traced after the run could have begun and before the
    /// decision's issue, may have followed, where ours disagrees as recorded and agrees with
    /// the decision taken before that insertion, is counted neither way (the "set aside"
    /// column).
    #[arg(long)]
    pub recorded_order: bool,
}

/// The deepest queue blk-mq allocates (`BLK_MQ_MAX_DEPTH`, include/linux/blk-mq.h).
const MAX_DEPTH: usize = 10_240;

/// Run `elevator kernel-diff`.
pub fn run(args: Args) -> Result<()> {
    // The default is a path in the repository: elsewhere it was "crates/workload/tests/data/
    // kernel: No such file or directory", as if the user had named it.
    if args.dirs == [Path::new(DEFAULT_CORPUS)] && !Path::new(DEFAULT_CORPUS).exists() {
        anyhow::bail!(
            "no recordings given, and the default, the repository's corpus {DEFAULT_CORPUS}, \
             is not under the current directory: name recordings (`elevator kernel-diff DIR`, \
             a recording of `elevator kernel-record` or a directory of them) or run from the \
             repository's top directory"
        );
    }
    // Both were raised silently (a depth of 0 to 1, a window below 2 to 2).
    if args.depth == Some(0) {
        anyhow::bail!("--depth: a queue depth is at least 1");
    }
    // `--depth 18446744073709551615` was taken as given: no device has it.
    if let Some(d) = args.depth.filter(|&d| d > MAX_DEPTH) {
        anyhow::bail!(
            "--depth {d}: a queue depth is at most {MAX_DEPTH} (the kernel's BLK_MQ_MAX_DEPTH)"
        );
    }
    if args.window < 2 {
        anyhow::bail!(
            "--window: a Kendall window orders pairs, so it holds at least 2 decisions (got {})",
            args.window
        );
    }
    if let Some(budget) = args.resolve {
        return resolve(&args, budget);
    }
    let mut seen = HashSet::new();
    let opts = DiffOptions {
        depth: args.depth,
        window: args.window,
        notes: args.inject_history,
        set_aside: !args.recorded_order,
        ..DiffOptions::default()
    };
    let mut rows = Vec::new();
    let (mut divergences, mut notes) = (String::new(), String::new());
    let mut all = Vec::new();
    for dir in &args.dirs {
        all.extend(recordings(dir, &mut seen)?);
    }
    // The corpus takes a minute or two: a bar on a terminal (nothing when piped).
    let bar = crate::progress::bar(all.len(), "kernel-diff");
    for rec in all {
        bar.set_message(format!("kernel-diff {}", rec.display()));
        let row = kernel_diff::diff_recording(&rec, &opts).map_err(|e| anyhow!(e))?;
        bar.inc(1);
        let said = warnings(&rec, &row);
        if !said.is_empty() {
            bar.suspend(|| {
                for w in &said {
                    crate::output::tell!("elevator kernel-diff: {w}");
                }
            });
        }
        // What is printed of a recording's decisions is rendered now, and the row keeps
        // only its figures: a directory of 10^4 recordings held every request and
        // decision of each until the end (300 KB a recording: 935 MB for 3000).
        if args.divergences > 0 {
            for d in kernel_diff::divergences(&row, args.divergences) {
                divergences.push('\n');
                divergences.push_str(&d);
            }
        }
        if !row.kernel_pace.notes.is_empty() {
            notes.push_str(&format!("\n{}/{}: our notes\n", row.mix, row.scheduler));
            for (t, n) in &row.kernel_pace.notes {
                notes.push_str(&format!("{:.6} {n}\n", t.as_ns() as f64 / 1e9));
            }
        }
        rows.push(figures_only(row));
    }
    bar.finish_and_clear();
    let mut text = kernel_diff::markdown(&rows);
    if args.divergences > 0 {
        text.push_str(&divergences);
        text.push('\n');
    }
    text.push_str(&notes);
    out_str(&text);
    Ok(())
}

/// What `kernel-diff` tells of a recording besides its figures, each sentence after
/// "elevator kernel-diff: ": what the trace lacks or holds that no request matched, and the
/// recorded tunables ours did not take.
fn warnings(path: &Path, row: &kernel_diff::Row) -> Vec<String> {
    let mut said = Vec::new();
    let rec = path.display();
    // A trace whose ring buffer overran misses events: its figures compare part of what
    // the kernel decided (kept only with `kernel-record --allow-lost`).
    let meta = Recording::open(path).ok().map(|r| r.meta);
    let lost = meta.as_ref().map_or(0, |m| m.trace.lost);
    // Without bfq's log the replay infers when bfq heard of each completion and the order
    // of its dispatch calls: 40 corpus recordings with their logs removed agree on 87.4% of
    // real choices against 99.2% with them (docs/kernel-agreement.md).
    if meta
        .as_ref()
        .is_some_and(|m| m.scheduler == "bfq" && m.trace.bfq_log.is_none())
    {
        said.push(format!(
            "note: {rec}: recorded without bfq's log (kernel-record takes it wherever the \
             top-level tracer is free; --bfq-log to require it): the replay infers when bfq \
             heard of each completion and the order of its dispatch calls, and agrees less"
        ));
    }
    if lost > 0 {
        said.push(format!(
            "warning: {rec}: the recording lost {lost} events (meta.json's trace.lost: its \
             ring buffer overran); its figures compare only the decisions it kept"
        ));
    }
    if let Some(w) = unmatched_warning(&row.assembly) {
        said.push(format!("warning: {rec}: {w}"));
    }
    if row.assembly.cut_short {
        said.push(format!(
            "warning: {rec}: the trace has kernel-record's start mark and not its end mark \
             (\"{}\"): it was cut before fio ended; its figures compare only the decisions \
             it holds",
            traces::ftrace::MARK_FIO_ENDED
        ));
    }
    if let Some(line) = row.assembly.first_duplicate_line {
        said.push(format!(
            "warning: {rec}: {} event lines of the trace repeat the line before them exactly \
             (task, CPU, time and event; the first at line {line}), which no request event \
             but a completion does in a recorded trace: it was edited or concatenated; each \
             was replayed as read",
            row.assembly.duplicate_lines
        ));
    }
    // A recorded tunable our policy refuses ran at our default: said, not silent
    // (meta.json's `read_expire = -1` printed a 100 % agreement without a word).
    for (name, value, why) in &row.kernel_pace.skipped {
        let value: String = value.chars().take(40).collect();
        said.push(format!(
            "warning: {rec}: meta.json's {name} = {value:?} not used ({why}); {} replayed \
             with our default",
            row.kernel_pace.policy
        ));
    }
    said
}

/// `row` without what only the divergences and the notes print (its requests, each pace's
/// decisions and notes): what [`kernel_diff::markdown`] reads is kept.
fn figures_only(mut row: kernel_diff::Row) -> kernel_diff::Row {
    row.requests = Vec::new();
    for pace in [&mut row.kernel_pace, &mut row.device_pace, &mut row.early] {
        pace.kernel = Vec::new();
        pace.ours = Vec::new();
        pace.notes = Vec::new();
    }
    row
}

/// `--resolve N`: per recording, the agreement as replayed and with the moves kept, in
/// one Markdown table.
fn resolve(args: &Args, budget: usize) -> Result<()> {
    let opts = DiffOptions {
        depth: args.depth,
        window: args.window,
        ..DiffOptions::default()
    };
    let mut seen = HashSet::new();
    let mut text = String::from(
        "| recording | agree as recorded | agree with moves | real choices | moves kept | \
         first divergence | first no move settles | replays |\n|---|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    let dash = |k: Option<usize>| k.map_or("-".to_string(), |k| k.to_string());
    // With --divergences N: the first N moves kept per recording, after the table.
    let mut notes = Vec::new();
    for dir in &args.dirs {
        for rec in recordings(dir, &mut seen)? {
            let r = kernel_diff::resolve(&rec, &opts, budget).map_err(|e| anyhow!(e))?;
            let name = rec
                .iter()
                .rev()
                .take(2)
                .collect::<Vec<_>>()
                .into_iter()
                .rev()
                .map(|c| c.to_string_lossy())
                .collect::<Vec<_>>()
                .join("/");
            text.push_str(&format!(
                "| {name} | {} | {} | {}/{} -> {}/{} | {} | {} -> {} | {}{} | {} |\n",
                resolve_pct(&r.before.agreement),
                resolve_pct(&r.after.agreement),
                r.before.choices_agreed,
                r.before.choices,
                r.after.choices_agreed,
                r.after.choices,
                r.moves.len(),
                dash(r.before.agreement.first_divergence),
                dash(r.after.agreement.first_divergence),
                dash(r.unresolved.first().copied()),
                if r.exhausted { " (budget spent)" } else { "" },
                r.replays,
            ));
            for m in r.moves.iter().take(args.divergences) {
                notes.push(format!(
                    "{name}: decision {} (request {}) taken before the {} event(s) traced \
                     just before its issue",
                    m.decision, m.request, m.passed
                ));
            }
        }
    }
    for n in notes {
        text.push_str(&n);
        text.push('\n');
    }
    out_str(&text);
    Ok(())
}

/// An agreement as `--resolve`'s table prints it: [`Agreement::share`], as the main table
/// (100% for a recording with no decisions, which a ratio over `decisions.max(1)` gave as 0%).
fn resolve_pct(a: &Agreement) -> String {
    format!("{:.1}%", 100.0 * a.share())
}

/// What the trace held that no request matched, in one sentence, or `None` for a whole
/// trace (issue 32, round 14). A request issued twice, inserted twice, completed without its
/// issue, or a `[LOST N EVENTS]` mark in the trace itself was replayed without a word: an
/// issue of no queued request becomes a dispatch of its own (295 requests each issued twice
/// were compared as 590 decisions, 17.8 % agreed). The flush machinery's own flushes and
/// the ends of its flush sequences match no request of the scheduler's in whole traces
/// too, and are not counted.
fn unmatched_warning(a: &elevator_workload::traces::ftrace::Assembly) -> Option<String> {
    // The flush machinery's own flushes and flush-sequence ends are in whole traces too.
    let kinds = [
        (
            a.orphan_issues - a.orphan_flush_issues,
            ["dispatch", "dispatches"],
            "of no queued request",
        ),
        (
            a.orphan_inserts,
            ["insertion", "insertions"],
            "of no created request",
        ),
        (
            a.orphan_completions - a.orphan_empty_completions,
            ["completion or requeue", "completions or requeues"],
            "of no dispatched request",
        ),
        (
            a.unmatched_merges,
            ["merge", "merges"],
            "into no known request",
        ),
        (
            a.never_completed,
            ["dispatched request", "dispatched requests"],
            "never completed",
        ),
    ];
    let mut parts: Vec<String> = kinds
        .iter()
        .filter(|k| k.0 > 0)
        .map(|&(n, what, how)| format!("{n} {} {how}", what[usize::from(n != 1)]))
        .collect();
    if a.lost_events > 0 {
        parts.push(format!(
            "{} events lost (`[LOST N EVENTS]` in the trace)",
            a.lost_events
        ));
    }
    if parts.is_empty() {
        return None;
    }
    let first = a
        .first_unmatched_line
        .map_or(String::new(), |l| format!("; the first at line {l}"));
    Some(format!(
        "the trace holds events that do not fit a request's life ({}{first}): a trace cut, \
         started mid-I/O, overrun or edited; the figures compare the requests as matched, an \
         unmatched dispatch as a request of its own",
        parts.join(", ")
    ))
}

/// The recordings in or below `dir` ([`kernel_diff::find_recordings`]) not in `seen` (by
/// their canonical path), which each is added to. A recording given twice, or inside a
/// directory also given, or reached through a link, was replayed and counted twice in the
/// totals without a word: now each is counted once and the repeat is told. A directory below
/// `dir` that is not a recording but looks like one (a scheduler's directory of a mix, or a
/// directory with a trace or job file, such as a killed `kernel-record` leaves) is told as
/// skipped, not left out silently.
fn recordings(dir: &Path, seen: &mut HashSet<PathBuf>) -> Result<Vec<PathBuf>> {
    let found = kernel_diff::find_recordings(dir).map_err(|e| anyhow!(e))?;
    let mut out = Vec::with_capacity(found.len());
    for rec in found {
        let key = std::fs::canonicalize(&rec).with_context(|| rec.display().to_string())?;
        if seen.insert(key) {
            out.push(rec);
        } else {
            crate::output::tell!(
                "elevator kernel-diff: note: {}: a recording already given (the same \
                 directory, or one inside another given): counted once",
                rec.display()
            );
        }
    }
    if !kernel_diff::has_meta(dir).map_err(|e| anyhow!(e))? {
        let skipped = not_recordings(dir);
        if let Some(first) = skipped.first() {
            crate::output::tell!(
                "elevator kernel-diff: warning: {} director{} below {} without meta.json \
                 skipped (a recording cut short, or not one; the first: {})",
                skipped.len(),
                if skipped.len() == 1 { "y" } else { "ies" },
                dir.display(),
                first.display()
            );
        }
    }
    Ok(out)
}

/// The directories below `root` (a mix, or a mix's scheduler) without a meta.json that look
/// like recordings: every directory of a mix, and a mix holding a trace or a job file.
fn not_recordings(root: &Path) -> Vec<PathBuf> {
    let dirs = |d: &Path| -> Vec<PathBuf> {
        let mut v: Vec<PathBuf> = std::fs::read_dir(d)
            .into_iter()
            .flatten()
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.is_dir())
            .collect();
        v.sort();
        v
    };
    // Any meta.json that is not a file was refused by `find_recordings` already.
    let recorded = |d: &Path| kernel_diff::has_meta(d).unwrap_or(true);
    let mut out = Vec::new();
    for mix in dirs(root).into_iter().filter(|d| !recorded(d)) {
        if ["trace.txt", "trace.txt.gz", "job.fio"]
            .iter()
            .any(|f| mix.join(f).exists())
        {
            out.push(mix.clone());
        }
        out.extend(dirs(&mix).into_iter().filter(|d| !recorded(d)));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn corpus() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../workload/tests/data/kernel")
    }

    #[test]
    fn kernel_diff_reads_one_recording_and_a_whole_corpus() {
        let opts = DiffOptions::default();
        let one = kernel_diff::find_recordings(&corpus().join("batches/none")).unwrap();
        assert_eq!(one.len(), 1);
        let row = kernel_diff::diff_recording(&one[0], &opts).unwrap();
        assert_eq!(row.kernel_pace.agreement.share(), 1.0);
        let all = kernel_diff::find_recordings(&corpus()).unwrap();
        // Every mix's directory holds one recording per scheduler, each with its meta.json:
        // find them all, whatever the corpus has grown to (33 on 2026-11-29).
        let on_disk = std::fs::read_dir(corpus())
            .unwrap()
            .flat_map(|mix| std::fs::read_dir(mix.unwrap().path()).into_iter().flatten())
            .filter(|rec| rec.as_ref().unwrap().path().join("meta.json").is_file())
            .count();
        assert!(on_disk >= 25, "{on_disk}");
        assert_eq!(all.len(), on_disk);
        let names: Vec<_> = all[..4]
            .iter()
            .map(|p| p.file_name().unwrap().to_str().unwrap().to_string())
            .collect();
        assert_eq!(names, ["none", "mq-deadline", "kyber", "bfq"]);
        assert!(kernel_diff::find_recordings(&corpus().join("jobs")).is_err());
        run(Args {
            dirs: vec![corpus().join("prio-classes")],
            depth: Some(4),
            window: 16,
            divergences: 2,
            inject_history: true,
            resolve: None,
            recorded_order: false,
        })
        .unwrap();
        // The diagnostic of the trace's resolution runs over the same recordings.
        run(Args {
            dirs: vec![corpus().join("prio-classes")],
            depth: None,
            window: 32,
            divergences: 2,
            inject_history: false,
            resolve: Some(20),
            recorded_order: false,
        })
        .unwrap();
    }

    /// A recording none of whose positions were compared reads 100% in `--resolve`'s table,
    /// as in the main table (`Agreement::share`); the table's own ratio over
    /// `decisions.max(1)` printed 0.0%.
    #[test]
    fn resolve_table_prints_a_recording_without_decisions_as_the_main_table_does() {
        assert_eq!(resolve_pct(&Agreement::default()), "100.0%");
        let three_of_four = Agreement {
            decisions: 4,
            same_choice: 3,
            ..Agreement::default()
        };
        assert_eq!(resolve_pct(&three_of_four), "75.0%");
    }
}
