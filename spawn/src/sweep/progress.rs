//! What a person watching sees on stderr: on a terminal a live line per device (shard, elapsed,
//! state, how far its sweep is), each cut to the terminal's width so that a redraw never
//! wraps, in colour unless `NO_COLOR` is set; otherwise (a log, or `TERM=dumb`: no redraws, no
//! colour) one plain line per start and end, and every [`INTERVAL`] one line per running device
//! saying how far it is, and never more often, so that a 3000-key sweep does not flood a log. At
//! the end a summary, with the last log lines of every failed shard.
//!
//! How far a child is comes from its harness: `SCRATCH/w<i>/progress.json` (keys tuned, configs
//! timed), which the harness rewrites whole at each key (`WARMUP_HARNESS_PROGRESS`); read here at
//! each line, a few bytes. The ETA is the history's: a plan whose costs are seconds
//! (`cost_source` `file`) expects each shard's, and the line says what is left of it.

use crate::sweep::job::Job;
use protocol::status::{Outcome, ShardStatus};
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// How often a log gets a progress line for each running device.
pub const INTERVAL: Duration = Duration::from_secs(10);
/// A testing knob: the interval in seconds (a positive number) instead of [`INTERVAL`], so that a
/// test of the lines need not sweep for minutes.
pub const INTERVAL_VAR: &str = "WARMUP_SPAWN_PROGRESS_SECONDS";

/// The interval a value of [`INTERVAL_VAR`] gives: [`INTERVAL`] when unset or not a positive
/// number of seconds.
pub fn interval(raw: Option<&str>) -> Duration {
    raw.and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s > 0.0)
        .map_or(INTERVAL, Duration::from_secs_f64)
}

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

/// Where a running child's progress is read, and what the history expects of its shard.
#[derive(Debug, Clone)]
struct Watch {
    file: PathBuf,
    expected: Option<f64>,
}

#[derive(Debug)]
pub struct Progress {
    live: bool,
    color: bool,
    devices: Vec<String>,
    states: Vec<State>,
    watches: Vec<Option<Watch>>,
    drawn: usize,
    /// Between two progress lines in a log.
    interval: Duration,
    /// When the next progress lines are due (a log only).
    next_lines: Option<Instant>,
}

impl Progress {
    /// Live lines when stderr is a terminal that can redraw (`TERM` is not `dumb`); colour too
    /// unless `NO_COLOR` is set and non-empty.
    pub fn new(devices: &[String]) -> Progress {
        let dumb = std::env::var_os("TERM").is_some_and(|t| t == "dumb");
        let live = std::io::stderr().is_terminal() && !dumb;
        let color = live && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
        Progress {
            live,
            color,
            devices: devices.to_vec(),
            states: devices.iter().map(|_| State::Idle).collect(),
            watches: devices.iter().map(|_| None).collect(),
            drawn: 0,
            interval: interval(std::env::var(INTERVAL_VAR).ok().as_deref()),
            next_lines: None,
        }
    }

    /// How long the caller may wait before the next redraw (a terminal) or the next progress
    /// lines (a log, while a device runs) are due.
    pub fn refresh(&self) -> Option<Duration> {
        if self.live {
            return Some(Duration::from_millis(250));
        }
        let running = self.states.iter().any(|s| !matches!(s, State::Idle));
        self.next_lines
            .filter(|_| running)
            .map(|at| at.saturating_duration_since(Instant::now()))
    }

    pub fn started(&mut self, slot: usize, job: &Job, pid: u32) {
        let shard = job.shard;
        self.states[slot] = State::Running {
            shard,
            since: Instant::now(),
        };
        self.watches[slot] = Some(Watch {
            file: job.progress.clone(),
            expected: job.expected_seconds,
        });
        if self.next_lines.is_none() {
            self.next_lines = Some(Instant::now() + self.interval);
        }
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

    /// Redraws the live lines with fresh elapsed times; in a log, writes the progress lines
    /// when they are due.
    pub fn tick(&mut self) {
        if self.live {
            self.draw();
            return;
        }
        let now = Instant::now();
        if self.next_lines.is_none_or(|at| now < at) {
            return;
        }
        // From now: lines never come closer together than the interval, however late this is.
        self.next_lines = Some(now + self.interval);
        let lines: Vec<String> = (0..self.devices.len())
            .filter_map(|slot| {
                let (shard, since) = match self.states[slot] {
                    State::Running { shard, since } | State::Stopping { shard, since, .. } => {
                        (shard, since)
                    }
                    State::Idle => return None,
                };
                let device = &self.devices[slot];
                Some(format!(
                    "shard {shard} on device {device}: {}",
                    self.how_far(slot, since, false)
                ))
            })
            .collect();
        for line in lines {
            self.line(&line);
        }
    }

    /// Keys tuned, configs timed, elapsed, and the ETA where the history expects a time.
    fn how_far(&self, slot: usize, since: Instant, short: bool) -> String {
        let elapsed = since.elapsed().as_secs_f64();
        let watch = self.watches[slot].as_ref();
        let (keys, configs) = watch.and_then(|w| read_counts(&w.file)).unwrap_or((0, 0));
        let eta = match watch.and_then(|w| w.expected) {
            Some(expected) if expected >= elapsed => {
                format!(", about {:.0}s left by the history", expected - elapsed)
            }
            Some(expected) => format!(", past the {expected:.0}s the history expects"),
            None => String::new(),
        };
        if short {
            format!("{keys} keys, {configs} configs{eta}")
        } else {
            format!("{keys} key(s) tuned, {configs} config(s) timed, {elapsed:.0}s elapsed{eta}")
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
        let _ = writeln!(std::io::stderr().lock(), "{}: {text}", crate::flags::TOOL);
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
        let width = terminal_width();
        let lines: Vec<String> = (0..self.devices.len())
            .map(|slot| {
                let text = match self.states[slot] {
                    State::Idle => "idle".to_owned(),
                    State::Running { shard, since } => format!(
                        "shard {shard:<4} {:>8.1}s  running: {}",
                        since.elapsed().as_secs_f64(),
                        self.how_far(slot, since, true)
                    ),
                    State::Stopping { shard, since, why } => format!(
                        "shard {shard:<4} {:>8.1}s  {why}, stopping",
                        since.elapsed().as_secs_f64()
                    ),
                };
                fit(
                    &format!("  device {:<12} {text}", self.devices[slot]),
                    width,
                )
            })
            .collect();
        let mut err = std::io::stderr().lock();
        for line in &lines {
            let _ = writeln!(err, "{line}");
        }
        self.drawn = lines.len();
    }
}

/// A child's progress file: (keys tuned, configs timed), or None while there is none.
fn read_counts(file: &Path) -> Option<(u64, u64)> {
    let text = std::fs::read(file).ok()?;
    let value: serde_json::Value = serde_json::from_slice(&text).ok()?;
    Some((value["keys"].as_u64()?, value["configs"].as_u64()?))
}

/// Stderr's terminal width in columns, or None when it cannot be told.
fn terminal_width() -> Option<usize> {
    let mut size = nix::libc::winsize {
        ws_row: 0,
        ws_col: 0,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    // SAFETY: TIOCGWINSZ writes one `winsize` into the struct it is given, which lives here.
    #[allow(unsafe_code)]
    let got = unsafe { nix::libc::ioctl(2, nix::libc::TIOCGWINSZ, &mut size) };
    (got == 0 && size.ws_col > 0).then_some(usize::from(size.ws_col))
}

/// `line` cut to `width` characters (no cut when the width is unknown), so that a live line never
/// wraps: a wrapped line would take two rows, and the redraw moves up one per line.
fn fit(line: &str, width: Option<usize>) -> String {
    match width {
        Some(w) if line.chars().count() > w => line.chars().take(w).collect(),
        _ => line.to_owned(),
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
    fn a_log_gets_progress_every_ten_seconds_unless_the_knob_says_otherwise() {
        assert_eq!(INTERVAL, Duration::from_secs(10));
        let said = format!("every {} s ({INTERVAL_VAR}", INTERVAL.as_secs());
        assert!(
            crate::flags::EXAMPLES
                .replace("\n", " ")
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
                .contains(&said),
            "--help says {said}"
        );
        assert_eq!(interval(None), INTERVAL);
        assert_eq!(interval(Some(" 0.5 ")), Duration::from_millis(500));
        for bad in ["0", "-1", "abc", "", "inf", "NaN"] {
            assert_eq!(interval(Some(bad)), INTERVAL, "{bad:?}");
        }
    }

    #[test]
    fn a_live_line_is_cut_to_the_width() {
        assert_eq!(fit("  device 0 shard 1", Some(8)), "  device");
        assert_eq!(fit("é".repeat(5).as_str(), Some(3)), "ééé");
        assert_eq!(fit("short", Some(80)), "short");
        assert_eq!(fit("no width known", None), "no width known");
    }

    #[test]
    fn the_counts_come_from_the_childs_progress_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join("progress.json");
        assert_eq!(read_counts(&file), None);
        std::fs::write(&file, r#"{"keys": 3, "configs": 42}"#).expect("write");
        assert_eq!(read_counts(&file), Some((3, 42)));
        std::fs::write(&file, "{").expect("write");
        assert_eq!(read_counts(&file), None);
    }

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
