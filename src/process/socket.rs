//! The `socket` transport, as vscode-languageclient's `TransportKind.socket` does it: lspc listens
//! on a loopback port, starts the server with `--socket=PORT`, and the server connects back.
//! The connection then carries exactly what stdio would (the same LSP base-protocol framing), so
//! the reader and writer threads of [`super`] run unchanged on its two halves.
//!
//! Invariants: the listener binds `127.0.0.1` only (never another interface) on a port the kernel
//! picks, and accepts exactly one connection, within [`CONNECT_TIMEOUT`] or until the server's
//! stdout closes (it exited), whichever comes first; the listener is dropped after that. Closing
//! the writer half shuts down the socket's write direction, which the server sees as end of
//! input, as it would see stdin's EOF.

use std::io::{self, Write};
use std::net::{Ipv4Addr, Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// How long a server may take to connect after it was spawned.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(20);

/// How often a pending accept re-checks its deadline and the server's liveness.
const ACCEPT_POLL: Duration = Duration::from_millis(10);

/// A loopback listener on a free port, and the `--socket=PORT` argument that tells the server
/// where to connect.
pub fn listen() -> io::Result<(TcpListener, String)> {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?;
    let port = listener.local_addr()?.port();
    listener.set_nonblocking(true)?;
    Ok((listener, format!("--socket={port}")))
}

/// Accept the server's one connection. Errors: `TimedOut` after [`CONNECT_TIMEOUT`],
/// `ConnectionAborted` when `server_gone` becomes true first (the server exited without
/// connecting), or the accept error.
pub fn accept(listener: TcpListener, server_gone: &AtomicBool) -> io::Result<TcpStream> {
    let deadline = Instant::now() + CONNECT_TIMEOUT;
    loop {
        match listener.accept() {
            Ok((stream, _)) => {
                stream.set_nonblocking(false)?;
                // Small JSON-RPC frames: send them at once.
                stream.set_nodelay(true)?;
                return Ok(stream);
            }
            Err(error) if error.kind() == io::ErrorKind::WouldBlock => {
                if server_gone.load(Ordering::SeqCst) {
                    return Err(io::Error::new(
                        io::ErrorKind::ConnectionAborted,
                        "the server exited before connecting to its socket",
                    ));
                }
                if Instant::now() >= deadline {
                    return Err(io::Error::new(
                        io::ErrorKind::TimedOut,
                        format!(
                            "the server did not connect to its socket within {} s",
                            CONNECT_TIMEOUT.as_secs()
                        ),
                    ));
                }
                std::thread::sleep(ACCEPT_POLL);
            }
            Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
            Err(error) => return Err(error),
        }
    }
}

/// The write half of the connection: dropping it shuts the write direction down (the server's
/// end-of-input), while the reader keeps reading the other half.
pub struct SocketWriter(pub TcpStream);

impl Write for SocketWriter {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.0.write(bytes)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.0.flush()
    }
}

impl Drop for SocketWriter {
    fn drop(&mut self) {
        let _ = self.0.shutdown(Shutdown::Write);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    #[test]
    fn a_client_connecting_to_the_port_is_accepted_and_eof_is_seen_after_the_writer_drops() {
        let (listener, argument) = listen().unwrap();
        let port: u16 = argument.strip_prefix("--socket=").unwrap().parse().unwrap();
        let client = std::thread::spawn(move || {
            let mut stream = TcpStream::connect((Ipv4Addr::LOCALHOST, port)).unwrap();
            stream.write_all(b"hello").unwrap();
            let mut rest = Vec::new();
            stream.read_to_end(&mut rest).unwrap();
            rest
        });
        let stream = accept(listener, &AtomicBool::new(false)).unwrap();
        let mut reader = stream.try_clone().unwrap();
        let mut writer = SocketWriter(stream);
        writer.write_all(b"bye").unwrap();
        drop(writer);
        let mut greeting = [0u8; 5];
        reader.read_exact(&mut greeting).unwrap();
        assert_eq!(&greeting, b"hello");
        assert_eq!(client.join().unwrap(), b"bye");
    }

    #[test]
    fn accept_gives_up_when_the_server_is_gone() {
        let (listener, _) = listen().unwrap();
        let error = accept(listener, &AtomicBool::new(true)).unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::ConnectionAborted);
    }
}
