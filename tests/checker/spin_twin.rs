//! SPIN as a second anchor (benches/spin/): the Promela twin of the lease-fenced world holds, its unfenced twins
//! are violated at no-duplicate-effect, its dangerous scenarios are reached, and SPIN stores exactly as many states
//! as retrylab visits (the encoding is one-to-one, and every action touches shared data, so partial-order
//! reduction removes nothing). Needs `spin` and `gcc`; without them each test prints one "skipped" line (a failure
//! under RETRYLAB_REQUIRE_SERVERS=1, where spin counts as a server).

use retrylab::builtin::World;
use retrylab::check::Checker;
use retrylab::spec::load_model;
use std::path::PathBuf;
use std::process::Command;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Whether `tool --version`-like `args` runs; otherwise the skip line (or the failure under REQUIRE_SERVERS).
fn tools_installed() -> bool {
    for (tool, args, install) in [
        ("spin", ["-V"], "apt-get install spin"),
        ("gcc", ["--version"], "apt-get install gcc"),
    ] {
        let runs = Command::new(tool)
            .args(args)
            .output()
            .is_ok_and(|out| out.status.success());
        if !runs {
            retrylab::servers::missing(tool, install);
            return false;
        }
    }
    true
}

/// `benches/spin/run.sh ARGS`: its exit code and stdout.
fn run_sh(args: &[&str]) -> (i32, String) {
    let out = Command::new(root().join("benches/spin/run.sh"))
        .args(args)
        .output()
        .expect("benches/spin/run.sh runs");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let code = out.status.code().expect("run.sh exits");
    assert!(
        code != 2,
        "run.sh {args:?} failed: {stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    (code, stdout)
}

fn verdict_line(stdout: &str) -> &str {
    stdout
        .lines()
        .find(|line| line.starts_with("verdict: "))
        .expect("run.sh prints a verdict")
}

/// retrylab's count of unique states for `world`, from a complete search.
fn retrylab_states(world: &World) -> u64 {
    let report = Checker::new(world).bfs();
    assert!(report.complete, "retrylab's search is complete");
    report.states
}

fn model_world(file: &str) -> World {
    load_model(&root().join("models").join(file))
        .expect("a shipped model")
        .world
}

/// `states: N` from `run.sh count`.
fn spin_states(args: &[&str]) -> u64 {
    let (code, stdout) = run_sh(args);
    assert_eq!(code, 0, "{stdout}");
    stdout
        .trim()
        .strip_prefix("states: ")
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no count in {stdout:?}"))
}

#[test]
fn spin_finds_no_violation_in_lease_fenced_and_stores_retrylabs_states() {
    if !tools_installed() {
        return;
    }
    let (code, stdout) = run_sh(&["verify", "lease_fenced.pml"]);
    assert_eq!(code, 0, "{stdout}");
    let expected = format!(
        "verdict: holds ({} states stored)",
        retrylab_states(&model_world("lease-fenced.toml"))
    );
    assert_eq!(verdict_line(&stdout), expected);
}

#[test]
fn spin_finds_the_unfenced_lease_duplicating_the_effect() {
    if !tools_installed() {
        return;
    }
    let (code, stdout) = run_sh(&["verify", "lease_no_fencing.pml"]);
    assert_eq!(code, 1, "{stdout}");
    assert!(
        verdict_line(&stdout).starts_with("verdict: violated: no-duplicate-effect: "),
        "{stdout}"
    );
    // The same world explored in full: the same states as retrylab's (which searches past the violation).
    assert_eq!(
        spin_states(&["count", "lease_no_fencing.pml"]),
        retrylab_states(&model_world("lease-no-fencing.toml"))
    );
}

#[test]
fn spin_finds_the_two_client_world_without_fencing_duplicating_the_effect() {
    if !tools_installed() {
        return;
    }
    let (code, stdout) = run_sh(&["verify", "lease_fenced.pml", "-DFENCING=0"]);
    assert_eq!(code, 1, "{stdout}");
    assert!(
        verdict_line(&stdout).starts_with("verdict: violated: no-duplicate-effect: "),
        "{stdout}"
    );
    let unfenced = model_world("lease-fenced.toml")
        .to_builder()
        .fencing(false)
        .build()
        .expect("fencing off is a valid knob");
    assert_eq!(
        spin_states(&["count", "lease_fenced.pml", "-DFENCING=0"]),
        retrylab_states(&unfenced)
    );
}

/// Evidence the holds is not vacuous: SPIN's search of the fenced world reaches a slow owner (a pause), a lease
/// take-over and a fenced completion (each hook is an `assert(false)` when compiled in).
#[test]
fn spin_reaches_the_dangerous_scenarios_of_lease_fenced() {
    if !tools_installed() {
        return;
    }
    for hook in ["-DREACH_SLOW_OWNER", "-DREACH_TAKEOVER", "-DREACH_FENCED"] {
        let (code, stdout) = run_sh(&["verify", "lease_fenced.pml", hook]);
        assert_eq!(code, 1, "{hook}: {stdout}");
        assert!(
            verdict_line(&stdout).contains("a REACH_ scenario hook"),
            "{hook}: {stdout}"
        );
    }
}
