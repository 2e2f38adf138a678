fn main() -> std::process::ExitCode {
    let args: shard::Args = protocol::cli::parse();
    protocol::exit(shard::TOOL, shard::run(&args))
}
