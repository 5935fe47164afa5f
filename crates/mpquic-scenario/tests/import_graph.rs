//! The crate's files import each other in layers, not in circles: the language (units, model,
//! sections, expand, validate) below the analysis (record, metrics, analyses and the analyses'
//! modules), the experiment loader, results and plots above both. A circle of files is a sign
//! that two concerns share a module (ARCHITECTURE.md), so this computes the import graph from
//! every `crate::` path in the code (the `use crate::` lines and paths written inline, tests
//! included, comments and strings not) and fails on a strongly connected component of more than
//! two files.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// Every `.rs` file under `dir`, as paths relative to `root` (`metrics/catalogue.rs`).
fn sources(root: &Path, dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            sources(root, &path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path.strip_prefix(root).unwrap().to_path_buf());
        }
    }
}

/// The code of a file without comments and the contents of one-line string literals.
fn code(text: &str) -> String {
    let mut out = String::new();
    for line in text.lines() {
        let mut kept = String::new();
        let mut in_string = false;
        let mut chars = line.chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                '\\' if in_string => {
                    chars.next();
                }
                '"' => in_string = !in_string,
                '/' if !in_string && chars.peek() == Some(&'/') => break,
                _ if !in_string => kept.push(c),
                _ => {}
            }
        }
        out.push_str(&kept);
        out.push('\n');
    }
    out
}

/// The first segments of every `crate::` path in `code`: `crate::a::b` and `crate::{a::x, b}`
/// give `a` (and `b`).
fn crate_paths(code: &str) -> Vec<String> {
    let ident = |s: &str| -> String {
        s.trim_start().chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect()
    };
    let mut found = vec![];
    for (at, _) in code.match_indices("crate::") {
        let preceded =
            code[..at].chars().next_back().is_some_and(|c| c.is_alphanumeric() || c == '_');
        if preceded {
            continue; // `mpquic_crate::`, not ours
        }
        let rest = &code[at + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let group = &group[..group.find('}').unwrap_or(group.len())];
            found.extend(group.split(',').map(ident));
        } else {
            found.push(ident(rest));
        }
    }
    found.retain(|name| !name.is_empty() && name != "self");
    found
}

/// Items the crate root re-exports, by name, and the module they come from; `*` for a glob.
fn root_exports(lib: &str) -> Vec<(String, String)> {
    let mut exports = vec![];
    for statement in lib.split(';') {
        let Some(path) = statement.trim().strip_prefix("pub use ") else { continue };
        let Some((module, items)) = path.split_once("::") else { continue };
        let items = items.trim_start_matches('{').trim_end_matches('}');
        for item in items.split(',').map(str::trim).filter(|i| !i.is_empty()) {
            exports.push((item.to_string(), module.to_string()));
        }
    }
    exports
}

/// The import graph: each file to the files it names through `crate::` paths.
fn graph(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let mut files = vec![];
    sources(src, src, &mut files);
    let names: BTreeSet<String> = files.iter().map(|f| f.display().to_string()).collect();
    let module_file = |m: &str| {
        [format!("{m}.rs"), format!("{m}/mod.rs")].into_iter().find(|f| names.contains(f))
    };
    let lib = fs::read_to_string(src.join("lib.rs")).unwrap();
    let exports = root_exports(&code(&lib));
    let resolve = |name: &str| -> Option<String> {
        if let Some(file) = module_file(name) {
            return Some(file);
        }
        let module = exports.iter().find(|(item, _)| item == name).map(|(_, m)| m.clone());
        let glob = || exports.iter().find(|(item, _)| item == "*").map(|(_, m)| m.clone());
        match module.or_else(|| name.starts_with(char::is_uppercase).then(glob).flatten()) {
            Some(module) => module_file(&module),
            None => Some("lib.rs".to_string()), // a function of the crate root itself
        }
    };
    let mut edges = BTreeMap::new();
    for file in &names {
        let text = code(&fs::read_to_string(src.join(file)).unwrap());
        let to: BTreeSet<String> = crate_paths(&text)
            .iter()
            .filter_map(|name| resolve(name))
            .filter(|to| to != file)
            .collect();
        edges.insert(file.clone(), to);
    }
    edges
}

/// Strongly connected components (Tarjan's algorithm).
fn components(edges: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    struct Walk<'a> {
        edges: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        found: Vec<Vec<String>>,
    }
    impl<'a> Walk<'a> {
        fn visit(&mut self, v: &'a str) {
            let n = self.index.len();
            self.index.insert(v, n);
            self.low.insert(v, n);
            self.stack.push(v);
            for w in &self.edges[v] {
                let w = w.as_str();
                if !self.index.contains_key(w) {
                    self.visit(w);
                    self.low.insert(v, self.low[v].min(self.low[w]));
                } else if self.stack.contains(&w) {
                    self.low.insert(v, self.low[v].min(self.index[w]));
                }
            }
            if self.low[v] == self.index[v] {
                let at = self.stack.iter().position(|&x| x == v).unwrap();
                let component = self.stack.split_off(at);
                self.found.push(component.into_iter().map(String::from).collect());
            }
        }
    }
    let mut walk =
        Walk { edges, index: BTreeMap::new(), low: BTreeMap::new(), stack: vec![], found: vec![] };
    for v in edges.keys() {
        if !walk.index.contains_key(v.as_str()) {
            walk.visit(v);
        }
    }
    walk.found
}

#[test]
fn no_circle_of_more_than_two_files() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let edges = graph(&src);
    assert!(edges["analyses.rs"].contains("shift.rs"), "the graph sees inline paths: {edges:?}");
    assert!(edges["model.rs"].contains("units.rs"), "and `use crate::` lines: {edges:?}");
    let circles: Vec<Vec<String>> =
        components(&edges).into_iter().filter(|c| c.len() > 2).collect();
    assert!(circles.is_empty(), "files importing each other in a circle: {circles:?}");
}

#[test]
fn the_language_imports_nothing_of_the_analysis() {
    let edges = graph(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"));
    let language =
        ["units.rs", "flow_size.rs", "model.rs", "sections.rs", "expand.rs", "validate.rs"];
    for file in language {
        let outside: Vec<&String> = edges[file]
            .iter()
            .filter(|to| {
                !language.contains(&to.as_str()) && !["error.rs", "rng.rs"].contains(&to.as_str())
            })
            .collect();
        assert!(outside.is_empty(), "{file} imports {outside:?}");
    }
}

#[test]
fn a_circle_is_found() {
    let edge = |from: &str, to: &[&str]| {
        (from.to_string(), to.iter().map(|t| t.to_string()).collect::<BTreeSet<_>>())
    };
    let three = BTreeMap::from([edge("a", &["b"]), edge("b", &["c"]), edge("c", &["a"])]);
    assert!(components(&three).iter().any(|c| c.len() == 3));
    let pair = BTreeMap::from([edge("a", &["b"]), edge("b", &["a"]), edge("c", &["a"])]);
    assert_eq!(components(&pair).iter().map(Vec::len).max(), Some(2));
    let paths = crate_paths("use crate::{a::X, b};\nlet f = crate::c::f; mpquic_crate::d;");
    assert_eq!(paths, ["a", "b", "c"]);
}
