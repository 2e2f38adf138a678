fn main() -> std::process::ExitCode {
    let args: costs::Args = protocol::cli::parse();
    protocol::exit(costs::TOOL, costs::run(&args))
}
