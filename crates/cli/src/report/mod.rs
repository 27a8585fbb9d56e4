//! `--report DIR`: a self-contained HTML page of a command's tables and plots.
//!
//! A [`Report`] collects headings, paragraphs, tables and plots (SVG text from
//! [`crate::plot`]) in order; [`Report::write`] writes `DIR/index.html` with every plot beside
//! it as `DIR/<name>.svg`, shown with `<img>`. The page has no script and fetches nothing
//! (its only references are those SVG files and in-page anchors), so it reads the same in any
//! browser, offline, or as a directory attached to a bug report.
//!
//! Commands that run many things in parallel share one through a [`Sink`], which is also the
//! switch: a command without `--report` holds an empty sink, every call on it is a no-op and
//! no plot is computed.

mod html;
pub mod mount;
pub mod real;
pub mod sim;

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use anyhow::Context;

/// One piece of a page, in order.
enum Block {
    Heading(String),
    Para(String),
    Table {
        caption: String,
        header: Vec<String>,
        rows: Vec<Vec<String>>,
    },
    Plot {
        file: String,
        caption: String,
        svg: String,
    },
}

/// A page being put together. See the module documentation.
pub struct Report {
    title: String,
    blocks: Vec<Block>,
}

impl Report {
    /// An empty page titled `title`.
    pub fn new(title: &str) -> Report {
        Report {
            title: title.to_string(),
            blocks: Vec::new(),
        }
    }

    /// A section heading.
    pub fn heading(&mut self, text: &str) {
        self.blocks.push(Block::Heading(text.to_string()));
    }

    /// A paragraph of text.
    pub fn para(&mut self, text: &str) {
        self.blocks.push(Block::Para(text.to_string()));
    }

    /// A table with its caption: `header` names the columns.
    pub fn table(&mut self, caption: &str, header: &[&str], rows: &[Vec<String>]) {
        self.blocks.push(Block::Table {
            caption: caption.to_string(),
            header: header.iter().map(|h| h.to_string()).collect(),
            rows: rows.to_vec(),
        });
    }

    /// A plot: `svg` is written to `<name>.svg` (made unique and file-safe) and shown with
    /// `caption`.
    pub fn plot(&mut self, name: &str, caption: &str, svg: String) {
        let stem = file_stem(name);
        let taken = |f: &str| {
            self.blocks
                .iter()
                .any(|b| matches!(b, Block::Plot { file, .. } if file == f))
        };
        let mut file = format!("{stem}.svg");
        let mut k = 2;
        while taken(&file) {
            file = format!("{stem}-{k}.svg");
            k += 1;
        }
        self.blocks.push(Block::Plot {
            file,
            caption: caption.to_string(),
            svg,
        });
    }

    /// Tables and plots on the page.
    pub fn counts(&self) -> (usize, usize) {
        let tables = self
            .blocks
            .iter()
            .filter(|b| matches!(b, Block::Table { .. }))
            .count();
        let plots = self
            .blocks
            .iter()
            .filter(|b| matches!(b, Block::Plot { .. }))
            .count();
        (tables, plots)
    }

    /// Write `dir/index.html` and the plots beside it (creating `dir`); returns the page's
    /// path.
    pub fn write(&self, dir: &Path) -> anyhow::Result<PathBuf> {
        std::fs::create_dir_all(dir).with_context(|| format!("--report {}", dir.display()))?;
        for b in &self.blocks {
            if let Block::Plot { file, svg, .. } = b {
                let p = dir.join(file);
                elevator_workload::input::write_output(&p, svg)
                    .with_context(|| format!("--report: writing {}", p.display()))?;
            }
        }
        let page = dir.join("index.html");
        elevator_workload::input::write_output(&page, html::page(&self.title, &self.blocks))
            .with_context(|| format!("--report: writing {}", page.display()))?;
        Ok(page)
    }
}

/// `name` as a file name: lower-case letters, digits and `-`, nothing else.
fn file_stem(name: &str) -> String {
    let mut s = String::new();
    for c in name.chars() {
        if c.is_ascii_alphanumeric() {
            s.push(c.to_ascii_lowercase());
        } else if !s.ends_with('-') {
            s.push('-');
        }
    }
    let s = s.trim_matches('-');
    if s.is_empty() {
        "plot".to_string()
    } else {
        s.to_string()
    }
}

/// A report shared by parallel work, or nothing (no `--report`): every method is then a
/// no-op, and [`Sink::plot`] does not compute its plot.
#[derive(Default)]
pub struct Sink(Option<Mutex<Report>>);

impl Sink {
    /// A sink for a page titled `title` if `on`, an inert one otherwise.
    pub fn new(on: bool, title: &str) -> Sink {
        Sink(on.then(|| Mutex::new(Report::new(title))))
    }

    /// Whether a report is being written (worth computing plots for).
    pub fn is_on(&self) -> bool {
        self.0.is_some()
    }

    fn with(&self, f: impl FnOnce(&mut Report)) {
        if let Some(m) = &self.0 {
            f(&mut m.lock().unwrap_or_else(|e| e.into_inner()));
        }
    }

    /// See [`Report::heading`].
    pub fn heading(&self, text: &str) {
        self.with(|r| r.heading(text));
    }

    /// See [`Report::para`].
    pub fn para(&self, text: &str) {
        self.with(|r| r.para(text));
    }

    /// See [`Report::table`].
    pub fn table(&self, caption: &str, header: &[&str], rows: &[Vec<String>]) {
        self.with(|r| r.table(caption, header, rows));
    }

    /// See [`Report::plot`]; `svg` is called only when a report is being written.
    pub fn plot(
        &self,
        name: &str,
        caption: &str,
        svg: impl FnOnce() -> anyhow::Result<String>,
    ) -> anyhow::Result<()> {
        if self.is_on() {
            let svg = svg()?;
            self.with(|r| r.plot(name, caption, svg));
        }
        Ok(())
    }

    /// Write the page to `dir` (if on) and say where it is.
    pub fn write(self, dir: Option<&Path>) -> anyhow::Result<()> {
        if let (Some(m), Some(dir)) = (self.0, dir) {
            let report = m.into_inner().unwrap_or_else(|e| e.into_inner());
            let page = report.write(dir)?;
            let (tables, plots) = report.counts();
            crate::output::say!(
                "report: {} ({tables} tables, {plots} plots)",
                page.display()
            );
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
