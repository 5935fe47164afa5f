//! The self-contained HTML page: summary table, notes, and plots inlined as SVG.

use std::fmt::Write;

use super::connection::Connection;
use super::plots::{episode_legend, path_color};
use super::Run;

/// Escape text for HTML.
pub fn esc(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

fn mib(b: u64) -> String {
    format!("{:.1} MiB", b as f64 / (1 << 20) as f64)
}

/// Rows of plots: `(heading, one SVG per run (None: that run has no such connection))`.
pub struct PlotRow {
    /// Row heading.
    pub heading: String,
    /// Per run, the SVG text.
    pub cells: Vec<Option<String>>,
}

/// Everything the page shows.
pub struct Page<'a> {
    /// Title.
    pub title: &'a str,
    /// The command that regenerates the report.
    pub command: &'a str,
    /// Free-text notes (HTML-escaped here).
    pub notes: &'a [String],
    /// The runs.
    pub runs: &'a [Run],
    /// Per connection index: heading and rows.
    pub sections: Vec<(String, Vec<PlotRow>)>,
}

const STYLE: &str = "body{font-family:sans-serif;margin:16px;color:#222}\
table{border-collapse:collapse;margin:8px 0}\
td,th{border:1px solid #ccc;padding:3px 6px;font-size:13px;text-align:left;vertical-align:top}\
table.plots td{padding:0;border:none}table.plots th{border:none;font-size:14px}\
.note{background:#fff6d5;border-left:4px solid #e0b000;padding:4px 8px;margin:4px 0}\
.sw{display:inline-block;width:12px;height:12px;margin:0 3px 0 10px;vertical-align:middle}\
code{background:#f2f2f2;padding:1px 4px}";

/// Render the page.
pub fn page(p: &Page<'_>) -> String {
    let mut h = String::new();
    let _ = write!(
        h,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{0}</title>\
         <style>{STYLE}</style></head><body>\n<h1>{0}</h1>\n\
         <p>Regenerate with: <code>{1}</code></p>\n",
        esc(p.title),
        esc(p.command)
    );
    for n in p.notes {
        let _ = writeln!(h, "<div class=\"note\">{}</div>", esc(n));
    }
    h.push_str(&summary_table(p.runs));
    let _ = write!(h, "<p>Paths:");
    for id in 0..8u64 {
        let c = path_color(id);
        let _ = write!(
            h,
            "<span class=\"sw\" style=\"background:rgb({},{},{})\"></span>path {id}",
            c.0, c.1, c.2
        );
    }
    let _ = writeln!(h, " (colours repeat after 8)</p>\n<p>Episodes: {}</p>", episode_legend());
    let _ = writeln!(
        h,
        "<p>All plots share the time axis (ms since each trace's start) and, per row, the y axis. \
         Series are downsampled into fixed time buckets; shaded bands: a path is suppressed \
         (red) or eliminated (purple).</p>"
    );
    for (heading, rows) in &p.sections {
        let _ = writeln!(h, "<h2>{}</h2>\n<table class=\"plots\"><tr>", esc(heading));
        for run in p.runs {
            let _ = write!(h, "<th>{}</th>", esc(&run.label));
        }
        h.push_str("</tr>\n");
        for row in rows {
            let _ = write!(h, "<tr>");
            for cell in &row.cells {
                match cell {
                    Some(svg) => {
                        let _ = write!(h, "<td title=\"{}\">{svg}</td>", esc(&row.heading));
                    }
                    None => h.push_str("<td></td>"),
                }
            }
            h.push_str("</tr>\n");
        }
        h.push_str("</table>\n");
    }
    h.push_str(
        "<script>\"use strict\";document.body.dataset.ready=\"1\";\
         console.log(\"mpquic report ready: \"+document.querySelectorAll(\"svg\").length+\" plots\");\
         </script>\n</body></html>\n",
    );
    h
}

fn summary_table(runs: &[Run]) -> String {
    let mut h = String::from(
        "<h2>Summary</h2>\n<table><tr><th>run</th><th>connection (file)</th><th>vantage</th>\
         <th>controller / scheduler / ecn</th><th>data</th><th>FCT</th><th>goodput</th>\
         <th>per path: share of stream bytes, CE marks, window cuts</th><th>lost pkts</th>\
         <th>episodes</th><th>trace</th></tr>\n",
    );
    for run in runs {
        for c in &run.connections {
            h.push_str(&summary_row(&run.label, c));
        }
    }
    h.push_str(
        "</table>\n<p>FCT: first stream frame to the first CONNECTION_CLOSE (or the trace's last \
         event if none). Goodput: stream bytes (highest offset per stream) over FCT. Shares count \
         stream payload sent per path, retransmissions included. Lost packets are per connection: \
         noq's <code>packet_lost</code> event does not name the path.</p>\n",
    );
    h
}

fn summary_row(label: &str, c: &Connection) -> String {
    let s = c.summary();
    let shares: Vec<String> = s
        .shares
        .iter()
        .map(|p| {
            format!(
                "path {}: {:.1}% ({}), CE {}, cuts {}",
                p.path,
                p.share * 100.0,
                mib(p.stream_bytes),
                p.ce_marks,
                p.reductions
            )
        })
        .collect();
    let mut kinds: Vec<(String, usize)> = Vec::new();
    for e in &c.episodes {
        match kinds.iter_mut().find(|k| k.0 == e.kind) {
            Some(k) => k.1 += 1,
            None => kinds.push((e.kind.clone(), 1)),
        }
    }
    let episodes: Vec<String> = kinds.iter().map(|(k, n)| format!("{k} ×{n}")).collect();
    let cfg = &c.config;
    let opt = |o: &Option<String>| o.clone().unwrap_or_else(|| "?".into());
    let trace = match &c.partial {
        Some(p) => format!(
            "PARTIAL: cut at line {} (byte {}), valid to {:.1} ms",
            p.line, p.offset, p.last_time
        ),
        None => format!("complete, {} events, {}", c.events, mib(c.file_bytes)),
    };
    format!(
        "<tr><td>{}</td><td>{}</td><td>{}</td><td>{} / {} / {}</td><td>{} {}</td><td>{}</td>\
         <td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n",
        esc(label),
        esc(&c.file.file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default()),
        esc(c.header.vantage.as_deref().unwrap_or("?")),
        esc(&opt(&cfg.controller)),
        esc(&opt(&cfg.scheduler)),
        esc(&opt(&cfg.ecn)),
        mib(s.data_bytes),
        s.direction,
        s.fct_ms.map_or("-".into(), |f| format!(
            "{:.1} ms{}",
            f,
            if s.closed { "" } else { " (no close)" }
        )),
        s.goodput_mbps.map_or("-".into(), |g| format!("{g:.1} Mbit/s")),
        esc(&shares.join("<br>")).replace("&lt;br&gt;", "<br>"),
        s.lost_packets,
        esc(&episodes.join(", ")),
        esc(&trace),
    )
}
