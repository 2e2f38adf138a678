fn main() -> std::process::ExitCode {
    let args: spawn::Args = protocol::cli::parse();
    protocol::exit(spawn::TOOL, spawn::run(&args))
}
