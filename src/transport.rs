//! JSON-RPC framing over a language server's stdio (LSP 3.17 "Base Protocol",
//! <https://microsoft.github.io/language-server-protocol/specifications/lsp/3.17/specification/#baseProtocol>).
//!
//! Reading is tolerant because real servers are sloppy: [`FrameReader`] accepts CRLF or LF-only
//! header lines, headers in any order and case, unknown headers, and skips any bytes before a
//! `Content-Length` header (banners, ANSI escapes, stray `console.log` lines), logging each run of
//! junk once. [`decode`] accepts shapes that `lsp_server::Message::read` rejects: `"id": null`
//! error replies, `{"id": 1}` void replies, replies that carry both `result` and `error`, and
//! server request ids of any JSON type.
//!
//! Invariants:
//! - A bad JSON body costs that one message ([`DecodeError`]); lost framing ([`FramingError`]) ends
//!   the stream, and the caller treats the server as crashed.
//! - Memory is bounded on hostile input: one body is at most [`MAX_BODY_BYTES`], one header or
//!   junk line is held to about [`MAX_LINE_BYTES`] (plus one read), and a body is read incrementally rather than
//!   allocated up front from the declared length.
//! - Writing omits `params` when it is `null` (TypeScript 7's native server rejects
//!   `"params": null` on `shutdown` and then ignores `exit`).

use std::fmt;
use std::io::{self, BufRead, Read, Write};

use lsp_server::{RequestId, ResponseError};
use serde_json::Value;

/// Largest body accepted, in bytes (256 MiB). A larger `Content-Length` is lost framing.
pub const MAX_BODY_BYTES: u64 = 256 * 1024 * 1024;

/// Longest header or junk line held in memory, in bytes (64 KiB). Longer lines keep only their
/// last `LINE_TAIL_BYTES` (256) bytes, so a `Content-Length` header glued to the end of a long junk
/// run without a newline is still found.
pub const MAX_LINE_BYTES: usize = 64 * 1024;

/// Bytes kept from the end of an over-long line (enough to hold a `Content-Length:` prefix).
const LINE_TAIL_BYTES: usize = 256;

/// How many junk bytes are quoted in the warning for one run of junk.
const JUNK_QUOTE_BYTES: usize = 200;

/// How many characters of params/results `Debug` shows before eliding the rest.
const DEBUG_PAYLOAD_CHARS: usize = 160;

/// One decoded message from a server.
#[derive(Clone)]
pub enum IncomingMessage {
    /// A server-to-client request. `id` is kept as the raw JSON value (any integer, a UUID
    /// string, `"ts1"`) so the answer echoes it exactly; see [`Outgoing::Response`].
    /// `params` is `Value::Null` when absent.
    Request {
        id: Value,
        method: String,
        params: Value,
    },
    /// A notification (`method` without `id`). `params` is `Value::Null` when absent.
    Notification { method: String, params: Value },
    /// A reply to one of our requests. `id` is `None` for `"id": null` error replies (the server
    /// could not read our id) and for ids lspc never sends (floats, integers beyond `i32`); a
    /// reply with neither `result` nor `error` is `Ok(Value::Null)`; when both are present the
    /// error wins.
    Response {
        id: Option<RequestId>,
        result: Result<Value, ResponseError>,
    },
}

impl fmt::Debug for IncomingMessage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            IncomingMessage::Request { id, method, params } => f
                .debug_struct("Request")
                .field("id", id)
                .field("method", method)
                .field("params", &Elided(params))
                .finish(),
            IncomingMessage::Notification { method, params } => f
                .debug_struct("Notification")
                .field("method", method)
                .field("params", &Elided(params))
                .finish(),
            IncomingMessage::Response { id, result } => {
                let mut debug = f.debug_struct("Response");
                debug.field("id", id);
                match result {
                    Ok(value) => debug.field("result", &Elided(value)),
                    Err(error) => debug.field("error", error),
                };
                debug.finish()
            }
        }
    }
}

/// `Debug` adapter that prints a JSON value cut to [`DEBUG_PAYLOAD_CHARS`] characters, so logs
/// never carry whole documents.
struct Elided<'a>(&'a Value);

impl fmt::Debug for Elided<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = self.0.to_string();
        match text.char_indices().nth(DEBUG_PAYLOAD_CHARS) {
            None => f.write_str(&text),
            Some((cut, _)) => write!(f, "{}… ({} bytes)", &text[..cut], text.len()),
        }
    }
}

/// A message for a server's stdin.
#[derive(Clone)]
pub enum Outgoing {
    /// Any message whose ids fit `lsp_server::RequestId` (our requests and notifications).
    Message(lsp_server::Message),
    /// The answer to a server request, echoing the request's raw `id` exactly.
    Response {
        id: Value,
        result: Result<Value, ResponseError>,
    },
}

impl fmt::Debug for Outgoing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Outgoing::Message(lsp_server::Message::Request(request)) => f
                .debug_struct("Request")
                .field("id", &request.id)
                .field("method", &request.method)
                .field("params", &Elided(&request.params))
                .finish(),
            Outgoing::Message(lsp_server::Message::Notification(notification)) => f
                .debug_struct("Notification")
                .field("method", &notification.method)
                .field("params", &Elided(&notification.params))
                .finish(),
            Outgoing::Message(lsp_server::Message::Response(response)) => f
                .debug_struct("Response")
                .field("id", &response.id)
                .field("ok", &response.response_result.is_ok())
                .finish(),
            Outgoing::Response { id, result } => f
                .debug_struct("Response")
                .field("id", id)
                .field("ok", &result.is_ok())
                .finish(),
        }
    }
}

/// Why the byte stream from a server can no longer be split into messages. Ends that server.
#[derive(Debug)]
pub enum FramingError {
    /// Reading the server's stdout failed.
    Io(io::Error),
    /// A header block ended (empty line) without a `Content-Length` header.
    MissingContentLength,
    /// The `Content-Length` value is not a decimal byte count.
    InvalidContentLength { value: String },
    /// The declared body length exceeds [`MAX_BODY_BYTES`].
    BodyTooLarge { length: u64 },
    /// The stream ended inside a header block.
    EofInHeaders,
    /// The stream ended inside a body: `received` of `expected` bytes arrived.
    EofInBody { expected: u64, received: u64 },
}

impl fmt::Display for FramingError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FramingError::Io(error) => write!(f, "reading server output failed: {error}"),
            FramingError::MissingContentLength => {
                write!(f, "lost framing: header block without content-length")
            }
            FramingError::InvalidContentLength { value } => {
                write!(f, "lost framing: invalid content-length {value:?}")
            }
            FramingError::BodyTooLarge { length } => write!(
                f,
                "lost framing: content-length {length} exceeds the {MAX_BODY_BYTES} byte limit"
            ),
            FramingError::EofInHeaders => write!(f, "lost framing: output ended inside headers"),
            FramingError::EofInBody { expected, received } => write!(
                f,
                "lost framing: output ended inside a body ({received} of {expected} bytes)"
            ),
        }
    }
}

impl std::error::Error for FramingError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            FramingError::Io(error) => Some(error),
            _ => None,
        }
    }
}

/// Why one body could not be decoded. Costs that message only.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DecodeError {
    /// The body is not JSON (or not UTF-8).
    NotJson { error: String },
    /// The body is JSON but not an object with `method` or `id`.
    NotAMessage { kind: &'static str },
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DecodeError::NotJson { error } => write!(f, "message body is not json: {error}"),
            DecodeError::NotAMessage { kind } => {
                write!(f, "message body is not a json-rpc message: {kind}")
            }
        }
    }
}

impl std::error::Error for DecodeError {}

/// Splits a server's stdout into message bodies. See the module doc for what is tolerated.
pub struct FrameReader<R: BufRead> {
    reader: R,
    /// The current line, including its terminator; at most about [`MAX_LINE_BYTES`].
    line: Vec<u8>,
    /// The run of junk seen since the last frame, reported once when it ends.
    junk: JunkRun,
}

#[derive(Default)]
struct JunkRun {
    quoted: Vec<u8>,
    total_bytes: u64,
}

impl JunkRun {
    fn add(&mut self, bytes: &[u8]) {
        let room = JUNK_QUOTE_BYTES.saturating_sub(self.quoted.len());
        self.quoted
            .extend_from_slice(&bytes[..bytes.len().min(room)]);
        self.total_bytes += bytes.len() as u64;
    }

    /// Logs the run (if any) with one warning and forgets it.
    fn report(&mut self) {
        if self.total_bytes == 0 {
            return;
        }
        // Whitespace between frames (a stray trailing newline) is common and harmless.
        let only_whitespace = self.total_bytes == self.quoted.len() as u64
            && self.quoted.iter().all(u8::is_ascii_whitespace);
        if !only_whitespace {
            log::warn!(
                "skipped {} bytes of non-lsp output from server: {:?}{}",
                self.total_bytes,
                String::from_utf8_lossy(&self.quoted),
                if self.total_bytes > self.quoted.len() as u64 {
                    "…"
                } else {
                    ""
                },
            );
        }
        self.quoted.clear();
        self.total_bytes = 0;
    }
}

impl<R: BufRead> FrameReader<R> {
    pub fn new(reader: R) -> FrameReader<R> {
        FrameReader {
            reader,
            line: Vec::new(),
            junk: JunkRun::default(),
        }
    }

    /// Reads the next body. `Ok(None)` is a clean end of stream (between frames, possibly after
    /// junk); every other end is an error.
    pub fn read_frame(&mut self) -> Result<Option<Vec<u8>>, FramingError> {
        // Phase 1: skip junk until a line holds `Content-Length:` (or `Content-Type:`, which some
        // servers send first). The header may be glued to the end of junk without a newline.
        let mut content_length: Option<u64> = None;
        loop {
            if !self.read_line_capped()? {
                self.junk.report();
                return Ok(None);
            }
            let Some(start) = find_header_start(&self.line) else {
                let line = std::mem::take(&mut self.line);
                self.junk.add(&line);
                self.line = line;
                continue;
            };
            let (junk, header) = self.line.split_at(start);
            self.junk.add(junk);
            self.junk.report();
            if let Some(length) = parse_header(header)? {
                content_length = Some(length);
            }
            break;
        }
        // Phase 2: the rest of the header block, up to an empty line.
        loop {
            if !self.read_line_capped()? {
                return Err(FramingError::EofInHeaders);
            }
            let text = trim_line_end(&self.line);
            if text.is_empty() {
                break;
            }
            if let Some(length) = parse_header(text)? {
                content_length = Some(length);
            }
        }
        let length = content_length.ok_or(FramingError::MissingContentLength)?;
        if length > MAX_BODY_BYTES {
            return Err(FramingError::BodyTooLarge { length });
        }
        // Read incrementally: a lying length must not allocate before the bytes arrive.
        let mut body = Vec::with_capacity(length.min(1 << 20) as usize);
        let received = (&mut self.reader)
            .take(length)
            .read_to_end(&mut body)
            .map_err(FramingError::Io)? as u64;
        if received < length {
            return Err(FramingError::EofInBody {
                expected: length,
                received,
            });
        }
        Ok(Some(body))
    }

    /// Reads one line (terminator included) into `self.line`. Returns false at end of stream
    /// with nothing read. Over-long lines are cut to their tail; the cut bytes count as junk.
    fn read_line_capped(&mut self) -> Result<bool, FramingError> {
        self.line.clear();
        loop {
            let available = match self.reader.fill_buf() {
                Ok(available) => available,
                Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
                Err(error) => return Err(FramingError::Io(error)),
            };
            if available.is_empty() {
                return Ok(!self.line.is_empty());
            }
            let newline = available.iter().position(|&byte| byte == b'\n');
            let taken = newline.map_or(available.len(), |index| index + 1);
            self.line.extend_from_slice(&available[..taken]);
            self.reader.consume(taken);
            if newline.is_some() {
                return Ok(true);
            }
            if self.line.len() > MAX_LINE_BYTES {
                let cut = self.line.len() - LINE_TAIL_BYTES;
                self.junk.add(&self.line[..cut]);
                self.line.drain(..cut);
            }
        }
    }
}

/// Where a `Content-Length:` or `Content-Type:` header starts in `line` (ASCII case-insensitive).
fn find_header_start(line: &[u8]) -> Option<usize> {
    const NAMES: [&[u8]; 2] = [b"content-length:", b"content-type:"];
    (0..line.len()).find(|&start| {
        NAMES.iter().any(|name| {
            line.len() - start >= name.len()
                && line[start..start + name.len()].eq_ignore_ascii_case(name)
        })
    })
}

fn trim_line_end(line: &[u8]) -> &[u8] {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    line.strip_suffix(b"\r").unwrap_or(line)
}

/// Parses one header line. Returns the length for `Content-Length`, `None` for other headers and
/// for lines that are not headers at all (logged; the empty line still ends the block).
fn parse_header(line: &[u8]) -> Result<Option<u64>, FramingError> {
    let line = trim_line_end(line);
    let Some(colon) = line.iter().position(|&byte| byte == b':') else {
        log::warn!(
            "ignored malformed header line from server: {:?}",
            String::from_utf8_lossy(line)
        );
        return Ok(None);
    };
    let name = line[..colon].trim_ascii();
    if !name.eq_ignore_ascii_case(b"content-length") {
        return Ok(None);
    }
    let value = line[colon + 1..].trim_ascii();
    let invalid = || FramingError::InvalidContentLength {
        value: String::from_utf8_lossy(value).into_owned(),
    };
    let text = std::str::from_utf8(value).map_err(|_| invalid())?;
    text.parse::<u64>().map(Some).map_err(|_| invalid())
}

/// The id and raw `result` of a successful reply to a request lspc numbered, cut out of `body`
/// without building a `Value` tree (issue 15: the tree cost a definition answer about 16k
/// instructions before its caller parsed it again). `None` for every other body: a request, a
/// notification, an error reply, a reply without `result`, an id lspc never sends (a string, a
/// float, past `i32`), duplicate keys, anything that is not one JSON object; [`decode`] reads
/// those whole. For a body both read, the id and the result are the same JSON.
pub fn decode_success(body: &[u8]) -> Option<(i32, &serde_json::value::RawValue)> {
    use serde_json::value::RawValue;
    /// A member as its raw text whatever it holds (`null` included), `None` when absent.
    fn present<'de, D: serde::Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Option<&'de RawValue>, D::Error> {
        <&RawValue as serde::Deserialize>::deserialize(deserializer).map(Some)
    }
    #[derive(serde::Deserialize)]
    struct Envelope<'a> {
        #[serde(default, borrow, deserialize_with = "present")]
        id: Option<&'a RawValue>,
        #[serde(default, borrow, deserialize_with = "present")]
        method: Option<&'a RawValue>,
        #[serde(default, borrow, deserialize_with = "present")]
        result: Option<&'a RawValue>,
        #[serde(default, borrow, deserialize_with = "present")]
        error: Option<&'a RawValue>,
    }
    let envelope: Envelope = serde_json::from_slice(body).ok()?;
    if envelope.method.is_some() || envelope.error.is_some_and(|error| error.get() != "null") {
        return None;
    }
    let id = serde_json::from_str::<i64>(envelope.id?.get()).ok()?;
    Some((i32::try_from(id).ok()?, envelope.result?))
}

/// Decodes one body (JSON-RPC 2.0, <https://www.jsonrpc.org/specification>) into an
/// [`IncomingMessage`], tolerating the reply shapes described on [`IncomingMessage::Response`].
pub fn decode(body: &[u8]) -> Result<IncomingMessage, DecodeError> {
    let value: Value = serde_json::from_slice(body).map_err(|error| DecodeError::NotJson {
        error: error.to_string(),
    })?;
    let Value::Object(mut object) = value else {
        return Err(DecodeError::NotAMessage {
            kind: json_kind(&value),
        });
    };
    let params = object.remove("params").unwrap_or(Value::Null);
    if let Some(method) = object.get("method") {
        let Some(method) = method.as_str() else {
            return Err(DecodeError::NotAMessage {
                kind: "method is not a string",
            });
        };
        let method = method.to_owned();
        return Ok(match object.remove("id") {
            // A request with `"id": null` is still a request; answering it echoes `null`.
            Some(id) => IncomingMessage::Request { id, method, params },
            None => IncomingMessage::Notification { method, params },
        });
    }
    let Some(raw_id) = object.remove("id") else {
        return Err(DecodeError::NotAMessage {
            kind: "object without method or id",
        });
    };
    let id = response_id(&raw_id);
    let result = match (object.remove("error"), object.remove("result")) {
        (Some(error), _) if !error.is_null() => Err(response_error(error)),
        (_, Some(result)) => Ok(result),
        (_, None) => Ok(Value::Null),
    };
    Ok(IncomingMessage::Response { id, result })
}

/// The number of a request id lspc sent (lspc numbers its requests); `None` for a string id.
pub fn request_id_number(id: &RequestId) -> Option<i32> {
    serde_json::to_value(id)
        .ok()
        .and_then(|id| id.as_i64())
        .and_then(|id| i32::try_from(id).ok())
}

/// Maps a reply id to the ids lspc sends (`i32` or string); anything else cannot be ours.
fn response_id(raw_id: &Value) -> Option<RequestId> {
    match raw_id {
        Value::Null => None,
        Value::String(text) => Some(RequestId::from(text.clone())),
        Value::Number(number) => match number.as_i64().and_then(|wide| i32::try_from(wide).ok()) {
            Some(narrow) => Some(RequestId::from(narrow)),
            None => {
                log::warn!("reply id {number} is not an id lspc sends; treating it as unknown");
                None
            }
        },
        other => {
            log::warn!(
                "reply id {other} has json type {}; treating it as unknown",
                json_kind(other)
            );
            None
        }
    }
}

/// Reads a JSON-RPC error object, tolerating missing or oddly typed fields.
fn response_error(error: Value) -> ResponseError {
    if let Ok(parsed) = serde_json::from_value::<ResponseError>(error.clone()) {
        return parsed;
    }
    let code = error
        .get("code")
        .and_then(Value::as_i64)
        .and_then(|code| i32::try_from(code).ok())
        .unwrap_or(lsp_server::ErrorCode::InternalError as i32);
    let message = match error.get("message").and_then(Value::as_str) {
        Some(message) => message.to_owned(),
        None => error.to_string(),
    };
    ResponseError {
        code,
        message,
        data: error.get("data").cloned(),
    }
}

fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// A request's params: a tree, or JSON text serialised straight from typed params (issue 15:
/// the instant queries' params skip building a `Value` only to serialise it). Both are written
/// inline ([`write_request_params`]); a tree that is `null` is left out of the message.
#[derive(Debug, Clone)]
pub enum RequestParams {
    Tree(Value),
    /// Written by `serde_json` ([`RequestParams::of`]): valid JSON, not `null`.
    Text(String),
}

impl RequestParams {
    /// `params` serialised once into text (`null` when it cannot be serialised, logged).
    pub fn of<T: serde::Serialize>(params: &T) -> RequestParams {
        match serde_json::to_string(params) {
            Ok(text) if text != "null" => RequestParams::Text(text),
            Ok(_) => RequestParams::Tree(Value::Null),
            Err(error) => {
                log::warn!("cannot serialise request params: {error}");
                RequestParams::Tree(Value::Null)
            }
        }
    }

    /// As a tree (parsing the text form).
    pub fn into_value(self) -> Value {
        match self {
            RequestParams::Tree(value) => value,
            RequestParams::Text(text) => serde_json::from_str(&text).unwrap_or(Value::Null),
        }
    }
}

impl From<Value> for RequestParams {
    fn from(value: Value) -> RequestParams {
        RequestParams::Tree(value)
    }
}

/// Writes request `id` framed, its params given as a tree or as text (see [`write_request`]).
pub fn write_request_params(
    w: &mut impl Write,
    id: &RequestId,
    method: &str,
    params: &RequestParams,
) -> io::Result<()> {
    match params {
        RequestParams::Tree(value) => write_request(w, id, method, value),
        RequestParams::Text(text) => {
            // WireRequest's fields in its order, with the params' text in place.
            let mut body = Vec::with_capacity(64 + method.len() + text.len());
            body.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
            serde_json::to_writer(&mut body, id)?;
            body.extend_from_slice(b",\"method\":");
            serde_json::to_writer(&mut body, method)?;
            body.extend_from_slice(b",\"params\":");
            body.extend_from_slice(text.as_bytes());
            body.push(b'}');
            write_framed(w, &body)
        }
    }
}

/// Writes one framed message (`Content-Length: N\r\n\r\n` + UTF-8 JSON) and flushes.
///
/// Requests and notifications are written by [`write_request`] and [`write_notification`], which
/// omit `null` params as `lsp_server::Message::write` does. `Outgoing::Response` goes through
/// `lsp_server::Message::write` when its id is an `i32` or a string; other ids (large integers,
/// `null`) are written by hand with the same framing so they are echoed exactly.
pub fn write_outgoing(w: &mut impl Write, msg: &Outgoing) -> io::Result<()> {
    match msg {
        Outgoing::Message(lsp_server::Message::Request(request)) => {
            write_request(w, &request.id, &request.method, &request.params)
        }
        Outgoing::Message(lsp_server::Message::Notification(notification)) => {
            write_notification(w, &notification.method, &notification.params)
        }
        Outgoing::Message(message) => message.write(w),
        Outgoing::Response { id, result } => {
            if let Some(request_id) = lsp_request_id(id) {
                let response = lsp_server::Response {
                    id: request_id,
                    response_result: result.clone(),
                };
                return lsp_server::Message::Response(response).write(w);
            }
            let (result, error) = match result {
                Ok(value) => (Some(value), None),
                Err(error) => (None, Some(error)),
            };
            let body = RawResponse {
                jsonrpc: "2.0",
                id,
                result,
                error,
            };
            write_framed(w, &serde_json::to_vec(&body)?)
        }
    }
}

/// Writes request `id` framed, from borrowed parts (issue 15: the loop serialises a request
/// once, straight from what it keeps for retries, with no `lsp_server::Request` copy and no
/// `serde(flatten)` pass). Field order and the omitted `null` params are those of
/// `lsp_server::Message::write`.
pub fn write_request(
    w: &mut impl Write,
    id: &RequestId,
    method: &str,
    params: &Value,
) -> io::Result<()> {
    let body = WireRequest {
        jsonrpc: "2.0",
        id: Some(id),
        method,
        params,
    };
    write_framed(w, &serde_json::to_vec(&body)?)
}

/// Writes a notification framed, from borrowed parts (see [`write_request`]).
pub fn write_notification(w: &mut impl Write, method: &str, params: &Value) -> io::Result<()> {
    let body = WireRequest {
        jsonrpc: "2.0",
        id: None,
        method,
        params,
    };
    write_framed(w, &serde_json::to_vec(&body)?)
}

/// `Content-Length: N\r\n\r\n` and `body` in one write, then a flush.
fn write_framed(w: &mut impl Write, body: &[u8]) -> io::Result<()> {
    if log::log_enabled!(log::Level::Debug) {
        log::debug!("> {}", String::from_utf8_lossy(body));
    }
    let mut framed = Vec::with_capacity(body.len() + 32);
    write!(framed, "Content-Length: {}\r\n\r\n", body.len())?;
    framed.extend_from_slice(body);
    w.write_all(&framed)?;
    w.flush()
}

/// A request or notification in JSON-RPC field order.
#[derive(serde::Serialize)]
struct WireRequest<'a> {
    jsonrpc: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<&'a RequestId>,
    method: &'a str,
    #[serde(skip_serializing_if = "Value::is_null")]
    params: &'a Value,
}

/// A response with an id `lsp_server::RequestId` cannot hold, in JSON-RPC field order.
#[derive(serde::Serialize)]
struct RawResponse<'a> {
    jsonrpc: &'static str,
    id: &'a Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    result: Option<&'a Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<&'a ResponseError>,
}

/// The `lsp_server::RequestId` that serialises to exactly `id`, if there is one.
fn lsp_request_id(id: &Value) -> Option<RequestId> {
    match id {
        Value::String(text) => Some(RequestId::from(text.clone())),
        Value::Number(number) => number
            .as_i64()
            .and_then(|wide| i32::try_from(wide).ok())
            .map(RequestId::from),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Params given as text are written as the same params given as a tree are.
    #[test]
    fn params_as_text_are_written_as_the_tree() {
        let id = RequestId::from(7);
        for params in [
            json!({"textDocument": {"uri": "file:///w/a%20b.py"}, "position": {"line": 0, "character": 4}}),
            json!({"context": {"includeDeclaration": true}, "query": "é\"x"}),
        ] {
            let (mut tree, mut text) = (Vec::new(), Vec::new());
            write_request(&mut tree, &id, "textDocument/hover", &params).unwrap();
            write_request_params(
                &mut text,
                &id,
                "textDocument/hover",
                &RequestParams::of(&params),
            )
            .unwrap();
            assert_eq!(
                String::from_utf8(text).unwrap(),
                String::from_utf8(tree).unwrap()
            );
        }
        assert!(matches!(
            RequestParams::of(&()),
            RequestParams::Tree(Value::Null)
        ));
    }

    /// `decode_success` reads exactly the successful replies with an `i32` id, and reads them
    /// as `decode` does.
    #[test]
    fn success_replies_are_cut_out_as_decode_reads_them() {
        let check = |body: &str, expected: Option<(i32, &str)>| {
            let got = decode_success(body.as_bytes()).map(|(id, raw)| (id, raw.get().to_owned()));
            assert_eq!(
                got,
                expected.map(|(id, raw)| (id, raw.to_owned())),
                "{body}"
            );
            if let Some((id, raw)) = expected {
                let Ok(IncomingMessage::Response {
                    id: Some(decoded_id),
                    result: Ok(result),
                }) = decode(body.as_bytes())
                else {
                    panic!("decode disagrees on {body}");
                };
                assert_eq!(request_id_number(&decoded_id), Some(id), "{body}");
                assert_eq!(
                    result,
                    serde_json::from_str::<Value>(raw).unwrap(),
                    "{body}"
                );
            }
        };
        check(
            r#"{"jsonrpc":"2.0","id":7,"result":{"contents":"x","range":null}}"#,
            Some((7, r#"{"contents":"x","range":null}"#)),
        );
        check(r#"{"id":1,"result":null}"#, Some((1, "null")));
        check(
            r#"{"result":[1, 2 ],"id":-3,"error":null}"#,
            Some((-3, "[1, 2 ]")),
        );
        check(
            r#" {"id":2147483647,"result":"é\n","x":{"y":[]}} "#,
            Some((2147483647, r#""é\n""#)),
        );
        // Left to `decode`:
        check(r#"{"id":1,"error":{"code":1,"message":"m"}}"#, None);
        check(
            r#"{"id":1,"result":1,"error":{"code":1,"message":"m"}}"#,
            None,
        );
        check(r#"{"id":1,"method":"m","result":1}"#, None);
        check(r#"{"id":"1","result":1}"#, None);
        check(r#"{"id":1.0,"result":1}"#, None);
        check(r#"{"id":2147483648,"result":1}"#, None);
        check(r#"{"id":null,"result":1}"#, None);
        check(r#"{"result":1}"#, None);
        check(r#"{"id":1}"#, None);
        check(r#"{"id":1,"id":2,"result":1}"#, None);
        check(r#"{"id":1,"result":1} x"#, None);
        check(r#"[1]"#, None);
        check("{\"id\":1,\"result\":\"\u{0}\"}", None);
    }

    /// Reads every frame from `input`; the last entry is `Err(message)` when the stream ends badly.
    fn frames(input: &[u8]) -> Vec<Result<String, String>> {
        let mut reader = FrameReader::new(io::BufReader::with_capacity(7, input));
        let mut out = Vec::new();
        loop {
            match reader.read_frame() {
                Ok(Some(body)) => out.push(Ok(String::from_utf8(body).unwrap())),
                Ok(None) => return out,
                Err(error) => {
                    out.push(Err(error.to_string()));
                    return out;
                }
            }
        }
    }

    fn check(input: &[u8], expected: &[Result<&str, &str>]) {
        let expected: Vec<Result<String, String>> = expected
            .iter()
            .map(|entry| entry.map(str::to_owned).map_err(str::to_owned))
            .collect();
        assert_eq!(
            frames(input),
            expected,
            "input: {:?}",
            String::from_utf8_lossy(input)
        );
    }

    #[test]
    fn framing() {
        check(b"", &[]);
        check(b"Content-Length: 2\r\n\r\n{}", &[Ok("{}")]);
        check(
            b"Content-Length: 2\n\n{}Content-Length: 3\n\n[1]",
            &[Ok("{}"), Ok("[1]")],
        );
        check(b"content-length:2\r\n\r\n{}", &[Ok("{}")]);
        // Content-Type first, lower-case length, unknown header (B06 e).
        check(
            b"Content-Type: application/vscode-jsonrpc; charset=utf-8\r\ncontent-length: 2\r\nX-Odd: 1\r\n\r\n{}",
            &[Ok("{}")],
        );
        // Junk before the first frame, including ANSI escapes glued to the header (B06 a).
        check(
            b"Starting fixture v1\n\x1b[2J\x1b[HContent-Length: 2\r\n\r\n{}",
            &[Ok("{}")],
        );
        // Junk between frames (B06 b) and after the last one.
        check(
            b"Content-Length: 2\r\n\r\n{}debug: cache warm\nContent-Length: 2\r\n\r\n[]\ntrailing",
            &[Ok("{}"), Ok("[]")],
        );
        // A body that is not JSON is still a frame (B06 c); decode rejects it later.
        check(b"Content-Length: 5\r\n\r\n{oops", &[Ok("{oops")]);
        // A multi-byte body: the length counts bytes.
        check("Content-Length: 4\r\n\r\n\"é\"".as_bytes(), &[Ok("\"é\"")]);
    }

    #[test]
    fn framing_errors() {
        check(
            b"Content-Length: 10\r\n\r\n{}",
            &[Err(
                "lost framing: output ended inside a body (2 of 10 bytes)",
            )],
        );
        check(
            b"Content-Length: 2\r\n",
            &[Err("lost framing: output ended inside headers")],
        );
        check(
            b"Content-Type: x\r\n\r\n{}",
            &[Err("lost framing: header block without content-length")],
        );
        check(
            b"Content-Length: ten\r\n\r\n{}",
            &[Err("lost framing: invalid content-length \"ten\"")],
        );
        check(
            b"Content-Length: 268435457\r\n\r\n{}",
            &[Err(
                "lost framing: content-length 268435457 exceeds the 268435456 byte limit",
            )],
        );
        check(
            b"Content-Length: 2\r\n\r\n{}Content-Length: 99999999999999999999999\r\n\r\n",
            &[
                Ok("{}"),
                Err("lost framing: invalid content-length \"99999999999999999999999\""),
            ],
        );
    }

    #[test]
    fn long_junk_line_is_capped_and_header_still_found() {
        let mut input = vec![b'x'; 3 * MAX_LINE_BYTES];
        input.extend_from_slice(b"Content-Length: 2\r\n\r\n{}");
        let mut reader = FrameReader::new(io::BufReader::new(&input[..]));
        assert_eq!(reader.read_frame().unwrap(), Some(b"{}".to_vec()));
        // The line buffer grows past the cap by at most one read, and capacity by doubling.
        assert!(
            reader.line.capacity() <= 2 * MAX_LINE_BYTES,
            "{}",
            reader.line.capacity()
        );
        assert_eq!(reader.read_frame().unwrap(), None);
    }

    /// Compares through `Debug` because `lsp_server::ResponseError` has no `PartialEq`; the
    /// payloads here are small, so nothing is elided.
    fn check_decode(body: &str, expected: Result<IncomingMessage, DecodeError>) {
        assert_eq!(
            format!("{:?}", decode(body.as_bytes())),
            format!("{expected:?}"),
            "body: {body}"
        );
    }

    fn error(code: i32, message: &str) -> ResponseError {
        ResponseError {
            code,
            message: message.to_owned(),
            data: None,
        }
    }

    #[test]
    fn decoding() {
        use IncomingMessage::*;
        check_decode(
            r#"{"jsonrpc":"2.0","id":1,"result":{"a":1}}"#,
            Ok(Response {
                id: Some(RequestId::from(1)),
                result: Ok(json!({"a": 1})),
            }),
        );
        // Void reply.
        check_decode(
            r#"{"jsonrpc":"2.0","id":1}"#,
            Ok(Response {
                id: Some(RequestId::from(1)),
                result: Ok(Value::Null),
            }),
        );
        // "id": null error reply.
        check_decode(
            r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error"}}"#,
            Ok(Response {
                id: None,
                result: Err(error(-32700, "parse error")),
            }),
        );
        // Both result and error: the error wins.
        check_decode(
            r#"{"id":"7","result":null,"error":{"code":-32603,"message":"boom"}}"#,
            Ok(Response {
                id: Some(RequestId::from("7".to_owned())),
                result: Err(error(-32603, "boom")),
            }),
        );
        // "error": null next to a result is a success.
        check_decode(
            r#"{"id":2,"result":3,"error":null}"#,
            Ok(Response {
                id: Some(RequestId::from(2)),
                result: Ok(json!(3)),
            }),
        );
        // Error object with a missing message and an odd code.
        check_decode(
            r#"{"id":3,"error":{"code":"x"}}"#,
            Ok(Response {
                id: Some(RequestId::from(3)),
                result: Err(error(-32603, r#"{"code":"x"}"#)),
            }),
        );
        // Ids lspc never sends.
        check_decode(
            r#"{"id":4294967296,"result":1}"#,
            Ok(Response {
                id: None,
                result: Ok(json!(1)),
            }),
        );
        check_decode(
            r#"{"id":1.5,"result":1}"#,
            Ok(Response {
                id: None,
                result: Ok(json!(1)),
            }),
        );
        // Server requests keep raw ids.
        check_decode(
            r#"{"jsonrpc":"2.0","id":9007199254740993,"method":"workspace/configuration","params":{"items":[]}}"#,
            Ok(Request {
                id: json!(9007199254740993u64),
                method: "workspace/configuration".to_owned(),
                params: json!({"items": []}),
            }),
        );
        check_decode(
            r#"{"id":"2f0c4b1e-uuid","method":"window/workDoneProgress/create"}"#,
            Ok(Request {
                id: json!("2f0c4b1e-uuid"),
                method: "window/workDoneProgress/create".to_owned(),
                params: Value::Null,
            }),
        );
        check_decode(
            r#"{"method":"textDocument/publishDiagnostics","params":{"uri":"file:///a"}}"#,
            Ok(Notification {
                method: "textDocument/publishDiagnostics".to_owned(),
                params: json!({"uri": "file:///a"}),
            }),
        );
        check_decode(
            "{oops",
            Err(DecodeError::NotJson {
                error: "key must be a string at line 1 column 2".to_owned(),
            }),
        );
        check_decode("[1]", Err(DecodeError::NotAMessage { kind: "array" }));
        check_decode(
            r#"{"x":1}"#,
            Err(DecodeError::NotAMessage {
                kind: "object without method or id",
            }),
        );
        check_decode(
            r#"{"method":3}"#,
            Err(DecodeError::NotAMessage {
                kind: "method is not a string",
            }),
        );
    }

    fn check_write(msg: Outgoing, expected_body: &str) {
        let mut out = Vec::new();
        write_outgoing(&mut out, &msg).unwrap();
        let expected = format!(
            "Content-Length: {}\r\n\r\n{expected_body}",
            expected_body.len()
        );
        assert_eq!(String::from_utf8(out).unwrap(), expected);
    }

    #[test]
    fn writing() {
        // Parameterless requests and notifications omit `params` (TS 7 native rejects null).
        check_write(
            Outgoing::Message(
                lsp_server::Request::new(RequestId::from(5), "shutdown".to_owned(), ()).into(),
            ),
            r#"{"jsonrpc":"2.0","id":5,"method":"shutdown"}"#,
        );
        check_write(
            Outgoing::Message(lsp_server::Notification::new("exit".to_owned(), ()).into()),
            r#"{"jsonrpc":"2.0","method":"exit"}"#,
        );
        check_write(
            Outgoing::Response {
                id: json!(7),
                result: Ok(Value::Null),
            },
            r#"{"jsonrpc":"2.0","id":7,"result":null}"#,
        );
        check_write(
            Outgoing::Response {
                id: json!("ts1"),
                result: Ok(json!([null])),
            },
            r#"{"jsonrpc":"2.0","id":"ts1","result":[null]}"#,
        );
        check_write(
            Outgoing::Response {
                id: json!(9007199254740993u64),
                result: Ok(Value::Null),
            },
            r#"{"jsonrpc":"2.0","id":9007199254740993,"result":null}"#,
        );
        check_write(
            Outgoing::Response {
                id: Value::Null,
                result: Err(error(-32601, "method not found")),
            },
            r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32601,"message":"method not found"}}"#,
        );
    }

    #[test]
    fn debug_elides_large_params() {
        let message = IncomingMessage::Notification {
            method: "m".to_owned(),
            params: json!({ "text": "x".repeat(10_000) }),
        };
        let text = format!("{message:?}");
        assert!(text.len() < 300, "{text}");
        assert!(text.ends_with("… (10011 bytes) }"), "{text}");
    }
}
