//! Which process listens on a TCP port, from /proc/net/tcp{,6} (the listening socket's inode) and /proc/*/fd
//! (who holds that inode): named in the error when something other than the service holds the service's port,
//! so the user knows what to stop.

/// The listening sockets' inodes on `port` in one /proc/net/tcp-format table.
fn listening_inodes(table: &str, port: u16) -> Vec<u64> {
    const LISTEN: &str = "0A";
    table
        .lines()
        .skip(1)
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let local_port = fields.get(1)?.rsplit_once(':')?.1;
            let listening =
                u16::from_str_radix(local_port, 16).ok()? == port && *fields.get(3)? == LISTEN;
            listening.then(|| fields.get(9)?.parse().ok()).flatten()
        })
        .collect()
}

/// The processes holding a socket listening on `port`, with their command lines (readable ones only: the
/// probe's user's processes).
pub fn listeners(port: u16) -> Vec<(u32, String)> {
    let inodes: Vec<String> = ["/proc/net/tcp", "/proc/net/tcp6"]
        .iter()
        .filter_map(|path| std::fs::read_to_string(path).ok())
        .flat_map(|table| listening_inodes(&table, port))
        .map(|inode| format!("socket:[{inode}]"))
        .collect();
    if inodes.is_empty() {
        return Vec::new();
    }
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read_dir(format!("/proc/{pid}/fd")).is_ok_and(|fds| {
                fds.filter_map(Result::ok)
                    .filter_map(|fd| std::fs::read_link(fd.path()).ok())
                    .any(|target| {
                        inodes
                            .iter()
                            .any(|inode| target.as_os_str() == inode.as_str())
                    })
            })
        })
        .map(|pid| {
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            let words: Vec<String> = cmdline
                .split(|&b| b == 0)
                .filter(|word| !word.is_empty())
                .map(|word| String::from_utf8_lossy(word).into_owned())
                .collect();
            (pid, words.join(" "))
        })
        .collect()
}

/// " (pid N: CMD listens on it)" for each listener found, or nothing.
pub fn describe(port: u16) -> String {
    listeners(port)
        .iter()
        .map(|(pid, cmdline)| format!(" (pid {pid}: {cmdline:?} listens on it)"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_table_line_in_listen_state_gives_its_inode() {
        let table = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n   \
                     0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 4242 1\n   \
                     1: 0100007F:1F90 0100007F:D431 01 00000000:00000000 00:00000000 00000000  1000        0 4343 1\n";
        assert_eq!(listening_inodes(table, 8080), [4242]);
        assert!(listening_inodes(table, 8081).is_empty());
    }

    #[test]
    fn the_probe_itself_is_found_listening() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let found = listeners(port);
        assert!(
            found.iter().any(|(pid, _)| *pid == std::process::id()),
            "{found:?}"
        );
        assert!(describe(port).starts_with(" (pid "));
    }
}
