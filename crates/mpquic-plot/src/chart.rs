//! Chart setups shared by every plot: SVG files, stacked panels, lines with a legend, sweep lines
//! with min-max bars.

use std::fmt::Display;
use std::ops::Range;
use std::path::Path;

use plotters::coord::ranged1d::AsRangedCoord;
use plotters::coord::ranged1d::ValueFormatter;
use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
use plotters::prelude::*;

/// Drawing failed (the backend's error, as text).
#[derive(Debug, thiserror::Error)]
#[error("plotting failed: {0}")]
pub struct PlotError(String);

impl PlotError {
    /// The backend's error, for callers that draw into the areas of [`stacked_svg`] themselves.
    pub fn of(e: impl Display) -> PlotError {
        PlotError(e.to_string())
    }
}

/// A panel's chart: f64 on x, `Y` (linear or log f64) on y.
pub type Chart<'a, DB, Y = RangedCoordf64> = ChartContext<'a, DB, Cartesian2d<RangedCoordf64, Y>>;

/// Panels stacked top to bottom in an SVG file of `width` pixels, `panel_height` per panel, under
/// a `title` when given; the caller draws into the returned areas and then calls
/// [`DrawingArea::present`] on any of them (or lets them drop).
pub fn stacked_svg<'a>(
    path: &'a Path,
    width: u32,
    panel_height: u32,
    panels: usize,
    title: Option<&str>,
) -> Result<Vec<DrawingArea<SVGBackend<'a>, Shift>>, PlotError> {
    let title_height = if title.is_some() { 40 } else { 0 };
    let height = panel_height * panels.max(1) as u32 + title_height;
    let root = SVGBackend::new(path, (width, height)).into_drawing_area();
    root.fill(&WHITE).map_err(PlotError::of)?;
    let root = match title {
        Some(title) => root.titled(title, ("sans-serif", 20)).map_err(PlotError::of)?,
        None => root,
    };
    Ok(root.split_evenly((panels.max(1), 1)))
}

/// The axes of a panel.
pub struct Axes<'t, Y> {
    /// What x is, with its unit.
    pub x_label: &'t str,
    /// What y is, with its unit.
    pub y_label: &'t str,
    /// The x range.
    pub x: Range<f64>,
    /// The y range: `lo..hi`, or `(lo..hi).log_scale()`.
    pub y: Y,
}

/// One panel: an optional caption, labelled axes and a mesh.
pub fn panel<'a, DB, Y>(
    area: &'a DrawingArea<DB, Shift>,
    caption: Option<&str>,
    axes: Axes<'_, Y>,
) -> Result<Chart<'a, DB, Y::CoordDescType>, PlotError>
where
    DB: DrawingBackend,
    Y: AsRangedCoord<Value = f64>,
    Y::CoordDescType: ValueFormatter<f64>,
{
    let mut builder = ChartBuilder::on(area);
    if let Some(caption) = caption {
        builder.caption(caption, ("sans-serif", 18));
    }
    let mut chart = builder
        .margin(10)
        .x_label_area_size(35)
        .y_label_area_size(65)
        .build_cartesian_2d(axes.x, axes.y)
        .map_err(PlotError::of)?;
    chart
        .configure_mesh()
        .x_desc(axes.x_label)
        .y_desc(axes.y_label)
        .draw()
        .map_err(PlotError::of)?;
    Ok(chart)
}

/// One line of a plot.
#[derive(Debug, Clone)]
pub struct Line {
    /// Legend text.
    pub name: String,
    /// Colour (from [`palette`](crate::palette)).
    pub color: RGBColor,
    /// Stroke width, pixels.
    pub width: u32,
    /// (x, y) in order of x.
    pub points: Vec<(f64, f64)>,
}

impl Line {
    /// Lines 1 pixel wide, coloured in the palette's order ([`palette::nth`]), from
    /// (name, points) pairs: for series that are neither controllers nor paths (flows, links).
    ///
    /// [`palette::nth`]: crate::palette::nth
    pub fn in_order(series: impl IntoIterator<Item = (String, Vec<(f64, f64)>)>) -> Vec<Line> {
        let line =
            |(i, (name, points))| Line { name, color: crate::palette::nth(i), width: 1, points };
        series.into_iter().enumerate().map(line).collect()
    }
}

/// Draw `lines`, each with a legend entry (see [`draw_legend`]).
pub fn draw_lines<'a, DB, Y>(chart: &mut Chart<'a, DB, Y>, lines: &[Line]) -> Result<(), PlotError>
where
    DB: DrawingBackend + 'a,
    Y: Ranged<ValueType = f64>,
{
    for line in lines {
        let style = line.color.stroke_width(line.width);
        chart
            .draw_series(LineSeries::new(line.points.iter().copied(), style))
            .map_err(PlotError::of)?
            .label(line.name.as_str())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], style));
    }
    Ok(())
}

/// The legend of the series drawn so far, in a box at `position`.
pub fn draw_legend<'a, DB, Y>(
    chart: &mut Chart<'a, DB, Y>,
    position: SeriesLabelPosition,
) -> Result<(), PlotError>
where
    DB: DrawingBackend + 'a,
    Y: Ranged<ValueType = f64>,
{
    chart
        .configure_series_labels()
        .position(position)
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()
        .map_err(PlotError::of)
}

/// Legends of more lines than this are left out: they would cover the plot.
const MAX_LEGEND: usize = 16;

/// A time series or CDF: lines from the origin to their largest x and y.
pub struct LinePlot<'a> {
    /// Caption.
    pub title: &'a str,
    /// What x is, with its unit.
    pub x_label: &'a str,
    /// What y is, with its unit.
    pub y_label: &'a str,
    /// The lines.
    pub lines: &'a [Line],
}

/// Write `plot` as an SVG file of 960 x 540 pixels.
pub fn write_line_plot(path: &Path, plot: &LinePlot<'_>) -> Result<(), PlotError> {
    let points = plot.lines.iter().flat_map(|l| l.points.iter());
    let (x_max, y_max) = points.fold((0.0f64, 0.0f64), |(x, y), &(px, py)| (x.max(px), y.max(py)));
    let areas = stacked_svg(path, 960, 540, 1, None)?;
    let axes = Axes {
        x_label: plot.x_label,
        y_label: plot.y_label,
        x: 0.0..x_max.max(1e-9),
        y: 0.0..(y_max * 1.05).max(1e-9),
    };
    let mut chart = panel(&areas[0], Some(plot.title), axes)?;
    draw_lines(&mut chart, plot.lines)?;
    if plot.lines.len() <= MAX_LEGEND {
        draw_legend(&mut chart, SeriesLabelPosition::MiddleRight)?;
    }
    areas[0].present().map_err(PlotError::of)
}

/// One x of a sweep: the median of the repetitions, and their range.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SweepPoint {
    /// The swept parameter.
    pub x: f64,
    /// Smallest value.
    pub min: f64,
    /// Median.
    pub median: f64,
    /// Largest value.
    pub max: f64,
}

/// One series of a sweep (a controller, a variant).
#[derive(Debug, Clone)]
pub struct SweepLine {
    /// Legend text.
    pub name: String,
    /// Colour (from [`palette`](crate::palette)).
    pub color: RGBColor,
    /// Drawn dashed, with hollow dots: how a series is told apart from an earlier one of the
    /// same colour (the palette colours a controller whatever its parameters, so `mptcp-d` and
    /// `mptcp-d:ese=false` share one).
    pub dashed: bool,
    /// Its points, in order of x.
    pub points: Vec<SweepPoint>,
}

/// Draw sweep lines: the medians joined and dotted, a bar from min to max at each point. The
/// series are moved apart on x by `spread` each so that their bars do not overlap; `clamp` maps
/// values onto the y axis (a log axis has no zero).
pub fn draw_sweep_lines<'a, DB, Y>(
    chart: &mut Chart<'a, DB, Y>,
    lines: &[SweepLine],
    spread: f64,
    clamp: impl Fn(f64) -> f64,
) -> Result<(), PlotError>
where
    DB: DrawingBackend + 'a,
    Y: Ranged<ValueType = f64>,
{
    for (i, line) in lines.iter().enumerate() {
        let dx = (i as f64 - lines.len() as f64 / 2.0) * spread;
        let (color, style) = (line.color, line.color.stroke_width(2));
        let medians = line.points.iter().map(|p| (p.x + dx, clamp(p.median)));
        let drawn = if line.dashed {
            chart.draw_series(DashedLineSeries::new(medians.clone(), 6, 4, style))
        } else {
            chart.draw_series(LineSeries::new(medians.clone(), style))
        };
        // The legend's sample in two strokes, with a gap when dashed.
        let gap = if line.dashed { 4 } else { 0 };
        drawn.map_err(PlotError::of)?.label(line.name.as_str()).legend(move |(x, y)| {
            EmptyElement::at((x, y))
                + PathElement::new(vec![(0, 0), (6, 0)], style)
                + PathElement::new(vec![(6 + gap, 0), (16, 0)], style)
        });
        chart
            .draw_series(line.points.iter().map(|p| {
                let bar = vec![(p.x + dx, clamp(p.min)), (p.x + dx, clamp(p.max))];
                PathElement::new(bar, color.stroke_width(1))
            }))
            .map_err(PlotError::of)?;
        chart
            .draw_series(medians.map(|m| {
                Circle::new(m, 3, if line.dashed { color.stroke_width(1) } else { color.filled() })
            }))
            .map_err(PlotError::of)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::palette::{controller_color, css, path_color};

    fn hex(c: RGBColor) -> String {
        format!("#{:02X}{:02X}{:02X}", c.0, c.1, c.2)
    }

    #[test]
    fn a_line_plot_draws_each_line_in_its_colour_with_its_name() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("lines.svg");
        let lines: Vec<Line> = (0..3)
            .map(|p| Line {
                name: format!("path {p}"),
                color: path_color(p),
                width: 1,
                points: (0..50).map(|t| (t as f64, (t * (p + 1)) as f64)).collect(),
            })
            .collect();
        let plot = LinePlot { title: "Window", x_label: "time (ms)", y_label: "KB", lines: &lines };
        write_line_plot(&file, &plot).unwrap();
        let svg = std::fs::read_to_string(&file).unwrap();
        assert!(svg.contains("Window") && svg.contains("time (ms)"), "{svg}");
        for line in &lines {
            assert!(svg.contains(&format!(">\n{}\n</text>", line.name)), "legend: {}", line.name);
            assert!(svg.contains(&hex(line.color)), "{} drawn in {}", line.name, css(line.color));
        }
        assert!(svg.matches("<polyline").count() >= 3, "three lines: {svg}");
    }

    #[test]
    fn sweep_lines_have_a_bar_per_point_on_a_log_axis_too() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("sweep.svg");
        let lines: Vec<SweepLine> = ["amp", "xmp", "xmp:beta=6"]
            .iter()
            .map(|name| SweepLine {
                name: name.to_string(),
                color: controller_color(name),
                dashed: name.contains(':'),
                points: (1..=4)
                    .map(|x| {
                        let x = f64::from(x);
                        SweepPoint { x, min: x, median: 2.0 * x, max: 3.0 * x }
                    })
                    .collect(),
            })
            .collect();
        {
            let areas = stacked_svg(&file, 600, 300, 2, Some("Sweep")).unwrap();
            let linear = Axes { x_label: "K", y_label: "ms", x: 0.0..5.0, y: 0.0..13.0 };
            let mut chart = panel(&areas[0], None, linear).unwrap();
            draw_sweep_lines(&mut chart, &lines, 0.1, |y| y).unwrap();
            draw_legend(&mut chart, SeriesLabelPosition::UpperLeft).unwrap();
            let log = Axes { x_label: "K", y_label: "ms", x: 0.0..5.0, y: (0.5..13.0).log_scale() };
            let mut chart = panel(&areas[1], None, log).unwrap();
            draw_sweep_lines(&mut chart, &lines, 0.1, |y| y.max(0.5)).unwrap();
            areas[0].present().unwrap();
        }
        let svg = std::fs::read_to_string(&file).unwrap();
        let text = |t: &str| svg.contains(&format!(">\n{t}\n</text>"));
        assert!(text("Sweep") && text("amp") && text("xmp"), "{svg}");
        for name in ["amp", "xmp"] {
            let color = hex(controller_color(name));
            // Per panel: the median line, and one bar per point.
            assert!(svg.matches(&format!("stroke=\"{color}\"")).count() >= 2 * (1 + 4), "{name}");
            assert!(svg.matches(&format!("fill=\"{color}\"")).count() >= 2 * 4, "dots of {name}");
        }
        // The variant in xmp's colour: its dots hollow (the filled ones are xmp's alone), its
        // median line in dashes (more strokes of that colour than xmp's line, bars and dots).
        assert!(text("xmp:beta=6"), "{svg}");
        let xmp = hex(controller_color("xmp"));
        assert_eq!(svg.matches(&format!("fill=\"{xmp}\"")).count(), 2 * 4, "filled dots: xmp's");
        let hollow = format!("fill=\"none\" stroke=\"{xmp}\"");
        assert!(svg.matches(&hollow).count() >= 2 * 4, "the variant's hollow dots: {svg}");
    }
}
