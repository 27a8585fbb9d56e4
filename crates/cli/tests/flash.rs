//! `elevator reproduce flash`: a QD1 reader beside random writers on the simulated 980 PRO
//! (one QD128 writer on the built-in drive; the study's eight drives, host and 8 writers on the
//! drive stated for and fitted to its writers), against the ICPE'24 pattern and its fig-11c
//! figures.

use serde_json::Value;

mod common {
    pub mod elevator;
}
use common::elevator::elevator;

fn reproduce(seeds: &str) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("flash.json");
    let (ok, _, err) = elevator(&[
        "reproduce",
        "flash",
        "--seeds",
        seeds,
        "--json",
        json.to_str().unwrap(),
    ]);
    assert!(ok, "{err}");
    serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap()
}

fn published<'a>(v: &'a Value, config: &str) -> &'a Value {
    v["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["config"] == config && r["source"] == "published")
        .unwrap_or_else(|| panic!("no published row for {config}"))
}

fn ours<'a>(v: &'a Value, config: &str, state: &str) -> &'a Value {
    v["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["config"] == config && r["source"] == "elevator" && r["state"] == state)
        .unwrap_or_else(|| panic!("no {state} row for {config}"))
}

fn mean(r: &Value, field: &str) -> f64 {
    r[field]["mean"].as_f64().unwrap()
}

#[test]
fn a_reader_beside_writers_kyber_cuts_by_holding_writes_back_bfq_where_the_host_does() {
    // Two seeds (a run simulates 30 s of a 21 K IOPS writer, or 15 s of 130-180 K: one
    // invocation, no rerun).
    let v = reproduce("2");
    assert_eq!(v["seeds"], serde_json::json!([1, 2]));
    let none = ours(&v, "none", "steady");
    assert_eq!(
        none["reader_p99_us"]["per_seed"].as_array().unwrap().len(),
        2
    );

    // The reader alone beside the published figure (fig-2, QD1 under none: 66 us mean).
    let alone = ours(&v, "reader alone", "steady");
    assert_eq!(mean(published(&v, "reader alone"), "reader_mean_us"), 66.0);
    let m = mean(alone, "reader_mean_us");
    assert!((m / 66.0 - 1.0).abs() < 0.15, "{m} us");

    // Interference: a read waits for the program under way on its plane and, with the writer's
    // 128 holding every front-end slot, for the next slot freed (a write admitted as GC frees
    // room); not for the writer's 128 themselves: they are another NVMe submission queue's
    // (the front end's queue scope; with the drive scope it waited for them all, 6.3 ms, more
    // than a write's 6.0).
    assert!(mean(none, "reader_p99_us") > 5.0 * mean(alone, "reader_p99_us"));
    assert!(mean(none, "reader_mean_us") < 0.2 * mean(none, "writer_mean_us"));
    // The writes stay within kyber's 10 ms write target, so kyber may hold them back.
    assert!(mean(none, "writer_mean_us") < 10_000.0);

    // The published pattern: none and mq-deadline do not cut the reader's p99; kyber does, at
    // its default target and at 250 us, by cutting the writes it lets into the drive below the
    // front end's 128 slots (a read then finds a slot free), and the writer keeps its rate (GC,
    // not the depth, sets it).
    for config in ["none", "mq-deadline"] {
        assert_eq!(published(&v, config)["cuts_p99"], false);
        assert_eq!(ours(&v, config, "steady")["cuts_p99"], false, "{config}");
    }
    for config in ["kyber", "kyber read_lat_nsec=250000"] {
        let k = ours(&v, config, "steady");
        assert_eq!(k["cuts_p99"], true, "{config}");
        assert!(mean(k, "writer_iops") > 0.9 * mean(none, "writer_iops"));
    }
    // The block layer (requests in the scheduler and the drive): the drive, not the host,
    // bounds our writer, so all its 128 writes (and the reader's one) are there under every
    // scheduler, kyber's held in kyber. The study's none had most of its 128 per drive there;
    // its bfq under 10: its host admitted writes no faster than the drive took them, which is
    // why its reader found no queue (docs/ssd-model.md, "bfq: the study's cut is its host's").
    for config in [
        "none",
        "mq-deadline",
        "kyber",
        "kyber read_lat_nsec=250000",
        "bfq",
    ] {
        let l = mean(ours(&v, config, "steady"), "in_block_layer");
        assert!((127.0..=129.5).contains(&l), "{config}: {l}");
    }
    assert!(mean(published(&v, "none"), "in_block_layer") > 100.0);
    assert!(mean(published(&v, "bfq"), "in_block_layer") < 10.0);
    // In the drive: all of them under none; under kyber its write domain's depth: at 250 us a
    // few, at the default 2 ms three quarters (one cut of kyber_timer_fn's ratchet: the reads'
    // p90 is within 2 ms once the slots are free, so no window cuts again); and all of them
    // under bfq too: on a non-rotational drive with queueing the writer's queue, created just
    // after the reader's, is merged into it at once and for good (bfq_do_early_stable_merge),
    // so bfq_limit_depth sees one sync queue and no other to leave tags for.
    let in_drive = |config: &str| mean(ours(&v, config, "steady"), "in_drive");
    assert!(in_drive("none") > 127.0, "{}", in_drive("none"));
    assert!(
        in_drive("kyber") < 0.8 * in_drive("none"),
        "{}",
        in_drive("kyber")
    );
    let k = in_drive("kyber read_lat_nsec=250000");
    assert!(k < 10.0, "{k}");
    let b = in_drive("bfq");
    assert!(b > 127.0, "{b}");
    // So bfq does not cut here: reported against the published pattern.
    assert_eq!(published(&v, "bfq")["cuts_p99"], true);
    assert!(ours(&v, "bfq", "steady")["cuts_p99"].is_boolean());

    // The study's host: eight drives on ten cores, 8 writers of QD16 on this drive each, on the
    // drive stated for sustained writes (one-shot programs, urgent GC) and fitted to the rate
    // the study's drives took writes at (187,783 a drive from 16 writers).
    const EIGHT: &str = "8 drives";
    const AT_8W: &str = "8 drives, at 8w rate";
    let w = mean(ours(&v, "none", EIGHT), "writer_iops");
    assert!((w / 187_783.0 - 1.0).abs() < 0.1, "{w}");
    let w = mean(ours(&v, "none", AT_8W), "writer_iops");
    assert!((w / 131_181.0 - 1.0).abs() < 0.1, "{w}");
    for state in [EIGHT, AT_8W] {
        let none = ours(&v, "none", state);
        let l = mean(none, "in_block_layer");
        assert!(l > 100.0, "{state}: {l}");
        // none and mq-deadline do not cut, as published.
        for config in ["none", "mq-deadline"] {
            assert_eq!(
                ours(&v, config, state)["cuts_p99"],
                false,
                "{state}: {config}"
            );
        }
        // kyber finds congestion, for the study's reason: under none the reader's p90 is past
        // its 2 ms read target (published 2.31 ms; reads wait behind the writes in the drive
        // and for urgent GC on their plane), so kyber shrinks the write domain. At 250 us it
        // cuts the reader's p99.
        assert!(mean(none, "reader_p90_us") > 2000.0, "{state}");
        assert_eq!(
            ours(&v, "kyber read_lat_nsec=250000", state)["cuts_p99"],
            true,
            "{state}"
        );
    }
    // kyber's default cuts the p99 at the 8 writers' rate: with 8 tokens the reads' p90 is
    // still past 2 ms (a quarter of the windows' read samples beyond it), so the next window
    // cuts to 2.
    assert_eq!(ours(&v, "kyber", AT_8W)["cuts_p99"], true);
    // On the drive fitted to 16 writers it cuts once it is down to 2 tokens (0.26-0.27 x
    // none's p99), which takes a rare window: 128 -> 32 -> 8 within 2.2 s, but with 8 tokens
    // the reads' p90 is 1.65 ms and about 1 window in 24 has more than a tenth of its reads
    // past 2 ms, so the cut to 2 comes at a random time, 1.8 to 11 s in, or not within the
    // 15 s run (3 of 16 runs, seeds 1-8 under either timer; then 0.95-0.97 x none's). Whether it
    // comes before the 10 s ramp ends turns on where the windows fall, so a 4% longer timer
    // period moved it out of seed 2's run (docs/kyber.md, "A knife-edge in reproduce flash").
    // So: per seed, the write domain is cut (8 tokens or fewer in the drive besides the
    // read), the p99 is not above none's, and once the domain is at 2 the p99 is cut.
    let k = ours(&v, "kyber", EIGHT);
    let per_seed = |r: &Value, field: &str| -> Vec<f64> {
        r[field]["per_seed"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_f64().unwrap())
            .collect()
    };
    let drive = per_seed(k, "in_drive");
    let over = per_seed(k, "p99_over_none");
    for (seed, (&d, &o)) in drive.iter().zip(&over).enumerate() {
        assert!(d < 10.0, "seed {}: {d} in the drive", seed + 1);
        assert!(o < 1.0, "seed {}: p99 {o} x none's", seed + 1);
        if d < 4.0 {
            assert!(o < 0.8, "seed {}: at 2 tokens, p99 {o} x none's", seed + 1);
        }
    }
    // bfq: its per-device lock and per-I/O work, every core serving eight drives, cap its
    // writers below the drive's rate (published: none's 8 writers 131,181, 16 writers 187,783;
    // bfq's 131,586), so its block layer stays short (published 7.2) and it cuts the reader's
    // p99, for the study's reason. With the drive fitted to the 8 writers' 131 K its cap is
    // about the drive's rate, a queue builds, and it does not cut.
    let b = ours(&v, "bfq", EIGHT);
    assert!(mean(b, "writer_iops") < 0.9 * mean(ours(&v, "none", EIGHT), "writer_iops"));
    assert!(mean(b, "in_block_layer") < 10.0, "{b}");
    assert_eq!(b["cuts_p99"], true);
    let b8 = ours(&v, "bfq", AT_8W);
    assert!(mean(b8, "in_block_layer") > 40.0, "{b8}");
    assert_eq!(b8["cuts_p99"], false);
}
