//! The scheduler tags by bit position ([`TagBits`]), tested from outside the module: decisions
//! found unpinned by mutation testing (docs/testing.md, "Mutation testing, the block layer and
//! latency_guard").

use elevator_core::tags::TagBits;

/// `update_alloc_hint_after_get` (lib/sbitmap.c): after a CPU takes the bit its hint named,
/// the hint moves one past it, and back to 0 when that is at least `depth - 1`: so taking
/// bit `depth - 2` resets it. With 8 tags in 2-bit words, CPU 0 takes bits 0 to 6 in order;
/// its hint is then 0, not 7. Bit 3 is freed (on CPU 1: its hint moves, not CPU 0's) and
/// waits in its word's cleared mask; CPU 0's next full-depth search (`__sbitmap_get`) starts
/// at word 0, finds words 0 and 1 full, folds bit 3 back (`sbitmap_deferred_clear`) and takes
/// it, where a hint of 7 would have taken the free bit 7.
#[test]
fn sbitmap_resets_the_hint_after_taking_the_map_s_last_but_one_bit() {
    let mut bits = TagBits::new(8);
    let taken: Vec<Option<u32>> = (0..7).map(|_| bits.take(None, 0)).collect();
    assert_eq!(taken, (0..7).map(Some).collect::<Vec<_>>());
    bits.release(3, 1);
    assert_eq!(bits.take(None, 0), Some(3), "CPU 0's hint went back to 0");
    assert_eq!(bits.take(None, 0), Some(7));
    assert_eq!(bits.take(None, 0), None);
}

/// `update_alloc_hint_after_get`: after a CPU takes the bit its hint named, the hint moves
/// one past it, into the next word when the bit was its word's last. With 8 tags in 2-bit
/// words CPU 0 takes bits 0 and 1, so its hint is 2 (word 1). Bit 0 is freed (on CPU 1) and
/// waits in word 0's cleared mask; CPU 0's next full-depth search starts in word 1 and takes
/// bit 2. A hint left at 1 would search word 0 first, fold bit 0 back and take it.
#[test]
fn sbitmap_moves_the_hint_past_the_bit_it_named() {
    let mut bits = TagBits::new(8);
    assert_eq!((bits.take(None, 0), bits.take(None, 0)), (Some(0), Some(1)));
    bits.release(0, 1);
    assert_eq!(bits.take(None, 0), Some(2), "CPU 0's hint moved to word 1");
}
