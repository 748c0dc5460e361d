use std::process::ExitCode;

fn main() -> ExitCode {
    kopgen::cli::main()
}
