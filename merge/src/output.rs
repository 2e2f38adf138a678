//! Where warmup-merge's outputs go (the merged records, the conflicts list, the run summary),
//! checked before anything is read, and put there all at once: every file is written to a
//! temporary first and takes its name only when all were written, so that exit 2 writes nothing.

use anyhow::{bail, Context, Result};
use protocol::layout::Scratch;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use toolkit::atomic::{self, Staged};

/// One output: stdout (`-`) or a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    Stdout,
    File(PathBuf),
}

impl Target {
    fn new(path: &Path) -> Self {
        if path.as_os_str() == "-" {
            Target::Stdout
        } else {
            Target::File(path.to_path_buf())
        }
    }

    /// The file's path, or `None` for stdout.
    pub fn file(&self) -> Option<&Path> {
        match self {
            Target::File(path) => Some(path),
            Target::Stdout => None,
        }
    }

    /// How messages name it.
    pub fn name(&self) -> String {
        self.file()
            .map_or_else(|| "stdout".to_owned(), |p| p.display().to_string())
    }
}

/// The outputs a run asked for.
#[derive(Debug)]
pub struct Targets {
    pub merged: Target,
    pub conflicts: Option<Target>,
    pub summary: Option<Target>,
}

impl Targets {
    /// `-o` (stdout when absent), `--conflicts` and `--summary`, or with `--in-scratch` the
    /// scratch's own files. At most one goes to stdout, no two name one file, every file's
    /// folder exists, and a summary can name every file.
    pub fn new(
        output: Option<&Path>,
        conflicts: Option<&Path>,
        summary: Option<&Path>,
        in_scratch: Option<&Scratch>,
    ) -> Result<Targets> {
        let targets = match in_scratch {
            Some(scratch) => Targets {
                merged: Target::File(scratch.merged()),
                conflicts: Some(Target::File(scratch.conflicts())),
                summary: summary.map(Target::new),
            },
            None => Targets {
                merged: output.map_or(Target::Stdout, Target::new),
                conflicts: conflicts.map(Target::new),
                summary: summary.map(Target::new),
            },
        };
        let all: Vec<(&str, &Target)> = [
            ("-o", Some(&targets.merged)),
            ("--conflicts", targets.conflicts.as_ref()),
            ("--summary", targets.summary.as_ref()),
        ]
        .into_iter()
        .filter_map(|(flag, target)| Some((flag, target?)))
        .collect();
        let to_stdout: Vec<&str> = all
            .iter()
            .filter(|(_, t)| **t == Target::Stdout)
            .map(|(flag, _)| *flag)
            .collect();
        if to_stdout.len() > 1 {
            bail!(
                "{} all go to stdout: give all but one a FILE (-o FILE, or --in-scratch SCRATCH)",
                to_stdout.join(" and ")
            );
        }
        let mut places: Vec<(&str, &Path, PathBuf)> = Vec::new();
        for (flag, target) in all {
            let Some(path) = target.file() else { continue };
            let place = place(path)?;
            if targets.summary.is_some() {
                protocol::summary::check_path(path)?;
            }
            if let Some((other, other_path, _)) = places.iter().find(|(_, _, p)| *p == place) {
                bail!(
                    "{flag} {} and {other} {} are one file: give each output its own path",
                    path.display(),
                    other_path.display()
                );
            }
            places.push((flag, path, place));
        }
        Ok(targets)
    }
}

/// Where `path` would be written, with links and `..` resolved, so that two spellings of one
/// file compare equal; and a refusal, before anything is read, of a folder that does not exist
/// or a target that is a folder.
fn place(path: &Path) -> Result<PathBuf> {
    if path.is_dir() {
        bail!("{}: is a folder; give a file name", path.display());
    }
    if let Ok(real) = std::fs::canonicalize(path) {
        return Ok(real);
    }
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let real_dir = std::fs::canonicalize(dir).with_context(|| {
        format!(
            "{}: folder {} does not exist; create it first",
            path.display(),
            dir.display()
        )
    })?;
    Ok(real_dir.join(path.file_name().unwrap_or_default()))
}

/// What writes one output.
type Fill<'a> = Box<dyn FnOnce(&mut dyn Write) -> io::Result<()> + 'a>;

/// The outputs of one run: files written in full before any is put in place, and stdout's
/// part, written last.
#[derive(Default)]
pub struct Outputs<'a> {
    files: Vec<Staged>,
    stdout: Option<Fill<'a>>,
}

impl std::fmt::Debug for Outputs<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Outputs")
            .field("files", &self.files)
            .field("stdout", &self.stdout.is_some())
            .finish()
    }
}

impl<'a> Outputs<'a> {
    /// Writes a file target's temporary now; keeps stdout's `fill` for [`Outputs::commit`].
    pub fn add(
        &mut self,
        target: &Target,
        fill: impl FnOnce(&mut dyn Write) -> io::Result<()> + 'a,
    ) -> Result<()> {
        match target {
            Target::File(path) => self.files.push(atomic::stage(path, fill)?),
            Target::Stdout => self.stdout = Some(Box::new(fill)),
        }
        Ok(())
    }

    /// Puts every file in place, then writes stdout's part: a reader that closes stdout early
    /// (`| head`) still gets the files.
    pub fn commit(self) -> Result<()> {
        atomic::commit_all(self.files)?;
        if let Some(fill) = self.stdout {
            let mut out = io::BufWriter::with_capacity(1 << 20, io::stdout().lock());
            fill(&mut out)
                .and_then(|()| out.flush())
                .context("writing to stdout")?;
        }
        Ok(())
    }
}
