fn main() -> std::process::ExitCode {
    let args: spawn::Args = toolkit::cli::parse();
    toolkit::exit(spawn::TOOL, spawn::run(&args))
}
