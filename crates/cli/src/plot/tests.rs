//! Every plot renders well-formed SVG holding the series it was given: checked by parsing
//! the elements, not by comparing pixels.

use super::*;

/// A parsed element: its name, attributes and text.
#[derive(Debug)]
struct Element {
    name: String,
    attrs: Vec<(String, String)>,
    text: String,
}

/// Parse `svg` as XML far enough to check it: tags balanced and properly nested, attributes
/// quoted, one root `<svg>`; returns every element in document order.
fn parse(svg: &str) -> Vec<Element> {
    let mut out: Vec<Element> = Vec::new();
    let mut open: Vec<(String, usize)> = Vec::new();
    let mut rest = svg.trim();
    if let Some(r) = rest.strip_prefix("<?xml") {
        rest = &r[r.find("?>").expect("xml declaration closed") + 2..];
    }
    let mut roots = 0;
    while let Some(lt) = rest.find('<') {
        let text = &rest[..lt];
        if let Some(&(_, i)) = open.last() {
            out[i].text.push_str(text.trim());
        } else {
            assert!(text.trim().is_empty(), "text outside the root: {text:?}");
        }
        let gt = rest[lt..].find('>').expect("tag closed") + lt;
        let tag = &rest[lt + 1..gt];
        rest = &rest[gt + 1..];
        if let Some(name) = tag.strip_prefix('/') {
            let (o, _) = open.pop().expect("closing tag without an opening one");
            assert_eq!(o, name.trim(), "tags nested wrongly");
            continue;
        }
        let self_closing = tag.ends_with('/');
        let tag = tag.trim_end_matches('/');
        let (name, mut attrs_text) = tag.split_once(char::is_whitespace).unwrap_or((tag, ""));
        let mut attrs = Vec::new();
        loop {
            attrs_text = attrs_text.trim_start();
            if attrs_text.is_empty() {
                break;
            }
            let eq = attrs_text.find('=').expect("attribute has a value");
            let key = attrs_text[..eq].trim().to_string();
            let v = &attrs_text[eq + 1..];
            assert!(v.starts_with('"'), "attribute {key} quoted");
            let end = v[1..].find('"').expect("attribute value closed") + 1;
            attrs.push((key, v[1..end].to_string()));
            attrs_text = &v[end + 1..];
        }
        if open.is_empty() {
            roots += 1;
            assert_eq!(name, "svg", "the root is <svg>");
        }
        out.push(Element {
            name: name.to_string(),
            attrs,
            text: String::new(),
        });
        if !self_closing {
            open.push((name.to_string(), out.len() - 1));
        }
    }
    assert!(open.is_empty(), "unclosed tags: {open:?}");
    assert!(rest.trim().is_empty());
    assert_eq!(roots, 1);
    out
}

impl Element {
    fn attr(&self, k: &str) -> Option<&str> {
        self.attrs.iter().find(|a| a.0 == k).map(|a| a.1.as_str())
    }
}

fn hex(i: usize) -> String {
    let c = color(i);
    format!("#{:02X}{:02X}{:02X}", c.0, c.1, c.2)
}

/// Polylines drawn in series `i`'s colour with more than `min_points` points.
fn lines_of(els: &[Element], i: usize, min_points: usize) -> usize {
    els.iter()
        .filter(|e| e.name == "polyline" && e.attr("stroke") == Some(hex(i).as_str()))
        .filter(|e| e.attr("points").map_or(0, |p| p.split_whitespace().count()) > min_points)
        .count()
}

fn texts(els: &[Element]) -> Vec<&str> {
    els.iter()
        .filter(|e| e.name == "text")
        .map(|e| e.text.as_str())
        .collect()
}

fn io(job: usize, write: bool, sector: u64, t: f64) -> Io {
    Io {
        job,
        write,
        sector,
        sectors: 8,
        inserted: t,
        dispatched: t + 0.001,
        completed: t + 0.004,
        merged: false,
    }
}

#[test]
fn latency_cdf_draws_one_line_per_series_with_its_legend() {
    let series = vec![
        Samples {
            label: "deadline reader".into(),
            values: (1..=500).map(|i| i as f64 * 0.1).collect(),
        },
        Samples {
            label: "as reader".into(),
            values: (1..=2000).map(|i| i as f64).collect(),
        },
        Samples {
            label: "as writer".into(),
            values: vec![0.0, 5.0, 7.0],
        },
    ];
    let els = parse(&cdf::latency_cdf("reader latency", &series).unwrap());
    for i in 0..3 {
        assert_eq!(lines_of(&els, i, 2), 1, "series {i}");
    }
    let t = texts(&els);
    for l in [
        "reader latency",
        "deadline reader",
        "as reader",
        "as writer",
    ] {
        assert!(t.contains(&l), "{l} in {t:?}");
    }
    assert!(
        t.iter().any(|s| s.contains("log")),
        "the x axis says it is logarithmic"
    );
}

#[test]
fn cdf_points_end_at_one_and_rise() {
    let v: Vec<f64> = (0..10_000).map(f64::from).collect();
    let p = cdf::cdf_points(&v);
    assert!(p.len() <= 700);
    assert_eq!(p.last(), Some(&(9999.0, 1.0)));
    assert!(p.windows(2).all(|w| w[0].0 <= w[1].0 && w[0].1 < w[1].1));
}

#[test]
fn throughput_bins_bytes_per_100_ms_and_draws_each_job() {
    // 1 MB completing every 10 ms for a second: 100 MB/s in every bin.
    let a: Vec<(f64, u64)> = (0..100)
        .map(|i| ((i as f64 + 0.5) * 0.01, 1_000_000))
        .collect();
    let bins = throughput::binned_mb_s(&a, throughput::BIN_S, 1.0);
    assert_eq!(bins.len(), 10);
    assert!(bins.iter().all(|b| (b.1 - 100.0).abs() < 1e-9), "{bins:?}");
    let series = vec![
        Timed {
            label: "reader".into(),
            events: a,
        },
        Timed {
            label: "writer".into(),
            events: vec![(0.5, 4_000_000)],
        },
    ];
    let els = parse(&throughput::throughput("MB/s", &series, throughput::BIN_S).unwrap());
    assert_eq!(lines_of(&els, 0, 5), 1);
    assert_eq!(lines_of(&els, 1, 5), 1);
    let t = texts(&els);
    assert!(t.contains(&"reader") && t.contains(&"writer"), "{t:?}");
    assert!(t.iter().any(|s| s.contains("100 ms bins")), "{t:?}");
}

#[test]
fn seek_map_marks_reads_and_writes_apart() {
    let mut ios: Vec<Io> = (0..300)
        .map(|i| io(0, false, 1000 + i * 8, i as f64 * 0.01))
        .collect();
    ios.extend((0..200).map(|i| io(1, true, 5_000_000 + i * 256, i as f64 * 0.01)));
    // A merged request moves no head: not drawn.
    ios.push(Io {
        merged: true,
        sector: 99_999_999,
        ..io(1, true, 0, 1.0)
    });
    let els = parse(&seek_map::seek_map("deadline", &ios).unwrap());
    let dots = |i: usize| {
        els.iter()
            .filter(|e| e.name == "circle" && e.attr("fill") == Some(hex(i).as_str()))
            .count()
    };
    // Thinned to pixel cells, but both directions are there, the legend's dot besides.
    assert!(dots(0) > 50, "reads: {}", dots(0));
    assert!(dots(1) > 50, "writes: {}", dots(1));
    let t = texts(&els);
    assert!(t.contains(&"read") && t.contains(&"write"), "{t:?}");
    assert!(t.iter().any(|s| s.contains("500 requests")), "{t:?}");
}

#[test]
fn seek_map_of_a_long_run_stays_small() {
    let ios: Vec<Io> = (0..200_000u64)
        .map(|i| io(0, i % 3 == 0, (i * 7919) % 10_000_000, i as f64 * 0.001))
        .collect();
    let svg = seek_map::seek_map("long", &ios).unwrap();
    assert!(svg.len() < 30 << 20, "{} bytes", svg.len());
    parse(&svg);
}

#[test]
fn seek_map_of_a_million_scattered_requests_is_capped() {
    // 10^6 requests scattered over the disk filled about 540,000 pixel cells: 42 MB of SVG
    // (round 19). Binned to at most MAX_POINTS dots, and the caption says so.
    let ios: Vec<Io> = (0..1_000_000u64)
        .map(|i| io(0, i % 3 == 0, (i * 7919) % 100_000_000, i as f64 * 0.0001))
        .collect();
    let svg = seek_map::seek_map("scattered", &ios).unwrap();
    assert!(svg.len() < 3 << 20, "{} bytes", svg.len());
    let els = parse(&svg);
    let dots = els.iter().filter(|e| e.name == "circle").count();
    assert!(dots <= seek_map::MAX_POINTS + 2, "{dots} dots");
    assert!(dots > seek_map::MAX_POINTS / 2, "{dots} dots");
    let t = texts(&els);
    assert!(
        t.iter()
            .any(|s| s.contains("1000000 requests") && s.contains("pixel bins")),
        "{t:?}"
    );
}

#[test]
fn queue_depth_counts_overlapping_requests() {
    let steps = queue_depth::depth_steps([(0.0, 2.0), (1.0, 3.0), (2.0, 4.0)].into_iter());
    assert_eq!(
        steps,
        vec![(0.0, 1.0), (1.0, 2.0), (2.0, 2.0), (3.0, 1.0), (4.0, 0.0)]
    );
    let ios: Vec<Io> = (0..100)
        .map(|i| io(0, false, i, i as f64 * 0.002))
        .collect();
    let els = parse(&queue_depth::queue_depth("depth", &ios).unwrap());
    assert_eq!(lines_of(&els, 0, 10), 1, "in the scheduler");
    assert_eq!(lines_of(&els, 1, 10), 1, "at the device");
    let t = texts(&els);
    assert!(
        t.contains(&"in the scheduler") && t.contains(&"at the device"),
        "{t:?}"
    );
}

#[test]
fn group_share_sums_to_one_per_bin() {
    let a: Vec<(f64, u64)> = (0..100).map(|i| (i as f64 * 0.01, 3000)).collect();
    let b: Vec<(f64, u64)> = (0..100).map(|i| (i as f64 * 0.01, 1000)).collect();
    let series = vec![
        Timed {
            label: "A".into(),
            events: a,
        },
        Timed {
            label: "B".into(),
            events: b,
        },
    ];
    let s = share::shares(&series, 0.1);
    for (x, y) in s[0].iter().zip(&s[1]) {
        assert!(
            (x.1 - 0.75).abs() < 1e-9 && (y.1 - 0.25).abs() < 1e-9,
            "{x:?} {y:?}"
        );
    }
    let els = parse(&share::group_share("share", &series, 0.1).unwrap());
    assert_eq!(lines_of(&els, 0, 5), 1);
    assert_eq!(lines_of(&els, 1, 5), 1);
}

#[test]
fn validation_cdfs_draw_measured_and_simulated_per_drive() {
    let sim: Vec<f64> = (1..100).map(f64::from).collect();
    let meas: Vec<f64> = (1..100).map(|i| f64::from(i) * 1.1).collect();
    let d = |name| validation::DriveCdfs {
        drive: name,
        demerit_ms: 0.1,
        simulated_ms: &sim,
        measured_ms: &meas,
    };
    let els = parse(&validation::validation_cdfs(&[d("cheetah9lp"), d("atlas10k")]).unwrap());
    assert_eq!(lines_of(&els, 0, 5), 2, "measured, one per drive");
    assert_eq!(lines_of(&els, 1, 5), 2, "elevator, one per drive");
    let t = texts(&els);
    assert!(
        t.iter().any(|s| s.starts_with("cheetah9lp"))
            && t.iter().any(|s| s.starts_with("atlas10k"))
    );
}
#[test]
fn lines_draw_each_series_with_its_points() {
    let series = vec![
        Series {
            label: "anticipatory".into(),
            points: vec![(0.0, 90.0), (2.0, 80.0), (4.0, 85.0)],
        },
        Series {
            label: "deadline".into(),
            points: vec![(0.0, 400.0), (2.0, 400.0), (4.0, 400.0)],
        },
    ];
    let els = parse(&lines::lines("sweep", "antic_expire", "seconds", &series).unwrap());
    assert_eq!(lines_of(&els, 0, 2), 1);
    assert_eq!(lines_of(&els, 1, 2), 1);
    let dots = els.iter().filter(|e| e.name == "circle").count();
    assert_eq!(dots, 6);
}
