//! The options every command that runs schedulers shares, declared once: the schedulers and
//! their tunables ([`SchedOpts`]) and the outputs ([`OutputOpts`]: `--json`, `--report`,
//! `--blktrace-out`, `--request-log`).
//!
//! Outputs are checked before any work runs ([`OutputOpts::check`]): each must be writable
//! (a directory where a directory is written, a file's directory writable), none may be a
//! file the command reads (a trace, a job file, the target: writing it would truncate the input
//! before it is read), and an output a command does not write is refused by name instead of
//! being ignored. After the work, a failed output does not lose the others: [`Outcomes`]
//! collects the failures, every output is still attempted and the results are still printed,
//! then the command fails naming each.

use std::collections::HashSet;
use std::fs;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};

/// The schedulers a command runs and their tunables.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct SchedOpts {
    /// Schedulers to compare, comma-separated (see `elevator list`; default: none for a
    /// fio job file, as `run` of the same file, deadline for a scenario and `replay`).
    #[arg(long, value_delimiter = ',', value_name = "NAME[,NAME...]")]
    pub sched: Vec<String>,
    /// Set a tunable: `NAME=VALUE` (sysfs name and unit) for every listed scheduler that has
    /// it, or `SCHED.NAME=VALUE` (e.g. `kyber.read_lat_nsec=250000`) for one; repeatable.
    #[arg(long = "set", value_name = "NAME=VALUE")]
    pub set: Vec<String>,
}

impl SchedOpts {
    /// The schedulers given, or `default` alone when none was. A scheduler named twice (by
    /// its name or an alias: `noop,none`) is refused: it ran twice, tabled twice under one
    /// name, and `--sched` of 10,000 names ran for minutes; each scheduler once bounds the
    /// list by the registry's.
    pub fn names(&self, default: &str) -> anyhow::Result<Vec<String>> {
        if self.sched.is_empty() {
            return Ok(vec![default.to_string()]);
        }
        let mut seen = std::collections::HashMap::new();
        for name in &self.sched {
            let canonical = elevator_core::registry::find(name).map_or(name.as_str(), |i| i.name);
            if let Some(first) = seen.insert(canonical, name) {
                bail!(
                    "--sched: {:?} and {:?} name one scheduler ({canonical}): give each once",
                    elevator_workload::fio_file::excerpt(first),
                    elevator_workload::fio_file::excerpt(name)
                );
            }
        }
        Ok(self.sched.clone())
    }
}

/// The outputs a command can write besides its tables.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct OutputOpts {
    /// Write the results as JSON to FILE (`-`: standard output, the tables go to stderr).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Write an HTML page of the tables and plots (seek map, queue depth, throughput, latency
    /// CDFs) to DIR/index.html, the plots beside it as SVG.
    #[arg(long, value_name = "DIR")]
    pub report: Option<PathBuf>,
    /// Write each scheduler's requests as a blktrace `DIR/<scheduler>.blktrace.0` (Q, I, D, C;
    /// read it with `blkparse -i DIR/<scheduler>`, btt or iowatcher).
    #[arg(long, value_name = "DIR")]
    pub blktrace_out: Option<PathBuf>,
    /// Real I/O only: write every request's way through the executor (inserted, dispatched,
    /// completed) as CSV to `PREFIX.<scheduler>.csv`.
    #[arg(long, value_name = "PREFIX")]
    pub request_log: Option<PathBuf>,
}

/// Which of [`OutputOpts`] a command writes (the others are refused by name).
#[derive(Clone, Copy, Debug, Default)]
pub struct Supported {
    /// `--json`.
    pub json: bool,
    /// `--report`.
    pub report: bool,
    /// `--blktrace-out`.
    pub blktrace_out: bool,
    /// `--request-log`.
    pub request_log: bool,
}

impl Supported {
    /// Every output.
    pub const ALL: Supported = Supported {
        json: true,
        report: true,
        blktrace_out: true,
        request_log: true,
    };
}

/// One file a command reads: what it is (for the message) and where.
#[derive(Clone, Debug)]
pub struct Input {
    /// What it is: "the trace", "the job file", "the target" ...
    pub what: &'static str,
    /// Its path.
    pub path: PathBuf,
}

impl Input {
    /// `path`, read as `what`.
    pub fn new(what: &'static str, path: impl Into<PathBuf>) -> Input {
        Input {
            what,
            path: path.into(),
        }
    }
}

/// A new directory of our own under the temporary directory ($TMPDIR), named
/// `PREFIX-PID-NONCE`, mode 0700, listed as a temporary (`elevator_workload::input::Temporary`:
/// removed when dropped, and by the signal watcher if a signal ends the process).
pub fn private_dir(prefix: &str) -> std::io::Result<elevator_workload::input::Temporary> {
    use std::os::unix::fs::DirBuilderExt;
    let base = std::env::temp_dir();
    let mut last = None;
    for n in 0..64u32 {
        let nonce = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos())
            ^ n.wrapping_mul(0x9e37_79b9);
        let path = base.join(format!("{prefix}-{}-{nonce:08x}", std::process::id()));
        match elevator_workload::input::Temporary::create(path, |p| {
            fs::DirBuilder::new().mode(0o700).create(p)
        }) {
            Ok((t, ())) => return Ok(t),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => last = Some(e),
            // Named: the directory is the environment's ($TMPDIR), not a path the user gave.
            Err(e) => {
                return Err(std::io::Error::new(
                    e.kind(),
                    format!("in {} ($TMPDIR, else /tmp): {e}", base.display()),
                ))
            }
        }
    }
    Err(last.unwrap_or_else(|| std::io::Error::other("no free name")))
}

/// The copies of inputs read from a FIFO or pipe, and the names the user gave them: errors
/// name what the user gave (`main` calls [`unmask`]).
static MASKS: std::sync::Mutex<Vec<(String, String)>> = std::sync::Mutex::new(Vec::new());

/// `text` with the path of every input copy ([`read_once`]) replaced by the name given.
pub fn unmask(text: &str) -> String {
    let masks = MASKS.lock().unwrap_or_else(|e| e.into_inner());
    masks
        .iter()
        .fold(text.to_string(), |t, (copy, given)| t.replace(copy, given))
}

/// An input file, readable as often as the command needs: the path itself, or for a FIFO,
/// pipe or socket (`sim <(cat s.toml)`, `/dev/stdin`) a private copy of it (removed when
/// this is dropped, or when a signal ends the process).
#[derive(Debug)]
pub struct ReadOnce {
    /// Where to read it.
    pub path: PathBuf,
    _dir: Option<elevator_workload::input::Temporary>,
}

/// `path` as an input that may be read more than once. A scenario, job file or drive spec
/// was read once to learn what it is and again to load it (and a drive spec again per
/// scheduler): from a FIFO the second open waited for a writer for ever. Such an input is
/// copied once, up to `cap` bytes (refused beyond, naming it as `what`), into a private
/// directory under the name given; a regular file, a device or anything missing is left as
/// it is (its reader reports it).
pub fn read_once(what: &str, path: &Path, cap: u64) -> anyhow::Result<ReadOnce> {
    use std::io::Read;
    let stream = fs::metadata(path)
        .map(|m| m.file_type().is_fifo() || m.file_type().is_socket())
        .unwrap_or(false);
    if !stream {
        return Ok(ReadOnce {
            path: path.to_path_buf(),
            _dir: None,
        });
    }
    let dir = private_dir("elevator-input")
        .with_context(|| format!("{}: a temporary directory to copy it", path.display()))?;
    let name = path.file_name().unwrap_or(std::ffi::OsStr::new("input"));
    let copy = dir.path().join(name);
    let mut bytes = Vec::new();
    elevator_workload::input::open(path)
        .and_then(|f| f.take(cap + 1).read_to_end(&mut bytes))
        .with_context(|| format!("{}: cannot read", path.display()))?;
    anyhow::ensure!(
        bytes.len() as u64 <= cap,
        "{}: larger than {} bytes: not a {what}",
        path.display(),
        cap
    );
    fs::write(&copy, &bytes).with_context(|| format!("{}: copy it", path.display()))?;
    MASKS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push((copy.display().to_string(), path.display().to_string()));
    Ok(ReadOnce {
        path: copy,
        _dir: Some(dir),
    })
}

/// What a regular file's metadata says of its contents: changed in place, grown, cut or
/// replaced (a symlink pointed elsewhere, a file renamed over it), one of these differs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Stamp {
    dev: u64,
    ino: u64,
    len: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
}

impl Stamp {
    fn of(path: &Path) -> Option<Stamp> {
        let m = fs::metadata(path).ok()?;
        m.is_file().then(|| Stamp {
            dev: m.dev(),
            ino: m.ino(),
            len: m.len(),
            mtime: (m.mtime(), m.mtime_nsec()),
            ctime: (m.ctime(), m.ctime_nsec()),
        })
    }
}

/// The regular files a command reads, stamped before it reads them: a command that reads an
/// input more than once (a trace or scenario once per scheduler, a drive spec per run) checks
/// after each pass that none changed, so schedulers compared side by side all ran the same
/// input, and a trace grown, cut or replaced mid-run is an error naming it, never figures of
/// two different inputs. Devices, FIFOs and the target (which the run writes) are not
/// stamped.
#[derive(Debug)]
pub struct Unchanged(Vec<(Input, Stamp)>);

impl Unchanged {
    /// Stamp every regular file among `inputs` except the target.
    pub fn take(inputs: &[Input]) -> Unchanged {
        Unchanged(
            inputs
                .iter()
                .filter(|i| i.what != "the target")
                .filter_map(|i| Some((i.clone(), Stamp::of(&i.path)?)))
                .collect(),
        )
    }

    /// An error naming the first input that changed since [`take`](Unchanged::take).
    pub fn check(&self) -> anyhow::Result<()> {
        for (input, was) in &self.0 {
            let now = Stamp::of(&input.path);
            if now == Some(*was) {
                continue;
            }
            let how = match now {
                None => "removed or no longer a regular file".to_string(),
                Some(n) if (n.dev, n.ino) != (was.dev, was.ino) => {
                    "replaced by another file".to_string()
                }
                Some(n) if n.len != was.len => format!("{} -> {} bytes", was.len, n.len),
                Some(_) => "modified".to_string(),
            };
            bail!(
                "{} ({}) changed while elevator read it ({how}): the results would not be of \
                 one input, so none are written (run on a copy that does not change)",
                input.path.display(),
                input.what
            );
        }
        Ok(())
    }
}

/// The files a TOML input (a scenario) names: every string value, anywhere in it, that is the
/// path of an existing file or device, resolved as the scenario's loader resolves it (against
/// the TOML file's directory, then as given). A scenario's drive spec, host spec, `trace` and
/// `startup` traces are read by the run, so no output may be one of them; a string that is not
/// a path (a job's name) names no file and is skipped. An input that cannot be read or parsed
/// names nothing here: its loader reports the error.
pub fn files_named_in_toml(what: &'static str, path: &Path) -> Vec<Input> {
    fn walk(v: &toml::Value, out: &mut Vec<String>) {
        match v {
            toml::Value::String(s) if !s.is_empty() && s.len() <= 4096 => out.push(s.clone()),
            toml::Value::Array(a) => a.iter().for_each(|x| walk(x, out)),
            toml::Value::Table(t) => t.values().for_each(|x| walk(x, out)),
            _ => {}
        }
    }
    let Ok(m) = fs::metadata(path) else {
        return Vec::new();
    };
    if !m.is_file() {
        return Vec::new();
    }
    let Ok(text) = elevator_workload::input::read_text(path, elevator_sim::MAX_SPEC_BYTES, what)
    else {
        return Vec::new();
    };
    let Ok(value) = text.parse::<toml::Table>() else {
        return Vec::new();
    };
    let mut strings = Vec::new();
    walk(&toml::Value::Table(value), &mut strings);
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let mut found = Vec::new();
    for s in strings {
        for p in [dir.join(&s), PathBuf::from(&s)] {
            if fs::metadata(&p).is_ok_and(|m| !m.is_dir()) {
                found.push(Input::new(what, p));
            }
        }
    }
    found
}

/// Refuse a target (the file or device a command writes) that is also one of `inputs` (the
/// job file, a trace, a drive spec ...), compared by device and inode, whatever the flags:
/// `--allow-overwrite` allows writing over data on the target, not over the command's own
/// input (a job file given as its own target was overwritten by its first write; a trace
/// replayed onto itself read back what the replay had written).
pub fn check_target(target: &Path, inputs: &[Input]) -> anyhow::Result<()> {
    for i in inputs {
        if same_file(target, &i.path) {
            bail!(
                "the target {} is {} this command reads ({}): the target is written, which \
                 would destroy it (--allow-overwrite does not cover an input); choose another \
                 target",
                target.display(),
                i.what,
                i.path.display()
            );
        }
    }
    Ok(())
}

/// A file the command will write, and the flag that asks for it.
struct Written {
    flag: String,
    path: PathBuf,
}

/// The identity of an existing file (device and inode), following symlinks.
fn identity(p: &Path) -> Option<(u64, u64)> {
    // `-` is standard input: the file (or pipe) the shell gave it, so `--json /dev/stdin`
    // with `< trace` is the trace (the JSON was renamed over the user's trace).
    let p = if p.as_os_str() == "-" {
        Path::new("/dev/stdin")
    } else {
        p
    };
    fs::metadata(p).ok().map(|m| (m.dev(), m.ino()))
}

/// What names one output: an existing file by its identity, a file still to be created by
/// its directory's canonical path and its name (so `out.json` and `./out.json`, both new,
/// are the same output).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum OutputKey {
    Existing(u64, u64),
    New(PathBuf),
}

/// Whether `a` and `b` name one file: an existing file by device and inode, one still to be
/// created by its directory's canonical path and its name (a new target given as an output
/// too: the run would create the target, then the output would overwrite it).
pub(crate) fn same_file(a: &Path, b: &Path) -> bool {
    let key = output_key(a);
    key.is_some() && key == output_key(b)
}

fn output_key(p: &Path) -> Option<OutputKey> {
    if let Some((dev, ino)) = identity(p) {
        return Some(OutputKey::Existing(dev, ino));
    }
    let dir = match p.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    Some(OutputKey::New(
        fs::canonicalize(dir).ok()?.join(p.file_name()?),
    ))
}

/// Check that a directory output can be written: it is (or becomes) a directory in which a
/// file can be created.
pub(crate) fn check_dir(flag: &str, dir: &Path) -> anyhow::Result<()> {
    match fs::metadata(dir) {
        Ok(m) if m.is_dir() => {}
        Ok(_) => bail!(
            "{flag} {}: not a directory (it names a directory to write into)",
            dir.display()
        ),
        Err(_) => fs::create_dir_all(dir)
            .with_context(|| format!("{flag} {}: cannot create the directory", dir.display()))?,
    }
    probe_dir(flag, dir)
}

/// Why `dir`, the directory an output is to go into, cannot hold it: one that exists as
/// something else (`--json FILE/x.json`) is told as not a directory, not as missing.
fn no_directory(dir: &Path) -> String {
    match fs::metadata(dir) {
        Ok(_) => format!("{} is not a directory", dir.display()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            format!("the directory {} does not exist", dir.display())
        }
        Err(e) => format!("the directory {}: {e}", dir.display()),
    }
}

/// Create and remove a file in `dir`: the only sure test that it can be written (root passes
/// every permission check, a read-only filesystem does not).
fn probe_dir(flag: &str, dir: &Path) -> anyhow::Result<()> {
    let probe = dir.join(format!(".elevator-probe-{}", std::process::id()));
    fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&probe)
        .with_context(|| format!("{flag} {}: cannot write there", dir.display()))?;
    let _ = fs::remove_file(&probe);
    Ok(())
}

/// Check that a Parquet table can be written to `path`: [`check_file`], and, since the table
/// is written beside the path and renamed over it, an existing path must be a regular file
/// (a rename over a device node, a FIFO or a socket would replace it).
pub fn check_table_file(flag: &str, path: &Path) -> anyhow::Result<()> {
    if let Ok(m) = fs::metadata(path) {
        if !m.is_file() {
            bail!(
                "{flag} {}: not a regular file (a Parquet table is written only to a file)",
                path.display()
            );
        }
    }
    check_file(flag, path)
}

/// Check that a file output can be written, without truncating it: what writing it will do
/// (`elevator_workload::input::write_output`: a temporary file beside the file the path
/// leads to, renamed over it) is tried now, so an output that cannot be written fails before
/// the work, not after it: a dangling symlink, a loop of links, a path ending in `/`, a name
/// too long for its temporary file, a directory that cannot take a new file, a file under
/// /proc or /sys.
pub fn check_file(flag: &str, path: &Path) -> anyhow::Result<()> {
    use elevator_workload::input::{output_target, temporary_beside};
    if path.as_os_str() == "-" {
        return Ok(());
    }
    match fs::metadata(path) {
        Ok(m) if m.is_dir() => bail!("{flag} {}: is a directory", path.display()),
        // A device is judged by its numbers and never opened here (opening a watchdog arms
        // it): a disk or a device other than /dev/null, /dev/zero, /dev/full or a terminal is
        // refused. A FIFO is not opened either: opening and closing it would end its reader's
        // input (the reader sees end of file) before the results are written. Each is opened
        // where it is written (`elevator_workload::input::create_output`: a FIFO without
        // waiting, so one nothing reads is an error then, not a hang).
        Ok(m) if !m.is_file() => {
            elevator_workload::input::check_output_node(path)
                .map_err(|e| anyhow::anyhow!("{flag} {}: {e}", path.display()))?;
            // What passes and is not a FIFO (a terminal, /dev/null) is opened as it will be
            // written, without becoming the controlling terminal or waiting: `/dev/tty`
            // without one fails now, not after the work.
            if !m.file_type().is_fifo() {
                use std::os::unix::fs::OpenOptionsExt;
                fs::OpenOptions::new()
                    .write(true)
                    .custom_flags(libc::O_NOCTTY | libc::O_NONBLOCK)
                    .open(path)
                    .with_context(|| format!("{flag} {}: cannot write it", path.display()))?;
            }
            return Ok(());
        }
        _ => {}
    }
    if path.as_os_str().as_encoded_bytes().ends_with(b"/") {
        bail!(
            "{flag} {}: ends in `/`, which names a directory; give a file's name",
            path.display()
        );
    }
    let target = match output_target(path) {
        // A descriptor (`/dev/stdout`): written in place, appended to.
        Ok(None) => return Ok(()),
        Ok(Some(t)) => t,
        Err(e) => bail!("{flag} {}: {e}", path.display()),
    };
    if fs::metadata(&target).is_ok_and(|m| m.is_file()) {
        fs::OpenOptions::new()
            .write(true)
            .open(&target)
            .with_context(|| format!("{flag} {}: cannot write it", path.display()))?;
    } else {
        let dir = match target.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        if !dir.is_dir() {
            bail!("{flag} {}: {}", path.display(), no_directory(dir));
        }
    }
    let probe = temporary_beside(&target);
    fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&probe)
        .with_context(|| {
            format!(
                "{flag} {}: cannot write there (tried {})",
                path.display(),
                probe.display()
            )
        })?;
    let _ = fs::remove_file(&probe);
    Ok(())
}

impl OutputOpts {
    /// Before any work: refuse the outputs the command does not write (`supported`, naming
    /// `command`), check the others can be written, and refuse any output file that is one of
    /// `inputs` (compared by device and inode, so another spelling of the path is caught).
    /// `scheds` name the per-scheduler files; `extra` are the command's own file outputs
    /// (flag, path), checked the same way.
    pub fn check(
        &self,
        command: &str,
        supported: Supported,
        scheds: &[String],
        inputs: &[Input],
        extra: &[(&str, &Path)],
    ) -> anyhow::Result<()> {
        let refuse = |flag: &str, on: bool, why: &str| -> anyhow::Result<()> {
            if on {
                bail!("{flag}: {command} does not write it ({why})");
            }
            Ok(())
        };
        refuse(
            "--json",
            self.json.is_some() && !supported.json,
            "it has no JSON results",
        )?;
        refuse(
            "--report",
            self.report.is_some() && !supported.report,
            "the HTML report is written by scenario runs, `run` and `replay`",
        )?;
        refuse(
            "--blktrace-out",
            self.blktrace_out.is_some() && !supported.blktrace_out,
            "no request trace is kept here",
        )?;
        refuse(
            "--request-log",
            self.request_log.is_some() && !supported.request_log,
            "the request log is the real executor's: `run`, or `replay --target`",
        )?;
        let mut written: Vec<Written> = Vec::new();
        if let Some(p) = &self.json {
            check_file("--json", p)?;
            if p.as_os_str() != "-" {
                written.push(Written {
                    flag: "--json".into(),
                    path: p.clone(),
                });
            }
        }
        for &(flag, p) in extra {
            check_file(flag, p)?;
            if p.as_os_str() != "-" {
                written.push(Written {
                    flag: flag.into(),
                    path: p.to_path_buf(),
                });
            }
        }
        // A directory output named like a file output (`--json X --blktrace-out X`): the
        // directory was made, then the JSON failed ("Is a directory") after the work. Compared
        // before the directory is made.
        let file_named = |flag: &str, dir: &Path, written: &[Written]| -> anyhow::Result<()> {
            let key = output_key(dir);
            if let Some(w) = written
                .iter()
                .find(|w| key.is_some() && output_key(&w.path) == key)
            {
                bail!(
                    "{flag} {}: is also the file {} writes: choose another directory",
                    dir.display(),
                    w.flag
                );
            }
            Ok(())
        };
        if let Some(dir) = &self.report {
            file_named("--report", dir, &written)?;
        }
        // Each scheduler's files are named by the registry's name (`run`, `replay`) or by the
        // spelling given (`sim`): both are checked (`--request-log p` with the target
        // `p.noop.csv` and `--sched none` passed when only `p.none.csv` was compared).
        let mut spellings: Vec<String> = Vec::new();
        for s in scheds {
            let canonical = elevator_core::registry::find(s).map_or(s.as_str(), |i| i.name);
            for n in [s.as_str(), canonical] {
                if !spellings.iter().any(|x| x == n) {
                    spellings.push(n.to_string());
                }
            }
        }
        let scheds = &spellings;
        if let Some(dir) = &self.blktrace_out {
            file_named("--blktrace-out", dir, &written)?;
            check_dir("--blktrace-out", dir)?;
            for s in scheds {
                written.push(Written {
                    flag: format!("--blktrace-out {}", dir.display()),
                    path: dir.join(format!("{s}.blktrace.0")),
                });
            }
        }
        if let Some(prefix) = &self.request_log {
            let dir = match prefix.parent() {
                Some(d) if !d.as_os_str().is_empty() => d,
                _ => Path::new("."),
            };
            if !dir.is_dir() {
                bail!("--request-log {}: {}", prefix.display(), no_directory(dir));
            }
            probe_dir("--request-log", dir)?;
            for s in scheds {
                written.push(Written {
                    flag: format!("--request-log {}", prefix.display()),
                    path: request_log_path(prefix, s),
                });
            }
        }
        if let Some(dir) = &self.report {
            check_dir("--report", dir)?;
            // The page and its plots: index.html and *.svg in the directory, written after
            // the other outputs (`--json R/index.html --report R` lost the JSON).
            let dir_id = identity(dir);
            let page_file = |p: &Path| {
                let in_dir = p
                    .parent()
                    .map(|d| {
                        if d.as_os_str().is_empty() {
                            Path::new(".")
                        } else {
                            d
                        }
                    })
                    .and_then(identity);
                let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
                in_dir.is_some()
                    && in_dir == dir_id
                    && (name == "index.html" || name.ends_with(".svg"))
            };
            if let Some(w) = written.iter().find(|w| page_file(&w.path)) {
                bail!(
                    "--report {}: would write over {}, which {} writes: choose another file or \
                     directory",
                    dir.display(),
                    w.path.display(),
                    w.flag
                );
            }
            for i in inputs {
                if page_file(&i.path) {
                    bail!(
                        "--report {}: would write over {} ({}), which this command reads",
                        dir.display(),
                        i.path.display(),
                        i.what
                    );
                }
            }
        }
        // Inputs by their output key: an input still to be created by the run (a new
        // target) is named by its path, so an output of that name is refused before the run
        // creates the target and the output then overwrites it.
        let ids: Vec<(Option<OutputKey>, &Input)> =
            inputs.iter().map(|i| (output_key(&i.path), i)).collect();
        let mut seen: HashSet<OutputKey> = HashSet::new();
        for w in &written {
            if let Some(key) = output_key(&w.path) {
                if !seen.insert(key) {
                    bail!(
                        "{}: {} is also another output of this command",
                        w.flag,
                        w.path.display()
                    );
                }
            }
            let Some(id) = output_key(&w.path) else {
                continue;
            };
            if let Some((_, i)) = ids.iter().find(|(d, _)| d.as_ref() == Some(&id)) {
                bail!(
                    "{}: would write {}, which is {} this command reads ({}); writing it would \
                     destroy the input before it is read: choose another output",
                    w.flag,
                    w.path.display(),
                    i.what,
                    i.path.display()
                );
            }
        }
        Ok(())
    }

    /// With `--request-log PREFIX`: write `report`'s requests as CSV to
    /// `PREFIX.<sched>.csv` (nothing without it).
    pub fn write_request_log(
        &self,
        sched: &str,
        report: &elevator_real::RunReport,
    ) -> anyhow::Result<()> {
        let Some(prefix) = &self.request_log else {
            return Ok(());
        };
        let p = request_log_path(prefix, sched);
        elevator_workload::input::write_output(&p, elevator_real::report::request_log_csv(report))
            .with_context(|| format!("--request-log: write {}", p.display()))
    }
}

/// `--request-log PREFIX`'s file for the scheduler `sched`: `PREFIX.<sched>.csv`.
fn request_log_path(prefix: &Path, sched: &str) -> PathBuf {
    PathBuf::from(format!("{}.{sched}.csv", prefix.display()))
}

/// The failures of outputs written after the work, collected so one failed output does not
/// lose the others or the printed results.
#[derive(Debug, Default)]
pub struct Outcomes {
    errors: Vec<anyhow::Error>,
}

impl Outcomes {
    /// Keep `r`'s error, if any, and carry on.
    pub fn keep<T>(&mut self, r: anyhow::Result<T>) -> Option<T> {
        match r {
            Ok(v) => Some(v),
            Err(e) => {
                self.errors.push(e);
                None
            }
        }
    }

    /// Ok if every output was written; else an error naming each failure.
    pub fn finish(self) -> anyhow::Result<()> {
        match self.errors.len() {
            0 => Ok(()),
            1 => Err(self.errors.into_iter().next().expect("one error")),
            n => {
                let all: Vec<String> = self.errors.iter().map(|e| format!("{e:#}")).collect();
                bail!("{n} outputs failed: {}", all.join("; "))
            }
        }
    }
}

/// Finish a `--blktrace-out` trace (flushed, synced, renamed into place); its error names the
/// flag and the file.
pub fn finish_blktrace(
    writer: &std::cell::RefCell<elevator_workload::traces::blktrace_out::BlktraceWriter>,
) -> anyhow::Result<()> {
    let mut w = writer.borrow_mut();
    let path = w.path().to_path_buf();
    w.finish()
        .with_context(|| format!("--blktrace-out: writing {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every way an input can change under a run (grown, cut, rewritten in place at the same
    /// size, replaced by a rename, a symlink pointed elsewhere, removed) is found, naming the
    /// file and what it is; an untouched input passes, and the target is never stamped.
    #[test]
    fn unchanged_finds_an_input_grown_cut_rewritten_replaced_or_removed() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t.trace");
        let other = dir.path().join("other");
        let link = dir.path().join("link.toml");
        let reset = || {
            fs::write(&p, b"0.0 0 0 8 1\n").unwrap();
            fs::write(&other, b"1.0 0 0 8 1\n").unwrap();
            let _ = fs::remove_file(&link);
            std::os::unix::fs::symlink(&p, &link).unwrap();
        };
        type Change = fn(&Path, &Path, &Path);
        let changes: [(&str, Change, &str); 5] = [
            (
                "grown",
                |p, _, _| {
                    let mut f = fs::OpenOptions::new().append(true).open(p).unwrap();
                    std::io::Write::write_all(&mut f, b"1.0 0 8 8 1\n").unwrap();
                },
                "bytes",
            ),
            (
                "cut",
                |p, _, _| {
                    fs::OpenOptions::new()
                        .write(true)
                        .open(p)
                        .unwrap()
                        .set_len(3)
                        .unwrap()
                },
                "bytes",
            ),
            (
                "rewritten",
                |p, _, _| {
                    // The same size, later: the modification time differs.
                    std::thread::sleep(std::time::Duration::from_millis(20));
                    fs::write(p, b"9.9 0 0 8 1\n").unwrap();
                },
                "modified",
            ),
            ("replaced", |p, o, _| fs::rename(o, p).unwrap(), "replaced"),
            ("removed", |p, _, _| fs::remove_file(p).unwrap(), "removed"),
        ];
        for (what, change, says) in changes {
            reset();
            let inputs = [
                Input::new("a trace", &p),
                Input::new("the drive spec", &link),
                Input::new("the target", &other),
            ];
            let u = Unchanged::take(&inputs);
            assert_eq!(u.0.len(), 2, "the target is not stamped");
            u.check().unwrap();
            change(&p, &other, &link);
            let e = u.check().unwrap_err().to_string();
            assert!(
                e.contains("t.trace") || e.contains("link.toml"),
                "{what}: {e}"
            );
            assert!(e.contains("changed while elevator read it"), "{what}: {e}");
            assert!(e.contains(says), "{what}: {e}");
        }
        // A symlink swapped to another file: its target is stamped, so the swap is found.
        reset();
        let u = Unchanged::take(&[Input::new("the drive spec", &link)]);
        let swap = dir.path().join("link.new");
        std::os::unix::fs::symlink(&other, &swap).unwrap();
        fs::rename(&swap, &link).unwrap();
        let e = u.check().unwrap_err().to_string();
        assert!(e.contains("link.toml") && e.contains("replaced"), "{e}");
    }

    #[test]
    fn an_output_that_is_an_input_is_refused_before_anything_is_written() {
        let dir = tempfile::tempdir().unwrap();
        let trace = dir.path().join("deadline.blktrace.0");
        fs::write(&trace, b"input bytes").unwrap();
        let o = OutputOpts {
            blktrace_out: Some(dir.path().to_path_buf()),
            ..OutputOpts::default()
        };
        let e = o
            .check(
                "replay",
                Supported::ALL,
                &["deadline".into()],
                &[Input::new("the trace", &trace)],
                &[],
            )
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("--blktrace-out") && e.contains("the trace"),
            "{e}"
        );
        assert_eq!(fs::read(&trace).unwrap(), b"input bytes");
        // Another spelling of the same file is caught too.
        let o = OutputOpts {
            json: Some(dir.path().join(".").join("deadline.blktrace.0")),
            ..OutputOpts::default()
        };
        assert!(o
            .check(
                "replay",
                Supported::ALL,
                &[],
                &[Input::new("the trace", &trace)],
                &[]
            )
            .is_err());
    }

    #[test]
    fn unwritable_outputs_and_unsupported_ones_are_refused_up_front() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("f");
        fs::write(&file, b"x").unwrap();
        let report_on_file = OutputOpts {
            report: Some(file.clone()),
            ..OutputOpts::default()
        };
        let e = report_on_file
            .check("sim", Supported::ALL, &[], &[], &[])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("--report") && e.contains("not a directory"),
            "{e}"
        );
        let json_nowhere = OutputOpts {
            json: Some(dir.path().join("no/such/dir/out.json")),
            ..OutputOpts::default()
        };
        let e = json_nowhere
            .check("sim", Supported::ALL, &[], &[], &[])
            .unwrap_err()
            .to_string();
        assert!(e.contains("--json") && e.contains("does not exist"), "{e}");
        let log = OutputOpts {
            request_log: Some(dir.path().join("log")),
            ..OutputOpts::default()
        };
        let e = log
            .check("sim", Supported::default(), &[], &[], &[])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("--request-log") && e.contains("sim does not write"),
            "{e}"
        );
    }

    /// `--request-log PREFIX` writes a scheduler's requests to `PREFIX.<scheduler>.csv`, the
    /// file `check` reserves for it.
    #[test]
    fn a_request_log_goes_to_its_prefix_and_scheduler() {
        let dir = tempfile::tempdir().unwrap();
        let report = elevator_real::RunReport {
            scheduler: "noop".into(),
            jobs: Vec::new(),
            elapsed: elevator_core::Nanos::ZERO,
            interrupted: false,
            abandoned: 0,
            verified_bytes: 0,
            requests: Vec::new(),
            disk: Default::default(),
        };
        let log = OutputOpts {
            request_log: Some(dir.path().join("p")),
            ..OutputOpts::default()
        };
        log.write_request_log("noop", &report).unwrap();
        let text = fs::read_to_string(dir.path().join("p.noop.csv")).unwrap();
        assert!(text.starts_with("job,op,sector,sectors,"), "{text}");
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1);
    }
}
