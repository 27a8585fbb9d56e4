//! Hash maps keyed by plain integers (request and context ids, sectors), with a multiplicative
//! hasher: the policies look such keys up on every request, where SipHash's cost would show.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// A tiny multiplicative hasher for integer keys.
#[derive(Default)]
pub(crate) struct IdHasher(u64);

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }
    fn write_u32(&mut self, n: u32) {
        self.write_u64(u64::from(n));
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0 ^ n).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

/// A `HashMap` over [`IdHasher`].
pub(crate) type IdMap<K, V> = HashMap<K, V, BuildHasherDefault<IdHasher>>;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::CtxId;
    use std::collections::HashSet;
    use std::hash::BuildHasher;

    #[test]
    fn distinct_ids_get_distinct_hashes() {
        let b = BuildHasherDefault::<IdHasher>::default();
        let ids: HashSet<u64> = (0..1000u64).map(|i| b.hash_one(i)).collect();
        assert_eq!(ids.len(), 1000);
        let ctxs: HashSet<u64> = (0..1000).map(|c| b.hash_one(CtxId(c))).collect();
        assert_eq!(ctxs.len(), 1000);
    }
}
