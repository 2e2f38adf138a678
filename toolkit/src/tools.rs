//! Where the warmup-* tools are: the one lookup order every tool that runs or names another
//! follows (warmup-spawn running warmup-merge, warmup-publish and warmup-costs; warmup-plan
//! naming warmup-spawn in warmup-slurm's batch scripts). The one set by hand first, then where
//! the caller itself is, then `PATH`: the order scripts/lib/warmup-common.sh's `find_bin_dir`
//! looks for warmup-plan in (tests/test_warmup.py checks that both follow `WARMUP_BIN_DIR`
//! first).

use anyhow::{Context, Result};
use std::path::{Path, PathBuf};

/// The folder of the tools, set by hand (the scripts set it to where they found them).
pub const BIN_DIR: &str = "WARMUP_BIN_DIR";

/// Whether `path` is a file this process may execute.
pub fn is_executable(path: &Path) -> bool {
    path.is_file() && nix::unistd::access(path, nix::unistd::AccessFlags::X_OK).is_ok()
}

/// Where the tool named `name` is: in `WARMUP_BIN_DIR` (set and not empty), beside this
/// executable, on `PATH`.
pub fn find(name: &str) -> Result<PathBuf> {
    let exe = std::env::current_exe().ok();
    let beside = exe.as_deref().and_then(Path::parent).map(Path::to_path_buf);
    let bin_dir = std::env::var_os(BIN_DIR).filter(|d| !d.is_empty());
    let path = std::env::var_os("PATH").unwrap_or_default();
    bin_dir
        .map(PathBuf::from)
        .into_iter()
        .chain(beside)
        .chain(std::env::split_paths(&path))
        .map(|dir| dir.join(name))
        .find(|p| is_executable(p))
        .with_context(|| {
            let caller = exe
                .as_deref()
                .and_then(Path::file_name)
                .map_or_else(|| "this tool".into(), |n| n.to_string_lossy());
            format!(
                "{name} not found in {BIN_DIR}, beside {caller} or on PATH; install the \
                 tools together (make install) or set {BIN_DIR}"
            )
        })
}
