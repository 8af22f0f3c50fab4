//! The `retrylab` binary: the command line lives in `src/cli` (flags, progress bars, JSON lines), a module of this
//! binary rather than of the library, so library users do not build clap or indicatif.

mod cli;

fn main() {
    std::process::exit(cli::main());
}
