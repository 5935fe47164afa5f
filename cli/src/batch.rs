//! Many files over one connection: `send PATH...` with several files or directories,
//! `get NAME...` with several names or `-r`, and `ls`. Each file is its own stream, up to
//! `--parallel` at once; each is verified and stored atomically on its own, so one failure
//! leaves the others whole.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use anyhow::{anyhow, bail, Context, Result};
use futures_util::StreamExt;
use indicatif::ProgressBar;
use mpquic::noq::RecvStream;
use mpquic::MultipathConnection;

use crate::args::{BatchArgs, ConnectArgs, GetArgs, LsArgs, SendArgs};
use crate::client::{connect, put, start_download};
use crate::errors::one_line;
use crate::files::{Dir, PartialFile};
use crate::output::{human_bytes, progress_bar, say, BatchResult, FileResult};
use crate::progress::{self, Sink};
use crate::ratelimit::ByteRate;
use crate::transfer::{check_path, read_listing, read_reply, Listing, Request};

/// Whether `send` moves several files (several paths, or a directory) rather than one.
pub fn is_batch_send(args: &SendArgs) -> bool {
    args.files.len() > 1 || args.files.first().is_some_and(|path| path.is_dir())
}

/// Whether `get` moves several files (several names, or -r) rather than one.
pub fn is_batch_get(args: &GetArgs) -> bool {
    args.names.len() > 1 || args.recursive
}

/// A file to move: its path on this host and on the server, and its size.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Item {
    local: PathBuf,
    remote: String,
    size: u64,
}

/// What a command moves: the files, and the empty directories of the trees among them (the
/// others arrive with their files), as `rsync -r` and `scp -r` make them.
#[derive(Debug, Default)]
struct Plan {
    items: Vec<Item>,
    /// Their paths: on the server for `send`, local for `get`.
    empty_dirs: Vec<String>,
}

/// The files `send` moves, in order, each checked against the server's name rules before
/// anything is sent: a directory's files under its name, links inside it refused.
fn plan_send(paths: &[PathBuf]) -> Result<Plan> {
    let mut plan = Plan::default();
    for path in paths {
        // A path given by name is followed if it is a link, as a single file always was.
        let meta =
            std::fs::metadata(path).with_context(|| format!("cannot read {}", path.display()))?;
        let name = own_name(path, meta.is_dir())?;
        if meta.is_dir() {
            walk_local(path, &name, &mut plan)?;
        } else if meta.is_file() {
            plan.items.push(Item { local: path.clone(), remote: name, size: meta.len() });
        } else {
            bail!("{} is not a regular file or a directory", path.display());
        }
    }
    let mut names = std::collections::HashSet::new();
    for item in &plan.items {
        check_path(&item.remote)
            .with_context(|| format!("{} cannot be sent", item.local.display()))?;
        if !names.insert(&item.remote) {
            bail!("two files would be sent as {:?}", item.remote);
        }
    }
    for dir in &plan.empty_dirs {
        check_path(dir).with_context(|| format!("directory {dir:?} cannot be sent"))?;
    }
    Ok(plan)
}

/// The name `path` goes under: its last component (a directory's own, even as `.`).
fn own_name(path: &Path, is_dir: bool) -> Result<String> {
    let resolved = if is_dir { std::fs::canonicalize(path)? } else { path.to_path_buf() };
    resolved
        .file_name()
        .and_then(|name| name.to_str())
        .map(str::to_owned)
        .ok_or_else(|| anyhow!("{} has no name usable on the server", path.display()))
}

/// Add the files beneath `dir`, as `prefix/...`, sorted by name (`dir` itself as `prefix`
/// when empty); a link or special file is an error naming it.
fn walk_local(dir: &Path, prefix: &str, plan: &mut Plan) -> Result<()> {
    let read = || std::fs::read_dir(dir)?.collect::<std::io::Result<Vec<_>>>();
    let mut entries = read().with_context(|| format!("cannot read {}", dir.display()))?;
    if entries.is_empty() {
        plan.empty_dirs.push(prefix.to_owned());
    }
    entries.sort_by_key(|entry| entry.file_name());
    for entry in entries {
        let path = entry.path();
        let Ok(name) = entry.file_name().into_string() else {
            bail!("{} cannot be sent: its name is not UTF-8", path.display());
        };
        let remote = format!("{prefix}/{name}");
        let kind = entry.file_type().with_context(|| format!("cannot read {}", path.display()))?;
        if kind.is_symlink() {
            bail!(
                "{} is a symbolic link: links inside a directory are not followed (send its \
                 target by name, or remove the link)",
                path.display()
            );
        } else if kind.is_dir() {
            walk_local(&path, &remote, plan)?;
        } else if kind.is_file() {
            let size =
                entry.metadata().with_context(|| format!("cannot read {}", path.display()))?;
            plan.items.push(Item { local: path, remote, size: size.len() });
        } else {
            bail!("{} is not a regular file or a directory", path.display());
        }
    }
    Ok(())
}

/// How the files of one command are shown: one overall bar, a line per finished file.
struct Show {
    bar: ProgressBar,
    json: bool,
}

impl Show {
    fn new(total: u64, json: bool) -> Self {
        Show { bar: progress_bar(total, json), json }
    }

    /// Print a finished file's line (above the bar on a terminal); JSON reports it at the end.
    fn finished(&self, direction: &str, file: &FileResult) {
        if !self.json {
            say(&self.bar, &file.line(direction));
        }
    }
}

/// The result of one file, from its outcome (where its data started, when it arrived).
fn file_result(item: &Item, started: Instant, outcome: &Result<u64>) -> FileResult {
    FileResult {
        name: item.remote.clone(),
        bytes: item.size,
        resumed_from: *outcome.as_ref().unwrap_or(&0),
        fct_s: started.elapsed().as_secs_f64(),
        verified: outcome.is_ok(),
        error: outcome.as_ref().err().map(one_line),
    }
}

/// Move every item with `one`, up to `parallel` at once; returns each file's result and the
/// first failure.
async fn run_all<F>(
    items: Vec<Item>,
    parallel: u32,
    direction: &'static str,
    show: &Show,
    one: impl Fn(Item) -> F,
) -> (Vec<FileResult>, Option<anyhow::Error>)
where
    F: std::future::Future<Output = Result<u64>>,
{
    let runs = futures_util::stream::iter(items).map(|item| {
        let run = one(item.clone());
        async move {
            let started = Instant::now();
            let outcome = run.await;
            let result = file_result(&item, started, &outcome);
            show.finished(direction, &result);
            (result, outcome.err())
        }
    });
    let mut runs = runs.buffer_unordered(parallel as usize);
    let (mut results, mut first) = (Vec::new(), None);
    while let Some((result, error)) = runs.next().await {
        results.push(result);
        first = first.or(error);
    }
    (results, first)
}

/// Print the batch's result, and fail with the first failure when any file failed.
fn report(result: &BatchResult, json: bool, first: Option<anyhow::Error>) -> Result<()> {
    if json {
        println!("{}", serde_json::to_string(result).unwrap_or_default());
    } else {
        print!("{}", result.table());
    }
    match first {
        None => Ok(()),
        Some(e) => Err(e.context(format!(
            "{} of {} files failed, the first",
            result.failed,
            result.files.len()
        ))),
    }
}

/// Send files and directories over one connection.
pub async fn send(args: SendArgs) -> Result<()> {
    if args.name.is_some() {
        bail!("--name names a single file; several files and directories keep their own names");
    }
    if args.repeat > 1 {
        bail!("--repeat repeats a single file; several files go once over one connection");
    }
    let plan = plan_send(&args.files)?;
    let session = connect(&args.connect).await?;
    let result = send_items(&session.conn, plan, &args).await?;
    session.close().await;
    result
}

/// Send the planned items, then make the empty directories; the outer error is a failure to
/// report, the inner the files' (or a directory's).
async fn send_items(conn: &MultipathConnection, plan: Plan, args: &SendArgs) -> Result<Result<()>> {
    let batch = Batch::start(conn, &plan.items, &args.batch, &args.connect);
    let (files, mut first) =
        run_all(plan.items, args.batch.parallel, "sent", &batch.show, |item| {
            put_file(conn, item, !args.batch.no_resume, batch.rate.as_ref(), &batch.show.bar)
        })
        .await;
    for dir in &plan.empty_dirs {
        let made = make_dir(conn, dir).await.with_context(|| format!("directory {dir:?}"));
        first = first.or(made.err());
    }
    Ok(batch.finish("send", files, first, conn))
}

/// What every file of a command shares while they run: the display, the cap, the clock.
struct Batch {
    show: Show,
    _live: Option<progress::IntervalReporter>,
    rate: Option<ByteRate>,
    started: Instant,
}

impl Batch {
    fn start(
        conn: &MultipathConnection,
        items: &[Item],
        batch: &BatchArgs,
        connect: &ConnectArgs,
    ) -> Batch {
        let show = Show::new(items.iter().map(|i| i.size).sum(), connect.json);
        let live = progress::start(conn, connect.interval, Sink::new(connect.json, &show.bar));
        Batch { show, _live: live, rate: batch.limiter(), started: Instant::now() }
    }

    /// Print the result; the first failure, if any, is the command's.
    fn finish(
        self,
        direction: &'static str,
        files: Vec<FileResult>,
        first: Option<anyhow::Error>,
        conn: &MultipathConnection,
    ) -> Result<()> {
        self.show.bar.finish_and_clear();
        let result = BatchResult::new(direction, files, self.started.elapsed(), conn.report());
        report(&result, self.show.json, first)
    }
}

/// Upload one file, opened only at its turn (so only `--parallel` files are open at once);
/// returns where its data started.
async fn put_file(
    conn: &MultipathConnection,
    item: Item,
    resume: bool,
    rate: Option<&ByteRate>,
    bar: &ProgressBar,
) -> Result<u64> {
    let mut file = tokio::fs::File::open(&item.local)
        .await
        .with_context(|| format!("cannot open {}", item.local.display()))?;
    let (_, start) = put(conn, &item.remote, &mut file, item.size, resume, rate, bar).await?;
    Ok(start)
}

/// Ask the server for one thing: `request`'s reply, and the stream to read what follows.
async fn ask(conn: &MultipathConnection, request: Request) -> Result<RecvStream> {
    let (mut send, mut recv) = conn.connection().open_bi().await.context("opening a stream")?;
    request.write(&mut send).await?;
    send.finish().context("finishing the request")?;
    read_reply(&mut recv).await?;
    Ok(recv)
}

/// Ask the server for the files at or beneath `path` (all it holds when empty); with `tree`,
/// the empty directories too, from a server that lists them (an older one: the files only).
async fn list(conn: &MultipathConnection, path: &str, tree: bool) -> Result<Listing> {
    let dir = path.to_owned();
    let mut recv = match ask(conn, Request::List { dir: dir.clone(), tree }).await {
        Err(e) if tree && one_line(&e).contains("unknown request type 0x54") => {
            ask(conn, Request::List { dir, tree: false }).await?
        }
        asked => asked?,
    };
    read_listing(&mut recv).await
}

/// Make the directory `path` on the server (an empty one of a sent tree).
async fn make_dir(conn: &MultipathConnection, path: &str) -> Result<()> {
    ask(conn, Request::MakeDir { dir: path.to_owned() }).await.map(drop)
}

/// The files `get` moves: each name's, listed by the server, to be written under the name's
/// last component (a directory's files beneath it). A directory without -r is an error.
async fn plan_get(conn: &MultipathConnection, args: &GetArgs) -> Result<Plan> {
    let mut plan = Plan::default();
    for name in &args.names {
        let components = check_path(name)?;
        let parent_len = name.len() - components.last().expect("one at least").len();
        let listed = list(conn, name, true).await.with_context(|| format!("get {name:?}"))?;
        let a_dir = listed.files.iter().any(|(remote, _)| remote != name);
        if !args.recursive && (a_dir || !listed.empty_dirs.is_empty()) {
            bail!("{name:?} is a directory (-r gets directories)");
        }
        for (remote, size) in listed.files {
            let local = PathBuf::from(&remote[parent_len..]);
            plan.items.push(Item { local, remote, size });
        }
        plan.empty_dirs.extend(listed.empty_dirs.iter().map(|dir| dir[parent_len..].to_owned()));
    }
    Ok(plan)
}

/// Download several files or directories over one connection into the output directory.
pub async fn get(args: GetArgs) -> Result<()> {
    let target = args.output.clone().unwrap_or_else(|| PathBuf::from("."));
    let top = Dir::open(&target)?;
    for name in &args.names {
        check_path(name)?;
    }
    let session = connect(&args.connect).await?;
    let result = match plan_get(&session.conn, &args).await {
        Ok(plan) => get_items(&session.conn, plan, top, &args).await,
        Err(e) => Err(e),
    };
    session.close().await;
    result?
}

/// Make the planned empty directories and download the planned items beneath `top`.
async fn get_items(
    conn: &MultipathConnection,
    plan: Plan,
    top: Arc<Dir>,
    args: &GetArgs,
) -> Result<Result<()>> {
    for dir in &plan.empty_dirs {
        top.beneath(&check_path(dir)?, true)?;
    }
    let batch = Batch::start(conn, &plan.items, &args.batch, &args.connect);
    let (files, first) = run_all(plan.items, args.batch.parallel, "got", &batch.show, |item| {
        get_file(conn, item, &top, args, batch.rate.as_ref(), &batch.show.bar)
    })
    .await;
    Ok(batch.finish("get", files, first, conn))
}

/// Download one file beneath `top` (its directories made, never through a link); it appears
/// under its name only once complete and verified. Returns where its data started.
async fn get_file(
    conn: &MultipathConnection,
    item: Item,
    top: &Arc<Dir>,
    args: &GetArgs,
    rate: Option<&ByteRate>,
    bar: &ProgressBar,
) -> Result<u64> {
    let local = item.local.to_str().expect("made from a checked name");
    let components = check_path(local)?;
    let (name, parents) = components.split_last().expect("one at least");
    let dir = top.beneath(parents, true)?;
    if !args.force && dir.contains(name) {
        bail!("{local} exists (--force replaces it)");
    }
    let resume = !args.batch.no_resume;
    let mut partial = PartialFile::for_name(dir, name, resume)?;
    let download = start_download(conn, &item.remote, &mut partial, resume).await?;
    let start = download.receive(&item.remote, &mut partial, rate, bar).await?;
    partial.commit(name, args.force).await?;
    Ok(start)
}

/// List what the server holds: one line per file (size, path), or a JSON array.
pub async fn ls(args: LsArgs) -> Result<()> {
    let path = args.dir.clone().unwrap_or_default();
    if !path.is_empty() {
        check_path(&path)?;
    }
    let session = connect(&args.connect).await?;
    let listed = list(&session.conn, &path, false).await;
    session.close().await;
    let files = listed?.files;
    if args.connect.json {
        let files: Vec<_> = files
            .iter()
            .map(|(name, size)| serde_json::json!({"name": name, "size": size}))
            .collect();
        println!("{}", serde_json::Value::Array(files));
    } else {
        for (name, size) in files {
            println!("{:>10}  {name}", human_bytes(size));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sent_tree_keeps_its_relative_paths_and_refuses_links() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("data");
        std::fs::create_dir_all(root.join("sub/deeper")).unwrap();
        std::fs::write(root.join("a.bin"), b"aa").unwrap();
        std::fs::write(root.join("sub/deeper/b.bin"), b"bbb").unwrap();
        std::fs::write(tmp.path().join("single.txt"), b"s").unwrap();
        let paths = [root.clone(), tmp.path().join("single.txt")];
        std::fs::create_dir_all(root.join("empty/deeper")).unwrap();
        let plan = plan_send(&paths).unwrap();
        assert_eq!(plan.empty_dirs, ["data/empty/deeper"]);
        let names: Vec<(String, u64)> =
            plan.items.into_iter().map(|i| (i.remote, i.size)).collect();
        let expected = [("data/a.bin", 2), ("data/sub/deeper/b.bin", 3), ("single.txt", 1)];
        assert_eq!(names, expected.map(|(n, s)| (n.to_string(), s)));

        std::os::unix::fs::symlink("/etc/passwd", root.join("sub/passwd")).unwrap();
        let refused = plan_send(&paths).unwrap_err().to_string();
        assert!(refused.contains("is a symbolic link"), "{refused}");
        std::fs::remove_file(root.join("sub/passwd")).unwrap();
        std::fs::write(root.join(".hidden"), b"h").unwrap();
        let refused = format!("{:#}", plan_send(&paths).unwrap_err());
        assert!(refused.contains("invalid file name \".hidden\""), "{refused}");
        std::fs::remove_file(root.join(".hidden")).unwrap();
        let twice = plan_send(&[root.clone(), root]).unwrap_err().to_string();
        assert!(twice.contains("two files would be sent as"), "{twice}");
    }
}
