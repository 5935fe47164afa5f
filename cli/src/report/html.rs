//! The self-contained HTML page: summary table, notes, and plots inlined as SVG.

use std::fmt::Write;

use serde_json::Value;

use super::connection::Connection;
use super::interactive::{PAGE_JS, UPLOT_CSS, UPLOT_JS, UPLOT_LICENSE, UPLOT_VERSION};
use super::plots::episode_legend;
use super::Run;
use mpquic_plot::palette::{css, path_color};

/// Escape text for HTML.
pub fn esc(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

fn mib(b: u64) -> String {
    format!("{:.1} MiB", b as f64 / (1 << 20) as f64)
}

/// One plot on the page.
pub enum Plot {
    /// A static SVG, inlined.
    Svg(String),
    /// An interactive chart (`interactive::chart`).
    Chart(Value),
    /// Every value is zero: said in words instead of a flat line.
    Empty,
}

/// A row of plots: the same panel for every run.
pub struct PlotRow {
    /// Row heading.
    pub heading: String,
    /// Per run, its plot (None: that run has no such connection).
    pub cells: Vec<Option<Plot>>,
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
code{background:#f2f2f2;padding:1px 4px}\
#controls{position:sticky;top:0;z-index:10;background:#fafafa;border:1px solid #ddd;padding:4px 8px;font-size:13px}\
#controls label{margin-right:10px;white-space:nowrap}#controls .help{color:#666}\
.ptitle{font-size:13px;text-align:center}.clip{color:#b00;font-size:11px;text-align:right}\
.empty{width:620px;height:60px;color:#666;font-size:13px;display:flex;align-items:center;justify-content:center;border:1px dashed #ccc}\
.mpq-chart .u-legend{font-size:11px}.mpq-chart .u-legend th{font-weight:normal}";

/// Render the page.
pub fn page(p: &Page<'_>) -> String {
    let mut h = String::new();
    let _ = write!(
        h,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{0}</title>\
         <style>{STYLE}</style><style>{UPLOT_CSS}</style></head><body>\n<h1>{0}</h1>\n\
         <p>Regenerate with: <code>{1}</code></p>\n",
        esc(p.title),
        esc(p.command)
    );
    for n in p.notes {
        let _ = writeln!(h, "<div class=\"note\">{}</div>", esc(n));
    }
    h.push_str(&summary_table(p.runs));
    h.push_str(&controls(p.runs));
    let _ = writeln!(h, "<p>Episodes: {}</p>", episode_legend());
    let _ = writeln!(
        h,
        "<p>All plots share the time axis (ms since each trace's start) and, per row, the y axis, \
         fitted to the data: where a few values stand far above the rest, the axis stops at the \
         99.5th percentile + 10%, the plot says so in red and those values are drawn at its top. \
         Series are downsampled into fixed time buckets; rates are per bucket of one time grid. \
         Shaded bands: a path is suppressed (red) or eliminated (purple). The min-max bars per \
         bucket are in the static plots (<code>plots/*.svg</code>).</p>"
    );
    let mut charts = Vec::new();
    for (heading, rows) in &p.sections {
        let _ = writeln!(h, "<h2>{}</h2>\n<table class=\"plots\"><tr>", esc(heading));
        for (ri, run) in p.runs.iter().enumerate() {
            let _ = write!(h, "<th class=\"run-{ri}\">{}</th>", esc(&run.label));
        }
        h.push_str("</tr>\n");
        for row in rows {
            let _ = write!(h, "<tr>");
            for (ri, cell) in row.cells.iter().enumerate() {
                let _ = write!(h, "<td class=\"run-{ri}\" title=\"{}\">", esc(&row.heading));
                if let Some(plot) = cell {
                    plot_cell(&mut h, &row.heading, plot, &mut charts);
                }
                h.push_str("</td>");
            }
            h.push_str("</tr>\n");
        }
        h.push_str("</table>\n");
    }
    // JSON inside <script>: only "</" could end the element early.
    let data = serde_json::to_string(&charts).unwrap_or_default().replace("</", "<\\/");
    let _ = write!(
        h,
        "<details><summary>Charts drawn with uPlot {} (MIT license), embedded</summary>\
         <pre>{}</pre></details>\n\
         <script type=\"application/json\" id=\"mpq-charts\">{data}</script>\n\
         <script>{UPLOT_JS}</script>\n<script>{PAGE_JS}</script>\n</body></html>\n",
        esc(UPLOT_VERSION.trim()),
        esc(UPLOT_LICENSE)
    );
    h
}

/// One plot: inline SVG, a chart's placeholder (its spec goes to `charts`), or the words for an
/// all-zero panel.
fn plot_cell<'a>(h: &mut String, heading: &str, plot: &'a Plot, charts: &mut Vec<&'a Value>) {
    match plot {
        Plot::Svg(svg) => h.push_str(svg),
        Plot::Chart(chart) => {
            let _ = write!(
                h,
                "<div class=\"ptitle\">{}</div><div class=\"mpq-chart\" data-chart=\"{}\"></div>",
                esc(heading),
                charts.len()
            );
            charts.push(chart);
        }
        Plot::Empty => {
            let _ = write!(
                h,
                "<div class=\"ptitle\">{}</div><div class=\"empty\">every value is 0 in this \
                 trace</div>",
                esc(heading)
            );
        }
    }
}

/// The sticky bar: per-path and per-run toggles, zoom help.
fn controls(runs: &[Run]) -> String {
    let mut paths: Vec<u64> =
        runs.iter().flat_map(|r| &r.connections).flat_map(|c| c.paths.keys().copied()).collect();
    paths.sort_unstable();
    paths.dedup();
    let mut h = String::from("<div id=\"controls\">Paths:");
    for id in paths {
        let _ = write!(
            h,
            "<label><input type=\"checkbox\" class=\"path-toggle\" data-path=\"{id}\" checked>\
             <span class=\"sw\" style=\"background:{}\"></span>path {id}</label>",
            css(path_color(id))
        );
    }
    h.push_str(" Runs:");
    for (ri, run) in runs.iter().enumerate() {
        let _ = write!(
            h,
            "<label><input type=\"checkbox\" class=\"run-toggle\" data-run=\"{ri}\" checked>{}\
             </label>",
            esc(&run.label)
        );
    }
    h.push_str(
        " <button id=\"reset-zoom\">reset zoom</button> <span class=\"help\">drag: zoom to a \
         time range; wheel: zoom; shift+drag: pan; double-click: reset; hover: values; click a \
         legend entry: hide it in that plot</span></div>\n",
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
    let mut kinds: Vec<(&str, usize)> = Vec::new();
    for e in &c.episodes {
        match kinds.iter_mut().find(|k| k.0 == e.kind) {
            Some(k) => k.1 += 1,
            None => kinds.push((e.kind, 1)),
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
