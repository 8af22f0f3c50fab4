//! Addresses this project's servers and clients may use: loopback only (127.0.0.0/8, ::1). `retrylab serve`,
//! `explore`, the proxy and the probe all parse their addresses here, so they refuse alike. Store URLs
//! (`check_postgres_url`, `check_redis_url`) are parsed by the client crate that will use them, and every host that
//! client could contact is checked: a hand-made parse of the URL's authority misses `?host=` and multi-host lists.
//! Unix sockets are allowed: a socket path is on this machine and reaches no network address.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};

/// `IP:PORT` or `localhost:PORT`, refused unless loopback.
pub fn loopback_address(authority: &str) -> Result<SocketAddr, String> {
    let address: SocketAddr = match authority.strip_prefix("localhost:") {
        Some(port) => {
            let port: u16 = port
                .parse()
                .map_err(|_| format!("'{port}' is not a port number"))?;
            SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port)
        }
        None => authority
            .parse()
            .map_err(|_| format!("'{authority}' is not IP:PORT (e.g. 127.0.0.1:8080)"))?,
    };
    if !address.ip().is_loopback() {
        return Err(format!(
            "{} is not a loopback address: only 127.0.0.0/8 and ::1 are allowed",
            address.ip()
        ));
    }
    Ok(address)
}

/// Whether a host name as a client would resolve it is loopback: `localhost`, or a loopback IP literal
/// (`[::1]` with or without brackets). Other names are refused: what they resolve to is not ours to decide.
pub fn host_is_loopback(host: &str) -> bool {
    let bare = host
        .strip_prefix('[')
        .and_then(|inner| inner.strip_suffix(']'))
        .unwrap_or(host);
    bare.eq_ignore_ascii_case("localhost")
        || bare.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

fn refuse_host(url: &str, host: &str) -> String {
    format!("{url}: host '{host}' is not loopback: only 127.0.0.0/8, ::1 and localhost are allowed")
}

/// A PostgreSQL connection string (URL or `key=value` form) whose every host and `hostaddr` is loopback (or a
/// Unix socket folder). Parsed by the `postgres` crate itself, so `?host=`, `hostaddr=` and `host1,host2` lists
/// are seen as the client will see them.
pub fn check_postgres_url(url: &str) -> Result<(), String> {
    use postgres::config::Host;
    let config: postgres::Config = url
        .parse()
        .map_err(|error| format!("{url}: not a PostgreSQL connection string: {error}"))?;
    if config.get_hosts().is_empty() && config.get_hostaddrs().is_empty() {
        return Err(format!("{url}: no host (name 127.0.0.1 or localhost)"));
    }
    for host in config.get_hosts() {
        match host {
            Host::Tcp(name) if !host_is_loopback(name) => return Err(refuse_host(url, name)),
            _ => {}
        }
    }
    for address in config.get_hostaddrs() {
        if !address.is_loopback() {
            return Err(refuse_host(url, &address.to_string()));
        }
    }
    Ok(())
}

/// A Redis URL (`redis://`, `rediss://`, `redis+unix://`, `unix://`) on a loopback host or a Unix socket, as the
/// `redis` crate parses it.
#[cfg(feature = "stack")]
pub fn check_redis_url(url: &str) -> Result<(), String> {
    use redis::{ConnectionAddr, IntoConnectionInfo};
    let info = url
        .into_connection_info()
        .map_err(|error| format!("{url}: not a Redis URL: {error}"))?;
    match info.addr() {
        ConnectionAddr::Tcp(host, _) | ConnectionAddr::TcpTls { host, .. } => {
            if host_is_loopback(host) {
                Ok(())
            } else {
                Err(refuse_host(url, host))
            }
        }
        ConnectionAddr::Unix(_) => Ok(()),
        // A kind of address this version does not know yet: refuse rather than guess.
        _ => Err(format!("{url}: an address kind this check does not know")),
    }
}

#[cfg(test)]
mod tests {
    use super::loopback_address;

    #[test]
    fn only_loopback_addresses_are_accepted() {
        assert_eq!(loopback_address("127.0.0.1:0").unwrap().port(), 0);
        assert!(loopback_address("127.3.4.5:80").is_ok());
        assert!(loopback_address("[::1]:8080").is_ok());
        assert!(loopback_address("localhost:9").unwrap().ip().is_loopback());
        for refused in ["0.0.0.0:80", "192.168.1.2:80", "[::]:80", "8.8.8.8:53"] {
            let message = loopback_address(refused).unwrap_err();
            assert!(
                message.contains("not a loopback address"),
                "{refused}: {message}"
            );
        }
        assert!(loopback_address("127.0.0.1").is_err());
        assert!(loopback_address("localhost:x").is_err());
    }

    #[test]
    fn postgres_urls_are_checked_host_by_host() {
        use super::check_postgres_url;
        for allowed in [
            "postgres://postgres@127.0.0.1:5432/postgres",
            "postgresql://u@localhost/db",
            "postgres://u@[::1]:5432/db",
            "postgres://u@127.0.0.1,127.0.0.2:5433/db",
            "host=127.0.0.1 port=5432 user=postgres",
            "postgres://u@127.0.0.1/db?hostaddr=127.0.0.1",
            // A Unix socket folder: on this machine, no network address.
            "postgres://u@%2Ftmp%2Fpg/db",
            "host=/var/run/postgresql user=postgres",
        ] {
            assert_eq!(check_postgres_url(allowed), Ok(()), "{allowed}");
        }
        for refused in [
            "postgres://u:p@db.example.com/x",
            // The query's host replaces the authority's: the old authority-only check let these through.
            "postgres://u@127.0.0.1/db?host=10.0.0.1",
            "postgres://u@127.0.0.1/db?host=db.example.com",
            "postgres://u@127.0.0.1,10.1.2.3/db",
            "postgres://u@127.0.0.1/db?hostaddr=192.168.1.1",
            "host=127.0.0.1,8.8.8.8 user=postgres",
            "host=localhost hostaddr=10.0.0.1 user=postgres",
            "postgres://u@/db",
        ] {
            assert!(check_postgres_url(refused).is_err(), "{refused}");
        }
        assert!(
            check_postgres_url("postgres://u@127.0.0.1/db?host=10.0.0.1")
                .unwrap_err()
                .contains("host '10.0.0.1' is not loopback")
        );
    }

    #[cfg(feature = "stack")]
    #[test]
    fn redis_urls_are_checked_as_the_client_parses_them() {
        use super::check_redis_url;
        for allowed in [
            "redis://127.0.0.1:6379",
            "redis://localhost:6379/0",
            "redis://[::1]:6379",
            "redis://:secret@127.0.0.1:6379",
            "redis+unix:///tmp/redis.sock",
        ] {
            assert_eq!(check_redis_url(allowed), Ok(()), "{allowed}");
        }
        for refused in [
            "redis://10.1.2.3:6379",
            "redis://cache.example.com",
            "redis://127.0.0.1@evil.example.com:6379",
            // The old split at the last '@' saw 127.0.0.1 in these; the client goes to evil.example.com.
            "redis://evil.example.com#@127.0.0.1",
            "redis://evil.example.com?@127.0.0.1:6379",
            "redis://0.0.0.0:6379",
            "http://127.0.0.1:6379",
        ] {
            assert!(check_redis_url(refused).is_err(), "{refused}");
        }
    }
}
