//! Files that a later step reads are written whole or not at all: the bytes go to a temporary
//! file in the target's folder, are synced, and only then take the target's name by a rename;
//! the folder is synced after. A reader never sees half a file, and a failure leaves whatever
//! was there before.
//!
//! The temporary has no name while it is written (Linux's `O_TMPFILE`), and gets one (random,
//! made by `tempfile`) only for the rename: a writer killed by SIGKILL, which no cleanup can
//! catch, leaves nothing in the folder unless it dies in the instant between those two calls.
//! Naming temporaries after their writer's pid and removing those of dead writers on the next
//! write was the other way: it guesses from pids (reused, and meaningless on another host of a
//! shared folder), and it would remove files this tool never made. Where the file system has no
//! `O_TMPFILE`, a `tempfile::NamedTempFile` (random name, `O_EXCL`) stands in.
//!
//! A tool that writes several files stages them all ([`stage`]) and commits them
//! ([`commit_all`]) only when all were written, so that a failure part-way writes none.

use anyhow::{Context, Result};
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
    let mut out = io::BufWriter::with_capacity(1 << 20, file);
    fill(&mut out)
        .and_then(|()| out.flush())
        .and_then(|()| file.sync_all())
        .with_context(|| format!("writing {}", path.display()))?;
    drop(out);
    Ok(Staged {
        target: path.to_path_buf(),
        temp,
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

fn folder_of(path: &Path) -> &Path {
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
