//! The jobs warmup-slurm submitted for a scratch (`SCRATCH/slurm/jobs`: one `KIND JOBID` line
//! each, as the script printed them), against Slurm's queue: no step goes on while one of them
//! is still queued or running, since its tasks would run on the plan and outputs the step
//! replaces.

use crate::refusal::Refused;
use protocol::layout::Scratch;
use std::process::{Command, Stdio};

/// Refuses while a job recorded for `scratch` is pending, configuring, running or suspended;
/// `ignore`: the caller's own job (the finishing job's `SLURM_JOB_ID`). Where the queue cannot be
/// read, says so and goes on.
pub fn refuse_if_queued(scratch: &Scratch, ignore: Option<&str>) -> Result<(), Refused> {
    let file = scratch.slurm_jobs();
    if !file.is_file() {
        return Ok(());
    }
    let Some(queued) = queued() else {
        warn(&format!(
            "squeue failed; cannot check that no earlier job of {} is still queued",
            scratch.root().display()
        ));
        return Ok(());
    };
    let text = match std::fs::read(&file) {
        Ok(text) => text,
        Err(e) => {
            warn(&format!(
                "cannot read {} ({e}); cannot check that no earlier job of {} is still queued",
                file.display(),
                scratch.root().display()
            ));
            return Ok(());
        }
    };
    match in_queue(&String::from_utf8_lossy(&text), &queued, ignore) {
        None => Ok(()),
        Some((kind, id)) => Err(Refused(format!(
            "{} is in use by {kind} job {id}, still queued or running (squeue -j {id}); wait for \
             it to end or scancel it",
            scratch.root().display()
        ))),
    }
}

/// The first `KIND JOBID` line of `jobs` whose id is in `queued` and is not `ignore`.
fn in_queue<'j>(
    jobs: &'j str,
    queued: &[String],
    ignore: Option<&str>,
) -> Option<(&'j str, &'j str)> {
    jobs.lines().find_map(|line| {
        let (kind, id) = line.trim().split_once(char::is_whitespace)?;
        let id = id.trim();
        (!id.is_empty() && Some(id) != ignore && queued.iter().any(|q| q == id))
            .then_some((kind, id))
    })
}

/// The ids of this user's array jobs (`%F`) that are pending, configuring, running or suspended;
/// `None` when squeue cannot say.
fn queued() -> Option<Vec<String>> {
    let user = nix::unistd::User::from_uid(nix::unistd::Uid::current()).ok()??;
    let out = Command::new("squeue")
        .args(["-h", "-u", &user.name, "-t", "PD,CF,R,S", "-o", "%F"])
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()
        .filter(|out| out.status.success())?;
    let text = String::from_utf8_lossy(&out.stdout);
    Some(text.lines().map(|l| l.trim().to_owned()).collect())
}

fn warn(line: &str) {
    eprintln!("[{}] warning: {line}", crate::flags::Driver::Slurm.name());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_recorded_job_still_queued_is_found_unless_it_is_the_callers_own() {
        let jobs = "array 12\nfinish 13\n";
        let queued = ["13".to_owned(), "99".to_owned()];
        assert_eq!(in_queue(jobs, &queued, None), Some(("finish", "13")));
        assert_eq!(in_queue(jobs, &queued, Some("13")), None);
        assert_eq!(
            in_queue("array\n  array  99 \n", &queued, None),
            Some(("array", "99"))
        );
        assert_eq!(in_queue(jobs, &[], None), None);
    }
}
