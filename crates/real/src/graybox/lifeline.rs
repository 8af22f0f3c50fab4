//! The service dies with the probe, however the probe dies (SIGKILL, an allocation failure, a hang-up), not
//! only on the paths that run `Drop`:
//!
//! - the service's shell gets `PR_SET_PDEATHSIG` (SIGKILL). The kernel sends it when the *thread* that forked
//!   the child exits, not the process, so every launch forks from one thread started for it that never exits
//!   ([`spawn`]); a tokio worker or blocking-pool thread may be retired while the service runs.
//! - PDEATHSIG reaches the shell only, so a watchdog ([`Watchdog`]: `sh`, in a process group of its own so a
//!   terminal's Ctrl-C does not take it first) waits on a pipe only the probe holds open; when the probe is gone
//!   the pipe reads end-of-file and it SIGKILLs every process carrying the service's mark
//!   (see `proc_tree`), which covers grandchildren that left the group or the session.

use super::output_ring::pipe;
use super::proc_tree::mark_entry;
use std::fs::File;
use std::io;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::sync::OnceLock;

type Request = (Command, mpsc::Sender<io::Result<Child>>);

/// The one lasting thread that forks the service (see the module's note).
fn spawner() -> &'static mpsc::Sender<Request> {
    static SPAWNER: OnceLock<mpsc::Sender<Request>> = OnceLock::new();
    SPAWNER.get_or_init(|| {
        let (requests, incoming) = mpsc::channel::<Request>();
        std::thread::Builder::new()
            .name("service-spawner".into())
            .spawn(move || {
                // Never returns while the probe lives: the sender is in a static.
                for (mut command, answer) in incoming {
                    let _ = answer.send(command.spawn());
                }
            })
            .expect("a thread for spawning the service");
        requests
    })
}

/// Spawn `command` from the lasting thread, with SIGKILL as its parent-death signal.
pub fn spawn(mut command: Command) -> io::Result<Child> {
    let parent = std::process::id() as libc::pid_t;
    // SAFETY: the closure runs in the forked child before exec and calls only async-signal-safe functions
    // (prctl, getppid), allocating nothing.
    unsafe {
        command.pre_exec(move || {
            if libc::prctl(
                libc::PR_SET_PDEATHSIG,
                libc::SIGKILL as libc::c_ulong,
                0,
                0,
                0,
            ) != 0
            {
                return Err(io::Error::last_os_error());
            }
            // The probe may have died between the fork and the prctl: then no signal would ever come.
            if libc::getppid() != parent {
                return Err(io::Error::from_raw_os_error(libc::ESRCH));
            }
            Ok(())
        });
    }
    let (answer, answered) = mpsc::channel();
    spawner()
        .send((command, answer))
        .map_err(|_| io::Error::other("the service's spawning thread is gone"))?;
    answered
        .recv()
        .map_err(|_| io::Error::other("the service's spawning thread is gone"))?
}

/// Kills what carries the mark once the pipe reads end-of-file; a few passes, as a process may fork between the
/// look and the kill. `grep -z` reads each /proc/PID/environ as NUL-separated entries.
const WATCHDOG: &str = r#"trap '' HUP INT TERM QUIT
read -r _ || :
for pass in 1 2 3 4 5 6 7 8 9 10; do
  pids=$(grep -lxzF "$1" /proc/[0-9]*/environ 2>/dev/null | cut -d/ -f3)
  [ -z "$pids" ] && exit 0
  kill -9 $pids 2>/dev/null
  sleep 0.05
done"#;

/// The watchdog of one service's processes, ended (after the service) on drop.
pub struct Watchdog {
    child: Child,
    /// Held open by the probe only (close-on-exec): its end is the watchdog's signal.
    _lifeline: File,
}

impl Watchdog {
    pub fn start(mark: &str) -> io::Result<Watchdog> {
        let (reader, lifeline) = pipe()?;
        let child = Command::new("sh")
            .arg("-c")
            .arg(WATCHDOG)
            .arg("retrylab-watchdog")
            .arg(mark_entry(mark))
            .stdin(Stdio::from(reader))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()?;
        Ok(Watchdog {
            child,
            _lifeline: lifeline,
        })
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        // The service is killed already (it is dropped first): nothing is left to watch.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graybox::proc_tree::{members, MARK_VAR};
    use std::time::Duration;

    #[test]
    fn the_watchdog_kills_marked_processes_when_its_pipe_closes() {
        let mark = format!("test-{}-watchdog", std::process::id());
        let watchdog = Watchdog::start(&mark).unwrap();
        let mut marked = Command::new("sh")
            .args(["-c", "setsid sleep 60 & exec sleep 60"])
            .env(MARK_VAR, &mark)
            .spawn()
            .unwrap();
        let root = marked.id() as i32;
        assert!((0..200).any(|_| {
            std::thread::sleep(Duration::from_millis(10));
            members(root, &mark).len() == 2
        }));
        // As if the probe died: the pipe's end closes, the watchdog runs its passes.
        let mut watchdog = watchdog;
        drop(std::mem::replace(
            &mut watchdog._lifeline,
            pipe().unwrap().1,
        ));
        watchdog.child.wait().unwrap();
        marked.wait().unwrap();
        assert!(members(root, &mark).is_empty());
    }

    #[test]
    fn a_child_spawned_from_a_short_lived_thread_outlives_that_thread() {
        // Forked from the short-lived thread itself, its parent-death signal would kill it when that ends.
        let mut child = std::thread::spawn(|| {
            let mut command = Command::new("sleep");
            command.arg("60");
            spawn(command).unwrap()
        })
        .join()
        .unwrap();
        std::thread::sleep(Duration::from_millis(200));
        assert!(
            child.try_wait().unwrap().is_none(),
            "it died with the thread"
        );
        child.kill().unwrap();
        child.wait().unwrap();
    }
}
