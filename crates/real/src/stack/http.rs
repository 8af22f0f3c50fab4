//! Plain HTTP/1.1 over loopback, by hand: the probe needs to put N requests on N open connections and release
//! them together (every byte but the last written first, then the last bytes at once), which no pooled client
//! does; the proxy needs whole requests and responses as bytes. One request per connection (`Connection:
//! close`), bodies by `Content-Length` or chunked.

pub use crate::loopback::loopback_address;
use std::net::SocketAddr;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Largest response or request read (headers and body), so a misbehaving peer cannot exhaust memory.
pub const MESSAGE_BYTES_MAX: usize = 4 << 20;

/// `http://HOST:PORT/PATH` on a loopback address: where the probe, the client and the proxy may go.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Url {
    pub address: SocketAddr,
    /// As given (`127.0.0.1:8080`, `localhost:8080`), for the Host header and for printing.
    pub authority: String,
    pub path: String,
}

impl Url {
    pub fn parse(text: &str) -> Result<Url, String> {
        let rest = text.strip_prefix("http://").ok_or_else(|| {
            format!("'{text}': expected http://HOST:PORT/PATH (plain HTTP on loopback)")
        })?;
        let (authority, path) = match rest.find('/') {
            Some(at) => (&rest[..at], rest[at..].to_string()),
            None => (rest, "/".to_string()),
        };
        let address = loopback_address(authority).map_err(|why| format!("'{text}': {why}"))?;
        Ok(Url {
            address,
            authority: authority.to_string(),
            path,
        })
    }

    /// The same server, another path.
    pub fn with_path(&self, path: &str) -> Url {
        Url {
            path: path.to_string(),
            ..self.clone()
        }
    }

    pub fn to_text(&self) -> String {
        format!("http://{}{}", self.authority, self.path)
    }
}

/// A request to send.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HttpRequest {
    pub method: String,
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl HttpRequest {
    pub fn post(path: &str, headers: Vec<(String, String)>, body: &str) -> HttpRequest {
        HttpRequest {
            method: "POST".into(),
            path: path.into(),
            headers,
            body: body.into(),
        }
    }

    pub fn get(path: &str) -> HttpRequest {
        HttpRequest {
            method: "GET".into(),
            path: path.into(),
            headers: Vec::new(),
            body: String::new(),
        }
    }

    /// The bytes on the wire, with Host, Content-Length and `Connection: close`.
    pub fn encode(&self, authority: &str) -> Vec<u8> {
        let mut text = format!(
            "{} {} HTTP/1.1\r\nHost: {authority}\r\n",
            self.method, self.path
        );
        for (name, value) in &self.headers {
            text.push_str(&format!("{name}: {value}\r\n"));
        }
        if self.method != "GET" || !self.body.is_empty() {
            text.push_str("Content-Type: application/json\r\n");
            text.push_str(&format!("Content-Length: {}\r\n", self.body.len()));
        }
        text.push_str("Connection: close\r\n\r\n");
        text.push_str(&self.body);
        text.into_bytes()
    }
}

/// A response as received.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HttpResponse {
    pub status: u16,
    /// Names in lower case.
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl HttpResponse {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// Why an exchange failed.
#[derive(Debug, thiserror::Error)]
pub enum HttpError {
    #[error("cannot connect to {0}: {1}")]
    Connect(SocketAddr, std::io::Error),
    #[error("i/o: {0}")]
    Io(#[from] std::io::Error),
    #[error("no answer within {0:?}")]
    Timeout(Duration),
    #[error("the connection closed before a whole response")]
    Closed,
    #[error("not an HTTP response: {0}")]
    Malformed(String),
}

/// Send one request and read its response, all within `timeout`.
pub async fn exchange(
    url: &Url,
    request: &HttpRequest,
    timeout: Duration,
) -> Result<HttpResponse, HttpError> {
    let run = async {
        let mut stream = TcpStream::connect(url.address)
            .await
            .map_err(|error| HttpError::Connect(url.address, error))?;
        write_then_read(&mut stream, &request.encode(&url.authority)).await
    };
    tokio::time::timeout(timeout, run)
        .await
        .map_err(|_| HttpError::Timeout(timeout))?
}

/// Read bytes until `EOF` or the bound.
pub async fn read_to_end(stream: &mut TcpStream) -> Result<Vec<u8>, HttpError> {
    match read_until_closed(stream).await {
        (bytes, None) => Ok(bytes),
        (_, Some(error)) => Err(error),
    }
}

/// Read bytes until `EOF`, an error or the bound: what was read, and the error if one ended it. The bytes are
/// kept when a reset ends the read: a server that answers and closes without reading the rest of the request
/// makes its kernel send a reset after the answer, and the answer is whole.
async fn read_until_closed(stream: &mut TcpStream) -> (Vec<u8>, Option<HttpError>) {
    let mut bytes = Vec::new();
    let mut chunk = [0u8; 8192];
    loop {
        let read = match stream.read(&mut chunk).await {
            Ok(read) => read,
            Err(error) => return (bytes, Some(HttpError::Io(error))),
        };
        if read == 0 {
            return (bytes, None);
        }
        bytes.extend_from_slice(&chunk[..read]);
        if bytes.len() > MESSAGE_BYTES_MAX {
            return (
                bytes,
                Some(HttpError::Malformed("message too large".into())),
            );
        }
    }
}

/// A response's bytes read to the end of its connection (`Connection: close`). A response that is whole by its
/// own framing (`Content-Length` or the last chunk) counts even when a reset ended the read; one delimited only
/// by the close does not (a reset may have cut it short).
pub async fn read_response_bytes(stream: &mut TcpStream) -> Result<Vec<u8>, HttpError> {
    match read_until_closed(stream).await {
        (bytes, None) if bytes.is_empty() => Err(HttpError::Closed),
        (bytes, None) => Ok(bytes),
        (bytes, Some(error)) => match parse_framed_response(&bytes) {
            Some(_) => Ok(bytes),
            None => Err(error),
        },
    }
}

/// A response read to the end of its connection, as `read_response_bytes` reads it.
pub async fn read_response(stream: &mut TcpStream) -> Result<HttpResponse, HttpError> {
    parse_response(&read_response_bytes(stream).await?)
}

/// Write `bytes` (a request, or its rest), then read the response's bytes. A failed write does not discard the
/// response: a server may answer as soon as it has the headers (a 409 for a key in flight) and close, and the
/// write of the request's last bytes then meets a closed socket while the whole answer is already here. Only
/// when no whole response came is the write's error the result.
pub async fn write_then_read_bytes(
    stream: &mut TcpStream,
    bytes: &[u8],
) -> Result<Vec<u8>, HttpError> {
    let written = stream.write_all(bytes).await;
    let response = read_response_bytes(stream).await;
    match (response, written) {
        (Ok(response), _) => Ok(response),
        (Err(_), Err(write)) => Err(HttpError::Io(write)),
        (Err(read), Ok(())) => Err(read),
    }
}

/// `write_then_read_bytes`, parsed.
pub async fn write_then_read(
    stream: &mut TcpStream,
    bytes: &[u8],
) -> Result<HttpResponse, HttpError> {
    parse_response(&write_then_read_bytes(stream, bytes).await?)
}

/// A response whose framing says it is whole: a `Content-Length` body fully read, or a chunked body up to its
/// last chunk, or a status that has no body (1xx, 204, 304).
fn parse_framed_response(bytes: &[u8]) -> Option<HttpResponse> {
    let response = parse_response(bytes).ok()?;
    let framed = response.header("content-length").is_some()
        || response
            .header("transfer-encoding")
            .is_some_and(|te| te.eq_ignore_ascii_case("chunked"))
        || response.status < 200
        || response.status == 204
        || response.status == 304;
    framed.then_some(response)
}

/// Split a message at its blank line: the head's lines and the rest.
fn split_head(bytes: &[u8]) -> Option<(String, &[u8])> {
    let at = bytes.windows(4).position(|w| w == b"\r\n\r\n")?;
    Some((
        String::from_utf8_lossy(&bytes[..at]).into_owned(),
        &bytes[at + 4..],
    ))
}

fn parse_headers<'a>(lines: impl Iterator<Item = &'a str>) -> Vec<(String, String)> {
    lines
        .filter_map(|line| line.split_once(':'))
        .map(|(name, value)| (name.trim().to_ascii_lowercase(), value.trim().to_string()))
        .collect()
}

pub fn parse_response(bytes: &[u8]) -> Result<HttpResponse, HttpError> {
    let (head, rest) = split_head(bytes).ok_or(HttpError::Closed)?;
    let mut lines = head.split("\r\n");
    let status_line = lines.next().unwrap_or_default();
    let status = status_line
        .split(' ')
        .nth(1)
        .and_then(|code| code.parse::<u16>().ok())
        .ok_or_else(|| HttpError::Malformed(status_line.to_string()))?;
    let headers = parse_headers(lines);
    let find = |name: &str| {
        headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.clone())
    };
    let body = if find("transfer-encoding").is_some_and(|te| te.eq_ignore_ascii_case("chunked")) {
        dechunk(rest)?
    } else if let Some(length) = find("content-length").and_then(|l| l.parse::<usize>().ok()) {
        if rest.len() < length {
            return Err(HttpError::Closed);
        }
        rest[..length].to_vec()
    } else {
        rest.to_vec()
    };
    Ok(HttpResponse {
        status,
        headers,
        body: String::from_utf8_lossy(&body).into_owned(),
    })
}

fn dechunk(mut rest: &[u8]) -> Result<Vec<u8>, HttpError> {
    let mut body = Vec::new();
    loop {
        let at = rest
            .windows(2)
            .position(|w| w == b"\r\n")
            .ok_or(HttpError::Closed)?;
        let size_text = String::from_utf8_lossy(&rest[..at]);
        let size = usize::from_str_radix(size_text.split(';').next().unwrap_or("").trim(), 16)
            .map_err(|_| HttpError::Malformed(format!("chunk size '{size_text}'")))?;
        rest = &rest[at + 2..];
        if size == 0 {
            return Ok(body);
        }
        if rest.len() < size + 2 {
            return Err(HttpError::Closed);
        }
        body.extend_from_slice(&rest[..size]);
        rest = &rest[size + 2..];
    }
}

/// A request as the proxy reads it: its head's lines, headers, and body (by `Content-Length` or chunked, kept
/// chunked as sent); `None` when the peer closed first.
pub async fn read_request(stream: &mut TcpStream) -> Result<Option<Vec<u8>>, HttpError> {
    let mut bytes = Vec::new();
    let mut chunk = [0u8; 8192];
    loop {
        if let Some((head, rest)) = split_head(&bytes) {
            let headers = parse_headers(head.split("\r\n").skip(1));
            if let Some(length) = request_body_end(&headers, rest)? {
                let total = bytes.len() - rest.len() + length;
                bytes.truncate(total);
                return Ok(Some(bytes));
            }
        }
        let read = stream.read(&mut chunk).await?;
        if read == 0 {
            return if bytes.is_empty() {
                Ok(None)
            } else {
                Err(HttpError::Closed)
            };
        }
        bytes.extend_from_slice(&chunk[..read]);
        if bytes.len() > MESSAGE_BYTES_MAX {
            return Err(HttpError::Malformed("request too large".into()));
        }
    }
}

/// Where a request's body ends in `rest` (the bytes after its head), or `None` while more must be read. A
/// chunked body ends after its last chunk and trailers: taking only the head of one (as if its length were 0)
/// left the upstream waiting for chunks the proxy never sent, and both waited for ever.
fn request_body_end(headers: &[(String, String)], rest: &[u8]) -> Result<Option<usize>, HttpError> {
    let chunked = headers.iter().any(|(name, value)| {
        name == "transfer-encoding" && value.to_ascii_lowercase().contains("chunked")
    });
    if chunked {
        return chunked_end(rest);
    }
    let length = match headers.iter().find(|(name, _)| name == "content-length") {
        Some((_, value)) => value
            .parse::<usize>()
            .map_err(|_| HttpError::Malformed(format!("content-length '{value}'")))?,
        None => 0,
    };
    Ok((rest.len() >= length).then_some(length))
}

/// The end of a complete chunked body at the start of `rest`, or `None` while it is incomplete.
fn chunked_end(rest: &[u8]) -> Result<Option<usize>, HttpError> {
    let line_end = |from: usize| rest[from..].windows(2).position(|w| w == b"\r\n");
    let mut at = 0;
    loop {
        let Some(length) = line_end(at) else {
            return Ok(None);
        };
        let size_text = String::from_utf8_lossy(&rest[at..at + length]);
        let size = usize::from_str_radix(size_text.split(';').next().unwrap_or("").trim(), 16)
            .map_err(|_| HttpError::Malformed(format!("chunk size '{size_text}'")))?;
        at += length + 2;
        if size == 0 {
            // Trailer lines, then an empty line.
            loop {
                let Some(length) = line_end(at) else {
                    return Ok(None);
                };
                at += length + 2;
                if length == 0 {
                    return Ok(Some(at));
                }
            }
        }
        let with_crlf = size
            .checked_add(2)
            .ok_or_else(|| HttpError::Malformed(format!("chunk size '{size_text}'")))?;
        if rest.len() - at < with_crlf {
            return Ok(None);
        }
        at += with_crlf;
    }
}

/// A header's value in a raw request.
pub fn request_header(request: &[u8], name: &str) -> Option<String> {
    let (head, _) = split_head(request)?;
    parse_headers(head.split("\r\n").skip(1))
        .into_iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, v)| v)
}

/// A raw request with `Connection: close` (replacing any Connection header), so that the upstream closes after
/// its response and the proxy reads it to the end.
pub fn with_connection_close(request: &[u8]) -> Vec<u8> {
    let Some((head, rest)) = split_head(request) else {
        return request.to_vec();
    };
    let mut text: String = head
        .split("\r\n")
        .filter(|line| {
            !line
                .split_once(':')
                .is_some_and(|(name, _)| name.trim().eq_ignore_ascii_case("connection"))
        })
        .map(|line| format!("{line}\r\n"))
        .collect();
    text.push_str("Connection: close\r\n\r\n");
    let mut bytes = text.into_bytes();
    bytes.extend_from_slice(rest);
    bytes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_loopback_only() {
        let url = Url::parse("http://127.0.0.1:8080/payments").unwrap();
        assert_eq!(url.path, "/payments");
        assert_eq!(url.address.port(), 8080);
        assert!(Url::parse("http://localhost:9/").is_ok());
        assert!(Url::parse("http://[::1]:9/x").is_ok());
        assert!(Url::parse("http://10.0.0.1:80/")
            .unwrap_err()
            .contains("not a loopback"));
        assert!(Url::parse("https://127.0.0.1:80/").is_err());
        assert!(Url::parse("http://example.com:80/").is_err());
    }

    #[test]
    fn responses_parse_by_length_and_chunks() {
        let plain = b"HTTP/1.1 201 Created\r\ncontent-length: 2\r\nRetry-After: 1\r\n\r\n{}";
        let response = parse_response(plain).unwrap();
        assert_eq!((response.status, response.body.as_str()), (201, "{}"));
        assert_eq!(response.header("retry-after"), Some("1"));
        let chunked = b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n";
        assert_eq!(parse_response(chunked).unwrap().body, "abcde");
        assert!(matches!(
            parse_response(b"HTTP/1.1 200 OK\r\n"),
            Err(HttpError::Closed)
        ));
    }

    #[test]
    fn chunked_requests_end_after_their_last_chunk_and_trailers() {
        let head = vec![("transfer-encoding".to_string(), "chunked".to_string())];
        let body = b"3\r\nabc\r\n0\r\n\r\nNEXT";
        assert_eq!(request_body_end(&head, body).unwrap(), Some(body.len() - 4));
        let trailers = b"1\r\na\r\n0\r\nX-T: 1\r\n\r\n";
        assert_eq!(
            request_body_end(&head, trailers).unwrap(),
            Some(trailers.len())
        );
        for partial in [&b"3\r\nab"[..], b"3\r\nabc\r\n", b"3\r\nabc\r\n0\r\n", b""] {
            assert_eq!(
                request_body_end(&head, partial).unwrap(),
                None,
                "{partial:?}"
            );
        }
        assert!(request_body_end(&head, b"zz\r\n").is_err());
        assert!(request_body_end(&head, b"ffffffffffffffffff\r\n").is_err());
        let length = vec![("content-length".to_string(), "x".to_string())];
        assert!(request_body_end(&length, b"").is_err());
        assert_eq!(request_body_end(&[], b"ignored").unwrap(), Some(0));
    }

    #[test]
    fn the_proxy_forces_connection_close() {
        let raw =
            b"POST /p HTTP/1.1\r\nHost: x\r\nConnection: keep-alive\r\nContent-Length: 2\r\n\r\n{}";
        let closed = String::from_utf8(with_connection_close(raw)).unwrap();
        assert!(closed.ends_with("Content-Length: 2\r\nConnection: close\r\n\r\n{}"));
        assert!(!closed.contains("keep-alive"));
        assert_eq!(request_header(raw, "content-length").as_deref(), Some("2"));
    }
}
