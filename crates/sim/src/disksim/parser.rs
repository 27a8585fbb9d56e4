//! A reader for DiskSim's parameter files (`.parv`, `.diskspecs`, `.model`).
//!
//! The format (DiskSim's libparam): top-level `TYPE NAME { ... }` blocks, `source FILE`
//! includes, `instantiate [ ... ] as NAME` and `topology ...` statements; inside a block,
//! comma-separated `Key words = value` parameters whose values are numbers, bare words, lists
//! `[ ... ]`, nested blocks `TYPE { ... }` or `source FILE`. `#` starts a comment. Every value
//! remembers its file and line for error messages.

use elevator_workload::InputError;
use std::path::{Path, PathBuf};

/// A parameter value.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    /// A number.
    Num(f64),
    /// A bare word or path.
    Word(String),
    /// A list.
    List(Vec<Located>),
    /// A block.
    Block(Block),
}

/// A value with where it was written.
#[derive(Clone, Debug, PartialEq)]
pub struct Located {
    /// The value.
    pub value: Value,
    /// The file.
    pub file: PathBuf,
    /// 1-based line.
    pub line: usize,
}

/// A block of parameters.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Block {
    /// Its type, e.g. `disksim_disk`, `dm_layout_g1_zone`.
    pub kind: String,
    /// Its name at top level, if any.
    pub name: Option<String>,
    /// `(key, value)` in order of appearance.
    pub params: Vec<(String, Located)>,
    /// Where the block starts.
    pub file: PathBuf,
    /// Line of the block's opening.
    pub line: usize,
}

/// A parsed top-level file (with its includes expanded).
#[derive(Clone, Debug, Default)]
pub struct ParamFile {
    /// Top-level blocks in order.
    pub blocks: Vec<Block>,
    /// `instantiate [ names ] as TYPE` statements: (instance names, block name).
    pub instances: Vec<(Vec<String>, String)>,
}

#[derive(Clone, Debug, PartialEq)]
enum Tok {
    Word(String),
    Punct(char),
}

struct Lexer {
    toks: Vec<(Tok, usize)>,
    pos: usize,
    file: PathBuf,
}

fn lex(text: &str) -> Vec<(Tok, usize)> {
    let mut out = Vec::new();
    for (n, raw) in text.lines().enumerate() {
        let line = raw.split('#').next().unwrap_or("");
        let mut word = String::new();
        for ch in line.chars() {
            if matches!(ch, '{' | '}' | '[' | ']' | '=' | ',') || ch.is_whitespace() {
                if !word.is_empty() {
                    out.push((Tok::Word(std::mem::take(&mut word)), n + 1));
                }
                if !ch.is_whitespace() {
                    out.push((Tok::Punct(ch), n + 1));
                }
            } else {
                word.push(ch);
            }
        }
        if !word.is_empty() {
            out.push((Tok::Word(word), n + 1));
        }
    }
    out
}

impl Lexer {
    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.pos).map(|t| &t.0)
    }
    fn peek2(&self) -> Option<&Tok> {
        self.toks.get(self.pos + 1).map(|t| &t.0)
    }
    fn line(&self) -> usize {
        self.toks
            .get(self.pos)
            .or(self.toks.last())
            .map(|t| t.1)
            .unwrap_or(1)
    }
    fn err(&self, field: &str, msg: impl Into<String>) -> InputError {
        InputError::at_line(&self.file, self.line(), field, msg)
    }
    fn next(&mut self) -> Option<Tok> {
        let t = self.toks.get(self.pos).map(|t| t.0.clone());
        self.pos += 1;
        t
    }
    fn expect(&mut self, c: char, field: &str) -> Result<(), InputError> {
        match self.next() {
            Some(Tok::Punct(p)) if p == c => Ok(()),
            other => {
                self.pos -= 1;
                Err(self.err(field, format!("expected `{c}`, found {}", show(&other))))
            }
        }
    }
}

fn show(t: &Option<Tok>) -> String {
    match t {
        Some(Tok::Word(w)) => format!("`{w}`"),
        Some(Tok::Punct(p)) => format!("`{p}`"),
        None => "end of file".into(),
    }
}

/// Reads a top-level parameter file, expanding `source` includes relative to `dir` (the
/// directory of the top file, as DiskSim does).
pub fn parse_file(path: &Path) -> Result<ParamFile, InputError> {
    let dir = path.parent().unwrap_or(Path::new(".")).to_path_buf();
    let mut out = ParamFile::default();
    parse_top(path, &dir, &mut out, 0)?;
    Ok(out)
}

/// The largest parameter file read (DiskSim's own are under 100 KB): `/dev/zero` or a stray
/// huge file is refused instead of read until memory runs out.
pub const MAX_FILE_BYTES: u64 = 8 << 20;

/// How deep values may nest (`[` lists and `TYPE { }` blocks inside one another); DiskSim's
/// files nest four levels. Deeper input is refused before the recursion can exhaust the stack.
pub const MAX_NESTING: usize = 64;

pub(crate) fn read(path: &Path) -> Result<String, InputError> {
    elevator_workload::input::read_text(path, MAX_FILE_BYTES, "DiskSim parameter file")
}

fn parse_top(path: &Path, dir: &Path, out: &mut ParamFile, depth: usize) -> Result<(), InputError> {
    if depth > 16 {
        return Err(InputError::new(path, "includes nest too deep").in_field("source"));
    }
    let text = read(path)?;
    let mut lx = Lexer {
        toks: lex(&text),
        pos: 0,
        file: path.to_path_buf(),
    };
    while let Some(t) = lx.next() {
        let Tok::Word(w) = t else {
            lx.pos -= 1;
            return Err(lx.err("", format!("unexpected {}", show(&lx.peek().cloned()))));
        };
        match w.as_str() {
            "source" => {
                let Some(Tok::Word(f)) = lx.next() else {
                    lx.pos -= 1;
                    return Err(lx.err("source", "expected a file name"));
                };
                parse_top(&dir.join(&f), dir, out, depth + 1)?;
            }
            "instantiate" => {
                lx.expect('[', "instantiate")?;
                let mut names = Vec::new();
                loop {
                    match lx.next() {
                        Some(Tok::Word(n)) => names.push(n),
                        Some(Tok::Punct(',')) => {}
                        Some(Tok::Punct(']')) => break,
                        other => {
                            lx.pos -= 1;
                            return Err(
                                lx.err("instantiate", format!("unexpected {}", show(&other)))
                            );
                        }
                    }
                }
                match (lx.next(), lx.next()) {
                    (Some(Tok::Word(a)), Some(Tok::Word(n))) if a == "as" => {
                        out.instances.push((names, n))
                    }
                    _ => return Err(lx.err("instantiate", "expected `as NAME`")),
                }
            }
            "topology" => {
                // `topology TYPE NAME [ ... ]` with nesting: skip it, we need no topology.
                let mut depth = 0i32;
                loop {
                    match lx.next() {
                        Some(Tok::Punct('[')) => depth += 1,
                        Some(Tok::Punct(']')) => {
                            depth -= 1;
                            if depth == 0 {
                                break;
                            }
                        }
                        Some(_) => {}
                        None => return Err(lx.err("topology", "unterminated topology")),
                    }
                }
            }
            kind => {
                let line = lx.line();
                let name = match lx.peek() {
                    Some(Tok::Word(_)) => match lx.next() {
                        Some(Tok::Word(n)) => Some(n),
                        _ => None,
                    },
                    _ => None,
                };
                let mut b = parse_block(&mut lx, dir, kind, depth, 0)?;
                b.name = name;
                b.line = line;
                out.blocks.push(b);
            }
        }
    }
    Ok(())
}

fn parse_block(
    lx: &mut Lexer,
    dir: &Path,
    kind: &str,
    depth: usize,
    nest: usize,
) -> Result<Block, InputError> {
    let line = lx.line();
    lx.expect('{', kind)?;
    let mut b = Block {
        kind: kind.to_string(),
        name: None,
        params: Vec::new(),
        file: lx.file.clone(),
        line,
    };
    loop {
        match lx.peek() {
            Some(Tok::Punct('}')) => {
                lx.next();
                return Ok(b);
            }
            Some(Tok::Punct(',')) => {
                lx.next();
            }
            None => return Err(lx.err(kind, "block not closed with `}`")),
            _ => {
                let mut key = Vec::new();
                loop {
                    match lx.next() {
                        Some(Tok::Word(w)) => key.push(w),
                        Some(Tok::Punct('=')) => break,
                        other => {
                            lx.pos -= 1;
                            return Err(lx.err(
                                &key.join(" "),
                                format!("expected `Name = value`, found {}", show(&other)),
                            ));
                        }
                    }
                }
                let key = key.join(" ");
                let v = parse_value(lx, dir, &key, depth, nest)?;
                if let Some((_, first)) =
                    b.params.iter().find(|(k, _)| k.eq_ignore_ascii_case(&key))
                {
                    return Err(v.err(
                        &key,
                        format!(
                            "given twice in this `{kind}` block (first at line {})",
                            first.line
                        ),
                    ));
                }
                b.params.push((key, v));
            }
        }
    }
}

fn parse_value(
    lx: &mut Lexer,
    dir: &Path,
    key: &str,
    depth: usize,
    nest: usize,
) -> Result<Located, InputError> {
    let line = lx.line();
    if nest >= MAX_NESTING {
        return Err(lx.err(
            key,
            format!("values nested deeper than {MAX_NESTING} levels"),
        ));
    }
    let file = lx.file.clone();
    let at = |value| Located {
        value,
        file: file.clone(),
        line,
    };
    match lx.next() {
        Some(Tok::Punct('[')) => {
            let mut items = Vec::new();
            loop {
                match lx.peek() {
                    Some(Tok::Punct(']')) => {
                        lx.next();
                        return Ok(at(Value::List(items)));
                    }
                    Some(Tok::Punct(',')) => {
                        lx.next();
                    }
                    None => return Err(lx.err(key, "list not closed with `]`")),
                    _ => items.push(parse_value(lx, dir, key, depth, nest + 1)?),
                }
            }
        }
        Some(Tok::Word(w)) if w == "source" => {
            let Some(Tok::Word(f)) = lx.next() else {
                lx.pos -= 1;
                return Err(lx.err(key, "expected a file name after `source`"));
            };
            let mut sub = ParamFile::default();
            parse_top(&dir.join(&f), dir, &mut sub, depth + 1)?;
            match sub.blocks.into_iter().next() {
                Some(b) => Ok(at(Value::Block(b))),
                None => Err(InputError::new(dir.join(&f), "holds no block").in_field(key)),
            }
        }
        Some(Tok::Word(w)) => {
            if lx.peek() == Some(&Tok::Punct('{')) {
                let b = parse_block(lx, dir, &w, depth, nest + 1)?;
                return Ok(at(Value::Block(b)));
            }
            let _ = lx.peek2();
            match w.parse::<f64>() {
                Ok(x) => Ok(at(Value::Num(x))),
                Err(_) => Ok(at(Value::Word(w))),
            }
        }
        other => {
            lx.pos -= 1;
            Err(lx.err(key, format!("expected a value, found {}", show(&other))))
        }
    }
}

impl Block {
    /// The value of `key` (case-insensitive, spaces normalised), if present.
    pub fn get(&self, key: &str) -> Option<&Located> {
        self.params
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(key))
            .map(|(_, v)| v)
    }

    fn missing(&self, key: &str) -> InputError {
        InputError::at_line(
            &self.file,
            self.line,
            key,
            format!("missing in `{}` block", self.kind),
        )
    }

    /// A required number.
    pub fn num(&self, key: &str) -> Result<f64, InputError> {
        let v = self.get(key).ok_or_else(|| self.missing(key))?;
        v.as_num(key)
    }

    /// An optional number with a default.
    pub fn num_or(&self, key: &str, default: f64) -> Result<f64, InputError> {
        match self.get(key) {
            Some(v) => v.as_num(key),
            None => Ok(default),
        }
    }

    /// A required non-negative integer.
    pub fn uint(&self, key: &str) -> Result<u64, InputError> {
        let v = self.get(key).ok_or_else(|| self.missing(key))?;
        v.as_uint(key)
    }

    /// An optional non-negative integer with a default.
    pub fn uint_or(&self, key: &str, default: u64) -> Result<u64, InputError> {
        match self.get(key) {
            Some(v) => v.as_uint(key),
            None => Ok(default),
        }
    }

    /// A required integer that fits in 32 bits (a count DiskSim keeps in an `int`).
    pub fn u32(&self, key: &str) -> Result<u32, InputError> {
        let v = self.get(key).ok_or_else(|| self.missing(key))?;
        v.as_u32(key)
    }

    /// An optional 32-bit integer with a default.
    pub fn u32_or(&self, key: &str, default: u32) -> Result<u32, InputError> {
        match self.get(key) {
            Some(v) => v.as_u32(key),
            None => Ok(default),
        }
    }

    /// A required word.
    pub fn word(&self, key: &str) -> Result<(&str, &Located), InputError> {
        let v = self.get(key).ok_or_else(|| self.missing(key))?;
        match &v.value {
            Value::Word(w) => Ok((w, v)),
            _ => Err(v.err(key, "expected a word")),
        }
    }

    /// A required nested block.
    pub fn block(&self, key: &str) -> Result<&Block, InputError> {
        let v = self.get(key).ok_or_else(|| self.missing(key))?;
        match &v.value {
            Value::Block(b) => Ok(b),
            _ => Err(v.err(key, "expected a block `TYPE { ... }`")),
        }
    }

    /// An optional list.
    pub fn list(&self, key: &str) -> Option<(&[Located], &Located)> {
        match self.get(key) {
            Some(
                v @ Located {
                    value: Value::List(l),
                    ..
                },
            ) => Some((l, v)),
            _ => None,
        }
    }
}

impl Located {
    /// An error at this value.
    pub fn err(&self, field: &str, msg: impl Into<String>) -> InputError {
        InputError::at_line(&self.file, self.line, field, msg)
    }

    /// As a number.
    pub fn as_num(&self, key: &str) -> Result<f64, InputError> {
        match &self.value {
            Value::Num(x) if x.is_finite() => Ok(*x),
            Value::Word(w) => Err(self.err(key, format!("expected a number, found `{w}`"))),
            _ => Err(self.err(key, "expected a number")),
        }
    }

    /// As a non-negative integer.
    pub fn as_uint(&self, key: &str) -> Result<u64, InputError> {
        let x = self.as_num(key)?;
        if x < 0.0 || x.fract() != 0.0 || x > 1e15 {
            return Err(self.err(key, format!("expected a non-negative integer, found {x}")));
        }
        Ok(x as u64)
    }

    /// As a non-negative integer of at most `u32::MAX` (never wrapped).
    pub fn as_u32(&self, key: &str) -> Result<u32, InputError> {
        let x = self.as_uint(key)?;
        u32::try_from(x)
            .map_err(|_| self.err(key, format!("{x} is too large (at most {})", u32::MAX)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lexer_splits_punctuation_and_drops_comments() {
        let t = lex("a b = [1,2] # c = d\n{x}");
        let words: Vec<_> = t.iter().map(|(t, l)| (t.clone(), *l)).collect();
        assert_eq!(words[0], (Tok::Word("a".into()), 1));
        assert_eq!(words[2], (Tok::Punct('='), 1));
        assert_eq!(words.len(), 11);
        assert_eq!(words[10], (Tok::Punct('}'), 2));
    }
}
