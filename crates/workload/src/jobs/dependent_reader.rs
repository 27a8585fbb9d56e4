//! `DependentReader`: the `cat` of many files: one synchronous read at a time, each issued only
//! after the previous one completed, with think time between them.
//!
//! One context. The files are extents on the device, given explicitly (`extents`) or laid out
//! by the job: `files` files of `file_size` bytes (or sizes drawn uniformly, seeded, from
//! `file_size ..= file_size_max`) placed one after another from the region's start, `gap` bytes
//! apart. Each file is read front to back in requests of up to `request_max` bytes (the
//! readahead window; 128 KiB by default as in 2.6's `read_ahead_kb`), starting at
//! `request_initial` bytes and doubling per request, as Linux's readahead ramps its window up
//! on a sequential stream. Think `think_us` after each request completes and `file_think_us`
//! more between files (open/close). `loops = 0` repeats the file list until the run ends (a
//! background reader); otherwise the job is done after `loops` passes.

use elevator_core::{Nanos, Op, SECTOR_BYTES};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use crate::job::{Action, IoSpec, Job};
use crate::spec::{resolve_region, BuildEnv, BuildError, REGION_FIELDS};

/// One file given explicitly: where it is and how long, bytes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExtentSpec {
    /// Byte offset on the device (rounded down to a sector).
    pub offset: u64,
    /// Length in bytes (rounded up to a sector).
    pub len: u64,
}

/// A dependent reader's configuration.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DependentReaderConfig {
    /// Start of the region the files are laid out in, bytes. Default 0. Exclusive with
    /// `offset_frac`.
    pub offset: Option<u64>,
    /// Start of the region as a fraction 0..=1 of the device.
    pub offset_frac: Option<f64>,
    /// Length of the region, bytes. Default: to the end of the device. Exclusive with
    /// `size_frac`. The files must fit in it.
    pub size: Option<u64>,
    /// Length of the region as a fraction 0..=1 of the device.
    pub size_frac: Option<f64>,
    /// Number of files laid out in the region, at most 1,000,000. Default 100.
    pub files: u32,
    /// File size in bytes (the smallest if `file_size_max` is given). Default 65536.
    pub file_size: u64,
    /// Largest file size, bytes: sizes are drawn uniformly from `file_size ..= file_size_max`.
    /// Default none (all files `file_size`).
    pub file_size_max: Option<u64>,
    /// Bytes between consecutive files. Default 4096.
    pub gap: u64,
    /// Explicit files, read in this order; when given, the layout fields above are ignored
    /// except that the extents must lie inside the device. Default none.
    pub extents: Option<Vec<ExtentSpec>>,
    /// Largest request, bytes (the readahead window). Default 131072.
    pub request_max: u64,
    /// First request of each file, bytes; doubled per request up to `request_max`.
    /// Default 131072 (no ramp).
    pub request_initial: u64,
    /// Think time after each request completes, microseconds. Default 0.
    pub think_us: u64,
    /// Extra think time between files, microseconds. Default 0.
    pub file_think_us: u64,
    /// Passes over the file list; 0 repeats until the run ends. Default 1.
    pub loops: u32,
    /// Seed for the file sizes. Default: derived from the run's seed and the job's name.
    pub seed: Option<u64>,
}

impl Default for DependentReaderConfig {
    fn default() -> Self {
        DependentReaderConfig {
            offset: None,
            offset_frac: None,
            size: None,
            size_frac: None,
            files: 100,
            file_size: 64 * 1024,
            file_size_max: None,
            gap: 4096,
            extents: None,
            request_max: 128 * 1024,
            request_initial: 128 * 1024,
            think_us: 0,
            file_think_us: 0,
            loops: 1,
            seed: None,
        }
    }
}

/// A file as sectors on the device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Extent {
    /// First sector.
    pub start: u64,
    /// Length in sectors.
    pub len: u64,
}

impl DependentReaderConfig {
    /// Check the configuration and lay the files out on the device of `env`.
    pub fn layout(&self, env: &BuildEnv) -> Result<Vec<Extent>, BuildError> {
        let sector_multiple = |v: u64| v > 0 && v.is_multiple_of(SECTOR_BYTES);
        if !sector_multiple(self.request_max)
            || self.request_max / SECTOR_BYTES > u64::from(u32::MAX)
        {
            return Err(BuildError::new(
                env,
                "request_max",
                "must be a positive multiple of 512",
            ));
        }
        if !sector_multiple(self.request_initial) || self.request_initial > self.request_max {
            return Err(BuildError::new(
                env,
                "request_initial",
                "must be a positive multiple of 512, at most request_max",
            ));
        }
        if let Some(list) = &self.extents {
            if list.is_empty() {
                return Err(BuildError::new(env, "extents", "the list is empty"));
            }
            let mut out = Vec::with_capacity(list.len());
            for (i, e) in list.iter().enumerate() {
                let start = e.offset / SECTOR_BYTES;
                let len = e.len.div_ceil(SECTOR_BYTES);
                if len == 0 || start + len > env.capacity_sectors {
                    return Err(BuildError::new(
                        env,
                        "extents",
                        format!("extent {i} is empty or runs past the device's end"),
                    ));
                }
                out.push(Extent { start, len });
            }
            return Ok(out);
        }
        if self.files == 0 {
            return Err(BuildError::new(env, "files", "must be at least 1"));
        }
        if self.files > MAX_FILES {
            return Err(BuildError::new(
                env,
                "files",
                format!("{} is more than {MAX_FILES} files", self.files),
            ));
        }
        if self.file_size == 0 {
            return Err(BuildError::new(env, "file_size", "must be positive"));
        }
        if self.file_size_max.is_some_and(|m| m < self.file_size) {
            return Err(BuildError::new(
                env,
                "file_size_max",
                "is less than file_size",
            ));
        }
        let region = resolve_region(
            env,
            self.offset,
            self.offset_frac,
            self.size,
            self.size_frac,
            REGION_FIELDS,
        )?;
        let mut rng = ChaCha8Rng::seed_from_u64(env.job_seed(self.seed));
        let gap = self.gap.div_ceil(SECTOR_BYTES);
        let mut at = region.start;
        let mut out = Vec::with_capacity(self.files as usize);
        for _ in 0..self.files {
            let bytes = match self.file_size_max {
                Some(max) => rng.gen_range(self.file_size..=max),
                None => self.file_size,
            };
            let len = bytes.div_ceil(SECTOR_BYTES);
            if at + len > region.end() {
                return Err(BuildError::new(
                    env,
                    "files",
                    format!("{} files do not fit in the region", self.files),
                ));
            }
            out.push(Extent { start: at, len });
            at += len + gap;
        }
        Ok(out)
    }
}

/// The most files a reader lays out (each is held in memory).
pub const MAX_FILES: u32 = 1_000_000;

/// The `cat` of many files. See the module documentation.
#[derive(Clone, Debug)]
pub struct DependentReader {
    name: String,
    files: Vec<Extent>,
    max_sectors: u64,
    initial_sectors: u64,
    think: Nanos,
    file_think: Nanos,
    loops: u32,
    pass: u32,
    file: usize,
    /// Position within the current file, sectors.
    pos: u64,
    /// Size of the next request, sectors.
    window: u64,
    in_flight: Option<u64>,
    next_tag: u64,
    think_until: Option<Nanos>,
    /// Sectors issued over every pass, for [`Job::progress`].
    read: u64,
}

impl DependentReader {
    /// Build the reader for the device and run of `env`.
    pub fn new(cfg: DependentReaderConfig, env: &BuildEnv) -> Result<DependentReader, BuildError> {
        let files = cfg.layout(env)?;
        Ok(DependentReader {
            name: env.name.clone(),
            files,
            max_sectors: cfg.request_max / SECTOR_BYTES,
            initial_sectors: cfg.request_initial / SECTOR_BYTES,
            think: Nanos::from_us(cfg.think_us),
            file_think: Nanos::from_us(cfg.file_think_us),
            loops: cfg.loops,
            pass: 0,
            file: 0,
            pos: 0,
            window: cfg.request_initial / SECTOR_BYTES,
            in_flight: None,
            next_tag: 0,
            think_until: None,
            read: 0,
        })
    }

    /// The files it reads, in order.
    pub fn files(&self) -> &[Extent] {
        &self.files
    }
}

impl Job for DependentReader {
    fn name(&self) -> &str {
        &self.name
    }

    fn poll(&mut self, now: Nanos) -> Action {
        if self.in_flight.is_some() {
            return Action::Wait;
        }
        if let Some(t) = self.think_until {
            if now < t {
                return Action::Think { until: t };
            }
            self.think_until = None;
        }
        if self.loops != 0 && self.pass >= self.loops {
            return Action::Done;
        }
        let f = self.files[self.file];
        let sectors = self.window.min(f.len - self.pos);
        let tag = self.next_tag;
        self.next_tag += 1;
        self.in_flight = Some(tag);
        let io = IoSpec {
            ctx: 0,
            op: Op::Read,
            sync: true,
            meta: false,
            idle_hint: false,
            sector: f.start + self.pos,
            sectors: sectors as u32,
            prio: None,
            tag,
        };
        self.pos += sectors;
        self.read += sectors;
        self.window = (self.window * 2).min(self.max_sectors);
        Action::Issue(io)
    }

    /// Sectors read of every pass's: none when it loops until the run ends (`loops = 0`).
    fn progress(&self) -> Option<(u64, u64)> {
        if self.loops == 0 {
            return None;
        }
        let pass: u64 = self.files.iter().map(|f| f.len).sum();
        Some((self.read, pass.saturating_mul(u64::from(self.loops))))
    }

    fn complete(&mut self, tag: u64, now: Nanos) {
        if self.in_flight != Some(tag) {
            return;
        }
        self.in_flight = None;
        let mut think = self.think;
        if self.pos >= self.files[self.file].len {
            self.pos = 0;
            self.window = self.initial_sectors;
            self.file += 1;
            think += self.file_think;
            if self.file == self.files.len() {
                self.file = 0;
                self.pass += 1;
            }
        }
        if think > Nanos::ZERO {
            self.think_until = Some(now + think);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::HandDriver;

    fn env() -> BuildEnv {
        BuildEnv::new(1 << 21, 5, "cat")
    }

    #[test]
    fn never_has_two_requests_outstanding_and_reads_every_byte_once() {
        let cfg = DependentReaderConfig {
            files: 20,
            file_size: 10_000,
            file_size_max: Some(400_000),
            ..Default::default()
        };
        let mut r = DependentReader::new(cfg, &env()).unwrap();
        let files = r.files().to_vec();
        let rec = HandDriver::new(8, Nanos::from_ms(3), Nanos::from_secs(100)).run(&mut r);
        assert_eq!(rec.max_outstanding, 1);
        assert!(rec.done_at.is_some());
        let want: u64 = files.iter().map(|f| f.len).sum();
        let got: u64 = rec.issued.iter().map(|i| u64::from(i.spec.sectors)).sum();
        assert_eq!(got, want);
        assert!(rec
            .issued
            .iter()
            .all(|i| i.spec.sectors <= 256 && i.spec.sync));
        // Each request starts when the previous one completed.
        for w in rec.issued.windows(2) {
            assert_eq!(Some(w[1].at), w[0].done);
        }
    }

    #[test]
    fn think_time_separates_requests_and_files() {
        let cfg = DependentReaderConfig {
            files: 2,
            file_size: 256 * 1024,
            think_us: 1000,
            file_think_us: 10_000,
            ..Default::default()
        };
        let mut r = DependentReader::new(cfg, &env()).unwrap();
        let rec = HandDriver::new(1, Nanos::from_ms(5), Nanos::from_secs(100)).run(&mut r);
        let at: Vec<u64> = rec.issued.iter().map(|i| i.at.as_ms()).collect();
        // 5 ms service, 1 ms think within a file, 11 ms between files.
        assert_eq!(at, vec![0, 6, 22, 28]);
    }

    #[test]
    fn readahead_window_ramps_up_per_file() {
        let cfg = DependentReaderConfig {
            files: 2,
            file_size: 300 * 1024,
            request_initial: 16 * 1024,
            ..Default::default()
        };
        let mut r = DependentReader::new(cfg, &env()).unwrap();
        let rec = HandDriver::new(1, Nanos::from_ms(1), Nanos::from_secs(100)).run(&mut r);
        let kib: Vec<u32> = rec.issued.iter().map(|i| i.spec.sectors / 2).collect();
        assert_eq!(kib, vec![16, 32, 64, 128, 60, 16, 32, 64, 128, 60]);
    }

    #[test]
    fn loops_zero_runs_until_the_run_ends() {
        let cfg = DependentReaderConfig {
            files: 3,
            loops: 0,
            ..Default::default()
        };
        let mut r = DependentReader::new(cfg, &env()).unwrap();
        let rec = HandDriver::new(1, Nanos::from_ms(1), Nanos::from_secs(1)).run(&mut r);
        assert!(rec.done_at.is_none());
        assert!(rec.issued.len() >= 999);
    }

    #[test]
    fn explicit_extents_are_read_in_order() {
        let cfg = DependentReaderConfig {
            extents: Some(vec![
                ExtentSpec {
                    offset: 1 << 20,
                    len: 4096,
                },
                ExtentSpec {
                    offset: 0,
                    len: 1000,
                },
            ]),
            ..Default::default()
        };
        let mut r = DependentReader::new(cfg, &env()).unwrap();
        let rec = HandDriver::new(1, Nanos::from_ms(1), Nanos::from_secs(1)).run(&mut r);
        let got: Vec<(u64, u32)> = rec
            .issued
            .iter()
            .map(|i| (i.spec.sector, i.spec.sectors))
            .collect();
        assert_eq!(got, vec![(2048, 8), (0, 2)]);
    }

    #[test]
    fn files_that_do_not_fit_are_an_error_naming_the_field() {
        let cfg = DependentReaderConfig {
            size: Some(1 << 20),
            files: 100,
            ..Default::default()
        };
        assert_eq!(
            DependentReader::new(cfg, &env()).unwrap_err().field,
            "files"
        );
    }
}
