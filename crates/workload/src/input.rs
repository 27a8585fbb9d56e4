//! Input files: the one error every reader returns, and the one bounded way to read a file.
//!
//! Every reader of user input (scenario files and drive specs in elevator-sim, fio job files,
//! traces, DiskSim parameter files and validation traces) reports a bad input as an
//! [`InputError`]: the file, where in it ([`Position`]: a line, or for binary traces a byte
//! offset), the field at fault and what is wrong, displayed one way:
//!
//! ```text
//! FILE[:LINE | : byte OFFSET][: field `FIELD`]: MESSAGE
//! ```
//!
//! ```
//! use elevator_workload::input::InputError;
//!
//! let e = InputError::at_line("job.fio", 6, "verify", "not supported");
//! assert_eq!(e.to_string(), "job.fio:6: field `verify`: not supported");
//! let e = InputError::at_byte("sda.blktrace.0", 48, "magic", "not a blktrace record");
//! assert_eq!(e.to_string(), "sda.blktrace.0: byte 48: field `magic`: not a blktrace record");
//! assert_eq!(InputError::new("/dev/zero", "larger than 1 MiB").to_string(), "/dev/zero: larger than 1 MiB");
//! ```
//!
//! Input can be hostile (docs/reliability.md): [`read_bytes`] and [`read_text`] read at most
//! a given number of bytes, and the Display quotes at most 240 characters of a file's name,
//! 80 of a field and 600 of a message, so no error is sized by its input.

use std::fmt;
use std::io::Read;
use std::path::Path;

/// Where in its file an [`InputError`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Position {
    /// A 1-based line of a text file.
    Line(usize),
    /// The byte offset of a binary record.
    Byte(u64),
}

/// Bad input: the file, where in it, the field at fault and what is wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct InputError {
    /// The file as given (or `builtin:NAME` for a built-in, `<input>` for text in memory).
    pub file: String,
    /// Where in the file; `None` when the error is about the whole file.
    pub at: Option<Position>,
    /// The field at fault (a TOML key path such as `layout.zones[3].first_cyl`, a fio option,
    /// a trace column), or empty when the error is about a whole line or file.
    pub field: String,
    /// What is wrong.
    pub message: String,
}

impl InputError {
    /// An error about the whole of `file`.
    pub fn new(file: impl AsRef<Path>, message: impl Into<String>) -> InputError {
        InputError {
            file: file.as_ref().display().to_string(),
            at: None,
            field: String::new(),
            message: message.into(),
        }
    }

    /// An error at 1-based `line` of `file` about `field` (empty: the whole line).
    pub fn at_line(
        file: impl AsRef<Path>,
        line: usize,
        field: &str,
        message: impl Into<String>,
    ) -> InputError {
        InputError::new(file, message)
            .on_line(Some(line))
            .in_field(field)
    }

    /// An error about the binary record at byte offset `byte` of `file`, field `field`
    /// (empty: the whole record).
    pub fn at_byte(
        file: impl AsRef<Path>,
        byte: u64,
        field: &str,
        message: impl Into<String>,
    ) -> InputError {
        InputError {
            at: Some(Position::Byte(byte)),
            ..InputError::new(file, message).in_field(field)
        }
    }

    /// The same error placed on `line` (`None`: no line known, the position is cleared).
    pub fn on_line(self, line: Option<usize>) -> InputError {
        InputError {
            at: line.map(Position::Line),
            ..self
        }
    }

    /// The same error about `field`.
    pub fn in_field(self, field: &str) -> InputError {
        InputError {
            field: field.to_string(),
            ..self
        }
    }

    /// The 1-based line, when the error has one.
    pub fn line(&self) -> Option<usize> {
        match self.at {
            Some(Position::Line(l)) => Some(l),
            _ => None,
        }
    }

    /// The byte offset, when the error is about a binary record.
    pub fn byte(&self) -> Option<u64> {
        match self.at {
            Some(Position::Byte(b)) => Some(b),
            _ => None,
        }
    }
}

impl fmt::Display for InputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", shown_name(&self.file))?;
        match self.at {
            Some(Position::Line(l)) => write!(f, ":{l}")?,
            Some(Position::Byte(b)) => write!(f, ": byte {b}")?,
            None => {}
        }
        if !self.field.is_empty() {
            write!(f, ": field `{}`", escaped(&self.field, 80, false))?;
        }
        write!(f, ": {}", shown_message(&self.message))
    }
}

/// An error's message for display: control characters but line breaks and tabs escaped, at
/// most 600 characters (then `...`): a message quotes input, and input can be huge.
pub fn shown_message(message: &str) -> std::borrow::Cow<'_, str> {
    escaped(message, 600, true)
}

impl std::error::Error for InputError {}

/// The most characters of a file's name an error shows: its first and last 120, `...` between.
/// A name is input too (a 60 KB path given to the Python API made every error 60 KB long).
const MAX_FILE_SHOWN: usize = 240;

/// `file` (or any name) for an error: control characters escaped, its middle cut past
/// `MAX_FILE_SHOWN` characters (the start and the end name a path best).
pub fn shown_name(file: &str) -> std::borrow::Cow<'_, str> {
    let n = file.chars().count();
    if n <= MAX_FILE_SHOWN {
        return escaped(file, usize::MAX, false);
    }
    let half = MAX_FILE_SHOWN / 2;
    let tail_at = file
        .char_indices()
        .nth(n - half)
        .map_or(file.len(), |(i, _)| i);
    format!(
        "{}{}",
        escaped(file, half, false),
        escaped(&file[tail_at..], usize::MAX, false)
    )
    .into()
}

/// At most `n` characters of `s` (then `...`): an error quotes input, and input can be huge.
/// Control characters are escaped (`\u{1b}`, `\0`), line breaks and tabs too unless `lines`:
/// a job file's key of ESC sequences and NULs reached the terminal raw (a field is input).
fn escaped(s: &str, n: usize, lines: bool) -> std::borrow::Cow<'_, str> {
    let raw = |c: char| !c.is_control() || (lines && (c == '\n' || c == '\t'));
    let cut = s.char_indices().nth(n).map(|(i, _)| i);
    if cut.is_none() && s.chars().all(raw) {
        return s.into();
    }
    let mut out = String::new();
    for c in s[..cut.unwrap_or(s.len())].chars() {
        if raw(c) {
            out.push(c);
        } else {
            out.extend(c.escape_debug());
        }
    }
    if cut.is_some() {
        out.push_str("...");
    }
    out.into()
}

/// Create (or truncate) the output file `path` for writing, as `File::create` does, except
/// that a FIFO is opened without waiting for a reader: `File::create` on a FIFO nothing reads
/// waits for ever (`--json FIFO` hung), so a FIFO without a reader is an error at once
/// (ENXIO, with a message saying so) and one with a reader (`--json >(jq .)`) is written,
/// each write waiting for the reader as a pipe's does.
pub fn create_output(path: &Path) -> std::io::Result<std::fs::File> {
    use std::os::fd::AsRawFd;
    use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
    check_output_node(path)?;
    if !std::fs::metadata(path).is_ok_and(|m| m.file_type().is_fifo()) {
        return std::fs::File::create(path);
    }
    let f = std::fs::OpenOptions::new()
        .write(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| {
            if e.raw_os_error() == Some(libc::ENXIO) {
                std::io::Error::new(
                    e.kind(),
                    "a FIFO that nothing reads (writing it would wait for ever): start its \
                     reader first, or give a file",
                )
            } else {
                e
            }
        })?;
    let fd = f.as_raw_fd();
    // SAFETY: `fd` is the open descriptor `f` owns; F_GETFL and F_SETFL read and set its
    // status flags and touch no memory.
    let cleared = unsafe {
        let flags = libc::fcntl(fd, libc::F_GETFL);
        flags >= 0 && libc::fcntl(fd, libc::F_SETFL, flags & !libc::O_NONBLOCK) == 0
    };
    if !cleared {
        return Err(std::io::Error::last_os_error());
    }
    Ok(f)
}

/// Refuse an output path (symlinks followed) that is a device node elevator must neither
/// write nor open: a block device (a disk: `--json /dev/sdb` wrote over its first sectors),
/// or a character device other than `/dev/null`, `/dev/zero`, `/dev/full` (memory devices
/// 1:3, 1:5 and 1:7) or a terminal (majors 4, 5 and 136 to 143): `--json /dev/port` wrote
/// the results into I/O ports, `/dev/mem` into memory, and opening `/dev/watchdog` arms it.
/// Judged by the device's numbers, without opening it. Files, FIFOs, sockets and paths that
/// do not exist pass.
pub fn check_output_node(path: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::{FileTypeExt, MetadataExt};
    let Ok(m) = std::fs::metadata(path) else {
        return Ok(());
    };
    let t = m.file_type();
    let refused = |what: String| {
        Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("{what}: elevator writes results only to files, pipes and terminals"),
        ))
    };
    if t.is_block_device() {
        return refused("a block device".into());
    }
    if t.is_char_device() {
        let dev = m.rdev();
        let major = ((dev >> 8) & 0xfff) | ((dev >> 32) & !0xfff);
        let minor = (dev & 0xff) | ((dev >> 12) & !0xff);
        let discarding = major == 1 && matches!(minor, 3 | 5 | 7);
        let terminal = matches!(major, 4 | 5 | 136..=143);
        if !discarding && !terminal {
            return refused(format!(
                "a character device ({major}:{minor}) that is not /dev/null, /dev/zero, \
                 /dev/full or a terminal"
            ));
        }
    }
    Ok(())
}

/// The temporary files and directories elevator is writing right now (an output written
/// beside its path before the rename, a spooled trace): the process's signal handling
/// ([`abandon_temporaries`]) removes them when a signal ends the process, so Ctrl-C or
/// SIGTERM never leaves a `.NAME.elevator-tmp-PID` behind. Kept in a set under a lock that
/// also covers the creation of each file and its rename, so a signal can never see a file
/// created and not yet listed, nor remove an output already renamed into place.
static TEMPORARIES: std::sync::Mutex<Vec<std::path::PathBuf>> = std::sync::Mutex::new(Vec::new());

fn temporaries() -> std::sync::MutexGuard<'static, Vec<std::path::PathBuf>> {
    // A panic while holding the lock cannot leave the list inconsistent (a push or a remove).
    TEMPORARIES.lock().unwrap_or_else(|e| e.into_inner())
}

/// A temporary file or directory, listed for removal if a signal ends the process (see
/// [`abandon_temporaries`]), and removed when dropped unless [`commit`](Temporary::commit)
/// renamed it into place.
#[derive(Debug)]
pub struct Temporary {
    path: std::path::PathBuf,
    done: bool,
}

impl Temporary {
    /// List `path` and run `create` on it, both under the lock (a signal removes what
    /// `create` made, or sees nothing listed and nothing made).
    pub fn create<T>(
        path: std::path::PathBuf,
        create: impl FnOnce(&Path) -> std::io::Result<T>,
    ) -> std::io::Result<(Temporary, T)> {
        let mut list = temporaries();
        let made = create(&path)?;
        list.push(path.clone());
        Ok((Temporary { path, done: false }, made))
    }

    /// The temporary path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Rename the temporary file over `to` and unlist it, under the lock: once renamed, a
    /// signal cannot remove the complete output.
    pub fn commit(mut self, to: &Path) -> std::io::Result<()> {
        let mut list = temporaries();
        std::fs::rename(&self.path, to)?;
        list.retain(|p| p != &self.path);
        self.done = true;
        Ok(())
    }
}

impl Drop for Temporary {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        let mut list = temporaries();
        list.retain(|p| p != &self.path);
        remove_any(&self.path);
    }
}

fn remove_any(path: &Path) {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.is_dir() => {
            let _ = std::fs::remove_dir_all(path);
        }
        Ok(_) => {
            let _ = std::fs::remove_file(path);
        }
        Err(_) => {}
    }
}

/// Remove every listed temporary file and directory and keep the lock for ever, so no other
/// thread creates or renames one after: for the signal watcher just before the process
/// exits. Returns how many were removed.
pub fn abandon_temporaries() -> usize {
    let list = temporaries();
    for p in list.iter() {
        remove_any(p);
    }
    let n = list.len();
    std::mem::forget(list);
    n
}

/// The path of the temporary file an output `target` is written to before its rename:
/// `.NAME.elevator-tmp-PID` beside it.
pub fn temporary_beside(target: &Path) -> std::path::PathBuf {
    let mut tmp_name = std::ffi::OsString::from(".");
    tmp_name.push(target.file_name().unwrap_or_default());
    tmp_name.push(format!(".elevator-tmp-{}", std::process::id()));
    target.with_file_name(tmp_name)
}

/// Whether `path` names an open descriptor (`/dev/stdout`, `/dev/stderr`, `/dev/fd/N`,
/// `/proc/self/fd/N`, `/proc/PID/fd/N`): such an output is a stream, written in place and
/// appended to (the results follow what the command printed there), never replaced. Its
/// link leads to `pipe:[N]` when the stream is a pipe, which no path resolution finds
/// (`--json /dev/stdout` failed "No such file or directory" after the work).
pub fn is_descriptor_path(path: &Path) -> bool {
    let Some(s) = path.to_str() else {
        return false;
    };
    if matches!(s, "/dev/stdout" | "/dev/stderr" | "/dev/stdin") || s.starts_with("/dev/fd/") {
        return true;
    }
    s.strip_prefix("/proc/")
        .and_then(|r| r.split_once("/fd/"))
        .is_some_and(|(pid, _)| pid == "self" || pid.bytes().all(|b| b.is_ascii_digit()))
}

/// The file an output written to `path` replaces: `path`, or for a symlink (a chain of them)
/// the path it leads to, resolved by the links' text so a link to a file not yet made is
/// followed too (`canonicalize` refused it: "No such file or directory" after the work). A
/// loop of links is an error (ELOOP); a descriptor path ([`is_descriptor_path`]) is `None`.
pub fn output_target(path: &Path) -> std::io::Result<Option<std::path::PathBuf>> {
    if is_descriptor_path(path) {
        return Ok(None);
    }
    let mut p = path.to_path_buf();
    // As the kernel's limit on links followed in one lookup (MAXSYMLINKS).
    for _ in 0..40 {
        match std::fs::symlink_metadata(&p) {
            Ok(m) if m.file_type().is_symlink() => {
                let to = std::fs::read_link(&p)?;
                p = match p.parent() {
                    Some(dir) if to.is_relative() => dir.join(to),
                    _ => to,
                };
            }
            _ => return Ok(Some(p)),
        }
    }
    Err(std::io::Error::from_raw_os_error(libc::ELOOP))
}

/// Write `bytes` to the output file `path`. A regular file (or a new one) is written whole
/// or not at all: to a temporary file beside it, synced, then renamed over it (a symlink is
/// followed, so the file it points to is replaced, made if it does not exist), and the
/// temporary file is removed if anything fails or a signal ends the process
/// ([`Temporary`]): a full disk or Ctrl-C no longer leaves an empty or cut output, nor
/// destroys an older one. A descriptor path (`/dev/stdout`) is appended to in place; anything
/// else (a FIFO, through [`create_output`], so one nothing reads is an error and not a hang;
/// `/dev/null`; a terminal) is written in place. A device node other than those is refused
/// ([`check_output_node`]).
pub fn write_output(path: &Path, bytes: impl AsRef<[u8]>) -> std::io::Result<()> {
    use std::io::Write;
    let Some(target) = output_target(path)? else {
        check_output_node(path)?;
        return std::fs::OpenOptions::new()
            .append(true)
            .open(path)?
            .write_all(bytes.as_ref());
    };
    match std::fs::metadata(&target) {
        Ok(m) if !m.is_file() => return create_output(&target)?.write_all(bytes.as_ref()),
        _ => {}
    }
    if target.file_name().is_none() {
        return create_output(path)?.write_all(bytes.as_ref());
    }
    let (tmp, mut f) = Temporary::create(temporary_beside(&target), |p| std::fs::File::create(p))?;
    // On any failure `tmp` is dropped, which removes the temporary file.
    f.write_all(bytes.as_ref())?;
    f.sync_all()?;
    drop(f);
    tmp.commit(&target)
}

/// How long [`open`] waits for a writer to open an input FIFO that has none when it is
/// opened (a writer started just after elevator, `elevator sim f & cat job.fio > f`).
pub const FIFO_WRITER_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

/// An input opened by [`open`]: the file, and for a FIFO the bytes read while finding
/// whether it has a writer (read back first).
#[derive(Debug)]
pub struct Input {
    head: Vec<u8>,
    pos: usize,
    file: std::fs::File,
}

impl Read for Input {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.pos < self.head.len() {
            let n = buf.len().min(self.head.len() - self.pos);
            buf[..n].copy_from_slice(&self.head[self.pos..self.pos + n]);
            self.pos += n;
            return Ok(n);
        }
        self.file.read(buf)
    }
}

/// Open the input file `path` for reading, as `File::open` does, except that it never waits
/// for ever and says what is wrong with a path that is no file to read:
///
/// - a directory is refused ("a directory, not a file": `File::open` opens one, and the
///   first read failed with EISDIR, or a reader that only looks at metadata saw an empty file);
/// - a FIFO is opened without waiting for a writer (`File::open` on a FIFO nothing writes
///   waits for ever, as `cat` does). If it has a writer, or one opens it within
///   [`FIFO_WRITER_WAIT`], it is read as a pipe is; if none does, the open is refused at once
///   ("a FIFO that nothing writes"). A writer that opens it and closes it without writing
///   gives an empty input, as a pipe does.
///
/// Linux semantics relied on (fs/pipe.c, `fifo_open` and `pipe_read`): a FIFO opened for
/// reading with `O_NONBLOCK` returns at once; a writer already blocked in its own open is
/// counted as a writer then; and a non-blocking read of an empty FIFO gives EAGAIN while a
/// writer has it open and 0 (end of file) while none has.
pub fn open(path: &Path) -> std::io::Result<Input> {
    use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
    let meta = std::fs::metadata(path)?;
    if meta.is_dir() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::IsADirectory,
            "a directory, not a file",
        ));
    }
    if !meta.file_type().is_fifo() {
        return Ok(Input {
            head: Vec::new(),
            pos: 0,
            file: std::fs::File::open(path)?,
        });
    }
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)?;
    let head = fifo_head(&file)?;
    set_blocking(&file)?;
    Ok(Input { head, pos: 0, file })
}

/// The first bytes of the FIFO `file` (opened non-blocking), empty if it has a writer that
/// has written nothing yet or had one that wrote nothing; an error if no writer opens it
/// within [`FIFO_WRITER_WAIT`].
fn fifo_head(file: &std::fs::File) -> std::io::Result<Vec<u8>> {
    use std::os::fd::AsRawFd;
    let deadline = std::time::Instant::now() + FIFO_WRITER_WAIT;
    let mut buf = vec![0u8; 64 << 10];
    loop {
        // Non-blocking (see [`open`]): data, EAGAIN (a writer, nothing written yet) or 0
        // (no writer now).
        match (&*file).read(&mut buf) {
            Ok(0) => {}
            Ok(n) => {
                buf.truncate(n);
                return Ok(buf);
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return Ok(Vec::new()),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        if left.is_zero() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::BrokenPipe,
                format!(
                    "a FIFO that nothing writes (waited {} s for a writer; reading it would \
                     wait for ever): start its writer first, or give a file",
                    FIFO_WRITER_WAIT.as_secs()
                ),
            ));
        }
        let mut pfd = libc::pollfd {
            fd: file.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: `pfd` is one valid pollfd for the duration of the call.
        let r = unsafe { libc::poll(&mut pfd, 1, left.as_millis().clamp(1, 1000) as i32) };
        if r > 0 && pfd.revents & libc::POLLHUP != 0 && pfd.revents & libc::POLLIN == 0 {
            // A writer opened it and closed it without writing: an empty input.
            return Ok(Vec::new());
        }
    }
}

/// Clear `O_NONBLOCK` on `file`, so reads wait for a writer's data as a pipe's do.
fn set_blocking(file: &std::fs::File) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    let fd = file.as_raw_fd();
    // SAFETY: `fd` is the open descriptor `file` owns; F_GETFL and F_SETFL read and set its
    // status flags and touch no memory.
    let cleared = unsafe {
        let flags = libc::fcntl(fd, libc::F_GETFL);
        flags >= 0 && libc::fcntl(fd, libc::F_SETFL, flags & !libc::O_NONBLOCK) == 0
    };
    if cleared {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// The bytes of the file at `path`, refused past `max` bytes after reading no more than
/// `max + 1` of them (`/dev/zero` or a sparse 1 GB file is not read to its end). `what` names
/// what the file should have been in that refusal: "larger than 4 MiB: not a `what`".
pub fn read_bytes(path: &Path, max: u64, what: &str) -> Result<Vec<u8>, InputError> {
    let mut bytes = Vec::new();
    open(path)
        .and_then(|f| f.take(max + 1).read_to_end(&mut bytes))
        .map_err(|e| InputError::new(path, format!("cannot read: {e}")))?;
    if bytes.len() as u64 > max {
        return Err(InputError::new(
            path,
            format!("larger than {}: not a {what}", size(max)),
        ));
    }
    Ok(bytes)
}

/// The text of the file at `path`, read as [`read_bytes`] does; a UTF-8 byte-order mark is
/// skipped, and text that is not UTF-8 is refused naming the line and byte offset.
pub fn read_text(path: &Path, max: u64, what: &str) -> Result<String, InputError> {
    let bytes = read_bytes(path, max, what)?;
    let body = bytes.strip_prefix(b"\xef\xbb\xbf").unwrap_or(&bytes);
    match std::str::from_utf8(body) {
        Ok(t) => Ok(t.to_string()),
        Err(e) => {
            let at = e.valid_up_to();
            let line = body[..at].iter().filter(|&&b| b == b'\n').count() + 1;
            Err(InputError::at_line(
                path,
                line,
                "",
                format!("not UTF-8 text (byte offset {at})"),
            ))
        }
    }
}

/// `bytes` as a size limit reads: whole MiB, else whole KiB, else bytes.
fn size(bytes: u64) -> String {
    match bytes {
        b if b >= 1 << 20 && b % (1 << 20) == 0 => format!("{} MiB", b >> 20),
        b if b >= 1 << 10 && b % (1 << 10) == 0 => format!("{} KiB", b >> 10),
        b => format!("{b} bytes"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Round 12: a fio job file's key of NULs and an ESC sequence (`\0\0\x1b[31m=1`) was
    /// printed raw in the error's field, reaching the terminal. Control characters of the
    /// file, the field and the message are escaped (the message keeps its line breaks).
    #[test]
    fn control_characters_in_an_error_are_escaped_not_sent_to_the_terminal() {
        let e = InputError::at_line("j\u{7}.fio", 2, "\0\u{1b}[31m", "bad\nvalue \u{1b}");
        let shown = e.to_string();
        assert_eq!(
            shown,
            "j\\u{7}.fio:2: field `\\0\\u{1b}[31m`: bad\nvalue \\u{1b}"
        );
        assert!(
            !shown.chars().any(|c| c.is_control() && c != '\n'),
            "{shown:?}"
        );
    }

    /// Round 15: a 60 KB file name (a path the Python API was given) was shown whole, so
    /// the error was 60 KB long. Its first and last 120 characters are shown.
    #[test]
    fn a_60_kb_file_name_is_cut_in_its_middle() {
        let name = format!("/tmp/{}/end.fio", "x".repeat(60_000));
        let shown = InputError::at_line(&name, 3, "bs", "bad").to_string();
        assert!(shown.len() < 400, "{} bytes", shown.len());
        assert!(
            shown.starts_with("/tmp/xxx") && shown.contains("..."),
            "{shown}"
        );
        assert!(shown.ends_with("x/end.fio:3: field `bs`: bad"), "{shown}");
    }

    /// A temporary is listed while it exists (so a signal's watcher would remove it), removed
    /// and unlisted when dropped, and unlisted, not removed, once committed into place.
    #[test]
    fn a_temporary_is_listed_until_dropped_or_committed() {
        let dir = tempfile::tempdir().unwrap();
        let listed = |p: &Path| temporaries().iter().any(|q| q == p);
        let tmp = temporary_beside(&dir.path().join("out.json"));
        let (t, f) = Temporary::create(tmp.clone(), |p| std::fs::File::create(p)).unwrap();
        drop(f);
        assert!(listed(&tmp) && tmp.exists());
        drop(t);
        assert!(!listed(&tmp) && !tmp.exists());
        let (t, _) = Temporary::create(tmp.clone(), |p| std::fs::File::create(p)).unwrap();
        let out = dir.path().join("out.json");
        t.commit(&out).unwrap();
        assert!(!listed(&tmp) && !tmp.exists() && out.exists());
        // A directory too (a spooled trace's).
        let d = dir.path().join("spool");
        let (t, ()) = Temporary::create(d.clone(), |p| std::fs::create_dir(p)).unwrap();
        std::fs::write(d.join("copy"), b"x").unwrap();
        drop(t);
        assert!(!d.exists());
    }

    #[test]
    fn display_names_file_position_field_and_message() {
        let cases = [
            (InputError::new("f", "m"), "f: m"),
            (InputError::new("f", "m").in_field("x"), "f: field `x`: m"),
            (InputError::at_line("f", 3, "", "m"), "f:3: m"),
            (
                InputError::at_line("f", 3, "a.b", "m"),
                "f:3: field `a.b`: m",
            ),
            (InputError::at_byte("f", 0, "", "m"), "f: byte 0: m"),
            (
                InputError::at_byte("f", 9, "x", "m"),
                "f: byte 9: field `x`: m",
            ),
        ];
        for (e, shown) in cases {
            assert_eq!(e.to_string(), shown);
        }
        let e = InputError::at_line("f", 3, "", "m");
        assert_eq!((e.line(), e.byte()), (Some(3), None));
        assert_eq!(e.on_line(None).at, None);
    }

    #[test]
    fn display_caps_what_it_quotes() {
        let e = InputError::at_line("f", 1, &"k".repeat(1000), "m".repeat(100_000));
        let shown = e.to_string();
        assert!(shown.len() < 1024, "{}", shown.len());
        assert!(shown.contains("k..."), "{shown}");
        assert!(shown.ends_with("m..."), "{shown}");
    }

    #[test]
    fn sizes_read_in_their_largest_whole_unit() {
        assert_eq!(size(4 << 20), "4 MiB");
        assert_eq!(size(1 << 20), "1 MiB");
        assert_eq!(size(1536), "1536 bytes");
        assert_eq!(size(3 << 10), "3 KiB");
        assert_eq!(size(100), "100 bytes");
    }

    #[test]
    fn reads_are_bounded_and_text_must_be_utf8() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t");
        std::fs::write(&p, b"\xef\xbb\xbfa\nb\n").unwrap();
        assert_eq!(read_text(&p, 64, "t").unwrap(), "a\nb\n");
        let e = read_bytes(&p, 4, "spec file").unwrap_err();
        assert!(
            e.to_string()
                .ends_with("larger than 4 bytes: not a spec file"),
            "{e}"
        );
        std::fs::write(&p, b"a\n\xff").unwrap();
        let e = read_text(&p, 64, "t").unwrap_err();
        assert_eq!(e.line(), Some(2));
        assert!(e.message.contains("byte offset 2"), "{e}");
        let e = read_bytes(&dir.path().join("absent"), 4, "t").unwrap_err();
        assert!(e.message.starts_with("cannot read:"), "{e}");
    }
}
