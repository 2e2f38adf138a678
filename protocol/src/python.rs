//! What a Python interpreter would import, read from its installed packages' metadata without
//! starting it (an interpreter costs half a second, and a hung one holds the run): the folders on
//! its path, the Triton and FlagGems versions (`triton-*.dist-info/METADATA`) and whether the harness
//! (`warmup_harness`) is installed there. The one Triton probe of the house: warmup-plan decides
//! with it, and `--python` of warmup-shard and warmup-costs (`crate::probe`) reads it.
//!
//! The path, in the order Python searches it: `PYTHONPATH`'s entries, then the user site (unless
//! a virtualenv, `PYTHONNOUSERSITE` or no home), then the environment's `site-packages` and
//! `dist-packages`: of the virtualenv whose `pyvenv.cfg` sits beside the interpreter or above its
//! folder (with `include-system-site-packages = true`, its base's too), else of the prefix the
//! resolved executable lives in. What cannot be read is absent: an unknown version matches no
//! history, an unknown harness is not used.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// The distribution names as their metadata folders spell them (lowercase, `_` for `-`).
const TRITON: &str = "triton";
const FLAG_GEMS: &str = "flag_gems";
const HARNESS: &str = "warmup_harness";

/// The environment a lookup reads: the variables and the home folder it would see.
#[derive(Debug, Clone, Default)]
pub struct Lookup {
    pub pythonpath: Option<OsString>,
    pub path: Option<OsString>,
    pub no_user_site: bool,
    pub user_base: Option<PathBuf>,
    pub home: Option<PathBuf>,
}

impl Lookup {
    /// This process's environment.
    pub fn current() -> Lookup {
        Lookup {
            pythonpath: std::env::var_os("PYTHONPATH"),
            path: std::env::var_os("PATH"),
            no_user_site: std::env::var_os("PYTHONNOUSERSITE").is_some_and(|v| !v.is_empty()),
            user_base: std::env::var_os("PYTHONUSERBASE")
                .filter(|v| !v.is_empty())
                .map(PathBuf::from),
            home: std::env::var_os("HOME")
                .filter(|v| !v.is_empty())
                .map(PathBuf::from),
        }
    }
}

/// How the harness is installed where the interpreter looks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Harness {
    /// Not found.
    Absent,
    /// A `warmup_harness` package folder without metadata: pytest loads it with `-p warmup_harness`.
    Folder,
    /// Installed (`warmup_harness-*.dist-info`): pytest loads it through its `pytest11` entry point.
    Installed,
}

/// What the interpreter would import.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Packages {
    /// The interpreter, as found (the `python*` COMMAND names, resolved through PATH).
    pub python: PathBuf,
    /// The folders searched, in Python's order.
    pub path: Vec<PathBuf>,
    pub triton: Option<String>,
    /// FlagGems' version, whose benchmark's keys depend on it (the run's signature covers it).
    pub flag_gems: Option<String>,
    pub harness: Harness,
}

/// The packages `python` (a path, or a name found through PATH) would import.
pub fn packages(python: &Path, lookup: &Lookup) -> Packages {
    let found = find_program(python, lookup.path.as_deref());
    let path = search_path(&found, lookup);
    let triton = path.iter().find_map(|dir| version_in(dir, TRITON));
    let flag_gems = path.iter().find_map(|dir| version_in(dir, FLAG_GEMS));
    let harness = path
        .iter()
        .find_map(|dir| harness_in(dir))
        .unwrap_or(Harness::Absent);
    Packages {
        python: found,
        path,
        triton,
        flag_gems,
        harness,
    }
}

/// Triton's version as `python` would import it, or None when it cannot be read.
pub fn triton_version(python: &Path) -> Option<String> {
    packages(python, &Lookup::current()).triton
}

fn find_program(python: &Path, path: Option<&std::ffi::OsStr>) -> PathBuf {
    if python.components().count() > 1 {
        return python.to_path_buf();
    }
    path.into_iter()
        .flat_map(std::env::split_paths)
        .map(|dir| dir.join(python))
        .find(|p| p.is_file())
        .unwrap_or_else(|| python.to_path_buf())
}

/// The folders the interpreter at `python` searches for packages, in its order.
pub fn search_path(python: &Path, lookup: &Lookup) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = lookup
        .pythonpath
        .iter()
        .flat_map(std::env::split_paths)
        .filter(|p| !p.as_os_str().is_empty())
        .collect();
    let venv = python
        .parent()
        .into_iter()
        .flat_map(|bin| {
            [
                bin.to_path_buf(),
                bin.parent().map(Path::to_path_buf).unwrap_or_default(),
            ]
        })
        .find(|dir| dir.join("pyvenv.cfg").is_file());
    let mut prefixes = Vec::new();
    match &venv {
        Some(root) => {
            prefixes.push(root.clone());
            let cfg = std::fs::read_to_string(root.join("pyvenv.cfg")).unwrap_or_default();
            let key = |name: &str| {
                cfg.lines().find_map(|l| {
                    let (k, v) = l.split_once('=')?;
                    (k.trim() == name).then(|| v.trim().to_owned())
                })
            };
            let system =
                key("include-system-site-packages").is_some_and(|v| v.eq_ignore_ascii_case("true"));
            if system {
                if let Some(home) = key("home") {
                    prefixes.extend(Path::new(&home).parent().map(Path::to_path_buf));
                }
            }
        }
        None => {
            let real = std::fs::canonicalize(python).unwrap_or_else(|_| python.to_path_buf());
            prefixes.extend(real.parent().and_then(Path::parent).map(Path::to_path_buf));
        }
    }
    // The user site comes before the environment's own, as site.py adds it; a venv has none.
    if venv.is_none() && !lookup.no_user_site {
        if let Some(base) = lookup
            .user_base
            .clone()
            .or_else(|| lookup.home.as_ref().map(|h| h.join(".local")))
        {
            out.extend(versioned(&base.join("lib"), &["site-packages"]));
        }
    }
    for prefix in prefixes {
        out.extend(versioned(
            &prefix.join("lib"),
            &["site-packages", "dist-packages"],
        ));
        out.extend(versioned(&prefix.join("local/lib"), &["dist-packages"]));
        out.push(prefix.join("lib/python3/dist-packages"));
    }
    out.retain(|d| d.is_dir());
    out.dedup();
    out
}

/// `LIB/python*/NAME` for each NAME, the folders that exist, sorted.
fn versioned(lib: &Path, names: &[&str]) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(lib) else {
        return Vec::new();
    };
    let mut dirs: Vec<PathBuf> = entries
        .filter_map(|e| e.ok())
        .filter(|e| {
            e.file_name()
                .to_str()
                .is_some_and(|n| n.starts_with("python3"))
        })
        .flat_map(|e| names.iter().map(move |n| e.path().join(n)))
        .filter(|d| d.is_dir())
        .collect();
    dirs.sort();
    dirs
}

/// The metadata folder of distribution `name` in `dir` (`NAME-VERSION.dist-info`, or
/// `.egg-info`), its name normalized as pip writes it.
fn metadata_dir(dir: &Path, name: &str) -> Option<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
        .ok()?
        .filter_map(|e| e.ok())
        .filter(|e| {
            let file = e.file_name();
            let Some(file) = file.to_str() else {
                return false;
            };
            let Some(stem) = file
                .strip_suffix(".dist-info")
                .or_else(|| file.strip_suffix(".egg-info"))
            else {
                return false;
            };
            let dist = stem.split('-').next().unwrap_or("");
            dist.to_ascii_lowercase().replace(['-', '.'], "_") == name
        })
        .map(|e| e.path())
        .collect();
    found.sort();
    found.pop()
}

/// The `Version:` of distribution `name` installed in `dir`.
fn version_in(dir: &Path, name: &str) -> Option<String> {
    let meta = metadata_dir(dir, name)?;
    let text = ["METADATA", "PKG-INFO"]
        .iter()
        .find_map(|f| read_small(&meta.join(f)))?;
    text.lines()
        .take_while(|l| !l.is_empty())
        .find_map(|l| l.strip_prefix("Version:"))
        .map(|v| v.trim().to_owned())
        .filter(|v| !v.is_empty())
}

fn harness_in(dir: &Path) -> Option<Harness> {
    if metadata_dir(dir, HARNESS).is_some() {
        return Some(Harness::Installed);
    }
    dir.join(HARNESS)
        .join("__init__.py")
        .is_file()
        .then_some(Harness::Folder)
}

/// A regular file's text, at most 1 MiB of it: metadata is small, and a FIFO or a device in its
/// place must not hang the decision.
fn read_small(path: &Path) -> Option<String> {
    use std::io::Read;
    if !path.metadata().ok()?.is_file() {
        return None;
    }
    let mut text = String::new();
    std::fs::File::open(path)
        .ok()?
        .take(1 << 20)
        .read_to_string(&mut text)
        .ok()?;
    Some(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dist(site: &Path, name: &str, version: &str) {
        let meta = site.join(format!("{name}-{version}.dist-info"));
        std::fs::create_dir_all(&meta).expect("mkdir");
        std::fs::write(
            meta.join("METADATA"),
            format!("Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n\nVersion: no\n"),
        )
        .expect("write");
    }

    fn venv(root: &Path, system: bool, home: &Path) -> PathBuf {
        let bin = root.join("bin");
        std::fs::create_dir_all(&bin).expect("mkdir");
        std::fs::write(bin.join("python3"), "").expect("python");
        std::fs::write(
            root.join("pyvenv.cfg"),
            format!(
                "home = {}\ninclude-system-site-packages = {system}\nversion = 3.11.7\n",
                home.display()
            ),
        )
        .expect("cfg");
        let site = root.join("lib/python3.11/site-packages");
        std::fs::create_dir_all(&site).expect("mkdir");
        site
    }

    fn none() -> Lookup {
        Lookup::default()
    }

    #[test]
    fn a_venv_gives_its_own_triton_and_harness() {
        let dir = tempfile::tempdir().expect("tempdir");
        let site = venv(&dir.path().join("v"), false, &dir.path().join("base/bin"));
        dist(&site, "triton", "3.6.0");
        dist(&site, "triton_kernels", "1.0");
        dist(&site, "warmup_harness", "0.3.0");
        let got = packages(&dir.path().join("v/bin/python3"), &none());
        assert_eq!(got.triton.as_deref(), Some("3.6.0"));
        assert_eq!(got.harness, Harness::Installed);
    }

    #[test]
    fn a_venv_sees_the_base_only_with_system_site_packages() {
        let dir = tempfile::tempdir().expect("tempdir");
        let base = dir.path().join("base");
        let base_site = base.join("lib/python3.11/site-packages");
        std::fs::create_dir_all(&base_site).expect("mkdir");
        dist(&base_site, "triton", "3.5.1");
        venv(&dir.path().join("own"), false, &base.join("bin"));
        venv(&dir.path().join("shared"), true, &base.join("bin"));
        let triton = |v: &str| packages(&dir.path().join(v).join("bin/python3"), &none()).triton;
        assert_eq!(triton("own"), None);
        assert_eq!(triton("shared").as_deref(), Some("3.5.1"));
    }

    #[test]
    fn pythonpath_comes_first_and_a_package_folder_is_a_harness_to_name() {
        let dir = tempfile::tempdir().expect("tempdir");
        let site = venv(&dir.path().join("v"), false, &dir.path().join("b/bin"));
        dist(&site, "triton", "3.6.0");
        let extra = dir.path().join("extra");
        std::fs::create_dir_all(extra.join("warmup_harness")).expect("mkdir");
        std::fs::write(extra.join("warmup_harness/__init__.py"), "").expect("init");
        dist(&extra, "triton", "3.9.0");
        let lookup = Lookup {
            pythonpath: Some(extra.clone().into_os_string()),
            ..none()
        };
        let got = packages(&dir.path().join("v/bin/python3"), &lookup);
        assert_eq!(got.triton.as_deref(), Some("3.9.0"));
        assert_eq!(got.harness, Harness::Folder);
    }

    #[test]
    fn a_plain_prefix_and_the_user_site_are_searched() {
        let dir = tempfile::tempdir().expect("tempdir");
        let prefix = dir.path().join("usr");
        std::fs::create_dir_all(prefix.join("bin")).expect("mkdir");
        std::fs::write(prefix.join("bin/python3.12"), "").expect("python");
        let dist_packages = prefix.join("lib/python3/dist-packages");
        std::fs::create_dir_all(&dist_packages).expect("mkdir");
        dist(&dist_packages, "triton", "3.4.0");
        let home = dir.path().join("home");
        let user = home.join(".local/lib/python3.12/site-packages");
        std::fs::create_dir_all(&user).expect("mkdir");
        dist(&user, "warmup_harness", "0.3.0");
        let lookup = Lookup {
            home: Some(home),
            ..none()
        };
        let got = packages(&prefix.join("bin/python3.12"), &lookup);
        assert_eq!(got.triton.as_deref(), Some("3.4.0"));
        assert_eq!(got.harness, Harness::Installed);
        let no_user = Lookup {
            no_user_site: true,
            ..lookup
        };
        let got = packages(&prefix.join("bin/python3.12"), &no_user);
        assert_eq!(got.harness, Harness::Absent);
    }

    #[test]
    fn nothing_found_is_unknown() {
        let got = packages(Path::new("/nonexistent/bin/python3"), &none());
        assert_eq!((got.triton, got.harness), (None, Harness::Absent));
    }
}
