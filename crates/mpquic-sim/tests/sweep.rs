//! A sweep's output does not depend on how its runs were spread: `--jobs 1`, `--jobs 2` and
//! four shards merged write the same files, byte for byte; a merge refuses a file edited since
//! the shards ran and a missing shard. Without `--out`, `run` and `merge` write to
//! `results/<file name>/sim`, where the repository keeps a file's committed output.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

/// E3 in miniature: the scaled phases at 8/16/20 ms, three controllers, two seeds (6 runs; the
/// `shift_time` analysis draws a panel per point, so the SVGs travel through the partials too).
fn mini_e3() -> String {
    let path = format!("{}/../../experiments/E3-traffic-shifting.toml", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    // The 1 s phases skipped: the file's tables still name them.
    let skip = "[[skip]]\nphase = \"1s\"\ncontroller = \"amp\"\n\n[report]";
    text.replace("[report]", skip)
        .replace("seeds = [1, 2, 3]", "seeds = [1, 2]")
        .replace("\"flows.1.start\" = \"100ms\"", "\"flows.1.start\" = \"8ms\"")
        .replace("\"flows.1.stop\" = \"200ms\"", "\"flows.1.stop\" = \"16ms\"")
        .replace("\"flows.2.start\" = \"200ms\"", "\"flows.2.start\" = \"16ms\"")
        .replace("\"flows.2.stop\" = \"300ms\"", "\"flows.2.stop\" = \"20ms\"")
        .replace("duration = \"400ms\"", "duration = \"20ms\"")
        .replace(
            "values = [\"amp\", \"xmp\", \"dcm\", \"lia\", \"cubic\"]",
            "values = [\"amp\", \"lia\", \"cubic\"]",
        )
}

/// Run `mpquic-sim args...` in `dir`; its stderr on failure.
fn sim(dir: &Path, args: &[&str]) -> Result<(), String> {
    let out = Command::new(env!("CARGO_BIN_EXE_mpquic-sim"))
        .args(args)
        .current_dir(dir)
        .output()
        .expect("run mpquic-sim");
    match out.status.success() {
        true => Ok(()),
        false => Err(String::from_utf8_lossy(&out.stderr).into_owned()),
    }
}

/// Every file under `dir` (relative path -> bytes).
fn files(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut all = BTreeMap::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        all.insert(name, std::fs::read(&path).unwrap());
    }
    all
}

fn assert_same(a: &Path, b: &Path) {
    let (fa, fb) = (files(a), files(b));
    assert_eq!(fa.keys().collect::<Vec<_>>(), fb.keys().collect::<Vec<_>>(), "{a:?} vs {b:?}");
    for (name, bytes) in &fa {
        assert!(bytes == &fb[name], "{name} differs between {a:?} and {b:?}");
    }
}

#[test]
fn jobs_and_shards_write_the_same_output() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::write(dir.join("e3.toml"), mini_e3()).unwrap();
    let default_out = dir.join("results/e3/sim");
    sim(dir, &["run", "e3.toml", "--jobs", "1"]).unwrap();
    sim(dir, &["run", "e3.toml", "--out", "two", "--jobs", "2"]).unwrap();
    let written = files(&default_out);
    for name in ["experiment.json", "tables.md", "shift_time.svg"] {
        assert!(written.contains_key(name), "no {name}: {:?}", written.keys());
    }
    assert_same(&default_out, &dir.join("two"));

    for i in 0..4 {
        let shard = format!("{i}/4");
        sim(
            dir,
            &["run", "e3.toml", "--out", &format!("shard{i}"), "--shard", &shard, "--jobs", "1"],
        )
        .unwrap();
    }
    sim(dir, &["merge", "shard0", "shard1", "shard2", "shard3", "--out", "merged"]).unwrap();
    assert_same(&dir.join("two"), &dir.join("merged"));
    std::fs::remove_dir_all(&default_out).unwrap();
    sim(dir, &["merge", "shard0", "shard1", "shard2", "shard3"]).unwrap();
    assert_same(&dir.join("two"), &default_out);

    let missing = sim(dir, &["merge", "shard0", "shard1", "shard3", "--out", "no"]).unwrap_err();
    assert!(missing.contains("missing shards of e3.toml: 2"), "{missing}");
    std::fs::write(dir.join("e3.toml"), mini_e3().replace("seeds = [1, 2]", "seeds = [1, 3]"))
        .unwrap();
    let edited =
        sim(dir, &["merge", "shard0", "shard1", "shard2", "shard3", "--out", "no"]).unwrap_err();
    assert!(edited.contains("changed since the shards ran"), "{edited}");
}
