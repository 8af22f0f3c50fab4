//! The cluster recipe of `docs/cluster.md`: `docs/cluster/shard.sh` started as 4 parallel Slurm array tasks and
//! as 4 Kubernetes Indexed Job pods (by their environment variables), merged, gives the unsharded result.

mod cli_support;

use cli_support::{models, retrylab};
use std::path::{Path, PathBuf};
use std::process::Command;

const SEEDS: &str = "400";
const SEED: &str = "11";
const SHARDS: usize = 4;

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/cluster/shard.sh")
}

fn model() -> String {
    models()
        .join("select-then-insert.toml")
        .display()
        .to_string()
}

/// Start every shard at once, each with the scheduler's variables `task(k)` gives (k is 1-based), into `out`.
fn run_tasks(out: &Path, task: impl Fn(usize) -> Vec<(&'static str, String)>) {
    let children: Vec<_> = (1..=SHARDS)
        .map(|k| {
            Command::new("sh")
                .arg(script())
                .args([model().as_str(), SEEDS, SEED])
                .env("OUT", out)
                .env("RETRYLAB", env!("CARGO_BIN_EXE_retrylab"))
                .env_remove("SLURM_ARRAY_TASK_ID")
                .env_remove("JOB_COMPLETION_INDEX")
                .envs(task(k))
                .spawn()
                .unwrap()
        })
        .collect();
    for mut child in children {
        assert!(child.wait().unwrap().success());
    }
}

fn shard_files(out: &Path) -> Vec<String> {
    (1..=SHARDS)
        .map(|k| out.join(format!("shard-{k}-of-{SHARDS}.jsonl")))
        .filter(|path| path.exists())
        .map(|path| path.display().to_string())
        .collect()
}

/// `retrylab merge` of the shard files present in `out`.
fn merge_shards(out: &Path) -> std::process::Output {
    let files = shard_files(out);
    let args: Vec<&str> = std::iter::once("merge")
        .chain(files.iter().map(String::as_str))
        .collect();
    retrylab(&args, out)
}

fn merged(out: &Path) -> serde_json::Value {
    assert_eq!(shard_files(out).len(), SHARDS);
    let result = merge_shards(out);
    assert_eq!(
        result.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&result.stderr)
    );
    serde_json::from_slice(&result.stdout).unwrap()
}

fn unsharded(folder: &Path) -> serde_json::Value {
    let model = model();
    let out = retrylab(
        &[
            "simulate", &model, "--seeds", SEEDS, "--seed", SEED, "--json",
        ],
        folder,
    );
    assert_eq!(out.status.code(), Some(0));
    serde_json::from_slice(&out.stdout).unwrap()
}

fn assert_same_result(merged: &serde_json::Value, whole: &serde_json::Value) {
    for field in [
        "properties",
        "walks",
        "states",
        "cut_walks",
        "counterexample_len",
        "counterexample_lens",
        "counterexample_seeds",
        "reached",
        "matches",
        "model_sha256",
    ] {
        assert_eq!(merged[field], whole[field], "{field}");
    }
    // The walks found the bug: the comparison is between two results that say something.
    assert_eq!(merged["properties"]["no-duplicate-effect"], "violated");
}

#[test]
fn slurm_array_tasks_in_parallel_merge_into_the_unsharded_result() {
    let folder = tempfile::tempdir().unwrap();
    let out = folder.path().join("runs");
    // `--array=3-6`: the task ids need not start at 1.
    run_tasks(&out, |k| {
        vec![
            ("SLURM_ARRAY_TASK_ID", (k + 2).to_string()),
            ("SLURM_ARRAY_TASK_MIN", "3".to_string()),
            ("SLURM_ARRAY_TASK_COUNT", SHARDS.to_string()),
        ]
    });
    assert_same_result(&merged(&out), &unsharded(folder.path()));
    for k in 1..=SHARDS {
        assert!(out.join(format!("traces/shard-{k}-of-{SHARDS}")).is_dir());
    }
}

#[test]
fn indexed_job_pods_in_parallel_merge_into_the_unsharded_result() {
    let folder = tempfile::tempdir().unwrap();
    let out = folder.path().join("runs");
    run_tasks(&out, |k| {
        vec![
            ("JOB_COMPLETION_INDEX", (k - 1).to_string()),
            ("SHARDS", SHARDS.to_string()),
        ]
    });
    assert_same_result(&merged(&out), &unsharded(folder.path()));
}

#[test]
fn a_task_that_never_finished_is_named_by_merge() {
    let folder = tempfile::tempdir().unwrap();
    let out = folder.path().join("runs");
    run_tasks(&out, |k| {
        vec![
            ("JOB_COMPLETION_INDEX", (k - 1).to_string()),
            ("SHARDS", SHARDS.to_string()),
        ]
    });
    std::fs::remove_file(out.join(format!("shard-3-of-{SHARDS}.jsonl"))).unwrap();
    let result = merge_shards(&out);
    assert_eq!(result.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&result.stderr);
    assert!(stderr.contains("3/4 missing"), "{stderr}");
    // Without a scheduler's variables the script refuses to guess a shard.
    let refused = Command::new("sh")
        .arg(script())
        .args([model().as_str(), SEEDS])
        .env_remove("SLURM_ARRAY_TASK_ID")
        .env_remove("JOB_COMPLETION_INDEX")
        .env("OUT", &out)
        .output()
        .unwrap();
    assert_eq!(refused.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("neither SLURM_ARRAY_TASK_ID"));
}
