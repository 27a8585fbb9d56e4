//! Page-aligned I/O buffers, as O_DIRECT requires, and a pool that reuses them.

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
    /// A zeroed buffer of `len` bytes (at least one byte is allocated).
    pub fn new(len: usize) -> AlignedBuf {
        let layout = Self::layout(len);
        // SAFETY: the layout has a non-zero size.
        let raw = unsafe { alloc::alloc_zeroed(layout) };
        let ptr = NonNull::new(raw).unwrap_or_else(|| alloc::handle_alloc_error(layout));
        AlignedBuf { ptr, len }
    }

    fn layout(len: usize) -> Layout {
        Layout::from_size_align(len.max(1), ALIGN).expect("buffer size fits a Layout")
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
        // SAFETY: allocated in `new` with this layout.
        unsafe { alloc::dealloc(self.ptr.as_ptr(), Self::layout(self.len)) }
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

/// Free buffers by size, so a steady workload allocates only while it ramps up.
#[derive(Debug, Default)]
pub struct BufPool {
    free: HashMap<usize, Vec<AlignedBuf>>,
}

impl BufPool {
    /// A buffer of exactly `len` bytes (contents unspecified).
    pub fn get(&mut self, len: usize) -> AlignedBuf {
        self.free
            .get_mut(&len)
            .and_then(Vec::pop)
            .unwrap_or_else(|| AlignedBuf::new(len))
    }

    /// Return a buffer for reuse.
    pub fn put(&mut self, buf: AlignedBuf) {
        self.free.entry(buf.len()).or_default().push(buf);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_are_page_aligned_zeroed_and_reused() {
        let mut pool = BufPool::default();
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
}
