//! TOML spec files (drives, SSDs, hosts, scenarios): the bounded read, the lookup of a
//! built-in spec by name or path, and the placing of an error at its line and field. Every
//! error is an [`InputError`]; the rotational, SSD and host specs share this module, so none
//! of them imports another.

use std::path::Path;

use elevator_workload::InputError;

/// The largest scenario or drive spec file read, bytes: `/dev/zero` or a 1 GB sparse file
/// given as a spec is refused after reading this much.
pub const MAX_SPEC_BYTES: u64 = 4 << 20;

/// The text of the spec file at `path`, read up to [`MAX_SPEC_BYTES`] (a UTF-8 byte-order
/// mark is skipped), or the error naming the file and why not.
pub(crate) fn read(path: &Path) -> Result<String, InputError> {
    elevator_workload::input::read_text(path, MAX_SPEC_BYTES, "spec file")
}

/// A spec read from TOML that also comes built in, by name: the lookup by name or path the
/// drive, SSD and host specs share.
pub(crate) trait BuiltinSpec: Sized {
    /// What a spec of this kind is called in errors ("drive", "host").
    const WHAT: &'static str;
    /// The built-in specs: name and TOML text.
    const FILES: &'static [(&'static str, &'static str)];
    /// Parses and checks TOML text; `path` names it in errors.
    fn parse(text: &str, path: &Path) -> Result<Self, InputError>;

    /// Names of the built-in specs.
    fn builtin_names() -> Vec<&'static str> {
        Self::FILES.iter().map(|(n, _)| *n).collect()
    }

    /// A built-in spec by name (case-insensitive).
    fn builtin(name: &str) -> Option<Self> {
        let (n, text) = Self::FILES
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))?;
        // The built-in files are checked by tests; a failure here is a build defect.
        Self::parse(text, Path::new(&format!("builtin:{n}"))).ok()
    }

    /// Reads and checks a TOML spec file.
    fn load(path: &Path) -> Result<Self, InputError> {
        Self::parse(&read(path)?, path)
    }

    /// A built-in name or, failing that, a TOML file path.
    fn resolve(name_or_path: &str) -> Result<Self, InputError> {
        match Self::builtin(name_or_path) {
            Some(s) => Ok(s),
            // A link to itself or to nowhere is read and told as such, not as missing.
            None if Path::new(name_or_path).symlink_metadata().is_err() => {
                Err(not_found(name_or_path, Self::WHAT, &Self::builtin_names()))
            }
            None => Self::load(Path::new(name_or_path)),
        }
    }
}

/// `name_or_path` is neither one of the built-in `what`s (`names`) nor a file.
pub(crate) fn not_found(name_or_path: &str, what: &str, names: &[&str]) -> InputError {
    InputError::new(
        name_or_path,
        format!(
            "neither a built-in {what} ({}) nor a {what} file{}",
            names.join(", "),
            elevator_workload::suggest::did_you_mean(name_or_path, names.iter().copied())
        ),
    )
}

/// A spec's check failing on `field`: the error a spec's `check` returns before it is known
/// which file the spec came from, named after the spec (`what name`, say `drive laptop-4200`).
pub(crate) fn fault(what: &str, name: &str, field: &str, message: String) -> InputError {
    InputError::new(format!("{what} {name}"), message).in_field(field)
}

/// A check's `fault` placed in the spec file it was read from: `path`, and the line of
/// `text` that sets the field.
pub(crate) fn placed(fault: InputError, text: &str, path: &Path) -> InputError {
    let line = locate(text, &fault.field);
    InputError::new(path, fault.message)
        .on_line(line)
        .in_field(&fault.field)
}

/// A TOML syntax or type error in `text` (read from `file`), placed at its line and field.
/// The field is the one toml's message names ("unknown field `x`", "missing field `x`"), else
/// the key assigned on the line the error points at ("number too large to fit in target type"
/// names none); an unknown field is placed on the line that assigns it, the first at or after
/// the line toml points at (a table flattened into another is pointed at by its header).
pub(crate) fn toml_error(e: &toml::de::Error, text: &str, file: impl AsRef<Path>) -> InputError {
    let msg = e.message();
    let named = msg
        .split('`')
        .nth(1)
        .filter(|_| msg.contains("field"))
        .map(str::to_string);
    let mut pointed = e.span().map(|sp| line_of(text, sp.start));
    // A wrong value in a table flattened into another (a scenario's `[[job]]`, whose kind
    // picks its fields) is pointed at by the table's header: "sw.toml:4: invalid type: string
    // "4k", expected u64" named neither `bs` nor its line. The message quotes the value; the
    // line that assigns it in that table is the one meant.
    let mut valued = None;
    if let Some(header) = pointed.filter(|&l| {
        text.lines()
            .nth(l - 1)
            .is_some_and(|l| l.trim_start().starts_with('['))
    }) {
        if let Some((line, key)) = quoted_value(msg).and_then(|v| assigning(text, header, &v)) {
            pointed = Some(line);
            valued = Some(key);
        }
    }
    let line = match &named {
        Some(f) if msg.contains("unknown field") => pointed
            .and_then(|from| find_line_from(text, from, f, ""))
            .or_else(|| find_line(text, f, ""))
            .or(pointed),
        _ => pointed,
    };
    let field = named.or(valued).or_else(|| {
        let l = text.lines().nth(line? - 1)?;
        let (key, _) = l.split_once('=')?;
        let key = key.trim();
        (!key.is_empty()
            && key
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "_-.".contains(c)))
        .then(|| key.to_string())
    });
    // An unknown field is named with the table it is in (`flash.read_uss`, as a range error
    // names `flash.channels`) and the field it most likely meant.
    let mut msg = msg.trim().to_string();
    let mut field = field;
    if msg.starts_with("unknown field") {
        if let Some(expected) = msg.split_once("expected").map(|(_, e)| e.to_string()) {
            let known: Vec<&str> = expected.split('`').skip(1).step_by(2).collect();
            if let Some(f) = &field {
                msg.push_str(&elevator_workload::suggest::did_you_mean(
                    f,
                    known.iter().copied(),
                ));
            }
        }
        if let (Some(f), Some(table)) = (&field, line.and_then(|l| table_of(text, l))) {
            field = Some(format!("{table}.{f}"));
        }
    }
    InputError::new(file, msg)
        .on_line(line)
        .in_field(field.as_deref().unwrap_or(""))
}

/// The table (`flash`, `write_buffer`, `job`) whose header is the last one at or before
/// 1-based `line` of `text`; `None` at the top level.
fn table_of(text: &str, line: usize) -> Option<String> {
    text.lines()
        .take(line)
        .filter_map(|l| {
            let l = l.trim();
            let name = l.strip_prefix("[[").and_then(|r| r.split_once("]]"));
            let name = name.or_else(|| l.strip_prefix('[').and_then(|r| r.split_once(']')));
            name.map(|(n, _)| n.trim().to_string())
        })
        .last()
}

/// The value serde's "invalid type: string "4k", expected u64" or "invalid value: integer
/// `-1`, expected u64" quotes, as the TOML text would write it: a string's contents, or a
/// number's or boolean's token.
fn quoted_value(msg: &str) -> Option<String> {
    // A tag with no such variant (a scenario job's `kind = "compiler"`): "unknown variant
    // `compiler`, expected one of ..." named no field.
    if let Some(rest) = msg.strip_prefix("unknown variant `") {
        return Some(rest[..rest.find('`')?].to_string());
    }
    let rest = msg
        .strip_prefix("invalid type: ")
        .or_else(|| msg.strip_prefix("invalid value: "))?;
    if let Some(s) = rest.strip_prefix("string \"") {
        return Some(s[..s.rfind("\", expected")?].to_string());
    }
    Some(rest.split('`').nth(1)?.to_string())
}

/// The first line after the table header on line `header` (and before the next header) that
/// assigns `value` (a string's contents in either kind of quotes, or a token), with its key.
fn assigning(text: &str, header: usize, value: &str) -> Option<(usize, String)> {
    let quoted = [format!("\"{value}\""), format!("'{value}'")];
    text.lines()
        .enumerate()
        .skip(header)
        .take_while(|(_, l)| !l.trim_start().starts_with('['))
        .find_map(|(i, l)| {
            let (key, v) = l.split_once('=')?;
            let v = v.split(" #").next().unwrap_or(v).trim();
            (v == value || quoted.iter().any(|q| q == v)).then(|| (i + 1, key.trim().to_string()))
        })
}

/// The 1-based line of byte offset `byte` of `text`.
fn line_of(text: &str, byte: usize) -> usize {
    text[..byte.min(text.len())].matches('\n').count() + 1
}

/// The first line where `key` is assigned (and, if `value` is not empty, that line also
/// contains `value`), or where the line is exactly `key` (a table header).
pub(crate) fn find_line(text: &str, key: &str, value: &str) -> Option<usize> {
    find_line_from(text, 1, key, value)
}

/// [`find_line`] from 1-based line `from` on.
fn find_line_from(text: &str, from: usize, key: &str, value: &str) -> Option<usize> {
    text.lines()
        .enumerate()
        .skip(from.saturating_sub(1))
        .find_map(|(i, l)| {
            let t = l.trim();
            let assigns = t
                .strip_prefix(key)
                .map(|rest| rest.trim_start().starts_with('='))
                .unwrap_or(false);
            let header = t == key;
            ((assigns && (value.is_empty() || t.contains(value))) || header).then_some(i + 1)
        })
}

/// Finds the line of a field path such as `layout.zones[3].first_cyl` in TOML text written in
/// the usual style (`[[layout.zones]]` headers, `key = value` lines).
pub(crate) fn locate(text: &str, field: &str) -> Option<usize> {
    let mut table = String::new();
    let mut key = field;
    let mut index = 0usize;
    if let Some(open) = field.rfind('[') {
        if let Some(close) = field[open..].find(']') {
            table = field[..open].to_string();
            index = field[open + 1..open + close].parse().ok()?;
            key = field[open + close + 1..].trim_start_matches('.');
        }
    } else if let Some(dot) = field.rfind('.') {
        table = field[..dot].to_string();
        key = &field[dot + 1..];
    }
    let key = key.split('.').next().unwrap_or(key);
    let mut seen = 0usize;
    let mut inside = table.is_empty();
    let mut header_line = None;
    for (n, line) in text.lines().enumerate() {
        let l = line.trim();
        if l.starts_with('[') {
            let name = l.trim_matches(|c| c == '[' || c == ']').trim();
            inside = false;
            if name == table || name.starts_with(&format!("{table}.")) {
                if l.starts_with("[[") {
                    if name == table {
                        inside = seen == index;
                        seen += 1;
                    }
                } else {
                    inside = true;
                }
                if inside {
                    header_line = Some(n + 1);
                }
            }
            continue;
        }
        if inside {
            if let Some((k, _)) = l.split_once('=') {
                if k.trim() == key {
                    return Some(n + 1);
                }
            }
        }
    }
    header_line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn find_line_finds_assignments_and_headers() {
        let t = "a = 1\n[tunables.deadline]\nread_expire = 5\n";
        assert_eq!(find_line(t, "read_expire", ""), Some(3));
        assert_eq!(find_line(t, "[tunables.deadline]", ""), Some(2));
        assert_eq!(find_line(t, "b", ""), None);
        assert_eq!(find_line_from(t, 2, "a", ""), None);
    }

    #[test]
    fn locate_finds_a_field_path_in_its_table() {
        let t = "rpm = 1\n[[z]]\nx = 1\n[[z]]\ny = 2\nx = 3\n[c]\nx = 4\n";
        assert_eq!(locate(t, "rpm"), Some(1));
        assert_eq!(locate(t, "z[1].x"), Some(6));
        assert_eq!(
            locate(t, "z[1].w"),
            Some(4),
            "the table's header when the key is absent"
        );
        assert_eq!(locate(t, "c.x"), Some(8));
    }

    #[test]
    fn toml_errors_name_the_line_and_field() {
        #[derive(Debug, serde::Deserialize)]
        #[serde(deny_unknown_fields)]
        #[allow(dead_code)]
        struct T {
            a: u8,
            #[serde(default)]
            c: Option<Inner>,
        }
        #[derive(Debug, serde::Deserialize)]
        #[serde(deny_unknown_fields)]
        #[allow(dead_code)]
        struct Inner {
            a: Option<u8>,
        }
        let text = "a = 300\n";
        let e = toml::from_str::<T>(text).unwrap_err();
        let e = toml_error(&e, text, "t.toml");
        assert_eq!((e.line(), e.field.as_str()), (Some(1), "a"), "{e}");
        let text = "a = 1\n[c]\nb = 2\n";
        let e = toml::from_str::<T>(text).unwrap_err();
        let e = toml_error(&e, text, "t.toml");
        assert_eq!((e.line(), e.field.as_str()), (Some(3), "c.b"), "{e}");
        assert!(
            e.to_string()
                .starts_with("t.toml:3: field `c.b`: unknown field"),
            "{e}"
        );
        // A near miss is suggested.
        let text = "a = 1\n[c]\naa = 2\n";
        let e = toml::from_str::<T>(text).unwrap_err();
        let e = toml_error(&e, text, "t.toml");
        assert_eq!(e.field, "c.aa", "{e}");
        assert!(e.to_string().contains("did you mean `a`?"), "{e}");
    }

    /// An internally tagged table with a tag of no variant (a scenario job's
    /// `kind = "compiler"`) is pointed at by its header: the error names the tag's line and
    /// key (it named neither).
    #[test]
    fn an_unknown_variant_names_the_line_and_key_of_its_tag() {
        #[derive(Debug, serde::Deserialize)]
        #[allow(dead_code)]
        struct T {
            job: Vec<Job>,
        }
        #[derive(Debug, serde::Deserialize)]
        #[serde(tag = "kind", rename_all = "kebab-case")]
        #[allow(dead_code)]
        enum Job {
            Compile { name: String },
            Fio { name: String },
        }
        let text =
            "[[job]]\nname = \"a\"\nkind = \"fio\"\n\n[[job]]\nname = \"b\"\nkind = \"compiler\"\n";
        let e = toml::from_str::<T>(text).unwrap_err();
        let e = toml_error(&e, text, "t.toml");
        assert_eq!((e.line(), e.field.as_str()), (Some(7), "kind"), "{e}");
    }
}
