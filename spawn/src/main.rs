fn main() -> std::process::ExitCode {
    let args: spawn::Args = protocol::cli::parse_checked(spawn::check_args);
    protocol::exit(spawn::TOOL, spawn::run(&args))
}
