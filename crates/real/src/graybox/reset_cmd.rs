//! `--reset-cmd`: `sh -c CMD` before each schedule, bounded in time. A reset that hangs (a lock it waits on, a
//! prompt) would stall the probe silently forever; after [`RESET_CMD_TIMEOUT`] its whole process group is
//! killed and the probe stops with the command and the bound named. Its stderr (the last
//! [`STDERR_KEPT`] bytes) explains a failure.

use super::output_ring::OutputRing;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How long one reset may take.
pub const RESET_CMD_TIMEOUT: Duration = Duration::from_secs(60);
/// Bytes of its stderr kept for an error.
const STDERR_KEPT: usize = 4 << 10;
const POLL: Duration = Duration::from_millis(10);

/// Run `command` (blocking) within `timeout`; `Err` is one message naming it.
pub fn run(command: &str, timeout: Duration) -> Result<(), String> {
    let failed = |why: String| format!("--reset-cmd {command:?}: {why}");
    let (reader, writer) = super::output_ring::pipe().map_err(|e| failed(e.to_string()))?;
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(command)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(writer)
        .process_group(0)
        .spawn()
        .map_err(|e| failed(e.to_string()))?;
    let stderr = OutputRing::new(STDERR_KEPT);
    let feeder = stderr.feed(reader).map_err(|e| failed(e.to_string()))?;
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().map_err(|e| failed(e.to_string()))? {
            break status;
        }
        if started.elapsed() >= timeout {
            // SAFETY: kill(2) on the group our child leads (process_group(0)); it touches no memory of ours.
            unsafe {
                libc::kill(-(child.id() as libc::pid_t), libc::SIGKILL);
            }
            let _ = child.wait();
            return Err(failed(format!(
                "did not finish within {} s: its process group was killed",
                timeout.as_secs_f64()
            )));
        }
        std::thread::sleep(POLL);
    };
    if status.success() {
        return Ok(());
    }
    feeder.drained(Duration::from_millis(500));
    let text = stderr.text();
    Err(failed(format!("exited with {status}: {}", text.trim())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reset_that_succeeds_fails_or_hangs() {
        assert_eq!(run("true", RESET_CMD_TIMEOUT), Ok(()));
        let error = run("echo no-such-table >&2; exit 4", RESET_CMD_TIMEOUT).unwrap_err();
        assert!(
            error.contains("exit status: 4") && error.contains("no-such-table"),
            "{error}"
        );
        let started = Instant::now();
        let error = run("sleep 30 & sleep 30", Duration::from_millis(300)).unwrap_err();
        assert!(started.elapsed() < Duration::from_secs(10));
        assert_eq!(
            error,
            "--reset-cmd \"sleep 30 & sleep 30\": did not finish within 0.3 s: its process group was killed"
        );
    }
}
