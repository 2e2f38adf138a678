fn main() -> std::process::ExitCode {
    let invocation = toolkit::cli::invocation::<spawn::Args>();
    toolkit::exit(spawn::TOOL, spawn::run(&invocation))
}
