//! `SCRATCH/w<i>/worker.log`: a child's stdout and stderr, through a pipe that warmup-spawn
//! copies into the file, so that `--max-log` can stop a child filling the disk without stopping
//! the child: past the cap, output is read and dropped, and the log says so.

use anyhow::{Context, Result};
use nix::fcntl::{fcntl, FcntlArg, OFlag};
use std::fs::File;
use std::io::Write;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::Path;

/// How much one read takes from a pipe.
const CHUNK: usize = 64 * 1024;

/// One child's log: the read end of its output pipe and the file it is copied to.
#[derive(Debug)]
pub struct Log {
    file: File,
    /// `None` once the pipe reached end of file (every writer is gone) or was closed.
    pipe: Option<OwnedFd>,
    cap: Option<u64>,
    written: u64,
    dropped: u64,
}

impl Log {
    /// Creates (truncates) the log file and a pipe into it; returns the log and the pipe's write
    /// end, for the child's stdout and stderr.
    pub fn create(path: &Path, cap: Option<u64>) -> Result<(Log, OwnedFd)> {
        let file = File::create(path).with_context(|| format!("creating {}", path.display()))?;
        // Close-on-exec on both ends: only the child gets the write end, as its stdout and stderr.
        let (read, write) =
            nix::unistd::pipe2(OFlag::O_CLOEXEC).context("making a pipe for the child's output")?;
        // Non-blocking on our end only: the child writes as to any pipe.
        fcntl(read.as_fd(), FcntlArg::F_SETFL(OFlag::O_NONBLOCK))
            .context("making the output pipe non-blocking")?;
        Ok((
            Log {
                file,
                pipe: Some(read),
                cap,
                written: 0,
                dropped: 0,
            },
            write,
        ))
    }

    /// The pipe to wait on, while it is open.
    pub fn fd(&self) -> Option<BorrowedFd<'_>> {
        self.pipe.as_ref().map(AsFd::as_fd)
    }

    /// Copies what the pipe holds now into the file, up to the cap; drops the rest.
    pub fn pump(&mut self) {
        if self.pipe.is_none() {
            return;
        }
        let mut buf = vec![0; CHUNK];
        while let Some(pipe) = &self.pipe {
            match nix::unistd::read(pipe.as_fd(), &mut buf) {
                Ok(0) => {
                    self.pipe = None;
                    return;
                }
                Ok(n) => self.keep(&buf[..n]),
                Err(nix::errno::Errno::EINTR) => {}
                // EAGAIN: nothing more for now. Anything else: the pipe is no use any more.
                Err(nix::errno::Errno::EAGAIN) => return,
                Err(_) => {
                    self.pipe = None;
                    return;
                }
            }
        }
    }

    fn keep(&mut self, bytes: &[u8]) {
        let room = self
            .cap
            .map_or(bytes.len() as u64, |cap| cap - self.written);
        let take = usize::try_from(room).map_or(bytes.len(), |r| r.min(bytes.len()));
        // A full disk loses log lines, not the run: the child goes on either way.
        let _ = self.file.write_all(&bytes[..take]);
        self.written += take as u64;
        if take < bytes.len() {
            if self.dropped == 0 {
                let _ = write!(
                    self.file,
                    "\n[warmup-spawn: this log reached --max-log ({} bytes); the rest of the child's output is dropped]\n",
                    self.written
                );
            }
            self.dropped += (bytes.len() - take) as u64;
        }
    }

    /// Takes what is left in the pipe, closes it, and notes how much was dropped. The child's
    /// processes are gone by now, or were left to the end-of-run sweep: the pipe is not waited on.
    pub fn close(&mut self) {
        self.pump();
        self.pipe = None;
        if self.dropped > 0 {
            let _ = writeln!(
                self.file,
                "[warmup-spawn: {} bytes of output dropped past --max-log]",
                self.dropped
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_past_the_cap_is_dropped_with_a_note() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("worker.log");
        let (mut log, write) = Log::create(&path, Some(10)).expect("log");
        let mut writer = File::from(write);
        writer.write_all(b"0123456789abcdef").expect("write");
        drop(writer);
        log.close();
        let text = std::fs::read_to_string(&path).expect("read");
        assert!(
            text.starts_with("0123456789\n[warmup-spawn: this log reached --max-log (10 bytes)"),
            "{text}"
        );
        assert!(
            text.ends_with("[warmup-spawn: 6 bytes of output dropped past --max-log]\n"),
            "{text}"
        );
    }
}
