//! The HTML of a report page: one file, its style inline, no script, no external reference.

use super::Block;

/// Escape `s` for HTML text and attribute values.
pub fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            c => o.push(c),
        }
    }
    o
}

const STYLE: &str = "body{font-family:sans-serif;max-width:1000px;margin:2em auto;padding:0 1em;\
color:#222;line-height:1.4}\
table{border-collapse:collapse;margin:0.5em 0 1.5em}\
caption{text-align:left;font-weight:bold;padding:0.3em 0}\
th,td{border:1px solid #bbb;padding:0.2em 0.6em;text-align:right}\
th:first-child,td:first-child{text-align:left}\
th{background:#eee}\
figure{margin:1em 0 2em}\
figure img{max-width:100%;border:1px solid #ddd}\
figcaption{font-size:0.9em;color:#444}\
nav li{margin:0.1em 0}";

/// The page: title, a contents list of the headings, then every block in order.
pub fn page(title: &str, blocks: &[Block]) -> String {
    let mut h = String::new();
    h.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    h.push_str(&format!("<title>{}</title>\n", esc(title)));
    h.push_str(&format!("<style>{STYLE}</style>\n</head>\n<body>\n"));
    h.push_str(&format!("<h1>{}</h1>\n", esc(title)));
    let headings: Vec<&String> = blocks
        .iter()
        .filter_map(|b| match b {
            Block::Heading(t) => Some(t),
            _ => None,
        })
        .collect();
    if headings.len() > 1 {
        h.push_str("<nav><ul>\n");
        for (i, t) in headings.iter().enumerate() {
            h.push_str(&format!("<li><a href=\"#s{i}\">{}</a></li>\n", esc(t)));
        }
        h.push_str("</ul></nav>\n");
    }
    let mut section = 0;
    for b in blocks {
        match b {
            Block::Heading(t) => {
                h.push_str(&format!("<h2 id=\"s{section}\">{}</h2>\n", esc(t)));
                section += 1;
            }
            Block::Para(t) => h.push_str(&format!("<p>{}</p>\n", esc(t))),
            Block::Table {
                caption,
                header,
                rows,
            } => {
                h.push_str(&format!(
                    "<table>\n<caption>{}</caption>\n<tr>",
                    esc(caption)
                ));
                for c in header {
                    h.push_str(&format!("<th>{}</th>", esc(c)));
                }
                h.push_str("</tr>\n");
                for r in rows {
                    h.push_str("<tr>");
                    for c in r {
                        h.push_str(&format!("<td>{}</td>", esc(c)));
                    }
                    h.push_str("</tr>\n");
                }
                h.push_str("</table>\n");
            }
            Block::Plot { file, caption, .. } => {
                h.push_str(&format!(
                    "<figure><img src=\"{}\" alt=\"{}\"><figcaption>{}</figcaption></figure>\n",
                    esc(file),
                    esc(caption),
                    esc(caption)
                ));
            }
        }
    }
    h.push_str("</body>\n</html>\n");
    h
}
