//! A run's signature: what decides the set of keys it needs, as far as it can be told without
//! running it (docs/CONTRACT.md, "warmup-plan"). A sidecar's `complete_for` holds the signature
//! of the last run that finished with nothing missing from the record, so a record answers a run
//! whose signature is that one. A change that can bring new keys must change it: the op;
//! COMMAND's words; the shape file it names, else the `core_shapes.yaml` beside its test files
//! (the default FlagGems' benchmark reads); the test files and folders its pytest names (its
//! folder when it names none); the `conftest.py` files from each one's folder up to pytest's root
//! (the nearest folder holding an ini file), and that ini file; the installed Triton and FlagGems.
//! Contents, not times: a file touched is the same file, a `git pull` that changes it is not.
//! Nothing is started, and a file that cannot be read counts as such.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// The files that make a folder pytest's root, as pytest looks for them.
const INI_FILES: &[&str] = &[
    "pytest.ini",
    ".pytest.ini",
    "pyproject.toml",
    "tox.ini",
    "setup.cfg",
];
/// The shape file FlagGems' benchmark reads when none is named, beside its test files.
const DEFAULT_SHAPES: &str = "core_shapes.yaml";
/// The most entries a test folder's walk reads: a folder past it is covered as far as read.
const WALK_LIMIT: usize = 20_000;

/// FNV-1a, 128 bits: an identity, not a secret. Each part ends with a NUL, which no word of an
/// argv holds: the parts cannot run together.
struct Fnv(u128);

impl Fnv {
    fn eat(&mut self, bytes: &[u8]) {
        const PRIME: u128 = 0x0000_0000_0100_0000_0000_0000_0000_013B;
        for b in bytes.iter().chain(std::iter::once(&0u8)) {
            self.0 ^= u128::from(*b);
            self.0 = self.0.wrapping_mul(PRIME);
        }
    }

    /// A file by what it is to the run (`label`) and its bytes, or that it cannot be read.
    fn file(&mut self, label: &[u8], path: &Path) {
        self.eat(label);
        match toolkit::file::read(path) {
            Ok(bytes) => self.eat(&bytes),
            Err(_) => self.eat(b"\xffunreadable"),
        }
    }
}

/// This run's signature: 32 hex digits. `cwd` is where COMMAND runs; `versions` are the
/// installed packages' (name, version), `None` where one cannot be read.
pub fn signature(
    op: &str,
    command: &[OsString],
    cwd: &Path,
    versions: &[(&str, Option<&str>)],
) -> String {
    let mut hash = Fnv(0x6c62_272e_07bb_0142_62b8_2175_6295_c58d);
    hash.eat(b"warmup-signature 2");
    hash.eat(op.as_bytes());
    hash.eat(command.len().to_string().as_bytes());
    for word in command {
        hash.eat(word.as_encoded_bytes());
    }
    for (name, version) in versions {
        hash.eat(name.as_bytes());
        hash.eat(version.unwrap_or("\u{fffd}unknown").as_bytes());
    }
    let shape_file = crate::command::shape_file_of(command);
    match &shape_file {
        Some(file) => hash.file(b"shape file", &cwd.join(file)),
        None => hash.eat(b"no shape file"),
    }
    let Some(paths) = crate::command::test_paths_of(command, cwd) else {
        return format!("{:032x}", hash.0);
    };
    let paths = if paths.is_empty() {
        vec![PathBuf::from(".")]
    } else {
        paths
    };
    let mut folders = Vec::new();
    for path in &paths {
        let path = cwd.join(path);
        // A folder: its test files and conftests, walked; a file: itself.
        let folder = if path.is_dir() {
            walk(&mut hash, &path);
            path
        } else {
            hash.file(b"test file", &path);
            path.parent().map(Path::to_path_buf).unwrap_or_default()
        };
        if shape_file.is_none() {
            let shapes = folder.join(DEFAULT_SHAPES);
            if shapes.is_file() {
                hash.file(b"default shapes", &shapes);
            }
        }
        folders.push(folder);
    }
    for folder in folders {
        conftests_above(&mut hash, &folder);
    }
    format!("{:032x}", hash.0)
}

/// The `conftest.py` files pytest loads for tests in `folder`, from its parent up to the root
/// (the nearest folder holding an ini file, whose ini file counts too; else `/`). `folder`'s own
/// are the walk's or, for a test file, counted here.
fn conftests_above(hash: &mut Fnv, folder: &Path) {
    for (up, dir) in folder.ancestors().enumerate() {
        let conftest = dir.join("conftest.py");
        if conftest.is_file() {
            hash.file(format!("conftest {up} up").as_bytes(), &conftest);
        }
        if let Some(ini) = INI_FILES.iter().map(|f| dir.join(f)).find(|f| f.is_file()) {
            let name = ini.file_name().unwrap_or_default().as_encoded_bytes();
            hash.file(&[b"ini ", name].concat(), &ini);
            return;
        }
    }
}

/// The test files (`test_*.py`, `*_test.py`) and `conftest.py` files under `root`, by their
/// path in it, sorted; hidden folders, `__pycache__` and symlinked folders are not entered.
fn walk(hash: &mut Fnv, root: &Path) {
    let mut stack = vec![PathBuf::new()];
    let mut seen = 0;
    while let Some(rel) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(root.join(&rel)) else {
            continue;
        };
        let mut entries: Vec<_> = entries.filter_map(Result::ok).take(WALK_LIMIT).collect();
        seen += entries.len();
        if seen > WALK_LIMIT {
            hash.eat(b"walk limit");
            return;
        }
        entries.sort_by_key(std::fs::DirEntry::file_name);
        let mut folders = Vec::new();
        for entry in entries {
            let name = entry.file_name();
            let text = name.to_string_lossy();
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            if kind.is_dir() {
                if !text.starts_with('.') && text != "__pycache__" {
                    folders.push(rel.join(&name));
                }
            } else if text == "conftest.py"
                || text.ends_with(".py")
                    && (text.starts_with("test_") || text.ends_with("_test.py"))
            {
                hash.file(
                    rel.join(&name).as_os_str().as_encoded_bytes(),
                    &entry.path(),
                );
            }
        }
        // Depth first, in name order.
        stack.extend(folders.into_iter().rev());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(text: &str) -> Vec<OsString> {
        text.split_whitespace().map(OsString::from).collect()
    }

    const VERSIONS: &[(&str, Option<&str>)] = &[("triton", Some("3.6.0")), ("flag_gems", None)];

    fn sig(cwd: &Path, command: &str) -> String {
        signature("mm", &words(command), cwd, VERSIONS)
    }

    /// A benchmark as FlagGems lays it out: a root with its ini file and a conftest, and
    /// `benchmark/` with a conftest, a test file and its default shapes.
    fn bench(root: &Path) {
        let b = root.join("benchmark");
        std::fs::create_dir_all(&b).expect("mkdir");
        for (file, text) in [
            ("pytest.ini", "[pytest]\n"),
            ("conftest.py", "# root\n"),
            ("benchmark/conftest.py", "# bench\n"),
            ("benchmark/test_blas_perf.py", "def test_mm(): pass\n"),
            ("benchmark/core_shapes.yaml", "mm:\n  shapes: [[1, 2, 3]]\n"),
            ("benchmark/notes.txt", "anything\n"),
        ] {
            std::fs::write(root.join(file), text).expect("write");
        }
    }

    #[test]
    fn what_decides_the_keys_changes_the_signature_and_nothing_else_does() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path();
        bench(root);
        let command = "pytest -m mm benchmark/test_blas_perf.py::test_mm";
        let first = sig(root, command);
        assert_eq!(first.len(), 32);
        assert_eq!(
            sig(root, command),
            first,
            "the same run, the same signature"
        );
        // Touched, or a file nothing reads changed: the same.
        std::fs::write(root.join("benchmark/notes.txt"), "else\n").expect("write");
        let shapes = root.join("benchmark/core_shapes.yaml");
        std::fs::write(&shapes, "mm:\n  shapes: [[1, 2, 3]]\n").expect("write");
        assert_eq!(sig(root, command), first);
        let mut seen = vec![first];
        let mut differs = |what: &str| {
            let now = sig(root, command);
            assert!(!seen.contains(&now), "{what} left the signature as it was");
            seen.push(now);
        };
        for (file, text) in [
            ("benchmark/test_blas_perf.py", "def test_mm(): 1\n"),
            ("benchmark/conftest.py", "# bench 2\n"),
            ("conftest.py", "# root 2\n"),
            ("benchmark/core_shapes.yaml", "mm:\n  shapes: [[4, 5, 6]]\n"),
            ("pytest.ini", "[pytest]\naddopts = -v\n"),
        ] {
            std::fs::write(root.join(file), text).expect("write");
            differs(file);
        }
        std::fs::remove_file(root.join("benchmark/conftest.py")).expect("rm");
        differs("a conftest removed");
        // Above pytest's root nothing counts.
        std::fs::create_dir(root.join("up")).expect("mkdir");
        let sub = root.join("up/repo");
        bench(&sub);
        let before = sig(&sub, command);
        std::fs::write(root.join("up/conftest.py"), "# above\n").expect("write");
        assert_eq!(sig(&sub, command), before);
        // The versions.
        let other = signature("mm", &words(command), &sub, &[("triton", Some("3.5.1"))]);
        assert_ne!(other, before);
    }

    #[test]
    fn a_named_shape_file_replaces_the_default_and_a_folder_is_walked() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path();
        bench(root);
        std::fs::write(root.join("s.yaml"), "mm: {shapes: [[1, 1, 1]]}\n").expect("write");
        let named = "pytest benchmark/test_blas_perf.py --shape_file s.yaml";
        let before = sig(root, named);
        std::fs::write(root.join("benchmark/core_shapes.yaml"), "x\n").expect("write");
        assert_eq!(
            sig(root, named),
            before,
            "the named shape file is the one read"
        );
        std::fs::write(root.join("s.yaml"), "mm: {shapes: [[2, 2, 2]]}\n").expect("write");
        assert_ne!(sig(root, named), before);
        // A folder, or none named (pytest's folder): its test files, at any depth.
        for command in ["pytest benchmark", "pytest -q"] {
            let before = sig(root, command);
            std::fs::create_dir_all(root.join("benchmark/deep")).expect("mkdir");
            std::fs::write(root.join("benchmark/deep/test_x.py"), "# new\n").expect("write");
            assert_ne!(sig(root, command), before, "{command}");
            std::fs::remove_file(root.join("benchmark/deep/test_x.py")).expect("rm");
        }
        // Not pytest: the words and the shape file alone.
        let script = "python3 run.py --shape_file s.yaml";
        let before = sig(root, script);
        std::fs::write(root.join("benchmark/test_blas_perf.py"), "# edited\n").expect("write");
        assert_eq!(sig(root, script), before);
    }
}
