fn main() -> std::process::ExitCode {
    plan::main()
}
