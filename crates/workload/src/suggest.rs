//! The name a user most likely meant when the one given is unknown: a misspelt scheduler,
//! drive, scenario or fio option is answered with the nearest known name ("did you mean
//! `iodepth`?"), as clap answers a misspelt flag.
//!
//! Nearness is the optimal string alignment distance (insertions, deletions, substitutions
//! and swaps of two neighbours, each 1), compared without case; a name counts as meant when
//! it is within a third of the given name's length (at least 1, at most 3) and nearer than
//! every other known name.

/// The known name nearest `given`, if one is near enough to be what was meant (see the module
/// documentation); `None` when none is, or when two are equally near.
pub fn nearest<'a, I>(given: &str, known: I) -> Option<&'a str>
where
    I: IntoIterator<Item = &'a str>,
{
    let lower = given.to_lowercase();
    let bound = (lower.chars().count() / 3).clamp(1, 3);
    let mut best: Option<(usize, &'a str)> = None;
    let mut tied = false;
    for name in known {
        let d = distance(&lower, &name.to_lowercase());
        match best {
            Some((b, _)) if d > b => {}
            Some((b, _)) if d == b => tied = true,
            _ => {
                best = Some((d, name));
                tied = false;
            }
        }
    }
    match best {
        Some((d, name)) if d <= bound && name != given && !tied => Some(name),
        _ => None,
    }
}

/// `" (did you mean `NAME`?)"` for the [`nearest`] known name, or nothing: the tail an
/// error about an unknown name ends with.
pub fn did_you_mean<'a, I>(given: &str, known: I) -> String
where
    I: IntoIterator<Item = &'a str>,
{
    match nearest(given, known) {
        Some(name) => format!(" (did you mean `{name}`?)"),
        None => String::new(),
    }
}

/// [`did_you_mean`] for an unknown scheduler `name`, among every scheduler's name and alias
/// (`bqf` -> `bfq`).
pub fn scheduler(name: &str) -> String {
    let all = elevator_core::registry::all();
    did_you_mean(
        name,
        all.iter()
            .flat_map(|i| std::iter::once(i.name).chain(i.aliases.iter().copied())),
    )
}

/// The optimal string alignment distance between `a` and `b`, by characters.
fn distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    // Three rows of the table: two back (for swaps), the last and the one being filled.
    let mut before: Vec<usize> = vec![0; b.len() + 1];
    let mut last: Vec<usize> = (0..=b.len()).collect();
    let mut row: Vec<usize> = vec![0; b.len() + 1];
    for i in 1..=a.len() {
        row[0] = i;
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut d = (last[j] + 1).min(row[j - 1] + 1).min(last[j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                d = d.min(before[j - 2] + 1);
            }
            row[j] = d;
        }
        std::mem::swap(&mut before, &mut last);
        std::mem::swap(&mut last, &mut row);
    }
    last[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    const SCHEDULERS: [&str; 6] = ["noop", "deadline", "bfq", "kyber", "cfq", "mq-deadline"];

    #[test]
    fn a_swap_a_missing_letter_and_a_wrong_case_find_the_name() {
        assert_eq!(nearest("bqf", SCHEDULERS), Some("bfq"));
        assert_eq!(nearest("deadlin", SCHEDULERS), Some("deadline"));
        assert_eq!(nearest("Kyber", SCHEDULERS), Some("kyber"));
        assert_eq!(nearest("iodeph", ["iodepth", "bs", "rw"]), Some("iodepth"));
        assert_eq!(
            nearest("laptop4200", ["laptop-4200", "ibm18es"]),
            Some("laptop-4200")
        );
    }

    #[test]
    fn a_far_name_an_exact_name_and_a_tie_suggest_nothing() {
        assert_eq!(nearest("elvis", SCHEDULERS), None);
        assert_eq!(nearest("bfq", SCHEDULERS), None);
        // `xfq` is one from both bfq and cfq: no guess between them.
        assert_eq!(nearest("xfq", SCHEDULERS), None);
        assert_eq!(did_you_mean("zzzzzz", SCHEDULERS), "");
        assert_eq!(
            did_you_mean("kybre", SCHEDULERS),
            " (did you mean `kyber`?)"
        );
    }

    #[test]
    fn the_distance_counts_edits_and_swaps() {
        assert_eq!(distance("", "abc"), 3);
        assert_eq!(distance("abc", "abc"), 0);
        assert_eq!(distance("abc", "acb"), 1);
        assert_eq!(distance("kitten", "sitting"), 3);
    }
}
