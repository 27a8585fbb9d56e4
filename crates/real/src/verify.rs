//! `--verify`: every written sector carries a self-checking stamp, and reads check it.
//!
//! Each 512-byte sector a verified run writes holds a 32-byte header (magic, the sector's own
//! byte offset, the run's id, a checksum) and 480 bytes of pseudo-random payload derived from
//! the offset and a per-write sequence number. A read checks every sector that an earlier
//! write of this run had completed before the read was dispatched: the magic, that the offset
//! is the sector's own (catching misdirected writes) and the checksum (catching torn or
//! corrupted data). After the jobs, the executor reads back every sector the run wrote.

use std::fmt;

const SECTOR: usize = 512;
const MAGIC: u64 = 0x656c_6576_5f76_6572; // "elev_ver"
const HEADER: usize = 32;

/// A verification failure.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VerifyError {
    /// Byte offset of the bad sector on the target.
    pub offset: u64,
    /// What was wrong.
    pub reason: String,
}

impl fmt::Display for VerifyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "verify failed at byte offset {}: {}",
            self.offset, self.reason
        )
    }
}

impl std::error::Error for VerifyError {}

fn fnv(bytes: &[u8], mut h: u64) -> u64 {
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

fn word(b: &[u8], i: usize) -> u64 {
    u64::from_le_bytes(b[i * 8..i * 8 + 8].try_into().expect("8 bytes"))
}

/// Fill `buf`, to be written at byte `offset`, with stamped sectors for run `run_id`;
/// `seq` varies the payload from one write to the next.
pub fn stamp(buf: &mut [u8], offset: u64, run_id: u64, seq: u64) {
    for (i, s) in buf.chunks_exact_mut(SECTOR).enumerate() {
        let off = offset + (i * SECTOR) as u64;
        let mut x = off ^ seq.rotate_left(32) ^ 0x9e37_79b9_7f4a_7c15;
        for chunk in s[HEADER..].chunks_exact_mut(8) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            chunk.copy_from_slice(&x.to_le_bytes());
        }
        s[0..8].copy_from_slice(&MAGIC.to_le_bytes());
        s[8..16].copy_from_slice(&off.to_le_bytes());
        s[16..24].copy_from_slice(&run_id.to_le_bytes());
        let sum = fnv(&s[HEADER..], fnv(&s[..24], 0xcbf2_9ce4_8422_2325));
        s[24..32].copy_from_slice(&sum.to_le_bytes());
    }
}

/// Check the sectors of `buf`, read from byte `offset`, for which `written(i)` says an earlier
/// write of run `run_id` completed.
pub fn check(
    buf: &[u8],
    offset: u64,
    run_id: u64,
    written: impl Fn(usize) -> bool,
) -> Result<(), VerifyError> {
    for (i, s) in buf.chunks_exact(SECTOR).enumerate() {
        if !written(i) {
            continue;
        }
        let off = offset + (i * SECTOR) as u64;
        let bad = |reason: String| {
            Err(VerifyError {
                offset: off,
                reason,
            })
        };
        if word(s, 0) != MAGIC {
            return bad("no verify header: the data is not what this run wrote".into());
        }
        if word(s, 1) != off {
            return bad(format!(
                "the sector holds data written for byte offset {}",
                word(s, 1)
            ));
        }
        if word(s, 2) != run_id {
            return bad("the sector holds data from another run".into());
        }
        if fnv(&s[HEADER..], fnv(&s[..24], 0xcbf2_9ce4_8422_2325)) != word(s, 3) {
            return bad("checksum mismatch".into());
        }
    }
    Ok(())
}

/// Which sectors of the target the run has written (completed writes), one bit each.
#[derive(Clone, Debug, Default)]
pub struct WrittenMap {
    bits: Vec<u64>,
}

impl WrittenMap {
    /// A map for a target of `bytes`.
    pub fn new(bytes: u64) -> WrittenMap {
        let sectors = bytes.div_ceil(SECTOR as u64);
        WrittenMap {
            bits: vec![0; sectors.div_ceil(64) as usize],
        }
    }

    /// Whether sector `s` was written.
    pub fn get(&self, s: u64) -> bool {
        self.bits
            .get((s / 64) as usize)
            .is_some_and(|w| w & (1 << (s % 64)) != 0)
    }

    /// Mark `count` sectors from `first` as written.
    pub fn set(&mut self, first: u64, count: u64) {
        for s in first..first + count {
            if let Some(w) = self.bits.get_mut((s / 64) as usize) {
                *w |= 1 << (s % 64);
            }
        }
    }

    /// Mark `count` sectors from `first` as not written (a discard: what they read back
    /// is the device's business, zeroes or not, so reads no longer check them).
    pub fn clear(&mut self, first: u64, count: u64) {
        for s in first..first + count {
            if let Some(w) = self.bits.get_mut((s / 64) as usize) {
                *w &= !(1 << (s % 64));
            }
        }
    }

    /// The written sectors as maximal runs `(first, count)`, in order.
    pub fn runs(&self) -> Vec<(u64, u64)> {
        let mut out: Vec<(u64, u64)> = Vec::new();
        for (wi, &w) in self.bits.iter().enumerate() {
            if w == 0 {
                continue;
            }
            for b in 0..64 {
                if w & (1 << b) == 0 {
                    continue;
                }
                let s = wi as u64 * 64 + b;
                match out.last_mut() {
                    Some((f, c)) if *f + *c == s => *c += 1,
                    _ => out.push((s, 1)),
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stamped_sectors_check_and_corruption_is_caught() {
        let mut buf = vec![0u8; 4096];
        stamp(&mut buf, 8192, 7, 1);
        assert_eq!(check(&buf, 8192, 7, |_| true), Ok(()));
        // Read back at the wrong place: a misdirected write.
        let e = check(&buf, 0, 7, |_| true).unwrap_err();
        assert!(e.reason.contains("8192"), "{e}");
        assert_eq!(check(&buf, 8192, 8, |_| true).unwrap_err().offset, 8192);
        buf[600] ^= 1;
        let e = check(&buf, 8192, 7, |_| true).unwrap_err();
        assert_eq!((e.offset, e.reason.as_str()), (8704, "checksum mismatch"));
        // Sectors never written are not checked.
        assert_eq!(check(&[0u8; 1024], 0, 7, |_| false), Ok(()));
    }

    #[test]
    fn written_map_merges_runs() {
        let mut m = WrittenMap::new(1 << 20);
        m.set(10, 5);
        m.set(15, 60);
        m.set(200, 1);
        assert!(m.get(74) && !m.get(75));
        assert_eq!(m.runs(), vec![(10, 65), (200, 1)]);
    }
}
