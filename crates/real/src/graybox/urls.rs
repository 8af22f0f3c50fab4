//! The real stores' URLs (`--postgres`, `--redis`), checked before anything runs: every host the client would
//! contact (the URL's host, libpq's `host=` and `hostaddr=` query parameters) must be loopback, and a list of
//! hosts is refused (a client would fail over to the next one, past the gate). From them come the URLs the
//! service is given, which point at the gates instead, and the connection the probe itself uses to count and
//! reset (directly, never through a gate).

use std::net::{IpAddr, Ipv4Addr, SocketAddr};

/// The real PostgreSQL: where it is and who to be. User, password and database are kept decoded; the URLs the
/// service is given are built from them, each part percent-encoded, so that no character of theirs (an `@`, a
/// `,`, a `/`, a `&`) can end a part early and send a client elsewhere.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PostgresTarget {
    pub address: SocketAddr,
    /// The scheme as the user wrote it (`postgres` or `postgresql`): the service's URL keeps it, as some
    /// clients accept only one (SQLAlchemy refuses `postgres://`).
    pub scheme: String,
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
    let (mut user, mut password) = postgres_userinfo(parts.userinfo, field)?;
    let mut database = percent_decode(parts.path);
    let mut hostaddr = None;
    for (name, value) in &parts.query {
        let value = percent_decode(value);
        match *name {
            "host" => host = value,
            "hostaddr" => hostaddr = Some(value),
            "port" => {
                port = value
                    .parse()
                    .map_err(|_| format!("{field}: port={value} is not a port number"))?
            }
            "user" => user = value,
            "password" => password = Some(value),
            "dbname" => database = value,
            "sslmode" => refuse_tls(&value, field)?,
            "service" => {
                return Err(format!(
                    "{field}: service={value}: a service file names hosts the probe cannot check; give the \
                     host, port, user and database in the URL"
                ))
            }
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
        scheme: text[..text.find("://").expect("cut checked the scheme")].to_string(),
        user,
        password,
        database,
    })
}

/// `user[:password]`, decoded. A raw `@` in it is refused: libpq ends the user information at the first `@`,
/// other parsers at the last, so `u:p@127.0.0.3:5999,x@127.0.0.1` names two different hosts to two clients.
fn postgres_userinfo(
    userinfo: Option<&str>,
    field: &str,
) -> Result<(String, Option<String>), String> {
    let Some(info) = userinfo else {
        return Ok(("postgres".to_string(), None));
    };
    if info.contains('@') {
        return Err(format!(
            "{field}: '@' in the user or password: percent-encode it as %40 (clients disagree on which '@' ends \
             the user information)"
        ));
    }
    Ok(match info.split_once(':') {
        Some((user, password)) => (percent_decode(user), Some(percent_decode(password))),
        None => (percent_decode(info), None),
    })
}

/// `sslmode=require`, `verify-ca` and `verify-full` cannot be kept: the gate speaks plain TCP on loopback (it
/// answers a TLS request with `N`), and a client that insists on TLS would fail. Said by name, not ignored.
fn refuse_tls(mode: &str, field: &str) -> Result<(), String> {
    match mode {
        "disable" | "allow" | "prefer" => Ok(()),
        "require" | "verify-ca" | "verify-full" => Err(format!(
            "{field}: sslmode={mode}: the gates speak plain TCP on loopback and cannot pass TLS through; give \
             sslmode=disable (or leave it out: the service is given sslmode=disable)"
        )),
        other => Err(format!(
            "{field}: sslmode={other} is not a libpq sslmode (disable, allow, prefer, require, verify-ca, \
             verify-full)"
        )),
    }
}

/// A URL part percent-encoded: everything but RFC 3986's unreserved characters, so a client's parser (libpq's,
/// a JDBC driver's, a framework's) reads back exactly the decoded text, whatever it is.
pub fn percent_encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~".contains(&byte) {
            out.push(byte as char);
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

/// Parse and check `--redis` (`redis://`; TLS and Unix sockets refused).
pub fn parse_redis(text: &str) -> Result<RedisTarget, String> {
    let field = "--redis";
    let parts = cut(text, &["redis://"], field)?;
    if parts.hosts.is_empty() {
        return Err(format!("{field}: no host: give 127.0.0.1"));
    }
    if parts.userinfo.is_some_and(|info| info.contains('@')) {
        return Err(format!(
            "{field}: '@' in the user or password: percent-encode it as %40 (clients disagree on which '@' ends \
             the user information)"
        ));
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
    /// The service's `DATABASE_URL`: the user's scheme, the gate's address, TLS off (the gate answers
    /// SSLRequest with `N`); every part percent-encoded.
    pub fn gate_url(&self, gate: SocketAddr) -> String {
        let password = self
            .password
            .as_ref()
            .map_or(String::new(), |p| format!(":{}", percent_encode(p)));
        format!(
            "{}://{}{password}@{gate}/{}?sslmode=disable",
            self.scheme,
            percent_encode(&self.user),
            percent_encode(&self.database)
        )
    }

    /// The service's `JDBC_DATABASE_URL` (pgjdbc decodes the database and each parameter's value).
    pub fn jdbc_url(&self, gate: SocketAddr) -> String {
        let password = self.password.as_ref().map_or(String::new(), |p| {
            format!("&password={}", percent_encode(p))
        });
        format!(
            "jdbc:postgresql://{gate}/{}?user={}{password}&sslmode=disable",
            percent_encode(&self.database),
            percent_encode(&self.user)
        )
    }

    /// The probe's own connection to the real database (count and reset), built from the checked parts only.
    pub fn direct_config(&self) -> postgres::Config {
        let mut config = postgres::Config::new();
        config
            .hostaddr(self.address.ip())
            .host(&self.address.ip().to_string())
            .port(self.address.port())
            .user(&self.user)
            .dbname(&self.database)
            .connect_timeout(std::time::Duration::from_secs(10));
        if let Some(password) = &self.password {
            config.password(password);
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
        assert_eq!(target.password.as_deref(), Some("s@cret"));
        assert_eq!(
            target.gate_url(gate),
            "postgres://app:s%40cret@127.0.0.1:7000/payments?sslmode=disable"
        );
        assert_eq!(
            target.jdbc_url(gate),
            "jdbc:postgresql://127.0.0.1:7000/payments?user=app&password=s%40cret&sslmode=disable"
        );
        let plain = parse_postgres("postgresql://postgres@localhost/postgres").unwrap();
        assert_eq!(plain.address, "127.0.0.1:5432".parse().unwrap());
        // The user's scheme is kept: SQLAlchemy refuses postgres://.
        assert!(plain
            .gate_url(gate)
            .starts_with("postgresql://postgres@127.0.0.1:7000/"));
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
    fn the_services_url_is_built_from_parts_no_character_can_end_early() {
        // libpq ends the user information at the first '@': refused, not passed on.
        let two_hosts = "postgres://u:p@127.0.0.3:5999,x@127.0.0.1:5432/db";
        assert!(parse_postgres(two_hosts)
            .unwrap_err()
            .contains("percent-encode it as %40"));
        // Encoded, every hostile character stays inside its part.
        let hostile = parse_postgres(
            "postgres://u%2Cv:p%40127.0.0.3%3A5999%2Cx%26sslfactory%3Dx@127.0.0.1:5432/d%2Fb?user=us%26er",
        )
        .unwrap();
        assert_eq!(hostile.user, "us&er");
        assert_eq!(
            hostile.password.as_deref(),
            Some("p@127.0.0.3:5999,x&sslfactory=x")
        );
        assert_eq!(hostile.database, "d/b");
        let gate: SocketAddr = "127.0.0.1:7000".parse().unwrap();
        let url = hostile.gate_url(gate);
        assert_eq!(
            url,
            "postgres://us%26er:p%40127.0.0.3%3A5999%2Cx%26sslfactory%3Dx@127.0.0.1:7000/d%2Fb?sslmode=disable"
        );
        assert_eq!(url.matches('@').count(), 1, "{url}");
        let jdbc = hostile.jdbc_url(gate);
        assert_eq!(jdbc.matches('&').count(), 2, "{jdbc}");
        assert!(!jdbc.contains("sslfactory="), "{jdbc}");
        assert_eq!(percent_encode("a-Z_0.~"), "a-Z_0.~");
        assert_eq!(percent_decode(&percent_encode("é @/%")), "é @/%");
    }

    #[test]
    fn tls_the_gate_cannot_keep_is_refused_by_name() {
        for mode in ["require", "verify-ca", "verify-full"] {
            let error =
                parse_postgres(&format!("postgres://u@127.0.0.1/d?sslmode={mode}")).unwrap_err();
            assert!(
                error.contains(&format!("sslmode={mode}")) && error.contains("plain TCP"),
                "{error}"
            );
        }
        assert!(parse_postgres("postgres://u@127.0.0.1/d?sslmode=prefer").is_ok());
        assert!(parse_postgres("postgres://u@127.0.0.1/d?sslmode=disable").is_ok());
        assert!(parse_postgres("postgres://u@127.0.0.1/d?sslmode=bogus")
            .unwrap_err()
            .contains("not a libpq sslmode"));
        assert!(parse_postgres("postgres://u@127.0.0.1/d?service=prod")
            .unwrap_err()
            .contains("service file"));
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
