//! `InterleavedReaders`: N processes reading one file in interleaved chunks through the page
//! cache, as the S suite's `interleaved_io` benchmark runs them (one fio job per process,
//! `ioengine=sync`, buffered: `rw=read`, `bs` = `zonesize` = the chunk, `zoneskip` = (N - 1)
//! chunks + 1 byte, process i starting at byte i x chunk). Process i's k-th `read(2)` covers
//! the chunk at byte i x chunk + k x (N x chunk + 1): the suite's extra byte shifts every
//! round by one byte, so the reads are not page aligned and neighbouring processes share the
//! page at each boundary (`skip_extra_bytes`, default 1; 0 gives page-aligned chunks). The
//! processes share the file's page cache, and each has its own readahead state, as each fio
//! process opens the file itself.
//!
//! A read is served as Linux's `filemap_read` serves it: pages already cached are copied
//! (no time), a page under I/O makes the process wait for that request, a missing page
//! triggers synchronous readahead, and a page carrying the readahead mark triggers
//! asynchronous readahead (the request is issued, the process goes on). The readahead
//! decisions follow mm/readahead.c (`ondemand_readahead`, v5.x-v6.x): the initial window
//! (`get_init_ra_size`), the ramp-up (`get_next_ra_size`), the expected-index sequential
//! case, the "marked page without valid readahead state, e.g. interleaved reads" case that
//! sizes the window from the pages already cached, sequential cache misses, context
//! readahead from the cached history before the read (`try_context_readahead`), and small
//! random reads read as they are. A readahead reads only the pages not cached yet, one
//! request per contiguous run. Every read is synchronous for the block layer (the kernel's
//! `op_is_sync` holds for all reads); an asynchronous readahead is one no process waits for
//! yet.
//!
//! Not modelled: the CPU time of the copies and of the system calls (zero), and page reclaim
//! (pages behind every process are dropped, never re-read).

use std::collections::{BTreeMap, HashMap, VecDeque};

use elevator_core::{Nanos, Op, SECTOR_BYTES};
use serde::{Deserialize, Serialize};

use crate::job::{Action, IoSpec, Job};
use crate::spec::{resolve_region, BuildEnv, BuildError, REGION_FIELDS};

/// Page size, bytes.
const PAGE: u64 = 4096;
/// Sectors per page.
const PAGE_SECTORS: u64 = PAGE / SECTOR_BYTES;

/// The readers' configuration.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct InterleavedReadersConfig {
    /// Where the file starts, bytes. Default 0. Exclusive with `offset_frac`.
    pub offset: Option<u64>,
    /// Where the file starts, as a fraction 0..=1 of the device.
    pub offset_frac: Option<f64>,
    /// The file's length, bytes. Default: to the end of the device. Exclusive with
    /// `size_frac`.
    pub size: Option<u64>,
    /// The file's length as a fraction 0..=1 of the device.
    pub size_frac: Option<f64>,
    /// Processes, >= 1. Default 3 (the suite's default).
    pub processes: u32,
    /// Chunk each read covers, bytes, a positive multiple of 4096. Default 16384 (the
    /// suite's `ZONE_SIZE`).
    pub chunk: u64,
    /// The device's `read_ahead_kb`, KiB, a multiple of 4 (0 turns readahead off: each
    /// read fetches just its missing pages). Default 128.
    pub read_ahead_kb: u64,
    /// Bytes each process skips beyond the other processes' chunks after each of its own
    /// (the `+ 1` of the suite's `zoneskip`). Default 1; 0 keeps every read page aligned.
    pub skip_extra_bytes: u64,
}

impl Default for InterleavedReadersConfig {
    fn default() -> Self {
        InterleavedReadersConfig {
            offset: None,
            offset_frac: None,
            size: None,
            size_frac: None,
            processes: 3,
            chunk: 16384,
            read_ahead_kb: 128,
            skip_extra_bytes: 1,
        }
    }
}

/// A cached page.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Page {
    /// The request bringing it in, until it completes.
    in_flight: Option<u64>,
    /// `PG_readahead`: reading it triggers asynchronous readahead.
    mark: bool,
}

/// `struct file_ra_state`, in pages.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct RaState {
    start: u64,
    size: u64,
    async_size: u64,
    /// Last page read by the previous `read(2)`; `None` for a fresh file.
    prev_index: Option<u64>,
}

/// One reader process.
#[derive(Clone, Debug)]
struct Reader {
    /// Its zone number: the reads it has finished.
    zone: u64,
    /// Next page of the current read, and the page after its last.
    pos: u64,
    last: u64,
    /// The request it waits for.
    waiting: Option<u64>,
    ra: RaState,
    done: bool,
}

/// N interleaved readers of one file. See the module documentation.
#[derive(Clone, Debug)]
pub struct InterleavedReaders {
    name: String,
    /// First sector of the file, and its length in pages.
    base: u64,
    pages_total: u64,
    chunk_pages: u64,
    /// The chunk and the bytes from one of a process's chunks to its next, bytes.
    chunk: u64,
    stride: u64,
    ra_pages: u64,
    readers: Vec<Reader>,
    cache: BTreeMap<u64, Page>,
    /// Request tag -> its pages.
    requests: HashMap<u64, (u64, u64)>,
    outbox: VecDeque<IoSpec>,
    next_tag: u64,
}

impl InterleavedReaders {
    /// Build the readers for the device and run of `env`.
    pub fn new(
        cfg: InterleavedReadersConfig,
        env: &BuildEnv,
    ) -> Result<InterleavedReaders, BuildError> {
        if cfg.processes == 0 {
            return Err(BuildError::new(env, "processes", "must be at least 1"));
        }
        if cfg.chunk == 0 || !cfg.chunk.is_multiple_of(PAGE) {
            return Err(BuildError::new(
                env,
                "chunk",
                "must be a positive multiple of 4096",
            ));
        }
        if !cfg.read_ahead_kb.is_multiple_of(4) || cfg.read_ahead_kb > 16384 {
            return Err(BuildError::new(
                env,
                "read_ahead_kb",
                "must be a multiple of 4, at most 16384",
            ));
        }
        if cfg.skip_extra_bytes > 1 << 30 {
            return Err(BuildError::new(
                env,
                "skip_extra_bytes",
                "must be at most 1 GiB",
            ));
        }
        let region = resolve_region(
            env,
            cfg.offset,
            cfg.offset_frac,
            cfg.size,
            cfg.size_frac,
            REGION_FIELDS,
        )?;
        let chunk_pages = cfg.chunk / PAGE;
        let pages_total = region.len / PAGE_SECTORS;
        if pages_total < chunk_pages * u64::from(cfg.processes) {
            return Err(BuildError::new(
                env,
                "size",
                "the file is smaller than one chunk per process",
            ));
        }
        let stride = u64::from(cfg.processes) * cfg.chunk + cfg.skip_extra_bytes;
        let readers = (0..u64::from(cfg.processes))
            .map(|i| {
                let (pos, last) = zone_pages(cfg.chunk, stride, i, 0);
                Reader {
                    zone: 0,
                    pos,
                    last,
                    waiting: None,
                    ra: RaState::default(),
                    done: false,
                }
            })
            .collect();
        Ok(InterleavedReaders {
            name: env.name.clone(),
            base: region.start,
            pages_total,
            chunk_pages,
            chunk: cfg.chunk,
            stride,
            ra_pages: cfg.read_ahead_kb * 1024 / PAGE,
            readers,
            cache: BTreeMap::new(),
            requests: HashMap::new(),
            outbox: VecDeque::new(),
            next_tag: 0,
        })
    }

    fn present(&self, page: u64) -> bool {
        self.cache.contains_key(&page)
    }

    /// Cached pages just before `index` (`count_history_pages`), at most `max`.
    fn history(&self, index: u64, max: u64) -> u64 {
        let mut n = 0;
        while n < max && n < index && self.present(index - 1 - n) {
            n += 1;
        }
        n
    }

    /// First page not cached from `from` on, scanning at most `max` pages
    /// (`page_cache_next_miss`; `from + max` if there is no gap).
    fn next_miss(&self, from: u64, max: u64) -> u64 {
        (from..from + max)
            .find(|&p| !self.present(p))
            .unwrap_or(from + max)
    }

    /// Read `[start, start + n)` ahead for reader `r`, marking the page `async_size` from the
    /// end (`page_cache_ra_unbounded`): one request per run of pages not cached yet.
    fn ra_submit(&mut self, r: usize, start: u64, n: u64, async_size: u64) {
        let end = (start + n).min(self.pages_total);
        let mark = (start + n).saturating_sub(async_size);
        let mut p = start;
        while p < end {
            if self.present(p) {
                p += 1;
                continue;
            }
            let run_start = p;
            while p < end && !self.present(p) {
                p += 1;
            }
            self.issue(r, run_start, p - run_start, Some(mark));
        }
    }

    /// Issue one read of pages `[first, first + n)` for reader `r`.
    fn issue(&mut self, r: usize, first: u64, n: u64, mark: Option<u64>) {
        let tag = self.next_tag;
        self.next_tag += 1;
        for p in first..first + n {
            self.cache.insert(
                p,
                Page {
                    in_flight: Some(tag),
                    mark: mark == Some(p),
                },
            );
        }
        self.requests.insert(tag, (first, n));
        self.outbox.push_back(IoSpec {
            ctx: r as u32,
            op: Op::Read,
            sync: true,
            meta: false,
            idle_hint: false,
            sector: self.base + first * PAGE_SECTORS,
            sectors: (n * PAGE_SECTORS) as u32,
            prio: None,
            tag,
        });
    }

    /// `ondemand_readahead` for reader `r` reading from `index`, `req_size` pages wanted.
    fn ondemand(&mut self, r: usize, index: u64, req_size: u64, hit_marker: bool) {
        let max = self.ra_pages;
        if max == 0 {
            if !hit_marker {
                self.ra_submit(r, index, req_size, 0);
            }
            return;
        }
        let mut ra = self.readers[r].ra;
        let initial = |ra: &mut RaState| {
            ra.start = index;
            ra.size = init_ra_size(req_size, max);
            ra.async_size = if ra.size > req_size {
                ra.size - req_size
            } else {
                ra.size
            };
        };
        let expected = ra.start + ra.size - ra.async_size;
        if index == 0 {
            initial(&mut ra);
        } else if ra.size > 0 && (index == expected || index == ra.start + ra.size) {
            ra.start += ra.size;
            ra.size = next_ra_size(ra.size, max);
            ra.async_size = ra.size;
        } else if hit_marker {
            // A marked page without a valid readahead state: interleaved reads.
            let start = self.next_miss(index + 1, max);
            if start - index > max {
                return;
            }
            ra.start = start;
            ra.size = start - index + req_size;
            ra.size = next_ra_size(ra.size, max);
            ra.async_size = ra.size;
        } else if req_size > max || ra.prev_index.is_some_and(|p| index == p || index == p + 1) {
            // An oversize read or a sequential cache miss.
            initial(&mut ra);
        } else {
            let size = self.history(index, max);
            if size <= req_size {
                // A small random read: read as it is, readahead state untouched.
                self.ra_submit(r, index, req_size, 0);
                return;
            }
            // Context readahead: the cached history of a sequential stream.
            let size = if size >= index { size * 2 } else { size };
            ra.start = index;
            ra.size = (size + req_size).min(max);
            ra.async_size = 1;
        }
        // A read that would hit its own mark at once: merge the next window in.
        if index == ra.start && ra.size == ra.async_size {
            let add = next_ra_size(ra.size, max);
            if ra.size + add <= max {
                ra.async_size = add;
                ra.size += add;
            } else {
                ra.size = max;
                ra.async_size = max / 2;
            }
        }
        self.readers[r].ra = ra;
        self.ra_submit(r, ra.start, ra.size, ra.async_size);
    }

    /// Run reader `r` until it waits for a request or finishes (`filemap_read`).
    fn step(&mut self, r: usize) {
        loop {
            let rd = &self.readers[r];
            if rd.done || rd.waiting.is_some() {
                return;
            }
            if rd.pos >= rd.last {
                let zone = rd.zone + 1;
                let last_page = rd.last - 1;
                let (first, end) = zone_pages(self.chunk, self.stride, r as u64, zone);
                let rd = &mut self.readers[r];
                rd.ra.prev_index = Some(last_page);
                if end > self.pages_total {
                    rd.done = true;
                    return;
                }
                rd.zone = zone;
                rd.pos = first;
                rd.last = end;
                continue;
            }
            let (pos, last) = (rd.pos, rd.last);
            if !self.present(pos) {
                self.ondemand(r, pos, last - pos, false);
                if !self.present(pos) {
                    // The readahead window lay elsewhere: read the page itself.
                    self.issue(r, pos, 1, None);
                }
            }
            // The run of cached pages from `pos`, up to and including the first one still
            // under I/O or carrying the readahead mark.
            let mut end = pos;
            while end < last {
                let Some(pg) = self.cache.get(&end).copied() else {
                    break;
                };
                end += 1;
                if pg.in_flight.is_some() || pg.mark {
                    break;
                }
            }
            let tail = end - 1;
            let pg = self.cache[&tail];
            if pg.mark {
                self.cache.get_mut(&tail).expect("cached").mark = false;
                self.ondemand(r, tail, last - tail, true);
            }
            if let Some(tag) = pg.in_flight {
                self.readers[r].pos = tail;
                self.readers[r].waiting = Some(tag);
                return;
            }
            self.readers[r].pos = end;
        }
    }

    /// Drop pages every reader is past (they are never read again).
    fn reclaim(&mut self) {
        let low = self
            .readers
            .iter()
            .filter(|r| !r.done)
            .map(|r| r.pos)
            .min()
            .unwrap_or(u64::MAX);
        let keep_from = low.saturating_sub(2 * self.ra_pages.max(self.chunk_pages));
        let old: Vec<u64> = self
            .cache
            .range(..keep_from)
            .filter(|(_, p)| p.in_flight.is_none())
            .map(|(&k, _)| k)
            .collect();
        for k in old {
            self.cache.remove(&k);
        }
    }
}

/// Pages `[first, end)` that process `i`'s read of its zone `zone` covers: it starts at byte
/// `i x chunk + zone x stride` and is `chunk` bytes long.
fn zone_pages(chunk: u64, stride: u64, i: u64, zone: u64) -> (u64, u64) {
    let start = i * chunk + zone * stride;
    (start / PAGE, (start + chunk - 1) / PAGE + 1)
}

/// `get_init_ra_size`: the first window for a read of `size` pages.
fn init_ra_size(size: u64, max: u64) -> u64 {
    let n = size.max(1).next_power_of_two();
    if n <= max / 32 {
        n * 4
    } else if n <= max / 4 {
        n * 2
    } else {
        max
    }
}

/// `get_next_ra_size`: the window after one of `cur` pages.
fn next_ra_size(cur: u64, max: u64) -> u64 {
    if cur < max / 16 {
        4 * cur
    } else if cur <= max / 2 {
        2 * cur
    } else {
        max
    }
}

impl Job for InterleavedReaders {
    fn name(&self) -> &str {
        &self.name
    }

    fn poll(&mut self, _now: Nanos) -> Action {
        if self.outbox.is_empty() {
            for r in 0..self.readers.len() {
                self.step(r);
            }
        }
        if let Some(io) = self.outbox.pop_front() {
            return Action::Issue(io);
        }
        if self.readers.iter().all(|r| r.done) && self.requests.is_empty() {
            Action::Done
        } else {
            Action::Wait
        }
    }

    fn complete(&mut self, tag: u64, _now: Nanos) {
        let Some((first, n)) = self.requests.remove(&tag) else {
            return;
        };
        for p in first..first + n {
            if let Some(pg) = self.cache.get_mut(&p) {
                pg.in_flight = None;
            }
        }
        for r in &mut self.readers {
            if r.waiting == Some(tag) {
                r.waiting = None;
            }
        }
        self.reclaim();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn readers(processes: u32, chunk: u64) -> InterleavedReaders {
        let env = BuildEnv::new(1 << 24, 1, "coop");
        let cfg = InterleavedReadersConfig {
            size: Some(64 << 20),
            processes,
            chunk,
            ..InterleavedReadersConfig::default()
        };
        InterleavedReaders::new(cfg, &env).unwrap()
    }

    /// Run to the end, completing requests in issue order; the requests as (ctx, first
    /// page, pages).
    fn run(job: &mut InterleavedReaders, limit: usize) -> Vec<(u32, u64, u64)> {
        let mut out = Vec::new();
        let mut pending = VecDeque::new();
        while out.len() < limit {
            match job.poll(Nanos::ZERO) {
                Action::Issue(io) => {
                    out.push((io.ctx, io.sector / PAGE_SECTORS, u64::from(io.sectors) / 8));
                    pending.push_back(io.tag);
                }
                Action::Wait => {
                    let tag = pending.pop_front().expect("something to wait for");
                    job.complete(tag, Nanos::ZERO);
                }
                Action::Done => break,
                other => panic!("unexpected {other:?}"),
            }
        }
        out
    }

    #[test]
    fn kernel_readahead_windows_start_at_twice_a_small_read_and_ramp_to_read_ahead_kb() {
        assert_eq!(init_ra_size(4, 32), 8);
        assert_eq!(init_ra_size(1, 32), 4);
        assert_eq!(init_ra_size(32, 32), 32);
        assert_eq!(next_ra_size(1, 32), 4);
        assert_eq!(next_ra_size(8, 32), 16);
        assert_eq!(next_ra_size(16, 32), 32);
        assert_eq!(next_ra_size(32, 32), 32);
    }

    #[test]
    fn a_lone_sequential_reader_reads_ahead_in_growing_windows() {
        let mut job = readers(1, 16384);
        let reqs = run(&mut job, 8);
        // 16 KiB read at the file's start: an initial window of 8 pages, then the next
        // window when the mark is hit, up to 32 pages (128 KiB).
        assert_eq!(reqs[0], (0, 0, 8));
        assert_eq!(reqs[1], (0, 8, 16));
        assert_eq!(reqs[2], (0, 24, 32));
        assert_eq!(reqs[3], (0, 56, 32));
        // Sequential on the device, no page read twice.
        for w in reqs.windows(2) {
            assert_eq!(w[0].1 + w[0].2, w[1].1);
        }
    }

    #[test]
    fn interleaved_readers_read_the_file_once_in_order_with_requests_from_several_processes() {
        let mut job = readers(2, 16384);
        let reqs = run(&mut job, 200);
        for w in reqs.windows(2) {
            assert_eq!(w[0].1 + w[0].2, w[1].1, "{reqs:?}");
        }
        // The second reader hits marks left by the first one's readahead (interleaved
        // reads) and issues windows of its own.
        assert!(reqs.iter().any(|r| r.0 == 1), "{reqs:?}");
        assert!(reqs.iter().all(|r| r.2 <= 32));
    }

    /// Two readers of 16 KiB chunks of a 1 MiB file, readahead off, zones `extra` bytes apart.
    fn two_readers_without_readahead(extra: u64) -> InterleavedReaders {
        let env = BuildEnv::new(1 << 24, 1, "coop");
        let cfg = InterleavedReadersConfig {
            size: Some(1 << 20),
            processes: 2,
            chunk: 16384,
            read_ahead_kb: 0,
            skip_extra_bytes: extra,
            ..InterleavedReadersConfig::default()
        };
        InterleavedReaders::new(cfg, &env).unwrap()
    }

    #[test]
    fn without_readahead_each_process_reads_just_its_chunks() {
        let reqs = run(&mut two_readers_without_readahead(0), 1000);
        assert_eq!(reqs.len(), 64);
        assert!(reqs
            .iter()
            .all(|r| r.2 == 4 && (r.1 / 4) % 2 == u64::from(r.0)));
    }

    #[test]
    fn the_suites_extra_byte_makes_reads_straddle_pages_shared_by_neighbours() {
        // zoneskip = chunk + 1: reader 0's second read starts at byte 32769 and covers pages
        // 8..=12; reader 1's starts at 49153, on page 12, which reader 0 brings in.
        let mut reqs = run(&mut two_readers_without_readahead(1), 1000);
        assert_eq!(&reqs[..3], &[(0, 0, 4), (1, 4, 4), (0, 8, 5)]);
        // Reader 1 waits for page 12 under reader 0's read, then reads what is left of its
        // chunk before page 16, which reader 0's next read has taken: 5 + 3 pages a round.
        assert!(reqs.contains(&(1, 13, 3)), "{reqs:?}");
        // Every page is read once, by one process or the other.
        reqs.sort_by_key(|r| r.1);
        for w in reqs.windows(2) {
            assert_eq!(w[0].1 + w[0].2, w[1].1, "{reqs:?}");
        }
        assert!(reqs.iter().all(|r| (3..=5).contains(&r.2)), "{reqs:?}");
    }

    #[test]
    fn bad_configurations_name_their_field() {
        let env = BuildEnv::new(1 << 24, 1, "coop");
        let bad = |cfg: InterleavedReadersConfig| InterleavedReaders::new(cfg, &env).unwrap_err();
        let base = InterleavedReadersConfig {
            size: Some(1 << 20),
            ..InterleavedReadersConfig::default()
        };
        assert_eq!(
            bad(InterleavedReadersConfig {
                processes: 0,
                ..base.clone()
            })
            .field,
            "processes"
        );
        assert_eq!(
            bad(InterleavedReadersConfig {
                chunk: 1000,
                ..base.clone()
            })
            .field,
            "chunk"
        );
        assert_eq!(
            bad(InterleavedReadersConfig {
                read_ahead_kb: 6,
                ..base.clone()
            })
            .field,
            "read_ahead_kb"
        );
        assert_eq!(
            bad(InterleavedReadersConfig {
                skip_extra_bytes: u64::MAX,
                ..base
            })
            .field,
            "skip_extra_bytes"
        );
    }
}
