//! The page frame (doctype, inline CSS, Content-Security-Policy) and the small HTML
//! pieces both pages share: escaping, cards and table cells.

use super::sort::{SORT_SCRIPT, SORT_SCRIPT_HASH};
use crate::model::Report;
use std::fmt::Write;

const CSS: &str = "\
:root{--ink:#1f2933;--muted:#5f6b7a;--line:#d9dee5;--panel:#f6f8fa;--hot:#b91c1c}
*{box-sizing:border-box}
html{-webkit-print-color-adjust:exact;print-color-adjust:exact}
body{margin:0;color:var(--ink);background:#fff;font:14px/1.45 system-ui,-apple-system,\"Segoe UI\",Roboto,\"Helvetica Neue\",Arial,sans-serif}
main{max-width:1200px;margin:0 auto;padding:24px 20px 40px}
h1{font-size:24px;margin:0 0 2px;overflow-wrap:anywhere}
h2{font-size:17px;margin:30px 0 6px;padding-bottom:4px;border-bottom:1px solid var(--line)}
h3{font-size:15px;margin:20px 0 6px}
.sub{color:var(--muted);margin:0 0 12px}
.lead{color:var(--muted);margin:0 0 10px;font-size:13px}
.cards{display:grid;grid-template-columns:repeat(auto-fit,minmax(170px,1fr));gap:10px;margin:14px 0}
.card{border:1px solid var(--line);border-radius:6px;padding:8px 12px;background:var(--panel)}
.card .k{font-size:11px;color:var(--muted);text-transform:uppercase;letter-spacing:.05em}
.card .v{font-size:20px;font-weight:650;font-variant-numeric:tabular-nums;overflow-wrap:anywhere}
.card .n{font-size:12px;color:var(--muted);font-variant-numeric:tabular-nums}
.ok{color:#15803d}.bad{color:var(--hot)}.none{color:var(--muted)}
.op-diff tr.only td{background:#fff7ed}
.meter{height:6px;background:#e3e7ec;border-radius:3px;margin-top:4px;overflow:hidden}
.meter>span{display:block;height:100%;background:#4e79a7}
.meter>span.full{background:var(--hot)}
.chips code{margin-right:6px}
.warnings{border-left:4px solid #d97706;background:#fffbeb;padding:6px 12px;margin:12px 0;border-radius:0 6px 6px 0}
.warnings h2{border:0;margin:4px 0;font-size:15px}
.warnings ul{margin:4px 0;padding-left:20px}
svg{display:block;max-width:100%;height:auto;margin:6px 0}
table{border-collapse:collapse;width:100%;font-size:13px;font-variant-numeric:tabular-nums}
th,td{padding:4px 8px;border-bottom:1px solid var(--line);text-align:right;white-space:nowrap}
th{background:var(--panel);font-weight:600}
th.l,td.l{text-align:left}
td.wrap{white-space:normal}
th[data-sort] button{font:inherit;font-weight:600;color:inherit;background:none;border:0;padding:0;cursor:pointer}
th[data-sort] button::after{content:\" ⇅\";color:var(--muted);font-weight:400}
th[aria-sort=descending] button::after{content:\" ▼\";color:var(--ink)}
th[aria-sort=ascending] button::after{content:\" ▲\";color:var(--ink)}
tr.bn td{background:#fdf0ef}
td .hot,.hot{color:var(--hot);font-weight:600}
code{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:12px;background:var(--panel);padding:1px 4px;border-radius:3px}
a{color:#1d4ed8}
.note{color:var(--muted);font-size:12px}
footer{margin-top:32px}
@media print{main{max-width:none;padding:0}section{break-inside:avoid}.card{background:#fff}a{color:inherit}}
";

/// The page's head and the opening of its body. `script`: the page ends with
/// [`SORT_SCRIPT`], which the Content-Security-Policy allows by its hash (no other script
/// runs); without it the policy allows none.
pub(super) fn page_start(s: &mut String, title: &str, script: bool) {
    let scripts = if script {
        format!("; script-src '{SORT_SCRIPT_HASH}'")
    } else {
        String::new()
    };
    w!(
        s,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; \
         style-src 'unsafe-inline'{scripts}\">\n<title>{}</title>\n<style>\n{CSS}</style>\n</head>\n\
         <body>\n<main>\n",
        esc(title)
    );
}

/// The end of a page; `script` as given to [`page_start`].
pub(super) fn page_end(s: &mut String, script: bool) {
    s.push_str("</main>\n");
    if script {
        w!(s, "<script>{SORT_SCRIPT}</script>\n");
    }
    s.push_str("</body>\n</html>\n");
}

/// Text safe in HTML content and in quoted attribute values.
pub(super) fn esc(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// ` · plan P`, or nothing without a plan.
pub(super) fn plan_suffix(r: &Report) -> String {
    r.plan
        .as_ref()
        .map(|p| format!(" · plan {p}"))
        .unwrap_or_default()
}

pub(super) fn verified_html(v: Option<bool>) -> &'static str {
    match v {
        Some(true) => "<span class=\"ok\">✓ verified</span>",
        Some(false) => "<span class=\"bad\">✗ mismatch</span>",
        None => "<span class=\"none\">– not run</span>",
    }
}

/// A summary card; `value` and `note` are HTML.
pub(super) fn card(s: &mut String, key: &str, value: &str, note: &str) {
    w!(
        s,
        "<div class=\"card\"><div class=\"k\">{}</div><div class=\"v\">{value}</div>\
         <div class=\"n\">{note}</div></div>\n",
        esc(key)
    );
}

pub(super) fn th(s: &mut String, title: &str, left: bool) {
    w!(
        s,
        "<th{} scope=\"col\">{}</th>",
        if left { " class=\"l\"" } else { "" },
        esc(title)
    );
}

pub(super) fn td(s: &mut String, text: &str, left: bool) {
    w!(
        s,
        "<td{}>{}</td>",
        if left { " class=\"l\"" } else { "" },
        esc(text)
    );
}

/// Distinct values of `f` over `reports`, in order of first appearance, joined by `, `.
pub(super) fn distinct(reports: &[Report], f: impl Fn(&Report) -> &str) -> String {
    let mut seen: Vec<&str> = Vec::new();
    for r in reports {
        if !seen.contains(&f(r)) {
            seen.push(f(r));
        }
    }
    seen.join(", ")
}
