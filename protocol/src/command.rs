//! What a COMMAND runs, read from its words alone (nothing is started): the shape file it names
//! (`--shape_file`), whether it runs pytest and how it treats the harness's plugin, and the
//! Python it runs, and whether its program can be run at all. Here because two tools read a
//! COMMAND: warmup-spawn (each child's shape file is replaced; the measurement started with the
//! sweep gets `-p warmup_harness`) and warmup-plan (the shape file to split, and which Python's
//! packages say whether the harness is there); both refuse a COMMAND that cannot run
//! ([`check_program`]) before anything starts.
//!
//! An early measurement is safe only where the harness holds it at its gate until the configs are
//! published (docs/CONTRACT.md, "The gate"). Only pytest can load the harness, so only a command
//! that runs pytest itself qualifies: `pytest ...`, `py.test ...`, or a Python running
//! `-m pytest`; it gets `-p warmup_harness`, so that a pytest that cannot import the harness
//! exits with an error before collecting, let alone testing. A command that blocks the harness
//! (`-p no:warmup_harness`, on its command line or in `PYTEST_ADDOPTS`), one that runs its tests
//! in pytest-xdist workers (`-n`, `--numprocesses`, `--dist`, `--tx`: each worker would wait at the
//! gate too, and only one reads its line), and any other command (a wrapper such as `env`, `srun`
//! or `sh -c` hides what it runs), is left to the sequential flow.

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// The harness's plugin name, as `-p` takes it and its `pytest11` entry point registers it.
pub const PLUGIN: &str = "warmup_harness";

/// The flag the harness reads its shape file from.
pub const SHAPE_FLAG: &str = "--shape_file";

/// The shape file `command` names, as the harness's option parser takes it: the last
/// `--shape_file X` or `--shape_file=X`. `None` when it names none (a trailing `--shape_file`
/// with no value names none either).
pub fn shape_file_of(command: &[OsString]) -> Option<OsString> {
    shape_flags(command)
        .filter_map(|arg| match arg {
            Arg::ShapeFile(file) => file.map(OsStr::to_os_string),
            Arg::Other(_) => None,
        })
        .last()
}

#[derive(Debug)]
pub enum Arg<'a> {
    /// `--shape_file X` or `--shape_file=X` (`None`: the flag ended the command)
    ShapeFile(Option<&'a OsStr>),
    Other(&'a OsStr),
}

/// The arguments after the program, with the shape-file flags told apart: the one place that
/// says how COMMAND names its shape file.
pub fn shape_flags(command: &[OsString]) -> impl Iterator<Item = Arg<'_>> {
    let mut args = command.iter().skip(1);
    std::iter::from_fn(move || {
        let arg = args.next()?;
        if arg == SHAPE_FLAG {
            return Some(Arg::ShapeFile(args.next().map(OsString::as_os_str)));
        }
        let prefix = format!("{SHAPE_FLAG}=");
        Some(match arg.as_bytes().strip_prefix(prefix.as_bytes()) {
            Some(file) => Arg::ShapeFile(Some(OsStr::from_bytes(file))),
            None => Arg::Other(arg),
        })
    })
}

/// The marker expression of a pytest COMMAND when it is one bare name (`-m mm`, `-mmm`): the
/// last `-m` pytest would read, trimmed, when it is a [`marker_name`]. None for any other
/// COMMAND, or an expression (`-m "mm or bmm"`).
pub fn marker_of(command: &[OsString]) -> Option<String> {
    let name = std::str::from_utf8(last_value(command, b"-m")?)
        .ok()?
        .trim();
    marker_name(name).then(|| name.to_owned())
}

/// The value of the last `FLAG VALUE` among a pytest COMMAND's arguments before a `--`, or its
/// joined spelling (`-mVALUE` for a short flag, `--flag=VALUE` for a long one), the values of
/// pytest's other options that take the next word ([`VALUED`]) skipped.
fn last_value<'a>(command: &'a [OsString], flag: &[u8]) -> Option<&'a [u8]> {
    let at = pytest_args_start(command)?;
    let mut args = command[at..].iter().map(|a| a.as_bytes());
    let mut last = None;
    while let Some(arg) = args.next() {
        if arg == b"--" {
            break;
        } else if arg == flag {
            last = args.next();
        } else if VALUED.contains(&arg) {
            args.next();
        } else if let Some(rest) = arg.strip_prefix(flag) {
            let joined = if flag.starts_with(b"--") {
                rest.strip_prefix(b"=")
            } else {
                Some(rest)
            };
            last = joined.or(last);
        }
    }
    last
}

/// Python's keywords (`keyword.kwlist`): no marker can be named by one (`pytest.mark.import` is
/// a syntax error), and `and`, `or`, `not` are the expression's own.
const PYTHON_KEYWORDS: [&str; 35] = [
    "False", "None", "True", "and", "as", "assert", "async", "await", "break", "class", "continue",
    "def", "del", "elif", "else", "except", "finally", "for", "from", "global", "if", "import",
    "in", "is", "lambda", "nonlocal", "not", "or", "pass", "raise", "return", "try", "while",
    "with", "yield",
];

/// Whether `name` can name a marker (`@pytest.mark.NAME`): Python's `str.isidentifier` (a
/// Unicode XID_Start or `_`, then XID_Continue), and not [`PYTHON_KEYWORDS`]. tests/test_protocol.py
/// checks it against Python's own `isidentifier` and `keyword.iskeyword`.
pub fn marker_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c == '_' || unicode_ident::is_xid_start(c))
        && chars.all(unicode_ident::is_xid_continue)
        && !PYTHON_KEYWORDS.contains(&name)
}

/// FlagGems' own `--parallel N` in a pytest COMMAND (`benchmark/test_blas_perf_parallel.py`:
/// one pytest per GPU, tuning and measuring concurrently): the last `--parallel N` or
/// `--parallel=N` before a `--`, when N is not `0` (serial, FlagGems' default). None otherwise.
pub fn flaggems_parallel_of(command: &[OsString]) -> Option<String> {
    let n = String::from_utf8_lossy(last_value(command, b"--parallel")?)
        .trim()
        .to_owned();
    (!n.trim_start_matches('0').is_empty()).then_some(n)
}

/// The first test file a pytest COMMAND names (`benchmark/test_mm.py`, or `...py::test_x`:
/// `benchmark/test_mm.py`), or None.
pub fn test_file_of(command: &[OsString]) -> Option<PathBuf> {
    let at = pytest_args_start(command)?;
    command[at..].iter().find_map(|arg| {
        let bytes = arg.as_bytes();
        let path = bytes.split(|&b| b == b':').next()?;
        (!bytes.starts_with(b"-") && path.ends_with(b".py"))
            .then(|| PathBuf::from(OsStr::from_bytes(path)))
    })
}

/// The test paths a pytest COMMAND names, as given (a `::node` part dropped): each word that is
/// no option nor the value of one of pytest's options that take the next word, and names a
/// `.py` file or an existing folder (`cwd` is where COMMAND runs: a word that is neither is some
/// plugin option's value). None when COMMAND does not run pytest; empty when it names none
/// (pytest collects from the folder it runs in).
pub fn test_paths_of(command: &[OsString], cwd: &Path) -> Option<Vec<PathBuf>> {
    let at = pytest_args_start(command)?;
    let mut args = command[at..].iter().map(|a| a.as_bytes());
    let mut paths = Vec::new();
    while let Some(arg) = args.next() {
        if VALUED.contains(&arg) {
            args.next();
            continue;
        }
        if arg.starts_with(b"-") {
            continue;
        }
        let path = match arg.windows(2).position(|w| w == b"::") {
            Some(end) => &arg[..end],
            None => arg,
        };
        let path = PathBuf::from(OsStr::from_bytes(path));
        if path.as_os_str().as_bytes().ends_with(b".py") || cwd.join(&path).is_dir() {
            paths.push(path);
        }
    }
    Some(paths)
}

/// pytest's options that take the next word as their value (and the harness's shape file).
const VALUED: &[&[u8]] = &[
    b"-k",
    b"-m",
    b"-p",
    b"-o",
    b"-c",
    b"-W",
    b"-r",
    b"--rootdir",
    b"--confcutdir",
    b"--basetemp",
    b"--ignore",
    b"--ignore-glob",
    b"--deselect",
    b"--junitxml",
    b"--junit-xml",
    b"--log-file",
    b"--override-ini",
    b"--tb",
    b"--durations",
    b"--maxfail",
    b"--import-mode",
    b"--capture",
    b"--shape_file",
];

/// How a pytest COMMAND treats the harness's plugin, from its words and `PYTEST_ADDOPTS`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PluginUse {
    /// Where pytest's own arguments start in COMMAND.
    pub at: usize,
    /// `-p no:warmup_harness`: pytest loads no harness, installed or not.
    pub blocked: bool,
    /// `-p warmup_harness`: pytest loads it even where no entry point would.
    pub named: bool,
    /// pytest-xdist workers run the tests (`-n`, `--numprocesses`, `--dist`, `--tx`).
    pub xdist: bool,
}

/// How `command` treats the plugin, or None when it is not a pytest command. `addopts` is
/// `PYTEST_ADDOPTS`, which pytest reads as more arguments.
pub fn plugin_use(command: &[OsString], addopts: Option<&OsStr>) -> Option<PluginUse> {
    let at = pytest_args_start(command)?;
    let pytest_args = &command[at..];
    let extra: Vec<OsString> = addopts
        .map(|a| a.as_bytes().split(u8::is_ascii_whitespace))
        .into_iter()
        .flatten()
        .filter(|w| !w.is_empty())
        .map(|w| OsStr::from_bytes(w).to_os_string())
        .collect();
    let xdist = pytest_args
        .iter()
        .chain(&extra)
        .any(|a| is_xdist(a.as_bytes()));
    let (mut blocked, mut named) = (false, false);
    for name in plugin_args(pytest_args).chain(plugin_args(&extra)) {
        blocked |= name == format!("no:{PLUGIN}").as_bytes();
        named |= name == PLUGIN.as_bytes();
    }
    Some(PluginUse {
        at,
        blocked,
        named,
        xdist,
    })
}

/// `command` with `-p warmup_harness` after its pytest invocation (as it is when it names the
/// plugin already), or None when it is not a pytest command, it blocks the plugin or it runs
/// xdist workers. `addopts` is `PYTEST_ADDOPTS`.
pub fn measure_command(command: &[OsString], addopts: Option<&OsStr>) -> Option<Vec<OsString>> {
    let using = plugin_use(command, addopts).filter(|u| !u.blocked && !u.xdist)?;
    let mut argv = command.to_vec();
    if !using.named {
        argv.splice(
            using.at..using.at,
            [OsString::from("-p"), OsString::from(PLUGIN)],
        );
    }
    Some(argv)
}

/// Where pytest's own arguments start in `command`, or None when it does not run pytest.
fn pytest_args_start(command: &[OsString]) -> Option<usize> {
    let program = Path::new(command.first()?).file_name()?.as_bytes();
    if program == b"pytest" || program == b"py.test" {
        return Some(1);
    }
    if !is_python(program) {
        return None;
    }
    // The interpreter's options, up to `-m MODULE`: anything else (a script, -c, --) runs no
    // pytest that this can see.
    let mut i = 1;
    while let Some(arg) = command.get(i) {
        let bytes = arg.as_bytes();
        i += 1;
        if bytes == b"--check-hash-based-pycs" {
            i += 1;
            continue;
        }
        let flags = bytes
            .strip_prefix(b"-")
            .filter(|f| !f.is_empty() && f[0] != b'-')?;
        for (j, flag) in flags.iter().enumerate() {
            let rest = &flags[j + 1..];
            match flag {
                b'm' => {
                    let module = if rest.is_empty() {
                        i += 1;
                        command.get(i - 1)?.as_bytes()
                    } else {
                        rest
                    };
                    return (module == b"pytest").then_some(i);
                }
                b'W' | b'X' => {
                    if rest.is_empty() {
                        i += 1;
                    }
                    break;
                }
                b'b' | b'B' | b'd' | b'E' | b'i' | b'I' | b'O' | b'P' | b'q' | b's' | b'S'
                | b'u' | b'v' | b'x' | b'R' => {}
                _ => return None, // -c, -h, -V, or one this does not know
            }
        }
    }
    None
}

/// The Python interpreter COMMAND runs, whose installed packages say what it imports (warmup-plan
/// reads Triton's version and whether the harness is there, `crate::python`): COMMAND's program
/// when it is a `python*`, else the `python*` its script's `#!` line names, directly or through
/// `env` (`#!/usr/bin/env python3`, `#!/usr/bin/env -S python3 -u`), the script found as the
/// shell would find it (`path` is `PATH`). None when COMMAND runs no Python this can see.
pub fn python_of(command: &[OsString], path: Option<&OsStr>) -> Option<PathBuf> {
    let program = Path::new(command.first()?);
    if is_python(program.file_name()?.as_bytes()) {
        return Some(program.to_path_buf());
    }
    let script = if program.as_os_str().as_bytes().contains(&b'/') {
        program.to_path_buf()
    } else {
        std::env::split_paths(path?)
            .map(|dir| dir.join(program))
            .find(|candidate| candidate.is_file())?
    };
    let mut head = [0u8; 256];
    let n = std::io::Read::read(&mut std::fs::File::open(&script).ok()?, &mut head).ok()?;
    let line = head[..n]
        .split(|&b| b == b'\n')
        .next()?
        .strip_prefix(b"#!")?;
    let mut words = line
        .split(u8::is_ascii_whitespace)
        .filter(|w| !w.is_empty());
    let mut interpreter = words.next()?;
    if Path::new(OsStr::from_bytes(interpreter))
        .file_name()?
        .as_bytes()
        == b"env"
    {
        interpreter = words.find(|w| *w != b"-S")?;
    }
    let interpreter = Path::new(OsStr::from_bytes(interpreter));
    is_python(interpreter.file_name()?.as_bytes()).then(|| interpreter.to_path_buf())
}

/// Refuses a COMMAND whose program cannot be run, as `execvp` would find it: a word holding a `/`
/// is a path, which must be an executable file; any other is looked for in `path` (`PATH`; an
/// empty entry is the current folder). A program that begins with `-` is an option given where
/// the command belongs, and is said so.
pub fn check_program(program: &OsStr, path: Option<&OsStr>) -> anyhow::Result<()> {
    use anyhow::bail;
    let file = Path::new(program);
    let runnable = toolkit::tools::is_executable;
    if program.as_bytes().contains(&b'/') {
        if !file.exists() {
            bail!("COMMAND {}: no such file", file.display());
        }
        if !runnable(file) {
            bail!(
                "COMMAND {}: not an executable file; check its permissions",
                file.display()
            );
        }
        return Ok(());
    }
    if std::env::split_paths(path.unwrap_or_default()).any(|dir| runnable(&dir.join(file))) {
        return Ok(());
    }
    if program.as_bytes().starts_with(b"-") {
        bail!(
            "COMMAND begins with the option {:?}: give the benchmark's program first, e.g. -- pytest bench.py {}",
            program.to_string_lossy(),
            program.to_string_lossy()
        );
    }
    bail!(
        "COMMAND {:?} not found in PATH (or not executable); give its path or fix PATH",
        program.to_string_lossy()
    )
}

/// pytest-xdist's options that start workers: `-n N`, `-nN`, `--numprocesses[=N]`, `--dist[=M]`,
/// `--tx[=SPEC]`.
fn is_xdist(arg: &[u8]) -> bool {
    let long = |name: &[u8]| arg == name || arg.starts_with(&[name, b"="].concat());
    arg.starts_with(b"-n") && !arg.starts_with(b"--")
        || long(b"--numprocesses")
        || long(b"--dist")
        || long(b"--tx")
}

/// `python`, `python3`, `python3.12`: a CPython interpreter's usual names.
fn is_python(program: &[u8]) -> bool {
    program
        .strip_prefix(b"python")
        .is_some_and(|v| v.iter().all(|b| b.is_ascii_digit() || *b == b'.'))
}

/// The plugin names that pytest's `-p NAME` and `-pNAME` in `args` give.
fn plugin_args(args: &[OsString]) -> impl Iterator<Item = &[u8]> {
    let mut it = args.iter().map(|a| a.as_bytes());
    std::iter::from_fn(move || loop {
        let arg = it.next()?;
        if arg == b"-p" {
            return it.next();
        }
        if let Some(name) = arg.strip_prefix(b"-p") {
            if !name.is_empty() {
                return Some(name);
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_program_runs_when_execvp_would_find_it_and_an_option_there_is_named() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().expect("tempdir");
        let tool = dir.path().join("bench");
        std::fs::write(&tool, "#!/bin/sh\n").expect("write");
        let path = dir.path().as_os_str();
        let why = |program: &OsStr, path: Option<&OsStr>| {
            format!("{:#}", check_program(program, path).expect_err("refused"))
        };
        assert!(why("bench".as_ref(), Some(path)).contains("not found in PATH"));
        assert!(why(tool.as_os_str(), None).contains("not an executable file"));
        std::fs::set_permissions(&tool, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        check_program("bench".as_ref(), Some(path)).expect("found in PATH");
        check_program(tool.as_os_str(), None).expect("a path");
        assert!(why("nosuch".as_ref(), None).contains("\"nosuch\" not found in PATH"));
        assert!(why("--shape_file".as_ref(), Some(path))
            .contains("COMMAND begins with the option \"--shape_file\""));
        assert!(why(dir.path().join("gone").as_os_str(), None).contains("no such file"));
    }

    fn os(words: &[&str]) -> Vec<OsString> {
        argv(words)
    }

    const COMMAND: [&str; 8] = [
        "pytest",
        "--shape_file",
        "a.yaml",
        "-k",
        "mm",
        "--shape_file=b.yaml",
        "--shape_filex",
        "--shape_file",
    ];

    fn argv(words: &[&str]) -> Vec<OsString> {
        words.iter().map(OsString::from).collect()
    }

    fn measured(words: &[&str]) -> Option<Vec<String>> {
        measure_command(&argv(words), None).map(|v| {
            v.into_iter()
                .map(|w| w.into_string().expect("utf-8"))
                .collect()
        })
    }

    #[test]
    fn pytest_gets_the_plugin_right_after_the_program() {
        assert_eq!(
            measured(&["/venv/bin/pytest", "b.py", "--shape_file", "s.yaml"])
                .expect("a pytest command"),
            [
                "/venv/bin/pytest",
                "-p",
                "warmup_harness",
                "b.py",
                "--shape_file",
                "s.yaml"
            ]
        );
        assert_eq!(
            measured(&["py.test", "-q"]).expect("a pytest command"),
            ["py.test", "-p", "warmup_harness", "-q"]
        );
    }

    #[test]
    fn python_dash_m_pytest_gets_it_after_the_module_whatever_the_interpreter_options() {
        assert_eq!(
            measured(&["python3.12", "-X", "dev", "-u", "-m", "pytest", "-q"])
                .expect("a pytest command"),
            [
                "python3.12",
                "-X",
                "dev",
                "-u",
                "-m",
                "pytest",
                "-p",
                "warmup_harness",
                "-q"
            ]
        );
        assert_eq!(
            measured(&["/usr/bin/python", "-Wdefault", "-Bmpytest", "x.py"])
                .expect("a pytest command"),
            [
                "/usr/bin/python",
                "-Wdefault",
                "-Bmpytest",
                "-p",
                "warmup_harness",
                "x.py"
            ]
        );
    }

    #[test]
    fn a_command_that_names_the_plugin_is_kept_as_it_is() {
        for words in [
            &["pytest", "-p", "warmup_harness", "x.py"][..],
            &["pytest", "-pwarmup_harness", "x.py"],
        ] {
            assert_eq!(measured(words).expect("a pytest command"), words);
        }
    }

    #[test]
    fn a_command_that_blocks_the_plugin_does_not_qualify() {
        assert_eq!(
            measured(&["pytest", "-p", "no:warmup_harness", "x.py"]),
            None
        );
        assert_eq!(
            measured(&["python", "-m", "pytest", "-pno:warmup_harness"]),
            None
        );
        let blocked = OsString::from("-q  -p no:warmup_harness");
        assert_eq!(
            measure_command(&argv(&["pytest", "x.py"]), Some(&blocked)),
            None
        );
        let other = OsString::from("-p no:cacheprovider");
        assert!(measure_command(&argv(&["pytest", "x.py"]), Some(&other)).is_some());
    }

    #[test]
    fn a_command_that_runs_xdist_workers_does_not_qualify() {
        for words in [
            &["pytest", "-n", "4", "x.py"][..],
            &["pytest", "-n4"],
            &["python", "-m", "pytest", "--numprocesses=auto"],
            &["pytest", "--dist", "load"],
            &["pytest", "--tx=popen"],
        ] {
            assert_eq!(measured(words), None, "{words:?}");
        }
        let addopts = OsString::from("-n auto");
        assert_eq!(
            measure_command(&argv(&["pytest", "x.py"]), Some(&addopts)),
            None
        );
        assert!(measured(&["pytest", "--no-header", "x.py"]).is_some());
    }

    #[test]
    fn the_shape_file_named_is_the_last_one_given() {
        assert_eq!(shape_file_of(&os(&COMMAND)), Some("b.yaml".into()));
        assert_eq!(
            shape_file_of(&os(&["p", "--shape_file", "a b.yaml", "-q"])),
            Some("a b.yaml".into())
        );
        assert_eq!(shape_file_of(&os(&["p", "--shape_file"])), None);
        assert_eq!(shape_file_of(&os(&["--shape_file=x", "-q"])), None);
    }

    #[test]
    fn the_python_is_the_program_or_the_one_its_script_names() {
        let dir = tempfile::tempdir().expect("tempdir");
        let write = |name: &str, text: &str| {
            std::fs::write(dir.path().join(name), text).expect("script");
        };
        write("pytest", "#!/opt/venv/bin/python3.12\nimport sys\n");
        write("via-env", "#!/usr/bin/env -S python3 -u\n");
        write("shell", "#!/bin/sh\nexec python3 -m pytest\n");
        let path = dir.path().as_os_str();
        let python = |words: &[&str]| python_of(&argv(words), Some(path));
        assert_eq!(python(&["python3", "-m", "pytest"]), Some("python3".into()));
        assert_eq!(
            python(&["/v/bin/python", "-m", "pytest"]),
            Some("/v/bin/python".into())
        );
        assert_eq!(
            python(&["pytest", "-q"]),
            Some("/opt/venv/bin/python3.12".into())
        );
        assert_eq!(python(&["via-env"]), Some("python3".into()));
        let by_path = dir.path().join("pytest");
        assert_eq!(
            python_of(&argv(&[by_path.to_str().expect("utf-8")]), None),
            Some("/opt/venv/bin/python3.12".into())
        );
        assert_eq!(python(&["shell"]), None);
        assert_eq!(python(&["not-there"]), None);
        assert_eq!(python(&["make", "bench"]), None);
    }

    #[test]
    fn a_single_bare_marker_name_is_read_and_an_expression_is_not() {
        let marker = |words: &[&str]| marker_of(&os(words));
        assert_eq!(
            marker(&["pytest", "b.py", "-m", "mm"]).as_deref(),
            Some("mm")
        );
        assert_eq!(
            marker(&["python3", "-u", "-m", "pytest", "-mmm"]).as_deref(),
            Some("mm")
        );
        assert_eq!(
            marker(&["pytest", "-m", "bmm", "-m", "mm"]).as_deref(),
            Some("mm"),
            "pytest reads the last"
        );
        assert_eq!(marker(&["pytest", "-m", "mm or bmm"]), None);
        assert_eq!(marker(&["pytest", "-m", "not"]), None);
        assert_eq!(marker(&["pytest", "-m", "a-b"]), None);
        assert_eq!(
            marker(&["pytest", "-m", "mm "]).as_deref(),
            Some("mm"),
            "trimmed"
        );
        assert_eq!(marker(&["pytest", "-m", "é"]).as_deref(), Some("é"));
        for keyword in ["True", "None", "import", "yield"] {
            assert_eq!(marker(&["pytest", "-m", keyword]), None, "{keyword}");
        }
        assert_eq!(marker(&["pytest", "-k", "-m", "x.py"]), None, "-k's value");
        assert_eq!(marker(&["pytest", "--", "-m", "mm"]), None);
        assert_eq!(
            marker(&["python3", "-m", "pytest", "x.py"]),
            None,
            "the interpreter's -m"
        );
        assert_eq!(marker(&["env", "pytest", "-m", "mm"]), None);
    }

    #[test]
    fn flaggems_own_parallel_is_read_from_pytests_words_and_zero_is_serial() {
        let par = |words: &[&str]| flaggems_parallel_of(&os(words));
        let bench = "benchmark/test_blas_perf_parallel.py";
        assert_eq!(par(&["pytest", bench, "--parallel", "2"]), Some("2".into()));
        assert_eq!(
            par(&["python3", "-m", "pytest", bench, "--parallel=8"]),
            Some("8".into())
        );
        assert_eq!(
            par(&["pytest", bench, "--parallel", "2", "--parallel", "0"]),
            None
        );
        assert_eq!(par(&["pytest", bench, "--parallel", "00"]), None);
        assert_eq!(
            par(&["pytest", bench, "-k", "--parallel", "x"]),
            None,
            "-k's value"
        );
        assert_eq!(par(&["pytest", bench]), None);
        assert_eq!(par(&["pytest", bench, "--", "--parallel", "2"]), None);
        assert_eq!(par(&["sh", "-c", "pytest --parallel 2"]), None);
    }

    #[test]
    fn the_test_file_is_the_first_python_file_pytest_is_given() {
        let file = |words: &[&str]| test_file_of(&os(words));
        assert_eq!(
            file(&[
                "pytest",
                "-q",
                "benchmark/test_blas_perf.py::test_mm",
                "b.py"
            ]),
            Some("benchmark/test_blas_perf.py".into())
        );
        assert_eq!(file(&["pytest", "benchmark/"]), None);
        assert_eq!(file(&["python3", "x.py"]), None, "no pytest");
    }

    #[test]
    fn anything_but_pytest_does_not_qualify() {
        for words in [
            &["env", "pytest", "x.py"][..],
            &["sh", "-c", "pytest x.py"],
            &["python", "bench.py"],
            &["python", "-c", "import pytest"],
            &["python", "-m", "pytest_benchmark"],
            &["python", "--", "-m", "pytest"],
            &["python", "-m"],
            &["pythonic", "-m", "pytest"],
            &["srun", "python", "-m", "pytest"],
        ] {
            assert_eq!(measured(words), None, "{words:?}");
        }
        assert_eq!(measure_command(&[], None), None);
    }
}
