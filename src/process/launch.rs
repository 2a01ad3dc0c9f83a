//! Starting a server process without copying lspc: a `posix_spawn`-style launch that can still set
//! the server's parent-death signal, and the child handle that waits for it.
//!
//! std's `Command` uses `posix_spawn` (glibc: `clone(CLONE_VM | CLONE_VFORK)`) only while no
//! `pre_exec` hook is set, and falls back to `fork` otherwise. lspc needs a hook:
//! `PR_SET_PDEATHSIG` can only be armed by the child itself, and it must be, so that a SIGKILLed
//! lspc never leaves a server running. A fork copies lspc's page tables, and every page lspc
//! writes until the child execs is copied again (issue 15: 0.3–0.6 ms of a 20 ms `lspc check` on
//! ruff, several ms on a loaded machine). [`launch`] does what glibc's `posix_spawn` does
//! instead:
//! - The parent prepares everything the child needs (argv, envp, the `PATH` candidates, the
//!   working directory, the pipes) before the clone, blocks every signal and calls
//!   `clone(CLONE_VM | CLONE_VFORK)`: the child runs on a small stack of its own in lspc's
//!   address space while the calling thread is suspended until the child has exec'd or exited.
//! - The child makes only async-signal-safe system calls and touches no memory but its stack and
//!   the prepared data: signal dispositions back to the default (it must not run lspc's handlers
//!   in lspc's memory; SIGPIPE, which lspc ignores, too, as std does), a new process group,
//!   `PR_SET_PDEATHSIG = SIGKILL` (then `getppid` checked, in case lspc died before it was
//!   armed), its stdio on the pipes, `chdir`, an empty signal mask, `execve` per candidate path.
//! - A failure before or at exec is written as the errno (4 bytes) to a close-on-exec pipe, as
//!   std does; end of file on that pipe means the exec succeeded. The parent then reaps the child
//!   (it exited 127) and returns the error, so a missing program reads as before
//!   (`command not found: …`, from ENOENT; `permission denied: …`, from EACCES).
//!
//! The parent-death signal fires when the *thread* that called `clone` exits, as with fork:
//! spawn from a long-lived thread (lspc spawns from its event-loop thread).
//!
//! A bare program name is looked up in the child's `PATH` (the environment given, else lspc's,
//! else `/bin:/usr/bin`) the way `execvp` does: a candidate that is missing or not a directory
//! is skipped, one that is not executable (EACCES) is remembered and reported only if no later
//! candidate runs. Unlike `execvp` (and like `posix_spawn`), a file that is executable but has
//! no `#!` line and no ELF header (ENOEXEC) is not retried through `/bin/sh`.
//!
//! Under valgrind, which runs `CLONE_VFORK` as a fork, the same code works: the error pipe, not
//! shared memory, carries the child's errno.

use std::ffi::{CString, OsString};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{ChildStderr, ChildStdin, ChildStdout, ExitStatus};
use std::time::{Duration, Instant};

/// The child's stack: it only makes system calls, so 64 KiB is plenty; one guard page below.
const CHILD_STACK_BYTES: usize = 64 * 1024;

/// Signals 1..=64 exist on Linux (`_NSIG` is 65).
const N_SIGNALS: libc::c_int = 65;

/// What to start. The child gets piped stdout and stderr, stdin piped (`stdin_piped`) or on
/// `/dev/null`, a process group of its own (pgid = pid) and, on Linux, `PR_SET_PDEATHSIG =
/// SIGKILL`.
pub(super) struct LaunchSpec<'a> {
    /// An executable path, or a bare name looked up in `PATH` (see the module doc).
    pub program: &'a Path,
    pub args: &'a [String],
    /// Added to lspc's environment, replacing variables of the same name.
    pub env: &'a [(String, String)],
    pub cwd: &'a Path,
    pub stdin_piped: bool,
    /// Bytes put into the stdin pipe before the child exists (a piped stdin only), so that the
    /// server finds its first message waiting however early it reads: only what the empty pipe
    /// takes without blocking (64 KiB on Linux); [`Launched::n_prefilled`] says how much.
    pub stdin_prefill: &'a [u8],
}

/// A started child and lspc's ends of its pipes.
pub(super) struct Launched {
    pub child: ChildProcess,
    /// `None` when stdin is `/dev/null`.
    pub stdin: Option<ChildStdin>,
    pub stdout: ChildStdout,
    pub stderr: ChildStderr,
    /// How many bytes of [`LaunchSpec::stdin_prefill`] are in the pipe (the rest is the
    /// caller's to send).
    pub n_prefilled: usize,
}

/// A child process of lspc, reaped at most once. Unlike `std::process::Child` it can be made
/// from a pid; waiting with a timeout uses a pidfd (`poll(2)`, no signal handler, no timer
/// tick), or short sleeps on a kernel without `pidfd_open` (before Linux 5.3).
#[derive(Debug)]
pub struct ChildProcess {
    pid: u32,
    /// Set once reaped.
    status: Option<ExitStatus>,
}

impl ChildProcess {
    /// The child's pid.
    pub fn id(&self) -> u32 {
        self.pid
    }

    /// The exit status if the child has exited (reaping it), without blocking.
    ///
    /// Errors: `waitpid(2)` failed (ECHILD: someone else reaped it).
    pub fn try_wait(&mut self) -> io::Result<Option<ExitStatus>> {
        if let Some(status) = self.status {
            return Ok(Some(status));
        }
        let mut raw_status = 0;
        // SAFETY: `raw_status` is a valid out-pointer; `pid` is our unreaped child.
        let reaped =
            unsafe { libc::waitpid(self.pid as libc::pid_t, &mut raw_status, libc::WNOHANG) };
        match reaped {
            0 => Ok(None),
            -1 => Err(io::Error::last_os_error()),
            _ => {
                let status = ExitStatus::from_raw(raw_status);
                self.status = Some(status);
                Ok(Some(status))
            }
        }
    }

    /// Waits until the child exits and reaps it.
    ///
    /// Errors: `waitpid(2)` failed for another reason than EINTR.
    pub fn wait(&mut self) -> io::Result<ExitStatus> {
        if let Some(status) = self.status {
            return Ok(status);
        }
        let mut raw_status = 0;
        loop {
            // SAFETY: as in `try_wait`.
            let reaped = unsafe { libc::waitpid(self.pid as libc::pid_t, &mut raw_status, 0) };
            if reaped != -1 {
                break;
            }
            let error = io::Error::last_os_error();
            if error.kind() != io::ErrorKind::Interrupted {
                return Err(error);
            }
        }
        let status = ExitStatus::from_raw(raw_status);
        self.status = Some(status);
        Ok(status)
    }

    /// Waits up to `timeout` for the child to exit; `None` while it still runs.
    ///
    /// Errors: as for [`ChildProcess::try_wait`].
    pub fn wait_timeout(&mut self, timeout: Duration) -> io::Result<Option<ExitStatus>> {
        if let Some(status) = self.try_wait()? {
            return Ok(Some(status));
        }
        let deadline = Instant::now() + timeout;
        match pidfd_open(self.pid) {
            Some(pidfd) => loop {
                let remaining = deadline.saturating_duration_since(Instant::now());
                // Rounded up, so a wait never ends just before its deadline.
                let millis = remaining
                    .as_nanos()
                    .div_ceil(1_000_000)
                    .min(i32::MAX as u128);
                let mut poll_fd = libc::pollfd {
                    fd: pidfd.as_raw_fd(),
                    events: libc::POLLIN,
                    revents: 0,
                };
                // SAFETY: one valid pollfd.
                let ready = unsafe { libc::poll(&mut poll_fd, 1, millis as libc::c_int) };
                if ready == -1 && io::Error::last_os_error().kind() != io::ErrorKind::Interrupted {
                    return Err(io::Error::last_os_error());
                }
                if let Some(status) = self.try_wait()? {
                    return Ok(Some(status));
                }
                if Instant::now() >= deadline {
                    return Ok(None);
                }
            },
            None => {
                let mut step = Duration::from_millis(1);
                loop {
                    let remaining = deadline.saturating_duration_since(Instant::now());
                    if remaining.is_zero() {
                        return self.try_wait();
                    }
                    std::thread::sleep(step.min(remaining));
                    if let Some(status) = self.try_wait()? {
                        return Ok(Some(status));
                    }
                    step = (step * 2).min(Duration::from_millis(20));
                }
            }
        }
    }

    /// SIGKILLs the child (not its group) unless it was already reaped, whose pid may have been
    /// reused since.
    ///
    /// Errors: `kill(2)` failed.
    pub fn kill(&mut self) -> io::Result<()> {
        if self.status.is_some() {
            return Ok(());
        }
        // SAFETY: plain system call on our own unreaped child.
        if unsafe { libc::kill(self.pid as libc::pid_t, libc::SIGKILL) } == -1 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }
}

/// A pidfd for `pid` (`pidfd_open(2)`, Linux 5.3), or `None` when the kernel has none.
#[cfg(target_os = "linux")]
fn pidfd_open(pid: u32) -> Option<OwnedFd> {
    // SAFETY: plain system call; on success the result is a new descriptor we own.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::pid_t, 0) };
    (fd >= 0).then(|| unsafe { OwnedFd::from_raw_fd(fd as RawFd) })
}

#[cfg(not(target_os = "linux"))]
fn pidfd_open(_pid: u32) -> Option<OwnedFd> {
    None
}

/// Everything the child reads: prepared by the parent, alive until the clone returns.
struct ChildContext {
    /// Paths to `execve`, in order, null-terminated.
    candidates: Vec<*const libc::c_char>,
    argv: Vec<*const libc::c_char>,
    envp: Vec<*const libc::c_char>,
    cwd: *const libc::c_char,
    /// The child's ends for fds 0, 1 and 2 (all ≥ 3, so `dup2` never overwrites one of them).
    stdio: [RawFd; 3],
    /// Write end of the close-on-exec error pipe.
    error_fd: RawFd,
    /// lspc's pid, to see whether lspc died before the parent-death signal was armed.
    parent_pid: libc::pid_t,
}

/// Starts `spec` (see the module doc) and returns the child with lspc's pipe ends.
///
/// Errors: a program, argument, variable or directory with a NUL byte (InvalidInput); creating
/// the pipes or the stack; `clone(2)`; and whatever the child met before or at `execve` (ENOENT
/// for a missing program, EACCES for one that is not executable, ENOENT or ENOTDIR for a missing
/// `cwd`), as the raw OS error.
pub(super) fn launch(spec: &LaunchSpec) -> io::Result<Launched> {
    let program = cstring(spec.program.as_os_str().as_bytes())?;
    let candidates = candidates(spec)?;
    let argv_owned: Vec<CString> = std::iter::once(Ok(program))
        .chain(spec.args.iter().map(|arg| cstring(arg.as_bytes())))
        .collect::<io::Result<_>>()?;
    let envp_owned = environment(spec.env)?;
    let cwd = cstring(spec.cwd.as_os_str().as_bytes())?;

    // lspc's ends and the child's ends; the child's are moved to fds ≥ 3 first.
    let (stdin_parent, stdin_child) = if spec.stdin_piped {
        let (read, write) = pipe()?;
        (Some(write), above_stdio(read)?)
    } else {
        (None, above_stdio(open_dev_null()?)?)
    };
    let n_prefilled = match &stdin_parent {
        Some(stdin) if !spec.stdin_prefill.is_empty() => prefill(stdin, spec.stdin_prefill)?,
        _ => 0,
    };
    let (stdout_read, stdout_write) = pipe()?;
    let stdout_child = above_stdio(stdout_write)?;
    let (stderr_read, stderr_write) = pipe()?;
    let stderr_child = above_stdio(stderr_write)?;
    let (error_read, error_write) = pipe()?;

    let null_terminated = |strings: &[CString]| -> Vec<*const libc::c_char> {
        strings
            .iter()
            .map(|string| string.as_ptr())
            .chain(std::iter::once(std::ptr::null()))
            .collect()
    };
    let context = ChildContext {
        candidates: null_terminated(&candidates),
        argv: null_terminated(&argv_owned),
        envp: null_terminated(&envp_owned),
        cwd: cwd.as_ptr(),
        stdio: [
            stdin_child.as_raw_fd(),
            stdout_child.as_raw_fd(),
            stderr_child.as_raw_fd(),
        ],
        error_fd: error_write.as_raw_fd(),
        // SAFETY: plain system call.
        parent_pid: unsafe { libc::getpid() },
    };

    let stack = ChildStack::new()?;
    let pid = clone_and_wait(&stack, &context)?;
    drop(stack);
    // Only the child needed these; closing the error pipe's write end lets the read below end.
    drop((stdin_child, stdout_child, stderr_child, error_write));

    let mut child = ChildProcess { pid, status: None };
    if let Some(errno) = read_child_errno(error_read) {
        // The child exited with 127 right after writing; reap it.
        let _ = child.wait();
        return Err(io::Error::from_raw_os_error(errno));
    }
    Ok(Launched {
        child,
        stdin: stdin_parent.map(ChildStdin::from),
        stdout: ChildStdout::from(stdout_read),
        stderr: ChildStderr::from(stderr_read),
        n_prefilled,
    })
}

/// Writes as much of `bytes` as the empty pipe `stdin` takes without blocking; returns how
/// much. The descriptor's flags are restored afterwards.
///
/// Errors: `fcntl(2)` failed.
fn prefill(stdin: &OwnedFd, bytes: &[u8]) -> io::Result<usize> {
    let fd = stdin.as_raw_fd();
    // SAFETY: `fd` is an open descriptor we own, for the duration of these calls.
    unsafe {
        let flags = libc::fcntl(fd, libc::F_GETFL);
        if flags == -1 || libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK) == -1 {
            return Err(io::Error::last_os_error());
        }
        let mut written = 0;
        while written < bytes.len() {
            let rest = &bytes[written..];
            let n = libc::write(fd, rest.as_ptr().cast(), rest.len());
            if n > 0 {
                written += n as usize;
            } else if n == -1 && io::Error::last_os_error().kind() == io::ErrorKind::Interrupted {
                continue;
            } else {
                break;
            }
        }
        if libc::fcntl(fd, libc::F_SETFL, flags) == -1 {
            return Err(io::Error::last_os_error());
        }
        Ok(written)
    }
}

/// Blocks every signal, clones the child (Linux: `CLONE_VM | CLONE_VFORK`, so this returns once
/// it has exec'd or exited), and restores the mask. Returns the child's pid.
fn clone_and_wait(stack: &ChildStack, context: &ChildContext) -> io::Result<u32> {
    // SAFETY: the sigsets are valid out-pointers; the child only reads `context`, which outlives
    // the call (the parent is suspended until the child execs or exits), and runs on `stack`.
    unsafe {
        let mut all: libc::sigset_t = std::mem::zeroed();
        let mut previous: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&mut all);
        libc::pthread_sigmask(libc::SIG_SETMASK, &all, &mut previous);
        let arg = context as *const ChildContext as *mut libc::c_void;
        #[cfg(target_os = "linux")]
        let pid = libc::clone(
            child_main,
            stack.top(),
            libc::CLONE_VM | libc::CLONE_VFORK | libc::SIGCHLD,
            arg,
        );
        #[cfg(not(target_os = "linux"))]
        let pid = {
            let _ = stack;
            match libc::fork() {
                0 => libc::_exit(child_main(arg)),
                pid => pid,
            }
        };
        let clone_error = io::Error::last_os_error();
        libc::pthread_sigmask(libc::SIG_SETMASK, &previous, std::ptr::null_mut());
        if pid == -1 {
            return Err(clone_error);
        }
        Ok(pid as u32)
    }
}

/// The child: only async-signal-safe system calls, no allocation, no panics (see the module
/// doc). Never returns: it execs or `_exit`s with 127 after reporting its errno.
extern "C" fn child_main(arg: *mut libc::c_void) -> libc::c_int {
    // SAFETY: `arg` is the parent's `ChildContext`, alive and unchanged while the parent waits;
    // every call below is async-signal-safe, on pointers the parent prepared.
    unsafe {
        let context = &*(arg as *const ChildContext);
        let errno = || *libc::__errno_location();
        let fail = |errno: libc::c_int| -> ! {
            let bytes = errno.to_ne_bytes();
            libc::write(context.error_fd, bytes.as_ptr().cast(), bytes.len());
            libc::_exit(127)
        };
        // lspc's handlers must not run here, in lspc's memory: back to the default, except for
        // signals lspc ignores, which stay ignored across exec as with std (SIGPIPE aside).
        for signal in 1..N_SIGNALS {
            if signal == libc::SIGKILL || signal == libc::SIGSTOP {
                continue;
            }
            let mut old: libc::sigaction = std::mem::zeroed();
            // glibc refuses its internal signals (32, 33); nothing to reset there.
            if libc::sigaction(signal, std::ptr::null(), &mut old) != 0 {
                continue;
            }
            let ignored = old.sa_sigaction == libc::SIG_IGN;
            if old.sa_sigaction != libc::SIG_DFL && (!ignored || signal == libc::SIGPIPE) {
                let mut default: libc::sigaction = std::mem::zeroed();
                default.sa_sigaction = libc::SIG_DFL;
                libc::sigaction(signal, &default, std::ptr::null_mut());
            }
        }
        if libc::setpgid(0, 0) != 0 {
            fail(errno());
        }
        #[cfg(target_os = "linux")]
        {
            if libc::prctl(
                libc::PR_SET_PDEATHSIG,
                libc::SIGKILL as libc::c_ulong,
                0,
                0,
                0,
            ) != 0
            {
                fail(errno());
            }
            // If lspc died before the signal was armed, it never will be: give up.
            if libc::getppid() != context.parent_pid {
                fail(libc::ESRCH);
            }
        }
        for (target, source) in context.stdio.iter().enumerate() {
            if libc::dup2(*source, target as libc::c_int) == -1 {
                fail(errno());
            }
        }
        if libc::chdir(context.cwd) != 0 {
            fail(errno());
        }
        let mut empty: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut empty);
        libc::sigprocmask(libc::SIG_SETMASK, &empty, std::ptr::null_mut());
        let mut permission_denied = false;
        let mut last_errno = libc::ENOENT;
        let mut candidate = context.candidates.as_ptr();
        while !(*candidate).is_null() {
            libc::execve(*candidate, context.argv.as_ptr(), context.envp.as_ptr());
            last_errno = errno();
            match last_errno {
                libc::EACCES => permission_denied = true,
                libc::ENOENT | libc::ENOTDIR | libc::ESTALE | libc::ENODEV | libc::ETIMEDOUT => {}
                _ => break,
            }
            candidate = candidate.add(1);
        }
        if permission_denied && matches!(last_errno, libc::ENOENT | libc::ENOTDIR | libc::EACCES) {
            last_errno = libc::EACCES;
        }
        fail(last_errno)
    }
}

/// The child's errno from the error pipe, or `None` at end of file (the exec succeeded).
fn read_child_errno(error_read: OwnedFd) -> Option<libc::c_int> {
    let mut bytes = [0u8; 4];
    let mut filled = 0;
    while filled < bytes.len() {
        // SAFETY: reading into the unfilled part of `bytes` from a descriptor we own.
        let n = unsafe {
            libc::read(
                error_read.as_raw_fd(),
                bytes[filled..].as_mut_ptr().cast(),
                bytes.len() - filled,
            )
        };
        match n {
            0 => break,
            -1 if io::Error::last_os_error().kind() == io::ErrorKind::Interrupted => {}
            -1 => break,
            n => filled += n as usize,
        }
    }
    // A partial errno cannot happen with a 4-byte pipe write; read it as a failure anyway.
    match filled {
        0 => None,
        4 => Some(libc::c_int::from_ne_bytes(bytes)),
        _ => Some(libc::EIO),
    }
}

/// The paths the child tries, in order (see the module doc).
fn candidates(spec: &LaunchSpec) -> io::Result<Vec<CString>> {
    let program = spec.program.as_os_str().as_bytes();
    if program.contains(&b'/') {
        return Ok(vec![cstring(program)?]);
    }
    let path = spec
        .env
        .iter()
        .rev()
        .find(|(key, _)| key == "PATH")
        .map(|(_, value)| OsString::from(value))
        .or_else(|| std::env::var_os("PATH"))
        .unwrap_or_else(|| OsString::from("/bin:/usr/bin"));
    path.as_bytes()
        .split(|&byte| byte == b':')
        .map(|dir| {
            // An empty entry is the current directory, as for execvp.
            let dir: &[u8] = if dir.is_empty() { b"." } else { dir };
            let mut full = dir.to_vec();
            full.push(b'/');
            full.extend_from_slice(program);
            cstring(&full)
        })
        .collect()
}

/// lspc's environment with `overrides` added or replacing, as `KEY=VALUE` strings.
fn environment(overrides: &[(String, String)]) -> io::Result<Vec<CString>> {
    let mut entries: Vec<(OsString, OsString)> = std::env::vars_os()
        .filter(|(key, _)| {
            !overrides
                .iter()
                .any(|(name, _)| key.as_bytes() == name.as_bytes())
        })
        .collect();
    for (key, value) in overrides {
        entries.retain(|(existing, _)| existing.as_bytes() != key.as_bytes());
        entries.push((OsString::from(key), OsString::from(value)));
    }
    entries
        .into_iter()
        .map(|(key, value)| {
            let mut entry = key.into_vec();
            entry.push(b'=');
            entry.extend_from_slice(value.as_bytes());
            cstring(&entry)
        })
        .collect()
}

fn cstring(bytes: &[u8]) -> io::Result<CString> {
    CString::new(bytes).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{:?} contains a NUL byte", String::from_utf8_lossy(bytes)),
        )
    })
}

/// A close-on-exec pipe: (read end, write end).
fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: `fds` is a valid array of two ints.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: both descriptors are new and owned by nobody else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

fn open_dev_null() -> io::Result<OwnedFd> {
    let file = std::fs::OpenOptions::new().read(true).open("/dev/null")?;
    Ok(OwnedFd::from(file))
}

/// `fd` itself when it is ≥ 3, else a close-on-exec duplicate ≥ 3 (the child's `dup2` onto 0, 1
/// and 2 must not overwrite a descriptor it still has to copy; lspc may run with 0-2 closed).
fn above_stdio(fd: OwnedFd) -> io::Result<OwnedFd> {
    if fd.as_raw_fd() >= 3 {
        return Ok(fd);
    }
    // SAFETY: duplicating a descriptor we own; the result is new and ours.
    let duplicate = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_DUPFD_CLOEXEC, 3) };
    if duplicate == -1 {
        return Err(io::Error::last_os_error());
    }
    Ok(unsafe { OwnedFd::from_raw_fd(duplicate) })
}

/// An anonymous mapping for the child's stack, with a guard page at its low end.
struct ChildStack {
    base: *mut libc::c_void,
    len: usize,
}

impl ChildStack {
    fn new() -> io::Result<ChildStack> {
        // SAFETY: plain system calls.
        let page = usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).unwrap_or(4096);
        let len = CHILD_STACK_BYTES + page;
        // SAFETY: a fresh private anonymous mapping; unmapped in Drop.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_STACK,
                -1,
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let stack = ChildStack { base, len };
        // SAFETY: the lowest page of our own mapping.
        if unsafe { libc::mprotect(base, page, libc::PROT_NONE) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(stack)
    }

    /// The initial stack pointer (stacks grow down on every Linux target lspc builds for),
    /// 16-byte aligned.
    fn top(&self) -> *mut libc::c_void {
        let top = self.base as usize + self.len;
        (top & !15) as *mut libc::c_void
    }
}

impl Drop for ChildStack {
    fn drop(&mut self) {
        // SAFETY: our own mapping, no longer used (the child has exec'd or exited).
        unsafe {
            libc::munmap(self.base, self.len);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    fn spec<'a>(
        program: &'a Path,
        args: &'a [String],
        env: &'a [(String, String)],
    ) -> LaunchSpec<'a> {
        LaunchSpec {
            program,
            args,
            env,
            cwd: Path::new("/"),
            stdin_piped: true,
            stdin_prefill: b"",
        }
    }

    /// The child gets its stdio on the pipes, the arguments, the added environment, the working
    /// directory, its own process group, an empty signal mask and SIGPIPE at its default (the
    /// parent-death signal is proven end to end: `tests/integration`, a SIGKILLed lspc leaves no
    /// server).
    #[test]
    fn the_child_gets_pipes_arguments_environment_group_and_default_signals() {
        let args = vec![
            "-c".to_owned(),
            "read line; echo \"$line $1 $LSPC_LAUNCH_TEST $(pwd)\"; echo err >&2; \
             grep -E '^(SigBlk|SigIgn)' /proc/self/status; cut -d' ' -f5 /proc/$$/stat"
                .to_owned(),
            "sh".to_owned(),
            "first".to_owned(),
        ];
        let env = vec![("LSPC_LAUNCH_TEST".to_owned(), "set".to_owned())];
        let mut launched = launch(&spec(Path::new("sh"), &args, &env)).expect("launch sh");
        let pid = launched.child.id();
        launched
            .stdin
            .take()
            .expect("piped stdin")
            .write_all(b"hello\n")
            .expect("write stdin");
        let mut out = String::new();
        launched
            .stdout
            .read_to_string(&mut out)
            .expect("read stdout");
        let mut err = String::new();
        launched
            .stderr
            .read_to_string(&mut err)
            .expect("read stderr");
        let status = launched.child.wait().expect("wait");
        assert!(status.success(), "{status:?}");
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines[0], "hello first set /");
        // `grep` is a child of the shell: nothing blocked; SIGPIPE (bit 13) not ignored.
        assert_eq!(lines[1], "SigBlk:\t0000000000000000");
        let ignored =
            u64::from_str_radix(lines[2].trim_start_matches("SigIgn:\t"), 16).expect("SigIgn mask");
        assert_eq!(ignored & (1 << (libc::SIGPIPE - 1)), 0, "{}", lines[2]);
        assert_eq!(lines[3].trim(), pid.to_string(), "its own process group");
        assert_eq!(err, "err\n");
    }

    /// The prefill is in the pipe before the child exists: it reads it first, then what lspc
    /// writes later.
    #[test]
    fn the_prefill_is_read_before_later_writes() {
        let args = vec!["-c".to_owned(), "cat".to_owned()];
        let mut spec = spec(Path::new("sh"), &args, &[]);
        spec.stdin_prefill = b"first\n";
        let mut launched = launch(&spec).expect("launch sh");
        assert_eq!(launched.n_prefilled, 6);
        let mut stdin = launched.stdin.take().expect("piped stdin");
        stdin.write_all(b"second\n").expect("write stdin");
        drop(stdin);
        let mut out = String::new();
        launched
            .stdout
            .read_to_string(&mut out)
            .expect("read stdout");
        assert_eq!(out, "first\nsecond\n");
        assert!(launched.child.wait().expect("wait").success());
    }

    /// A missing program, a directory and a missing working directory give the errno std gave.
    #[test]
    fn exec_failures_come_back_as_the_childs_errno() {
        let no_args: Vec<String> = Vec::new();
        let kind = |program: &str, cwd: &str| {
            let spec = LaunchSpec {
                program: Path::new(program),
                args: &no_args,
                env: &[],
                cwd: Path::new(cwd),
                stdin_piped: false,
                stdin_prefill: b"",
            };
            launch(&spec).err().map(|error| error.raw_os_error())
        };
        assert_eq!(
            kind("lspc-no-such-program-xyz", "/"),
            Some(Some(libc::ENOENT))
        );
        assert_eq!(
            kind("/nonexistent/dir/server", "/"),
            Some(Some(libc::ENOENT))
        );
        assert_eq!(kind("/tmp", "/"), Some(Some(libc::EACCES)));
        assert_eq!(
            kind("true", "/nonexistent-dir-xyz"),
            Some(Some(libc::ENOENT))
        );
        assert_eq!(kind("true", "/"), None);
    }

    /// The parent-death signal is armed: a child launched from a thread is SIGKILLed when that
    /// thread exits (the kernel's rule for `PR_SET_PDEATHSIG`), as it would be when lspc dies.
    #[cfg(target_os = "linux")]
    #[test]
    fn the_child_is_killed_when_the_launching_thread_exits() {
        let args = vec!["30".to_owned()];
        let launched = std::thread::spawn(move || {
            let launched = launch(&spec(Path::new("sleep"), &args, &[])).expect("launch sleep");
            (
                launched.child,
                launched.stdin,
                launched.stdout,
                launched.stderr,
            )
        })
        .join()
        .expect("the launching thread");
        let (mut child, _stdin, _stdout, _stderr) = launched;
        let status = child
            .wait_timeout(Duration::from_secs(10))
            .expect("wait")
            .expect("sleep 30 was not killed within 10 s of its launching thread's exit");
        assert_eq!(status.signal(), Some(libc::SIGKILL), "{status:?}");
    }

    /// `wait_timeout` returns `None` while the child runs and the status once it exits.
    #[test]
    fn wait_timeout_sees_a_running_and_an_exited_child() {
        let args = vec!["-c".to_owned(), "read _; true".to_owned()];
        let mut launched = launch(&spec(Path::new("sh"), &args, &[])).expect("launch sh");
        let started = Instant::now();
        assert_eq!(
            launched
                .child
                .wait_timeout(Duration::from_millis(50))
                .expect("wait"),
            None
        );
        assert!(started.elapsed() >= Duration::from_millis(50));
        drop(launched.stdin.take());
        let status = launched
            .child
            .wait_timeout(Duration::from_secs(10))
            .expect("wait")
            .expect("sh exits at end of stdin");
        assert!(status.success());
        assert_eq!(launched.child.try_wait().expect("try_wait"), Some(status));
        launched
            .child
            .kill()
            .expect("kill after reaping is a no-op");
    }
}
