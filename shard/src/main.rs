fn main() -> std::process::ExitCode {
    let args: shard::Args = toolkit::cli::parse();
    toolkit::exit(shard::TOOL, shard::run(&args))
}
