//! What a person watching sees on stderr: on a terminal a live line per device (shard, elapsed,
//! state), in colour unless `NO_COLOR` is set; otherwise one plain line per start and end, so logs
//! and CI stay readable. At the end a summary, with the last log lines of every failed shard.

use protocol::status::{Outcome, ShardStatus};
use std::io::{IsTerminal, Write};
use std::path::Path;
use std::time::{Duration, Instant};

/// How many log lines a failed shard shows in the summary.
const TAIL_LINES: usize = 10;
/// How much of each of those lines it shows: a line may be a whole progress bar or a dump.
const LINE_BYTES: usize = 500;

#[derive(Debug)]
enum State {
    Idle,
    Running {
        shard: usize,
        since: Instant,
    },
    Stopping {
        shard: usize,
        since: Instant,
        why: &'static str,
    },
}

#[derive(Debug)]
pub struct Progress {
    live: bool,
    color: bool,
    devices: Vec<String>,
    states: Vec<State>,
    drawn: usize,
}

impl Progress {
    /// Live lines when stderr is a terminal; colour too unless `NO_COLOR` is set and non-empty.
    pub fn new(devices: &[String]) -> Progress {
        let live = std::io::stderr().is_terminal();
        let color = live && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
        Progress {
            live,
            color,
            devices: devices.to_vec(),
            states: devices.iter().map(|_| State::Idle).collect(),
            drawn: 0,
        }
    }

    /// How often the live lines want redrawing, if they are shown.
    pub fn refresh(&self) -> Option<Duration> {
        self.live.then_some(Duration::from_millis(250))
    }

    pub fn started(&mut self, slot: usize, shard: usize, pid: u32) {
        self.states[slot] = State::Running {
            shard,
            since: Instant::now(),
        };
        if self.live {
            self.draw();
        } else {
            let device = &self.devices[slot];
            self.line(&format!(
                "shard {shard} started on device {device} (pid {pid})"
            ));
        }
    }

    /// The shard's child is being stopped (`why`: "timed out", "interrupted", "cleaning up").
    pub fn stopping(&mut self, slot: usize, why: &'static str) {
        if let State::Running { shard, since } = self.states[slot] {
            self.states[slot] = State::Stopping { shard, since, why };
            if !self.live {
                let device = &self.devices[slot];
                self.line(&format!(
                    "shard {shard} on device {device} {why}: stopping its process group"
                ));
            }
        }
    }

    pub fn finished(&mut self, slot: usize, status: &ShardStatus) {
        self.states[slot] = State::Idle;
        let text = format!(
            "shard {} on device {} {} in {:.2}s",
            status.shard,
            status.device,
            self.paint_outcome(status),
            status.seconds
        );
        self.line(&text);
    }

    /// A message of the run's own (not a shard's), kept above the live lines.
    pub fn note(&mut self, text: &str) {
        self.line(text);
    }

    /// Redraws the live lines with fresh elapsed times.
    pub fn tick(&mut self) {
        if self.live {
            self.draw();
        }
    }

    /// The end of the run: counts, wall time, slowest shard, load imbalance, failed shards' logs.
    pub fn summary(&mut self, statuses: &[ShardStatus], total: usize, wall: Duration) {
        self.clear();
        // Every device is idle now: the live lines are done, the summary stays below them.
        self.live = false;
        let count = |kind: Outcome| statuses.iter().filter(|s| s.outcome() == kind).count();
        let (ok, failed) = (count(Outcome::Ok), count(Outcome::Failed));
        let (timed_out, stopped) = (count(Outcome::TimedOut), count(Outcome::Stopped));
        let not_started = total - statuses.len();
        let noun = if total == 1 { "shard" } else { "shards" };
        let mut head = format!("{total} {noun}: {ok} ok, {failed} failed, {timed_out} timed out");
        if stopped > 0 {
            head.push_str(&format!(", {stopped} stopped"));
        }
        if not_started > 0 {
            head.push_str(&format!(", {not_started} not started"));
        }
        head.push_str(&format!("; wall {:.2}s", wall.as_secs_f64()));
        self.line(&head);
        if let Some(slowest) = statuses
            .iter()
            .max_by(|a, b| a.seconds.total_cmp(&b.seconds))
        {
            let mean = statuses.iter().map(|s| s.seconds).sum::<f64>() / statuses.len() as f64;
            let imbalance = if mean > 0.0 {
                slowest.seconds / mean
            } else {
                1.0
            };
            self.line(&format!(
                "slowest shard {} ({:.2}s on device {}); load imbalance {imbalance:.2} (slowest / mean {mean:.2}s)",
                slowest.shard, slowest.seconds, slowest.device
            ));
        }
        for status in statuses.iter().filter(|s| !s.ok()) {
            let outcome = self.paint_outcome(status);
            if status.outcome() == Outcome::Stopped {
                // Its log ends where the stop cut it: nothing there explains anything.
                self.line(&format!(
                    "shard {} {outcome}; log: {}",
                    status.shard,
                    status.log.display()
                ));
                continue;
            }
            let mut text = format!(
                "shard {} {outcome}; last lines of {}:",
                status.shard,
                status.log.display()
            );
            for line in tail(&status.log, TAIL_LINES) {
                text.push_str("\n  | ");
                text.push_str(&line);
            }
            self.line(&text);
        }
    }

    fn paint_outcome(&self, s: &ShardStatus) -> String {
        let (text, color) = outcome(s);
        if self.color {
            format!("\x1b[{color}m{text}\x1b[0m")
        } else {
            text
        }
    }

    fn line(&mut self, text: &str) {
        self.clear();
        let _ = writeln!(std::io::stderr().lock(), "{}: {text}", crate::TOOL);
        if self.live {
            self.draw();
        }
    }

    fn clear(&mut self) {
        if self.drawn > 0 {
            // Up to the first live line, then erase from there to the end of the screen.
            let _ = write!(std::io::stderr().lock(), "\x1b[{}F\x1b[J", self.drawn);
            self.drawn = 0;
        }
    }

    fn draw(&mut self) {
        self.clear();
        let mut err = std::io::stderr().lock();
        for (device, state) in self.devices.iter().zip(&self.states) {
            let text = match state {
                State::Idle => "idle".to_owned(),
                State::Running { shard, since } => {
                    format!(
                        "shard {shard:<4} {:>8.1}s  running",
                        since.elapsed().as_secs_f64()
                    )
                }
                State::Stopping { shard, since, why } => format!(
                    "shard {shard:<4} {:>8.1}s  {why}, stopping",
                    since.elapsed().as_secs_f64()
                ),
            };
            let _ = writeln!(err, "  device {device:<12} {text}");
        }
        self.drawn = self.devices.len();
    }
}

/// The outcome in words and its ANSI colour.
fn outcome(s: &ShardStatus) -> (String, &'static str) {
    if let Some(err) = &s.error {
        return (format!("failed to start ({err})"), "31");
    }
    let how = match (s.exit_code, &s.signal_name) {
        (Some(code), _) => format!("exit {code}"),
        (None, Some(name)) => format!("killed by {name}"),
        (None, None) => "no status".to_owned(),
    };
    match s.outcome() {
        Outcome::Ok => ("ok".to_owned(), "32"),
        Outcome::TimedOut => ("timed out".to_owned(), "33"),
        Outcome::Stopped => (format!("stopped ({how})"), "33"),
        Outcome::Failed | Outcome::NotStarted => (format!("failed ({how})"), "31"),
    }
}

/// The last `n` lines of a log, read from its last 64 KiB, each cut to [`LINE_BYTES`].
fn tail(path: &Path, n: usize) -> Vec<String> {
    use std::io::{Read, Seek, SeekFrom};
    let Ok(mut file) = std::fs::File::open(path) else {
        return vec!["(no log)".to_owned()];
    };
    let len = file.metadata().map_or(0, |m| m.len());
    let _ = file.seek(SeekFrom::Start(len.saturating_sub(64 * 1024)));
    let mut bytes = Vec::new();
    let _ = file.read_to_end(&mut bytes);
    let text = String::from_utf8_lossy(&bytes);
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..]
        .iter()
        .map(|l| cut(l, LINE_BYTES))
        .collect()
}

/// `line` cut to at most `max` bytes (on a character boundary), saying how much was left out.
fn cut(line: &str, max: usize) -> String {
    if line.len() <= max {
        return line.to_owned();
    }
    let end = (0..=max)
        .rev()
        .find(|&i| line.is_char_boundary(i))
        .unwrap_or(0);
    format!("{} [... {} more bytes]", &line[..end], line.len() - end)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tail_keeps_the_last_lines() {
        let dir = tempfile::tempdir().expect("tempdir");
        let log = dir.path().join("worker.log");
        let body: String = (1..=25).map(|i| format!("line {i}\n")).collect();
        std::fs::write(&log, body).expect("write");
        let lines = tail(&log, 10);
        assert_eq!(lines.len(), 10);
        assert_eq!(lines[0], "line 16");
        assert_eq!(lines[9], "line 25");
    }

    #[test]
    fn a_long_log_line_is_cut_and_says_how_much_is_left_out() {
        let dir = tempfile::tempdir().expect("tempdir");
        let log = dir.path().join("worker.log");
        std::fs::write(&log, format!("short\n{}é\n", "x".repeat(70_000))).expect("write");
        let lines = tail(&log, 10);
        assert_eq!(
            lines.len(),
            1,
            "the 64 KiB window starts inside the long line"
        );
        assert!(
            lines[0].starts_with(&"x".repeat(LINE_BYTES)),
            "{}",
            lines[0]
        );
        assert!(lines[0].ends_with(" more bytes]"), "{}", lines[0]);
        assert!(lines[0].len() < LINE_BYTES + 40);
        assert_eq!(cut("aé", 2), "a [... 2 more bytes]");
    }
}
