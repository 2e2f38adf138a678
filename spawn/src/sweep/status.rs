//! How shards ended: each started shard's `SCRATCH/w<i>/status.json` (the type and the outcome
//! rule are protocol's, [`protocol::status`]), for people reading a run afterwards and for
//! scripts deciding what to keep, written atomically once nothing of the child is left; and the
//! run summary (`--summary`) that counts them. A shard that never started (the run was
//! interrupted first) has no status file: the spawner removes stale ones before it starts, so a
//! missing file always means "not run".

use crate::sweep::job::{lossy, Job};
use anyhow::Result;
use protocol::status::{EnvChanges, Outcome, ShardStatus};
use protocol::summary::{key, Summary};
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The status of `job`'s child started on `device` with `env` at `started_at`, before anything
/// is known of how it ends.
pub fn starting(job: &Job, device: &str, env: EnvChanges, started_at: String) -> ShardStatus {
    ShardStatus {
        shard: job.shard,
        device: device.to_owned(),
        pid: None,
        exit_code: None,
        signal: None,
        signal_name: None,
        timed_out: false,
        interrupted: false,
        started_at,
        seconds: 0.0,
        argv: lossy(&job.argv),
        env,
        log: job.log.clone(),
        error: None,
    }
}

/// The run summary (docs/CONTRACT.md, "Run summaries"): counts by outcome, times, and one line
/// per shard of `jobs` with its log; `statuses` are those of the shards that started.
pub fn summary(
    op: &str,
    jobs: &[Job],
    statuses: &[ShardStatus],
    wall: Duration,
) -> Result<Summary> {
    let outcome = |job: &Job| Outcome::of(statuses.iter().find(|s| s.shard == job.shard));
    let mut out = Summary::new();
    out.path(key::OP, &[], Path::new(op))?
        .value(key::SHARDS, jobs.len());
    for kind in Outcome::ALL {
        let n = jobs.iter().filter(|j| outcome(j) == kind).count();
        out.value(kind.word(), n);
    }
    let summed: f64 = statuses.iter().map(|s| s.seconds).sum();
    out.value(key::WALL_SECONDS, format!("{:.2}", wall.as_secs_f64()))
        .value(key::SUMMED_SECONDS, format!("{summed:.2}"));
    // In index order, whatever order the pool started them in.
    let mut ordered: Vec<&Job> = jobs.iter().collect();
    ordered.sort_by_key(|job| job.shard);
    for job in ordered {
        out.path(key::SHARD, &[&job.shard, &outcome(job).word()], &job.log)?;
    }
    Ok(out)
}

/// `time` as RFC 3339 in UTC with milliseconds, e.g. `2024-02-29T23:59:59.123Z`.
pub fn rfc3339(time: SystemTime) -> String {
    let since = time.duration_since(UNIX_EPOCH).unwrap_or(Duration::ZERO);
    let secs = since.as_secs();
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3600,
        rem / 60 % 60,
        rem % 60,
        since.subsec_millis()
    )
}

/// Days since 1970-01-01 to (year, month, day) in the proleptic Gregorian calendar
/// (Howard Hinnant's `civil_from_days`, for non-negative day counts).
fn civil_from_days(days: u64) -> (u64, u64, u64) {
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z % 146_097; // day of the 400-year era
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100); // day of the year starting March 1st
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + u64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(secs: u64, millis: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(secs) + Duration::from_millis(millis)
    }

    #[test]
    fn timestamps_are_rfc3339_utc() {
        assert_eq!(rfc3339(at(0, 0)), "1970-01-01T00:00:00.000Z");
        // 2000-02-29 (a leap day in a century leap year) 12:34:56.789
        assert_eq!(rfc3339(at(951_827_696, 789)), "2000-02-29T12:34:56.789Z");
        // 2100-03-01: 2100 is not a leap year
        assert_eq!(rfc3339(at(4_107_542_400, 0)), "2100-03-01T00:00:00.000Z");
        assert_eq!(rfc3339(at(1_735_689_599, 999)), "2024-12-31T23:59:59.999Z");
    }
}
