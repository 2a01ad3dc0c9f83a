//! The `lspc` binary: parse the command line, run the command, map the outcome to an exit status.
//!
//! Exit statuses (shared by every command): 0 success / nothing found at the failing severity,
//! 1 findings (or "nothing found" for queries), 2 usage or configuration error, 3 a language server
//! failed or timed out.

fn main() {
    std::process::exit(lspc::cli::main_with_args(
        std::env::args_os().skip(1).collect(),
    ));
}
