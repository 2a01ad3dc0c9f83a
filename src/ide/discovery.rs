//! `lspc ide list`: IDE discovery as seed 000 describes the agent doing it ("Lock-file
//! discovery"), with the verdict for every lock file.
//!
//! Steps, in the seed's order: scan the IDE lock directories (`<config>/ide`, `~/.claude/ide` when
//! `<config>` is elsewhere, and under WSL the Windows users' `.claude/ide`); read the newest lock
//! files first; parse JSON records and the older line-based format (one workspace folder per
//! line); drop stale records (a `pid` that no longer runs, or, without a usable pid, a port
//! nothing listens on); convert Windows paths and the host when the IDE runs on Windows; match
//! the normalised cwd under one workspace folder; honour `CLAUDE_CODE_SSE_PORT`; and choose only
//! when exactly one candidate is left.
//!
//! Unlike the agent, `lspc ide list` deletes nothing: a stale file is reported as one the agent
//! would remove (`lspc ide` removes its own stale files when it starts).
//! Not done: the embedded-terminal rule (candidate pids must be ancestors of the agent inside an
//! IDE's own terminal), since `lspc ide list` does not know which terminal the agent will run in.

use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::path::{Component, Path, PathBuf};
use std::time::{Duration, SystemTime};

use serde::Serialize;
use serde_json::Value;

use super::lock;

/// Where and as whom discovery runs (read from the process by [`DiscoveryEnv::from_process`];
/// built by hand in tests).
#[derive(Debug, Clone)]
pub struct DiscoveryEnv {
    pub lock_dirs: Vec<PathBuf>,
    /// The agent's working directory (normalised before matching).
    pub cwd: PathBuf,
    /// `CLAUDE_CODE_SSE_PORT`, when set to a port number.
    pub sse_port: Option<u16>,
    /// Whether this process runs inside WSL.
    pub in_wsl: bool,
    /// The Windows host's address as WSL sees it (from `/etc/resolv.conf`), for IDEs on Windows.
    pub windows_host: Option<String>,
}

impl DiscoveryEnv {
    /// The environment of this process.
    pub fn from_process() -> DiscoveryEnv {
        let mut lock_dirs = Vec::new();
        if let Some(dir) = lock::lock_dir() {
            lock_dirs.push(dir);
        }
        if let Some(home) = std::env::var_os("HOME").filter(|home| !home.is_empty()) {
            let compatibility = PathBuf::from(home).join(".claude").join("ide");
            if !lock_dirs.contains(&compatibility) {
                lock_dirs.push(compatibility);
            }
        }
        let in_wsl = std::env::var_os("WSL_DISTRO_NAME").is_some()
            || std::fs::read_to_string("/proc/sys/kernel/osrelease")
                .is_ok_and(|release| release.to_ascii_lowercase().contains("microsoft"));
        let mut windows_host = None;
        if in_wsl {
            // The Windows users' own config folders, where an IDE on Windows writes its locks.
            if let Ok(users) = std::fs::read_dir("/mnt/c/Users") {
                let mut found: Vec<PathBuf> = users
                    .flatten()
                    .map(|user| user.path().join(".claude").join("ide"))
                    .filter(|dir| dir.is_dir())
                    .collect();
                crate::sorting::sort(&mut found);
                lock_dirs.extend(found);
            }
            windows_host = std::fs::read_to_string("/etc/resolv.conf")
                .ok()
                .and_then(|text| {
                    text.lines()
                        .filter_map(|line| line.trim().strip_prefix("nameserver"))
                        .map(|address| address.trim().to_owned())
                        .find(|address| !address.is_empty())
                });
        }
        DiscoveryEnv {
            lock_dirs,
            cwd: std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/")),
            sse_port: std::env::var("CLAUDE_CODE_SSE_PORT")
                .ok()
                .and_then(|port| port.trim().parse().ok()),
            in_wsl,
            windows_host,
        }
    }
}

/// What discovery decided about one lock file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Verdict {
    /// The one valid, workspace-matching IDE: the agent connects to it.
    Chosen,
    /// Valid and matching, but so are others: the agent asks the user.
    Ambiguous,
    /// A running IDE whose workspace does not contain the cwd (listed by `/ide`, never chosen).
    WorkspaceMismatch,
    /// `CLAUDE_CODE_SSE_PORT` names another IDE.
    OtherPort,
    /// The IDE is gone; the agent removes the file.
    Stale,
    /// Not a lock record; the agent removes the file.
    Unreadable,
}

/// One lock file and its verdict.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LockEntry {
    pub path: PathBuf,
    pub port: Option<u16>,
    /// `"json"` or `"lines"` (the older format: one workspace folder per line).
    pub format: &'static str,
    pub ide_name: Option<String>,
    pub pid: Option<u32>,
    /// `"ws"` or `"sse"` (a missing or other `transport` is SSE to the agent).
    pub transport: &'static str,
    /// `ws://host:port` or `http://host:port/sse`.
    pub url: Option<String>,
    /// As the agent sees them (converted to WSL paths when the IDE runs on Windows).
    pub workspace_folders: Vec<String>,
    pub running_in_windows: bool,
    pub has_auth_token: bool,
    pub verdict: Verdict,
    /// Why it is not chosen (empty when chosen).
    pub reason: String,
}

/// Every lock file found, newest first.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Discovery {
    pub lock_dirs: Vec<PathBuf>,
    pub cwd: PathBuf,
    pub sse_port: Option<u16>,
    pub locks: Vec<LockEntry>,
}

impl Discovery {
    /// The chosen lock, if exactly one candidate was left.
    pub fn chosen(&self) -> Option<&LockEntry> {
        self.locks
            .iter()
            .find(|entry| entry.verdict == Verdict::Chosen)
    }
}

/// A Windows path as WSL mounts it: `C:\Users\me\p` -> `/mnt/c/Users/me/p`;
/// `\\wsl$\Distro\home\me` and `\\wsl.localhost\Distro\home\me` -> `/home/me`. Other paths are
/// kept, with backslashes turned into slashes.
pub fn windows_to_wsl_path(path: &str) -> String {
    let slashed = path.replace('\\', "/");
    for prefix in ["//wsl$/", "//wsl.localhost/"] {
        if slashed.len() > prefix.len() && slashed[..prefix.len()].eq_ignore_ascii_case(prefix) {
            let rest = &slashed[prefix.len()..];
            return match rest.find('/') {
                Some(index) => rest[index..].to_owned(),
                None => "/".to_owned(),
            };
        }
    }
    let bytes = slashed.as_bytes();
    if bytes.len() >= 2 && bytes[0].is_ascii_alphabetic() && bytes[1] == b':' {
        let drive = (bytes[0] as char).to_ascii_lowercase();
        let rest = slashed[2..].trim_start_matches('/');
        return if rest.is_empty() {
            format!("/mnt/{drive}")
        } else {
            format!("/mnt/{drive}/{rest}")
        };
    }
    slashed
}

/// `path` made absolute against `/` and lexically normalised (`.`, `..`, repeated and trailing
/// slashes), then with symlinks resolved when it exists.
fn normalise(path: &Path) -> PathBuf {
    if let Ok(canonical) = path.canonicalize() {
        return canonical;
    }
    let mut normal = PathBuf::from("/");
    for component in path.components() {
        match component {
            Component::Normal(part) => normal.push(part),
            Component::ParentDir => {
                normal.pop();
            }
            _ => {}
        }
    }
    normal
}

fn port_listening(host: &str, port: u16) -> bool {
    let Ok(addresses) = (host, port).to_socket_addrs() else {
        return false;
    };
    let addresses: Vec<SocketAddr> = addresses.collect();
    addresses
        .iter()
        .any(|address| TcpStream::connect_timeout(address, Duration::from_millis(500)).is_ok())
}

/// A parsed lock file before liveness and matching.
struct Parsed {
    format: &'static str,
    ide_name: Option<String>,
    pid: Option<u32>,
    transport: &'static str,
    folders: Vec<String>,
    running_in_windows: bool,
    has_auth_token: bool,
}

fn parse_lock(text: &str) -> Result<Parsed, String> {
    let trimmed = text.trim_start();
    if trimmed.starts_with('{') {
        let record: Value =
            serde_json::from_str(text).map_err(|error| format!("invalid JSON: {error}"))?;
        let folders = match record.get("workspaceFolders") {
            Some(Value::Array(folders)) => folders
                .iter()
                .map(|folder| {
                    folder
                        .as_str()
                        .map(str::to_owned)
                        .ok_or("workspaceFolders holds a non-string")
                })
                .collect::<Result<Vec<_>, _>>()?,
            None | Some(Value::Null) => Vec::new(),
            Some(_) => return Err("workspaceFolders is not an array".to_owned()),
        };
        let pid = match record.get("pid") {
            None | Some(Value::Null) => None,
            Some(pid) => Some(
                pid.as_u64()
                    .and_then(|pid| u32::try_from(pid).ok())
                    .ok_or("pid is not a process id")?,
            ),
        };
        return Ok(Parsed {
            format: "json",
            ide_name: record
                .get("ideName")
                .and_then(Value::as_str)
                .map(str::to_owned),
            pid,
            transport: if record.get("transport").and_then(Value::as_str) == Some("ws") {
                "ws"
            } else {
                "sse"
            },
            folders,
            running_in_windows: record
                .get("runningInWindows")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            has_auth_token: record
                .get("authToken")
                .and_then(Value::as_str)
                .is_some_and(|token| !token.is_empty()),
        });
    }
    let folders: Vec<String> = text
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty())
        .map(str::to_owned)
        .collect();
    if folders.is_empty() {
        return Err("empty lock file".to_owned());
    }
    Ok(Parsed {
        format: "lines",
        ide_name: None,
        pid: None,
        transport: "sse",
        folders,
        running_in_windows: false,
        has_auth_token: false,
    })
}

/// Run discovery in `env`. `alive` says whether a pid runs and `listening` whether a host:port
/// accepts connections (the process's own checks in production).
pub fn discover_with(
    env: &DiscoveryEnv,
    alive: &dyn Fn(u32) -> bool,
    listening: &dyn Fn(&str, u16) -> bool,
) -> Discovery {
    let mut files: Vec<(SystemTime, PathBuf)> = Vec::new();
    for dir in &env.lock_dirs {
        let Ok(entries) = std::fs::read_dir(dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.extension().and_then(|extension| extension.to_str()) != Some("lock") {
                continue;
            }
            let modified = entry
                .metadata()
                .and_then(|metadata| metadata.modified())
                .unwrap_or(SystemTime::UNIX_EPOCH);
            files.push((modified, path));
        }
    }
    // Newest first; the path breaks ties so the order is stable.
    crate::sorting::sort_by(&mut files, |a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    let cwd = normalise(&env.cwd);
    let mut locks = Vec::new();
    for (_, path) in files {
        let port = path
            .file_stem()
            .and_then(|stem| stem.to_str())
            .and_then(|stem| stem.parse::<u16>().ok())
            .filter(|port| *port > 0);
        let mut entry = LockEntry {
            path: path.clone(),
            port,
            format: "json",
            ide_name: None,
            pid: None,
            transport: "sse",
            url: None,
            workspace_folders: Vec::new(),
            running_in_windows: false,
            has_auth_token: false,
            verdict: Verdict::Unreadable,
            reason: String::new(),
        };
        let parsed = std::fs::read_to_string(&path)
            .map_err(|error| format!("cannot read it: {error}"))
            .and_then(|text| parse_lock(&text));
        let parsed = match parsed {
            Ok(parsed) => parsed,
            Err(reason) => {
                entry.reason = format!("unreadable ({reason}): the agent removes it");
                locks.push(entry);
                continue;
            }
        };
        let Some(port) = port else {
            entry.reason =
                "unreadable (the file name is not <port>.lock): the agent removes it".to_owned();
            locks.push(entry);
            continue;
        };
        let host = match (parsed.running_in_windows, &env.windows_host) {
            (true, Some(host)) if env.in_wsl => host.clone(),
            _ => "127.0.0.1".to_owned(),
        };
        entry.format = parsed.format;
        entry.ide_name = parsed.ide_name;
        entry.pid = parsed.pid;
        entry.transport = parsed.transport;
        entry.url = Some(match parsed.transport {
            "ws" => format!("ws://{host}:{port}"),
            _ => format!("http://{host}:{port}/sse"),
        });
        entry.running_in_windows = parsed.running_in_windows;
        entry.has_auth_token = parsed.has_auth_token;
        entry.workspace_folders = parsed
            .folders
            .iter()
            .map(|folder| {
                if parsed.running_in_windows {
                    windows_to_wsl_path(folder)
                } else {
                    folder.clone()
                }
            })
            .collect();
        // A Windows pid means nothing here, so a Windows IDE proves liveness by its port.
        let live = match parsed.pid {
            Some(pid) if !parsed.running_in_windows => alive(pid),
            _ => listening(&host, port),
        };
        if !live {
            entry.verdict = Verdict::Stale;
            entry.reason = match parsed.pid {
                Some(pid) if !parsed.running_in_windows => {
                    format!("stale (pid {pid} is not running): the agent removes it")
                }
                _ => format!("stale (nothing listens on {host}:{port}): the agent removes it"),
            };
            locks.push(entry);
            continue;
        }
        let matches = entry
            .workspace_folders
            .iter()
            .any(|folder| cwd.starts_with(normalise(Path::new(folder))));
        if !matches {
            entry.verdict = Verdict::WorkspaceMismatch;
            entry.reason = format!(
                "workspace mismatch ({} is not inside {})",
                cwd.display(),
                if entry.workspace_folders.is_empty() {
                    "any workspace folder: the record lists none".to_owned()
                } else {
                    entry.workspace_folders.join(", ")
                }
            );
        } else if env.sse_port.is_some_and(|sse_port| sse_port != port) {
            entry.verdict = Verdict::OtherPort;
            entry.reason = format!(
                "CLAUDE_CODE_SSE_PORT={} selects another IDE",
                env.sse_port.unwrap_or_default()
            );
        } else {
            entry.verdict = Verdict::Ambiguous;
        }
        locks.push(entry);
    }
    let candidates = locks
        .iter()
        .filter(|entry| entry.verdict == Verdict::Ambiguous)
        .count();
    for entry in &mut locks {
        if entry.verdict != Verdict::Ambiguous {
            continue;
        }
        if candidates == 1 {
            entry.verdict = Verdict::Chosen;
        } else {
            entry.reason = format!(
                "ambiguous ({candidates} IDEs match this workspace): the agent asks which (/ide)"
            );
        }
    }
    Discovery {
        lock_dirs: env.lock_dirs.clone(),
        cwd,
        sse_port: env.sse_port,
        locks,
    }
}

/// Discovery in this process's environment.
pub fn discover() -> Discovery {
    discover_with(
        &DiscoveryEnv::from_process(),
        &lock::pid_alive,
        &port_listening,
    )
}

/// The human listing: one line per lock file, newest first, then the outcome.
pub fn render_human(discovery: &Discovery) -> String {
    let mut text = String::new();
    if discovery.locks.is_empty() {
        let dirs: Vec<String> = discovery
            .lock_dirs
            .iter()
            .map(|dir| dir.display().to_string())
            .collect();
        text.push_str(&format!("no IDE lock files in {}\n", dirs.join(", ")));
    }
    for entry in &discovery.locks {
        let name = entry.ide_name.as_deref().unwrap_or("(unnamed)");
        let url = entry.url.as_deref().unwrap_or("-");
        let pid = entry
            .pid
            .map(|pid| format!("pid {pid}"))
            .unwrap_or_else(|| "no pid".to_owned());
        text.push_str(&format!(
            "{}: {name} {url} {pid} [{}] ({})\n",
            entry.path.display(),
            entry.workspace_folders.join(", "),
            entry.format
        ));
        if entry.verdict == Verdict::Chosen {
            text.push_str("  chosen\n");
        } else {
            text.push_str(&format!("  not chosen: {}\n", entry.reason));
        }
    }
    match discovery.chosen() {
        Some(entry) => text.push_str(&format!(
            "the agent in {} connects to {}\n",
            discovery.cwd.display(),
            entry.url.as_deref().unwrap_or("-")
        )),
        None => text.push_str(&format!(
            "the agent in {} connects to no IDE automatically\n",
            discovery.cwd.display()
        )),
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check_wsl(windows: &str, expected: &str) {
        assert_eq!(windows_to_wsl_path(windows), expected, "{windows}");
    }

    #[test]
    fn windows_paths_become_wsl_paths() {
        check_wsl(r"C:\Users\me\project", "/mnt/c/Users/me/project");
        check_wsl(r"d:\work", "/mnt/d/work");
        check_wsl(r"C:\", "/mnt/c");
        check_wsl("C:/Users/me", "/mnt/c/Users/me");
        check_wsl(r"\\wsl$\Ubuntu\home\me\p", "/home/me/p");
        check_wsl(r"\\wsl.localhost\Ubuntu-22.04\home\me", "/home/me");
        check_wsl("/already/posix", "/already/posix");
    }

    /// `Ok((format, folders, pid, transport))` or a part of the error.
    type Expected<'a> = Result<(&'a str, Vec<&'a str>, Option<u32>, &'a str), &'a str>;

    fn check_parse(text: &str, expected: Expected) {
        match (parse_lock(text), expected) {
            (Ok(parsed), Ok((format, folders, pid, transport))) => {
                assert_eq!(parsed.format, format);
                assert_eq!(parsed.folders, folders);
                assert_eq!(parsed.pid, pid);
                assert_eq!(parsed.transport, transport);
            }
            (Err(reason), Err(expected)) => assert!(reason.contains(expected), "{reason}"),
            (Ok(_), Err(expected)) => panic!("{text:?} parsed, expected {expected}"),
            (Err(reason), Ok(_)) => panic!("{text:?} failed: {reason}"),
        }
    }

    #[test]
    fn lock_formats() {
        check_parse(
            r#"{"pid":7,"workspaceFolders":["/a","/b"],"transport":"ws"}"#,
            Ok(("json", vec!["/a", "/b"], Some(7), "ws")),
        );
        check_parse(
            r#"{"pid":7,"workspaceFolders":["/a"]}"#,
            Ok(("json", vec!["/a"], Some(7), "sse")),
        );
        check_parse(
            "/a\n\n  /b c  \n",
            Ok(("lines", vec!["/a", "/b c"], None, "sse")),
        );
        check_parse("{\"pid\":", Err("invalid JSON"));
        check_parse(r#"{"pid":-1}"#, Err("pid is not a process id"));
        check_parse(r#"{"workspaceFolders":"/a"}"#, Err("not an array"));
        check_parse("  \n", Err("empty lock file"));
    }

    #[test]
    fn an_ide_on_windows_is_reached_at_the_wsl_host_and_proves_liveness_by_port() {
        let dir = std::env::temp_dir().join(format!("lspc-wsl-unit-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("5001.lock"),
            r#"{"pid":1,"workspaceFolders":["C:\\Users\\me\\p"],"ideName":"Visual Studio Code","transport":"ws","runningInWindows":true,"authToken":"x"}"#,
        )
        .unwrap();
        let env = DiscoveryEnv {
            lock_dirs: vec![dir.clone()],
            cwd: PathBuf::from("/mnt/c/Users/me/p/src"),
            sse_port: None,
            in_wsl: true,
            windows_host: Some("172.20.0.1".to_owned()),
        };
        let asked = std::cell::RefCell::new(Vec::new());
        let listening = |host: &str, port: u16| {
            asked.borrow_mut().push(format!("{host}:{port}"));
            true
        };
        // The Windows pid (1) is never looked up here.
        let discovery = discover_with(&env, &|_| panic!("pid checked"), &listening);
        assert_eq!(asked.borrow().as_slice(), ["172.20.0.1:5001"]);
        let entry = &discovery.locks[0];
        assert_eq!(entry.url.as_deref(), Some("ws://172.20.0.1:5001"));
        assert_eq!(entry.workspace_folders, ["/mnt/c/Users/me/p"]);
        assert_eq!(entry.verdict, Verdict::Chosen);
        // Outside WSL the host stays loopback.
        let env = DiscoveryEnv {
            in_wsl: false,
            ..env
        };
        let discovery = discover_with(&env, &|_| true, &|_, _| true);
        assert_eq!(
            discovery.locks[0].url.as_deref(),
            Some("ws://127.0.0.1:5001")
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn normalising_keeps_paths_comparable() {
        assert_eq!(
            normalise(Path::new("/no/such/dir/../x//y/")),
            PathBuf::from("/no/such/x/y")
        );
        assert!(normalise(Path::new("/no/such/x/y/z"))
            .starts_with(normalise(Path::new("/no/such/x/y/"))));
        assert!(!normalise(Path::new("/no/such/x/yz"))
            .starts_with(normalise(Path::new("/no/such/x/y"))));
    }
}
