//! The committed verdict matrix (results/verdicts.md and results/verdicts/*.svg) is what the models in models/
//! produce today: regenerate it into a temporary folder through the CLI and compare, with the wall-clock column
//! masked. When this fails after a model change, regenerate and commit:
//! `cargo run --release -- check models --report results/verdicts.md`.

use retrylab::report::TIME_HEADER;
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

/// Replace the last cell of every row of the table whose header ends with the time column.
fn mask_time(text: &str) -> String {
    let mut in_table = false;
    let mut out = Vec::new();
    for line in text.lines() {
        if line.starts_with('|') && line.ends_with(&format!("| {TIME_HEADER} |")) {
            in_table = true;
            out.push(line.to_string());
            continue;
        }
        if in_table && line.starts_with('|') {
            let body = &line[..line.len() - 1];
            let cut = body.rfind('|').expect("a table row has cells");
            out.push(format!("{}| (masked) |", &body[..cut]));
            continue;
        }
        in_table = false;
        out.push(line.to_string());
    }
    out.join("\n")
}

fn svgs(folder: &Path) -> BTreeMap<String, String> {
    let mut files = BTreeMap::new();
    for entry in std::fs::read_dir(folder).expect("the SVG folder exists") {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|extension| extension == "svg") {
            let name = path.file_name().unwrap().to_string_lossy().to_string();
            files.insert(name, std::fs::read_to_string(&path).unwrap());
        }
    }
    files
}

#[test]
fn the_committed_report_matches_a_fresh_run() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let scratch = tempfile::tempdir().unwrap();
    let fresh = scratch.path().join("verdicts.md");
    let out = Command::new(env!("CARGO_BIN_EXE_retrylab"))
        // The committed matrix shows the shortest counterexamples: every order explored.
        .args(["check", "models", "--por", "off", "--report"])
        .arg(&fresh)
        .args(["--traces"])
        .arg(scratch.path().join("traces"))
        .current_dir(root)
        .output()
        .unwrap();
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let regenerate =
        "regenerate with `cargo run --release -- check models --por off --report results/verdicts.md`";
    let committed = std::fs::read_to_string(root.join("results/verdicts.md"))
        .unwrap_or_else(|_| panic!("results/verdicts.md is missing: {regenerate}"));
    let generated = std::fs::read_to_string(&fresh).unwrap();
    assert!(mask_time(&generated).contains("| (masked) |"));
    if mask_time(&committed) != mask_time(&generated) {
        let first_difference = committed
            .lines()
            .zip(generated.lines())
            .position(|(a, b)| mask_time(a) != mask_time(b))
            .map_or("(length)".to_string(), |line| format!("line {}", line + 1));
        panic!(
            "results/verdicts.md is stale (first difference at {first_difference}): {regenerate}"
        );
    }
    let committed_svgs = svgs(&root.join("results/verdicts"));
    let generated_svgs = svgs(&scratch.path().join("verdicts"));
    assert_eq!(
        committed_svgs.keys().collect::<Vec<_>>(),
        generated_svgs.keys().collect::<Vec<_>>(),
        "results/verdicts/ holds other SVGs than a fresh run: {regenerate}"
    );
    for (name, text) in &generated_svgs {
        assert!(
            committed_svgs[name] == *text,
            "results/verdicts/{name} is stale: {regenerate}"
        );
    }
    // Every violation in the matrix has its diagram, and every diagram is linked.
    for name in generated_svgs.keys() {
        assert!(generated.contains(&format!("(verdicts/{name})")), "{name}");
    }
    assert_eq!(
        generated.matches("```mermaid").count(),
        generated_svgs.len()
    );
}

#[test]
fn masking_hides_only_the_time_column() {
    let text = format!(
        "x\n| model | states | {TIME_HEADER} |\n|---|---|---|\n| `a` | 12 | 0.01 s |\n\nafter | 3 |"
    );
    let masked = mask_time(&text);
    assert!(masked.contains("| `a` | 12 | (masked) |"));
    assert!(masked.ends_with("after | 3 |"));
    let other = text.replace("| 12 |", "| 13 |");
    assert_ne!(mask_time(&other), masked, "other columns are compared");
}

#[test]
fn an_unwritable_report_path_is_one_line_and_exit_two() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let scratch = tempfile::tempdir().unwrap();
    let blocker = scratch.path().join("a-file");
    std::fs::write(&blocker, "not a folder").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_retrylab"))
        .args(["check", "models/new-key-per-attempt.toml", "--report"])
        .arg(blocker.join("verdicts.md"))
        .args(["--traces"])
        .arg(scratch.path().join("traces"))
        .current_dir(root)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.starts_with("error: cannot write"), "{stderr}");
}
