//! Page-aligned I/O buffers, as O_DIRECT requires, and a pool that reuses them.
//!
//! The pool hands out buffers whose contents are never all zeroes: storage that detects zeroes
//! (thin provisioning, QEMU's detect-zeroes, compressing and deduplicating SSDs) would
//! otherwise skew every write figure. As fio does by default, a buffer is filled with
//! pseudo-random bytes when it is allocated and scrambled each time it is handed out again
//! ([`Fill::Scramble`], fio's `scramble_buffers=1`), or refilled in full
//! ([`Fill::Refill`], fio's `refill_buffers`); [`Fill::Zero`] is fio's `zero_buffers`.
//!
//! The pool keeps at most [`MAX_IDLE_BYTES`] of free buffers (the largest size classes other
//! than the one returned are dropped first), so a run of many request sizes does not keep
//! every buffer it ever used.

use std::alloc::{self, Layout};
use std::collections::HashMap;
use std::ops::{Deref, DerefMut};
use std::ptr::NonNull;

/// Alignment of every buffer: a page, which satisfies O_DIRECT on any logical block size up to
/// 4 KiB.
pub const ALIGN: usize = 4096;

/// A zero-initialised heap buffer aligned to [`ALIGN`]. Its address never changes while it
/// lives, so a backend may hand it to the kernel and keep it until the I/O completes.
pub struct AlignedBuf {
    ptr: NonNull<u8>,
    len: usize,
}

// SAFETY: the buffer owns its allocation exclusively, like a Vec<u8>.
unsafe impl Send for AlignedBuf {}

impl AlignedBuf {
    /// A zeroed buffer of `len` bytes (at least one byte is allocated). Aborts if memory runs
    /// out, as `Vec` does; [`AlignedBuf::try_new`] reports it instead.
    pub fn new(len: usize) -> AlignedBuf {
        match Self::try_new(len) {
            Some(b) => b,
            None => alloc::handle_alloc_error(Self::layout(len).unwrap_or(Layout::new::<u8>())),
        }
    }

    /// A zeroed buffer of `len` bytes, or `None` when the memory cannot be had (or `len` is
    /// past what a layout can describe).
    pub fn try_new(len: usize) -> Option<AlignedBuf> {
        let layout = Self::layout(len)?;
        // SAFETY: the layout has a non-zero size.
        let raw = unsafe { alloc::alloc_zeroed(layout) };
        NonNull::new(raw).map(|ptr| AlignedBuf { ptr, len })
    }

    fn layout(len: usize) -> Option<Layout> {
        Layout::from_size_align(len.max(1), ALIGN).ok()
    }

    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the buffer holds no bytes.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The first byte, for handing to the kernel.
    pub fn as_mut_ptr(&mut self) -> *mut u8 {
        self.ptr.as_ptr()
    }
}

impl Drop for AlignedBuf {
    fn drop(&mut self) {
        let layout = Self::layout(self.len).expect("the layout it was allocated with");
        // SAFETY: allocated in `try_new` with this layout.
        unsafe { alloc::dealloc(self.ptr.as_ptr(), layout) }
    }
}

impl Deref for AlignedBuf {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        // SAFETY: `len` initialised bytes owned by self.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl DerefMut for AlignedBuf {
    fn deref_mut(&mut self) -> &mut [u8] {
        // SAFETY: `len` initialised bytes owned exclusively by self.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

impl std::fmt::Debug for AlignedBuf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "AlignedBuf({} bytes)", self.len)
    }
}

/// Free buffers the pool keeps at most, in bytes.
pub const MAX_IDLE_BYTES: usize = 64 << 20;

/// What a buffer handed out by [`BufPool::get`] holds (fio's buffer options).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Fill {
    /// Random bytes when allocated; on each reuse, every 512-byte block gets a fresh random
    /// word at a random place (fio's default, `scramble_buffers=1`): cheap, and no two writes
    /// carry the same block.
    #[default]
    Scramble,
    /// Random bytes in full on every use (fio's `refill_buffers`).
    Refill,
    /// Zeroes when allocated, as the kernel gives them (fio's `zero_buffers`).
    Zero,
}

/// A small, fast pseudo-random generator (xorshift64*) for buffer contents: not for
/// anything but defeating zero detection and deduplication.
#[derive(Clone, Debug)]
struct Noise(u64);

impl Noise {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn fill(&mut self, b: &mut [u8]) {
        let mut chunks = b.chunks_exact_mut(8);
        for c in &mut chunks {
            c.copy_from_slice(&self.next().to_le_bytes());
        }
        let rest = chunks.into_remainder();
        let last = self.next().to_le_bytes();
        rest.copy_from_slice(&last[..rest.len()]);
    }

    fn scramble(&mut self, b: &mut [u8]) {
        for block in b.chunks_mut(512) {
            let r = self.next();
            let words = block.len() / 8;
            if words == 0 {
                continue;
            }
            let at = (r as usize % words) * 8;
            block[at..at + 8].copy_from_slice(&self.next().to_le_bytes());
        }
    }
}

/// Free buffers by size, so a steady workload allocates only while it ramps up; at most
/// [`MAX_IDLE_BYTES`] of them are kept.
#[derive(Debug)]
pub struct BufPool {
    free: HashMap<usize, Vec<AlignedBuf>>,
    idle_bytes: usize,
    fill: Fill,
    noise: Noise,
}

impl Default for BufPool {
    fn default() -> BufPool {
        BufPool::new(Fill::default(), 0x9e37_79b9_7f4a_7c15)
    }
}

impl BufPool {
    /// A pool whose buffers are filled as `fill` says, from the pseudo-random sequence `seed`
    /// starts (the same seed, the same bytes).
    pub fn new(fill: Fill, seed: u64) -> BufPool {
        BufPool {
            free: HashMap::new(),
            idle_bytes: 0,
            fill,
            // xorshift must not start at 0.
            noise: Noise(seed | 1),
        }
    }

    /// A buffer of exactly `len` bytes, filled as the pool's [`Fill`] says. Aborts if memory
    /// runs out; [`BufPool::try_get`] reports it.
    pub fn get(&mut self, len: usize) -> AlignedBuf {
        match self.try_get(len) {
            Some(b) => b,
            None => AlignedBuf::new(len),
        }
    }

    /// [`BufPool::get`], or `None` when a new buffer of `len` bytes cannot be allocated.
    pub fn try_get(&mut self, len: usize) -> Option<AlignedBuf> {
        if let Some(mut b) = self.free.get_mut(&len).and_then(Vec::pop) {
            self.idle_bytes -= len;
            match self.fill {
                Fill::Scramble => self.noise.scramble(&mut b),
                Fill::Refill => self.noise.fill(&mut b),
                Fill::Zero => {}
            }
            return Some(b);
        }
        let mut b = AlignedBuf::try_new(len)?;
        if self.fill != Fill::Zero {
            self.noise.fill(&mut b);
        }
        Some(b)
    }

    /// Return a buffer for reuse (dropped instead when the pool would keep more than
    /// [`MAX_IDLE_BYTES`] and no buffer of another size can make room).
    pub fn put(&mut self, buf: AlignedBuf) {
        let len = buf.len();
        if len > MAX_IDLE_BYTES {
            return;
        }
        while self.idle_bytes + len > MAX_IDLE_BYTES {
            // Make room from the size class holding the most bytes, other than this one.
            let victim = self
                .free
                .iter()
                .filter(|(&size, v)| size != len && !v.is_empty())
                .max_by_key(|(&size, v)| size * v.len())
                .map(|(&size, _)| size);
            let Some(size) = victim else { return };
            let v = self.free.get_mut(&size).expect("a victim class");
            v.pop();
            self.idle_bytes -= size;
            if v.is_empty() {
                self.free.remove(&size);
            }
        }
        self.idle_bytes += len;
        self.free.entry(len).or_default().push(buf);
    }

    /// Bytes of free buffers the pool holds.
    pub fn idle_bytes(&self) -> usize {
        self.idle_bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_are_page_aligned_and_reused() {
        let mut pool = BufPool::new(Fill::Zero, 1);
        let mut b = pool.get(8192);
        assert_eq!(b.as_mut_ptr() as usize % ALIGN, 0);
        assert!(b.iter().all(|&x| x == 0));
        b[0] = 7;
        let addr = b.as_mut_ptr() as usize;
        pool.put(b);
        let mut again = pool.get(8192);
        assert_eq!(again.as_mut_ptr() as usize, addr);
        assert_eq!(pool.get(4096).len(), 4096);
    }

    /// Zero-detecting storage (thin provisioning, detect-zeroes, compressing SSDs) must not
    /// see zeroes, nor the same block twice: fresh buffers are random, and a reused one
    /// differs from what it held in every 512-byte block (fio's scramble_buffers).
    #[test]
    fn write_buffers_are_random_and_scrambled_on_reuse_not_zeroes() {
        let mut pool = BufPool::default();
        let b = pool.get(64 * 1024);
        let zeros = b.iter().filter(|&&x| x == 0).count();
        assert!(zeros < 64 * 1024 / 100, "{zeros} zero bytes of 65536");
        let before = b.to_vec();
        pool.put(b);
        let again = pool.get(64 * 1024);
        for (i, (x, y)) in before.chunks(512).zip(again.chunks(512)).enumerate() {
            assert_ne!(x, y, "block {i} was reused unchanged");
        }
        let mut refill = BufPool::new(Fill::Refill, 5);
        let r = refill.get(4096);
        let first = r.to_vec();
        refill.put(r);
        let r = refill.get(4096);
        let same = first.iter().zip(r.iter()).filter(|(a, b)| a == b).count();
        assert!(
            same < 4096 / 16,
            "{same} of 4096 bytes unchanged by a refill"
        );
    }

    /// A run of many sizes does not keep every freed buffer: the pool holds at most
    /// MAX_IDLE_BYTES, making room from other sizes first.
    #[test]
    fn the_pool_keeps_a_bounded_amount_of_free_buffers() {
        let mut pool = BufPool::new(Fill::Zero, 1);
        for k in 1..=2048usize {
            let b = pool.get(k * 4096);
            pool.put(b);
            assert!(pool.idle_bytes() <= MAX_IDLE_BYTES, "{}", pool.idle_bytes());
        }
        // The latest size is still reused.
        let b = pool.get(2048 * 4096);
        let addr = b.as_ptr() as usize;
        pool.put(b);
        assert_eq!(pool.get(2048 * 4096).as_ptr() as usize, addr);
        // A buffer larger than the bound is never kept.
        let huge = pool.get(MAX_IDLE_BYTES + 4096);
        pool.put(huge);
        assert!(pool.idle_bytes() <= MAX_IDLE_BYTES);
    }

    #[test]
    fn an_impossible_allocation_is_reported_not_aborted() {
        assert!(AlignedBuf::try_new(usize::MAX - 8192).is_none());
        assert!(BufPool::default().try_get(usize::MAX / 2).is_none());
    }
}
