//! Shared checks of the experiment binaries: byte-identical output whatever the thread count, and one
//! line with exit code 2 on bad flags.
#![allow(dead_code)] // aws_jitter_cli.rs uses only the runner and the file reader

use std::path::Path;
use std::process::{Command, Output};

pub fn run_binary(exe: &str, dir: &Path, args: &[&str]) -> Output {
    Command::new(exe)
        .current_dir(dir)
        .args(args)
        .output()
        .expect("the binary runs")
}

/// (file name, bytes) of every file in `dir`, sorted by name.
pub fn read_all(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut files: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let path = e.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read(&path).unwrap())
        })
        .collect();
    files.sort();
    files
}

/// Runs `exe args` with 1 and with 2 threads into the same relative `--out out` of two working
/// folders, asserts the files are byte-identical and returns them.
pub fn assert_same_whatever_the_threads(exe: &str, args: &[&str]) -> Vec<(String, Vec<u8>)> {
    let root = tempfile::tempdir().unwrap();
    let mut outputs = Vec::new();
    for threads in ["1", "2"] {
        let cwd = root.path().join(format!("t{threads}"));
        std::fs::create_dir(&cwd).unwrap();
        let mut all = args.to_vec();
        all.extend(["--out", "out", "--threads", threads]);
        let output = run_binary(exe, &cwd, &all);
        assert!(output.status.success(), "{output:?}");
        outputs.push(read_all(&cwd.join("out")));
    }
    assert!(!outputs[0].is_empty());
    assert_eq!(
        outputs[0], outputs[1],
        "output differs between 1 and 2 threads"
    );
    outputs.swap_remove(0)
}

pub fn assert_bad_flags_exit_2(exe: &str, cases: &[&[&str]]) {
    let root = tempfile::tempdir().unwrap();
    for args in cases {
        let output = run_binary(exe, root.path(), args);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {output:?}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(stderr.trim_end().lines().count(), 1, "{args:?}: {stderr}");
        // Nothing is written on bad input.
        assert!(!root.path().join("results").exists());
    }
}

/// The text of `name` among `files`.
pub fn text_of(files: &[(String, Vec<u8>)], name: &str) -> String {
    let (_, bytes) = files
        .iter()
        .find(|(n, _)| n == name)
        .unwrap_or_else(|| panic!("{name} missing"));
    String::from_utf8(bytes.clone()).unwrap()
}
