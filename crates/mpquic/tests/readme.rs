//! The repository's README shows the library's example as the crate README has it, whose doc
//! test compiles (`ReadmeExample` in lib.rs): one program, written once, checked in both places.

#[test]
fn the_repository_readme_repeats_the_crate_readmes_example() {
    let read = |path: &str| std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let crate_readme = read(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md"));
    let readme = read(concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md"));
    let start = crate_readme.find("```rust,no_run\n").expect("the crate README's example");
    let end = start + crate_readme[start..].find("\n```\n").expect("the example's end") + 5;
    let example = &crate_readme[start..end];
    assert!(
        readme.contains(example),
        "README.md does not show the crate README's example:\n{example}"
    );
}
