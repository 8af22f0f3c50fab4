//! The gray-box probe leaves no process of the service behind and counts no fake crash (issue 44, item 16), on
//! the tiny Python service (tests/graybox_tiny/service.py) and a PostgreSQL the test starts: a service that
//! daemonises (`setsid ... &`: its shell exits 0 at once, the server keeps running) is refused with exit 2 and
//! its server killed; a foreground service with a grandchild in a session of its own passes the crash check
//! and the grandchild is gone once the probe exits; a probe killed with SIGKILL (no cleanup of its own runs)
//! still takes the service and the grandchild with it. Each test finds the service's processes by a marker
//! argument in /proc/PID/cmdline. Skipped with one line when PostgreSQL or python3-psycopg2 is missing.

use crate::tiny_service::{probe_exec, servers, tiny, PYTHON};
use retrylab::servers::postgres::TempPostgres;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A marker argument no other test's process carries.
fn marker(test: &str) -> String {
    format!("retrylab-orphan-{}-{test}", std::process::id())
}

/// `retrylab probe` running `exec` as the service, crash-at-every-statement only.
fn probe(pg: &TempPostgres, exec: &str, dir: &Path) -> Command {
    let mut command = probe_exec(pg, exec, dir);
    command.args(["--check", "crash-at-every-statement"]);
    command
}

/// The live processes whose command line has `marker` as an argument (a zombie runs no code: not counted).
fn carrying(marker: &str) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            let zombie = std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
                stat.rsplit(')')
                    .next()
                    .unwrap_or("")
                    .trim_start()
                    .starts_with('Z')
            });
            !zombie
                && cmdline
                    .split(|&b| b == 0)
                    .any(|arg| arg == marker.as_bytes())
        })
        .collect()
}

/// Wait for `done` at most `bound`, checking every 20 ms.
fn within(bound: Duration, mut done: impl FnMut() -> bool) -> bool {
    let started = Instant::now();
    while started.elapsed() < bound {
        if done() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    done()
}

/// The tiny service in the foreground, with a sleeper carrying `marker` that left the group and the session.
fn with_stray(marker: &str) -> String {
    format!(
        "setsid {PYTHON} -c 'import time; time.sleep(600)' {marker} & exec {PYTHON} {} one-transaction {marker}",
        tiny("service.py")
    )
}

#[test]
fn a_daemonising_service_is_refused_and_its_server_killed() {
    let Some(pg) = servers() else { return };
    let dir = tempfile::tempdir().unwrap();
    let marker = marker("daemon");
    let exec = format!(
        "setsid {PYTHON} {} one-transaction {marker} &",
        tiny("service.py")
    );
    let output = probe(&pg, &exec, dir.path()).output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("the service daemonised"), "{stderr}");
    assert!(
        within(Duration::from_secs(10), || carrying(&marker).is_empty()),
        "the daemon outlived the probe: {:?}",
        carrying(&marker)
    );
}

#[test]
fn a_foreground_service_passes_and_its_setsid_grandchild_dies_with_the_probe() {
    let Some(pg) = servers() else { return };
    let dir = tempfile::tempdir().unwrap();
    let marker = marker("foreground");
    let output = probe(&pg, &with_stray(&marker), dir.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(stdout.contains("\"result\":\"pass\""), "{stdout}");
    assert!(
        within(Duration::from_secs(10), || carrying(&marker).is_empty()),
        "processes of the service outlived the probe: {:?}",
        carrying(&marker)
    );
}

#[test]
fn a_probe_killed_with_sigkill_takes_the_service_and_its_grandchild() {
    let Some(pg) = servers() else { return };
    let dir = tempfile::tempdir().unwrap();
    let marker = marker("sigkill");
    let pid_file = dir.path().join("service.pid");
    let mut child = probe(&pg, &with_stray(&marker), dir.path())
        .env("PID_FILE", &pid_file)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    assert!(
        within(Duration::from_secs(60), || pid_file.exists()
            && carrying(&marker).len() >= 2),
        "the service never started"
    );
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(
        within(Duration::from_secs(10), || carrying(&marker).is_empty()),
        "processes of the service outlived a SIGKILLed probe: {:?}",
        carrying(&marker)
    );
}
