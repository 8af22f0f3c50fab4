//! The command's output lines. `println!` panics when stdout is closed (`retrylab check models | head -1`: the
//! reader has gone), which prints a panic message and exits 101. A program whose reader has gone has nobody
//! left to tell anything, so, as ripgrep does for a broken pipe, it ends at once with exit 0 and no message.

use std::io::{self, Write};

/// Write one line to stdout (through the `outln!` macro).
pub fn write_line(line: std::fmt::Arguments) {
    let mut out = io::stdout().lock();
    if let Err(error) = writeln!(out, "{line}") {
        closed(&error);
    }
}

/// Write one line to stderr (through the `errln!` macro); a closed stderr is ignored.
pub fn write_error_line(line: std::fmt::Arguments) {
    let _ = writeln!(io::stderr().lock(), "{line}");
}

/// End the program: quietly when the reader has gone, with exit 2 and one line for any other failure (a full
/// disk: the output is incomplete, and saying so matters).
fn closed(error: &io::Error) -> ! {
    if error.kind() == io::ErrorKind::BrokenPipe {
        std::process::exit(super::EXIT_OK);
    }
    // Not eprintln!: stderr may be closed as well, and that must not panic either.
    let _ = writeln!(io::stderr(), "error: cannot write to stdout: {error}");
    std::process::exit(super::EXIT_BAD_INPUT);
}
