//! The service under test as a child process the probe owns: `sh -c CMD` in a process group of its own (so a
//! `SIGKILL` to the group takes its workers and children too, as a machine crash would), its output in a file
//! (the tail explains a service that does not start), ready once its port answers HTTP. Killed and reaped on
//! drop, so no path out of the probe (an error, a signal's cancellation) leaves it running.

use crate::stack::http::{exchange, HttpRequest, Url};
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// Lines of the service's output shown when it fails to start.
pub const TAIL_LINES: usize = 20;
/// Bytes read from the end of the output for the tail.
const TAIL_BYTES_MAX: u64 = 16 << 10;
/// Between two readiness tries (the service is starting: nothing to wait on but its port).
const READY_POLL: Duration = Duration::from_millis(25);

/// How to start the service.
#[derive(Clone, Debug)]
pub struct ServiceSpec {
    /// Run with `sh -c`.
    pub command: String,
    pub env: Vec<(String, String)>,
    /// Inherited variables taken out of the service's environment (before `env` is applied).
    pub env_removed: Vec<String>,
    /// Asked (GET) until it answers anything: then the service is ready.
    pub url: Url,
    pub start_timeout: Duration,
}

/// Why the service could not be used (exit 2).
#[derive(Debug, thiserror::Error)]
pub enum ServiceError {
    #[error("the service did not start: sh -c {command:?}: {error}")]
    Spawn {
        command: String,
        error: std::io::Error,
    },
    #[error(
        "the service exited early ({status}){}; its last output:\n{tail}",
        scheme_hint(tail)
    )]
    ExitedEarly { status: ExitStatus, tail: String },
    #[error("the service never answered {url} within {timeout:?}; its last output:\n{tail}")]
    NeverAnswered {
        url: String,
        timeout: Duration,
        tail: String,
    },
}

pub struct Service {
    spec: ServiceSpec,
    child: Option<Child>,
    output: File,
    /// Starts so far (1 after the first).
    pub starts: usize,
}

/// What the probe GETs until the service answers.
const READY_PATH: &str = "/.well-known/retrylab-ready";

/// SQLAlchemy (and what is built on it) refuses `postgres://`, the scheme the user's `--postgres` had: say how
/// to give the service the one it takes, as the probe keeps the user's scheme.
fn scheme_hint(tail: &str) -> &'static str {
    if tail.contains("sqlalchemy.dialects:postgres") {
        " (SQLAlchemy refuses postgres:// URLs: give --postgres postgresql://..., the service's URL keeps its scheme)"
    } else {
        ""
    }
}

impl Service {
    /// Start it and wait until it answers.
    pub async fn start(spec: ServiceSpec) -> Result<Service, ServiceError> {
        let output = tempfile::tempfile().map_err(|error| ServiceError::Spawn {
            command: spec.command.clone(),
            error,
        })?;
        let mut service = Service {
            spec,
            child: None,
            output,
            starts: 0,
        };
        service.launch().await?;
        Ok(service)
    }

    async fn launch(&mut self) -> Result<(), ServiceError> {
        let spawn_error = |error| ServiceError::Spawn {
            command: self.spec.command.clone(),
            error,
        };
        let stdout = self.output.try_clone().map_err(spawn_error)?;
        let stderr = self.output.try_clone().map_err(spawn_error)?;
        let mut command = Command::new("sh");
        for name in &self.spec.env_removed {
            command.env_remove(name);
        }
        let child = command
            .arg("-c")
            .arg(&self.spec.command)
            .envs(self.spec.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(stdout)
            .stderr(stderr)
            .process_group(0)
            .spawn()
            .map_err(spawn_error)?;
        self.child = Some(child);
        self.starts += 1;
        self.wait_ready().await
    }

    /// Poll the port until an HTTP request gets any answer, watching for an early exit.
    async fn wait_ready(&mut self) -> Result<(), ServiceError> {
        let started = Instant::now();
        // A path no service serves: any answer (a 404) says it is up, and a GET of the checked path might run
        // queries on a pooled connection while the probe is idle, which would teach that it carries no request.
        let probe = HttpRequest::get(READY_PATH);
        loop {
            if let Some(status) = self.exited() {
                self.child = None;
                return Err(ServiceError::ExitedEarly {
                    status,
                    tail: self.tail(),
                });
            }
            if exchange(&self.spec.url, &probe, Duration::from_secs(2))
                .await
                .is_ok()
            {
                return Ok(());
            }
            if started.elapsed() >= self.spec.start_timeout {
                self.kill();
                return Err(ServiceError::NeverAnswered {
                    url: self.spec.url.to_text(),
                    timeout: self.spec.start_timeout,
                    tail: self.tail(),
                });
            }
            tokio::time::sleep(READY_POLL).await;
        }
    }

    fn exited(&mut self) -> Option<ExitStatus> {
        self.child.as_mut()?.try_wait().ok().flatten()
    }

    /// `SIGKILL` the whole process group and reap the shell. Nothing happens when it is not running.
    pub fn kill(&mut self) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        let group = child.id() as libc::pid_t;
        assert!(group > 0, "a child's process id is positive");
        // SAFETY: kill(2) with a negative pid signals the process group the child leads (process_group(0) made
        // it the leader); it touches no memory of ours.
        unsafe {
            libc::kill(-group, libc::SIGKILL);
        }
        let _ = child.wait();
    }

    /// Kill it and start it again (same command, same environment); ready when this returns.
    pub async fn restart(&mut self) -> Result<(), ServiceError> {
        self.kill();
        self.launch().await
    }

    /// The process id of the group leader (the shell), while it runs.
    pub fn process_group(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// The last lines of its output (stdout and stderr together), indented.
    pub fn tail(&self) -> String {
        let mut file = match self.output.try_clone() {
            Ok(file) => file,
            Err(error) => return format!("  (its output cannot be read: {error})"),
        };
        let length = file.metadata().map_or(0, |m| m.len());
        let mut text = String::new();
        let read = file
            .seek(SeekFrom::Start(length.saturating_sub(TAIL_BYTES_MAX)))
            .and_then(|_| file.read_to_string(&mut text));
        if read.is_err() {
            text = String::from_utf8_lossy(text.as_bytes()).into_owned();
        }
        let lines: Vec<&str> = text.lines().collect();
        let shown = &lines[lines.len().saturating_sub(TAIL_LINES)..];
        if shown.is_empty() {
            return "  (no output)".to_string();
        }
        shown
            .iter()
            .map(|line| format!("  {line}"))
            .collect::<Vec<_>>()
            .join("\n")
    }
}

impl Drop for Service {
    fn drop(&mut self) {
        self.kill();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(command: &str, port: u16) -> ServiceSpec {
        ServiceSpec {
            command: command.to_string(),
            env: vec![("PORT".into(), port.to_string())],
            env_removed: Vec::new(),
            url: Url::parse(&format!("http://127.0.0.1:{port}/")).unwrap(),
            start_timeout: Duration::from_secs(20),
        }
    }

    /// Running (a zombie waiting for its reaper counts as gone: it runs no code).
    fn alive(pid: u32) -> bool {
        std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
            !stat
                .rsplit(')')
                .next()
                .unwrap_or("")
                .trim_start()
                .starts_with('Z')
        })
    }

    /// Whether it is gone within a generous bound (a SIGKILLed process dies when next scheduled).
    fn gone(pid: u32) -> bool {
        (0..500).any(|_| {
            let gone = !alive(pid);
            if !gone {
                std::thread::sleep(Duration::from_millis(10));
            }
            gone
        })
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_early_exit_shows_the_tail_of_its_output() {
        let port = crate::servers::free_loopback_port().unwrap();
        let error = Service::start(spec("echo starting; echo boom >&2; exit 3", port))
            .await
            .err()
            .expect("it exits");
        let text = error.to_string();
        assert!(text.contains("exited early"), "{text}");
        assert!(text.contains("starting") && text.contains("boom"), "{text}");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_silent_service_never_answers() {
        let port = crate::servers::free_loopback_port().unwrap();
        let mut quiet = spec("echo waiting; sleep 30", port);
        quiet.start_timeout = Duration::from_millis(300);
        let error = Service::start(quiet).await.err().expect("no answer");
        assert!(error.to_string().contains("never answered"), "{error}");
        assert!(error.to_string().contains("waiting"), "{error}");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn kill_takes_the_whole_group_and_restart_answers_again() {
        let port = crate::servers::free_loopback_port().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let pid_file = dir.path().join("server.pid");
        let command = format!(
            "python3 -m http.server $PORT --bind 127.0.0.1 & echo $! > {}; wait",
            pid_file.display()
        );
        let mut service = Service::start(spec(&command, port)).await.unwrap();
        let server: u32 = std::fs::read_to_string(&pid_file)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        assert!(alive(server));
        service.restart().await.unwrap();
        assert!(
            gone(server),
            "the first server (a grandchild) survived the kill"
        );
        let second: u32 = std::fs::read_to_string(&pid_file)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        assert_ne!(second, server);
        drop(service);
        assert!(gone(second), "dropping the service left its server running");
    }
}
