//! The interactive page's charts: each plot's lines as JSON for uPlot, and the uPlot library
//! itself, vendored from the npm registry (`vendor/fetch-uplot.sh`, checked by SHA-256) and
//! compiled into the binary so that the page works offline as one file.

use serde_json::{json, Value};

use mpquic_plot::palette::css;

use super::chart::{intervals, Line, Panel, Style};
use super::connection::Connection;
use super::fit::YAxis;

/// uPlot's version (vendored).
pub const UPLOT_VERSION: &str = include_str!("vendor/uPlot.VERSION");
/// uPlot, minified (MIT; its license text is `UPLOT_LICENSE`, put into the page).
pub const UPLOT_JS: &str = include_str!("vendor/uPlot.iife.min.js");
/// uPlot's stylesheet.
pub const UPLOT_CSS: &str = include_str!("vendor/uPlot.min.css");
/// uPlot's license.
pub const UPLOT_LICENSE: &str = include_str!("vendor/uPlot.LICENSE");
/// The page's own script: builds the charts, toggles, zoom and pan, and the self-check.
pub const PAGE_JS: &str = include_str!("page.js");

/// Round to 4 significant digits (the JSON stays small; plots cannot show more).
fn round(v: f64) -> f64 {
    if v == 0.0 || !v.is_finite() {
        return 0.0;
    }
    let digits = 3 - v.abs().log10().floor() as i32;
    // Dividing by an exact power of ten (never multiplying by an inexact 0.01) keeps the
    // printed decimal short.
    if digits >= 0 {
        let f = 10f64.powi(digits);
        (v * f).round() / f
    } else {
        let f = 10f64.powi(-digits);
        (v / f).round() * f
    }
}

fn series(l: &Line) -> Value {
    json!({
        "label": l.label,
        "path": l.path,
        "color": css(l.color),
        "dash": l.style == Style::Dashed,
        "marks": l.style == Style::Marks,
        // Times to the microsecond.
        "t": l.points.iter().map(|p| (p.0 * 1000.0).round() / 1000.0).collect::<Vec<_>>(),
        "v": l.points.iter().map(|p| round(p.1)).collect::<Vec<_>>(),
    })
}

/// One chart: its lines, the shared time range and y axis, and the suppressed/eliminated bands.
pub fn chart(panel: Panel, conn: &Connection, lines: &[Line], x_max: f64, axis: YAxis) -> Value {
    let bands: Vec<Value> = intervals(conn, conn.end_time.min(x_max))
        .into_iter()
        .map(|(path, from, to, eliminated)| json!([path, from, to, eliminated]))
        .collect();
    json!({
        "panel": panel.slug(),
        "series": lines.iter().map(series).collect::<Vec<_>>(),
        "x_max": x_max,
        "top": axis.top,
        "note": axis.note(),
        "bands": bands,
    })
}

/// Whether every value of `lines` is zero (nothing to see: the page says so instead).
pub fn all_zero(lines: &[Line]) -> bool {
    lines.iter().all(|l| l.points.iter().all(|p| p.1 == 0.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_keep_four_significant_digits() {
        assert_eq!(round(123456.0), 123500.0);
        assert_eq!(round(0.012345), 0.01235);
        assert_eq!(round(24.0), 24.0);
        assert_eq!(round(0.0), 0.0);
    }

    #[test]
    fn the_vendored_library_is_the_stated_version() {
        let version = UPLOT_VERSION.trim();
        assert!(
            UPLOT_JS.starts_with(&format!("/*! https://github.com/leeoniya/uPlot (v{version})"))
        );
        assert!(UPLOT_LICENSE.contains("MIT"));
    }
}
