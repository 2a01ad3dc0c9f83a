//! A non-blocking inotify instance (inotify(7)), the one wrapper both watches share: the
//! configuration watch of `lspc mcp` ([`crate::mcp::reload`]) and the workspace folder watch
//! ([`crate::session::watch`]).
//!
//! Only "did anything happen" is read from it: [`Inotify::pending`] is one `ioctl(FIONREAD)`, and
//! [`Inotify::drain`] throws the queued events away; the callers then look at the files
//! themselves (a fingerprint, a scan), so a lost or merged event costs nothing but a check.

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// An inotify descriptor opened `IN_NONBLOCK | IN_CLOEXEC`, closed on drop.
#[derive(Debug)]
pub struct Inotify {
    fd: OwnedFd,
}

impl Inotify {
    /// A new instance; `None` when the kernel refuses one (no inotify, the instance limit).
    pub fn start() -> Option<Inotify> {
        // SAFETY: inotify_init1 takes flags and returns a new descriptor or -1.
        let fd = unsafe { libc::inotify_init1(libc::IN_NONBLOCK | libc::IN_CLOEXEC) };
        if fd < 0 {
            return None;
        }
        // SAFETY: `fd` is a descriptor we own from here on.
        Some(Inotify {
            fd: unsafe { OwnedFd::from_raw_fd(fd) },
        })
    }

    /// Watch `path` for the events in `mask` (`libc::IN_*`). `Ok(true)` when watched,
    /// `Ok(false)` when the path is gone or cannot be read (`ENOENT`, `ENOTDIR`, `EACCES`, or a
    /// NUL byte in it): nothing there to watch.
    ///
    /// Errors: any other refusal, chiefly `ENOSPC` (the per-user watch limit is reached).
    pub fn add(&self, path: &Path, mask: u32) -> io::Result<bool> {
        let Ok(name) = CString::new(path.as_os_str().as_bytes()) else {
            return Ok(false);
        };
        // SAFETY: a valid descriptor and a NUL-terminated path.
        let wd = unsafe { libc::inotify_add_watch(self.fd.as_raw_fd(), name.as_ptr(), mask) };
        if wd >= 0 {
            return Ok(true);
        }
        let error = io::Error::last_os_error();
        match error.raw_os_error() {
            Some(libc::ENOENT) | Some(libc::ENOTDIR) | Some(libc::EACCES) => Ok(false),
            _ => Err(error),
        }
    }

    /// Whether an event is queued (one `ioctl`); `true` when that cannot be told.
    pub fn pending(&self) -> bool {
        let mut queued: libc::c_int = 0;
        // SAFETY: FIONREAD writes one `c_int` through the pointer.
        let status = unsafe { libc::ioctl(self.fd.as_raw_fd(), libc::FIONREAD, &mut queued) };
        status != 0 || queued > 0
    }

    /// Read and drop every queued event.
    pub fn drain(&self) {
        let mut buffer = [0u8; 4096];
        loop {
            // SAFETY: `buffer` is valid for `buffer.len()` bytes.
            let n = unsafe {
                libc::read(
                    self.fd.as_raw_fd(),
                    buffer.as_mut_ptr().cast(),
                    buffer.len(),
                )
            };
            if n <= 0 {
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_write_is_pending_until_drained_and_gone_paths_are_not_watched() {
        let dir = std::env::temp_dir().join(format!("lspc-inotify-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let inotify = Inotify::start().expect("inotify is available here");
        assert!(inotify.add(&dir, libc::IN_CLOSE_WRITE).unwrap());
        assert!(!inotify
            .add(&dir.join("missing"), libc::IN_CLOSE_WRITE)
            .unwrap());
        assert!(!inotify.pending());
        std::fs::write(dir.join("a.py"), "x = 1\n").unwrap();
        assert!(inotify.pending());
        inotify.drain();
        assert!(!inotify.pending());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
