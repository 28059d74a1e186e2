use std::process::ExitCode;

fn main() -> ExitCode {
    zpulse_agent::cli::main()
}
