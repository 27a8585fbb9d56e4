//! Checks of a `--report DIR` page.

use std::path::{Path, PathBuf};

/// The page's tables and the files of its images, after checking it references nothing
/// outside its directory, needs no script and that every image draws something.
pub fn check_page(dir: &Path) -> (usize, Vec<PathBuf>) {
    let html = std::fs::read_to_string(dir.join("index.html")).unwrap();
    assert!(
        !html.contains("http://") && !html.contains("https://"),
        "a network reference"
    );
    assert!(!html.contains("<script"), "the page needs no JavaScript");
    assert!(!html.contains("<link"), "the page loads no style sheet");
    let tables = html.matches("<table>").count();
    let mut images = Vec::new();
    for part in html.split("<img src=\"").skip(1) {
        let src = &part[..part.find('"').unwrap()];
        assert!(!src.contains('/') && src.ends_with(".svg"), "{src}");
        let p = dir.join(src);
        let svg = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{src}: {e}"));
        assert!(svg.trim_start().starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
        // The SVG namespace is a name, not a fetch; nothing else may point outside.
        let without_ns = svg.replace("xmlns=\"http://www.w3.org/2000/svg\"", "");
        assert!(
            !without_ns.contains("http://") && !without_ns.contains("https://"),
            "{src} references the network"
        );
        assert!(
            svg.contains("<polyline") || svg.contains("<circle"),
            "{src} draws nothing"
        );
        images.push(p);
    }
    (tables, images)
}
