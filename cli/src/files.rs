//! Files in one directory, reached only through the directory's descriptor.
//!
//! Names are single path components (see `transfer::check_name`), so opening with `O_NOFOLLOW`
//! relative to the directory's descriptor never leaves the directory, not even through a symlink
//! planted in it. A file being received is written to a temporary created exclusively
//! (`O_EXCL`) under an unpredictable name, locked while it is written, and takes its real name
//! with one atomic rename that, unless replacing is allowed, fails rather than replace a file
//! (`renameat2(RENAME_NOREPLACE)`, or `link` + `unlink` where the file system lacks it). Errors
//! name the file, never the directory: they may be sent to a peer.

use std::ffi::CString;
use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{anyhow, bail, Context, Result};
use tokio::io::AsyncSeekExt;

use crate::resume::{hash_prefix, Offer};
use crate::transfer::Listing;

/// Temporaries start with this; a server removes unlocked ones left by a killed process.
const TEMP_PREFIX: &str = ".mpquic-part-";
/// A resumable transfer's temporary: this, then a hash of the file's name, so the next transfer
/// of the name finds it (`PartialFile::resumable`).
const RESUME_PREFIX: &str = ".mpquic-part-resume-";
/// A server starting up keeps resumable temporaries written to this recently, for their
/// transfers to resume, and removes older ones with the other stale temporaries.
const RESUMABLE_FOR: Duration = Duration::from_secs(7 * 24 * 3600);

/// An open directory.
#[derive(Debug)]
pub struct Dir {
    fd: OwnedFd,
}

fn c_name(name: &str) -> io::Result<CString> {
    CString::new(name).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))
}

fn check(rc: libc::c_int) -> io::Result<libc::c_int> {
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(rc)
    }
}

impl Dir {
    /// Open `path`, which must be a directory.
    pub fn open(path: &Path) -> Result<Arc<Dir>> {
        use std::os::unix::ffi::OsStrExt;
        let c_path = CString::new(path.as_os_str().as_bytes())
            .map_err(|_| anyhow!("{} is not a usable path", path.display()))?;
        // SAFETY: a NUL-terminated path; the descriptor returned is owned below.
        let fd = check(unsafe {
            libc::open(c_path.as_ptr(), libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC)
        })
        .map_err(|e| match e.raw_os_error() {
            Some(libc::ENOTDIR) => anyhow!("{} is not a directory", path.display()),
            _ => anyhow!("cannot use directory {}: {e}", path.display()),
        })?;
        // SAFETY: `fd` was just opened and nothing else owns it.
        Ok(Arc::new(Dir { fd: unsafe { OwnedFd::from_raw_fd(fd) } }))
    }

    /// `openat(2)` relative to this directory, never following a symlink.
    fn open_at(&self, name: &str, flags: libc::c_int) -> io::Result<File> {
        let c = c_name(name)?;
        let flags = flags | libc::O_NOFOLLOW | libc::O_CLOEXEC;
        // SAFETY: a valid directory descriptor and a NUL-terminated name.
        let fd = check(unsafe { libc::openat(self.fd.as_raw_fd(), c.as_ptr(), flags, 0o600) })?;
        // SAFETY: `fd` was just opened and nothing else owns it.
        Ok(unsafe { File::from_raw_fd(fd) })
    }

    /// Open `name` for reading: it must be a regular file, not a link, directory or device.
    pub fn open_regular(&self, name: &str) -> Result<File> {
        // O_NONBLOCK: opening a FIFO must not wait for a writer (regular files ignore it).
        let file = self.open_at(name, libc::O_RDONLY | libc::O_NONBLOCK).map_err(|e| {
            match e.raw_os_error() {
                Some(libc::ENOENT) => anyhow!("no file named {name:?}"),
                Some(libc::ELOOP) => anyhow!("{name:?} is a symbolic link, which is not served"),
                _ => anyhow!("cannot open {name:?}: {e}"),
            }
        })?;
        let meta = file.metadata().with_context(|| format!("cannot read {name:?}"))?;
        if !meta.is_file() {
            bail!("{name:?} is not a regular file");
        }
        Ok(file)
    }

    /// Whether anything (a file, a link, a directory) has this name.
    pub fn contains(&self, name: &str) -> bool {
        self.stat(name).is_ok()
    }

    /// `name`'s own status (a link's, not its target's).
    fn stat(&self, name: &str) -> io::Result<libc::stat> {
        let c = c_name(name)?;
        // SAFETY: a valid directory descriptor, a NUL-terminated name, a zeroed stat to fill.
        let mut stat: libc::stat = unsafe { std::mem::zeroed() };
        check(unsafe {
            libc::fstatat(self.fd.as_raw_fd(), c.as_ptr(), &mut stat, libc::AT_SYMLINK_NOFOLLOW)
        })?;
        Ok(stat)
    }

    /// The directory `components` beneath this one, each step opened without following a
    /// symlink (a link anywhere on the way is refused, so nothing outside can be reached);
    /// with `create`, missing directories are made.
    pub fn beneath(self: &Arc<Self>, components: &[&str], create: bool) -> Result<Arc<Dir>> {
        let mut dir = self.clone();
        for (i, component) in components.iter().enumerate() {
            dir = Arc::new(dir.subdir(component, create).map_err(|e| {
                let path = components[..=i].join("/");
                match e.raw_os_error() {
                    Some(libc::ENOENT) => anyhow!("no directory named {path:?}"),
                    Some(libc::ELOOP | libc::ENOTDIR) => {
                        anyhow!("{path:?} is not a directory (links are not followed)")
                    }
                    _ => anyhow!("cannot open directory {path:?}: {e}"),
                }
            })?);
        }
        Ok(dir)
    }

    /// The directory `name` in this one, made first with `create`; never a link.
    fn subdir(&self, name: &str, create: bool) -> io::Result<Dir> {
        let c = c_name(name)?;
        if create {
            // SAFETY: a valid directory descriptor and a NUL-terminated name.
            let made = check(unsafe { libc::mkdirat(self.fd.as_raw_fd(), c.as_ptr(), 0o755) });
            match made {
                Err(e) if e.kind() != io::ErrorKind::AlreadyExists => return Err(e),
                _ => {}
            }
        }
        let flags = libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC;
        // SAFETY: a valid directory descriptor and a NUL-terminated name.
        let fd = check(unsafe { libc::openat(self.fd.as_raw_fd(), c.as_ptr(), flags) })?;
        // SAFETY: `fd` was just opened and nothing else owns it.
        Ok(Dir { fd: unsafe { OwnedFd::from_raw_fd(fd) } })
    }

    /// The regular files beneath this directory, as (`prefix` + relative path, size), and
    /// the directories beneath which none is (this one included, unless `prefix` is empty),
    /// sorted; links and other special files are left out and not followed. At most `limit`
    /// entries.
    pub fn walk(&self, prefix: &str, limit: usize) -> Result<Listing> {
        let mut listing = Listing::default();
        self.walk_into(prefix, &mut listing, limit)?;
        listing.files.sort();
        listing.empty_dirs.sort();
        Ok(listing)
    }

    fn walk_into(&self, prefix: &str, listing: &mut Listing, limit: usize) -> Result<()> {
        let before = listing.files.len() + listing.empty_dirs.len();
        // Hidden names are neither asked for nor served (the temporaries among them).
        for name in self.names()?.into_iter().filter(|name| !name.starts_with('.')) {
            let Ok(stat) = self.stat(&name) else { continue };
            let path = format!("{prefix}{name}");
            match stat.st_mode & libc::S_IFMT {
                libc::S_IFREG => listing.files.push((path, stat.st_size as u64)),
                libc::S_IFDIR => {
                    let dir = self.subdir(&name, false)?;
                    dir.walk_into(&format!("{path}/"), listing, limit)?;
                }
                _ => continue,
            }
            if listing.files.len() + listing.empty_dirs.len() > limit {
                bail!("more than {limit} files: list a directory within");
            }
        }
        let empty = listing.files.len() + listing.empty_dirs.len() == before;
        if let Some(dir) = prefix.strip_suffix('/').filter(|_| empty) {
            listing.empty_dirs.push(dir.to_owned());
        }
        Ok(())
    }

    /// The UTF-8 names in this directory (others cannot be asked for, nor be temporaries).
    fn names(&self) -> io::Result<Vec<String>> {
        // fdopendir takes its descriptor over: give it a new one on the same directory.
        // SAFETY: a valid directory descriptor and a NUL-terminated name.
        let fd = check(unsafe {
            libc::openat(self.fd.as_raw_fd(), c".".as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC)
        })?;
        // SAFETY: `fd` is a directory descriptor this function owns; on success the stream
        // owns it and closedir closes both.
        let stream = unsafe { libc::fdopendir(fd) };
        if stream.is_null() {
            let e = io::Error::last_os_error();
            // SAFETY: fdopendir failed, so `fd` is still ours to close.
            unsafe { libc::close(fd) };
            return Err(e);
        }
        let mut names = Vec::new();
        loop {
            // SAFETY: a stream opened above and not yet closed.
            let entry = unsafe { libc::readdir(stream) };
            if entry.is_null() {
                break;
            }
            // SAFETY: readdir returned an entry whose name is NUL-terminated.
            let name = unsafe { std::ffi::CStr::from_ptr((*entry).d_name.as_ptr()) };
            match name.to_str() {
                Ok("." | "..") | Err(_) => {}
                Ok(name) => names.push(name.to_owned()),
            }
        }
        // SAFETY: the stream opened above, closed once.
        unsafe { libc::closedir(stream) };
        Ok(names)
    }

    /// Bytes an unprivileged writer may still use on this directory's file system.
    pub fn free_space(&self) -> io::Result<u64> {
        // SAFETY: a valid descriptor and a zeroed statvfs to fill.
        let mut stat: libc::statvfs = unsafe { std::mem::zeroed() };
        check(unsafe { libc::fstatvfs(self.fd.as_raw_fd(), &mut stat) })?;
        Ok((stat.f_bavail as u64).saturating_mul(stat.f_frsize as u64))
    }

    /// Remove the temporaries no live process holds (left by a killed one), in this directory
    /// and the (not hidden) ones beneath it, where uploads of paths write theirs; returns how
    /// many. Links are not followed.
    pub fn remove_stale_temporaries(&self) -> usize {
        let Ok(names) = self.names() else { return 0 };
        let mut removed = 0;
        for name in names {
            if name.starts_with(TEMP_PREFIX) {
                if name.starts_with(RESUME_PREFIX) && self.recently_written(&name) {
                    continue; // kept for its transfer to resume
                }
                removed += usize::from(self.remove_if_stale(&name));
            } else if !name.starts_with('.') {
                if let Ok(dir) = self.subdir(&name, false) {
                    removed += dir.remove_stale_temporaries();
                }
            }
        }
        removed
    }

    /// Whether `name` was written to within `RESUMABLE_FOR`.
    fn recently_written(&self, name: &str) -> bool {
        let Ok(stat) = self.stat(name) else { return false };
        let written = std::time::UNIX_EPOCH + Duration::from_secs(stat.st_mtime as u64);
        written.elapsed().map_or(true, |age| age < RESUMABLE_FOR)
    }

    /// Whether `name` in this directory is the file open as `file` (same device and inode).
    fn names_file(&self, name: &str, file: &impl AsRawFd) -> bool {
        match (self.stat(name), identity(file)) {
            (Ok(stat), Ok(id)) => (stat.st_dev, stat.st_ino) == id,
            _ => false,
        }
    }

    /// Remove the temporary `name` if no live process holds it; whether it was removed.
    fn remove_if_stale(&self, name: &str) -> bool {
        let Ok(file) = self.open_at(name, libc::O_RDONLY | libc::O_NONBLOCK) else { return false };
        // A writer holds its lock until it commits or is gone.
        lock(&file).is_ok() && self.remove(name).is_ok()
    }

    fn remove(&self, name: &str) -> io::Result<()> {
        let c = c_name(name)?;
        // SAFETY: a valid directory descriptor and a NUL-terminated name.
        check(unsafe { libc::unlinkat(self.fd.as_raw_fd(), c.as_ptr(), 0) }).map(drop)
    }

    /// Give `from` the name `to`, atomically; unless `replace`, fail with `EEXIST` rather than
    /// replace an existing `to`.
    fn rename(&self, from: &str, to: &str, replace: bool) -> io::Result<()> {
        let (c_from, c_to, fd) = (c_name(from)?, c_name(to)?, self.fd.as_raw_fd());
        let flags = if replace { 0 } else { libc::RENAME_NOREPLACE };
        // SAFETY: a valid directory descriptor and NUL-terminated names.
        let renamed =
            check(unsafe { libc::renameat2(fd, c_from.as_ptr(), fd, c_to.as_ptr(), flags) });
        match renamed {
            Err(e) if !replace && matches!(e.raw_os_error(), Some(libc::EINVAL | libc::ENOSYS)) => {
                // No RENAME_NOREPLACE here: a hard link cannot replace either.
                // SAFETY: as above.
                check(unsafe { libc::linkat(fd, c_from.as_ptr(), fd, c_to.as_ptr(), 0) })?;
                self.remove(from)
            }
            other => other.map(drop),
        }
    }
}

/// Take the exclusive lock of `file` without waiting.
fn lock(file: &impl AsRawFd) -> io::Result<()> {
    // SAFETY: a valid descriptor.
    check(unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) }).map(drop)
}

/// An open file's status, without waiting (a drop cannot).
fn fstat(file: &impl AsRawFd) -> io::Result<libc::stat> {
    // SAFETY: a valid descriptor and a zeroed stat to fill.
    let mut stat: libc::stat = unsafe { std::mem::zeroed() };
    check(unsafe { libc::fstat(file.as_raw_fd(), &mut stat) })?;
    Ok(stat)
}

/// The length of an open file.
fn length(file: &impl AsRawFd) -> io::Result<u64> {
    fstat(file).map(|stat| stat.st_size as u64)
}

/// An open file's identity on its host: (device, inode).
fn identity(file: &impl AsRawFd) -> io::Result<(u64, u64)> {
    fstat(file).map(|stat| (stat.st_dev, stat.st_ino))
}

/// 128 random bits as hex, from the kernel.
fn random_suffix() -> io::Result<String> {
    let mut bytes = [0u8; 16];
    // SAFETY: a valid buffer of the given length.
    let n = unsafe { libc::getrandom(bytes.as_mut_ptr().cast(), bytes.len(), 0) };
    if n != bytes.len() as isize {
        return Err(io::Error::last_os_error());
    }
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// Why a name's resumable temporary cannot be had now.
fn busy(name: &str) -> String {
    format!(
        "{name:?} is being received by another transfer (one cut off lately holds it until its \
         connection times out, or a new transfer of the same upload takes it over: try again then)"
    )
}

/// Held while a partial file's space is reserved (see [`PartialFile::reserve`]).
static RESERVING: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// A file being received: written under a temporary name, renamed when complete.
pub struct PartialFile {
    dir: Arc<Dir>,
    temp: String,
    file: Option<tokio::fs::File>,
    /// Kept when dropped uncommitted (if not empty), for the next transfer to resume.
    keep: bool,
    /// Whether this value holds the file's lock; one that does not never writes, cuts or
    /// removes the file (`open_resumable`).
    locked: bool,
}

impl PartialFile {
    /// A new, empty, exclusively created and locked temporary in `dir`.
    pub fn create(dir: Arc<Dir>) -> Result<Self> {
        let flags = libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL;
        let (temp, file) = loop {
            let temp = format!("{TEMP_PREFIX}{}", random_suffix()?);
            match dir.open_at(&temp, flags) {
                Ok(file) => break (temp, file),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(e) => bail!("cannot create a temporary file: {e}"),
            }
        };
        if let Err(e) = lock(&file) {
            let _ = dir.remove(&temp);
            bail!("cannot lock a temporary file: {e}");
        }
        Ok(PartialFile { dir, temp, file: Some(file.into()), keep: false, locked: true })
    }

    /// The temporary of the file `name` in `dir`: `resumable`'s, or else a new one of
    /// `create`'s.
    pub fn for_name(dir: Arc<Dir>, name: &str, resumable: bool) -> Result<Self> {
        if resumable {
            Self::resumable(dir, name)
        } else {
            Self::create(dir)
        }
    }

    /// The resumable temporary of the file `name` in `dir`: what an earlier, interrupted
    /// transfer of `name` left (or a new, empty one), locked. Another transfer holding it is
    /// refused. Dropped uncommitted, it stays (unless empty) for the next transfer to resume.
    pub fn resumable(dir: Arc<Dir>, name: &str) -> Result<Self> {
        let partial = Self::open_resumable(dir, name)?;
        if !partial.locked {
            bail!("{}", busy(name));
        }
        Ok(partial)
    }

    /// As `resumable`, but a temporary another transfer holds is opened unlocked (`locked()`
    /// false): it can be read and offered, and taken over with `lock_within` once its holder
    /// lets go, but not written.
    pub fn open_resumable(dir: Arc<Dir>, name: &str) -> Result<Self> {
        let temp = format!("{RESUME_PREFIX}{}", &blake3::hash(name.as_bytes()).to_hex()[..32]);
        // A holder may commit (rename) or remove it between our open and our lock: then the
        // name no longer leads to what we locked, and we open again.
        for _ in 0..3 {
            let file = dir
                .open_at(&temp, libc::O_RDWR | libc::O_CREAT)
                .map_err(|e| anyhow!("cannot open the partial file of {name:?}: {e}"))?;
            let locked = lock(&file).is_ok();
            if !locked || dir.names_file(&temp, &file) {
                return Ok(PartialFile { dir, temp, file: Some(file.into()), keep: true, locked });
            }
        }
        bail!("cannot lock the partial file of {name:?}: it keeps changing")
    }

    /// Whether this transfer holds the file (see `open_resumable`).
    pub fn locked(&self) -> bool {
        self.locked
    }

    /// The file's identity on its host (device, inode): the same for every transfer of it.
    pub fn key(&mut self) -> Result<(u64, u64)> {
        Ok(identity(self.file())?)
    }

    /// Take the lock of a file opened unlocked, waiting up to `within` for its holder to let
    /// go. A holder lets go only once its descriptor is closed, after its last write: nothing
    /// it wrote can land after this returns. `name` is the file's, for errors.
    pub async fn lock_within(&mut self, within: Duration, name: &str) -> Result<()> {
        let deadline = tokio::time::Instant::now() + within;
        while lock(self.file()).is_err() {
            if tokio::time::Instant::now() >= deadline {
                bail!("{}", busy(name));
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        self.locked = true;
        if !self.dir.names_file(&self.temp, self.file.as_ref().expect("open until commit")) {
            bail!("the partial file of {name:?} went away while it was taken over");
        }
        Ok(())
    }

    /// What a receiver holding this copy of a file of `size` bytes offers the sender.
    pub async fn offer(&mut self, size: u64) -> Result<Offer> {
        let file = self.file();
        let held = file.metadata().await.context("reading the partial file")?.len();
        file.seek(io::SeekFrom::Start(0)).await.context("reading the partial file")?;
        Offer::of_copy(file, held, size).await
    }

    /// Keep the first `start` bytes (the sender resumes there) of a file of `size` bytes and
    /// return their hash state; what follows is written after them.
    pub async fn resume_at(&mut self, start: u64, size: u64) -> Result<blake3::Hasher> {
        if !self.locked {
            bail!("the partial file is held by another transfer");
        }
        let file = self.file();
        if file.metadata().await.context("reading the partial file")?.len() > start {
            file.set_len(start).await.context("cutting the partial file")?;
            // Cutting a file also frees the space reserved beyond its end: reserve it again.
            self.reserve(size)?;
        }
        let file = self.file();
        file.seek(io::SeekFrom::Start(0)).await.context("reading the partial file")?;
        let seen = hash_prefix(file, start).await?;
        file.seek(io::SeekFrom::Start(start)).await.context("writing the partial file")?;
        Ok(seen)
    }

    /// Remove the temporary when dropped uncommitted, even a resumable one: its data is
    /// known to be wrong.
    pub fn discard(&mut self) {
        self.keep = false;
    }

    /// Reserve `size` bytes on the disk for the file, so that concurrent uploads that do not
    /// fit together are refused before their data is written instead of all failing midway
    /// when the disk fills. A filesystem without `fallocate` leaves only the free-space check.
    pub fn reserve(&mut self, size: u64) -> Result<()> {
        let Ok(len) = libc::off_t::try_from(size) else {
            bail!("not enough space on the server: {size} bytes offered");
        };
        if len == 0 {
            return Ok(());
        }
        let fd = self.file().as_raw_fd();
        // One reservation at a time in this process: `fallocate` takes a file's blocks one by
        // one, so two at once on a disk that holds only one of them can each take part of the
        // space and both fail (seen on tmpfs: two 700 KB uploads into 1 MB, both refused).
        let _one_at_a_time = RESERVING.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        // SAFETY: fallocate on a descriptor this value owns. KEEP_SIZE allocates without
        // extending: the file's size still tells how much was received.
        match check(unsafe { libc::fallocate(fd, libc::FALLOC_FL_KEEP_SIZE, 0, len) }) {
            Ok(_) => Ok(()),
            Err(e) if e.raw_os_error() == Some(libc::ENOSPC) => {
                bail!("not enough space on the server: {size} bytes offered, cannot reserve them")
            }
            Err(e) if e.raw_os_error() == Some(libc::EOPNOTSUPP) => Ok(()),
            Err(e) => bail!("cannot reserve space for the file: {e}"),
        }
    }

    /// The open temporary file.
    pub fn file(&mut self) -> &mut tokio::fs::File {
        self.file.as_mut().expect("file is open until commit")
    }

    /// Flush to disk and give the file the name `name`; unless `replace`, an existing `name`
    /// is an error and stays untouched.
    pub async fn commit(mut self, name: &str, replace: bool) -> Result<()> {
        let file = self.file.as_ref().expect("file is open until commit");
        file.sync_all().await.with_context(|| format!("cannot write {name:?}"))?;
        match self.dir.rename(&self.temp, name, replace) {
            Ok(()) => {
                self.file = None;
                Ok(())
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                self.discard(); // complete and verified, but the name is taken
                bail!("a file named {name:?} already exists")
            }
            Err(e) => bail!("cannot store {name:?}: {e}"),
        }
    }
}

impl Drop for PartialFile {
    fn drop(&mut self) {
        // Not committed: remove the partial data so nothing half-written remains, unless a
        // later transfer may resume from it. Removed while still locked, so no other transfer
        // has it open.
        if let Some(file) = self.file.take().filter(|_| self.locked) {
            let empty = length(&file).map_or(true, |len| len == 0);
            if !self.keep || empty {
                let _ = self.dir.remove(&self.temp);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(path: &Path) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(path)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        v.sort();
        v
    }

    #[tokio::test]
    async fn a_commit_never_replaces_unless_asked() {
        use tokio::io::AsyncWriteExt;
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join("x"), b"old").unwrap();
        let dir = Dir::open(tmp.path()).unwrap();
        let mut partial = PartialFile::create(dir.clone()).unwrap();
        partial.file().write_all(b"new").await.unwrap();
        let err = partial.commit("x", false).await.unwrap_err();
        assert_eq!(err.to_string(), "a file named \"x\" already exists");
        assert_eq!(std::fs::read(tmp.path().join("x")).unwrap(), b"old");
        assert_eq!(names(tmp.path()), ["x"], "the temporary is gone");

        let mut partial = PartialFile::create(dir).unwrap();
        partial.file().write_all(b"new").await.unwrap();
        partial.commit("x", true).await.unwrap();
        assert_eq!(std::fs::read(tmp.path().join("x")).unwrap(), b"new");
    }

    #[test]
    fn temporaries_are_unique_and_only_unlocked_ones_are_stale() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = Dir::open(tmp.path()).unwrap();
        let live = PartialFile::create(dir.clone()).unwrap();
        let other = PartialFile::create(dir.clone()).unwrap();
        assert_ne!(live.temp, other.temp);
        assert!(live.temp.len() < 64, "a fixed, short name: {}", live.temp);
        // A temporary left by a killed process: same prefix, no lock held.
        std::fs::write(tmp.path().join(format!("{TEMP_PREFIX}0000")), b"partial").unwrap();
        std::fs::create_dir_all(tmp.path().join("sub/deeper")).unwrap();
        std::fs::write(tmp.path().join(format!("sub/deeper/{TEMP_PREFIX}0001")), b"p").unwrap();
        std::fs::write(tmp.path().join("sub/kept.bin"), b"kept").unwrap();
        assert_eq!(dir.remove_stale_temporaries(), 2, "the one beneath too");
        assert_eq!(names(&tmp.path().join("sub/deeper")), Vec::<String>::new());
        std::fs::remove_dir_all(tmp.path().join("sub")).unwrap();
        let mut expected = vec![live.temp.clone(), other.temp.clone()];
        expected.sort();
        assert_eq!(names(tmp.path()), expected, "live temporaries stay");
    }

    #[test]
    fn links_directories_and_missing_names_are_refused_by_name_only() {
        let tmp = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink("/etc/passwd", tmp.path().join("link")).unwrap();
        std::fs::create_dir(tmp.path().join("sub")).unwrap();
        let dir = Dir::open(tmp.path()).unwrap();
        let error = |name| dir.open_regular(name).unwrap_err().to_string();
        assert_eq!(error("link"), "\"link\" is a symbolic link, which is not served");
        assert_eq!(error("sub"), "\"sub\" is not a regular file");
        assert_eq!(error("none"), "no file named \"none\"");
        assert!(dir.contains("link") && dir.contains("sub") && !dir.contains("none"));
        assert!(dir.free_space().unwrap() > 0);
    }

    #[test]
    fn paths_beneath_are_made_walked_and_never_follow_links() {
        let tmp = tempfile::tempdir().unwrap();
        let top = Dir::open(tmp.path()).unwrap();
        let deep = top.beneath(&["a", "b"], true).unwrap();
        deep.open_at("f.bin", libc::O_WRONLY | libc::O_CREAT).unwrap();
        std::fs::write(tmp.path().join("top.bin"), b"12345").unwrap();
        std::fs::write(tmp.path().join(".hidden"), b"x").unwrap();
        std::os::unix::fs::symlink("/etc", tmp.path().join("a/etc")).unwrap();
        std::os::unix::fs::symlink("/etc/passwd", tmp.path().join("a/passwd")).unwrap();
        top.beneath(&["a", "empty", "deeper"], true).unwrap();
        let listing = top.walk("", 100).unwrap();
        let files = [("a/b/f.bin".to_string(), 0), ("top.bin".to_string(), 5)];
        assert_eq!(
            (listing.files, listing.empty_dirs),
            (files.to_vec(), vec!["a/empty/deeper".into()])
        );
        assert_eq!(top.beneath(&["a"], false).unwrap().walk("a/", 100).unwrap().files.len(), 1);
        let alone = top.beneath(&["a", "empty"], false).unwrap().walk("a/empty/", 100).unwrap();
        assert_eq!(alone.empty_dirs, ["a/empty/deeper"]);
        let refused = top.beneath(&["a", "etc"], true).unwrap_err().to_string();
        assert!(refused.contains("not a directory (links are not followed)"), "{refused}");
        assert!(top.beneath(&["none"], false).unwrap_err().to_string().contains("no directory"));
        assert!(top.walk("", 1).unwrap_err().to_string().contains("more than 1 files"));
    }
}
