//! One walk over a fio job file's lines, as fio's `__parse_jobs_ini` (fio 3, `init.c`) reads
//! them, shared by the job-file parser ([`crate::fio_file`], which refuses what it cannot
//! run) and the kernel recordings' priority reader
//! ([`crate::traces::ftrace::ioprio`], which takes only what it needs and passes over the
//! rest).
//!
//! What the walk does, as fio does:
//! - lines end at `\n`; a `\r` before it is dropped (fio's `strip_blank_end` drops trailing
//!   control characters);
//! - a line that is blank, or whose first character that is not white space is `;` or `#`
//!   (`is_empty_or_comment`), holds nothing; such a line may hold any bytes (fio reads
//!   Latin-1 comments);
//! - a line `[NAME]` opens a section, its name trimmed; a section whose name starts with
//!   `global` (`strncmp(name, "global", 6)`: `[globals]` too, `[Global]` not) sets defaults
//!   for the sections after it and runs no job;
//! - any other line is an option, `key` or `key=value`, both trimmed (fio splits at the
//!   first `=`).
//!
//! Deviations, each left to the caller: a UTF-8 byte-order mark at the start is skipped
//! (fio would read it as part of the first line); a line that is not UTF-8 is given as such
//! ([`Entry::item`] is the error); `include FILE` is an option like any other (fio reads the
//! file in its place); a line opening with `[` but not closed by `]` is given as
//! [`Item::Unclosed`] (fio reads it as an option); fio's trailing comments after a value
//! (`bs=4k ; note`) are not cut.

/// A line of a job file that holds something: a section header or an option.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry<'a> {
    /// Its number, from 1.
    pub line: usize,
    /// Its bytes, without the `\n` and a `\r` before it, untrimmed.
    pub raw: &'a [u8],
    /// What it holds, or why it is not text.
    pub item: Result<Item<'a>, std::str::Utf8Error>,
}

/// What a line of a job file holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Item<'a> {
    /// `[NAME]`: a section, its name trimmed (possibly empty).
    Section {
        /// The name.
        name: &'a str,
        /// Whether it is a global section (its name starts with `global`).
        global: bool,
    },
    /// A line opening with `[` that does not end with `]`, trimmed.
    Unclosed(&'a str),
    /// `key` or `key=value`, each trimmed.
    Option {
        /// The option's name.
        key: &'a str,
        /// Its value, when the line has a `=`.
        value: Option<&'a str>,
    },
}

/// Whether a section of this name is a global one (fio's `strncmp(name, "global", 6)`).
pub fn is_global(name: &str) -> bool {
    name.starts_with("global")
}

/// Every line of `bytes` (a job file) that holds a section header or an option, in order.
pub fn entries(bytes: &[u8]) -> impl Iterator<Item = Entry<'_>> {
    let bytes = bytes.strip_prefix(b"\xef\xbb\xbf").unwrap_or(bytes);
    bytes
        .split(|&b| b == b'\n')
        .enumerate()
        .filter_map(|(i, raw)| {
            let raw = raw.strip_suffix(b"\r").unwrap_or(raw);
            let first = *raw.iter().find(|b| !b.is_ascii_whitespace())?;
            if first == b';' || first == b'#' {
                return None;
            }
            let item = std::str::from_utf8(raw).map(|l| item(l.trim()));
            Some(Entry {
                line: i + 1,
                raw,
                item,
            })
        })
}

/// What the trimmed, non-empty line `l` holds.
fn item(l: &str) -> Item<'_> {
    if let Some(rest) = l.strip_prefix('[') {
        return match rest.strip_suffix(']') {
            Some(name) => {
                let name = name.trim();
                Item::Section {
                    name,
                    global: is_global(name),
                }
            }
            None => Item::Unclosed(l),
        };
    }
    match l.split_once('=') {
        Some((k, v)) => Item::Option {
            key: k.trim(),
            value: Some(v.trim()),
        },
        None => Item::Option {
            key: l,
            value: None,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn items(text: &[u8]) -> Vec<(usize, Item<'_>)> {
        entries(text)
            .map(|e| (e.line, e.item.expect("text")))
            .collect()
    }

    #[test]
    fn sections_options_comments_bom_and_crlf_are_walked_as_fio_reads_them() {
        let text = b"\xef\xbb\xbf; head\r\n[global]\r\nbs = 4k\r\n\r\n  # x\n[globals]\n\
                     [ job 1 ]\nrw=read=x\ndirect\n[Global]\n[open\n";
        assert_eq!(
            items(text),
            vec![
                (
                    2,
                    Item::Section {
                        name: "global",
                        global: true
                    }
                ),
                (
                    3,
                    Item::Option {
                        key: "bs",
                        value: Some("4k")
                    }
                ),
                (
                    6,
                    Item::Section {
                        name: "globals",
                        global: true
                    }
                ),
                (
                    7,
                    Item::Section {
                        name: "job 1",
                        global: false
                    }
                ),
                (
                    8,
                    Item::Option {
                        key: "rw",
                        value: Some("read=x")
                    }
                ),
                (
                    9,
                    Item::Option {
                        key: "direct",
                        value: None
                    }
                ),
                (
                    10,
                    Item::Section {
                        name: "Global",
                        global: false
                    }
                ),
                (11, Item::Unclosed("[open")),
            ]
        );
    }

    #[test]
    fn a_comment_may_hold_any_bytes_and_another_line_not() {
        let e: Vec<Entry> = entries(b"; caf\xe9\n[a]\nx=\xe9\n").collect();
        assert_eq!(e.len(), 2);
        assert_eq!(e[1].line, 3);
        assert!(e[1].item.is_err());
        assert_eq!(e[1].raw, b"x=\xe9");
    }
}
