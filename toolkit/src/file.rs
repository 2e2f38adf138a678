//! Reading the files a tool is given (plans, records, sidecars, cost files, status files, shape
//! files): a regular file only, and no more than [`MAX_BYTES`]. A FIFO put where a JSON file was
//! expected would block the tool until someone writes to it, and `/dev/zero` would be read until
//! memory runs out; both are refused at once, naming what the path is.
//!
//! Writing a file in a folder others may write in (a shared record folder, the record cache, a
//! lock folder): [`open_own`], never through a symbolic link planted at the file's name.

use std::io::{self, Read};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;

/// The most a tool reads of one file: 1 GiB, far over the largest record seen (17 MB) and
/// under what a 2-core box can hold twice.
pub const MAX_BYTES: u64 = 1 << 30;

/// `path` made absolute against `cwd` (no link resolved, nothing normalised), byte for byte: a
/// name that is not UTF-8 is kept as it is. The one rule for a path given relative to where a
/// tool was started.
pub fn absolute_in(path: &Path, cwd: &Path) -> std::path::PathBuf {
    if path.is_absolute() {
        path.to_path_buf()
    } else {
        cwd.join(path)
    }
}

/// `path` without one trailing `/` (`/` itself is kept), byte for byte.
pub fn without_trailing_slash(path: std::path::PathBuf) -> std::path::PathBuf {
    use std::os::unix::ffi::OsStrExt;
    match path.as_os_str().as_bytes().strip_suffix(b"/") {
        Some(t) if !t.is_empty() => std::ffi::OsStr::from_bytes(t).into(),
        _ => path,
    }
}

/// The bytes of the regular file at `path` (a symlink is followed); an error of kind
/// `InvalidInput` for anything else (a FIFO, a device, a socket, a folder), of kind
/// `InvalidData` for a file over `MAX_BYTES`; the message says what the path is and what to do.
pub fn read(path: &Path) -> io::Result<Vec<u8>> {
    read_at_most(path, MAX_BYTES)
}

/// [`read`], as UTF-8 text.
pub fn read_to_string(path: &Path) -> io::Result<String> {
    String::from_utf8(read(path)?).map_err(|e| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!(
                "not UTF-8 text (bad byte at offset {})",
                e.utf8_error().valid_up_to()
            ),
        )
    })
}

/// [`read`] with another cap.
pub fn read_at_most(path: &Path, limit: u64) -> io::Result<Vec<u8>> {
    // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer before fstat
    // could tell what it is. It changes nothing for a regular file.
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(nix::libc::O_NONBLOCK)
        .open(path)?;
    let meta = file.metadata()?;
    let kind = meta.file_type();
    if !kind.is_file() {
        let what = kind_name(kind);
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("is {what}, not a regular file; give a regular file there"),
        ));
    }
    if meta.len() > limit {
        return Err(too_large(meta.len(), limit));
    }
    read_bounded(file, limit)
}

/// Opens `path` with `options` as the tools open every file they create, write or lock in a
/// folder another user may write in (a record folder, a record cache folder): never through a
/// symbolic link at `path` itself (`O_NOFOLLOW`), which would have the tool create, truncate or
/// append to whatever file the link's planter chose, and never waiting on a FIFO there
/// (`O_NONBLOCK`, which changes nothing for a regular file or a lock). A link there is an error
/// that names it and says to remove it ([`is_link`] tells it apart); links in the folders above
/// it are followed as ever. `options`' custom flags are replaced.
pub fn open_own(path: &Path, options: &mut std::fs::OpenOptions) -> io::Result<std::fs::File> {
    let flags = nix::libc::O_NOFOLLOW | nix::libc::O_NONBLOCK;
    match options.custom_flags(flags).open(path) {
        Err(e)
            if e.raw_os_error() == Some(nix::libc::ELOOP)
                && path.symlink_metadata().is_ok_and(|m| m.is_symlink()) =>
        {
            Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                Linked(path.to_path_buf()),
            ))
        }
        other => other,
    }
}

/// Whether `err` is [`open_own`]'s refusal of a symbolic link.
pub fn is_link(err: &io::Error) -> bool {
    err.get_ref().is_some_and(|inner| inner.is::<Linked>())
}

/// A symbolic link where a tool writes a file of its own.
#[derive(Debug)]
struct Linked(std::path::PathBuf);

impl std::fmt::Display for Linked {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} is a symbolic link, which the tools never write through: remove it",
            self.0.display()
        )
    }
}

impl std::error::Error for Linked {}

/// What a path that is not a regular file is, for a message (`is a FIFO, not ...`).
fn kind_name(kind: std::fs::FileType) -> &'static str {
    if kind.is_fifo() {
        "a FIFO"
    } else if kind.is_char_device() {
        "a character device"
    } else if kind.is_block_device() {
        "a block device"
    } else if kind.is_socket() {
        "a socket"
    } else if kind.is_dir() {
        "a folder"
    } else if kind.is_file() {
        "a file"
    } else {
        "not a file"
    }
}

/// Whether a tool may use `path` as a folder it makes when missing (a scratch, a record
/// folder): it is a folder (a symlink to one is followed), or it is missing and the nearest part
/// of it that exists is a folder. Anything else (a file, a FIFO, a symlink to nothing, a file
/// where a parent folder should be) is refused with what is there, so that the caller can say
/// so before anything runs. A folder that cannot be made for another reason (permissions, a full
/// disk) is found when it is made.
pub fn check_folder(path: &Path) -> Result<(), String> {
    let mut at = path;
    loop {
        match std::fs::metadata(at) {
            Ok(meta) if meta.is_dir() => return Ok(()),
            Ok(meta) if at == path => {
                return Err(format!(
                    "{} is not a folder but {}",
                    path.display(),
                    kind_name(meta.file_type())
                ))
            }
            Ok(meta) => {
                return Err(format!(
                    "{} is not a folder but {}, so none can be made at {}",
                    at.display(),
                    kind_name(meta.file_type()),
                    path.display()
                ))
            }
            Err(e)
                if e.kind() == io::ErrorKind::NotFound
                    || e.raw_os_error() == Some(nix::libc::ENOTDIR) =>
            {
                if at.symlink_metadata().is_ok_and(|m| m.is_symlink()) {
                    return Err(format!(
                        "{} is not a folder but a symlink to nothing",
                        at.display()
                    ));
                }
                match at.parent() {
                    Some(parent) if !parent.as_os_str().is_empty() => at = parent,
                    _ => return Ok(()),
                }
            }
            Err(_) => return Ok(()),
        }
    }
}

/// Whether this user can make files in the folder `path` or, where it is missing, make it: `Err`
/// says why not (`cannot write in DIR: Permission denied`, `cannot make DIR: ... (ANCESTOR)`).
/// Read-only mounts answer for root too (EROFS); `path` passed [`check_folder`] first.
pub fn writable(path: &Path) -> Result<(), String> {
    let Some(nearest) = path.ancestors().find(|at| at.is_dir()) else {
        return Err(format!("no part of {} exists", path.display()));
    };
    let access = nix::unistd::AccessFlags::W_OK | nix::unistd::AccessFlags::X_OK;
    nix::unistd::access(nearest, access).map_err(|errno| {
        let error = io::Error::from(errno);
        if nearest == path {
            format!("cannot write in {}: {error}", path.display())
        } else {
            format!(
                "cannot make {}: {error} ({})",
                path.display(),
                nearest.display()
            )
        }
    })
}

/// What `reader` gives, refused past `limit` bytes (a file that grew while read, or stdin).
pub fn read_bounded(reader: impl Read, limit: u64) -> io::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    reader.take(limit + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit {
        return Err(too_large(bytes.len() as u64, limit));
    }
    Ok(bytes)
}

fn too_large(size: u64, limit: u64) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!(
            "holds {size} bytes or more, over the {limit} this tool reads of one file; \
             is it the right file?"
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs::File;

    #[test]
    fn a_relative_path_is_made_absolute_byte_for_byte_and_loses_one_trailing_slash() {
        use std::os::unix::ffi::OsStrExt;
        let odd = Path::new(std::ffi::OsStr::from_bytes(b"r\xff/"));
        let abs = without_trailing_slash(absolute_in(odd, Path::new("/w")));
        assert_eq!(abs.as_os_str().as_bytes(), b"/w/r\xff");
        assert_eq!(
            absolute_in(Path::new("/a/"), Path::new("/w")),
            Path::new("/a/")
        );
        assert_eq!(without_trailing_slash("/".into()), Path::new("/"));
    }

    #[test]
    fn a_folder_to_make_is_a_folder_or_missing_under_one() {
        let dir = tempfile::tempdir().expect("tempdir");
        let d = dir.path();
        std::fs::write(d.join("f"), "").expect("write");
        std::os::unix::fs::symlink(d.join("gone"), d.join("dangling")).expect("symlink");
        std::os::unix::fs::symlink(d, d.join("up")).expect("symlink");
        assert_eq!(check_folder(d), Ok(()));
        assert_eq!(check_folder(&d.join("new/deeper")), Ok(()));
        assert_eq!(check_folder(&d.join("up/new")), Ok(()));
        assert_eq!(check_folder(Path::new("relative-and-missing")), Ok(()));
        let f = d.join("f");
        assert_eq!(
            check_folder(&f),
            Err(format!("{} is not a folder but a file", f.display()))
        );
        assert_eq!(
            check_folder(&f.join("sub/x")),
            Err(format!(
                "{} is not a folder but a file, so none can be made at {}",
                f.display(),
                f.join("sub/x").display()
            ))
        );
        let why = check_folder(&d.join("dangling")).expect_err("dangling");
        assert!(why.contains("a symlink to nothing"), "{why}");
        assert!(check_folder(Path::new("/dev/null"))
            .expect_err("device")
            .contains("a character device"));
    }

    #[test]
    fn a_file_of_its_own_is_never_opened_through_a_link_planted_at_its_name() {
        let dir = tempfile::tempdir().expect("tempdir");
        let d = dir.path();
        std::fs::write(d.join("victim"), "precious").expect("victim");
        std::os::unix::fs::symlink(d.join("victim"), d.join(".mm.used")).expect("symlink");
        std::os::unix::fs::symlink(d.join("made"), d.join(".mm.lock")).expect("dangling");
        let write = || {
            let mut options = std::fs::OpenOptions::new();
            options.write(true).create(true).truncate(true);
            options
        };
        let err = open_own(&d.join(".mm.used"), &mut write()).expect_err("a link");
        assert!(is_link(&err), "{err}");
        assert_eq!(
            err.to_string(),
            format!(
                "{} is a symbolic link, which the tools never write through: remove it",
                d.join(".mm.used").display()
            )
        );
        assert_eq!(std::fs::read(d.join("victim")).expect("read"), b"precious");
        assert!(is_link(
            &open_own(&d.join(".mm.lock"), &mut write()).expect_err("dangling")
        ));
        assert!(!d.join("made").exists(), "nothing made where it points");
        // A FIFO is not waited on for a reader, and a plain file opens as it would.
        nix::unistd::mkfifo(&d.join("fifo"), nix::sys::stat::Mode::S_IRWXU).expect("mkfifo");
        let fifo = open_own(&d.join("fifo"), std::fs::OpenOptions::new().write(true));
        assert!(fifo.is_err_and(|e| !is_link(&e)));
        open_own(&d.join("new"), &mut write()).expect("a new file");
        // A link in a folder above is followed.
        std::os::unix::fs::symlink(d, d.join("up")).expect("symlink");
        open_own(&d.join("up/new"), &mut write()).expect("through a linked folder");
    }

    #[test]
    fn a_regular_file_is_read_whole() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("a.json");
        std::fs::write(&path, "{}\n").expect("write");
        assert_eq!(read(&path).expect("read"), b"{}\n");
        assert_eq!(read_to_string(&path).expect("read"), "{}\n");
    }

    #[test]
    fn a_fifo_is_refused_at_once_not_waited_on() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("meta.json");
        nix::unistd::mkfifo(&path, nix::sys::stat::Mode::S_IRWXU).expect("mkfifo");
        let err = read(&path).expect_err("fifo");
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
        assert!(
            err.to_string().contains("is a FIFO, not a regular file"),
            "{err}"
        );
    }

    #[test]
    fn a_symlink_to_dev_zero_is_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("costs.json");
        std::os::unix::fs::symlink("/dev/zero", &path).expect("symlink");
        let err = read(&path).expect_err("device");
        assert!(err.to_string().contains("is a character device"), "{err}");
    }

    #[test]
    fn a_file_over_the_cap_is_refused_without_reading_it() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("big.json");
        // Sparse: no disk and no reading needed to see its size.
        File::create(&path)
            .and_then(|f| f.set_len(MAX_BYTES + 1))
            .expect("sparse file");
        let err = read(&path).expect_err("too large");
        assert_eq!(err.kind(), io::ErrorKind::InvalidData);
        assert!(err.to_string().contains("is it the right file?"), "{err}");
        let err = read_bounded(&b"12345"[..], 4).expect_err("stream too long");
        assert!(err.to_string().contains("over the 4"), "{err}");
        assert_eq!(read_bounded(&b"1234"[..], 4).expect("at the cap"), b"1234");
    }
}
