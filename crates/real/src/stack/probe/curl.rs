//! The `curl` sequences a failure prints: what the check sent, with a fresh key (`$KEY`, made by the first
//! line) so that pasting it into a shell does it again rather than replaying the probe's own key.

use super::ProbeConfig;

/// Single-quoted for a POSIX shell.
fn quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

/// The line that makes a fresh key.
pub fn fresh_key() -> String {
    "KEY=repro-$(date +%s%N)".to_string()
}

/// `curl` for a POST: `key` is `Some("$KEY")`-style shell text or none, `client` an identity or none.
pub fn post(config: &ProbeConfig, key: Option<&str>, client: Option<&str>, body: &str) -> String {
    let mut line = format!(
        "curl -s -w ' %{{http_code}}\\n' -X POST {} -H 'Content-Type: application/json'",
        quote(&config.url.to_text())
    );
    for (name, value) in &config.headers {
        line.push_str(&format!(" -H {}", quote(&format!("{name}: {value}"))));
    }
    if let Some(key) = key {
        line.push_str(&format!(" -H \"{}: {key}\"", config.key_header));
    }
    if let (Some(name), Some(client)) = (&config.client_header, client) {
        line.push_str(&format!(" -H {}", quote(&format!("{name}: {client}"))));
    }
    line.push_str(&format!(" -d {}", quote(body)));
    line
}

/// `curl` for the count endpoint, if there is one.
pub fn count(config: &ProbeConfig) -> Option<String> {
    config
        .count_url
        .as_ref()
        .map(|url| format!("curl -s {}; echo", quote(&url.to_text())))
}

/// Lines joined, the count before and after when there is a count endpoint.
pub fn sequence(config: &ProbeConfig, fresh: bool, steps: Vec<String>) -> String {
    let mut lines = Vec::new();
    if fresh {
        lines.push(fresh_key());
    }
    lines.extend(count(config));
    lines.extend(steps);
    lines.extend(count(config));
    lines.join("\n")
}

#[cfg(test)]
mod tests {
    #[test]
    fn quotes_survive_a_shell() {
        assert_eq!(super::quote("it's"), r"'it'\''s'");
    }
}
