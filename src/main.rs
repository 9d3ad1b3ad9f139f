//! The `faultmatrix` binary; everything lives in [`faultmatrix::cli`].

mod alloc;

// Loading and running rows is allocation-heavy (YAML values, traces); the
// system allocator spent about a third of the CLI's time in malloc/free.
#[global_allocator]
static GLOBAL: alloc::MiMalloc = alloc::MiMalloc;

fn main() -> std::process::ExitCode {
    faultmatrix::cli::main()
}
