//! The real stores' URLs (`--postgres`, `--redis`), checked before anything runs: every host the client would
//! contact (the URL's host, libpq's `host=` and `hostaddr=` query parameters) must be loopback, and a list of
//! hosts is refused (a client would fail over to the next one, past the gate). From them come the URLs the
//! service is given, which point at the gates instead, and the connection the probe itself uses to count and
//! reset (directly, never through a gate).

use std::net::{IpAddr, Ipv4Addr, SocketAddr};

/// The real PostgreSQL: where it is and who to be. User, password and database stay as written in the URL
/// (percent-encoded), so the gate's URL carries them unchanged.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PostgresTarget {
    pub address: SocketAddr,
    pub user: String,
    pub password: Option<String>,
    pub database: String,
}

/// The real Redis.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RedisTarget {
    pub address: SocketAddr,
    /// `user:password` or `:password`, as written.
    pub auth: Option<String>,
    /// The database number path (`/2`), as written.
    pub database: Option<String>,
}

/// A host the client would contact: loopback IP addresses and `localhost` only (no other name is resolved).
fn loopback_host(host: &str, field: &str) -> Result<IpAddr, String> {
    if host.contains(',') {
        return Err(format!(
            "{field}: several hosts '{host}': give one loopback host (a client fails over past the gate)"
        ));
    }
    if host.starts_with('/') || host.starts_with("%2F") || host.starts_with("%2f") {
        return Err(format!(
            "{field}: '{host}' is a Unix socket: give a loopback TCP address (127.0.0.1)"
        ));
    }
    if host.eq_ignore_ascii_case("localhost") {
        return Ok(IpAddr::V4(Ipv4Addr::LOCALHOST));
    }
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    match bare.parse::<IpAddr>() {
        Ok(ip) if ip.is_loopback() => Ok(ip),
        Ok(ip) => Err(format!(
            "{field}: {ip} is not a loopback address: only 127.0.0.0/8 and ::1 are allowed"
        )),
        Err(_) => Err(format!(
            "{field}: host '{host}' is not a loopback address (only IP addresses and localhost; no name is resolved)"
        )),
    }
}

/// `HOST[:PORT]` with an IPv6 host in brackets.
fn split_host_port(
    authority: &str,
    port_default: u16,
    field: &str,
) -> Result<(String, u16), String> {
    let (host, port) = if let Some(rest) = authority.strip_prefix('[') {
        let (host, after) = rest
            .split_once(']')
            .ok_or_else(|| format!("{field}: unclosed '[' in '{authority}'"))?;
        (format!("[{host}]"), after.strip_prefix(':'))
    } else {
        match authority.rsplit_once(':') {
            Some((host, port)) => (host.to_string(), Some(port)),
            None => (authority.to_string(), None),
        }
    };
    let port = match port {
        Some(text) => text
            .parse::<u16>()
            .map_err(|_| format!("{field}: '{text}' is not a port number"))?,
        None => port_default,
    };
    Ok((host, port))
}

/// `scheme://[userinfo@]hostlist[/path][?query]` cut into its parts.
struct Parts<'a> {
    userinfo: Option<&'a str>,
    hosts: &'a str,
    path: &'a str,
    query: Vec<(&'a str, &'a str)>,
}

fn cut<'a>(text: &'a str, schemes: &[&str], field: &str) -> Result<Parts<'a>, String> {
    let rest = schemes
        .iter()
        .find_map(|scheme| text.strip_prefix(scheme))
        .ok_or_else(|| {
            format!(
                "{field}: '{text}' does not start with {}",
                schemes.join(" or ")
            )
        })?;
    let (rest, query) = match rest.split_once('?') {
        Some((rest, query)) => (rest, query),
        None => (rest, ""),
    };
    let (authority, path) = match rest.find('/') {
        Some(at) => (&rest[..at], &rest[at + 1..]),
        None => (rest, ""),
    };
    let (userinfo, hosts) = match authority.rsplit_once('@') {
        Some((userinfo, hosts)) => (Some(userinfo), hosts),
        None => (None, authority),
    };
    let query = query
        .split('&')
        .filter(|pair| !pair.is_empty())
        .map(|pair| pair.split_once('=').unwrap_or((pair, "")))
        .collect();
    Ok(Parts {
        userinfo,
        hosts,
        path,
        query,
    })
}

/// Parse and check `--postgres` (`postgres://` or `postgresql://`).
pub fn parse_postgres(text: &str) -> Result<PostgresTarget, String> {
    let field = "--postgres";
    let parts = cut(text, &["postgres://", "postgresql://"], field)?;
    if parts.hosts.contains(',') {
        return Err(format!(
            "{field}: several hosts '{}': give one loopback host (a client fails over past the gate)",
            parts.hosts
        ));
    }
    let (mut host, mut port) = split_host_port(parts.hosts, 5432, field)?;
    let (mut user, mut password) = match parts.userinfo {
        Some(info) => match info.split_once(':') {
            Some((user, password)) => (user.to_string(), Some(password.to_string())),
            None => (info.to_string(), None),
        },
        None => ("postgres".to_string(), None),
    };
    let mut database = parts.path.to_string();
    let mut hostaddr = None;
    for (name, value) in &parts.query {
        match *name {
            "host" => host = value.to_string(),
            "hostaddr" => hostaddr = Some(value.to_string()),
            "port" => {
                port = value
                    .parse()
                    .map_err(|_| format!("{field}: port={value} is not a port number"))?
            }
            "user" => user = value.to_string(),
            "password" => password = Some(value.to_string()),
            "dbname" => database = value.to_string(),
            _ => {}
        }
    }
    if host.is_empty() && hostaddr.is_none() {
        return Err(format!(
            "{field}: no host (a client would use a Unix socket): give 127.0.0.1"
        ));
    }
    let mut ip = None;
    if !host.is_empty() {
        ip = Some(loopback_host(&host, field)?);
    }
    if let Some(addr) = &hostaddr {
        ip = Some(loopback_host(addr, &format!("{field} hostaddr"))?);
    }
    if database.is_empty() {
        database = user.clone();
    }
    Ok(PostgresTarget {
        address: SocketAddr::new(ip.expect("a host was checked above"), port),
        user,
        password,
        database,
    })
}

/// Parse and check `--redis` (`redis://`; TLS and Unix sockets refused).
pub fn parse_redis(text: &str) -> Result<RedisTarget, String> {
    let field = "--redis";
    let parts = cut(text, &["redis://"], field)?;
    if parts.hosts.is_empty() {
        return Err(format!("{field}: no host: give 127.0.0.1"));
    }
    let (host, port) = split_host_port(parts.hosts, 6379, field)?;
    let ip = loopback_host(&host, field)?;
    if !parts.path.is_empty() && parts.path.parse::<u32>().is_err() {
        return Err(format!(
            "{field}: '/{}' is not a database number",
            parts.path
        ));
    }
    Ok(RedisTarget {
        address: SocketAddr::new(ip, port),
        auth: parts.userinfo.map(str::to_string),
        database: (!parts.path.is_empty()).then(|| parts.path.to_string()),
    })
}

/// `%XX` decoded (for the `PGUSER`-style variables and the probe's own connection).
pub fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut at = 0;
    while at < bytes.len() {
        let hex = bytes.get(at + 1..at + 3).and_then(|pair| {
            std::str::from_utf8(pair)
                .ok()
                .and_then(|pair| u8::from_str_radix(pair, 16).ok())
        });
        match (bytes[at], hex) {
            (b'%', Some(byte)) => {
                out.push(byte);
                at += 3;
            }
            (byte, _) => {
                out.push(byte);
                at += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

impl PostgresTarget {
    /// The service's `DATABASE_URL`: the gate's address, TLS off (the gate answers SSLRequest with `N`).
    pub fn gate_url(&self, gate: SocketAddr) -> String {
        let password = self
            .password
            .as_ref()
            .map_or(String::new(), |p| format!(":{p}"));
        format!(
            "postgres://{}{password}@{gate}/{}?sslmode=disable",
            self.user, self.database
        )
    }

    /// The service's `JDBC_DATABASE_URL`.
    pub fn jdbc_url(&self, gate: SocketAddr) -> String {
        let password = self
            .password
            .as_ref()
            .map_or(String::new(), |p| format!("&password={p}"));
        format!(
            "jdbc:postgresql://{gate}/{}?user={}{password}",
            self.database, self.user
        )
    }

    /// The probe's own connection to the real database (count and reset), built from the checked parts only.
    pub fn direct_config(&self) -> postgres::Config {
        let mut config = postgres::Config::new();
        config
            .hostaddr(self.address.ip())
            .host(&self.address.ip().to_string())
            .port(self.address.port())
            .user(&percent_decode(&self.user))
            .dbname(&percent_decode(&self.database))
            .connect_timeout(std::time::Duration::from_secs(10));
        if let Some(password) = &self.password {
            config.password(percent_decode(password));
        }
        config
    }
}

impl RedisTarget {
    /// The service's `REDIS_URL`: the gate's address, the same credentials and database.
    pub fn gate_url(&self, gate: SocketAddr) -> String {
        let auth = self
            .auth
            .as_ref()
            .map_or(String::new(), |a| format!("{a}@"));
        let database = self
            .database
            .as_ref()
            .map_or(String::new(), |d| format!("/{d}"));
        format!("redis://{auth}{gate}{database}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_postgres_urls_are_accepted_and_pointed_at_the_gate() {
        let target = parse_postgres("postgres://app:s%40cret@127.0.0.1:5433/payments").unwrap();
        assert_eq!(target.address, "127.0.0.1:5433".parse().unwrap());
        assert_eq!(target.database, "payments");
        let gate: SocketAddr = "127.0.0.1:7000".parse().unwrap();
        assert_eq!(
            target.gate_url(gate),
            "postgres://app:s%40cret@127.0.0.1:7000/payments?sslmode=disable"
        );
        assert_eq!(
            target.jdbc_url(gate),
            "jdbc:postgresql://127.0.0.1:7000/payments?user=app&password=s%40cret"
        );
        let plain = parse_postgres("postgresql://postgres@localhost/postgres").unwrap();
        assert_eq!(plain.address, "127.0.0.1:5432".parse().unwrap());
        let six = parse_postgres("postgres://u@[::1]:6000/d").unwrap();
        assert_eq!(six.address, "[::1]:6000".parse().unwrap());
        assert_eq!(percent_decode("s%40cret%2"), "s@cret%2");
    }

    #[test]
    fn every_host_a_client_would_contact_is_checked() {
        let refused = [
            ("postgres://u@10.0.0.5:5432/d", "not a loopback"),
            ("postgres://u@db.example.com/d", "no name is resolved"),
            ("postgres://u@127.0.0.1/d?host=10.1.1.1", "not a loopback"),
            ("postgres://u@127.0.0.1/d?hostaddr=192.168.0.1", "hostaddr"),
            ("postgres://u@127.0.0.1:1,127.0.0.2:2/d", "several hosts"),
            (
                "postgres://u@127.0.0.1/d?host=127.0.0.1,10.0.0.1",
                "several hosts",
            ),
            ("postgres://u@/d", "Unix socket"),
            (
                "postgres://u@127.0.0.1/d?host=/var/run/postgresql",
                "Unix socket",
            ),
            ("mysql://u@127.0.0.1/d", "does not start with"),
            ("redis://10.0.0.1:6379", "not a loopback"),
            ("rediss://127.0.0.1:6379", "does not start with"),
            ("redis://127.0.0.1:6379/x", "database number"),
        ];
        for (url, why) in refused {
            let message = if url.starts_with("redis") {
                parse_redis(url).unwrap_err()
            } else {
                parse_postgres(url).unwrap_err()
            };
            assert!(message.contains(why), "{url}: {message}");
        }
        // host= on loopback overrides a loopback authority: accepted.
        assert!(parse_postgres("postgres://u@localhost/d?host=127.0.0.2").is_ok());
    }

    #[test]
    fn redis_urls_keep_credentials_and_database() {
        let target = parse_redis("redis://:pw@127.0.0.1:6380/2").unwrap();
        let gate: SocketAddr = "127.0.0.1:7001".parse().unwrap();
        assert_eq!(target.gate_url(gate), "redis://:pw@127.0.0.1:7001/2");
        let bare = parse_redis("redis://localhost").unwrap();
        assert_eq!(bare.gate_url(gate), "redis://127.0.0.1:7001");
        assert_eq!(bare.address.port(), 6379);
    }
}
