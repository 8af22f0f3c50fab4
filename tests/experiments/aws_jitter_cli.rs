//! The aws-jitter binary: byte-identical output whatever the thread count, a different seed
//! gives different data, bad flags give one line and exit code 2.

use crate::storms_support;

use std::path::Path;
use std::process::Output;
use storms_support::{read_all, run_binary};

fn aws_jitter(args: &[&str]) -> Output {
    aws_jitter_in(Path::new("."), args)
}

fn aws_jitter_in(dir: &Path, args: &[&str]) -> Output {
    run_binary(env!("CARGO_BIN_EXE_aws-jitter"), dir, args)
}

#[test]
fn output_is_byte_identical_whatever_the_thread_count() {
    let root = tempfile::tempdir().unwrap();
    // Same relative --out in different working folders: the README quotes the command.
    let run = |threads: &str, seed: &str| {
        let cwd = root.path().join(format!("t{threads}-s{seed}"));
        std::fs::create_dir(&cwd).unwrap();
        let flags = ["--clients", "10,20", "--runs", "3", "--out", "out"];
        let mut args = flags.to_vec();
        args.extend(["--seed", seed, "--threads", threads]);
        let output = aws_jitter_in(&cwd, &args);
        assert!(output.status.success(), "{output:?}");
        read_all(&cwd.join("out"))
    };
    let one = run("1", "9");
    let two = run("2", "9");
    let names: Vec<&str> = one.iter().map(|(n, _)| n.as_str()).collect();
    for expected in [
        "README.md",
        "runs.csv",
        "summary.csv",
        "summary-all.csv",
        "work.svg",
        "work.png",
        "time.svg",
        "time.png",
        "time-log.svg",
        "time-log.png",
        "tradeoff.png",
        "latency.png",
        "decorrelated-work.png",
    ] {
        assert!(
            names.contains(&expected),
            "{expected} missing from {names:?}"
        );
    }
    assert_eq!(one.len(), two.len());
    for ((name_a, bytes_a), (name_b, bytes_b)) in one.iter().zip(&two) {
        assert_eq!(name_a, name_b);
        assert!(
            bytes_a == bytes_b,
            "{name_a} differs between 1 and 2 threads:\n{}\n---\n{}",
            String::from_utf8_lossy(&bytes_a[..bytes_a.len().min(600)]),
            String::from_utf8_lossy(&bytes_b[..bytes_b.len().min(600)])
        );
    }
    let summary = String::from_utf8(
        one.iter()
            .find(|(n, _)| n == "summary.csv")
            .unwrap()
            .1
            .clone(),
    )
    .unwrap();
    let mut lines = summary.lines();
    assert_eq!(
        lines.next(),
        Some("strategy,clients,runs,calls_mean,calls_sd,calls_ci95,time_ms_mean,time_ms_sd,time_ms_ci95")
    );
    let strategies: Vec<&str> = lines.map(|l| l.split(',').next().unwrap()).collect();
    assert_eq!(
        strategies,
        [
            "none",
            "none",
            "exponential",
            "exponential",
            "equal-jitter",
            "equal-jitter",
            "full-jitter",
            "full-jitter",
            "decorrelated-jitter",
            "decorrelated-jitter"
        ]
    );
    // Another seed, other data.
    let other = run("2", "10");
    let runs_csv =
        |set: &[(String, Vec<u8>)]| set.iter().find(|(n, _)| n == "runs.csv").unwrap().1.clone();
    assert_ne!(runs_csv(&one), runs_csv(&other));
}

#[test]
fn bad_flags_give_one_line_and_exit_code_2() {
    let out = tempfile::tempdir().unwrap();
    let out_dir = out.path().to_str().unwrap();
    for args in [
        vec!["--runs", "many"],
        vec!["--runs", "1"],
        vec!["--clients", "20,10"],
        vec!["--clients", "0"],
        vec!["--threads", "0"],
        vec!["--bogus"],
    ] {
        let mut all = args.clone();
        all.extend(["--out", out_dir]);
        let output = aws_jitter(&all);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {output:?}");
        let stderr = String::from_utf8(output.stderr).unwrap();
        assert_eq!(stderr.trim_end().lines().count(), 1, "{args:?}: {stderr}");
        assert!(stderr.starts_with("aws-jitter: "), "{stderr}");
    }
    // Nothing was written for bad input.
    assert_eq!(std::fs::read_dir(out.path()).unwrap().count(), 0);
}
