fn main() -> std::process::ExitCode {
    let args: cache::Args = toolkit::cli::parse();
    toolkit::exit(cache::TOOL, cache::run(&args))
}
