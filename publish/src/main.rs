fn main() -> std::process::ExitCode {
    let args: publish::Args = toolkit::cli::parse();
    toolkit::exit(publish::TOOL, publish::run(&args))
}
