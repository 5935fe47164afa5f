//! `mpquic report`: qlog traces in, a self-contained HTML report with SVG plots out.
//!
//! Each input is one run (a qlog file, or a directory of them: one file per connection); runs
//! are shown side by side with shared axes (see `fit` for when a plot gets its own y axis). Files are streamed record by record and every series
//! is downsampled into a fixed number of time buckets, so memory does not grow with the input.

mod chart;
mod connection;
mod data;
mod events;
mod fit;
mod html;
mod interactive;
mod plots;
mod series;

// The reader lives in the library (src/lib.rs), for its fuzz target.
use mpquic_cli::qlog_reader;

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};

use self::chart::Panel;
use self::connection::Connection;

/// Arguments of `mpquic report`.
#[derive(Args, Debug)]
pub struct ReportArgs {
    /// A run: a qlog file (JSON-SEQ), or a directory of them (one per connection), optionally
    /// labelled as LABEL=PATH. Repeat to compare runs side by side.
    #[arg(required = true, value_name = "[LABEL=]PATH")]
    pub runs: Vec<String>,
    /// Output directory: index.html, plots/*.svg, data.json.
    #[arg(long, short = 'o', value_name = "DIR", default_value = "mpquic-report")]
    pub out: PathBuf,
    /// Only traces from this vantage point (client, server); e.g. `client` skips receivers.
    #[arg(long)]
    pub vantage: Option<String>,
    /// Time buckets per series (memory and plot resolution; rates are per 4 buckets).
    #[arg(long, default_value_t = series::DEFAULT_BUCKETS, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(2..=100_000))]
    pub buckets: usize,
    /// Report title.
    #[arg(long, default_value = "mpquic report")]
    pub title: String,
    /// Extra note shown at the top of the report (repeatable).
    #[arg(long = "note", value_name = "TEXT")]
    pub notes: Vec<String>,
}

/// One run: a label and its connections.
pub struct Run {
    /// Shown as the column heading.
    pub label: String,
    /// One per trace file, ordered by file name.
    pub connections: Vec<Connection>,
}

/// Split `LABEL=PATH` (unless the whole argument is an existing path).
fn parse_input(arg: &str) -> (String, PathBuf) {
    if !Path::new(arg).exists() {
        if let Some((label, path)) = arg.split_once('=') {
            return (label.to_owned(), PathBuf::from(path));
        }
    }
    let path = PathBuf::from(arg);
    let label = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| arg.to_owned());
    (label, path)
}

/// The trace files of one input.
fn trace_files(path: &Path, vantage: Option<&str>) -> Result<Vec<PathBuf>> {
    let meta =
        std::fs::metadata(path).with_context(|| format!("cannot open {}", path.display()))?;
    let mut files = if meta.is_dir() {
        let mut files: Vec<PathBuf> = std::fs::read_dir(path)
            .with_context(|| format!("cannot list {}", path.display()))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|e| e == "sqlog" || e == "qlog"))
            .collect();
        files.sort();
        if files.is_empty() {
            bail!("{}: no .sqlog or .qlog files in this directory", path.display());
        }
        files
    } else {
        vec![path.to_owned()]
    };
    if let Some(want) = vantage {
        let mut kept = Vec::new();
        for f in files {
            let reader = qlog_reader::QlogReader::open(&f)?;
            if reader.header().vantage.as_deref() == Some(want) {
                kept.push(f);
            }
        }
        files = kept;
        if files.is_empty() {
            bail!("{}: no trace with vantage point {want:?}", path.display());
        }
    }
    Ok(files)
}

fn progress_bar(total: u64) -> ProgressBar {
    let bar = ProgressBar::new(total);
    if let Ok(style) = ProgressStyle::with_template(
        "{msg:30!} [{bar:30}] {bytes}/{total_bytes} {bytes_per_sec} eta {eta}",
    ) {
        bar.set_style(style.progress_chars("=> "));
    }
    bar
}

fn shell_words(args: impl Iterator<Item = String>) -> String {
    args.map(|a| {
        if a.chars().all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@".contains(c)) {
            a
        } else {
            format!("'{}'", a.replace('\'', "'\\''"))
        }
    })
    .collect::<Vec<_>>()
    .join(" ")
}

/// Read the inputs (streaming, with a progress bar on a terminal).
fn read_runs(args: &ReportArgs) -> Result<Vec<Run>> {
    let mut inputs = Vec::new();
    for arg in &args.runs {
        let (label, path) = parse_input(arg);
        inputs.push((label, trace_files(&path, args.vantage.as_deref())?));
    }
    let total: u64 = inputs
        .iter()
        .flat_map(|(_, files)| files)
        .filter_map(|f| std::fs::metadata(f).ok())
        .map(|m| m.len())
        .sum();
    let bar = progress_bar(total);
    let mut done = 0;
    let mut runs = Vec::new();
    for (label, files) in inputs {
        let mut connections = Vec::new();
        for file in files {
            bar.set_message(file.file_name().unwrap_or_default().to_string_lossy().into_owned());
            let conn = Connection::read(&file, args.buckets, |pos| bar.set_position(done + pos));
            let conn = match conn {
                Ok(c) => c,
                Err(e) => {
                    bar.abandon();
                    return Err(e);
                }
            };
            done += conn.file_bytes;
            if let Some(p) = &conn.partial {
                bar.suspend(|| {
                    eprintln!(
                        "mpquic: warning: {} is partial: the record at line {} (byte offset {}) is \
                         cut; using the events before it (up to {:.1} ms)",
                        file.display(),
                        p.line,
                        p.offset,
                        p.last_time
                    )
                });
            }
            connections.push(conn);
        }
        runs.push(Run { label, connections });
    }
    bar.finish_and_clear();
    Ok(runs)
}

/// One row of the page: `panel` for the same connection of each run, each also written as a
/// static SVG to `svg_path(run index)`.
fn plot_row(
    panel: Panel,
    conns: &[Option<&Connection>],
    grid: f64,
    x_max: f64,
    svg_path: impl Fn(usize) -> PathBuf,
) -> Result<html::PlotRow> {
    let lines: Vec<Option<Vec<chart::Line>>> =
        conns.iter().map(|c| c.map(|c| panel.lines(c, grid))).collect();
    let plots: Vec<_> =
        conns.iter().zip(&lines).map(|(c, l)| Some(((*c)?, l.as_deref()?))).collect();
    let axes = panel.row_axes(&plots);
    let mut cells = Vec::new();
    for (ri, (plot, axis)) in plots.into_iter().zip(axes).enumerate() {
        let Some((conn, lines)) = plot else {
            cells.push(None);
            continue;
        };
        let svg = plots::render(panel, conn, lines, x_max, axis)?;
        let name = svg_path(ri);
        std::fs::write(&name, &svg).with_context(|| format!("cannot write {}", name.display()))?;
        cells.push(Some(match panel {
            Panel::Episodes => html::Plot::Svg(svg),
            _ if interactive::all_zero(lines) => html::Plot::Empty,
            _ => html::Plot::Chart(interactive::chart(panel, conn, lines, x_max, axis)),
        }));
    }
    Ok(html::PlotRow { heading: panel.title().to_owned(), cells })
}

/// `mpquic report`.
pub fn report(args: ReportArgs) -> Result<()> {
    let runs = read_runs(&args)?;
    let command = shell_words(["mpquic".to_string()].into_iter().chain(std::env::args().skip(1)));
    let all = || runs.iter().flat_map(|r| &r.connections);
    let x_max = all().map(|c| c.end_time).fold(0.0, f64::max);
    let plots_dir = args.out.join("plots");
    std::fs::create_dir_all(&plots_dir)
        .with_context(|| format!("cannot create {}", plots_dir.display()))?;

    let mut notes = args.notes.clone();
    for c in all() {
        if let Some(p) = &c.partial {
            notes.push(format!(
                "{} is partial: the record at line {} (byte offset {}) is cut; plotted up to {:.1} ms.",
                c.file.display(),
                p.line,
                p.offset,
                p.last_time
            ));
        }
        for w in &c.warnings {
            notes.push(format!("{}: {w}", c.file.display()));
        }
        if c.episodes_dropped > 0 {
            notes.push(format!(
                "{}: {} further controller episodes not shown",
                c.file.display(),
                c.episodes_dropped
            ));
        }
    }

    let panels: Vec<Panel> = Panel::ALL.into_iter().filter(|p| p.has_data(all())).collect();
    // Counters become rates on one grid for the whole report (see `chart::rate`).
    let grid = chart::rate_grid(x_max, args.buckets);
    let max_conns = runs.iter().map(|r| r.connections.len()).max().unwrap_or(0);
    let mut sections = Vec::new();
    for i in 0..max_conns {
        let mut rows = Vec::new();
        for &panel in &panels {
            let conns: Vec<Option<&Connection>> =
                runs.iter().map(|r| r.connections.get(i)).collect();
            rows.push(plot_row(panel, &conns, grid, x_max, |ri| {
                plots_dir.join(format!("run{ri}-conn{i}-{}.svg", panel.slug()))
            })?);
        }
        sections.push((format!("Connection {}", i + 1), rows));
    }

    let page = html::page(&html::Page {
        title: &args.title,
        command: &command,
        notes: &notes,
        runs: &runs,
        sections,
    });
    let index = args.out.join("index.html");
    std::fs::write(&index, page).with_context(|| format!("cannot write {}", index.display()))?;
    let data_path = args.out.join("data.json");
    let data = serde_json::to_vec(&data::report(&runs))?;
    std::fs::write(&data_path, data)
        .with_context(|| format!("cannot write {}", data_path.display()))?;
    eprintln!(
        "mpquic: wrote {} ({} runs, {} connections), plots in {}, data in {}",
        index.display(),
        runs.len(),
        all().count(),
        plots_dir.display(),
        data_path.display()
    );
    Ok(())
}
