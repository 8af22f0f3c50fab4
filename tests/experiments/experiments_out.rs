//! Every experiment binary refuses an unwritable `--out` at once, with exit 2 (a usage error, as `retrylab`
//! gives), instead of finding out after its whole sweep and exiting 1.

use std::process::Command;
use std::time::{Duration, Instant};

#[test]
fn an_unwritable_out_is_refused_before_the_sweep() {
    let folder = tempfile::tempdir().unwrap();
    // A path below a regular file cannot be created, even by root.
    let blocker = folder.path().join("a-file");
    std::fs::write(&blocker, b"").unwrap();
    let out = blocker.join("results");
    for binary in [
        env!("CARGO_BIN_EXE_aws-jitter"),
        env!("CARGO_BIN_EXE_dedup-window"),
        env!("CARGO_BIN_EXE_retry-layers"),
        env!("CARGO_BIN_EXE_retry-budget"),
        env!("CARGO_BIN_EXE_metastability"),
        env!("CARGO_BIN_EXE_retry-safety"),
        env!("CARGO_BIN_EXE_state-space"),
    ] {
        let started = Instant::now();
        let run = Command::new(binary)
            .arg("--out")
            .arg(&out)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&run.stderr);
        assert_eq!(run.status.code(), Some(2), "{binary}: {stderr}");
        assert!(stderr.contains("cannot write there"), "{binary}: {stderr}");
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{binary} ran its sweep first"
        );
    }
}
