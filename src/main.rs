//! The `faultmatrix` binary; everything lives in [`faultmatrix::cli`].

fn main() -> std::process::ExitCode {
    faultmatrix::cli::main()
}
