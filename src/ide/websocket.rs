//! The WebSocket side of `lspc ide`: a loopback listener, the authenticated handshake and one
//! thread per connection moving text frames between the socket and the IDE loop.
//!
//! WebSocket (RFC 6455) comes from `tungstenite` with its default features off and only
//! `handshake` on: synchronous, no TLS, no async runtime.
//!
//! Invariants:
//! - The listener binds `127.0.0.1` only, and a peer whose address is not loopback is closed
//!   before a byte is read ([`peer_allowed`]).
//! - The upgrade request must carry `x-claude-code-ide-authorization` equal to the lock file's
//!   token (compared in constant time); otherwise the answer is `401 Unauthorized` and the
//!   connection never becomes a WebSocket.
//! - Threads move bytes only: every complete text frame becomes one
//!   [`ConnectionEvent::Message`]; the loop answers through the connection's own channel.
//!   A connection's last event is always [`ConnectionEvent::Closed`].
//! - Dropping the [`WebSocketServer`] stops the listener and every connection thread and joins
//!   them (no detached threads).

use std::io;
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::{self, JoinHandle};
use std::time::Duration;

use crossbeam_channel::{unbounded, Receiver, Sender, TryRecvError};
use tungstenite::handshake::server::{ErrorResponse, Request, Response};
use tungstenite::{Message, WebSocket};

/// The header the agent sends the lock file's token in.
pub const AUTH_HEADER: &str = "x-claude-code-ide-authorization";

/// How long a peer may take to send its upgrade request.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(5);
/// At most this many connections are served at once (each has a thread); more are closed at
/// once, so a local process cannot exhaust threads by opening connections.
pub const MAX_CONNECTIONS: usize = 16;
/// How often a connection thread looks at its outgoing channel while no frame arrives.
const POLL_INTERVAL: Duration = Duration::from_millis(20);

/// What the connection threads tell the IDE loop.
pub enum ConnectionEvent {
    /// A client passed the handshake; frames for it go into `sender` (one JSON-RPC message
    /// each).
    Opened {
        connection_id: u64,
        peer: SocketAddr,
        sender: Sender<String>,
    },
    /// One text frame.
    Message { connection_id: u64, text: String },
    /// The connection ended (closed by the peer, an I/O error or shutdown).
    Closed { connection_id: u64, reason: String },
}

impl std::fmt::Debug for ConnectionEvent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ConnectionEvent::Opened {
                connection_id,
                peer,
                ..
            } => write!(f, "Opened({connection_id}, {peer})"),
            ConnectionEvent::Message {
                connection_id,
                text,
            } => write!(f, "Message({connection_id}, {} bytes)", text.len()),
            ConnectionEvent::Closed {
                connection_id,
                reason,
            } => write!(f, "Closed({connection_id}, {reason})"),
        }
    }
}

/// Whether a peer may connect: loopback addresses only (IPv4 `127/8`, IPv6 `::1`, and IPv4
/// loopback mapped into IPv6).
pub fn peer_allowed(peer: &SocketAddr) -> bool {
    match peer {
        SocketAddr::V4(address) => address.ip().is_loopback(),
        SocketAddr::V6(address) => {
            address.ip().is_loopback()
                || address
                    .ip()
                    .to_ipv4_mapped()
                    .is_some_and(|ip| ip.is_loopback())
        }
    }
}

/// Whether `given` equals `expected`, in time independent of where they differ.
pub fn token_matches(given: &[u8], expected: &[u8]) -> bool {
    if given.len() != expected.len() {
        return false;
    }
    given
        .iter()
        .zip(expected)
        .fold(0u8, |difference, (a, b)| difference | (a ^ b))
        == 0
}

/// Why an upgrade request is refused, if it is: the header is missing, repeated or wrong.
pub fn check_authorization(request: &Request, token: &str) -> Result<(), &'static str> {
    let mut values = request.headers().get_all(AUTH_HEADER).iter();
    let Some(value) = values.next() else {
        return Err("missing x-claude-code-ide-authorization header");
    };
    if values.next().is_some() {
        return Err("more than one x-claude-code-ide-authorization header");
    }
    if !token_matches(value.as_bytes(), token.as_bytes()) {
        return Err("invalid authentication token");
    }
    Ok(())
}

/// The subprotocol lspc answers with: `mcp` when the client offers it (Claude Code does, and a
/// WebSocket client that asked for a subprotocol fails the handshake without an answer; both
/// claudecode.nvim and claude-code-ide.el answer `mcp`), else none (RFC 6455 §4.2.2).
pub fn choose_subprotocol(request: &Request) -> Option<&'static str> {
    let offered = request
        .headers()
        .get_all(tungstenite::http::header::SEC_WEBSOCKET_PROTOCOL)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .any(|protocol| protocol.trim() == "mcp");
    offered.then_some("mcp")
}

/// The running listener; dropping it stops and joins every thread.
pub struct WebSocketServer {
    port: u16,
    stop: Arc<AtomicBool>,
    listener_thread: Option<JoinHandle<()>>,
}

impl WebSocketServer {
    /// Listen on `127.0.0.1:port` (`0`: a free port the system picks) and accept clients whose
    /// upgrade carries `token`. Events go to `event_sender`.
    ///
    /// Errors: the port cannot be bound, or the thread cannot be spawned.
    pub fn start(
        port: u16,
        token: String,
        event_sender: Sender<ConnectionEvent>,
    ) -> io::Result<WebSocketServer> {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, port))?;
        let port = listener.local_addr()?.port();
        let stop = Arc::new(AtomicBool::new(false));
        let thread_stop = Arc::clone(&stop);
        let listener_thread = thread::Builder::new()
            .name("lspc-ide-listener".to_owned())
            .spawn(move || accept_loop(listener, &token, &event_sender, &thread_stop))?;
        Ok(WebSocketServer {
            port,
            stop,
            listener_thread: Some(listener_thread),
        })
    }

    /// The port listened on.
    pub fn port(&self) -> u16 {
        self.port
    }
}

impl Drop for WebSocketServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the blocking accept; the listener sees the flag and returns.
        let _ = TcpStream::connect_timeout(
            &SocketAddr::from((Ipv4Addr::LOCALHOST, self.port)),
            Duration::from_secs(1),
        );
        if let Some(thread) = self.listener_thread.take() {
            let _ = thread.join();
        }
    }
}

fn accept_loop(
    listener: TcpListener,
    token: &str,
    event_sender: &Sender<ConnectionEvent>,
    stop: &Arc<AtomicBool>,
) {
    let mut connections: Vec<JoinHandle<()>> = Vec::new();
    let mut next_id = 1u64;
    for stream in listener.incoming() {
        if stop.load(Ordering::SeqCst) {
            break;
        }
        connections.retain(|thread| !thread.is_finished());
        let stream = match stream {
            Ok(stream) => stream,
            Err(error) => {
                log::warn!("accepting a connection failed: {error}");
                thread::sleep(POLL_INTERVAL);
                continue;
            }
        };
        let peer = match stream.peer_addr() {
            Ok(peer) if peer_allowed(&peer) => peer,
            Ok(peer) => {
                log::warn!("refused a connection from {peer}: not a loopback address");
                continue;
            }
            Err(error) => {
                log::warn!("refused a connection without a peer address: {error}");
                continue;
            }
        };
        if connections.len() >= MAX_CONNECTIONS {
            log::warn!(
                "refused a connection from {peer}: {MAX_CONNECTIONS} connections are open already"
            );
            continue;
        }
        let connection_id = next_id;
        next_id += 1;
        let token = token.to_owned();
        let events = event_sender.clone();
        let stop = Arc::clone(stop);
        match thread::Builder::new()
            .name(format!("lspc-ide-connection-{connection_id}"))
            .spawn(move || serve_connection(stream, peer, connection_id, &token, &events, &stop))
        {
            Ok(thread) => connections.push(thread),
            Err(error) => log::warn!("cannot serve {peer}: {error}"),
        }
    }
    for thread in connections {
        let _ = thread.join();
    }
}

fn refusal(status: u16, reason: &str) -> ErrorResponse {
    let mut response = ErrorResponse::new(Some(format!("{reason}\n")));
    *response.status_mut() = tungstenite::http::StatusCode::from_u16(status).unwrap_or_default();
    response
}

// The handshake callback's error type is tungstenite's `ErrorResponse` (an `http::Response`).
#[allow(clippy::result_large_err)]
fn serve_connection(
    stream: TcpStream,
    peer: SocketAddr,
    connection_id: u64,
    token: &str,
    events: &Sender<ConnectionEvent>,
    stop: &AtomicBool,
) {
    if stream.set_read_timeout(Some(HANDSHAKE_TIMEOUT)).is_err() {
        return;
    }
    let callback =
        |request: &Request, mut response: Response| match check_authorization(request, token) {
            Ok(()) => {
                if let Some(protocol) = choose_subprotocol(request) {
                    response.headers_mut().insert(
                        tungstenite::http::header::SEC_WEBSOCKET_PROTOCOL,
                        tungstenite::http::HeaderValue::from_static(protocol),
                    );
                }
                Ok(response)
            }
            Err(reason) => {
                log::warn!("refused the WebSocket upgrade from {peer}: {reason}");
                Err(refusal(401, reason))
            }
        };
    let mut socket = match tungstenite::accept_hdr(stream, callback) {
        Ok(socket) => socket,
        Err(error) => {
            log::info!("no WebSocket with {peer}: {error}");
            return;
        }
    };
    if socket
        .get_ref()
        .set_read_timeout(Some(POLL_INTERVAL))
        .is_err()
    {
        return;
    }
    let (sender, outgoing) = unbounded::<String>();
    let opened = ConnectionEvent::Opened {
        connection_id,
        peer,
        sender,
    };
    if events.send(opened).is_err() {
        return;
    }
    log::info!("client {connection_id} connected from {peer}");
    let reason = pump(&mut socket, &outgoing, connection_id, events, stop);
    log::info!("client {connection_id} disconnected: {reason}");
    let _ = events.send(ConnectionEvent::Closed {
        connection_id,
        reason,
    });
}

/// Move frames until the connection ends; returns why it ended.
fn pump(
    socket: &mut WebSocket<TcpStream>,
    outgoing: &Receiver<String>,
    connection_id: u64,
    events: &Sender<ConnectionEvent>,
    stop: &AtomicBool,
) -> String {
    loop {
        if stop.load(Ordering::SeqCst) {
            let _ = socket.close(None);
            let _ = socket.flush();
            return "lspc is shutting down".to_owned();
        }
        loop {
            match outgoing.try_recv() {
                Ok(text) => {
                    if let Err(error) = socket.send(Message::text(text)) {
                        return format!("sending failed: {error}");
                    }
                }
                Err(TryRecvError::Empty) => break,
                Err(TryRecvError::Disconnected) => {
                    let _ = socket.close(None);
                    let _ = socket.flush();
                    return "closed by lspc".to_owned();
                }
            }
        }
        match socket.read() {
            Ok(Message::Text(text)) => {
                let message = ConnectionEvent::Message {
                    connection_id,
                    text: text.as_str().to_owned(),
                };
                if events.send(message).is_err() {
                    return "lspc is shutting down".to_owned();
                }
            }
            Ok(Message::Binary(_)) => {
                log::warn!("client {connection_id}: ignored a binary frame (MCP uses text frames)")
            }
            // Pings are answered by tungstenite on the next read or write.
            Ok(Message::Ping(_) | Message::Pong(_) | Message::Frame(_)) => {}
            Ok(Message::Close(_)) => {
                // Flush the close reply tungstenite queued.
                let _ = socket.flush();
                return "closed by the client".to_owned();
            }
            Err(tungstenite::Error::Io(error))
                if matches!(
                    error.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) => {}
            Err(tungstenite::Error::ConnectionClosed | tungstenite::Error::AlreadyClosed) => {
                return "closed by the client".to_owned()
            }
            Err(error) => return format!("connection error: {error}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check_peer(address: &str, allowed: bool) {
        let peer: SocketAddr = address.parse().unwrap();
        assert_eq!(peer_allowed(&peer), allowed, "{address}");
    }

    #[test]
    fn only_loopback_peers_are_allowed() {
        check_peer("127.0.0.1:5000", true);
        check_peer("127.1.2.3:5000", true);
        check_peer("[::1]:5000", true);
        check_peer("[::ffff:127.0.0.1]:5000", true);
        check_peer("10.0.0.5:5000", false);
        check_peer("192.168.1.20:5000", false);
        check_peer("0.0.0.0:5000", false);
        check_peer("[::ffff:10.0.0.5]:5000", false);
        check_peer("[fe80::1]:5000", false);
    }

    fn check_auth(headers: &[(&str, &str)], expected: Result<(), &str>) {
        let mut builder = Request::builder().uri("/");
        for (name, value) in headers {
            builder = builder.header(*name, *value);
        }
        let request = builder.body(()).unwrap();
        assert_eq!(check_authorization(&request, "secret-token"), expected);
    }

    fn check_subprotocol(offered: &[&str], expected: Option<&str>) {
        let mut builder = Request::builder().uri("/");
        for value in offered {
            builder = builder.header("Sec-WebSocket-Protocol", *value);
        }
        assert_eq!(
            choose_subprotocol(&builder.body(()).unwrap()),
            expected,
            "{offered:?}"
        );
    }

    #[test]
    fn mcp_is_the_subprotocol_when_offered() {
        check_subprotocol(&["mcp"], Some("mcp"));
        check_subprotocol(&["chat, mcp"], Some("mcp"));
        check_subprotocol(&["chat", "mcp"], Some("mcp"));
        check_subprotocol(&["chat"], None);
        check_subprotocol(&["mcpx"], None);
        check_subprotocol(&[], None);
    }

    #[test]
    fn the_token_header_is_required_and_exact() {
        check_auth(&[(AUTH_HEADER, "secret-token")], Ok(()));
        check_auth(
            &[("X-Claude-Code-Ide-Authorization", "secret-token")],
            Ok(()),
        );
        check_auth(&[], Err("missing x-claude-code-ide-authorization header"));
        check_auth(
            &[(AUTH_HEADER, "secret-tokem")],
            Err("invalid authentication token"),
        );
        check_auth(
            &[(AUTH_HEADER, "secret-token ")],
            Err("invalid authentication token"),
        );
        check_auth(&[(AUTH_HEADER, "")], Err("invalid authentication token"));
        check_auth(
            &[(AUTH_HEADER, "secret-token"), (AUTH_HEADER, "secret-token")],
            Err("more than one x-claude-code-ide-authorization header"),
        );
        check_auth(
            &[("authorization", "secret-token")],
            Err("missing x-claude-code-ide-authorization header"),
        );
    }
}
