fn main() -> std::process::ExitCode {
    let args: merge::Args = protocol::cli::parse();
    protocol::exit(merge::TOOL, merge::run(&args))
}
