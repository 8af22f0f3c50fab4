//! Ctrl-C and SIGTERM during a command that writes files (check, simulate): remove the temporary files being
//! written (`retrylab::atomic`), then exit 130 (interrupt) or 143 (terminate), as a shell reports a process
//! killed by that signal. Without it a report's or a trace's `.tmpXXXXXX` could stay beside it.

/// Watch for the signals on a thread of its own (a one-thread runtime: tokio's signal handling is already a
/// dependency, for `serve`). Not used by the servers, which stop gracefully on the same signals.
#[cfg(unix)]
pub fn clean_up_on_signal() {
    use std::task::Poll;
    use tokio::signal::unix::{signal, SignalKind};
    let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .build()
    else {
        return; // no runtime, no cleanup: the default handling (exit at once) stays
    };
    // Installed here, before the command starts writing, so a signal at any later time is caught.
    let handlers = runtime.block_on(async {
        Some((
            signal(SignalKind::interrupt()).ok()?,
            signal(SignalKind::terminate()).ok()?,
        ))
    });
    let Some((mut interrupt, mut terminate)) = handlers else {
        return;
    };
    std::thread::spawn(move || {
        let code = runtime.block_on(std::future::poll_fn(|context| {
            if interrupt.poll_recv(context).is_ready() {
                return Poll::Ready(130);
            }
            if terminate.poll_recv(context).is_ready() {
                return Poll::Ready(143);
            }
            Poll::Pending
        }));
        let _held = retrylab::atomic::abandon_in_flight();
        std::process::exit(code);
    });
}

#[cfg(not(unix))]
pub fn clean_up_on_signal() {}
