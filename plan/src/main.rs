use std::process::ExitCode;

fn main() -> ExitCode {
    let argv = std::env::args_os().skip(1).collect();
    match plan::run(argv, &plan::discover::World::current()) {
        Ok(answer) => toolkit::exit(plan::TOOL, answer.write().map(|()| toolkit::Status::Done)),
        Err(refusal) => {
            eprint!("{}", refusal.message());
            ExitCode::from(refusal.status())
        }
    }
}
