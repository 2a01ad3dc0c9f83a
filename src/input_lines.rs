//! Lines from a file descriptor (`lspc batch`'s stdin), waited for with `poll(2)` so that the
//! wait also ends when the reader of lspc's output goes away.
//!
//! Why: `lspc batch` reads its next line while the previous answer is being written by another
//! thread (issue 15), so a failed write of stdout cannot stop a batch thread blocked in `read`.
//! Polling stdout (no events asked: `POLLERR`/`POLLHUP` are always reported) beside stdin ends
//! that wait as soon as the pipe's reader closes it, even with stdin left open and idle.
//!
//! Invariants: a line is handed out whole, with its `\n` (the last line of the input may lack
//! one); `poll` runs only when no whole line is buffered, so pipelined lines cost no system call
//! beyond their `read`; an input descriptor that is not open reads as empty, as std's stdin does.

use std::io;
use std::os::fd::RawFd;

/// How many bytes one `read` asks for.
const READ_SIZE: usize = 64 * 1024;

/// What [`InputLines::next_line`] found.
#[derive(Debug, PartialEq, Eq)]
pub enum NextLine {
    /// A line was appended to the caller's buffer.
    Line,
    /// The input ended (and nothing is left).
    End,
    /// The watched output reported an error or hang-up: its reader went away.
    OutputClosed,
}

/// Lines of `input`, watching `output` while it waits.
pub struct InputLines {
    input: RawFd,
    /// `None` once `poll` said the descriptor is not open (`POLLNVAL`): then only the input is
    /// waited for, and a write to it reports its own error.
    output: Option<RawFd>,
    buffer: Vec<u8>,
    /// Where the unread bytes of `buffer` start.
    start: usize,
    /// How many unread bytes are known to hold no newline (so a long line is searched once,
    /// not again after every read).
    searched: usize,
    ended: bool,
}

impl InputLines {
    /// Lines of stdin, watching stdout.
    pub fn stdin_watching_stdout() -> InputLines {
        InputLines::new(libc::STDIN_FILENO, libc::STDOUT_FILENO)
    }

    /// Lines of `input`, watching `output`; both descriptors stay owned by the caller.
    pub fn new(input: RawFd, output: RawFd) -> InputLines {
        InputLines {
            input,
            output: Some(output),
            buffer: Vec::new(),
            start: 0,
            searched: 0,
            ended: false,
        }
    }

    /// Append the next line (with its `\n`, if it has one) to `line`.
    ///
    /// Errors: a failed `read` or `poll` (interrupted calls are retried).
    pub fn next_line(&mut self, line: &mut Vec<u8>) -> io::Result<NextLine> {
        loop {
            let unread = &self.buffer[self.start..];
            let found = unread[self.searched..]
                .iter()
                .position(|&byte| byte == b'\n');
            if let Some(newline) = found.map(|offset| self.searched + offset) {
                line.extend_from_slice(&unread[..=newline]);
                self.start += newline + 1;
                self.searched = 0;
                return Ok(NextLine::Line);
            }
            self.searched = unread.len();
            if self.ended {
                if unread.is_empty() {
                    return Ok(NextLine::End);
                }
                line.extend_from_slice(unread);
                self.start = self.buffer.len();
                self.searched = 0;
                return Ok(NextLine::Line);
            }
            if self.wait()? == NextLine::OutputClosed {
                return Ok(NextLine::OutputClosed);
            }
            self.fill()?;
        }
    }

    /// Wait until the input is readable (or at its end) or the output reports its reader gone.
    fn wait(&mut self) -> io::Result<NextLine> {
        loop {
            let mut fds = [
                libc::pollfd {
                    fd: self.input,
                    events: libc::POLLIN,
                    revents: 0,
                },
                libc::pollfd {
                    fd: self.output.unwrap_or(-1),
                    events: 0,
                    revents: 0,
                },
            ];
            // SAFETY: `fds` is a valid array of two `pollfd`s for the duration of the call; a
            // negative descriptor is ignored by poll(2).
            let ready = unsafe { libc::poll(fds.as_mut_ptr(), 2, -1) };
            if ready < 0 {
                let error = io::Error::last_os_error();
                if error.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(error);
            }
            if fds[1].revents & libc::POLLNVAL != 0 {
                self.output = None;
            } else if fds[1].revents & (libc::POLLERR | libc::POLLHUP) != 0 {
                return Ok(NextLine::OutputClosed);
            }
            if fds[0].revents != 0 {
                return Ok(NextLine::Line);
            }
        }
    }

    /// One `read` into the buffer (dropping the bytes already handed out); marks the end.
    fn fill(&mut self) -> io::Result<()> {
        self.buffer.drain(..self.start);
        self.start = 0;
        self.buffer.reserve(READ_SIZE);
        let spare = self.buffer.spare_capacity_mut();
        let read = loop {
            // SAFETY: the pointer and length describe `spare`, the buffer's unused capacity,
            // which outlives the call; read(2) writes at most that many bytes.
            let read = unsafe { libc::read(self.input, spare.as_mut_ptr().cast(), spare.len()) };
            if read >= 0 {
                break read as usize;
            }
            let error = io::Error::last_os_error();
            // A closed stdin reads as empty, as std's stdin reads it (`lspc batch <&-`).
            if error.raw_os_error() == Some(libc::EBADF) {
                break 0;
            }
            if error.kind() != io::ErrorKind::Interrupted {
                return Err(error);
            }
        };
        // SAFETY: read(2) initialised the first `read` bytes of the spare capacity.
        unsafe { self.buffer.set_len(self.buffer.len() + read) };
        self.ended = read == 0;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::{AsRawFd, OwnedFd};

    fn pipe() -> (OwnedFd, OwnedFd) {
        let mut fds = [0; 2];
        // SAFETY: `fds` has room for the two descriptors pipe(2) writes.
        assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
        // SAFETY: pipe(2) just opened both, and nothing else owns them.
        unsafe {
            use std::os::fd::FromRawFd;
            (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1]))
        }
    }

    fn write(fd: &OwnedFd, bytes: &[u8]) {
        let mut file = std::fs::File::from(fd.try_clone().unwrap());
        std::io::Write::write_all(&mut file, bytes).unwrap();
    }

    /// Every line of `chunks` written to a pipe one write each (then closed), as read back.
    fn lines_of(chunks: &[&[u8]]) -> Vec<Vec<u8>> {
        let (input_read, input_write) = pipe();
        let (_output_read, output_write) = pipe();
        // A writer thread, since the chunks may hold more than a pipe does.
        let chunks: Vec<Vec<u8>> = chunks.iter().map(|chunk| chunk.to_vec()).collect();
        let writer = std::thread::spawn(move || {
            for chunk in chunks {
                write(&input_write, &chunk);
            }
        });
        let mut lines = InputLines::new(input_read.as_raw_fd(), output_write.as_raw_fd());
        let mut found = Vec::new();
        loop {
            let mut line = Vec::new();
            match lines.next_line(&mut line).unwrap() {
                NextLine::Line => found.push(line),
                NextLine::End => {
                    writer.join().unwrap();
                    return found;
                }
                NextLine::OutputClosed => panic!("the output is open"),
            }
        }
    }

    #[test]
    fn lines_come_whole_across_reads_and_at_the_end() {
        let expect = |chunks: &[&[u8]], lines: &[&[u8]]| {
            assert_eq!(lines_of(chunks), lines, "{chunks:?}");
        };
        expect(&[], &[]);
        expect(&[b"a\n"], &[b"a\n"]);
        expect(&[b"a\nb\n"], &[b"a\n", b"b\n"]);
        expect(&[b"a", b"b\nc"], &[b"ab\n", b"c"]);
        expect(&[b"\n\n"], &[b"\n", b"\n"]);
        expect(&[b"no newline"], &[b"no newline"]);
        let long = vec![b'x'; READ_SIZE * 2 + 3];
        let mut long_line = long.clone();
        long_line.push(b'\n');
        expect(&[&long, b"\n", b"y\n"], &[&long_line, b"y\n"]);
    }

    #[test]
    fn the_wait_ends_when_the_output_reader_goes_away() {
        let (input_read, input_write) = pipe();
        let (output_read, output_write) = pipe();
        let mut lines = InputLines::new(input_read.as_raw_fd(), output_write.as_raw_fd());
        write(&input_write, b"first\n");
        let mut line = Vec::new();
        assert_eq!(lines.next_line(&mut line).unwrap(), NextLine::Line);
        assert_eq!(line, b"first\n");
        // Stdin stays open and idle; the reader of the output closes its end.
        let closer = std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(50));
            drop(output_read);
        });
        assert_eq!(
            lines.next_line(&mut Vec::new()).unwrap(),
            NextLine::OutputClosed
        );
        closer.join().unwrap();
        drop(input_write);
    }

    #[test]
    fn an_input_that_is_not_open_is_empty() {
        let (_output_read, output_write) = pipe();
        let mut lines = InputLines::new(1_000_001, output_write.as_raw_fd());
        assert_eq!(lines.next_line(&mut Vec::new()).unwrap(), NextLine::End);
    }

    #[test]
    fn an_output_that_is_not_open_is_not_watched() {
        let (input_read, input_write) = pipe();
        let mut lines = InputLines::new(input_read.as_raw_fd(), 1_000_000);
        write(&input_write, b"x\n");
        drop(input_write);
        let mut line = Vec::new();
        assert_eq!(lines.next_line(&mut line).unwrap(), NextLine::Line);
        assert_eq!(lines.next_line(&mut line).unwrap(), NextLine::End);
        assert_eq!(line, b"x\n");
    }
}
