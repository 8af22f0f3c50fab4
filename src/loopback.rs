//! Addresses this project's servers and clients may use: loopback only (127.0.0.0/8, ::1). `retrylab serve`,
//! `explore`, the proxy and the probe all parse their addresses here, so they refuse alike.

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
}
