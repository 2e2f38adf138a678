//! Where a run's configs go and what its tools run under: the scratch, the plan's op, the record
//! folder (`protocol::env::record_folder`, the one rule), and the scratch lock lent to each tool.
//! `--measure` and `--finish` make one alike.

use protocol::layout::Scratch;
use std::fs::File;
use std::path::PathBuf;

/// Where the run's configs go, and what the tools run under.
#[derive(Debug)]
pub struct Place<'a> {
    pub scratch: &'a Scratch,
    /// The plan's op, which each tool is given (`--op`).
    pub op: &'a str,
    /// The record folder, absolute; `None`: none given.
    pub record_dir: Option<PathBuf>,
    /// The record folder, else `SCRATCH/merged`: where the configs are published, and where a
    /// measurement started early looks.
    pub publish_dir: PathBuf,
    /// The scratch lock, lent to each tool.
    pub lock: Option<File>,
}

impl<'a> Place<'a> {
    /// The place of a run on `scratch` for `op`, publishing into `record_dir`, else
    /// `SCRATCH/merged`; the caller's lock, if it lent one, reaches the tools alone.
    pub fn new(scratch: &'a Scratch, op: &'a str, record_dir: Option<PathBuf>) -> Place<'a> {
        // A lock the caller lent reaches the tools, not the measurement nor the children.
        if let Some(fd) = protocol::lock::lent_fd_number().filter(|fd| *fd > 2) {
            // SAFETY: F_SETFD sets only the close-on-exec flag of our own descriptor; a number
            // that is not open fails (EBADF) and is left alone.
            #[allow(unsafe_code)]
            unsafe {
                nix::libc::fcntl(fd, nix::libc::F_SETFD, nix::libc::FD_CLOEXEC);
            }
        }
        Place {
            scratch,
            op,
            publish_dir: record_dir
                .clone()
                .unwrap_or_else(|| scratch.fallback_records()),
            record_dir,
            lock: File::open(scratch.lock_file()).ok(),
        }
    }
}
