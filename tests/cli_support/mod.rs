//! Helpers shared by the command-line tests: run the binary in a folder, find the committed models, write files.

#![allow(dead_code)] // each test file uses a different subset

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub fn retrylab(args: &[&str], cwd: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_retrylab"))
        .args(args)
        .current_dir(cwd)
        .output()
        .unwrap()
}

pub fn models() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("models")
}

/// Write `text` to `folder/name` (making its folders); returns the path as text.
pub fn write(folder: &Path, name: &str, text: &str) -> String {
    let path = folder.join(name);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).unwrap();
    }
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

/// A committed model file's text.
pub fn model_text(name: &str) -> String {
    std::fs::read_to_string(models().join(name)).unwrap()
}

/// Exit 2 with exactly one line on stderr that contains every one of `needles`, and no panic.
pub fn assert_one_line_error(out: &Output, needles: &[&str]) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.trim_end().lines().count(), 1, "one line: {stderr}");
    for needle in needles {
        assert!(stderr.contains(needle), "{needle:?} in: {stderr}");
    }
    assert!(!stderr.contains("panicked"), "{stderr}");
}
