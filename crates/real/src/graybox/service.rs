//! The service under test as a child process the probe owns: `sh -c CMD` in a process group of its own, its
//! output in a bounded ring (the tail explains a service that does not start), ready once its port answers HTTP.
//!
//! A crash must be one: killing takes the service's whole process tree (its group, descendants that left it,
//! anything carrying its mark: see `proc_tree`), waits until all of it is gone and its port refuses
//! connections, and only then starts it again; so the answer after a restart comes from a new process. A
//! service that daemonises (its shell exits while what it started keeps serving) is refused: each "crash"
//! would have killed nothing. Killed and reaped on drop, and by `lifeline` however the probe dies.

use super::lifeline::{self, Watchdog};
use super::output_ring::{Feeder, OutputRing, RING_BYTES};
use super::port_owner;
use super::proc_tree::{self, MARK_VAR};
use crate::stack::http::{exchange, HttpRequest, Url};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// Lines of the service's output shown when it fails to start.
pub const TAIL_LINES: usize = 20;
/// Bytes from the end of the output looked at for the tail.
const TAIL_BYTES_MAX: usize = 16 << 10;
/// Between two readiness tries (the service is starting: nothing to wait on but its port).
const READY_POLL: Duration = Duration::from_millis(25);
/// How long a SIGKILLed tree may take to be gone (each process dies when next scheduled: this is generous).
pub const KILL_WAIT: Duration = Duration::from_secs(5);
/// How long the port may keep accepting once the tree is gone (nothing of ours listens: it should be at once).
pub const PORT_QUIET_WAIT: Duration = Duration::from_secs(5);
/// A loopback connect is answered at once (accepted or refused): this bounds a port that drops packets.
const CONNECT_TIMEOUT: Duration = Duration::from_millis(500);
/// How long a launch's output may take to reach the ring once the service exited.
const OUTPUT_DRAIN: Duration = Duration::from_millis(500);

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
    #[error(
        "the service daemonised: its process exited ({status}) while {left}; run it in the foreground \
         (no fork-and-exit, no `&` at the end of --exec): killing it would crash nothing"
    )]
    Daemonised { status: ExitStatus, left: String },
    #[error(
        "processes of the service were still alive {:?} after SIGKILL: {pids:?}",
        KILL_WAIT
    )]
    Unkillable { pids: Vec<i32> },
    #[error(
        "{url} still accepted connections {:?} after {when}: another process listens on the service's \
         port{listeners}",
        PORT_QUIET_WAIT
    )]
    PortBusy {
        url: String,
        when: &'static str,
        /// Who listens, when /proc says (`port_owner::describe`).
        listeners: String,
    },
}

/// A mark unique to each `Service` of this probe (the pid keeps probes on one machine apart).
fn new_mark() -> String {
    static SERVICES: AtomicUsize = AtomicUsize::new(0);
    format!(
        "{}-{}",
        std::process::id(),
        SERVICES.fetch_add(1, Ordering::Relaxed)
    )
}

pub struct Service {
    spec: ServiceSpec,
    child: Option<Child>,
    output: OutputRing,
    /// The current launch's output thread.
    feeder: Option<Feeder>,
    /// In the environment of all the service's processes (see `proc_tree`).
    mark: String,
    /// What the last kill found wrong, reported by the next restart (`kill` itself cannot fail).
    pending: Option<ServiceError>,
    /// Dropped after `kill` ran in `drop`.
    _watchdog: Watchdog,
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
        let mark = new_mark();
        let watchdog = Watchdog::start(&mark).map_err(|error| ServiceError::Spawn {
            command: spec.command.clone(),
            error,
        })?;
        let mut service = Service {
            spec,
            child: None,
            output: OutputRing::new(RING_BYTES),
            feeder: None,
            mark,
            pending: None,
            _watchdog: watchdog,
            starts: 0,
        };
        service.launch().await?;
        Ok(service)
    }

    async fn launch(&mut self) -> Result<(), ServiceError> {
        // Whatever answers before the launch is not the service being started: its answer would be a fake.
        if !self.port_quiet() {
            return Err(ServiceError::PortBusy {
                url: self.spec.url.to_text(),
                when: "before the service was started",
                listeners: port_owner::describe(self.spec.url.address.port()),
            });
        }
        let spawn_error = |error| ServiceError::Spawn {
            command: self.spec.command.clone(),
            error,
        };
        let (reader, writer) = super::output_ring::pipe().map_err(spawn_error)?;
        let stderr = writer.try_clone().map_err(spawn_error)?;
        let mut command = Command::new("sh");
        for name in &self.spec.env_removed {
            command.env_remove(name);
        }
        command
            .arg("-c")
            .arg(&self.spec.command)
            .envs(self.spec.env.iter().map(|(k, v)| (k, v)))
            .env(MARK_VAR, &self.mark)
            .stdin(Stdio::null())
            .stdout(writer)
            .stderr(stderr)
            .process_group(0);
        // The command (holding the pipe's writing ends) is dropped in `spawn`: the service holds the only ones.
        let child = lifeline::spawn(command).map_err(spawn_error)?;
        self.feeder = Some(self.output.feed(reader).map_err(spawn_error)?);
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
                return Err(self.exited_early(status));
            }
            if exchange(&self.spec.url, &probe, Duration::from_secs(2))
                .await
                .is_ok()
            {
                // An answer while the shell is gone came from something it left behind.
                return match self.exited() {
                    Some(status) => Err(self.exited_early(status)),
                    None => Ok(()),
                };
            }
            if started.elapsed() >= self.spec.start_timeout {
                self.kill();
                return Err(self.pending.take().unwrap_or(ServiceError::NeverAnswered {
                    url: self.spec.url.to_text(),
                    timeout: self.spec.start_timeout,
                    tail: self.tail(),
                }));
            }
            tokio::time::sleep(READY_POLL).await;
        }
    }

    /// The shell exited before the service was ready (or as it answered): what it left behind says whether it
    /// failed or daemonised. Its tree is killed either way.
    fn exited_early(&mut self, status: ExitStatus) -> ServiceError {
        let root = self.child.as_ref().map_or(0, |c| c.id() as i32);
        let answers = self.port_accepts();
        let left = !proc_tree::members(root, &self.mark).is_empty();
        self.kill();
        let pending = self.pending.take();
        if answers {
            return ServiceError::Daemonised {
                status,
                left: "its port kept answering".into(),
            };
        }
        if left && status.success() {
            return ServiceError::Daemonised {
                status,
                left: "processes it started kept running".into(),
            };
        }
        pending.unwrap_or_else(|| ServiceError::ExitedEarly {
            status,
            tail: self.tail(),
        })
    }

    fn exited(&mut self) -> Option<ExitStatus> {
        self.child.as_mut()?.try_wait().ok().flatten()
    }

    /// Whether something accepts a TCP connection on the service's port (a refused connect: nothing listens).
    fn port_accepts(&self) -> bool {
        std::net::TcpStream::connect_timeout(&self.spec.url.address, CONNECT_TIMEOUT).is_ok()
    }

    /// Whether the port refuses connections, waiting for it at most `PORT_QUIET_WAIT`. Only a refusal counts:
    /// a connect that times out may be a listener whose backlog is full.
    fn port_quiet(&self) -> bool {
        let started = Instant::now();
        loop {
            let connect =
                std::net::TcpStream::connect_timeout(&self.spec.url.address, CONNECT_TIMEOUT);
            if matches!(connect, Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused) {
                return true;
            }
            if started.elapsed() >= PORT_QUIET_WAIT {
                return false;
            }
            std::thread::sleep(READY_POLL);
        }
    }

    /// SIGKILL the whole process tree, wait until it is gone and the port refuses connections, and reap the
    /// shell. Nothing happens when it is not running. What went wrong is kept for the next `restart`: a shell
    /// that had exited while its port still answered (it daemonised), a process that would not die, a port
    /// something else holds.
    pub fn kill(&mut self) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        let exited = child.try_wait().ok().flatten();
        let answered = exited.is_some() && self.port_accepts();
        // The shell is reaped only after the tree is gone, so its pid (the group's id) cannot be reused meanwhile.
        let killed = proc_tree::kill_tree(child.id() as i32, &self.mark, KILL_WAIT);
        let _ = child.wait();
        if let Some(feeder) = &self.feeder {
            feeder.drained(OUTPUT_DRAIN);
        }
        let problem = match (killed, exited) {
            (Err(pids), _) => Some(ServiceError::Unkillable { pids }),
            (Ok(()), Some(status)) if answered => Some(ServiceError::Daemonised {
                status,
                left: "its port kept answering".into(),
            }),
            (Ok(()), _) if !self.port_quiet() => Some(ServiceError::PortBusy {
                url: self.spec.url.to_text(),
                when: "the service's processes were all killed",
                listeners: port_owner::describe(self.spec.url.address.port()),
            }),
            _ => None,
        };
        self.pending = self.pending.take().or(problem);
    }

    /// Kill it and start it again (same command, same environment); ready when this returns.
    pub async fn restart(&mut self) -> Result<(), ServiceError> {
        self.kill();
        if let Some(problem) = self.pending.take() {
            return Err(problem);
        }
        self.launch().await
    }

    /// The process id of the group leader (the shell), while it runs.
    pub fn process_group(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// The last lines of its output (stdout and stderr together), indented.
    pub fn tail(&self) -> String {
        let text = self.output.text();
        let mut from = text.len().saturating_sub(TAIL_BYTES_MAX);
        while !text.is_char_boundary(from) {
            from += 1;
        }
        let lines: Vec<&str> = text[from..].lines().collect();
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

    fn read_pid(path: &std::path::Path) -> u32 {
        (0..500)
            .find_map(|_| {
                let pid = std::fs::read_to_string(path)
                    .ok()
                    .and_then(|text| text.trim().parse().ok());
                if pid.is_none() {
                    std::thread::sleep(Duration::from_millis(10));
                }
                pid
            })
            .expect("the server wrote its pid")
    }

    /// A server on $PORT writing its pid to `pid_file`; `fork` makes it daemonise after binding (the parent
    /// exits 0, the child serves in a session of its own).
    fn python_server(pid_file: &std::path::Path, fork: bool) -> String {
        let fork = if fork {
            "os.fork() and os._exit(0); os.setsid(); "
        } else {
            ""
        };
        format!(
            "exec python3 -c 'import os, http.server as h; \
             s = h.HTTPServer((\"127.0.0.1\", int(os.environ[\"PORT\"])), h.SimpleHTTPRequestHandler); \
             {fork}open(\"{}\", \"w\").write(str(os.getpid())); s.serve_forever()'",
            pid_file.display()
        )
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_daemonising_service_is_refused_and_its_daemon_killed() {
        let port = crate::servers::free_loopback_port().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let pid_file = dir.path().join("daemon.pid");
        // Ready may be seen before or after the parent's exit: the start or the first crash refuses it.
        let error = match Service::start(spec(&python_server(&pid_file, true), port)).await {
            Err(error) => error,
            Ok(mut service) => service
                .restart()
                .await
                .expect_err("a crash that killed nothing"),
        };
        assert!(matches!(error, ServiceError::Daemonised { .. }), "{error}");
        assert!(
            error
                .to_string()
                .starts_with("the service daemonised: its process exited"),
            "{error}"
        );
        assert!(gone(read_pid(&pid_file)), "the daemon outlived the refusal");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_foreground_twin_restarts_as_a_new_process() {
        let port = crate::servers::free_loopback_port().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let pid_file = dir.path().join("server.pid");
        let mut service = Service::start(spec(&python_server(&pid_file, false), port))
            .await
            .unwrap();
        let first = read_pid(&pid_file);
        std::fs::remove_file(&pid_file).unwrap();
        service.restart().await.unwrap();
        assert!(gone(first));
        assert_ne!(read_pid(&pid_file), first);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_grandchild_that_left_the_group_dies_with_each_crash() {
        let port = crate::servers::free_loopback_port().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let pid_file = dir.path().join("stray.pid");
        let command = format!(
            "setsid sh -c 'echo $$ > {}; exec sleep 60' & {}",
            pid_file.display(),
            python_server(&dir.path().join("server.pid"), false)
        );
        let mut service = Service::start(spec(&command, port)).await.unwrap();
        let stray = read_pid(&pid_file);
        assert!(alive(stray));
        service.restart().await.unwrap();
        assert!(
            gone(stray),
            "the grandchild in a session of its own survived the kill"
        );
        let second = read_pid(&pid_file);
        drop(service);
        assert!(
            gone(second),
            "dropping the service left its grandchild running"
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_port_already_answering_is_refused_before_the_launch() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let dir = tempfile::tempdir().unwrap();
        let ran = dir.path().join("ran");
        let error = Service::start(spec(&format!("touch {}", ran.display()), port))
            .await
            .err()
            .expect("refused");
        assert!(
            error.to_string().contains("before the service was started"),
            "{error}"
        );
        assert!(
            error
                .to_string()
                .contains(&format!("(pid {}: ", std::process::id())),
            "{error}"
        );
        assert!(!ran.exists());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_tail_comes_from_a_bounded_ring() {
        let port = crate::servers::free_loopback_port().unwrap();
        // Far more output than the ring holds, then the line that explains the failure.
        let command = "yes filler | head -c 1000000; echo; echo the-real-reason >&2; exit 5";
        let error = Service::start(spec(command, port))
            .await
            .err()
            .expect("it exits");
        let text = error.to_string();
        assert!(
            text.contains("exited early") && text.ends_with("  the-real-reason"),
            "{text}"
        );
        assert!(text.lines().count() <= TAIL_LINES + 1, "{text}");
    }
}
