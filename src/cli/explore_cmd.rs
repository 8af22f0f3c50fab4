//! `retrylab explore MODEL --listen 127.0.0.1:PORT`: serve the walk-by-hand page on loopback until stopped.
//! Only loopback addresses are accepted: the page runs the model for whoever reaches it, and nobody else
//! should. Port 0 picks a free port; the address is the first line printed, for people and for tests.

use super::explore_server::{router, Session};
use super::{names, ExploreArgs, EXIT_BAD_INPUT};
use retrylab::spec;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;

pub fn run(args: &ExploreArgs) -> i32 {
    let address = match parse_listen(&args.listen) {
        Ok(address) => address,
        Err(message) => {
            errln!("error: --listen {}: {message}", args.listen);
            return EXIT_BAD_INPUT;
        }
    };
    let model = match spec::load_model(&args.model) {
        Ok(model) => model,
        Err(error) => {
            errln!("error: {error}");
            return EXIT_BAD_INPUT;
        }
    };
    let stem = names::unique_names(&[model.path.as_str()]).remove(0).stem;
    let session = Arc::new(Session {
        model,
        stem,
        traces: args.traces.clone(),
    });
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            errln!("error: cannot start the server's runtime: {error}");
            return EXIT_BAD_INPUT;
        }
    };
    runtime.block_on(serve(address, session))
}

async fn serve(address: SocketAddr, session: Arc<Session>) -> i32 {
    let listener = match tokio::net::TcpListener::bind(address).await {
        Ok(listener) => listener,
        Err(error) => {
            errln!("error: --listen {address}: cannot listen: {error}");
            return EXIT_BAD_INPUT;
        }
    };
    let bound = listener.local_addr().unwrap_or(address);
    outln!("listening on http://{bound}/");
    // The one stdout line (a reader that takes it and closes the pipe must not stop the server: a write to a
    // closed stdout ends the command); the rest is for people, on stderr.
    errln!("exploring {} by hand; stop with Ctrl-C", session.model.path);
    match axum::serve(listener, router(session)).await {
        Ok(()) => super::EXIT_OK,
        Err(error) => {
            errln!("error: the server stopped: {error}");
            EXIT_BAD_INPUT
        }
    }
}

/// `IP:PORT` (or `localhost:PORT`) on a loopback address.
fn parse_listen(text: &str) -> Result<SocketAddr, String> {
    let address: SocketAddr = match text.strip_prefix("localhost:") {
        Some(port) => {
            let port: u16 = port
                .parse()
                .map_err(|_| format!("'{port}' is not a port number"))?;
            SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port)
        }
        None => text
            .parse()
            .map_err(|_| "expected IP:PORT, e.g. 127.0.0.1:8470 or [::1]:0".to_string())?,
    };
    if !address.ip().is_loopback() {
        return Err(format!(
            "{} is not a loopback address: explore serves this machine only (127.0.0.0/8 or ::1)",
            address.ip()
        ));
    }
    Ok(address)
}

#[cfg(test)]
mod tests {
    use super::parse_listen;

    #[test]
    fn only_loopback_addresses_are_accepted() {
        assert_eq!(parse_listen("127.0.0.1:0").unwrap().port(), 0);
        assert!(parse_listen("127.3.4.5:80").is_ok());
        assert!(parse_listen("[::1]:8080").is_ok());
        assert!(parse_listen("localhost:9").unwrap().ip().is_loopback());
        for refused in ["0.0.0.0:80", "192.168.1.2:80", "[::]:80", "8.8.8.8:53"] {
            let message = parse_listen(refused).unwrap_err();
            assert!(
                message.contains("not a loopback address"),
                "{refused}: {message}"
            );
        }
        assert!(parse_listen("127.0.0.1").is_err());
        assert!(parse_listen("localhost:x").is_err());
    }
}
