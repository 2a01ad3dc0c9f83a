//! A non-blocking inotify instance (inotify(7)), the one wrapper every watch shares: the
//! configuration watch of `lspc mcp` ([`crate::mcp::reload`]), the workspace folder watch
//! ([`crate::session::watch`]) and the engine's watch of its open documents.
//!
//! The watches mostly ask "did anything happen": [`Inotify::pending`] is one `ioctl(FIONREAD)`,
//! [`Inotify::pending_where`] also reads the queued events to judge their masks and names, and
//! [`Inotify::drain`] throws the queued events away; the callers then look at the files
//! themselves (a fingerprint, a scan), so a lost or merged event costs nothing but a check. The
//! engine's watch of its open documents ([`crate::engine`]'s `document_watch`) reads which
//! files the events name ([`Inotify::read_events`]) and checks only those.
//!
//! Closing an instance that held watches waits for the kernel's fsnotify mark reaper, an SRCU
//! grace period (15-20 ms here, each instance its own), so a dropped instance is closed on a
//! thread of its own: `lspc mcp` closed two of them one after the other before it sent the
//! servers `shutdown`, 35 ms of a 90 ms exit (bench item 8, eighteenth round).

use std::ffi::CString;
use std::io;
use std::mem::ManuallyDrop;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

/// An inotify descriptor opened `IN_NONBLOCK | IN_CLOEXEC`, closed on drop: on a thread of its
/// own once it held a watch (see the module doc).
#[derive(Debug)]
pub struct Inotify {
    /// Taken by [`Drop`] only.
    fd: ManuallyDrop<OwnedFd>,
    /// Whether a watch was ever added: closing then waits for the kernel.
    watched: AtomicBool,
    /// Set when [`Inotify::pending_where`] read an event that counts; cleared by
    /// [`Inotify::drain`].
    seen: AtomicBool,
}

impl Drop for Inotify {
    fn drop(&mut self) {
        // SAFETY: `fd` is not used again: this is the instance's drop.
        let fd = unsafe { ManuallyDrop::take(&mut self.fd) };
        if !self.watched.load(Ordering::Relaxed) {
            return;
        }
        // When no thread can be made, the closure (and `fd`) is dropped here, closing it now.
        let _ = std::thread::Builder::new()
            .name("inotify-close".into())
            .stack_size(16 * 1024)
            .spawn(move || drop(fd));
    }
}

/// The fixed part of `struct inotify_event` (inotify(7)): `wd`, `mask`, `cookie`, `len`, then
/// `len` bytes of NUL-padded name.
const EVENT_HEADER_BYTES: usize = 16;

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
            fd: ManuallyDrop::new(unsafe { OwnedFd::from_raw_fd(fd) }),
            watched: AtomicBool::new(false),
            seen: Default::default(),
        })
    }

    /// Watch `path` for the events in `mask` (`libc::IN_*`). `Ok(true)` when watched,
    /// `Ok(false)` when the path is gone or cannot be read (`ENOENT`, `ENOTDIR`, `EACCES`, or a
    /// NUL byte in it): nothing there to watch.
    ///
    /// Errors: any other refusal, chiefly `ENOSPC` (the per-user watch limit is reached).
    pub fn add(&self, path: &Path, mask: u32) -> io::Result<bool> {
        self.add_watch(path, mask).map(|wd| wd.is_some())
    }

    /// [`Inotify::add`] giving the watch descriptor events will carry (the same one again for a
    /// path already watched: `mask` then replaces its mask, or joins it with `IN_MASK_ADD`).
    pub fn add_watch(&self, path: &Path, mask: u32) -> io::Result<Option<i32>> {
        let Ok(name) = CString::new(path.as_os_str().as_bytes()) else {
            return Ok(None);
        };
        // SAFETY: a valid descriptor and a NUL-terminated path.
        let wd = unsafe { libc::inotify_add_watch(self.fd.as_raw_fd(), name.as_ptr(), mask) };
        if wd >= 0 {
            self.watched.store(true, Ordering::Relaxed);
            return Ok(Some(wd));
        }
        let error = io::Error::last_os_error();
        match error.raw_os_error() {
            Some(libc::ENOENT) | Some(libc::ENOTDIR) | Some(libc::EACCES) => Ok(None),
            _ => Err(error),
        }
    }

    /// Stop the watch `wd` ([`Inotify::add_watch`]); the kernel then queues its `IN_IGNORED`.
    pub fn remove(&self, wd: i32) {
        // SAFETY: a valid descriptor; an unknown `wd` is refused with EINVAL, nothing else.
        unsafe { libc::inotify_rm_watch(self.fd.as_raw_fd(), wd) };
    }

    /// Whether an event is queued (one `ioctl`); `true` when that cannot be told.
    pub fn pending(&self) -> bool {
        let mut queued: libc::c_int = 0;
        // SAFETY: FIONREAD writes one `c_int` through the pointer.
        let status = unsafe { libc::ioctl(self.fd.as_raw_fd(), libc::FIONREAD, &mut queued) };
        status != 0 || queued > 0
    }

    /// Whether an event that `counts` (given its mask and name) has been queued since the last
    /// [`Inotify::drain`]: one `ioctl` when nothing is queued, else the queued events are read
    /// and judged (one that counts is remembered until the drain).
    pub fn pending_where(&self, counts: &dyn Fn(u32, &[u8]) -> bool) -> bool {
        if self.seen.load(Ordering::Relaxed) {
            return true;
        }
        self.read_events(&mut |_, mask, name| {
            if counts(mask, name) {
                self.seen.store(true, Ordering::Relaxed);
            }
        });
        self.seen.load(Ordering::Relaxed)
    }

    /// Read every queued event, calling `each` with its watch descriptor (-1 for
    /// `IN_Q_OVERFLOW`), mask and name (empty for an event about the watched folder itself);
    /// whether any was read. One `ioctl` when nothing is queued (the buffer, zeroed, would
    /// cost the engine's watch about 4,000 instructions a request).
    pub fn read_events(&self, each: &mut dyn FnMut(i32, u32, &[u8])) -> bool {
        if !self.pending() {
            return false;
        }
        let mut buffer = [0u8; 4096];
        let mut any = false;
        while let Some(n) = self.read_into(&mut buffer) {
            any = true;
            let mut events = &buffer[..n];
            while events.len() >= EVENT_HEADER_BYTES {
                let field = |at: usize| {
                    u32::from_ne_bytes([events[at], events[at + 1], events[at + 2], events[at + 3]])
                };
                let (wd, mask, len) = (field(0) as i32, field(4), field(12) as usize);
                let end = (EVENT_HEADER_BYTES + len).min(events.len());
                let name = &events[EVENT_HEADER_BYTES..end];
                let name = &name[..name.iter().position(|&b| b == 0).unwrap_or(name.len())];
                each(wd, mask, name);
                events = &events[end..];
            }
        }
        any
    }

    /// Read and drop every queued event; whether there was any since the last drain (read now,
    /// or read by [`Inotify::pending_where`]).
    pub fn drain(&self) -> bool {
        self.drain_with(&mut |_, _, _| {})
    }

    /// [`Inotify::drain`], showing each event to `each` as [`Inotify::read_events`] does.
    pub fn drain_with(&self, each: &mut dyn FnMut(i32, u32, &[u8])) -> bool {
        let seen = self.seen.swap(false, Ordering::Relaxed);
        self.read_events(each) || seen
    }

    /// One non-blocking read of queued events into `buffer`: the bytes read, `None` when
    /// nothing is queued (or the read fails).
    fn read_into(&self, buffer: &mut [u8]) -> Option<usize> {
        // SAFETY: `buffer` is valid for `buffer.len()` bytes.
        let n = unsafe {
            libc::read(
                self.fd.as_raw_fd(),
                buffer.as_mut_ptr().cast(),
                buffer.len(),
            )
        };
        (n > 0).then_some(n as usize)
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

    /// Only the events `counts` accepts are pending; one read stays pending until the drain.
    #[test]
    fn pending_where_judges_the_queued_events_by_mask_and_name() {
        let dir = std::env::temp_dir().join(format!("lspc-inotify-where-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let inotify = Inotify::start().expect("inotify is available here");
        assert!(inotify.add(&dir, libc::IN_CREATE).unwrap());
        let visible_folder =
            |mask: u32, name: &[u8]| mask & libc::IN_ISDIR != 0 && !name.starts_with(b".");
        std::fs::create_dir(dir.join(".cache")).unwrap();
        std::fs::write(dir.join("a.py"), "").unwrap();
        assert!(!inotify.pending_where(&visible_folder));
        std::fs::create_dir(dir.join("pkg")).unwrap();
        assert!(inotify.pending_where(&visible_folder));
        assert!(inotify.pending_where(&visible_folder), "remembered");
        inotify.drain();
        assert!(!inotify.pending_where(&visible_folder));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
