//! An LRU page cache: which 4 KiB blocks of the device are in memory.
//!
//! Jobs that model processes reading files through the kernel (the compile job) ask it whether a
//! block must come from the disk. Pages are named by their device block number (sector / 8),
//! so file data, inodes and directory blocks share one cache, as in Linux's buffer and page
//! caches. Capacity is in pages; inserting into a full cache evicts the least recently used
//! page. Linux's two-list (active / inactive) replacement is not modelled: for a working set
//! that fits, as in the experiments here, the difference does not show.

use std::collections::{BTreeMap, HashMap};

/// Sectors per page (4 KiB pages of 512-byte sectors).
pub const PAGE_SECTORS: u64 = 8;

/// An LRU set of pages with a fixed capacity.
#[derive(Clone, Debug)]
pub struct PageCache {
    capacity: usize,
    stamp: u64,
    by_page: HashMap<u64, u64>,
    by_age: BTreeMap<u64, u64>,
    hits: u64,
    misses: u64,
}

impl PageCache {
    /// An empty cache holding at most `capacity` pages (at least one).
    pub fn new(capacity: usize) -> PageCache {
        PageCache {
            capacity: capacity.max(1),
            stamp: 0,
            by_page: HashMap::new(),
            by_age: BTreeMap::new(),
            hits: 0,
            misses: 0,
        }
    }

    /// A cache of `mib` MiB.
    pub fn with_mib(mib: u64) -> PageCache {
        PageCache::new((mib * 256) as usize)
    }

    /// Whether `page` is cached, without touching it.
    pub fn contains(&self, page: u64) -> bool {
        self.by_page.contains_key(&page)
    }

    /// A read of `page`: true (and the page becomes most recently used) if cached. Counts a
    /// hit or a miss.
    pub fn access(&mut self, page: u64) -> bool {
        if self.by_page.contains_key(&page) {
            self.hits += 1;
            self.touch(page);
            true
        } else {
            self.misses += 1;
            false
        }
    }

    /// Bring `page` in (after a read from disk, or a write), most recently used; returns the
    /// page evicted to make room, if any.
    pub fn insert(&mut self, page: u64) -> Option<u64> {
        if self.by_page.contains_key(&page) {
            self.touch(page);
            return None;
        }
        let evicted = if self.by_page.len() >= self.capacity {
            let (_, old) = self.by_age.pop_first().expect("a full cache has pages");
            self.by_page.remove(&old);
            Some(old)
        } else {
            None
        };
        self.stamp += 1;
        self.by_page.insert(page, self.stamp);
        self.by_age.insert(self.stamp, page);
        evicted
    }

    fn touch(&mut self, page: u64) {
        self.stamp += 1;
        let old = self
            .by_page
            .insert(page, self.stamp)
            .expect("touched page is cached");
        self.by_age.remove(&old);
        self.by_age.insert(self.stamp, page);
    }

    /// Pages cached.
    pub fn len(&self) -> usize {
        self.by_page.len()
    }

    /// Whether nothing is cached.
    pub fn is_empty(&self) -> bool {
        self.by_page.is_empty()
    }

    /// The capacity in pages.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Operations so far: pages brought in or made most recent (each an insertion into the
    /// age order), and reads that missed. What the cache's model computed, for a job's
    /// [`model_steps`](crate::Job::model_steps).
    pub fn operations(&self) -> u64 {
        self.stamp.saturating_add(self.misses)
    }

    /// (hits, misses) counted by [`access`](PageCache::access).
    pub fn hits_misses(&self) -> (u64, u64) {
        (self.hits, self.misses)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn least_recently_used_page_is_evicted_first() {
        let mut c = PageCache::new(3);
        c.insert(1);
        c.insert(2);
        c.insert(3);
        assert!(c.access(1)); // 2 is now the oldest
        assert_eq!(c.insert(4), Some(2));
        assert!(!c.contains(2));
        assert!(c.contains(1) && c.contains(3) && c.contains(4));
        assert_eq!(c.len(), 3);
        assert_eq!(c.hits_misses(), (1, 0));
        assert!(!c.access(2));
        assert_eq!(c.hits_misses(), (1, 1));
    }

    #[test]
    fn reinserting_refreshes_instead_of_duplicating() {
        let mut c = PageCache::new(2);
        c.insert(1);
        c.insert(2);
        assert_eq!(c.insert(1), None);
        assert_eq!(c.insert(3), Some(2));
        assert_eq!(c.len(), 2);
    }

    #[test]
    fn capacity_in_mib_counts_4k_pages() {
        assert_eq!(PageCache::with_mib(256).capacity(), 65536);
    }
}
