//! The comparison written out: the markdown table of rows ([`markdown`]) and a row's first
//! divergences in words ([`divergences`]).

use elevator_core::Nanos;

use super::{Row, UNORDERED_ISSUE_GAP};
use crate::traces::ftrace::TracedRequest;

pub(super) fn pct(x: f64) -> String {
    format!("{:.1}%", 100.0 * x)
}

/// `x` of `of` as a percentage, or `-` when `of` is 0: a share of nothing is no share (a
/// scheduler with no real choice, `none` beside one process, read "0/0 (100.0%)").
fn share_of(x: usize, of: usize) -> String {
    if of == 0 {
        "-".to_string()
    } else {
        pct(x as f64 / of as f64)
    }
}

/// What the tables' terms and marks mean, printed under them.
const LEGEND: &str = "\ndecisions: the kernel's dispatches (each `block_rq_issue` of a \
request the scheduler held), with the requests queued at each. agree: the share where ours, \
asked where the kernel's queue ran, chose the same request from the same queued set. real \
choices: the kernel's decisions with more than one request queued; `-` where there were none \
(no share to give). set aside: real choices counted neither way (not in decisions, agree or \
real choices): a queue run's decision that another CPU's insertion, traced after the run could \
have begun and before the decision's issue, may have followed, where ours disagreed in the \
recorded order and agreed with the decision taken before that insertion. first divergence: the \
first decision (counted from 0) where the queued set or the choice differs; `-` for none. \
Kendall mean / max: the share of request pairs the two dispatch orders put the other way, over \
windows of --window dispatches. agree at device pace: as agree, with our queue run after every \
event, as deep as the device. agree decided earliest: as agree, with each decision on both \
sides moved to the earliest point the trace allows (a test of choices made before insertions \
their issue follows). ours: our policy replayed, named as the kernel names it (`none` runs our \
noop policy, a FIFO).\n";

/// The name of our policy as the table shows it: the kernel's name when our policy answers
/// to it (`none` is our `noop`'s alias), else our registry's name.
fn ours(row: &Row) -> &str {
    let policy = row.kernel_pace.policy;
    match elevator_core::registry::find(&row.scheduler) {
        Some(s) if s.name == policy => &row.scheduler,
        _ => policy,
    }
}

/// The agreement table (Markdown): per recording, the kernel's decisions, the share ours
/// agreed on at the kernel's pace, the real choices (more than one queued) agreed, the first
/// divergence, the windowed Kendall distance (mean / max) and the share at the device's pace;
/// then per scheduler the totals, and the legend.
pub fn markdown(rows: &[Row]) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    s.push_str(
        "| mix | scheduler | ours | decisions | agree | real choices agreed | set aside \
         | first divergence | Kendall mean / max | agree at device pace | agree decided earliest |\n\
         |---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    for r in rows {
        let d = &r.kernel_pace;
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {}/{} | {} | {} | {:.3} / {:.3} | {} | {} |",
            r.mix,
            r.scheduler,
            ours(r),
            d.agreement.decisions,
            pct(d.agreement.share()),
            d.choices_agreed,
            d.choices,
            d.set_aside.len(),
            d.agreement
                .first_divergence
                .map_or("-".to_string(), |k| k.to_string()),
            d.kendall_mean(),
            d.kendall_max(),
            pct(r.device_pace.agreement.share()),
            pct(r.early.agreement.share()),
        );
    }
    let mut names: Vec<&str> = Vec::new();
    for r in rows {
        if !names.contains(&r.scheduler.as_str()) {
            names.push(&r.scheduler);
        }
    }
    s.push_str(
        "\n| scheduler | decisions | agree | real choices agreed | set aside | agree at device \
         pace | agree decided earliest |\n|---|---:|---:|---:|---:|---:|---:|\n",
    );
    for name in names {
        let (mut n, mut a, mut c, mut ca, mut dv, mut ea, mut en) = (0, 0, 0, 0, 0, 0, 0);
        let (mut aside, mut dn) = (0, 0);
        for r in rows.iter().filter(|r| r.scheduler == name) {
            n += r.kernel_pace.agreement.decisions;
            a += r.kernel_pace.agreement.same_choice;
            c += r.kernel_pace.choices;
            ca += r.kernel_pace.choices_agreed;
            aside += r.kernel_pace.set_aside.len();
            dv += r.device_pace.agreement.same_choice;
            dn += r.device_pace.agreement.decisions;
            ea += r.early.agreement.same_choice;
            en += r.early.agreement.decisions;
        }
        let share = |x: usize, of: usize| if of == 0 { 1.0 } else { x as f64 / of as f64 };
        let _ = writeln!(
            s,
            "| {name} | {n} | {} | {ca}/{c} ({}) | {aside} | {} | {} |",
            pct(share(a, n)),
            share_of(ca, c),
            pct(share(dv, dn)),
            pct(share(ea, en)),
        );
    }
    s.push_str(LEGEND);
    s
}

/// Every decision (at the kernel's pace) where ours chose otherwise from the same set or
/// the sets differed, each with both sides' queued requests (index, process, operation and
/// flags, sector+size, arrival in ms since the first arrival); at most `limit`, after a line
/// counting the pairs settled in our order ([`settle_unordered_pairs`](super::settle_unordered_pairs)), if any,
/// and one listing the decisions set aside ([`TraceDiff::set_aside`](super::TraceDiff::set_aside)), if any.
pub fn divergences(row: &Row, limit: usize) -> Vec<String> {
    let d = &row.kernel_pace;
    let t0 = row
        .requests
        .iter()
        .filter_map(TracedRequest::arrival)
        .min()
        .unwrap_or(Nanos::ZERO);
    let show = |i: usize| {
        // A request of ours the kernel never had (an insertion merge ours did not make
        // becomes a request of its own) has an index past the kernel's.
        let Some(r) = row.requests.get(i) else {
            return format!("#{i} (ours only: not a kernel request)");
        };
        format!(
            "#{i} {}:{} {} {}+{} @{:.3}",
            r.comm,
            r.pid,
            r.rwbs,
            r.sector,
            r.sectors,
            r.arrival().unwrap_or(t0).saturating_sub(t0).as_ms_f64()
        )
    };
    let set = |q: &[usize], chosen: usize| {
        q.iter()
            .map(|&i| {
                if i == chosen {
                    format!("[{}]", show(i))
                } else {
                    show(i)
                }
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut out = Vec::new();
    if d.unordered_pairs > 0 {
        out.push(format!(
            "{}/{}: {} pair(s) of decisions issued by two CPUs within {} us taken in our order \
             (the trace cannot order them)",
            row.mix,
            row.scheduler,
            d.unordered_pairs,
            UNORDERED_ISSUE_GAP.as_ns() / 1000
        ));
    }
    if !d.set_aside.is_empty() {
        out.push(format!(
            "{}/{}: {} decision(s) set aside, ours agreeing with each taken before the \
             insertions another CPU traced inside its queue run's window: {}",
            row.mix,
            row.scheduler,
            d.set_aside.len(),
            d.set_aside
                .iter()
                .map(|k| k.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    let shown = out.len();
    for (k, kd) in d.kernel.iter().enumerate() {
        if out.len() - shown >= limit {
            break;
        }
        match d.ours.get(k) {
            Some(o) if o == kd => {}
            Some(o) => out.push(format!(
                "{}/{} decision {k}:\n  kernel: {}\n  ours:   {}",
                row.mix,
                row.scheduler,
                set(&kd.queued, kd.chosen),
                set(&o.queued, o.chosen)
            )),
            None => out.push(format!(
                "{}/{} decision {k}: ours made no more decisions; kernel: {}",
                row.mix,
                row.scheduler,
                set(&kd.queued, kd.chosen)
            )),
        }
    }
    out
}
