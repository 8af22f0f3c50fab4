//! The command's output lines. `println!` panics when stdout is closed (`retrylab check models | head -1`: the
//! reader has gone), which prints a panic message and exits 101. A program whose reader has gone has nobody
//! left to tell anything, so, as ripgrep does for a broken pipe, it ends at once with exit 0 and no message.
//!
//! Every line is also made safe for a terminal here, where all output passes: text from input files (a model's
//! path, description or body, a trace's field, a server's answer) may hold escape codes that would recolour,
//! retitle or rewrite the reader's terminal. Control characters other than a line break or a tab are written
//! as visible escapes (`\x1b`, `\u{9b}`); JSON lines have none (serde escapes them), so they are unchanged.

use std::io::{self, Write};

/// Write one line to stdout (through the `outln!` macro).
pub fn write_line(line: std::fmt::Arguments) {
    let mut out = io::stdout().lock();
    if let Err(error) = writeln!(out, "{}", terminal_safe(&line.to_string())) {
        closed(&error);
    }
}

/// Write one line to stderr (through the `errln!` macro); a closed stderr is ignored.
pub fn write_error_line(line: std::fmt::Arguments) {
    let _ = writeln!(io::stderr().lock(), "{}", terminal_safe(&line.to_string()));
}

/// `text` with every control character but a line break and a tab written as a visible escape: ESC (which
/// starts the terminal's escape sequences), the 8-bit CSI, a carriage return that would overwrite the line, a
/// backspace, a bell.
pub fn terminal_safe(text: &str) -> String {
    if !text
        .chars()
        .any(|character| character.is_control() && !matches!(character, '\n' | '\t'))
    {
        return text.to_string();
    }
    let mut safe = String::with_capacity(text.len() + 8);
    for character in text.chars() {
        match character {
            '\n' | '\t' => safe.push(character),
            _ if character.is_control() && u32::from(character) < 0x80 => {
                safe.push_str(&format!("\\x{:02x}", u32::from(character)))
            }
            _ if character.is_control() => {
                safe.push_str(&format!("\\u{{{:x}}}", u32::from(character)))
            }
            _ => safe.push(character),
        }
    }
    safe
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

#[cfg(test)]
mod tests {
    use super::terminal_safe;

    #[test]
    fn escape_codes_are_shown_not_obeyed() {
        assert_eq!(
            terminal_safe("model \u{1b}[2J\u{1b}]0;owned\u{7}x\r\u{9b}31m"),
            "model \\x1b[2J\\x1b]0;owned\\x07x\\x0d\\u{9b}31m"
        );
        // The twin: ordinary text, line breaks, tabs and non-ASCII letters pass unchanged.
        let plain = "C1 sends C1.op1\tattempt 1\nk\u{e9}y \u{2192} ok";
        assert_eq!(terminal_safe(plain), plain);
    }
}
