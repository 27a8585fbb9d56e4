//! `CompileJob`: `make` building a C source tree of a few hundred files, one `gcc` at a time
//! (Morton's 2003 anticipatory-scheduling benchmark built util-linux this way).
//!
//! ## The model
//! - **Layout** (fixed at build time from the seed): an ext2-like file system of block groups
//!   (`block_group_bytes`, each opening with bitmaps and an inode table of
//!   `inode_table_bytes`). The source tree's directories sit in consecutive groups from
//!   `tree_offset[_frac]`: a directory's block, then its `.c` files one after another, then
//!   room where its object files are allocated. The tree's `include/` (project headers) is
//!   one more directory in the tree. `/usr/include` (system headers, spread over
//!   `include_dirs` directories in consecutive groups) and the toolchain binaries (`cc1`,
//!   `as`, libc: `toolchain_bytes`, one contiguous extent) sit at `include_offset[_frac]`.
//!   Inodes are allocated in creation order, 32 to a 4 KiB inode-table block.
//! - **Sizes** are log-normal (seeded): sources mean `source_mean_bytes`, headers mean
//!   `header_mean_bytes`, clamped to their `_max_bytes`; a few big ones, many small.
//! - **Includes**: each source includes about `sys_includes` system headers and
//!   `project_includes` project headers (uniform in ±50% of those means), drawn without
//!   replacement by Zipf popularity (exponent `include_zipf`): `stdio.h` is in every file,
//!   `linux/hdreg.h` in one.
//! - **One process (context) per source file**, issued in directory order, `parallel` at a time
//!   (`make -j`; default 1). A process: thinks `make_think_us + cpu_startup_us` (fork, exec of
//!   cached binaries), reads the toolchain, its directory block, its inode, its source; for
//!   each include reads directory block, inode and data, then parses it
//!   (`cpu_us_per_header_kib` per KiB of header); compiles (`cpu_us_per_source_kib` per KiB of
//!   source); assembles (`cpu_as_us`); writes its object file into the page cache
//!   (`obj_ratio` × source size, dirty, plus its inode and directory blocks); exits
//!   ([`Action::Exit`]). Every read goes through the LRU [`PageCache`] (`page_cache_mib`):
//!   only pages not cached go to the disk, as synchronous, dependent reads (one outstanding per
//!   process; metadata reads flagged `meta`). File data is read in runs of missing pages of at
//!   most the readahead window, which starts at `readahead_initial_bytes` for each file and
//!   doubles per request up to `readahead_max_bytes`. The cache starts cold (after a reboot).
//! - **Writeback** is context 0 (pdflush): 2.6's periodic writeback. It wakes every
//!   `writeback_interval_ms` (dirty_writeback_centisecs, 5 s) and writes, asynchronously and in
//!   dirtying order, every object dirtied at least `dirty_expire_ms` ago
//!   (dirty_expire_centisecs, 30 s), then the dirty inode and directory blocks (`meta`); when
//!   dirty data exceeds `dirty_background_bytes` (dirty_background_ratio, 10 % of a 256 MiB
//!   laptop) it writes everything dirty at once. Contiguous dirty pages go out as requests of
//!   up to `readahead_max_bytes`. This is the choice that matches a 2003 2.6 kernel.
//! - **Finish**: the job is `Done` when the last `gcc` exits, as `time make` measures it. Dirty
//!   objects not yet written stay dirty, and writeback already issued may complete after
//!   `Done` (a driver should accept and ignore those completions).
//!
//! ## Calibration
//! The defaults give 300 files, about 0.11 s of CPU per file (34.0 s in all) and about 1,500
//! dependent reads (18.2 s at 12 ms a read on a fixed-cost disk), mostly the first reads of
//! `/usr/include` headers (a file pulls in about 40 with nested includes; 900 distinct ones over
//! the build; docs/workloads.md gives what they take alone on the built-in `laptop-4200`
//! drive). Morton's experiment (scenarios/anticipatory.toml) sizes the build after util-linux
//! instead: 350 files, 400 system headers with 16 included per file, and
//! `cpu_us_per_source_kib = 5600`, the one knob fixed so that the build without a writer takes
//! about 48 s with the drive's write cache off, under every scheduler (one request at a time
//! leaves them little to reorder), Morton's 48 s. If the drive model changes, re-fix that knob (never per
//! scheduler); the others that move the total: `sys_headers`, `sys_includes` and
//! `include_offset_frac` (I/O).
//! [`CompileJob::cpu_time`] gives the CPU part.
//!
//! Not modelled: linking (it reads objects that are still cached), `make`'s own `stat()`s,
//! header include guards across nested includes (a header is read once per process anyway).

use std::collections::{BTreeSet, HashMap, VecDeque};

use elevator_core::{Nanos, Op};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use crate::job::{Action, IoSpec, Job};
use crate::page_cache::{PageCache, PAGE_SECTORS};
use crate::spec::{resolve_bytes, BuildEnv, BuildError};

const PAGE: u64 = 4096;
/// ext2 inodes of 128 bytes: 32 per 4 KiB inode-table block.
const INODES_PER_PAGE: u64 = 32;
/// Pages at the start of a block group before its inode table (superblock copy, descriptors,
/// block and inode bitmaps).
const GROUP_HEADER_PAGES: u64 = 4;

/// The compile job's parameters. Every default is documented; see the module documentation
/// for what each one models and which ones the calibration moves.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CompileConfig {
    /// Source files compiled. Default 300.
    pub files: u32,
    /// Directories of the source tree (the files spread evenly over them). Default 20.
    pub dirs: u32,
    /// Mean source size, bytes. Default 14336 (14 KiB).
    pub source_mean_bytes: u64,
    /// Largest source, bytes (sizes are clamped). Default 262144.
    pub source_max_bytes: u64,
    /// Spread of the log-normal source sizes (sigma of the underlying normal). Default 0.9.
    pub source_sigma: f64,
    /// System headers in `/usr/include`. Default 900.
    pub sys_headers: u32,
    /// Directories of `/usr/include` (`sys/`, `bits/`, `linux/` ...). Default 10.
    pub include_dirs: u32,
    /// Project headers in the tree's `include/`. Default 30.
    pub project_headers: u32,
    /// Mean header size, bytes. Default 6144 (6 KiB).
    pub header_mean_bytes: u64,
    /// Largest header, bytes. Default 131072.
    pub header_max_bytes: u64,
    /// Spread of the log-normal header sizes. Default 1.0.
    pub header_sigma: f64,
    /// Mean system headers included per source, nested includes counted (uniform within
    /// ±50 %). Default 40.
    pub sys_includes: u32,
    /// Mean project headers included per source (uniform within ±50 %). Default 4.
    pub project_includes: u32,
    /// Zipf exponent of header popularity. Default 1.0.
    pub include_zipf: f64,
    /// Object file bytes per source byte. Default 1.0.
    pub obj_ratio: f64,
    /// Toolchain binaries and libraries read by the first `gcc` (then cached), bytes.
    /// Default 6 MiB.
    pub toolchain_bytes: u64,
    /// `make` between two `gcc`s (fork, dependency checks), microseconds. Default 2000.
    pub make_think_us: u64,
    /// Start-up CPU of one `gcc` (exec of the driver, cc1 and as), microseconds. Default 15000.
    pub cpu_startup_us: u64,
    /// CPU to preprocess and parse one KiB of header, microseconds. Default 150.
    pub cpu_us_per_header_kib: u64,
    /// CPU to compile one KiB of source, microseconds. Default 4300.
    pub cpu_us_per_source_kib: u64,
    /// CPU of the assembler per file, microseconds. Default 5000.
    pub cpu_as_us: u64,
    /// `gcc` processes at once (`make -j`). Default 1.
    pub parallel: u32,
    /// Page cache size, MiB (a 2003 laptop: 256 MiB of RAM). Default 200.
    pub page_cache_mib: u64,
    /// First readahead window of a file, bytes. Default 16384.
    pub readahead_initial_bytes: u64,
    /// Largest readahead window and largest request, bytes. Default 131072.
    pub readahead_max_bytes: u64,
    /// Block group size, bytes (ext2 with 4 KiB blocks: 128 MiB). Default 134217728.
    pub block_group_bytes: u64,
    /// Inode table per block group, bytes. Default 2 MiB.
    pub inode_table_bytes: u64,
    /// Where the source tree starts, bytes (rounded up to a block group). Exclusive with
    /// `tree_offset_frac`.
    pub tree_offset: Option<u64>,
    /// Where the source tree starts, fraction of the device. Default 0.3 when neither is given.
    pub tree_offset_frac: Option<f64>,
    /// Where `/usr` (toolchain, then `/usr/include`) starts, bytes. Exclusive with
    /// `include_offset_frac`.
    pub include_offset: Option<u64>,
    /// Where `/usr` starts, fraction of the device. Default 0.1 when neither is given.
    pub include_offset_frac: Option<f64>,
    /// pdflush's period, ms (dirty_writeback_centisecs × 10). Default 5000.
    pub writeback_interval_ms: u64,
    /// Age at which dirty data is written, ms (dirty_expire_centisecs × 10). Default 30000.
    pub dirty_expire_ms: u64,
    /// Dirty bytes above which everything dirty is written at once. Default 26843545
    /// (10 % of 256 MiB).
    pub dirty_background_bytes: u64,
    /// Seed of the layout. Default: derived from the run's seed and the job's name.
    pub seed: Option<u64>,
}

impl Default for CompileConfig {
    fn default() -> Self {
        CompileConfig {
            files: 300,
            dirs: 20,
            source_mean_bytes: 14 * 1024,
            source_max_bytes: 256 * 1024,
            source_sigma: 0.9,
            sys_headers: 900,
            include_dirs: 10,
            project_headers: 30,
            header_mean_bytes: 6 * 1024,
            header_max_bytes: 128 * 1024,
            header_sigma: 1.0,
            sys_includes: 40,
            project_includes: 4,
            include_zipf: 1.0,
            obj_ratio: 1.0,
            toolchain_bytes: 6 << 20,
            make_think_us: 2_000,
            cpu_startup_us: 15_000,
            cpu_us_per_header_kib: 150,
            cpu_us_per_source_kib: 4_300,
            cpu_as_us: 5_000,
            parallel: 1,
            page_cache_mib: 200,
            readahead_initial_bytes: 16 * 1024,
            readahead_max_bytes: 128 * 1024,
            block_group_bytes: 128 << 20,
            inode_table_bytes: 2 << 20,
            tree_offset: None,
            tree_offset_frac: None,
            include_offset: None,
            include_offset_frac: None,
            writeback_interval_ms: 5_000,
            dirty_expire_ms: 30_000,
            dirty_background_bytes: (256 << 20) / 10,
            seed: None,
        }
    }
}

/// A file on the device: its metadata blocks and its data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileLoc {
    /// The page (4 KiB block number) of its directory's block.
    pub dir_page: u64,
    /// The page of the inode-table block holding its inode.
    pub inode_page: u64,
    /// First data page.
    pub first_page: u64,
    /// Data pages.
    pub pages: u64,
    /// Bytes (what the CPU model charges for).
    pub bytes: u64,
}

/// One source file and what compiling it needs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SourceFile {
    /// The `.c` file.
    pub src: FileLoc,
    /// Its object file (allocated in the same directory).
    pub obj: FileLoc,
    /// Headers it includes, indexes into [`Tree::headers`], in include order.
    pub includes: Vec<usize>,
}

/// The laid-out tree: sources in build order, headers, toolchain.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tree {
    /// Sources in the order `make` compiles them.
    pub sources: Vec<SourceFile>,
    /// System headers first, then the project's.
    pub headers: Vec<FileLoc>,
    /// The toolchain binaries.
    pub toolchain: FileLoc,
}

impl Tree {
    /// Total pages of sources, headers and toolchain (what a cold build can read at most).
    pub fn read_pages(&self) -> u64 {
        self.sources.iter().map(|s| s.src.pages).sum::<u64>()
            + self.headers.iter().map(|h| h.pages).sum::<u64>()
            + self.toolchain.pages
    }
}

/// Allocates pages within one block group, ext2-style.
struct Group {
    first_page: u64,
    next_inode: u64,
    next_data: u64,
    end: u64,
    inode_table_pages: u64,
}

impl Group {
    fn new(first_page: u64, group_pages: u64, inode_table_pages: u64) -> Group {
        Group {
            first_page,
            next_inode: 0,
            next_data: first_page + GROUP_HEADER_PAGES + inode_table_pages,
            end: first_page + group_pages,
            inode_table_pages,
        }
    }
    fn inode(&mut self) -> Option<u64> {
        let page = self.next_inode / INODES_PER_PAGE;
        if page >= self.inode_table_pages {
            return None;
        }
        self.next_inode += 1;
        Some(self.first_page + GROUP_HEADER_PAGES + page)
    }
    fn data(&mut self, pages: u64) -> Option<u64> {
        let p = self.next_data;
        if p + pages > self.end {
            return None;
        }
        self.next_data += pages;
        Some(p)
    }
    fn file(&mut self, dir_page: u64, bytes: u64) -> Option<FileLoc> {
        let pages = bytes.div_ceil(PAGE).max(1);
        Some(FileLoc {
            dir_page,
            inode_page: self.inode()?,
            first_page: self.data(pages)?,
            pages,
            bytes,
        })
    }
}

/// The most files, headers or directories of any one kind a tree may have (the kernel tree
/// has about 70,000 files): each is held in memory.
pub const MAX_COUNT: u32 = 1_000_000;
/// The most compilers running at once (`make -j`): each has a slot in memory.
pub const MAX_PARALLEL: u32 = 4096;

impl CompileConfig {
    /// Check the configuration and lay the tree out on the device of `env`.
    pub fn layout(&self, env: &BuildEnv) -> Result<Tree, BuildError> {
        let e = |field: &'static str, reason: &str| Err(BuildError::new(env, field, reason));
        for (v, f) in [
            (self.files, "files"),
            (self.dirs, "dirs"),
            (self.sys_headers, "sys_headers"),
            (self.include_dirs, "include_dirs"),
            (self.parallel, "parallel"),
        ] {
            if v == 0 {
                return e(f, "must be at least 1");
            }
        }
        for (v, f, max) in [
            (self.files, "files", MAX_COUNT),
            (self.dirs, "dirs", MAX_COUNT),
            (self.sys_headers, "sys_headers", MAX_COUNT),
            (self.project_headers, "project_headers", MAX_COUNT),
            (self.include_dirs, "include_dirs", MAX_COUNT),
            (self.parallel, "parallel", MAX_PARALLEL),
        ] {
            if v > max {
                return Err(BuildError::new(env, f, format!("{v} is more than {max}")));
            }
        }
        for (v, f) in [
            (self.source_mean_bytes, "source_mean_bytes"),
            (self.header_mean_bytes, "header_mean_bytes"),
            (self.toolchain_bytes, "toolchain_bytes"),
            (self.page_cache_mib, "page_cache_mib"),
            (self.writeback_interval_ms, "writeback_interval_ms"),
        ] {
            if v == 0 {
                return e(f, "must be positive");
            }
        }
        if self.source_max_bytes < self.source_mean_bytes {
            return e("source_max_bytes", "is less than source_mean_bytes");
        }
        if self.header_max_bytes < self.header_mean_bytes {
            return e("header_max_bytes", "is less than header_mean_bytes");
        }
        for (v, f) in [
            (self.source_sigma, "source_sigma"),
            (self.header_sigma, "header_sigma"),
            (self.include_zipf, "include_zipf"),
            (self.obj_ratio, "obj_ratio"),
        ] {
            if !(v.is_finite() && v >= 0.0) {
                return e(f, "must be a finite number >= 0");
            }
        }
        if self.readahead_initial_bytes < PAGE
            || !self.readahead_initial_bytes.is_multiple_of(PAGE)
            || self.readahead_initial_bytes > self.readahead_max_bytes
        {
            return e(
                "readahead_initial_bytes",
                "must be a multiple of 4096, at most readahead_max_bytes",
            );
        }
        if !self.readahead_max_bytes.is_multiple_of(PAGE) || self.readahead_max_bytes > 16 << 20 {
            return e(
                "readahead_max_bytes",
                "must be a multiple of 4096, at most 16 MiB",
            );
        }
        if self.block_group_bytes < 1 << 20 || !self.block_group_bytes.is_multiple_of(PAGE) {
            return e(
                "block_group_bytes",
                "must be a multiple of 4096, at least 1 MiB",
            );
        }
        if self.inode_table_bytes < PAGE
            || !self.inode_table_bytes.is_multiple_of(PAGE)
            || self.inode_table_bytes * 2 > self.block_group_bytes
        {
            return e(
                "inode_table_bytes",
                "must be a multiple of 4096, at most half a block group",
            );
        }
        let tree_at = resolve_bytes(
            env,
            self.tree_offset,
            "tree_offset",
            self.tree_offset_frac
                .or(self.tree_offset.is_none().then_some(0.3)),
            "tree_offset_frac",
        )?
        .unwrap_or(0);
        let usr_at = resolve_bytes(
            env,
            self.include_offset,
            "include_offset",
            self.include_offset_frac
                .or(self.include_offset.is_none().then_some(0.1)),
            "include_offset_frac",
        )?
        .unwrap_or(0);

        let group_pages = self.block_group_bytes / PAGE;
        let it_pages = self.inode_table_bytes / PAGE;
        let cap_pages = env.capacity_sectors / PAGE_SECTORS;
        let group_at = |bytes: u64| (bytes / PAGE).div_ceil(group_pages) * group_pages;
        let tree_page = group_at(tree_at);
        let usr_page = group_at(usr_at);
        let tree_groups = u64::from(self.dirs) + 1;
        // /usr: the toolchain's group, then one group per include directory.
        let usr_groups = u64::from(self.include_dirs) + 1;
        let overlap =
            |a: u64, an: u64, b: u64, bn: u64| a < b + bn * group_pages && b < a + an * group_pages;
        if tree_page + tree_groups * group_pages > cap_pages {
            return e(
                "tree_offset_frac",
                "the source tree does not fit on the device there",
            );
        }
        if usr_page + usr_groups * group_pages > cap_pages {
            return e(
                "include_offset_frac",
                "/usr does not fit on the device there",
            );
        }
        if overlap(tree_page, tree_groups, usr_page, usr_groups) {
            return e(
                "include_offset_frac",
                "/usr overlaps the source tree; move one of them",
            );
        }

        let mut rng = ChaCha8Rng::seed_from_u64(env.job_seed(self.seed));
        let too_big = |field| {
            BuildError::new(env, field, "the files do not fit in their block groups; use larger block_group_bytes or fewer files")
        };

        // /usr: toolchain, then the system headers spread over the include directories.
        let mut g = Group::new(usr_page, group_pages, it_pages);
        let bin_dir = g.data(1).ok_or_else(|| too_big("toolchain_bytes"))?;
        let toolchain = g
            .file(bin_dir, self.toolchain_bytes)
            .ok_or_else(|| too_big("toolchain_bytes"))?;
        let mut headers = Vec::new();
        let n_inc = u64::from(self.include_dirs);
        for d in 0..n_inc {
            let mut g = Group::new(usr_page + (1 + d) * group_pages, group_pages, it_pages);
            let dir_page = g.data(1).ok_or_else(|| too_big("sys_headers"))?;
            let lo = d * u64::from(self.sys_headers) / n_inc;
            let hi = (d + 1) * u64::from(self.sys_headers) / n_inc;
            for _ in lo..hi {
                let bytes = lognormal(
                    &mut rng,
                    self.header_mean_bytes,
                    self.header_sigma,
                    self.header_max_bytes,
                );
                headers.push(
                    g.file(dir_page, bytes)
                        .ok_or_else(|| too_big("sys_headers"))?,
                );
            }
        }
        // The tree: include/ in its first group, then one group per source directory.
        let mut g = Group::new(tree_page, group_pages, it_pages);
        let dir_page = g.data(1).ok_or_else(|| too_big("project_headers"))?;
        for _ in 0..self.project_headers {
            let bytes = lognormal(
                &mut rng,
                self.header_mean_bytes,
                self.header_sigma,
                self.header_max_bytes,
            );
            headers.push(
                g.file(dir_page, bytes)
                    .ok_or_else(|| too_big("project_headers"))?,
            );
        }
        let sys_pick = Zipf::new(self.sys_headers as usize, self.include_zipf, &mut rng);
        let proj_pick = Zipf::new(self.project_headers as usize, self.include_zipf, &mut rng);
        let mut sources = Vec::new();
        let n_dirs = u64::from(self.dirs);
        for d in 0..n_dirs {
            let mut g = Group::new(tree_page + (1 + d) * group_pages, group_pages, it_pages);
            let dir_page = g.data(1).ok_or_else(|| too_big("files"))?;
            let lo = d * u64::from(self.files) / n_dirs;
            let hi = (d + 1) * u64::from(self.files) / n_dirs;
            let mut srcs = Vec::new();
            for _ in lo..hi {
                let bytes = lognormal(
                    &mut rng,
                    self.source_mean_bytes,
                    self.source_sigma,
                    self.source_max_bytes,
                );
                srcs.push(g.file(dir_page, bytes).ok_or_else(|| too_big("files"))?);
            }
            // Objects are created after the sources, in build order.
            for src in srcs {
                let obj_bytes = ((src.bytes as f64 * self.obj_ratio).round() as u64).max(1);
                let obj = g
                    .file(dir_page, obj_bytes)
                    .ok_or_else(|| too_big("obj_ratio"))?;
                let n_sys = around(&mut rng, self.sys_includes);
                let mut includes = sys_pick.sample(&mut rng, n_sys);
                let n_proj = around(&mut rng, self.project_includes);
                includes.extend(
                    proj_pick
                        .sample(&mut rng, n_proj)
                        .into_iter()
                        .map(|h| h + self.sys_headers as usize),
                );
                sources.push(SourceFile { src, obj, includes });
            }
        }
        Ok(Tree {
            sources,
            headers,
            toolchain,
        })
    }
}

/// A log-normal size with the given mean, clamped to `[512, max]`.
fn lognormal(rng: &mut ChaCha8Rng, mean: u64, sigma: f64, max: u64) -> u64 {
    let u1: f64 = rng.gen_range(f64::EPSILON..1.0);
    let u2: f64 = rng.gen_range(0.0..1.0);
    let z = (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos();
    let v = mean as f64 * (sigma * z - sigma * sigma / 2.0).exp();
    (v.round() as u64).clamp(512, max.max(512))
}

/// A count uniform within ±50 % of `mean`.
fn around(rng: &mut ChaCha8Rng, mean: u32) -> usize {
    if mean == 0 {
        return 0;
    }
    let lo = mean / 2;
    rng.gen_range(lo..=mean + mean / 2) as usize
}

/// Zipf popularity over `n` items whose ranks are a seeded shuffle of their indexes.
struct Zipf {
    cdf: Vec<f64>,
    item_of_rank: Vec<usize>,
}

impl Zipf {
    fn new(n: usize, s: f64, rng: &mut ChaCha8Rng) -> Zipf {
        let mut acc = 0.0;
        let cdf = (0..n)
            .map(|r| {
                acc += 1.0 / ((r + 1) as f64).powf(s);
                acc
            })
            .collect();
        let mut item_of_rank: Vec<usize> = (0..n).collect();
        for i in (1..n).rev() {
            let j = rng.gen_range(0..=i);
            item_of_rank.swap(i, j);
        }
        Zipf { cdf, item_of_rank }
    }

    /// `k` distinct items (fewer if there are fewer), most popular first.
    fn sample(&self, rng: &mut ChaCha8Rng, k: usize) -> Vec<usize> {
        let n = self.cdf.len();
        let k = k.min(n);
        let total = self.cdf.last().copied().unwrap_or(0.0);
        let mut ranks = BTreeSet::new();
        let mut tries = 0;
        while ranks.len() < k && tries < 64 * k {
            tries += 1;
            let x = rng.gen_range(0.0..total);
            ranks.insert(self.cdf.partition_point(|&c| c <= x).min(n - 1));
        }
        // Fill up deterministically if the draws kept hitting the popular ones.
        let mut r = 0;
        while ranks.len() < k {
            ranks.insert(r);
            r += 1;
        }
        ranks.into_iter().map(|r| self.item_of_rank[r]).collect()
    }
}

/// One step of a `gcc` process.
#[derive(Clone, Copy, Debug)]
enum Step {
    Think(Nanos),
    Read(FileLoc),
    WriteObj,
    Exit,
}

/// A file being read by a process: metadata pages first, then the data.
#[derive(Clone, Debug)]
struct Reading {
    meta: VecDeque<u64>,
    first_page: u64,
    pages: u64,
    pos: u64,
    window: u64,
}

#[derive(Clone, Debug)]
struct Proc {
    ctx: u32,
    source: usize,
    steps: VecDeque<Step>,
    reading: Option<Reading>,
    waiting: Option<u64>,
    think_until: Option<Nanos>,
}

enum ProcStep {
    Issue(IoSpec),
    Think(Nanos),
    Wait,
    Exit,
}

#[derive(Clone, Copy, Debug)]
enum Pending {
    Read { first_page: u64, pages: u64 },
    Write,
}

#[derive(Clone, Debug)]
struct Dirty {
    at: Nanos,
    first_page: u64,
    pages: u64,
    meta: [u64; 2],
}

/// The compile job. See the module documentation.
#[derive(Clone, Debug)]
pub struct CompileJob {
    name: String,
    cfg: CompileConfig,
    tree: Tree,
    cache: PageCache,
    /// Pages being read, so a second process waits for them instead of reading them again.
    in_flight: BTreeSet<u64>,
    pending: HashMap<u64, Pending>,
    next_tag: u64,
    slots: Vec<Option<Proc>>,
    next_source: usize,
    exited: usize,
    start: Option<Nanos>,
    next_tick: Nanos,
    dirty: VecDeque<Dirty>,
    dirty_bytes: u64,
    flush_now: bool,
    writes: VecDeque<IoSpec>,
    ra_initial: u64,
    ra_max: u64,
    /// Sources and headers the `gcc`s began to read so far, for [`Job::progress`].
    files_read: u64,
}

impl CompileJob {
    /// Build the job for the device and run of `env`.
    pub fn new(cfg: CompileConfig, env: &BuildEnv) -> Result<CompileJob, BuildError> {
        let tree = cfg.layout(env)?;
        Ok(CompileJob {
            name: env.name.clone(),
            cache: PageCache::with_mib(cfg.page_cache_mib),
            in_flight: BTreeSet::new(),
            pending: HashMap::new(),
            next_tag: 0,
            slots: vec![None; cfg.parallel as usize],
            next_source: 0,
            exited: 0,
            start: None,
            next_tick: Nanos::ZERO,
            dirty: VecDeque::new(),
            dirty_bytes: 0,
            flush_now: false,
            writes: VecDeque::new(),
            ra_initial: cfg.readahead_initial_bytes / PAGE,
            ra_max: cfg.readahead_max_bytes / PAGE,
            files_read: 0,
            tree,
            cfg,
        })
    }

    /// The laid-out tree.
    pub fn tree(&self) -> &Tree {
        &self.tree
    }

    /// The page cache (hit and miss counts, size).
    pub fn page_cache(&self) -> &PageCache {
        &self.cache
    }

    /// The CPU (and `make`) time of the whole build: what it would take on an infinitely fast
    /// disk with `parallel = 1`. The I/O share is the rest of a run's time.
    pub fn cpu_time(&self) -> Nanos {
        (0..self.tree.sources.len())
            .flat_map(|i| self.spawn(i).steps)
            .map(|s| match s {
                Step::Think(d) => d,
                _ => Nanos::ZERO,
            })
            .fold(Nanos::ZERO, |a, b| a + b)
    }

    /// The local context of the `gcc` for source `i` (context 0 is writeback).
    pub fn ctx_of_source(i: usize) -> u32 {
        i as u32 + 1
    }

    fn spawn(&self, source: usize) -> Proc {
        let c = &self.cfg;
        let s = &self.tree.sources[source];
        let mut steps = VecDeque::new();
        steps.push_back(Step::Think(Nanos::from_us(
            c.make_think_us + c.cpu_startup_us,
        )));
        steps.push_back(Step::Read(self.tree.toolchain));
        steps.push_back(Step::Read(s.src));
        for &h in &s.includes {
            let hdr = self.tree.headers[h];
            steps.push_back(Step::Read(hdr));
            steps.push_back(Step::Think(Nanos::from_us(
                c.cpu_us_per_header_kib * hdr.bytes / 1024,
            )));
        }
        steps.push_back(Step::Think(Nanos::from_us(
            c.cpu_us_per_source_kib * s.src.bytes / 1024 + c.cpu_as_us,
        )));
        steps.push_back(Step::WriteObj);
        steps.push_back(Step::Exit);
        Proc {
            ctx: CompileJob::ctx_of_source(source),
            source,
            steps,
            reading: None,
            waiting: None,
            think_until: None,
        }
    }

    fn tag(&mut self, p: Pending) -> u64 {
        let t = self.next_tag;
        self.next_tag += 1;
        self.pending.insert(t, p);
        t
    }

    fn read_io(&mut self, ctx: u32, first_page: u64, pages: u64, meta: bool) -> IoSpec {
        for p in first_page..first_page + pages {
            self.in_flight.insert(p);
        }
        IoSpec {
            ctx,
            op: Op::Read,
            sync: true,
            meta,
            idle_hint: false,
            sector: first_page * PAGE_SECTORS,
            sectors: (pages * PAGE_SECTORS) as u32,
            prio: None,
            tag: self.tag(Pending::Read { first_page, pages }),
        }
    }

    /// Run process `p` until it issues, thinks, waits or exits.
    fn advance(&mut self, p: &mut Proc, now: Nanos) -> ProcStep {
        loop {
            if p.waiting.is_some() {
                return ProcStep::Wait;
            }
            if let Some(t) = p.think_until {
                if now < t {
                    return ProcStep::Think(t);
                }
                p.think_until = None;
            }
            if let Some(r) = &mut p.reading {
                if let Some(&page) = r.meta.front() {
                    if self.cache.access(page) {
                        r.meta.pop_front();
                        continue;
                    }
                    if self.in_flight.contains(&page) {
                        return ProcStep::Wait;
                    }
                    let io = self.read_io(p.ctx, page, 1, true);
                    p.waiting = Some(io.tag);
                    return ProcStep::Issue(io);
                }
                while r.pos < r.pages && self.cache.access(r.first_page + r.pos) {
                    r.pos += 1;
                }
                if r.pos == r.pages {
                    p.reading = None;
                    continue;
                }
                let first = r.first_page + r.pos;
                if self.in_flight.contains(&first) {
                    return ProcStep::Wait;
                }
                let mut n = 1;
                while n < r.window
                    && r.pos + n < r.pages
                    && !self.cache.contains(first + n)
                    && !self.in_flight.contains(&(first + n))
                {
                    n += 1;
                }
                r.pos += n;
                r.window = (r.window * 2).min(self.ra_max);
                let io = self.read_io(p.ctx, first, n, false);
                p.waiting = Some(io.tag);
                return ProcStep::Issue(io);
            }
            match p.steps.pop_front().expect("a process ends with Exit") {
                Step::Think(d) => {
                    if d > Nanos::ZERO {
                        p.think_until = Some(now + d);
                    }
                }
                Step::Read(f) => {
                    if f != self.tree.toolchain {
                        self.files_read += 1;
                    }
                    p.reading = Some(Reading {
                        meta: VecDeque::from([f.dir_page, f.inode_page]),
                        first_page: f.first_page,
                        pages: f.pages,
                        pos: 0,
                        window: self.ra_initial,
                    });
                }
                Step::WriteObj => {
                    let s = &self.tree.sources[p.source];
                    let obj = s.obj;
                    for page in [obj.dir_page, obj.inode_page]
                        .into_iter()
                        .chain(obj.first_page..obj.first_page + obj.pages)
                    {
                        self.cache.insert(page);
                    }
                    self.dirty.push_back(Dirty {
                        at: now,
                        first_page: obj.first_page,
                        pages: obj.pages,
                        meta: [obj.inode_page, obj.dir_page],
                    });
                    self.dirty_bytes += obj.pages * PAGE;
                    if self.dirty_bytes > self.cfg.dirty_background_bytes {
                        self.flush_now = true;
                    }
                }
                Step::Exit => return ProcStep::Exit,
            }
        }
    }

    /// Move the next writeback tick past `now`.
    fn roll_tick(&mut self, now: Nanos) {
        let period = Nanos::from_ms(self.cfg.writeback_interval_ms);
        while self.next_tick <= now {
            self.next_tick += period;
        }
    }

    /// Queue writes for what is due: everything if over the background threshold, else what
    /// has expired.
    fn writeback(&mut self, now: Nanos, all: bool) {
        let expire = Nanos::from_ms(self.cfg.dirty_expire_ms);
        let mut meta = BTreeSet::new();
        while let Some(d) = self.dirty.front() {
            if !all && d.at + expire > now {
                break;
            }
            let d = self.dirty.pop_front().expect("front exists");
            self.dirty_bytes -= d.pages * PAGE;
            let mut page = d.first_page;
            let end = d.first_page + d.pages;
            while page < end {
                let n = (end - page).min(self.ra_max);
                let tag = self.tag(Pending::Write);
                self.writes.push_back(write_io(page, n, false, tag));
                page += n;
            }
            meta.extend(d.meta);
        }
        for page in meta {
            let tag = self.tag(Pending::Write);
            self.writes.push_back(write_io(page, 1, true, tag));
        }
    }
}

fn write_io(page: u64, pages: u64, meta: bool, tag: u64) -> IoSpec {
    IoSpec {
        ctx: 0,
        op: Op::Write,
        sync: false,
        meta,
        idle_hint: false,
        sector: page * PAGE_SECTORS,
        sectors: (pages * PAGE_SECTORS) as u32,
        prio: None,
        tag,
    }
}

impl Job for CompileJob {
    fn name(&self) -> &str {
        &self.name
    }

    fn poll(&mut self, now: Nanos) -> Action {
        if self.start.is_none() {
            self.start = Some(now);
            self.next_tick = now + Nanos::from_ms(self.cfg.writeback_interval_ms);
        }
        if self.exited == self.tree.sources.len() {
            return Action::Done;
        }
        if now >= self.next_tick {
            if !self.dirty.is_empty() {
                self.writeback(now, false);
            }
            self.roll_tick(now);
        }
        if self.flush_now {
            self.flush_now = false;
            self.writeback(now, true);
        }
        if let Some(io) = self.writes.pop_front() {
            return Action::Issue(io);
        }
        let mut wake: Option<Nanos> = None;
        for i in 0..self.slots.len() {
            if self.slots[i].is_none() && self.next_source < self.tree.sources.len() {
                self.slots[i] = Some(self.spawn(self.next_source));
                self.next_source += 1;
            }
            let Some(mut p) = self.slots[i].take() else {
                continue;
            };
            match self.advance(&mut p, now) {
                ProcStep::Issue(io) => {
                    self.slots[i] = Some(p);
                    return Action::Issue(io);
                }
                ProcStep::Exit => {
                    self.exited += 1;
                    return Action::Exit { ctx: p.ctx };
                }
                ProcStep::Think(t) => {
                    wake = Some(wake.map_or(t, |w| w.min(t)));
                    self.slots[i] = Some(p);
                }
                ProcStep::Wait => self.slots[i] = Some(p),
            }
        }
        if !self.dirty.is_empty() {
            self.roll_tick(now);
            wake = Some(wake.map_or(self.next_tick, |w| w.min(self.next_tick)));
        }
        match wake {
            Some(until) => Action::Think { until },
            None => Action::Wait,
        }
    }

    /// Sources and headers the `gcc`s began to read, of all the build's (each source and
    /// each header it includes; the toolchain, read once then cached, not counted): each
    /// read costs about the same I/Os (its directory and inode, then its few pages).
    fn progress(&self) -> Option<(u64, u64)> {
        let total = self
            .tree
            .sources
            .iter()
            .map(|s| 1 + s.includes.len() as u64)
            .sum();
        Some((self.files_read, total))
    }

    /// The page cache's operations (`PageCache::operations`): a build through a small cache
    /// computes per page far more than per I/O.
    fn model_steps(&self) -> u64 {
        self.cache.operations()
    }

    fn complete(&mut self, tag: u64, _now: Nanos) {
        match self.pending.remove(&tag) {
            Some(Pending::Read { first_page, pages }) => {
                for p in first_page..first_page + pages {
                    self.in_flight.remove(&p);
                    self.cache.insert(p);
                }
                for p in self.slots.iter_mut().flatten() {
                    if p.waiting == Some(tag) {
                        p.waiting = None;
                    }
                }
            }
            Some(Pending::Write) | None => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::{HandDriver, Record};

    /// A 20 GB disk.
    fn env(seed: u64) -> BuildEnv {
        BuildEnv::new(40_000_000, seed, "make")
    }

    fn small() -> CompileConfig {
        CompileConfig {
            files: 40,
            dirs: 4,
            sys_headers: 40,
            project_headers: 8,
            ..Default::default()
        }
    }

    fn run(cfg: CompileConfig, seed: u64) -> (CompileJob, Record) {
        let mut job = CompileJob::new(cfg, &env(seed)).unwrap();
        let rec = HandDriver::new(1, Nanos::from_ms(10), Nanos::from_secs(100_000)).run(&mut job);
        (job, rec)
    }

    fn pages_read(rec: &Record) -> Vec<u64> {
        rec.issued
            .iter()
            .filter(|i| i.spec.op == Op::Read)
            .flat_map(|i| {
                let first = i.spec.sector / PAGE_SECTORS;
                first..first + u64::from(i.spec.sectors) / PAGE_SECTORS
            })
            .collect()
    }

    #[test]
    fn every_gcc_is_its_own_context_and_exits_once_then_the_job_is_done() {
        let (job, rec) = run(small(), 1);
        let n = job.tree().sources.len();
        assert_eq!(n, 40);
        let ctxs: Vec<u32> = rec.exits.iter().map(|e| e.0).collect();
        assert_eq!(ctxs, (1..=40).collect::<Vec<u32>>());
        assert_eq!(rec.done_at, Some(rec.exits.last().unwrap().1));
        assert_eq!(rec.issue_after_exit, None);
        assert!(!rec.stuck);
        // Each process issued its reads while alive, from its own context.
        for i in &rec.issued {
            if i.spec.op == Op::Read {
                let exit = rec.exits.iter().find(|e| e.0 == i.spec.ctx).unwrap().1;
                assert!(i.at <= exit);
            }
        }
    }

    #[test]
    fn reads_are_synchronous_and_dependent_within_a_process() {
        let (_, rec) = run(
            CompileConfig {
                parallel: 3,
                ..small()
            },
            2,
        );
        assert!(rec.max_sync_outstanding_per_ctx.values().all(|&m| m == 1));
        assert!(rec
            .issued
            .iter()
            .filter(|i| i.spec.op == Op::Read)
            .all(|i| i.spec.sync && i.spec.ctx != 0 && i.spec.sectors <= 256));
        // With make -j3, three processes do read at once.
        assert!(rec.max_outstanding >= 2);
    }

    #[test]
    fn no_page_is_read_from_disk_twice_while_the_cache_holds_it() {
        let (job, rec) = run(
            CompileConfig {
                parallel: 2,
                ..small()
            },
            3,
        );
        let pages = pages_read(&rec);
        let distinct: BTreeSet<u64> = pages.iter().copied().collect();
        assert_eq!(pages.len(), distinct.len());
        // Headers shared by many sources were read once: far fewer pages than the includes.
        let included: u64 = job
            .tree()
            .sources
            .iter()
            .flat_map(|s| s.includes.iter())
            .map(|&h| job.tree().headers[h].pages)
            .sum();
        let header_pages: BTreeSet<u64> = job
            .tree()
            .headers
            .iter()
            .flat_map(|h| h.first_page..h.first_page + h.pages)
            .collect();
        let read_header_pages = pages.iter().filter(|p| header_pages.contains(p)).count() as u64;
        assert!(
            read_header_pages * 3 < included,
            "{read_header_pages} of {included}"
        );
    }

    #[test]
    fn a_cached_header_costs_no_disk_read() {
        let (job, rec) = run(small(), 4);
        let t = job.tree();
        // A header included by sources 0 and 1 is read by gcc 1 (ctx 1) only.
        let h = *t.sources[1]
            .includes
            .iter()
            .find(|h| t.sources[0].includes.contains(h))
            .expect("the popular headers are shared");
        let hdr = t.headers[h];
        let readers: BTreeSet<u32> = rec
            .issued
            .iter()
            .filter(|i| {
                let p = i.spec.sector / PAGE_SECTORS;
                i.spec.op == Op::Read && p >= hdr.first_page && p < hdr.first_page + hdr.pages
            })
            .map(|i| i.spec.ctx)
            .collect();
        assert_eq!(readers, BTreeSet::from([1]));
    }

    #[test]
    fn a_tiny_page_cache_forces_rereads() {
        let (_, rec) = run(
            CompileConfig {
                page_cache_mib: 1,
                toolchain_bytes: 2 << 20,
                ..small()
            },
            5,
        );
        let pages = pages_read(&rec);
        let distinct: BTreeSet<u64> = pages.iter().copied().collect();
        assert!(pages.len() > distinct.len());
    }

    #[test]
    fn objects_are_written_back_asynchronously_after_the_expire_delay() {
        // Two seconds per gcc: an 80 s build, long enough for pdflush to write objects.
        let (job, rec) = run(
            CompileConfig {
                cpu_startup_us: 2_000_000,
                ..small()
            },
            6,
        );
        let writes: Vec<_> = rec
            .issued
            .iter()
            .filter(|i| i.spec.op == Op::Write)
            .collect();
        assert!(!writes.is_empty());
        assert!(writes.iter().all(|w| w.spec.ctx == 0 && !w.spec.sync));
        // No object is written before it has been dirty for 30 s, and only at pdflush ticks.
        let first_exit = rec.exits[0].1;
        for w in &writes {
            assert!(w.at >= first_exit + Nanos::from_secs(30));
            assert_eq!(w.at.as_ns() % Nanos::from_secs(5).as_ns(), 0);
        }
        // Objects are written into the directory's group, after its sources.
        let obj_pages: BTreeSet<u64> = job
            .tree()
            .sources
            .iter()
            .flat_map(|s| s.obj.first_page..s.obj.first_page + s.obj.pages)
            .collect();
        let data_writes = writes.iter().filter(|w| !w.spec.meta);
        for w in data_writes {
            assert!(obj_pages.contains(&(w.spec.sector / PAGE_SECTORS)));
        }
    }

    #[test]
    fn over_the_background_threshold_everything_dirty_is_written_at_once() {
        let (_, rec) = run(
            CompileConfig {
                dirty_background_bytes: 64 * 1024,
                ..small()
            },
            7,
        );
        let first_write = rec
            .issued
            .iter()
            .find(|i| i.spec.op == Op::Write)
            .unwrap()
            .at;
        assert!(
            first_write < Nanos::from_secs(30),
            "written at {first_write}"
        );
    }

    #[test]
    fn layout_keeps_directories_together_and_headers_elsewhere() {
        let job = CompileJob::new(CompileConfig::default(), &env(8)).unwrap();
        let t = job.tree();
        assert_eq!(t.sources.len(), 300);
        let group = 32768; // pages per 128 MiB group
        let src_groups: BTreeSet<u64> =
            t.sources.iter().map(|s| s.src.first_page / group).collect();
        assert_eq!(src_groups.len(), 20);
        for s in &t.sources {
            assert_eq!(s.src.first_page / group, s.obj.first_page / group);
            assert_eq!(s.src.inode_page / group, s.src.first_page / group);
        }
        let tree_start = t.sources[0].src.first_page;
        assert!(t.headers[..900].iter().all(|h| h.first_page < tree_start));
        let mean = t.sources.iter().map(|s| s.src.bytes).sum::<u64>() / 300;
        assert!((10_000..=20_000).contains(&mean), "mean source {mean}");
        let big = t.sources.iter().filter(|s| s.src.bytes > 64 * 1024).count();
        assert!((1..=20).contains(&big), "{big} big sources");
    }

    #[test]
    fn same_seed_same_run_other_seed_other_tree() {
        let (_, a) = run(small(), 9);
        let (_, b) = run(small(), 9);
        assert_eq!(a.issued, b.issued);
        assert_eq!(a.exits, b.exits);
        let (_, c) = run(small(), 10);
        assert_ne!(a.issued, c.issued);
    }

    #[test]
    fn bad_settings_name_their_field() {
        let e = |cfg| CompileJob::new(cfg, &env(0)).unwrap_err().field;
        assert_eq!(
            e(CompileConfig {
                files: 0,
                ..Default::default()
            }),
            "files"
        );
        assert_eq!(
            e(CompileConfig {
                tree_offset_frac: Some(0.99),
                ..Default::default()
            }),
            "tree_offset_frac"
        );
        assert_eq!(
            e(CompileConfig {
                include_offset_frac: Some(0.3),
                ..Default::default()
            }),
            "include_offset_frac"
        );
        assert_eq!(
            e(CompileConfig {
                readahead_initial_bytes: 1000,
                ..Default::default()
            }),
            "readahead_initial_bytes"
        );
        assert_eq!(
            e(CompileConfig {
                source_sigma: f64::NAN,
                ..Default::default()
            }),
            "source_sigma"
        );
    }

    #[test]
    fn default_job_figures_on_a_fixed_cost_disk() {
        // Not a calibration (that needs the laptop drive): the CPU and request counts of the
        // defaults, printed for the record, with a 12 ms per request disk.
        let mut job = CompileJob::new(CompileConfig::default(), &env(11)).unwrap();
        let rec = HandDriver::new(1, Nanos::from_ms(12), Nanos::from_secs(100_000)).run(&mut job);
        let reads = rec.issued.iter().filter(|i| i.spec.op == Op::Read).count();
        let done = rec.done_at.unwrap();
        let cpu = job.cpu_time();
        eprintln!(
            "compile defaults: {reads} reads, {} writes, {:.1} s CPU, {:.1} s at 12 ms per request",
            rec.issued.len() - reads,
            cpu.as_secs_f64(),
            done.as_secs_f64()
        );
        // One request at a time, 12 ms each: the run is the CPU plus the reads, plus whatever
        // writeback a read found in front of it.
        let writes = (rec.issued.len() - reads) as u64;
        let floor = cpu + Nanos::from_ms(12 * reads as u64);
        assert!(done >= floor && done <= floor + Nanos::from_ms(12 * writes));
        assert_eq!(rec.exits.len(), 300);
        assert!(reads > 300);
    }
}
