//! The harness protocol the warmup tools share (docs/CONTRACT.md), and only that: what two tools
//! must agree on lives here, everything else stays in its tool's crate, and how a tool behaves as
//! a Unix tool (parsing, exit statuses, atomic writes, locks, quoting) is `toolkit`'s.
//!
//! - [`env`](mod@env): the harness's environment variable names; [`op`]: `--op`, read by every tool alike;
//! - [`layout`]: every path inside a scratch folder, and [`layout::Scratch::lock`], the scratch
//!   lock ([`lock::LOCK_FD`] is the caller's handshake);
//! - [`shard_plan`]: the shard plan, `SCRATCH/plan.json`, which warmup-shard writes and the others
//!   read;
//! - [`status`]: `SCRATCH/w<i>/status.json`, which warmup-spawn writes and warmup-costs reads,
//!   and [`status::Outcome`], the one rule every run summary judges a shard by;
//! - [`costs`]: the cost file, which warmup-costs writes and warmup-shard reads;
//! - [`history`]: an op's history in a record folder (the published sidecar and
//!   `<op>.costs.json`), which warmup-shard `--history` and `warmup-costs --predict` read, and
//!   [`probe`]: the Triton version and device model a history must match;
//! - [`predict`]: whether a warmup pays, from that history (warmup-plan decides with it,
//!   `warmup-costs --predict` prints it);
//! - [`backend`]: the accelerator runtimes and the devices a run has, which warmup-spawn pins
//!   children to and warmup-plan counts; [`command`]: what a COMMAND runs (its shape file, its
//!   pytest, its Python), read from its words; [`python`]: what that Python would import (Triton's
//!   version, the harness), read from its package metadata; [`choice`]: the shards a run of some
//!   shards asks for (`--only`, `--index-from-env`);
//! - [`signature`]: what decides the keys a run needs, which a record's `complete_for` names;
//! - [`records`]: the `{kernel: {key: config}}` shape check and counts that warmup-merge and
//!   warmup-publish both report;
//! - [`summary`]: the run-summary lines scripts read, and [`replay`]: warmup-publish's JSON;
//! - [`cache_dir`]: the record cache, where records go when no record folder is named, and
//!   [`session`]: whether a record session is live in a record folder.
//!
//! Python's `json`, which the record files are written with, is the `pyjson` crate's.

pub mod backend;
pub mod cache_dir;
pub mod choice;
pub mod command;
pub mod costs;
pub mod env;
pub mod history;
pub mod layout;
pub mod lock;
pub mod op;
pub mod predict;
pub mod probe;
pub mod python;
pub mod records;
pub mod replay;
pub mod session;
pub mod shard_plan;
pub mod signature;
pub mod status;
pub mod summary;
