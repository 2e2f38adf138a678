fn main() -> std::process::ExitCode {
    let args: publish::Args = protocol::cli::parse();
    protocol::exit(publish::TOOL, publish::run(&args))
}
