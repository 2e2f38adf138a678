//! Files that a later step reads are written whole or not at all: the bytes go to a temporary
//! file in the target's folder, are synced, and only then take the target's name by a rename;
//! the folder is synced after. A reader never sees half a file, and a failure leaves whatever
//! was there before.
//!
//! The temporary has no name while it is written (Linux's `O_TMPFILE`), and gets one (random,
//! made by `tempfile`) only for the rename: a writer killed by SIGKILL, which no cleanup can
//! catch, leaves nothing in the folder unless it dies in the instant between those two calls.
//! For that instant (and for the named temporary that stands in where the file system has no
//! `O_TMPFILE`), every writer holds an exclusive `flock` on its temporary from the moment it
//! exists, and the next write of the same file removes the `.NAME.tmp*` temporaries that nobody
//! holds: their writers are dead. A lock, unlike a pid in the name, is not reused and needs no
//! guess about which host wrote the file.
//!
//! A tool that writes several files stages them all ([`stage`]) and commits them
//! ([`commit_all`]) only when all were written, so that a failure part-way writes none.

use anyhow::{Context, Result};
use nix::fcntl::{Flock, FlockArg};
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// A file written in full beside its target, not yet in place.
#[derive(Debug)]
pub struct Staged {
    target: PathBuf,
    temp: Temp,
    /// An exclusive lock on the temporary, held until it is in place or dropped: how the next
    /// writer tells a live writer's temporary from a dead one's.
    _held: Flock<File>,
}

#[derive(Debug)]
enum Temp {
    /// An `O_TMPFILE` file: it has no name, so nothing is left if the writer dies.
    Unnamed(File),
    /// Where `O_TMPFILE` is not supported.
    Named(tempfile::NamedTempFile),
}

/// Writes what `fill` writes (through a buffer) to a temporary beside `path` and syncs it. The
/// parent folder must exist.
pub fn stage(path: &Path, fill: impl FnOnce(&mut dyn Write) -> io::Result<()>) -> Result<Staged> {
    let dir = folder_of(path);
    path.file_name()
        .with_context(|| format!("{}: not a file path", path.display()))?;
    let temp = match unnamed_in(dir) {
        Ok(file) => Temp::Unnamed(file),
        Err(_) => Temp::Named(
            tempfile::Builder::new()
                .prefix(&temp_prefix(path))
                .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o666))
                .tempfile_in(dir)
                .with_context(|| format!("creating a temporary file in {}", dir.display()))?,
        ),
    };
    let file = match &temp {
        Temp::Unnamed(file) => file,
        Temp::Named(named) => named.as_file(),
    };
    // A second open file description of the same file, so the lock is the temporary's own.
    let held = File::open(format!("/proc/self/fd/{}", file.as_raw_fd()))
        .and_then(|f| Flock::lock(f, FlockArg::LockExclusive).map_err(|(_, e)| e.into()))
        .with_context(|| format!("locking the temporary for {}", path.display()))?;
    let mut out = io::BufWriter::with_capacity(1 << 20, file);
    fill(&mut out)
        .and_then(|()| out.flush())
        .and_then(|()| file.sync_all())
        .with_context(|| format!("writing {}", path.display()))?;
    drop(out);
    Ok(Staged {
        target: path.to_path_buf(),
        temp,
        _held: held,
    })
}

impl Staged {
    /// The file this will replace.
    pub fn target(&self) -> &Path {
        &self.target
    }

    /// Puts the file in place: renames it over the target, then syncs the folder.
    pub fn commit(self) -> Result<()> {
        let target = self.target;
        let dir = folder_of(&target);
        remove_dead_writers_temporaries(&target);
        let named = match self.temp {
            Temp::Named(named) => named.into_temp_path(),
            Temp::Unnamed(file) => tempfile::Builder::new()
                .prefix(&temp_prefix(&target))
                .make_in(dir, |name| link(&file, name))
                .with_context(|| format!("linking the new {} into its folder", target.display()))?
                .into_temp_path(),
        };
        named
            .persist(&target)
            .map_err(|e| e.error)
            .with_context(|| format!("renaming the new {} into place", target.display()))?;
        // The rename is durable only once the folder itself is synced.
        if let Ok(d) = File::open(dir) {
            let _ = d.sync_all();
        }
        Ok(())
    }
}

/// Commits every staged file, in order: all were written before the first takes its place.
pub fn commit_all(files: impl IntoIterator<Item = Staged>) -> Result<()> {
    files.into_iter().try_for_each(Staged::commit)
}

/// Writes `bytes` to `path` atomically. The parent folder must exist.
pub fn write(path: &Path, bytes: &[u8]) -> Result<()> {
    write_with(path, |out| out.write_all(bytes))
}

/// Writes what `fill` writes to `path` atomically, through a buffer: for output too big to
/// build in memory first. The parent folder must exist.
pub fn write_with(path: &Path, fill: impl FnOnce(&mut dyn Write) -> io::Result<()>) -> Result<()> {
    stage(path, fill)?.commit()
}

/// Serialises `value` as pretty JSON with a final newline and writes it atomically.
pub fn write_json<T: serde::Serialize>(path: &Path, value: &T) -> Result<()> {
    let mut bytes = serde_json::to_vec_pretty(value)?;
    bytes.push(b'\n');
    write(path, &bytes)
}

/// The folder `path` is in (`.` for a bare name).
pub(crate) fn folder_of(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// `.NAME.tmp`, then tempfile's random letters: a temporary says whose it is.
fn temp_prefix(path: &Path) -> String {
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    format!(".{name}.tmp")
}

/// Removes the temporaries of `target` (`.NAME.tmp*` beside it) whose writers died: those whose
/// lock nobody holds. Best effort: what cannot be opened or removed is left.
fn remove_dead_writers_temporaries(target: &Path) {
    let prefix = temp_prefix(target);
    let Ok(entries) = std::fs::read_dir(folder_of(target)) else {
        return;
    };
    for entry in entries.filter_map(Result::ok) {
        if !entry.file_name().to_string_lossy().starts_with(&prefix) {
            continue;
        }
        let path = entry.path();
        // Not through a link, and not waiting on a FIFO, someone put there under such a name.
        if let Ok(file) = crate::file::open_own(&path, OpenOptions::new().read(true)) {
            if let Ok(unheld) = Flock::lock(file, FlockArg::LockExclusiveNonblock) {
                let _ = std::fs::remove_file(&path);
                drop(unheld);
            }
        }
    }
}

/// An unnamed file in `dir`, readable as a normal new file would be once linked.
fn unnamed_in(dir: &Path) -> io::Result<File> {
    OpenOptions::new()
        .write(true)
        .mode(0o666)
        .custom_flags(nix::libc::O_TMPFILE)
        .open(dir)
}

/// Gives the unnamed `file` the name `name`: `linkat` of its `/proc/self/fd` entry, the way
/// open(2) documents for `O_TMPFILE` files.
fn link(file: &File, name: &Path) -> io::Result<()> {
    use nix::fcntl::{AtFlags, AT_FDCWD};
    let proc_entry = format!("/proc/self/fd/{}", file.as_raw_fd());
    nix::unistd::linkat(
        AT_FDCWD,
        proc_entry.as_str(),
        AT_FDCWD,
        name,
        AtFlags::AT_SYMLINK_FOLLOW,
    )
    .map_err(io::Error::from)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    fn names(dir: &Path) -> Vec<std::ffi::OsString> {
        let mut names: Vec<_> = fs::read_dir(dir)
            .expect("list")
            .map(|e| e.expect("entry").file_name())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn replaces_the_target_whole_and_leaves_no_temporary_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let target = dir.path().join("out.json");
        fs::write(&target, "old").expect("seed");
        write(&target, b"new\n").expect("atomic write");
        assert_eq!(fs::read_to_string(&target).expect("read"), "new\n");
        assert_eq!(names(dir.path()), ["out.json"]);
    }

    #[test]
    fn a_write_removes_dead_writers_temporaries_and_keeps_live_ones() {
        let dir = tempfile::tempdir().expect("tempdir");
        let target = dir.path().join("op.json");
        let dead = dir.path().join(".op.json.tmpDEAD01");
        let live = dir.path().join(".op.json.tmpLIVE01");
        let other = dir.path().join(".other.json.tmpDEAD02");
        for path in [&dead, &live, &other] {
            fs::write(path, b"{").expect("temporary");
        }
        let held = Flock::lock(File::open(&live).expect("open"), FlockArg::LockExclusive)
            .map_err(|(_, e)| e)
            .expect("lock");
        write(&target, b"{}").expect("write");
        drop(held);
        assert_eq!(
            names(dir.path()),
            [".op.json.tmpLIVE01", ".other.json.tmpDEAD02", "op.json"]
        );
    }

    #[test]
    fn a_link_planted_at_the_target_or_a_temporarys_name_is_never_written_through() {
        let dir = tempfile::tempdir().expect("tempdir");
        let d = dir.path();
        let victim = d.join("victim");
        fs::write(&victim, "precious").expect("victim");
        let target = d.join("mm.json");
        std::os::unix::fs::symlink(&victim, &target).expect("symlink");
        std::os::unix::fs::symlink(&victim, d.join(".mm.json.tmpLINK01")).expect("symlink");
        nix::unistd::mkfifo(&d.join(".mm.json.tmpFIFO01"), nix::sys::stat::Mode::S_IRWXU)
            .expect("mkfifo");
        write(&target, b"{}").expect("write");
        assert_eq!(fs::read_to_string(&victim).expect("read"), "precious");
        assert!(!target.symlink_metadata().expect("there").is_symlink());
        assert_eq!(fs::read_to_string(&target).expect("read"), "{}");
    }

    #[test]
    fn a_missing_folder_is_an_error_naming_the_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let err = write(&dir.path().join("no/such/out.json"), b"x").expect_err("must fail");
        assert!(format!("{err:#}").contains("no/such"), "{err:#}");
    }

    #[test]
    fn staged_files_are_invisible_until_committed_and_vanish_when_dropped() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        let staged = stage(&a, |out| out.write_all(b"A")).expect("stage a");
        assert!(names(dir.path()).is_empty());
        drop(staged);
        assert!(names(dir.path()).is_empty());
        let both = [&a, &b].map(|p| stage(p, |out| out.write_all(b"x")).expect("stage"));
        commit_all(both).expect("commit");
        assert_eq!(names(dir.path()), ["a", "b"]);
    }

    #[test]
    fn a_failing_fill_leaves_the_old_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let target = dir.path().join("out.json");
        fs::write(&target, "old").expect("seed");
        let err = write_with(&target, |out| {
            out.write_all(b"half")?;
            Err(io::Error::other("disk full"))
        })
        .expect_err("must fail");
        assert!(format!("{err:#}").contains("disk full"), "{err:#}");
        assert_eq!(fs::read_to_string(&target).expect("read"), "old");
        assert_eq!(names(dir.path()), ["out.json"]);
    }
}
