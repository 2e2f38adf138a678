fn main() -> std::process::ExitCode {
    let args: costs::Args = toolkit::cli::parse();
    toolkit::exit(costs::TOOL, costs::run(&args))
}
