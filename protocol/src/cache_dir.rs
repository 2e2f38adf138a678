//! The record cache: where records go when no record folder is named (docs/CONTRACT.md, "The
//! record cache"). One rule, here, so that warmup-plan (which resolves it and exports it to
//! COMMAND and to the sweep) and warmup-cache (which lists and prunes it) never disagree on the
//! folder.
//!
//! The cache is `$XDG_CACHE_HOME/parallel-warmup/records` (an absolute `XDG_CACHE_HOME`, as the
//! XDG base directory spec asks), else `$HOME/.cache/parallel-warmup/records`. Inside it, one
//! folder per (Triton version, device model; this machine where the device has no name), named
//! by [`slug`], each laid out as any record
//! folder: records made with another Triton or on another GPU sit side by side and none replaces
//! another, while a named folder (`FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR`) keeps the one-level layout
//! it always had. Runs at once share a folder safely because every writer already takes the
//! op's locks there (the harness's fold and warmup-publish: `DIR/.<op>.lock`).

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};

/// The cache's folder under the user's cache home.
pub const RECORDS: &str = "parallel-warmup/records";

/// The file whose modification time is an op's last use in a cache folder: touched by
/// warmup-plan whenever a run uses the folder for the op (a replay writes nothing else there).
pub fn used_path(dir: &Path, op: impl AsRef<OsStr>) -> PathBuf {
    let mut name = OsString::from(".");
    name.push(op);
    name.push(".used");
    dir.join(name)
}

/// The cache root from the environment `var` reads: `$XDG_CACHE_HOME/parallel-warmup/records`,
/// else `$HOME/.cache/parallel-warmup/records`; `Err` says why there is none.
pub fn root(var: impl Fn(&str) -> Option<OsString>) -> Result<PathBuf, String> {
    let absolute = |name: &str| var(name).map(PathBuf::from).filter(|p| p.is_absolute());
    if let Some(xdg) = absolute("XDG_CACHE_HOME") {
        return Ok(xdg.join(RECORDS));
    }
    match absolute("HOME") {
        Some(home) => Ok(home.join(".cache").join(RECORDS)),
        None => Err("neither XDG_CACHE_HOME nor HOME names an absolute folder".into()),
    }
}

/// The cache root of this process's environment.
pub fn current_root() -> Result<PathBuf, String> {
    root(|name| std::env::var_os(name))
}

/// The folder name of a (Triton version, device model) pair: `<triton>_<device>_<hash>`, each
/// name cut to what a file name safely holds (ASCII letters, digits, `.` and `-`; every other
/// run of characters one `-`; at most 40 characters; `unknown` for a blank or missing Triton),
/// then 12 hex digits of FNV-1a 64 over `triton` NUL `device` as given (an unknown Triton as the
/// empty string), so two names that read alike once cut never share a folder.
/// `3.6.0_NVIDIA-H200_5b1e...`. A device no rule names (`None` or blank) is this machine's
/// (`probe::machine` under `probe_root`): `<triton>_unknown-<machine>_<hash>`, its hash over
/// `triton` NUL 0xFF `machine`, which no device name (UTF-8) holds, so it is never a named
/// device's folder nor another machine's.
pub fn slug(triton: Option<&str>, device: Option<&str>, probe_root: &Path) -> String {
    let t = triton.unwrap_or("");
    let (shown, hashed) = match device.map(str::trim).filter(|d| !d.is_empty()) {
        Some(d) => (safe(d), device.unwrap_or_default().as_bytes().to_vec()),
        None => {
            let machine = crate::probe::machine(probe_root);
            let mut bytes = vec![0xff];
            bytes.extend(machine.bytes());
            (format!("unknown-{machine}"), bytes)
        }
    };
    let hash = crate::probe::fnv1a64(t.bytes().chain([0]).chain(hashed));
    format!("{}_{}_{:012x}", safe(t), shown, hash >> 16)
}

fn safe(name: &str) -> String {
    let mut out = String::new();
    for c in name.trim().chars() {
        if c.is_ascii_alphanumeric() || c == '.' || c == '-' {
            out.push(c);
        } else if !out.ends_with('-') {
            out.push('-');
        }
    }
    let out: String = out.trim_matches('-').chars().take(40).collect();
    let out = out.trim_start_matches('.').to_owned();
    if out.is_empty() {
        "unknown".into()
    } else {
        out
    }
}

/// The cache folder for this Triton and device under `root` (the device's [`slug`], this
/// machine's under `probe_root` where it has no name), if it can be used, making nothing: a
/// folder this user can read and enter (another user's, shared: what it holds is replayed, and
/// [`toolkit::file::writable`] tells whether anything can be added), or one that can be made (its
/// nearest existing part a folder this user can write in). `Err` says why it cannot be used.
/// [`make`] makes it, once a run is decided that uses it.
pub fn locate(
    root: &Path,
    triton: Option<&str>,
    device: Option<&str>,
    probe_root: &Path,
) -> Result<PathBuf, String> {
    let dir = root.join(slug(triton, device, probe_root));
    toolkit::file::check_folder(&dir)?;
    if dir.is_dir() {
        let access = nix::unistd::AccessFlags::R_OK | nix::unistd::AccessFlags::X_OK;
        nix::unistd::access(&dir, access).map_err(|errno| {
            let error = std::io::Error::from(errno);
            format!("cannot read {}: {error}", dir.display())
        })?;
    } else {
        toolkit::file::writable(&dir)?;
    }
    Ok(dir)
}

/// Makes the cache folder [`locate`] found, with its parents; `Err` says why it cannot be made.
pub fn make(dir: &Path) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot make {}: {e}", dir.display()))
}

/// Marks `op` used now in the cache folder `dir` ([`used_path`]); a failure is ignored (the
/// stamp only orders `warmup-cache remove --older-than`), but for a symbolic link there, which
/// is left alone (`toolkit::file::open_own`: never written through) and returned as the line to
/// say.
pub fn touch(dir: &Path, op: &str) -> Option<String> {
    let path = used_path(dir, op);
    match toolkit::file::open_own(&path, std::fs::OpenOptions::new().write(true).create(true)) {
        Ok(file) => {
            let _ = file.set_modified(std::time::SystemTime::now());
            None
        }
        Err(e) if toolkit::file::is_link(&e) => {
            Some(format!("{e}; this use of op {op} is not marked there"))
        }
        Err(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<OsString> + 'a {
        move |name| {
            vars.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| OsString::from(v))
        }
    }

    #[test]
    fn the_root_is_xdg_cache_home_else_home_and_a_relative_one_is_ignored() {
        let both = [("XDG_CACHE_HOME", "/x"), ("HOME", "/h")];
        assert_eq!(root(env(&both)), Ok("/x/parallel-warmup/records".into()));
        let relative = [("XDG_CACHE_HOME", "x"), ("HOME", "/h")];
        assert_eq!(
            root(env(&relative)),
            Ok("/h/.cache/parallel-warmup/records".into())
        );
        assert!(root(env(&[("HOME", "")])).is_err());
        assert!(root(env(&[])).is_err());
    }

    /// A slug of a named device (the probe root is not read).
    fn slug(triton: Option<&str>, device: Option<&str>) -> String {
        super::slug(triton, device, Path::new("/nonexistent"))
    }

    #[test]
    fn slugs_are_safe_file_names_and_differ_where_the_names_do() {
        let h200 = slug(Some("3.6.0"), Some("NVIDIA H200"));
        assert!(h200.starts_with("3.6.0_NVIDIA-H200_"), "{h200}");
        assert_eq!(h200, slug(Some("3.6.0"), Some("NVIDIA H200")), "stable");
        // Names that read alike once cut still get folders of their own.
        assert_ne!(
            slug(Some("3.6.0"), Some("NVIDIA H200")),
            slug(Some("3.6.0"), Some("NVIDIA/H200"))
        );
        assert_ne!(
            slug(Some("3.6"), Some("0 x")),
            slug(Some("3.6 0"), Some("x"))
        );
        assert_ne!(slug(None, None), slug(Some("unknown"), Some("unknown")));
        let odd = slug(Some("../.."), Some("a/\u{0}b\nc d é"));
        assert!(!odd.contains('/') && !odd.starts_with('.'), "{odd}");
        assert!(
            odd.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b)),
            "{odd}"
        );
        let long = slug(Some("3.6.0"), Some(&"x".repeat(500)));
        assert!(long.len() < 80, "{long}");
    }

    /// A probe root holding only `etc/machine-id`.
    fn machine(id: &str) -> tempfile::TempDir {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir_all(dir.path().join("etc")).expect("mkdir");
        std::fs::write(dir.path().join("etc/machine-id"), format!("{id}\n")).expect("write");
        dir
    }

    #[test]
    fn a_device_with_no_name_gets_a_folder_of_this_machine_never_shared_with_another_or_a_named_one(
    ) {
        let (a, b) = (machine("a1"), machine("b2"));
        let here = super::slug(Some("3.6.0"), None, a.path());
        assert!(here.starts_with("3.6.0_unknown-"), "{here}");
        assert_eq!(
            here,
            super::slug(Some("3.6.0"), Some(" "), a.path()),
            "blank"
        );
        assert_eq!(here, super::slug(Some("3.6.0"), None, a.path()), "stable");
        assert_ne!(
            here,
            super::slug(Some("3.6.0"), None, b.path()),
            "two machines"
        );
        // Not even a device named as the folder reads is given this machine's folder.
        let shown = here.split('_').nth(1).expect("device part");
        assert_ne!(here, slug(Some("3.6.0"), Some(shown)));
        assert_ne!(here, slug(Some("3.6.0"), Some("unknown")));
    }

    #[test]
    fn a_link_planted_as_the_used_stamp_is_left_alone_and_said() {
        let dir = tempfile::tempdir().expect("tempdir");
        let victim = dir.path().join("victim");
        std::fs::write(&victim, "precious").expect("victim");
        std::os::unix::fs::symlink(&victim, used_path(dir.path(), "mm")).expect("symlink");
        let line = touch(dir.path(), "mm").expect("a line");
        assert!(line.contains(".mm.used is a symbolic link"), "{line}");
        assert!(
            line.ends_with("remove it; this use of op mm is not marked there"),
            "{line}"
        );
        assert_eq!(std::fs::read(&victim).expect("read"), b"precious");
        assert_eq!(touch(dir.path(), "bmm"), None);
        assert!(used_path(dir.path(), "bmm").is_file());
    }

    #[test]
    fn locating_a_folder_makes_nothing_and_one_that_cannot_be_made_is_said() {
        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join("file");
        std::fs::write(&file, "").expect("write");
        let locate = |root: &Path, t, d| locate(root, t, d, Path::new("/nonexistent"));
        let err = locate(&file, Some("3.6.0"), None).expect_err("under a file");
        assert!(err.contains("is not a folder but a file"), "{err}");
        let root = dir.path().join("c");
        let found = locate(&root, Some("3.6.0"), None).expect("can be made");
        assert!(found.starts_with(&root) && !root.exists(), "nothing made");
        make(&found).expect("made");
        assert!(found.is_dir() && std::fs::read_dir(&found).expect("read").next().is_none());
        assert_eq!(locate(&root, Some("3.6.0"), None), Ok(found.clone()));
        assert!(make(&file.join("x"))
            .expect_err("under a file")
            .starts_with("cannot make"));
    }
}
