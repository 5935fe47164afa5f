//! docs/RESULTS.md's table is what researchers quote, so each of its rows must lead somewhere
//! that exists: a write-up that states the commit and date of its numbers, and (unless the row
//! says "not run") a command whose experiment file validates as both backends read it. The
//! verdict is one of five words, so a row cannot claim something in between. Every relative
//! link in the repository's Markdown must reach a file.

use std::path::{Path, PathBuf};

use mpquic_scenario::Experiment;

/// "inconclusive": the word of `verdicts.toml`'s rule when a cited interval overlaps its bound.
const VERDICTS: [&str; 5] = ["holds", "holds partly", "differs", "inconclusive", "not run"];

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// One row of the table, its cells by the header's column names.
struct Row {
    line: usize,
    cells: Vec<(String, String)>,
}

impl Row {
    fn cell(&self, column: &str) -> &str {
        let found = self.cells.iter().find(|(name, _)| name == column);
        found.map(|(_, text)| text.as_str()).unwrap_or_else(|| panic!("no column `{column}`"))
    }
}

fn split_cells(line: &str) -> Vec<String> {
    let inner = line.trim().trim_start_matches('|').trim_end_matches('|');
    inner.split('|').map(|c| c.trim().to_owned()).collect()
}

/// The rows of the first table whose header starts with `claim`.
fn claims_table(text: &str) -> Vec<Row> {
    let mut lines = text.lines().enumerate();
    let header = lines
        .by_ref()
        .find(|(_, l)| l.starts_with("| claim"))
        .map(|(_, l)| split_cells(l))
        .expect("RESULTS.md has a table whose header starts with `| claim`");
    lines.next(); // the |---| separator
    lines
        .take_while(|(_, l)| l.starts_with('|'))
        .map(|(i, l)| {
            let cells = split_cells(l);
            assert_eq!(cells.len(), header.len(), "RESULTS.md:{}: {} cells", i + 1, cells.len());
            Row { line: i + 1, cells: header.iter().cloned().zip(cells).collect() }
        })
        .collect()
}

/// The targets of the markdown links in `cell`: `[text](target)`.
fn link_targets(cell: &str) -> Vec<&str> {
    cell.split("](").skip(1).filter_map(|rest| rest.split(')').next()).collect()
}

/// The `experiments/*.toml` files named in `cell`.
fn experiment_files(cell: &str) -> Vec<&str> {
    cell.split(|c: char| c.is_whitespace() || c == '`')
        .map(|word| word.trim_matches(|c: char| ",;:()".contains(c)))
        .filter(|word| word.starts_with("experiments/") && word.ends_with(".toml"))
        .collect()
}

/// The bold phrases of `cell`: `**...**`.
fn bold(cell: &str) -> Vec<&str> {
    cell.split("**").skip(1).step_by(2).collect()
}

/// Whether a line says which commit (7+ hex digits) and date (YYYY-MM-DD) its numbers are from.
fn names_commit_and_date(line: &str) -> bool {
    let words = line.split(|c: char| !c.is_ascii_alphanumeric() && c != '-');
    let commit = words.clone().any(|w| {
        w.len() >= 7 && w.chars().all(|c| c.is_ascii_hexdigit()) && w.chars().any(char::is_numeric)
    });
    let date = words.into_iter().any(|w| {
        let parts: Vec<&str> = w.split('-').collect();
        parts.len() == 3
            && [4, 2, 2]
                .iter()
                .zip(&parts)
                .all(|(n, p)| p.len() == *n && p.chars().all(|c| c.is_ascii_digit()))
    });
    commit && date
}

fn results_rows() -> Vec<Row> {
    let path = root().join("docs/RESULTS.md");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path:?}: {e}"));
    let rows = claims_table(&text);
    assert!(rows.len() >= 20, "the table has a row per claim, found {}", rows.len());
    rows
}

#[test]
fn every_row_has_one_of_the_five_verdicts() {
    for row in results_rows() {
        let verdicts = bold(row.cell("verdict"));
        assert!(!verdicts.is_empty(), "RESULTS.md:{}: no **verdict**", row.line);
        for v in verdicts {
            assert!(
                VERDICTS.contains(&v),
                "RESULTS.md:{}: verdict `{v}` not one of {VERDICTS:?}",
                row.line
            );
        }
    }
}

#[test]
fn every_row_links_a_write_up_that_dates_its_numbers() {
    for row in results_rows() {
        let targets = link_targets(row.cell("write-up"));
        assert!(!targets.is_empty(), "RESULTS.md:{}: no write-up linked", row.line);
        for target in targets {
            let file = root().join("docs").join(target);
            let text = std::fs::read_to_string(&file)
                .unwrap_or_else(|e| panic!("RESULTS.md:{}: {target}: {e}", row.line));
            let dated =
                text.lines().any(|l| l.contains("Numbers from") && names_commit_and_date(l));
            assert!(
                dated,
                "{target}: no `Numbers from` line naming a commit and a date (RESULTS.md:{})",
                row.line
            );
        }
    }
}

#[test]
fn every_run_row_names_a_command_whose_file_validates() {
    for row in results_rows() {
        let files = experiment_files(row.cell("command"));
        // A property of a controller is checked by a test, not by an experiment file.
        if bold(row.cell("verdict")) == ["not run"] || row.cell("command").contains("cargo test") {
            continue;
        }
        assert!(!files.is_empty(), "RESULTS.md:{}: no `experiments/*.toml` command", row.line);
        for file in files {
            let path = root().join(file);
            let experiment = Experiment::load(&path)
                .unwrap_or_else(|e| panic!("RESULTS.md:{}: {file}: {e}", row.line));
            assert!(!experiment.points.is_empty(), "{file}: no points");
        }
    }
}

/// The repository's Markdown files (READMEs, docs/, the write-ups, results/), not those of the
/// vendored stack or of build output.
fn markdown_files(dir: &Path, found: &mut Vec<PathBuf>) {
    let skip = ["target", "third_party", "node_modules"];
    let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{dir:?}: {e}"));
    for entry in entries.map(|e| e.expect("directory entry")) {
        let (path, name) = (entry.path(), entry.file_name());
        let name = name.to_string_lossy();
        if path.is_dir() {
            if !name.starts_with('.') && !skip.contains(&name.as_ref()) {
                markdown_files(&path, found);
            }
        } else if name.ends_with(".md") {
            found.push(path);
        }
    }
}

/// The relative link targets of a Markdown text outside fenced code blocks, without their
/// `#anchor`, each with its line number.
fn relative_links(text: &str) -> Vec<(usize, &str)> {
    let mut fenced = false;
    let mut links = vec![];
    for (i, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        for target in link_targets(line) {
            let path = target.split('#').next().unwrap_or_default();
            if !path.is_empty() && !path.contains("://") && !path.starts_with("mailto:") {
                links.push((i + 1, path));
            }
        }
    }
    links
}

/// Results moved once already (to results/<file>/<backend>/, with gzip'd experiment.json and
/// testbed plots): a link left at an old path or an uncompressed name must fail here, not
/// silently on a reader's click.
#[test]
fn every_relative_markdown_link_resolves() {
    let mut files = vec![];
    markdown_files(&root(), &mut files);
    assert!(files.len() >= 20, "found {} Markdown files", files.len());
    let mut broken = vec![];
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{file:?}: {e}"));
        let dir = file.parent().expect("a file's directory");
        for (line, target) in relative_links(&text) {
            if !dir.join(target).exists() {
                let shown = file.strip_prefix(root()).unwrap_or(file);
                broken.push(format!("{}:{line}: {target}", shown.display()));
            }
        }
    }
    assert!(broken.is_empty(), "links to nothing:\n{}", broken.join("\n"));
}

#[test]
fn the_parsers_read_what_they_are_meant_to() {
    let table = "x\n| claim | verdict | write-up | command |\n|---|---|---|---|\n\
                 | a | sim **holds**, netns **differs** | [w](results/E1-sim.md) | `mpquic-sim run experiments/E1-incast.toml` |\n\nafter\n";
    let rows = claims_table(table);
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].line, 4);
    assert_eq!(bold(rows[0].cell("verdict")), ["holds", "differs"]);
    assert_eq!(link_targets(rows[0].cell("write-up")), ["results/E1-sim.md"]);
    assert_eq!(experiment_files(rows[0].cell("command")), ["experiments/E1-incast.toml"]);
    assert!(names_commit_and_date("**Numbers from** f9ba0bf, 2026-11-23 (session 5)."));
    assert!(!names_commit_and_date("**Numbers from** session 5, 2026-11-23."));
    assert!(!names_commit_and_date("**Numbers from** f9ba0bf."));
    let doc =
        "[a](x.md#top) [b](https://e.org) [c](#here)\n```\n[d](in-code.md)\n```\n![e](p.svg.gz)";
    assert_eq!(relative_links(doc), [(1, "x.md"), (5, "p.svg.gz")]);
}
