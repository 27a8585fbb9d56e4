//! The scheduler tags, by bit position ([`TagBits`]) and through the block layer, tested from
//! outside the module: decisions found unpinned by mutation testing (docs/mutation-testing.md,
//! "Mutation testing, the block layer and latency_guard").

use elevator_core::block::{Bio, BlockLayer, Limits};
use elevator_core::mq_deadline::MqDeadline;
use elevator_core::tags::{Depth, SchedTags, TagBits};
use elevator_core::{CtxId, Nanos, Op, Settings};

fn ms(x: u64) -> Nanos {
    Nanos::from_ms(x)
}

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

/// `blk_mq_rq_time_init` at `__blk_mq_alloc_requests`: a request's `start_time_ns` is when it
/// gets its scheduler tag, whoever still waits for one. mq-deadline with four tags
/// (`nr_requests`' least) on a one-request device: reads 0 to 3 take them at 0 ms, reads 4
/// and 5 wait from 1 ms. Read 0 completes at 5 ms: read 4 takes its tag then, while read 5
/// still waits (for read 1's, freed at 8 ms). So `Done::tagged` is 5 ms for read 4 and 8 ms
/// for read 5: a request that holds its tag is not "waiting" because another one is.
#[test]
fn a_request_holds_its_scheduler_tag_while_another_still_waits_for_one() {
    let mut set = Settings::new();
    set.set("nr_requests", 4);
    let dd = MqDeadline::from_settings(&set).expect("nr_requests 4");
    let mut blk = BlockLayer::new(dd, Limits::depth(1));
    let submit = |blk: &mut BlockLayer<MqDeadline, u64>, i: u64, at: u64| {
        blk.handle_submit(Bio::new(CtxId(1), Op::Read, i * 100, 8), i, ms(at));
    };
    for i in 0..4 {
        submit(&mut blk, i, 0);
    }
    let mut out: Vec<_> = std::iter::from_fn(|| blk.poll_dispatch(ms(0))).collect();
    submit(&mut blk, 4, 1);
    submit(&mut blk, 5, 1);
    let (mut done, mut t) = (Vec::new(), 5);
    while let Some(rq) = out.pop() {
        blk.handle_complete(rq.id, true, ms(t), &mut done);
        out.extend(std::iter::from_fn(|| blk.poll_dispatch(ms(t))));
        t += 3;
    }
    let tagged: Vec<(u64, Nanos)> = done.iter().map(|d| (d.token, d.tagged)).collect();
    assert_eq!(
        tagged,
        [
            (0, ms(0)),
            (1, ms(0)),
            (2, ms(0)),
            (3, ms(0)),
            (4, ms(5)),
            (5, ms(8)),
        ]
    );
}

/// [`SchedTags::generation`]'s promise, which bfq's tag wait relies on to skip asking its
/// waiting heads again: while it stays the same, `may_take` answers the same. A map kept by
/// bit position starts anew, empty, when `set_map_depth` changes its words
/// (`sbitmap_calculate_shift`: 2-bit words for 8 tags, 16-bit ones for a map allocated for
/// 64), so a shallow depth refused before may take a bit after: the generation moves on, to
/// numbers it never had, as the new map's first tag shows (depth 2 of 8 in one 8-bit word
/// is bits 0 and 1: one is left, where the old map had none left at that count).
#[test]
fn a_map_allocated_anew_by_set_map_depth_moves_the_tags_generation() {
    let mut tags = SchedTags::new(8, 8);
    tags.set_bit_positions(true);
    let mut seen = vec![tags.generation()];
    while tags.may_take(Depth::Shallow(2)) {
        tags.take_bit(Depth::Shallow(2), 0);
        seen.push(tags.generation());
    }
    assert!(seen.len() < 9, "the shallow depth ran out before the tags");
    tags.set_map_depth(64);
    assert!(tags.may_take(Depth::Shallow(2)), "the new map is empty");
    assert!(!seen.contains(&tags.generation()), "{seen:?}");
    assert_eq!(tags.take_bit(Depth::Shallow(2), 0), Some(0));
    assert!(tags.may_take(Depth::Shallow(2)), "bit 1 is free");
    assert!(!seen.contains(&tags.generation()), "{seen:?}");
}

/// [`SchedTags::generation`]: a free moves it on, never back to a number it had with other
/// tags held. With 8 tags of which throttled requests may hold 1: a request takes a tag
/// (`Full`), a throttled one may still take one; a throttled request takes one and the
/// first frees its own. Now a throttled request may not, so the generation must differ
/// from the one that said it may.
#[test]
fn a_freed_tag_never_brings_the_generation_back_to_an_earlier_answer() {
    let mut tags = SchedTags::new(8, 1);
    tags.take(Depth::Full);
    let (before, could) = (tags.generation(), tags.may_take(Depth::Throttled));
    assert!(could);
    tags.take(Depth::Throttled);
    tags.release_at(Depth::Full);
    assert!(
        !tags.may_take(Depth::Throttled),
        "the throttled depth is held"
    );
    assert_ne!(tags.generation(), before);
}

/// [`SchedTags::set_map_depth`] only says which words a map kept by bit position has
/// (`sbitmap_calculate_shift` for the depth it was allocated with, kept by
/// `sbitmap_queue_resize` when `nr_requests` is lowered). Tags only counted (the module's
/// deviation, `tag_bits` off) stay counted: a map allocated for 256 tags and lowered to 8
/// takes no bit, and after a `Full` tag a depth of 1 still may take one, as the counted model
/// asks only about `Shallow` holders. A map kept by bit position and allocated for 12 tags
/// (2-bit words, as 8 tags' are) keeps its bits when told so: `sbitmap_resize` keeps the
/// words' bits, so bit 0, held, still refuses a depth of 1.
#[test]
fn a_map_depth_changes_only_a_bit_map_and_only_when_its_words_change() {
    let mut counted = SchedTags::new(8, 8);
    counted.set_map_depth(256);
    assert_eq!(counted.take_bit(Depth::Full, 0), None, "no bit map kept");
    assert!(counted.may_take(Depth::Shallow(1)));

    let mut bits = SchedTags::new(8, 8);
    bits.set_bit_positions(true);
    assert_eq!(bits.take_bit(Depth::Full, 0), Some(0));
    assert!(!bits.may_take(Depth::Shallow(1)), "bit 0 is held");
    let before = bits.generation();
    bits.set_map_depth(12);
    assert!(
        !bits.may_take(Depth::Shallow(1)),
        "the same 2-bit words: bit 0 is still held"
    );
    assert_eq!(bits.generation(), before, "nothing changed");
    assert_eq!(bits.take_bit(Depth::Full, 0), Some(1));
}

/// [`SchedTags::generation`]: a new shallow depth (`set_limit`, mq-deadline's `async_depth`
/// and kyber's async depth, which `dd_depth_updated` / `kyber_depth_updated` set) moves it
/// on, never back to a number it had when `may_take` answered otherwise. With 8 tags of
/// which throttled requests may hold 2, one holds a tag and a throttled request may take
/// another; the limit lowered to 1, it may not, so the generation must be new.
#[test]
fn a_new_shallow_depth_never_brings_the_generation_back_to_an_earlier_answer() {
    let mut tags = SchedTags::new(8, 2);
    let mut seen = vec![tags.generation()];
    tags.take(Depth::Throttled);
    seen.push(tags.generation());
    assert!(tags.may_take(Depth::Throttled));
    tags.set_limit(1);
    assert!(!tags.may_take(Depth::Throttled), "the limit is held");
    assert!(
        !seen.contains(&tags.generation()),
        "generation {} was seen with another answer ({seen:?})",
        tags.generation()
    );
}

/// [`SchedTags::generation`]: keeping the tags by bit position from now on (bfq's
/// `tag_bits`) starts an empty map, which may answer otherwise than the count: with 8
/// tags, a request of shallow depth 1 holding one, the counted model refuses another of
/// depth 1; the new map, which does not hold the first request's bit, gives one (bit 0 of
/// word 0, the only bit `__map_depth_with_shallow` allows depth 1). So the generation moves.
#[test]
fn keeping_the_tags_by_bit_position_moves_the_generation() {
    let mut tags = SchedTags::new(8, 8);
    tags.take(Depth::Shallow(1));
    assert!(
        !tags.may_take(Depth::Shallow(1)),
        "counted: depth 1 is held"
    );
    let before = tags.generation();
    tags.set_bit_positions(true);
    assert!(tags.may_take(Depth::Shallow(1)), "the new map is empty");
    assert_ne!(tags.generation(), before);
}

/// `__sbitmap_get_word` (lib/sbitmap.c, which `sbitmap_get_shallow` reaches through
/// `sbitmap_find_bit` with `wrap` set): a shallow search starts at its CPU's hint within the
/// word and, finding nothing from there, searches the word again from bit 0 before giving
/// up on it. One 8-bit word (a map allocated for 256 tags lowered to 8), shallow depth 4:
/// CPU 0 takes bits 0, 1 and 2, its hint moving to 3; bit 0 is freed by a request of CPU 5
/// and waits in the cleared mask, and CPU 5 takes bit 3 with a full-depth search. CPU 0's
/// next shallow search from bit 3 finds bits 0 to 3 taken, folds bit 0 back
/// (`sbitmap_deferred_clear`), finds nothing from bit 3 again and wraps to bit 0.
#[test]
fn a_shallow_search_wraps_to_its_word_s_first_bits_past_its_hint() {
    let mut bits = TagBits::with_shift(8, 3);
    let shallow = Some(4);
    let first: Vec<_> = (0..3).map(|_| bits.take(shallow, 0)).collect();
    assert_eq!(first, [Some(0), Some(1), Some(2)]);
    bits.release(0, 5);
    assert_eq!(bits.take(None, 5), Some(3));
    assert_eq!(
        bits.take(shallow, 0),
        Some(0),
        "wrapped from CPU 0's hint, 3"
    );
    assert_eq!(bits.take(shallow, 0), None, "bits 0 to 3 are held");
}

/// [`SchedTags::generation`]: taking a tag moves it on. A request sleeping in `blk_mq_get_tag`
/// (bfq's tag wait, which skips its heads while the generation is the one they were refused
/// at) must be asked again after the tags change hands; a take that left the number alone
/// would let a head refused before the take be skipped after a free that undoes it. With one
/// tag, a request may take it; once taken, none may, so the generation must be new.
#[test]
fn taking_a_tag_moves_the_generation() {
    let mut tags = SchedTags::new(1, 1);
    let before = tags.generation();
    assert!(tags.may_take(Depth::Full));
    tags.take(Depth::Full);
    assert!(!tags.may_take(Depth::Full), "the one tag is held");
    assert_ne!(tags.generation(), before);
}

/// [`SchedTags::generation`]: a new number of tags (`nr_requests` written: 6.18's
/// `blk_mq_update_nr_requests` resizes the scheduler tags, after which a request sleeping in
/// `blk_mq_get_tag` may take one of the new ones) moves it on. With 2 tags both held, a
/// request may not take one; raised to 4, it may, so the generation must differ from the
/// one that refused it.
#[test]
fn a_new_number_of_tags_moves_the_generation() {
    let mut tags = SchedTags::new(2, 2);
    tags.take(Depth::Full);
    tags.take(Depth::Full);
    let (before, could) = (tags.generation(), tags.may_take(Depth::Full));
    assert!(!could, "both tags are held");
    tags.set_depth(4);
    assert!(tags.may_take(Depth::Full), "two new tags are free");
    assert_ne!(tags.generation(), before);
}

/// `sbitmap_find_bit` (lib/sbitmap.c, 6.17 on): a word where `__map_depth_with_shallow`
/// gives the request no bit is not searched at all (`if (depth)`), so its freed bits are
/// not folded back there (`sbitmap_deferred_clear` runs only inside
/// `sbitmap_find_bit_in_word`). 8 tags in 2-bit words: CPU 0 takes bits 0, 1 and 2 (its hint
/// then 3, in word 1); bit 2 is freed on CPU 1 and waits in word 1's cleared mask, CPU 1's
/// hint on it. CPU 1's request of shallow depth 1 (bit 0 of word 0 only) starts in word 1,
/// passes words 1 to 3 (depth 0 in each) and finds bit 0 held. CPU 0's next full-depth
/// search then starts in word 1 and takes bit 3, its free bit, before bit 2 is folded back;
/// had the shallow search folded it, CPU 0 would take bit 2.
#[test]
fn a_shallow_search_leaves_the_freed_bits_of_a_word_it_may_not_use() {
    let mut bits = TagBits::new(8);
    let first: Vec<_> = (0..3).map(|_| bits.take(None, 0)).collect();
    assert_eq!(first, [Some(0), Some(1), Some(2)]);
    bits.release(2, 1);
    assert_eq!(bits.take(Some(1), 1), None, "bit 0 is held");
    assert_eq!(bits.take(None, 0), Some(3), "bit 2 is not folded back yet");
}
