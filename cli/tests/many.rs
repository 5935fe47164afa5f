//! Many files and directories over one connection: `send PATH...`, `get -r`, `ls`.

mod common;

use std::path::Path;

use common::*;

/// Every file beneath `dir` (relative path, contents), sorted.
fn tree(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut files = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(at) = todo.pop() {
        for entry in std::fs::read_dir(&at).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                todo.push(path);
            } else {
                let name = path.strip_prefix(dir).unwrap().to_str().unwrap().to_owned();
                files.push((name, std::fs::read(&path).unwrap()));
            }
        }
    }
    files.sort();
    files
}

/// A nested tree: 50 small files over three levels and three larger ones.
fn dataset(root: &Path) {
    for i in 0..50 {
        let dir = root.join(format!("level1-{}", i % 3)).join(format!("level2-{}", i % 5));
        std::fs::create_dir_all(&dir).unwrap();
        random_file(&dir, &format!("small-{i}.bin"), 1000 + i * 37);
    }
    for (i, size) in [3 << 20, 5 << 20, 1].into_iter().enumerate() {
        random_file(root, &format!("large-{i}.bin"), size);
    }
}

/// A server storing files into a new directory, and a new local directory: (store, server,
/// local).
fn store_server() -> (tempfile::TempDir, ServerProcess, tempfile::TempDir) {
    let store = tempfile::tempdir().unwrap();
    let dir = store.path().to_str().unwrap();
    let server = ServerProcess::start(&["127.0.0.1"], &["--insecure", "--dir", dir]);
    (store, server, tempfile::tempdir().unwrap())
}

fn connect_args(server: &ServerProcess) -> Vec<String> {
    ["--server", &server.addr("127.0.0.1"), "--insecure"].map(str::to_owned).to_vec()
}

fn run(args: &[&str], server: &ServerProcess) -> std::process::Output {
    let connect = connect_args(server);
    let mut all: Vec<&str> = args.to_vec();
    all.extend(connect.iter().map(String::as_str));
    mpquic(&all)
}

#[test]
fn a_nested_directory_goes_up_and_comes_back_byte_identical_over_one_connection() {
    let (store, server, local) = store_server();
    let root = local.path().join("dataset");
    dataset(&root);
    let extra = random_file(local.path(), "extra.bin", 70_000);

    let sent = json(&run(
        &["send", root.to_str().unwrap(), extra.to_str().unwrap(), "--json", "--parallel", "6"],
        &server,
    ));
    assert_eq!(sent["files"].as_array().unwrap().len(), 54, "{sent}");
    assert_eq!(sent["failed"], 0);
    assert!(sent["files"].as_array().unwrap().iter().all(|f| f["verified"] == true));
    assert!(!sent["paths"].as_array().unwrap().is_empty(), "the connection's paths: {sent}");
    assert_eq!(tree(&store.path().join("dataset")), tree(&root));
    assert_eq!(
        std::fs::read(store.path().join("extra.bin")).unwrap(),
        std::fs::read(&extra).unwrap()
    );

    let listed = json(&run(&["ls", "dataset/level1-0", "--json"], &server));
    let listed = listed.as_array().unwrap();
    assert_eq!(listed.len(), 17, "{listed:?}");
    assert!(listed.iter().all(|f| f["name"].as_str().unwrap().starts_with("dataset/level1-0/")));

    let back = tempfile::tempdir().unwrap();
    let got = json(&run(
        &["get", "-r", "dataset", "extra.bin", "-o", back.path().to_str().unwrap(), "--json"],
        &server,
    ));
    assert_eq!((got["files"].as_array().unwrap().len(), &got["failed"]), (54, &0.into()));
    assert_eq!(tree(&back.path().join("dataset")), tree(&root));
    assert_eq!(
        std::fs::read(back.path().join("extra.bin")).unwrap(),
        std::fs::read(&extra).unwrap()
    );

    // Again into the same place: every file exists, each refused, none replaced.
    let again = run(&["get", "-r", "dataset", "-o", back.path().to_str().unwrap()], &server);
    assert_eq!(again.status.code(), Some(1), "{}", stderr(&again));
    assert!(stderr(&again).contains("53 of 53 files failed"), "{}", stderr(&again));
    assert_eq!(tree(&back.path().join("dataset")), tree(&root));
}

#[test]
fn a_link_in_the_tree_or_an_escaping_name_is_refused_in_one_line_and_nothing_is_written() {
    let (store, server, local) = store_server();
    let root = local.path().join("tree");
    dataset(&root);
    std::os::unix::fs::symlink("/etc/passwd", root.join("level1-0/passwd")).unwrap();
    let out = run(&["send", root.to_str().unwrap()], &server);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert_eq!(stderr(&out).lines().count(), 1, "{}", stderr(&out));
    assert!(stderr(&out).contains("is a symbolic link"), "{}", stderr(&out));
    assert!(files_in(store.path()).is_empty(), "nothing sent: {:?}", files_in(store.path()));

    for name in ["../etc/passwd", "/etc/passwd", "a/../../b"] {
        let out = run(&["get", "-r", name, "-o", local.path().to_str().unwrap()], &server);
        assert_eq!(out.status.code(), Some(1), "{name}: {}", stderr(&out));
        assert_eq!(stderr(&out).lines().count(), 1, "{}", stderr(&out));
        assert!(stderr(&out).contains("invalid file name"), "{}", stderr(&out));
    }
    // A directory asked for without -r.
    std::fs::create_dir(store.path().join("dir")).unwrap();
    std::fs::write(store.path().join("dir/x"), b"x").unwrap();
    let out = run(&["get", "dir", "other", "-o", local.path().to_str().unwrap()], &server);
    assert!(
        stderr(&out).contains("\"dir\" is a directory (-r gets directories)"),
        "{}",
        stderr(&out)
    );
    assert_eq!(files_in(local.path()), ["tree"], "nothing fetched");
}

/// Every directory beneath `dir` with nothing in it (relative path), sorted.
fn empty_dirs(dir: &Path) -> Vec<String> {
    let mut found = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(at) = todo.pop() {
        let entries: Vec<_> = std::fs::read_dir(&at).unwrap().map(|e| e.unwrap().path()).collect();
        if entries.is_empty() && at != dir {
            found.push(at.strip_prefix(dir).unwrap().to_str().unwrap().to_owned());
        }
        todo.extend(entries.into_iter().filter(|path| path.is_dir()));
    }
    found.sort();
    found
}

/// Issue 41, part 5: the empty directories of a tree arrive, as with `rsync -r` and `scp -r`:
/// sent (`send DIR`) they are made on the server, got back (`get -r`) they are made here; a
/// directory that is empty as a whole goes both ways too.
#[test]
fn empty_directories_go_up_and_come_back() {
    let (store, server, local) = store_server();
    let root = local.path().join("tree");
    std::fs::create_dir_all(root.join("sub")).unwrap();
    random_file(&root.join("sub"), "f.bin", 1000);
    for dir in ["empty", "sub/also-empty/deeper", "hollow"] {
        std::fs::create_dir_all(root.join(dir)).unwrap();
    }
    let lonely = local.path().join("lonely");
    std::fs::create_dir(&lonely).unwrap();
    let sent = run(&["send", root.to_str().unwrap(), lonely.to_str().unwrap()], &server);
    assert!(sent.status.success(), "{}", stderr(&sent));
    let expected = ["lonely", "tree/empty", "tree/hollow", "tree/sub/also-empty/deeper"];
    assert_eq!(empty_dirs(store.path()), expected);
    assert_eq!(tree(&store.path().join("tree")), tree(&root));

    let back = tempfile::tempdir().unwrap();
    let out = back.path().to_str().unwrap();
    let got = run(&["get", "-r", "tree", "lonely", "-o", out], &server);
    assert!(got.status.success(), "{}", stderr(&got));
    assert_eq!(empty_dirs(back.path()), expected);
    assert_eq!(tree(&back.path().join("tree")), tree(&root));
}
