//! HTTP/1.1 framing for `lspc mcp --http`: read one request (head parsed by `httparse`, body by
//! `Content-Length`) under a deadline and a size bound, and write responses and Server-Sent
//! Events (RFC 9112, WHATWG HTML §9.2 "Server-sent events").
//!
//! Invariants:
//! - A request head must arrive completely before its deadline (slow clients cannot hold a
//!   connection thread: the deadline bounds the whole head, not each read).
//! - A body larger than the limit is refused from its `Content-Length` before any of it is read;
//!   chunked request bodies are refused (411), MCP clients send a length.
//! - Bytes after one request (pipelining) stay buffered for the next.
//! - SSE responses are close-delimited (`Connection: close`, no length), written and flushed one
//!   event at a time; every JSON message is one `data:` line (serde_json never emits a newline).

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

/// Longest request head accepted (request line and headers), in bytes.
pub const MAX_HEAD_BYTES: usize = 64 * 1024;
/// Most headers accepted in one request.
const MAX_HEADERS: usize = 64;

/// One parsed request.
#[derive(Debug, Clone, PartialEq)]
pub struct HttpRequest {
    /// `GET`, `POST`, … as sent.
    pub method: String,
    /// The request target without its query (`/mcp`).
    pub path: String,
    /// Header names lowercased, values trimmed, in order (duplicates kept).
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// Whether the connection may serve another request after this one.
    pub keep_alive: bool,
}

impl HttpRequest {
    /// The first value of header `name` (lowercase).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.as_str())
    }

    /// How many times header `name` (lowercase) was sent.
    pub fn header_count(&self, name: &str) -> usize {
        self.headers.iter().filter(|(key, _)| key == name).count()
    }
}

/// Why no request could be read.
#[derive(Debug, PartialEq)]
pub enum ReadError {
    /// The client closed the connection before sending anything (a normal end of keep-alive).
    Closed,
    /// The head did not arrive before the deadline; `partial` when some of it had.
    Timeout { partial: bool },
    /// Not HTTP/1.x, or a malformed head (400).
    Malformed(String),
    /// The head exceeded [`MAX_HEAD_BYTES`] (431).
    HeadTooLarge,
    /// `Content-Length` above the limit (413).
    BodyTooLarge { length: u64 },
    /// A chunked or otherwise unframed body (411).
    LengthRequired,
    /// The connection failed mid-request.
    Io(io::ErrorKind),
}

/// A connection: the stream and the bytes read but not yet consumed.
pub struct Connection {
    pub stream: TcpStream,
    buffer: Vec<u8>,
}

impl Connection {
    pub fn new(stream: TcpStream) -> Connection {
        Connection {
            stream,
            buffer: Vec::new(),
        }
    }

    /// Read one request whose head must be complete by `deadline`; the body (at most `max_body`
    /// bytes) must then arrive within `body_timeout`.
    pub fn read_request(
        &mut self,
        deadline: Instant,
        max_body: u64,
        body_timeout: Duration,
    ) -> Result<HttpRequest, ReadError> {
        let (head_length, mut request, content_length) = loop {
            if let Some(parsed) = parse_head(&self.buffer)? {
                break parsed;
            }
            if self.buffer.len() > MAX_HEAD_BYTES {
                return Err(ReadError::HeadTooLarge);
            }
            let partial = !self.buffer.is_empty();
            match self.fill(deadline) {
                Ok(0) if partial => {
                    return Err(ReadError::Malformed(
                        "connection closed mid-head".to_owned(),
                    ))
                }
                Ok(0) => return Err(ReadError::Closed),
                Ok(_) => {}
                Err(error) if is_timeout(&error) => return Err(ReadError::Timeout { partial }),
                Err(error) => return Err(ReadError::Io(error.kind())),
            }
        };
        if content_length > max_body {
            return Err(ReadError::BodyTooLarge {
                length: content_length,
            });
        }
        self.buffer.drain(..head_length);
        // Bounded by max_body (checked above), so the cast cannot truncate on 64-bit targets.
        let content_length = content_length as usize;
        let body_deadline = Instant::now() + body_timeout;
        while self.buffer.len() < content_length {
            match self.fill(body_deadline) {
                Ok(0) => {
                    return Err(ReadError::Malformed(
                        "connection closed mid-body".to_owned(),
                    ))
                }
                Ok(_) => {}
                Err(error) if is_timeout(&error) => {
                    return Err(ReadError::Timeout { partial: true })
                }
                Err(error) => return Err(ReadError::Io(error.kind())),
            }
        }
        request.body = self.buffer.drain(..content_length).collect();
        Ok(request)
    }

    /// One `read` into the buffer, waiting at most until `deadline`.
    fn fill(&mut self, deadline: Instant) -> io::Result<usize> {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(io::Error::from(io::ErrorKind::TimedOut));
        }
        self.stream.set_read_timeout(Some(left))?;
        let mut chunk = [0u8; 16 * 1024];
        let read = self.stream.read(&mut chunk)?;
        self.buffer.extend_from_slice(&chunk[..read]);
        Ok(read)
    }

    /// Whether the peer closed its end (checked without blocking: a readable EOF). Data waiting
    /// (a pipelined request) counts as open.
    pub fn peer_closed(&self) -> bool {
        if self.stream.set_nonblocking(true).is_err() {
            return true;
        }
        let mut byte = [0u8; 1];
        let closed = match self.stream.peek(&mut byte) {
            Ok(0) => true,
            Ok(_) => false,
            Err(error) => error.kind() != io::ErrorKind::WouldBlock,
        };
        let _ = self.stream.set_nonblocking(false);
        closed
    }
}

fn is_timeout(error: &io::Error) -> bool {
    matches!(
        error.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
    )
}

/// Parse a complete head from `buffer`: (head length, request without body, content length), or
/// `None` when more bytes are needed.
fn parse_head(buffer: &[u8]) -> Result<Option<(usize, HttpRequest, u64)>, ReadError> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut parsed = httparse::Request::new(&mut headers);
    let head_length = match parsed.parse(buffer) {
        Ok(httparse::Status::Complete(length)) => length,
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(httparse::Error::TooManyHeaders) => return Err(ReadError::HeadTooLarge),
        Err(error) => return Err(ReadError::Malformed(error.to_string())),
    };
    let method = parsed.method.unwrap_or_default().to_owned();
    let target = parsed.path.unwrap_or_default();
    let path = target
        .split(['?', '#'])
        .next()
        .unwrap_or_default()
        .to_owned();
    let version = parsed.version.unwrap_or(1);
    let mut request_headers = Vec::with_capacity(parsed.headers.len());
    for header in parsed.headers.iter() {
        let Ok(value) = std::str::from_utf8(header.value) else {
            return Err(ReadError::Malformed(format!(
                "header {} is not UTF-8",
                header.name
            )));
        };
        request_headers.push((header.name.to_ascii_lowercase(), value.trim().to_owned()));
    }
    let mut request = HttpRequest {
        method,
        path,
        headers: request_headers,
        body: Vec::new(),
        keep_alive: true,
    };
    let connection = request
        .header("connection")
        .unwrap_or_default()
        .to_ascii_lowercase();
    request.keep_alive = if version == 0 {
        connection.contains("keep-alive")
    } else {
        !connection.contains("close")
    };
    if request.header("transfer-encoding").is_some() {
        return Err(ReadError::LengthRequired);
    }
    // RFC 9112 §3.2: an HTTP/1.1 request carries exactly one Host (the loopback check reads it).
    let hosts = request
        .headers
        .iter()
        .filter(|(name, _)| name == "host")
        .count();
    match (version, hosts) {
        (1, 0) => {
            return Err(ReadError::Malformed(
                "an HTTP/1.1 request without a Host header".to_owned(),
            ))
        }
        (_, 2..) => return Err(ReadError::Malformed("more than one Host header".to_owned())),
        _ => {}
    }
    let lengths: Vec<&str> = request
        .headers
        .iter()
        .filter(|(name, _)| name == "content-length")
        .map(|(_, value)| value.as_str())
        .collect();
    let content_length = match lengths.as_slice() {
        [] => 0,
        // RFC 9110 §8.6: 1*DIGIT (Rust's parse would also take a leading `+`).
        [length] => Some(length)
            .filter(|length| length.bytes().all(|byte| byte.is_ascii_digit()))
            .and_then(|length| length.parse::<u64>().ok())
            .ok_or_else(|| ReadError::Malformed(format!("bad Content-Length {length:?}")))?,
        _ => {
            return Err(ReadError::Malformed(
                "more than one Content-Length".to_owned(),
            ))
        }
    };
    Ok(Some((head_length, request, content_length)))
}

/// The reason phrase lspc uses for `status`.
pub fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        202 => "Accepted",
        204 => "No Content",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        406 => "Not Acceptable",
        408 => "Request Timeout",
        409 => "Conflict",
        411 => "Length Required",
        413 => "Content Too Large",
        415 => "Unsupported Media Type",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        503 => "Service Unavailable",
        _ => "Unknown",
    }
}

/// Write a complete response with a `Content-Length` body. `close` adds `Connection: close`.
pub fn write_response(
    stream: &mut impl Write,
    status: u16,
    headers: &[(&str, String)],
    body: &[u8],
    close: bool,
) -> io::Result<()> {
    let mut head = format!("HTTP/1.1 {status} {}\r\n", reason(status));
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str(&format!("Content-Length: {}\r\n", body.len()));
    if close {
        head.push_str("Connection: close\r\n");
    }
    head.push_str("\r\n");
    let mut bytes = head.into_bytes();
    bytes.extend_from_slice(body);
    stream.write_all(&bytes)?;
    stream.flush()
}

/// Write the head of a close-delimited `text/event-stream` response.
pub fn write_sse_head(stream: &mut impl Write, headers: &[(&str, String)]) -> io::Result<()> {
    let mut head = String::from(
        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\nConnection: close\r\n",
    );
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes())?;
    stream.flush()
}

/// Write one SSE `message` event carrying `data` (one line of JSON).
pub fn write_sse_event(stream: &mut impl Write, data: &str) -> io::Result<()> {
    stream.write_all(format!("event: message\ndata: {data}\n\n").as_bytes())?;
    stream.flush()
}

/// Write an SSE comment (a keep-alive that clients ignore).
pub fn write_sse_comment(stream: &mut impl Write) -> io::Result<()> {
    stream.write_all(b": keep-alive\n\n")?;
    stream.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(input: &str, expected: &str) {
        let actual = match parse_head(input.as_bytes()) {
            Ok(None) => "partial".to_owned(),
            Ok(Some((length, request, content_length))) => format!(
                "{length} {} {} {:?} keep_alive={} length={content_length}",
                request.method, request.path, request.headers, request.keep_alive
            ),
            Err(error) => format!("{error:?}"),
        };
        assert_eq!(actual, expected, "{input:?}");
    }

    #[test]
    fn heads_parse() {
        check(
            "POST /mcp?x=1 HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhello",
            r#"54 POST /mcp [("host", "a"), ("content-length", "5")] keep_alive=true length=5"#,
        );
        check("GET /mcp HTTP/1.1\r\nHost: a\r\n", "partial");
        check(
            "GET /mcp HTTP/1.0\r\n\r\n",
            "21 GET /mcp [] keep_alive=false length=0",
        );
        check(
            "GET /mcp HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n",
            r#"49 GET /mcp [("host", "a"), ("connection", "close")] keep_alive=false length=0"#,
        );
        check(
            "POST /mcp HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n",
            "LengthRequired",
        );
        for bad in ["x", "+5", "-1", "5 5", ""] {
            check(
                &format!("POST /mcp HTTP/1.1\r\nHost: a\r\nContent-Length: {bad}\r\n\r\n"),
                &format!(
                    "{:?}",
                    ReadError::Malformed(format!("bad Content-Length {bad:?}"))
                ),
            );
        }
        check(
            "POST /mcp HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
            "Malformed(\"more than one Content-Length\")",
        );
        // RFC 9112 §3.2: exactly one Host in HTTP/1.1; HTTP/1.0 may omit it.
        check(
            "GET /mcp HTTP/1.1\r\n\r\n",
            "Malformed(\"an HTTP/1.1 request without a Host header\")",
        );
        check(
            "GET /mcp HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
            "Malformed(\"more than one Host header\")",
        );
        check("HELLO\r\n\r\n", "Malformed(\"invalid token\")");
    }

    #[test]
    fn responses_are_framed() {
        let mut out = Vec::new();
        write_response(
            &mut out,
            404,
            &[("Content-Type", "text/plain".to_owned())],
            b"no",
            true,
        )
        .unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "HTTP/1.1 404 Not Found\r\nContent-Type: text/plain\r\nContent-Length: 2\r\nConnection: close\r\n\r\nno"
        );
        let mut out = Vec::new();
        write_sse_event(&mut out, "{\"a\":1}").unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "event: message\ndata: {\"a\":1}\n\n"
        );
    }
}
