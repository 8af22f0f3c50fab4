//! The cluster recipe of `docs/src/cluster.md`: `docs/cluster/shard.sh` started as 4 parallel Slurm array tasks and
//! as 4 Kubernetes Indexed Job pods (by their environment variables), merged, gives the unsharded result; and
//! run for real as an 8-task `sbatch --array` on a single-node Slurm the test starts (`servers::slurm`).

use crate::cli_support;

use cli_support::{models, retrylab};
use retrylab::servers::slurm::TempSlurm;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

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

fn shard_files(out: &Path, shards: usize) -> Vec<String> {
    (1..=shards)
        .map(|k| out.join(format!("shard-{k}-of-{shards}.jsonl")))
        .filter(|path| path.exists())
        .map(|path| path.display().to_string())
        .collect()
}

/// `retrylab merge` of the shard files of `shards` present in `out`.
fn merge_shards(out: &Path, shards: usize) -> std::process::Output {
    let files = shard_files(out, shards);
    let args: Vec<&str> = std::iter::once("merge")
        .chain(files.iter().map(String::as_str))
        .collect();
    retrylab(&args, out)
}

fn merged(out: &Path, shards: usize) -> serde_json::Value {
    assert_eq!(shard_files(out, shards).len(), shards);
    let result = merge_shards(out, shards);
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
    assert_same_result(&merged(&out, SHARDS), &unsharded(folder.path()));
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
    assert_same_result(&merged(&out, SHARDS), &unsharded(folder.path()));
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
    let result = merge_shards(&out, SHARDS);
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

/// Tasks of the real Slurm array (`sbatch --array=0-7`).
const SLURM_TASKS: usize = 8;
/// Generous: the array takes a few seconds; this only bounds a cluster that stopped scheduling.
const JOB_TIMEOUT: Duration = Duration::from_secs(180);

/// Submit `shard.sh` as an 8-task array writing into `out`, with `retrylab` at `bin`; the array's job id.
fn sbatch_array(slurm: &TempSlurm, folder: &Path, out: &Path, bin: &Path) -> String {
    let submitted = slurm
        .command("sbatch")
        .args(["--parsable", "--array=0-7", "--job-name=retrylab-shard"])
        .arg(format!("--chdir={}", folder.display()))
        .arg(format!("--output={}/slurm-%A_%a.out", folder.display()))
        .arg(script())
        .args([model().as_str(), SEEDS, SEED])
        .env("OUT", out)
        .env("RETRYLAB", bin)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&submitted.stdout);
    assert!(
        submitted.status.success(),
        "sbatch: {stdout}{}",
        String::from_utf8_lossy(&submitted.stderr)
    );
    // `--parsable` prints `JOBID` or `JOBID;CLUSTER`.
    stdout.trim().split(';').next().unwrap().to_string()
}

/// Every task's state once the array has ended; the tasks' output in the panic message if it never does.
fn wait_array(slurm: &TempSlurm, job: &str, folder: &Path) -> BTreeMap<String, String> {
    let states = slurm
        .wait_for_job(job, JOB_TIMEOUT)
        .unwrap_or_else(|error| panic!("{error}\n{}", task_outputs(folder)));
    assert_eq!(states.len(), SLURM_TASKS, "{states:?}");
    states
}

/// The tasks' `slurm-JOB_TASK.out` files, for failure messages.
fn task_outputs(folder: &Path) -> String {
    let mut files: Vec<PathBuf> = std::fs::read_dir(folder)
        .unwrap()
        .flatten()
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "out"))
        .collect();
    files.sort();
    files
        .iter()
        .map(|path| {
            let text = std::fs::read_to_string(path).unwrap_or_default();
            format!("{}: {text}", path.display())
        })
        .collect()
}

/// The broken twin: an array whose task 5 fails (a `retrylab` that exits 3 there) ends with that task FAILED,
/// and `merge` refuses the 7 shards, naming shard 6 (task ids start at 0).
fn a_failed_task_is_seen_and_named_by_merge(slurm: &TempSlurm, folder: &Path) {
    let failing = folder.join("fails-on-task-5.sh");
    std::fs::write(
        &failing,
        format!(
            "#!/bin/sh\nif [ \"$SLURM_ARRAY_TASK_ID\" = 5 ]; then exit 3; fi\nexec '{}' \"$@\"\n",
            env!("CARGO_BIN_EXE_retrylab")
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&failing, std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = folder.join("runs-with-a-failure");
    let job = sbatch_array(slurm, folder, &out, &failing);
    let states = wait_array(slurm, &job, folder);
    for (task, state) in &states {
        let expected = if *task == format!("{job}_5") {
            "FAILED"
        } else {
            "COMPLETED"
        };
        assert_eq!(state, expected, "{task}: {states:?}");
    }
    let result = merge_shards(&out, SLURM_TASKS);
    assert_eq!(result.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&result.stderr);
    assert!(stderr.contains("6/8 missing"), "{stderr}");
}

#[test]
fn a_real_slurm_array_of_8_tasks_merges_into_the_unsharded_result() {
    let Some(slurm) = TempSlurm::start() else {
        return;
    };
    let folder = tempfile::tempdir().unwrap();
    let out = folder.path().join("runs");
    let bin = Path::new(env!("CARGO_BIN_EXE_retrylab"));
    let job = sbatch_array(&slurm, folder.path(), &out, bin);
    let states = wait_array(&slurm, &job, folder.path());
    assert!(
        states.values().all(|state| state == "COMPLETED"),
        "{states:?}\n{}",
        task_outputs(folder.path())
    );
    assert_same_result(&merged(&out, SLURM_TASKS), &unsharded(folder.path()));
    a_failed_task_is_seen_and_named_by_merge(&slurm, folder.path());
    // Dropping the cluster stops its daemons and removes its directory.
    let (pids, dir) = (slurm.pids(), slurm.dir().to_path_buf());
    drop(slurm);
    for pid in pids {
        assert!(
            !Path::new(&format!("/proc/{pid}")).exists(),
            "daemon {pid} still runs"
        );
    }
    assert!(!dir.exists(), "{}", dir.display());
}
