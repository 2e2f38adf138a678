//! Files that a later step reads are written whole or not at all: a temporary file in the same
//! folder, fsync, rename over the target, fsync the folder. A reader never sees half a file, and
//! a failure leaves whatever was there before.

use anyhow::{Context, Result};
use std::fs;
use std::io::{self, Write};
use std::path::Path;

/// Writes `bytes` to `path` atomically. The parent folder must exist.
pub fn write(path: &Path, bytes: &[u8]) -> Result<()> {
    write_with(path, |file| file.write_all(bytes))
}

/// Writes what `fill` writes to `path` atomically, through a buffer: for output too big to
/// build in memory first. The parent folder must exist.
pub fn write_with(
    path: &Path,
    fill: impl FnOnce(&mut io::BufWriter<fs::File>) -> io::Result<()>,
) -> Result<()> {
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let name = path
        .file_name()
        .with_context(|| format!("{}: not a file path", path.display()))?;
    let tmp = dir.join(format!(
        ".{}.tmp.{}",
        name.to_string_lossy(),
        std::process::id()
    ));
    let result = (|| -> Result<()> {
        let file = fs::File::create(&tmp).with_context(|| format!("creating {}", tmp.display()))?;
        let mut out = io::BufWriter::with_capacity(1 << 20, file);
        fill(&mut out)
            .and_then(|()| out.into_inner().map_err(io::IntoInnerError::into_error))
            .and_then(|file| file.sync_all())
            .with_context(|| format!("writing {}", tmp.display()))?;
        fs::rename(&tmp, path)
            .with_context(|| format!("renaming {} to {}", tmp.display(), path.display()))?;
        // The rename is durable only once the folder itself is synced.
        if let Ok(d) = fs::File::open(dir) {
            let _ = d.sync_all();
        }
        Ok(())
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

/// Serialises `value` as pretty JSON with a final newline and writes it atomically.
pub fn write_json<T: serde::Serialize>(path: &Path, value: &T) -> Result<()> {
    let mut bytes = serde_json::to_vec_pretty(value)?;
    bytes.push(b'\n');
    write(path, &bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_the_target_whole_and_leaves_no_temporary_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let target = dir.path().join("out.json");
        fs::write(&target, "old").expect("seed");
        write(&target, b"new\n").expect("atomic write");
        assert_eq!(fs::read_to_string(&target).expect("read"), "new\n");
        let names: Vec<_> = fs::read_dir(dir.path())
            .expect("list")
            .map(|e| e.expect("entry").file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("out.json")]);
    }

    #[test]
    fn a_missing_folder_is_an_error_naming_the_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let err = write(&dir.path().join("no/such/out.json"), b"x").expect_err("must fail");
        assert!(format!("{err:#}").contains("out.json"), "{err:#}");
    }
}
