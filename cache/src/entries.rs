//! What the cache holds, read without changing anything: one [`Entry`] per op recorded in each
//! (Triton, device) folder (`protocol::cache_dir`), with what `warmup-cache list` shows and what
//! `remove` judges by. A record that cannot be read is still an entry (its counts unknown), so
//! that it can be seen and removed. A platform folder that is a symlink to a folder (a team
//! folder) is read through it, as runs use it; an op's name is its file's bytes, UTF-8 or not, as
//! the harness names it.

use protocol::cache_dir;
use protocol::history::{costs_path, journal_path, meta_path, Meta};
use protocol::layout::record_file;
use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// One op's record in one cache folder.
#[derive(Debug, Clone)]
pub struct Entry {
    /// The cache folder (`ROOT/<slug>`, as named there: a link is not resolved).
    pub folder: PathBuf,
    /// The op, as its record file names it (`<op>.json`), bytes that are not UTF-8 kept.
    pub op: OsString,
    /// Kernels and keys in `<op>.json`; `None` when it cannot be read as a record.
    pub kernels: Option<usize>,
    pub keys: Option<usize>,
    /// The sidecar's Triton version and device; `None` when it names none or there is none.
    pub triton: Option<String>,
    pub device: Option<String>,
    /// Bytes of the op's files (record, sidecar, costs, journal).
    pub bytes: u64,
    /// The latest of the op's use stamp and its files' modification times.
    pub last_use: Option<SystemTime>,
}

impl Entry {
    /// The op's files in its folder that a removal deletes (the lock files stay: removing one
    /// would break the lock of a process that has it open).
    pub fn files(&self) -> Vec<PathBuf> {
        files(&self.folder, &self.op)
    }
}

fn files(folder: &Path, op: &OsStr) -> Vec<PathBuf> {
    vec![
        record_file(folder, op),
        meta_path(folder, op),
        costs_path(folder, op),
        journal_path(folder, op),
        cache_dir::used_path(folder, op),
    ]
}

/// Every entry under `root`, by folder then op; a root that does not exist holds none. A
/// folder is one that is, or a symlink to one (a link to a file, or to nothing, is none).
pub fn scan(root: &Path) -> std::io::Result<Vec<Entry>> {
    let mut folders: Vec<PathBuf> = match std::fs::read_dir(root) {
        Ok(dir) => dir
            .filter_map(|e| e.ok())
            .map(|e| e.path())
            .filter(|path| std::fs::metadata(path).is_ok_and(|m| m.is_dir()))
            .collect(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    folders.sort();
    let mut entries = Vec::new();
    for folder in folders {
        for op in ops(&folder) {
            entries.push(entry(&folder, op));
        }
    }
    Ok(entries)
}

/// The ops recorded in `folder`: its `<op>.json` files, sidecars and cost files aside
/// (`protocol::op::of_record_file`).
fn ops(folder: &Path) -> Vec<OsString> {
    let mut ops: Vec<OsString> = std::fs::read_dir(folder)
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok())
        .filter_map(|e| protocol::op::of_record_file(&e.file_name()).map(OsStr::to_os_string))
        .collect();
    ops.sort();
    ops
}

fn entry(folder: &Path, op: OsString) -> Entry {
    let record = toolkit::file::read(&record_file(folder, &op))
        .ok()
        .and_then(|bytes| serde_json::from_slice::<serde_json::Value>(&bytes).ok());
    let buckets = record.as_ref().and_then(|r| r.as_object()).map(|kernels| {
        let keys = kernels
            .values()
            .map(|b| b.as_object().map_or(0, serde_json::Map::len))
            .sum::<usize>();
        (kernels.len(), keys)
    });
    let meta = Meta::load(&meta_path(folder, &op)).ok();
    let mut bytes = 0;
    let mut last_use = None;
    for file in files(folder, &op) {
        if let Ok(m) = std::fs::symlink_metadata(&file) {
            bytes += m.len();
            last_use = last_use.max(m.modified().ok());
        }
    }
    Entry {
        folder: folder.to_path_buf(),
        kernels: buckets.map(|b| b.0),
        keys: buckets.map(|b| b.1),
        triton: meta.as_ref().and_then(|m| m.triton.clone()),
        device: meta.and_then(|m| m.device),
        bytes,
        last_use,
        op,
    }
}
