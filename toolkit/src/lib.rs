//! What every warmup tool is built with, and none of the harness protocol: the tools' uucore.
//! Nothing here knows of plans, shards or records (those are `protocol`'s); everything here is
//! how a small Unix tool behaves.
//!
//! - [`cli`]: argument parsing (usage errors named by the tool, exit 2), numbers on the command
//!   line, and the shell completions and man pages `make install` generates;
//! - [`exit`] and [`Status`]: the exit statuses, and the one place a result becomes one;
//! - [`atomic`]: writing files whole or not at all;
//! - [`file`]: reading a file a tool is given: a regular file, of bounded size;
//! - [`lock`]: a lock file beside a file that is read, changed and replaced;
//! - [`shell`]: quoting for POSIX shells;
//! - [`tools`]: where the warmup-* tools are, in the one lookup order.

pub mod atomic;
pub mod cli;
mod exit;
pub mod file;
pub mod lock;
pub mod shell;
pub mod tools;

pub use exit::{exit, exit_status_help, Status, COMMAND_NOT_FOUND, USAGE, USAGE_ROW};
