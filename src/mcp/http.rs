//! `lspc mcp --http ADDR:PORT`: MCP over Streamable HTTP at `/mcp`, many clients over one hub
//! (issue 14).
//!
//! Both eras, as stdio serves them:
//! - 2025-11-25 Streamable HTTP (MCP 2025-11-25 §basic/transports): `initialize` without a
//!   session opens one and returns its `Mcp-Session-Id`; each POST carries one message; a request
//!   is answered with one JSON body, or with an SSE stream when notifications (progress) come
//!   before the answer; GET opens the session's stream for unrelated notifications; DELETE ends
//!   the session; `MCP-Protocol-Version`, when sent, must be a version lspc speaks (400).
//! - 2026-07-28 (stateless): a request whose `_meta` names the protocol version needs no session;
//!   `MCP-Protocol-Version`, `Mcp-Method` and (for `tools/call`, `resources/read`) `Mcp-Name` must
//!   mirror the body (-32020 `HeaderMismatch`, 400); each such request is its own short-lived hub
//!   client, and closing its response stream cancels it; `subscriptions/listen` is a streamed
//!   response. JSON-RPC errors map to HTTP statuses (400; 404 for -32601).
//!
//! Security (§transports "Security Warning"): binds `127.0.0.1` unless told otherwise; a foreign
//! `Origin` gets 403 (DNS rebinding); with a token, requests need `Authorization: Bearer TOKEN`
//! (401) and a non-loopback bind requires one. Bounds: request heads must arrive within the header
//! timeout (408), bodies above the limit get 413, connections beyond the maximum get 503.
//!
//! Threads: one accept thread (`lspc-http-accept`) and one thread per open connection
//! (`lspc-http-conn-N`, at most `max_connections`), which parse and check requests, pass messages
//! to the hub ([`super::serve`], on the calling thread) through the one [`HubInput`] channel and
//! write what comes back. No state is shared between threads except through that channel.

use std::io::Read;
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use crossbeam_channel::{bounded, unbounded, RecvTimeoutError, Sender};
use serde_json::{json, Value};

use super::http_wire::{self, Connection, HttpRequest, ReadError};
use super::protocol::{self, error_response, Incoming, INVALID_REQUEST, PARSE_ERROR};
use super::{ClientId, HubInput, McpOptions, Outbound};

/// MCP 2026-07-28 `HeaderMismatch`.
pub const HEADER_MISMATCH: i64 = -32020;

/// The MCP endpoint's path.
pub const ENDPOINT: &str = "/mcp";

/// Settings of the HTTP frontend.
#[derive(Debug, Clone, PartialEq)]
pub struct HttpOptions {
    /// Where to listen; port 0 picks a free one.
    pub address: SocketAddr,
    /// `--token` / `LSPC_MCP_TOKEN`: required as `Authorization: Bearer TOKEN` when set.
    pub token: Option<String>,
    /// `--allow-origin`: browser origins accepted besides loopback ones (`*` accepts any).
    pub allowed_origins: Vec<String>,
    /// Largest request body, in bytes (default 4 MiB).
    pub max_body_bytes: u64,
    /// How long a request head (and an idle keep-alive connection) may take (default 10 s).
    pub header_timeout: Duration,
    /// Most connections open at once (default 64); more get 503.
    pub max_connections: usize,
}

impl HttpOptions {
    /// Defaults for `address`: no token, loopback origins only, 4 MiB, 10 s, 64 connections.
    pub fn new(address: SocketAddr) -> HttpOptions {
        HttpOptions {
            address,
            token: None,
            allowed_origins: Vec::new(),
            max_body_bytes: 4 * 1024 * 1024,
            header_timeout: Duration::from_secs(10),
            max_connections: 64,
        }
    }
}

/// Why the HTTP frontend could not start.
#[derive(Debug)]
pub enum HttpError {
    /// `ADDR:PORT` did not parse or resolve.
    InvalidAddress(String),
    /// A non-loopback bind without a token.
    TokenRequired(SocketAddr),
    /// Binding failed.
    Bind(SocketAddr, std::io::Error),
}

impl std::fmt::Display for HttpError {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HttpError::InvalidAddress(value) => write!(
                formatter,
                "--http: expected ADDR:PORT or PORT (e.g. 127.0.0.1:8080), got {value:?}"
            ),
            HttpError::TokenRequired(address) => write!(
                formatter,
                "--http {address}: a non-loopback address needs --token TOKEN (or LSPC_MCP_TOKEN)"
            ),
            HttpError::Bind(address, error) => {
                write!(formatter, "--http: cannot listen on {address}: {error}")
            }
        }
    }
}

/// Parse `--http`'s value: `ADDR:PORT`, `[V6]:PORT`, `HOST:PORT` (resolved) or a bare `PORT`
/// (on `127.0.0.1`).
pub fn parse_address(value: &str) -> Result<SocketAddr, HttpError> {
    let invalid = || HttpError::InvalidAddress(value.to_owned());
    if let Ok(port) = value.parse::<u16>() {
        return Ok(SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port));
    }
    if let Ok(address) = value.parse::<SocketAddr>() {
        return Ok(address);
    }
    value
        .to_socket_addrs()
        .map_err(|_| invalid())?
        .next()
        .ok_or_else(invalid)
}

/// Check the options, bind, print `listening on http://ADDR:PORT/mcp` on stderr, and serve until
/// the process is stopped (the engine turns SIGINT/SIGTERM into a clean server shutdown).
pub fn serve(options: McpOptions, http: HttpOptions) -> Result<i32, HttpError> {
    if !http.address.ip().is_loopback() && http.token.is_none() {
        return Err(HttpError::TokenRequired(http.address));
    }
    let listener =
        TcpListener::bind(http.address).map_err(|error| HttpError::Bind(http.address, error))?;
    let bound = listener
        .local_addr()
        .map_err(|error| HttpError::Bind(http.address, error))?;
    eprintln!("listening on http://{bound}{ENDPOINT}");
    let (input_sender, input_receiver) = bounded::<HubInput>(256);
    let shared = Arc::new(Shared {
        options: http,
        loopback_bind: bound.ip().is_loopback(),
    });
    let accept = thread::Builder::new()
        .name("lspc-http-accept".to_owned())
        .spawn(move || accept_loop(listener, shared, input_sender))
        .map_err(|error| HttpError::Bind(bound, error))?;
    let status = super::serve(options, input_receiver);
    // Only reached when the accept thread ended (its listener failed).
    let _ = accept.join();
    Ok(status)
}

/// What every connection thread reads.
struct Shared {
    options: HttpOptions,
    /// Bound to a loopback address: requests must name a loopback host.
    loopback_bind: bool,
}

fn accept_loop(listener: TcpListener, shared: Arc<Shared>, inputs: Sender<HubInput>) {
    let (closed_sender, closed_receiver) = unbounded::<()>();
    let mut connections: Vec<thread::JoinHandle<()>> = Vec::new();
    let mut open = 0usize;
    let mut next_connection = 0u64;
    for stream in listener.incoming() {
        let stream = match stream {
            Ok(stream) => stream,
            Err(error) => {
                // EMFILE and friends: back off instead of spinning.
                log::warn!("accept failed: {error}");
                thread::sleep(Duration::from_millis(50));
                continue;
            }
        };
        open -= closed_receiver.try_iter().count();
        connections.retain(|handle| !handle.is_finished());
        if open >= shared.options.max_connections {
            refuse(stream, 503, "too many connections: try again later");
            continue;
        }
        next_connection += 1;
        let number = next_connection;
        let shared = shared.clone();
        let inputs = inputs.clone();
        let closed = closed_sender.clone();
        let spawned = thread::Builder::new()
            .name(format!("lspc-http-conn-{number}"))
            .stack_size(512 * 1024)
            .spawn(move || {
                serve_connection(stream, number, &shared, &inputs);
                let _ = closed.send(());
            });
        match spawned {
            Ok(handle) => {
                open += 1;
                connections.push(handle);
            }
            Err(error) => log::warn!("cannot start a connection thread: {error}"),
        }
    }
}

/// Answer a connection lspc will not serve, without reading its request.
fn refuse(mut stream: TcpStream, status: u16, message: &str) {
    let _ = stream.set_write_timeout(Some(Duration::from_millis(200)));
    let body = error_body(INVALID_REQUEST, message);
    let _ = http_wire::write_response(
        &mut stream,
        status,
        &[
            ("Content-Type", "application/json".to_owned()),
            ("Retry-After", "1".to_owned()),
        ],
        &body,
        true,
    );
    let _ = stream.shutdown(std::net::Shutdown::Write);
}

fn error_body(code: i64, message: &str) -> Vec<u8> {
    serde_json::to_vec(&error_response(&Value::Null, code, message, None)).unwrap_or_default()
}

/// How often a waiting exchange checks whether its client went away.
const POLL_INTERVAL: Duration = Duration::from_millis(100);
/// An SSE stream with nothing to say gets a comment this often (proxies drop idle streams).
const KEEP_ALIVE_INTERVAL: Duration = Duration::from_secs(15);
/// How long a request may stay silent before its answer is switched to an SSE stream.
const SSE_COMMIT_AFTER: Duration = Duration::from_secs(10);

/// One connection thread: requests in order until the client closes, a response is
/// close-delimited (SSE), or the connection misbehaves.
fn serve_connection(stream: TcpStream, number: u64, shared: &Shared, inputs: &Sender<HubInput>) {
    let _ = stream.set_nodelay(true);
    let _ = stream.set_write_timeout(Some(Duration::from_secs(30)));
    let mut connection = Connection::new(stream);
    let mut exchange_number = 0u64;
    loop {
        let deadline = Instant::now() + shared.options.header_timeout;
        let request = match connection.read_request(
            deadline,
            shared.options.max_body_bytes,
            shared.options.header_timeout,
        ) {
            Ok(request) => request,
            Err(ReadError::Closed | ReadError::Io(_) | ReadError::Timeout { partial: false }) => {
                return
            }
            Err(error) => {
                let (status, message) = match error {
                    ReadError::Timeout { .. } => (
                        408,
                        "request timeout: the request did not arrive in time".to_owned(),
                    ),
                    ReadError::HeadTooLarge => (431, "request header fields too large".to_owned()),
                    ReadError::BodyTooLarge { length } => (
                        413,
                        format!(
                            "request body too large: {length} bytes (at most {})",
                            shared.options.max_body_bytes
                        ),
                    ),
                    ReadError::LengthRequired => (
                        411,
                        "length required: send the body with a Content-Length".to_owned(),
                    ),
                    ReadError::Malformed(reason) => (400, format!("bad request: {reason}")),
                    ReadError::Closed | ReadError::Io(_) => return,
                };
                let _ = http_wire::write_response(
                    &mut connection.stream,
                    status,
                    &[("Content-Type", "application/json".to_owned())],
                    &error_body(INVALID_REQUEST, &message),
                    true,
                );
                return;
            }
        };
        exchange_number += 1;
        let client_prefix = format!("http-{number}-{exchange_number}");
        let mut exchange = Exchange {
            connection: &mut connection,
            shared,
            inputs,
            request: &request,
            cors: Vec::new(),
        };
        let keep_alive = exchange.handle(&client_prefix);
        if !keep_alive || !request.keep_alive {
            return;
        }
    }
}

/// The media types an `Accept` header admits, with RFC 9110 wildcards.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Accepts {
    json: bool,
    sse: bool,
}

/// How one request reaches the hub and how its answer is written.
struct Route {
    client: ClientId,
    /// `Mcp-Session-Id` to send back (on the answer to `initialize`).
    session_header: Option<String>,
    /// A stateless request's own short-lived client: closed afterwards; leaving closes it.
    stateless: bool,
    /// A 2026-07-28 request: a JSON-RPC error answer gets its HTTP status (400, 404).
    modern: bool,
}

fn accepts(request: &HttpRequest) -> Accepts {
    let Some(accept) = request.header("accept") else {
        return Accepts {
            json: false,
            sse: false,
        };
    };
    let types: Vec<String> = accept
        .split(',')
        .map(|item| {
            item.split(';')
                .next()
                .unwrap_or_default()
                .trim()
                .to_ascii_lowercase()
        })
        .collect();
    let any = types.iter().any(|kind| kind == "*/*");
    let json = any
        || types
            .iter()
            .any(|kind| kind == "application/json" || kind == "application/*");
    let sse = any
        || types
            .iter()
            .any(|kind| kind == "text/event-stream" || kind == "text/*");
    Accepts { json, sse }
}

/// The host of an `Origin` (`http://localhost:3000` → `localhost`).
fn origin_host(origin: &str) -> Option<&str> {
    let (_, rest) = origin.split_once("://")?;
    let authority = rest.split('/').next()?;
    if let Some(v6) = authority.strip_prefix('[') {
        return v6.split(']').next();
    }
    authority.split(':').next()
}

/// Whether a `Host` header names a loopback host (`localhost`, `127.0.0.1`, `[::1]`, any port).
fn host_is_loopback(host: &str) -> bool {
    origin_host(&format!("http://{host}")).is_some_and(|name| {
        name.eq_ignore_ascii_case("localhost")
            || name
                .parse::<IpAddr>()
                .is_ok_and(|address| address.is_loopback())
    })
}

/// Whether a request with this `Origin` may be served: loopback origins always (they are the
/// user's own pages), others only when listed with `--allow-origin`.
fn origin_allowed(origin: &str, options: &HttpOptions) -> bool {
    if options
        .allowed_origins
        .iter()
        .any(|allowed| allowed == "*" || allowed.eq_ignore_ascii_case(origin))
    {
        return true;
    }
    match origin_host(origin) {
        Some(host) => {
            host.eq_ignore_ascii_case("localhost")
                || host
                    .parse::<IpAddr>()
                    .is_ok_and(|address| address.is_loopback())
        }
        None => false,
    }
}

/// The credentials of an `Authorization` value in the `Bearer` scheme, whose name is
/// case-insensitive (RFC 9110 §11.1: `bearer TOKEN` was refused with 401).
fn bearer_credentials(value: &str) -> Option<&str> {
    let (scheme, credentials) = value.trim_start().split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then_some(credentials.trim_start())
}

/// Compare without an early exit, so the token cannot be guessed byte by byte from timings.
fn same_secret(given: &[u8], expected: &[u8]) -> bool {
    let mut difference = given.len() ^ expected.len();
    for (index, byte) in expected.iter().enumerate() {
        difference |= usize::from(given.get(index).copied().unwrap_or(0) ^ byte);
    }
    difference == 0
}

/// A fresh, unguessable session id: 128 random bits as hex (visible ASCII, §session management).
fn new_session_id() -> String {
    let mut bytes = [0u8; 16];
    let read = std::fs::File::open("/dev/urandom").and_then(|mut file| file.read_exact(&mut bytes));
    if read.is_err() {
        // No urandom (a strange sandbox): time and address entropy, still unique per process.
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default()
            .as_nanos();
        bytes = (now ^ (&bytes as *const _ as u128)).to_le_bytes();
    }
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

/// The HTTP status of a JSON-RPC error in a 2026-07-28 response (§transports: 400 for invalid
/// requests and version or header problems, 404 for an unknown method).
fn modern_status(message: &Value) -> u16 {
    match message
        .get("error")
        .and_then(|error| error.get("code"))
        .and_then(Value::as_i64)
    {
        Some(protocol::METHOD_NOT_FOUND) => 404,
        Some(
            protocol::PARSE_ERROR
            | protocol::INVALID_REQUEST
            | protocol::INVALID_PARAMS
            | protocol::UNSUPPORTED_PROTOCOL_VERSION
            | HEADER_MISMATCH,
        ) => 400,
        _ => 200,
    }
}

/// Decode an `Mcp-Name` value: verbatim, or `=?base64?…?=` (2026-07-28 §transports "Custom
/// headers") holding UTF-8.
fn decode_header_value(value: &str) -> Option<String> {
    let Some(payload) = value
        .strip_prefix("=?base64?")
        .and_then(|rest| rest.strip_suffix("?="))
    else {
        return Some(value.to_owned());
    };
    let decoded = decode_base64(payload)?;
    String::from_utf8(decoded).ok()
}

/// Standard base64 with padding; `None` on any bad character or length.
fn decode_base64(text: &str) -> Option<Vec<u8>> {
    let value = |byte: u8| -> Option<u32> {
        Some(match byte {
            b'A'..=b'Z' => byte - b'A',
            b'a'..=b'z' => byte - b'a' + 26,
            b'0'..=b'9' => byte - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        } as u32)
    };
    let bytes = text.as_bytes();
    if !bytes.len().is_multiple_of(4) {
        return None;
    }
    let mut out = Vec::with_capacity(bytes.len() / 4 * 3);
    for quad in bytes.chunks(4) {
        let padding = quad.iter().rev().take_while(|byte| **byte == b'=').count();
        if padding > 2 {
            return None;
        }
        let mut bits = 0u32;
        for (index, byte) in quad.iter().enumerate() {
            let digit = if index >= 4 - padding {
                0
            } else {
                value(*byte)?
            };
            bits = (bits << 6) | digit;
        }
        let decoded = bits.to_be_bytes();
        out.extend_from_slice(&decoded[1..4 - padding]);
    }
    Some(out)
}

/// Check a 2026-07-28 request's routing headers against its body: `None` when they agree, else
/// the -32020 message.
fn header_mismatch(request: &HttpRequest, method: &str, params: &Value) -> Option<String> {
    for name in ["mcp-protocol-version", "mcp-method", "mcp-name"] {
        if request.header_count(name) > 1 {
            return Some(format!("{name} header sent more than once"));
        }
    }
    let version = params
        .get("_meta")
        .and_then(|meta| meta.get(protocol::META_PROTOCOL_VERSION));
    if request
        .header("mcp-protocol-version")
        .map(|value| json!(value))
        != version.cloned()
    {
        return Some(
            "MCP-Protocol-Version header does not match the request's _meta protocol version"
                .to_owned(),
        );
    }
    if request.header("mcp-method") != Some(method) {
        return Some("Mcp-Method header does not match the request body's method".to_owned());
    }
    let name_key = match method {
        "tools/call" | "prompts/get" => "name",
        "resources/read" => "uri",
        _ => return None,
    };
    let body_value = params.get(name_key).and_then(Value::as_str)?;
    let header_value = request.header("mcp-name").and_then(decode_header_value);
    if header_value.as_deref() != Some(body_value) {
        return Some(format!(
            "Mcp-Name header does not match the request body's {name_key:?} parameter"
        ));
    }
    None
}

/// One request on one connection.
struct Exchange<'a> {
    connection: &'a mut Connection,
    shared: &'a Shared,
    inputs: &'a Sender<HubInput>,
    request: &'a HttpRequest,
    /// CORS headers for an allowed browser origin, added to every response.
    cors: Vec<(&'static str, String)>,
}

impl Exchange<'_> {
    /// Handle the request; returns whether the connection may serve another one.
    fn handle(&mut self, client_prefix: &str) -> bool {
        if self.request.path != ENDPOINT {
            return self.error(
                404,
                INVALID_REQUEST,
                &format!("not found: the MCP endpoint is {ENDPOINT}"),
            );
        }
        if self.shared.loopback_bind {
            // DNS rebinding defence in depth (the Origin check below is the spec's MUST): a
            // browser tricked into resolving another name to 127.0.0.1 still sends that name.
            let host = self.request.header("host").unwrap_or("localhost");
            if !host_is_loopback(host) {
                return self.error(403, INVALID_REQUEST, &format!("forbidden: Host {host:?} is not a loopback name (lspc listens on a loopback address)"));
            }
        }
        if let Some(origin) = self.request.header("origin") {
            if !origin_allowed(origin, &self.shared.options) {
                return self.error(
                    403,
                    INVALID_REQUEST,
                    &format!("forbidden: origin {origin:?} is not allowed (see --allow-origin)"),
                );
            }
            self.cors = vec![
                ("Access-Control-Allow-Origin", origin.to_owned()),
                (
                    "Access-Control-Expose-Headers",
                    "Mcp-Session-Id, MCP-Protocol-Version".to_owned(),
                ),
                ("Vary", "Origin".to_owned()),
            ];
        }
        if self.request.method == "OPTIONS" {
            // A CORS preflight carries no credentials (Fetch §4.8), so it is answered before the
            // token check. `respond` adds the CORS headers once (they were sent twice, and a
            // browser reads a repeated `Access-Control-Allow-Origin` as "X, X", which matches
            // no origin: the preflight failed).
            let headers = [
                ("Access-Control-Allow-Methods", "GET, POST, DELETE".to_owned()),
                (
                    "Access-Control-Allow-Headers",
                    "Content-Type, Accept, Authorization, Mcp-Session-Id, MCP-Protocol-Version, Mcp-Method, Mcp-Name, Last-Event-ID".to_owned(),
                ),
            ];
            return self.respond(204, &headers, b"", false);
        }
        if let Some(token) = &self.shared.options.token {
            let given = self
                .request
                .header("authorization")
                .and_then(bearer_credentials)
                .unwrap_or_default();
            if !same_secret(given.trim().as_bytes(), token.as_bytes()) {
                let mut headers = vec![("WWW-Authenticate", "Bearer".to_owned())];
                headers.push(("Content-Type", "application/json".to_owned()));
                let body = error_body(INVALID_REQUEST, "unauthorized: send Authorization: Bearer TOKEN (the token lspc mcp --http was given)");
                return self.respond(401, &headers, &body, false);
            }
        }
        match self.request.method.as_str() {
            "POST" => self.post(client_prefix),
            "GET" => self.get(),
            "DELETE" => self.delete(),
            _ => {
                let headers = vec![
                    ("Allow", "GET, POST, DELETE".to_owned()),
                    ("Content-Type", "application/json".to_owned()),
                ];
                let body = error_body(
                    INVALID_REQUEST,
                    &format!(
                        "method not allowed: {} (the MCP endpoint takes GET, POST and DELETE)",
                        self.request.method
                    ),
                );
                self.respond(405, &headers, &body, false)
            }
        }
    }

    fn respond(
        &mut self,
        status: u16,
        headers: &[(&str, String)],
        body: &[u8],
        close: bool,
    ) -> bool {
        let mut all: Vec<(&str, String)> = self.cors.clone();
        all.extend(headers.iter().cloned());
        let close = close || !self.request.keep_alive;
        http_wire::write_response(&mut self.connection.stream, status, &all, body, close).is_ok()
            && !close
    }

    /// A JSON-RPC error body (id `null`) with an HTTP status.
    fn error(&mut self, status: u16, code: i64, message: &str) -> bool {
        let body = error_body(code, message);
        self.respond(
            status,
            &[("Content-Type", "application/json".to_owned())],
            &body,
            false,
        )
    }

    fn json(&mut self, status: u16, message: &Value, extra: &[(&str, String)]) -> bool {
        let mut headers = vec![("Content-Type", "application/json".to_owned())];
        headers.extend(extra.iter().cloned());
        let body = serde_json::to_vec(message).unwrap_or_default();
        self.respond(status, &headers, &body, false)
    }

    fn session(&self) -> Option<ClientId> {
        self.request
            .header("mcp-session-id")
            .map(|id| ClientId(id.to_owned()))
    }

    fn post(&mut self, client_prefix: &str) -> bool {
        let content_type = self.request.header("content-type").unwrap_or_default();
        let media = content_type.split(';').next().unwrap_or_default().trim();
        if !media.eq_ignore_ascii_case("application/json") {
            return self.error(415, INVALID_REQUEST, &format!("unsupported media type {content_type:?}: POST a JSON-RPC message as application/json"));
        }
        let accepts = accepts(self.request);
        if !accepts.json && !accepts.sse {
            return self.error(
                406,
                INVALID_REQUEST,
                "not acceptable: Accept must list application/json and text/event-stream",
            );
        }
        let Ok(text) = std::str::from_utf8(&self.request.body) else {
            return self.error(400, PARSE_ERROR, "parse error: the body is not UTF-8");
        };
        let incoming = protocol::parse_line(text);
        let (id, method, params) = match &incoming {
            Incoming::Invalid(error) => {
                let error = error.clone();
                return self.json(400, &error, &[]);
            }
            Incoming::Blank => return self.error(400, PARSE_ERROR, "parse error: empty body"),
            Incoming::Request { id, method, params } => {
                (Some(id.clone()), method.clone(), params.clone())
            }
            Incoming::Notification { method, params } => (None, method.clone(), params.clone()),
            Incoming::Response => (None, String::new(), json!({})),
        };
        let modern = params
            .get("_meta")
            .and_then(|meta| meta.get(protocol::META_PROTOCOL_VERSION))
            .is_some();
        if let Some(version) = self.request.header("mcp-protocol-version") {
            if !modern && !protocol::supported_versions().contains(&version) {
                return self.error(400, INVALID_REQUEST, &format!("bad request: unsupported MCP-Protocol-Version {version:?} (lspc speaks {})", protocol::supported_versions().join(", ")));
            }
        }
        if modern && id.is_some() {
            if let Some(message) = header_mismatch(self.request, &method, &params) {
                let error = error_response(
                    id.as_ref().unwrap_or(&Value::Null),
                    HEADER_MISMATCH,
                    &message,
                    None,
                );
                return self.json(400, &error, &[]);
            }
        }
        let session = self.session();
        let Some(id) = id else {
            // A notification or a response: hand it to its session (cancellation), else drop it
            // (2026-07-28 has no client notifications over HTTP: closing a stream cancels).
            let Some(client) = session else {
                return self.respond(202, &[], b"", false);
            };
            let (stream, receiver) = unbounded();
            if self
                .inputs
                .send(HubInput::Message {
                    client,
                    incoming,
                    stream: stream.into(),
                })
                .is_err()
            {
                return self.error(503, INVALID_REQUEST, "the server is shutting down");
            }
            return match receiver.recv_timeout(Duration::from_secs(10)) {
                Ok(Outbound::UnknownClient) => self.unknown_session(),
                _ => self.respond(202, &[], b"", false),
            };
        };
        match session {
            Some(client) => {
                let route = Route {
                    client,
                    session_header: None,
                    stateless: false,
                    modern,
                };
                self.exchange(route, incoming, id, accepts)
            }
            None if method == "initialize" => {
                let client = ClientId(new_session_id());
                if self
                    .inputs
                    .send(HubInput::Open {
                        client: client.clone(),
                        notify: None,
                        own_passive: true,
                    })
                    .is_err()
                {
                    return self.error(503, INVALID_REQUEST, "the server is shutting down");
                }
                log::info!("HTTP session {} opened", client.0);
                let header = client.0.clone();
                let route = Route {
                    client,
                    session_header: Some(header),
                    stateless: false,
                    modern: false,
                };
                self.exchange(route, incoming, id, accepts)
            }
            None if modern || matches!(method.as_str(), "ping" | "server/discover") => {
                let client = ClientId(format!("stateless-{client_prefix}"));
                if self
                    .inputs
                    .send(HubInput::Open {
                        client: client.clone(),
                        notify: None,
                        own_passive: false,
                    })
                    .is_err()
                {
                    return self.error(503, INVALID_REQUEST, "the server is shutting down");
                }
                let route = Route {
                    client,
                    session_header: None,
                    stateless: true,
                    modern,
                };
                self.exchange(route, incoming, id, accepts)
            }
            None => {
                let error = error_response(&id, INVALID_REQUEST, &format!("bad request: {method} needs an Mcp-Session-Id header (send initialize first), or io.modelcontextprotocol/protocolVersion in _meta (2026-07-28)"), None);
                self.json(400, &error, &[])
            }
        }
    }

    /// Pass a request to the hub and write what comes back: one JSON body when the answer comes
    /// first, else an SSE stream until the hub ends the request. A stateless (`ephemeral`) client
    /// is closed afterwards; a client that goes away cancels the request.
    fn exchange(&mut self, route: Route, incoming: Incoming, id: Value, accepts: Accepts) -> bool {
        let Route {
            client,
            session_header,
            stateless: ephemeral,
            modern,
        } = route;
        let Accepts {
            json: accepts_json,
            sse: accepts_sse,
        } = accepts;
        let mut extra: Vec<(&str, String)> = Vec::new();
        if let Some(session) = session_header {
            extra.push(("Mcp-Session-Id", session));
        }
        let (stream, receiver) = unbounded();
        if self
            .inputs
            .send(HubInput::Message {
                client: client.clone(),
                incoming,
                stream: stream.into(),
            })
            .is_err()
        {
            return self.error(503, INVALID_REQUEST, "the server is shutting down");
        }
        let started = Instant::now();
        let mut sse = false;
        let mut last_write = Instant::now();
        let keep_alive = loop {
            match receiver.recv_timeout(POLL_INTERVAL) {
                Ok(Outbound::UnknownClient) => break self.unknown_session(),
                Ok(Outbound::Message(message)) => {
                    let is_answer =
                        message.get("id") == Some(&id) && message.get("method").is_none();
                    if !sse {
                        if is_answer && accepts_json {
                            let status = if modern { modern_status(&message) } else { 200 };
                            break self.json(status, &message, &extra);
                        }
                        if !accepts_sse {
                            continue;
                        }
                        if !self.start_sse(&extra) {
                            self.abandon(&client, &id, ephemeral);
                            return false;
                        }
                        sse = true;
                    }
                    let data = serde_json::to_string(&message).unwrap_or_default();
                    if http_wire::write_sse_event(&mut self.connection.stream, &data).is_err() {
                        self.abandon(&client, &id, ephemeral);
                        return false;
                    }
                    last_write = Instant::now();
                }
                Err(RecvTimeoutError::Timeout) => {
                    if self.connection.peer_closed() {
                        log::info!(
                            "HTTP client of {} went away: cancelling its request",
                            client.0
                        );
                        self.abandon(&client, &id, ephemeral);
                        return false;
                    }
                    if !sse && accepts_sse && started.elapsed() >= SSE_COMMIT_AFTER {
                        if !self.start_sse(&extra) {
                            self.abandon(&client, &id, ephemeral);
                            return false;
                        }
                        sse = true;
                        last_write = Instant::now();
                    }
                    if sse && last_write.elapsed() >= KEEP_ALIVE_INTERVAL {
                        if http_wire::write_sse_comment(&mut self.connection.stream).is_err() {
                            self.abandon(&client, &id, ephemeral);
                            return false;
                        }
                        last_write = Instant::now();
                    }
                }
                // The hub ended the request: answered on the stream, or cancelled (no answer).
                Err(RecvTimeoutError::Disconnected) if sse => break false,
                Err(RecvTimeoutError::Disconnected) if accepts_sse => {
                    let _ = self.start_sse(&extra);
                    break false;
                }
                Err(RecvTimeoutError::Disconnected) => break self.respond(204, &extra, b"", false),
            }
        };
        if ephemeral {
            let _ = self.inputs.send(HubInput::Close {
                client,
                stream: None,
            });
        }
        keep_alive
    }

    fn start_sse(&mut self, extra: &[(&str, String)]) -> bool {
        let mut headers: Vec<(&str, String)> = self.cors.clone();
        headers.extend(extra.iter().cloned());
        http_wire::write_sse_head(&mut self.connection.stream, &headers).is_ok()
    }

    fn abandon(&mut self, client: &ClientId, id: &Value, ephemeral: bool) {
        let input = if ephemeral {
            HubInput::Close {
                client: client.clone(),
                stream: None,
            }
        } else {
            HubInput::Abandon {
                client: client.clone(),
                id: id.clone(),
            }
        };
        let _ = self.inputs.send(input);
    }

    fn unknown_session(&mut self) -> bool {
        self.error(
            404,
            INVALID_REQUEST,
            "session not found: the Mcp-Session-Id is unknown or ended (send initialize again)",
        )
    }

    /// GET: the session's stream of notifications that belong to no request.
    fn get(&mut self) -> bool {
        if !accepts(self.request).sse {
            return self.error(
                406,
                INVALID_REQUEST,
                "not acceptable: GET needs Accept: text/event-stream",
            );
        }
        let Some(client) = self.session() else {
            // 2026-07-28 has no GET stream, and without a session there is nothing to listen to.
            let headers = vec![
                ("Allow", "POST".to_owned()),
                ("Content-Type", "application/json".to_owned()),
            ];
            let body = error_body(INVALID_REQUEST, "method not allowed: GET needs an Mcp-Session-Id (2026-07-28 clients use subscriptions/listen)");
            return self.respond(405, &headers, &body, false);
        };
        let (notify, receiver) = unbounded();
        let (acknowledge, acknowledged) = bounded(1);
        if self
            .inputs
            .send(HubInput::Attach {
                client: client.clone(),
                notify: notify.into(),
            })
            .is_err()
        {
            return self.error(503, INVALID_REQUEST, "the server is shutting down");
        }
        // The hub answers UnknownClient at once, or keeps the sender; a ping through the same
        // channel orders after the attach, so its answer means the attach was accepted.
        let _ = self.inputs.send(HubInput::Message {
            client,
            incoming: Incoming::Response,
            stream: acknowledge.into(),
        });
        match acknowledged.recv_timeout(Duration::from_secs(10)) {
            Ok(Outbound::UnknownClient) => return self.unknown_session(),
            Ok(_) | Err(RecvTimeoutError::Disconnected) => {}
            Err(RecvTimeoutError::Timeout) => {
                return self.error(503, INVALID_REQUEST, "the server is busy")
            }
        }
        if !self.start_sse(&[]) {
            return false;
        }
        let mut last_write = Instant::now();
        loop {
            match receiver.recv_timeout(POLL_INTERVAL) {
                Ok(Outbound::Message(message)) => {
                    let data = serde_json::to_string(&message).unwrap_or_default();
                    if http_wire::write_sse_event(&mut self.connection.stream, &data).is_err() {
                        return false;
                    }
                    last_write = Instant::now();
                }
                Ok(Outbound::UnknownClient) | Err(RecvTimeoutError::Disconnected) => return false,
                Err(RecvTimeoutError::Timeout) => {
                    if self.connection.peer_closed() {
                        return false;
                    }
                    if last_write.elapsed() >= KEEP_ALIVE_INTERVAL {
                        if http_wire::write_sse_comment(&mut self.connection.stream).is_err() {
                            return false;
                        }
                        last_write = Instant::now();
                    }
                }
            }
        }
    }

    /// DELETE: end the session (its requests are cancelled, its GET stream ends).
    fn delete(&mut self) -> bool {
        let Some(client) = self.session() else {
            return self.error(
                400,
                INVALID_REQUEST,
                "bad request: DELETE needs an Mcp-Session-Id header",
            );
        };
        let (stream, receiver) = unbounded();
        if self
            .inputs
            .send(HubInput::Close {
                client: client.clone(),
                stream: Some(stream.into()),
            })
            .is_err()
        {
            return self.error(503, INVALID_REQUEST, "the server is shutting down");
        }
        match receiver.recv_timeout(Duration::from_secs(10)) {
            Ok(Outbound::UnknownClient) => self.unknown_session(),
            _ => {
                log::info!("HTTP session {} ended", client.0);
                self.respond(204, &[], b"", false)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_parse() {
        let check = |input: &str, expected: &str| {
            let actual = match parse_address(input) {
                Ok(address) => address.to_string(),
                Err(error) => error.to_string(),
            };
            assert_eq!(actual, expected, "{input}");
        };
        check("8080", "127.0.0.1:8080");
        check("0.0.0.0:0", "0.0.0.0:0");
        check("[::1]:9000", "[::1]:9000");
        check("localhost:7000", "127.0.0.1:7000");
        check(
            "nonsense",
            "--http: expected ADDR:PORT or PORT (e.g. 127.0.0.1:8080), got \"nonsense\"",
        );
    }

    #[test]
    fn origins_are_checked() {
        let mut options = HttpOptions::new("127.0.0.1:0".parse().unwrap());
        let check = |origin: &str, options: &HttpOptions, expected: bool| {
            assert_eq!(origin_allowed(origin, options), expected, "{origin}");
        };
        check("http://localhost:3000", &options, true);
        check("http://127.0.0.1", &options, true);
        check("http://[::1]:8080", &options, true);
        check("https://evil.example", &options, false);
        check("http://localhost.evil.example", &options, false);
        check("null", &options, false);
        assert!(host_is_loopback("127.0.0.1:8765"));
        assert!(host_is_loopback("localhost"));
        assert!(host_is_loopback("[::1]:80"));
        assert!(!host_is_loopback("evil.example:8765"));
        assert!(!host_is_loopback("127.0.0.1.evil.example"));
        options.allowed_origins = vec!["https://app.example".to_owned()];
        check("https://app.example", &options, true);
        check("https://other.example", &options, false);
    }

    #[test]
    fn accept_headers_and_secrets() {
        let request = |accept: Option<&str>| HttpRequest {
            method: "POST".to_owned(),
            path: "/mcp".to_owned(),
            headers: accept
                .map(|value| vec![("accept".to_owned(), value.to_owned())])
                .unwrap_or_default(),
            body: Vec::new(),
            keep_alive: true,
        };
        assert_eq!(
            accepts(&request(None)),
            Accepts {
                json: false,
                sse: false
            }
        );
        assert_eq!(
            accepts(&request(Some("application/json, text/event-stream"))),
            Accepts {
                json: true,
                sse: true
            }
        );
        assert_eq!(
            accepts(&request(Some("*/*"))),
            Accepts {
                json: true,
                sse: true
            }
        );
        assert_eq!(
            accepts(&request(Some("application/json;q=0.9"))),
            Accepts {
                json: true,
                sse: false
            }
        );
        assert_eq!(
            accepts(&request(Some("text/html"))),
            Accepts {
                json: false,
                sse: false
            }
        );
        assert!(same_secret(b"abc", b"abc"));
        assert!(!same_secret(b"abd", b"abc"));
        assert!(!same_secret(b"ab", b"abc"));
        assert!(!same_secret(b"abcd", b"abc"));
        assert_eq!(new_session_id().len(), 32);
    }

    #[test]
    fn header_values_decode() {
        assert_eq!(decode_header_value("hover"), Some("hover".to_owned()));
        assert_eq!(
            decode_header_value("=?base64?aMOpbGxv?="),
            Some("héllo".to_owned())
        );
        assert_eq!(decode_header_value("=?base64?!!!!?="), None);
        assert_eq!(decode_base64("YQ=="), Some(b"a".to_vec()));
        assert_eq!(decode_base64("YWI="), Some(b"ab".to_vec()));
        assert_eq!(decode_base64("YWJj"), Some(b"abc".to_vec()));
    }
}
