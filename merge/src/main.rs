fn main() -> std::process::ExitCode {
    let args: merge::Args = toolkit::cli::parse();
    toolkit::exit(merge::TOOL, merge::run(&args))
}
