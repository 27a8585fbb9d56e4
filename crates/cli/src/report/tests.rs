//! The page: escaped text, every table and plot, no reference outside its directory.

use super::*;

#[test]
fn a_page_holds_its_tables_and_plots_and_nothing_from_the_network() {
    let dir = tempfile::tempdir().unwrap();
    let mut r = Report::new("a <test> & more");
    r.heading("one");
    r.para("text with \"quotes\"");
    r.table("t", &["a", "b"], &[vec!["1".into(), "<2>".into()]]);
    r.plot(
        "Seek map: deadline",
        "cap",
        "<svg xmlns=\"http://www.w3.org/2000/svg\"></svg>".into(),
    );
    r.plot("Seek map: deadline", "again", "<svg></svg>".into());
    assert_eq!(r.counts(), (1, 2));
    let page = r.write(dir.path()).unwrap();
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(
        html.contains("<title>a &lt;test&gt; &amp; more</title>"),
        "{html}"
    );
    assert!(html.contains("<td>&lt;2&gt;</td>"));
    assert!(html.contains("src=\"seek-map-deadline.svg\""));
    assert!(html.contains("src=\"seek-map-deadline-2.svg\""));
    assert!(dir.path().join("seek-map-deadline.svg").is_file());
    assert!(dir.path().join("seek-map-deadline-2.svg").is_file());
    assert!(!html.contains("<script"));
    assert!(!html.contains("http"), "{html}");
}

#[test]
fn an_inert_sink_computes_no_plot() {
    let s = Sink::new(false, "x");
    s.plot("p", "c", || panic!("computed a plot nobody asked for"))
        .unwrap();
    s.table("t", &["a"], &[]);
    assert!(!s.is_on());
}
