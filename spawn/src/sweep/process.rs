//! Finding and stopping everything a child started: its process group, the processes that left
//! the group, and orphans handed back to warmup-spawn.
//!
//! A child leads its own process group, and what it forks stays there unless it calls `setsid` or
//! `setpgid`. To find those too, every child carries a marker in its environment,
//! `WARMUP_SPAWN_SHARD=<run>/<shard>`, which everything it starts inherits and which
//! `/proc/<pid>/environ` gives back. Why a marker rather than following parent links: when a
//! process's parent exits it is re-parented (to warmup-spawn, a subreaper) and its link to the
//! shard it came from is gone at once, as a double fork (`setsid sh -c 'cmd &'`) does; its
//! environment still says where it came from. Cgroups would be exact but need a delegated
//! hierarchy that few machines give. What the marker misses: a process started with a cleared
//! environment (`env -i`); those come back to warmup-spawn as orphans and are stopped at the end
//! of the run ([`sweep_orphans`]).

use nix::errno::Errno;
use nix::sys::signal::{kill, killpg, Signal};
use nix::sys::wait::{waitpid, WaitPidFlag, WaitStatus};
use nix::unistd::Pid;
use std::collections::HashMap;
use std::fmt;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// The environment variable that marks a child's processes as its shard's.
pub const MARKER: &str = "WARMUP_SPAWN_SHARD";

/// How often a stop that waits for processes to go looks again: the processes it waits for are
/// not all our children, so no SIGCHLD says when they are gone.
pub const POLL: Duration = Duration::from_millis(20);

/// The marker of one shard of one run: `<run>/<shard>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Marker {
    run: String,
    shard: usize,
}

impl Marker {
    pub fn new(run: &str, shard: usize) -> Marker {
        Marker {
            run: run.to_owned(),
            shard,
        }
    }
}

impl fmt::Display for Marker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.run, self.shard)
    }
}

/// A name for this run, unique on this machine: this process's id and its start time.
pub fn run_id() -> String {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_nanos();
    format!("{}.{nanos}", std::process::id())
}

/// The live processes carrying run `run`'s marker, by shard, from one pass over `/proc`.
/// Zombies have no environment left and are not counted: they hold nothing.
pub fn census(run: &str) -> HashMap<usize, Vec<Pid>> {
    let mut found: HashMap<usize, Vec<Pid>> = HashMap::new();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return found;
    };
    let key = format!("{MARKER}={run}/");
    for entry in entries.filter_map(Result::ok) {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<i32>().ok())
        else {
            continue;
        };
        // Another user's process, or one gone since the listing: not ours either way.
        let Ok(environ) = std::fs::read(entry.path().join("environ")) else {
            continue;
        };
        let shard = environ
            .split(|&b| b == 0)
            .find_map(|var| var.strip_prefix(key.as_bytes()))
            .and_then(|rest| std::str::from_utf8(rest).ok()?.parse::<usize>().ok());
        if let Some(shard) = shard {
            found.entry(shard).or_default().push(Pid::from_raw(pid));
        }
    }
    found
}

/// Sends `sig` to the process group `pgid`; a group already gone is no error.
pub fn signal_group(pgid: Pid, sig: Signal) {
    let _ = killpg(pgid, sig);
}

/// Whether any process (a zombie included) is still in group `pgid`. A group we may not signal
/// counts as gone: we could not stop it anyway.
pub fn group_alive(pgid: Pid) -> bool {
    kill(Pid::from_raw(-pgid.as_raw()), None).is_ok()
}

/// Sends `sig` once to each process but those in group `except`: to its whole group when it
/// leads one (a `setsid` leaves its caller leading a new group, with whatever it starts in
/// there), else to it alone.
pub fn signal_each(pids: &[Pid], sig: Signal, except: Option<Pid>) {
    for &pid in pids {
        match nix::unistd::getpgid(Some(pid)) {
            Ok(pgid) if Some(pgid) == except => {}
            Ok(pgid) if pgid == pid => signal_group(pid, sig),
            _ => {
                let _ = kill(pid, sig);
            }
        }
    }
}

/// How a reaped process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    Code(i32),
    Signal(Signal),
}

/// Collects every child that has exited, ours or an orphan handed to us as subreaper.
pub fn reap() -> nix::Result<Vec<(Pid, Exit)>> {
    let mut reaped = Vec::new();
    loop {
        match waitpid(Pid::from_raw(-1), Some(WaitPidFlag::WNOHANG)) {
            Ok(WaitStatus::Exited(pid, code)) => reaped.push((pid, Exit::Code(code))),
            Ok(WaitStatus::Signaled(pid, sig, _)) => reaped.push((pid, Exit::Signal(sig))),
            Ok(WaitStatus::StillAlive) | Err(Errno::ECHILD) => return Ok(reaped),
            Ok(_) | Err(Errno::EINTR) => {}
            Err(e) => return Err(e),
        }
    }
}

/// This process's children, but `keep`, from `/proc/<pid>/stat` (`pid (comm) state ppid ...`).
fn children(keep: &[Pid]) -> Vec<Pid> {
    let me = std::process::id().to_string();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .filter_map(|e| {
            let pid: i32 = e.file_name().to_str()?.parse().ok()?;
            let stat = std::fs::read_to_string(e.path().join("stat")).ok()?;
            // comm may hold spaces and parentheses: the fields resume after the last ')'.
            let rest = &stat[stat.rfind(')')? + 1..];
            let ppid = rest.split_whitespace().nth(1)?;
            (ppid == me).then(|| Pid::from_raw(pid))
        })
        .filter(|pid| !keep.contains(pid))
        .collect()
}

/// Stops the orphans re-parented to us (we are a subreaper) that nothing else accounted for:
/// SIGTERM (to their group too, when they lead one), `grace`, SIGKILL, reap. `keep` are children
/// of our own that must live on (the watchdog, the measurement).
pub fn sweep_orphans(grace: Duration, keep: &[Pid]) -> Vec<(Pid, Exit)> {
    // What is reaped here is handed back: a kept child (the measurement) may end meanwhile.
    let mut reaped = Vec::new();
    let reap_into = |into: &mut Vec<(Pid, Exit)>| into.extend(reap().unwrap_or_default());
    reap_into(&mut reaped);
    let strays = children(keep);
    if strays.is_empty() {
        return reaped;
    }
    signal_each(&strays, Signal::SIGTERM, None);
    let end = Instant::now() + grace;
    loop {
        reap_into(&mut reaped);
        let left = children(keep);
        if left.is_empty() {
            return reaped;
        }
        if Instant::now() >= end {
            signal_each(&left, Signal::SIGKILL, None);
            break;
        }
        std::thread::sleep(POLL);
    }
    // SIGKILL cannot be ignored; wait for the kernel to deliver it, bounded in case of D state.
    let end = Instant::now() + Duration::from_secs(5);
    while Instant::now() < end {
        reap_into(&mut reaped);
        if children(keep).is_empty() {
            break;
        }
        std::thread::sleep(POLL);
    }
    reaped
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_census_finds_marked_processes_by_shard_and_only_this_runs() {
        let run = run_id();
        let start = |value: String| {
            std::process::Command::new("sleep")
                .arg("30")
                .env(MARKER, value)
                .spawn()
                .expect("sleep")
        };
        let mut mine = start(Marker::new(&run, 3).to_string());
        let mut other = start(format!("{run}x/3"));
        let pid = Pid::from_raw(i32::try_from(mine.id()).expect("pid"));
        // Until `sleep` has exec'd, /proc/<pid>/environ is still this test's environment: on a
        // loaded machine the first census can come before that, so look until it has.
        let deadline = Instant::now() + Duration::from_secs(20);
        let mut found = census(&run);
        while found.get(&3) != Some(&vec![pid]) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
            found = census(&run);
        }
        let _ = mine.kill();
        let _ = other.kill();
        let _ = mine.wait();
        let _ = other.wait();
        assert_eq!(found.get(&3), Some(&vec![pid]), "{found:?}");
        assert_eq!(found.len(), 1, "{found:?}");
    }
}
