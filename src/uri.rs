//! Canonical path <-> `file://` URI conversion (RFC 8089 file URIs, RFC 3986 percent-encoding).
//!
//! Invariants:
//! - [`path_to_uri`] only accepts absolute paths and percent-encodes every byte outside the RFC 3986
//!   unreserved set (`A-Z a-z 0-9 - . _ ~`) and `/`, like VS Code's `URI.file(...).toString()` does
//!   for paths. So `/tmp/a b#1.py` becomes `file:///tmp/a%20b%231.py`. Escapes use uppercase hex.
//! - [`uri_to_path`] accepts what servers send: an empty host or `localhost`, upper or lower case
//!   escapes, and escapes that decode to any bytes (on unix a path is bytes, not UTF-8).
//! - Documents are keyed by [`canonical`] paths, so `./a.py`, `a.py` and a symlink to it are one
//!   document.
//! - Nothing here panics on bad input; errors name the URI or path they are about.

use std::ffi::OsString;
use std::fmt;
use std::path::{Component, Path, PathBuf};
use std::str::FromStr;

/// Why a path could not become a URI or a URI could not become a path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UriError {
    /// [`path_to_uri`] was given a relative path; file URIs need absolute paths.
    RelativePath { path: PathBuf },
    /// The URI's scheme is not `file` (e.g. `http://x`), or it has no scheme at all.
    NotFileScheme { uri: String },
    /// The URI names a host other than the empty one or `localhost` (e.g. `file://server/share`).
    UnsupportedHost { uri: String, host: String },
    /// The URI's path is empty or relative (`file:a/b`, `file://localhost`).
    RelativeUriPath { uri: String },
    /// A `%` is not followed by two hex digits.
    InvalidPercentEncoding { uri: String },
    /// The decoded path is not UTF-8 on a platform whose paths must be (not unix).
    NotUtf8 { uri: String },
    /// The built URI string was rejected by the `lsp_types::Uri` parser (should not happen).
    InvalidUri { uri: String, reason: String },
}

impl fmt::Display for UriError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            UriError::RelativePath { path } => write!(
                f,
                "cannot make a file uri from relative path `{}`",
                path.display()
            ),
            UriError::NotFileScheme { uri } => write!(f, "`{uri}` is not a file:// uri"),
            UriError::UnsupportedHost { uri, host } => write!(
                f,
                "`{uri}` names host `{host}`; only local file uris (no host or localhost) are supported"
            ),
            UriError::RelativeUriPath { uri } => {
                write!(f, "`{uri}` does not contain an absolute path")
            }
            UriError::InvalidPercentEncoding { uri } => {
                write!(f, "`{uri}` contains an invalid percent-escape")
            }
            UriError::NotUtf8 { uri } => {
                write!(f, "`{uri}` decodes to a path that is not valid utf-8")
            }
            UriError::InvalidUri { uri, reason } => write!(f, "`{uri}` is not a valid uri: {reason}"),
        }
    }
}

impl std::error::Error for UriError {}

/// True for the bytes [`path_to_uri`] leaves as they are: RFC 3986 unreserved characters and `/`.
fn is_kept_raw(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~' | b'/')
}

/// Percent-encodes `bytes` (a path with `/` separators) into `out`.
fn percent_encode_path(bytes: &[u8], out: &mut String) {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    for &byte in bytes {
        if is_kept_raw(byte) {
            out.push(char::from(byte));
        } else {
            out.push('%');
            out.push(char::from(HEX[usize::from(byte >> 4)]));
            out.push(char::from(HEX[usize::from(byte & 0x0f)]));
        }
    }
}

/// The bytes of an absolute path, with `/` separators and a leading `/`, as they go in a URI.
#[cfg(unix)]
fn path_bytes_for_uri(path: &Path) -> Vec<u8> {
    use std::os::unix::ffi::OsStrExt;
    path.as_os_str().as_bytes().to_vec()
}

/// The bytes of an absolute path, with `/` separators and a leading `/`, as they go in a URI.
/// Windows: `C:\a\b` becomes `/C:/a/b`; the drive colon is kept raw (as most servers expect).
#[cfg(not(unix))]
fn path_bytes_for_uri(path: &Path) -> Vec<u8> {
    let text = path.to_string_lossy().replace('\\', "/");
    if text.starts_with('/') {
        text.into_bytes()
    } else {
        format!("/{text}").into_bytes()
    }
}

/// Builds the `file://` URI of an absolute `path` (RFC 8089 with an empty host).
///
/// Every byte outside the RFC 3986 unreserved set and `/` is percent-encoded with uppercase hex:
/// space -> `%20`, `#` -> `%23`, `%` -> `%25`, `?` -> `%3F`, `ï` -> `%C3%AF`; on unix, bytes that
/// are not UTF-8 are encoded as they are. The path is used as given (call [`canonical`] first when
/// the URI keys a document).
///
/// Errors: [`UriError::RelativePath`] when `path` is not absolute.
pub fn path_to_uri(path: &Path) -> Result<lsp_types::Uri, UriError> {
    let uri = path_to_uri_string(path)?;
    lsp_types::Uri::from_str(&uri).map_err(|error| UriError::InvalidUri {
        reason: error.to_string(),
        uri,
    })
}

/// The text of [`path_to_uri`] without parsing it back into an `lsp_types::Uri` (issue 15: what
/// request params need, once per request). Percent-encoding leaves only characters a URI path
/// allows, so the text is the one `path_to_uri` would give.
///
/// Errors: [`UriError::RelativePath`] when `path` is not absolute.
pub fn path_to_uri_string(path: &Path) -> Result<String, UriError> {
    if !path.is_absolute() {
        return Err(UriError::RelativePath {
            path: path.to_path_buf(),
        });
    }
    let bytes = path_bytes_for_uri(path);
    let mut uri = String::with_capacity(bytes.len() + 16);
    uri.push_str("file://");
    #[cfg(not(unix))]
    {
        // The drive letter colon stays raw: `file:///C:/a`.
        if bytes.len() >= 3
            && bytes[0] == b'/'
            && bytes[1].is_ascii_alphabetic()
            && bytes[2] == b':'
        {
            uri.push_str(&String::from_utf8_lossy(&bytes[..3]));
            percent_encode_path(&bytes[3..], &mut uri);
        } else {
            percent_encode_path(&bytes, &mut uri);
        }
    }
    #[cfg(unix)]
    percent_encode_path(&bytes, &mut uri);
    Ok(uri)
}

/// Value of one ASCII hex digit.
fn hex_value(byte: u8) -> Option<u8> {
    match byte {
        b'0'..=b'9' => Some(byte - b'0'),
        b'a'..=b'f' => Some(byte - b'a' + 10),
        b'A'..=b'F' => Some(byte - b'A' + 10),
        _ => None,
    }
}

/// Decodes `%XX` escapes (either case) into bytes; `None` on a malformed escape.
fn percent_decode(text: &str) -> Option<Vec<u8>> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut index = 0;
    while index < bytes.len() {
        let byte = bytes[index];
        if byte == b'%' {
            let high = hex_value(*bytes.get(index + 1)?)?;
            let low = hex_value(*bytes.get(index + 2)?)?;
            out.push(high << 4 | low);
            index += 3;
        } else {
            out.push(byte);
            index += 1;
        }
    }
    Some(out)
}

#[cfg(unix)]
fn path_from_decoded(bytes: Vec<u8>, _uri: &str) -> Result<PathBuf, UriError> {
    use std::os::unix::ffi::OsStringExt;
    Ok(PathBuf::from(OsString::from_vec(bytes)))
}

#[cfg(not(unix))]
fn path_from_decoded(bytes: Vec<u8>, uri: &str) -> Result<PathBuf, UriError> {
    let text = String::from_utf8(bytes).map_err(|_| UriError::NotUtf8 {
        uri: uri.to_string(),
    })?;
    // `/C:/a/b` -> `C:/a/b`; Windows accepts `/` separators but we normalise to `\`.
    let bytes = text.as_bytes();
    let text = if bytes.len() >= 3
        && bytes[0] == b'/'
        && bytes[1].is_ascii_alphabetic()
        && bytes[2] == b':'
    {
        &text[1..]
    } else {
        &text[..]
    };
    Ok(PathBuf::from(OsString::from(text.replace('/', "\\"))))
}

/// Converts a `file://` URI string into a path (RFC 8089).
///
/// Accepts `file:///a/b`, `file://localhost/a/b` (host compared case-insensitively) and the short
/// `file:/a/b` form; the scheme is case-insensitive; escapes may be upper or lower case and decode
/// to raw bytes (on unix the result need not be UTF-8). A query (`?...`) or fragment (`#...`) is not
/// part of the path and is dropped: literal `?` and `#` in a file name arrive as `%3F` and `%23`.
///
/// Errors, each naming the URI: [`UriError::NotFileScheme`] (e.g. `http://x`),
/// [`UriError::UnsupportedHost`] (e.g. `file://server/share`), [`UriError::RelativeUriPath`]
/// (`file:a`, `file://localhost`), [`UriError::InvalidPercentEncoding`] (`%zz`).
pub fn uri_to_path(uri: &str) -> Result<PathBuf, UriError> {
    let not_file = || UriError::NotFileScheme {
        uri: uri.to_string(),
    };
    let (scheme, rest) = uri.split_once(':').ok_or_else(not_file)?;
    if !scheme.eq_ignore_ascii_case("file") {
        return Err(not_file());
    }
    // Query and fragment are delimiters here; encoded `%3F`/`%23` are decoded below.
    let rest = rest.split(['?', '#']).next().unwrap_or("");
    let path = if let Some(after_slashes) = rest.strip_prefix("//") {
        let (host, path) = match after_slashes.find('/') {
            Some(slash) => after_slashes.split_at(slash),
            None => (after_slashes, ""),
        };
        if !host.is_empty() && !host.eq_ignore_ascii_case("localhost") {
            return Err(UriError::UnsupportedHost {
                uri: uri.to_string(),
                host: host.to_string(),
            });
        }
        path
    } else {
        rest
    };
    if !path.starts_with('/') {
        return Err(UriError::RelativeUriPath {
            uri: uri.to_string(),
        });
    }
    let bytes = percent_decode(path).ok_or_else(|| UriError::InvalidPercentEncoding {
        uri: uri.to_string(),
    })?;
    path_from_decoded(bytes, uri)
}

/// [`uri_to_path`] for an already parsed `lsp_types::Uri` (as found in server messages).
pub fn uri_to_path_lsp(uri: &lsp_types::Uri) -> Result<PathBuf, UriError> {
    uri_to_path(uri.as_str())
}

/// The canonical form of `path`, the key of every document.
///
/// When the file exists this is `std::fs::canonicalize` (absolute, symlinks resolved, no `.` or
/// `..`). Otherwise the longest existing ancestor is canonicalised and the rest is appended
/// lexically, resolving `.` and `..` (a `..` past the root stays at the root). A relative `path` is
/// taken relative to the current directory. Never fails: if even the current directory is
/// unknown the lexically normalised path is returned.
pub fn canonical(path: &Path) -> PathBuf {
    if let Ok(canonical_path) = std::fs::canonicalize(path) {
        return canonical_path;
    }
    let absolute = if path.is_absolute() {
        path.to_path_buf()
    } else {
        match std::env::current_dir() {
            Ok(current_dir) => current_dir.join(path),
            Err(error) => {
                log::debug!(
                    "cannot read the current directory to resolve `{}`: {error}",
                    path.display()
                );
                path.to_path_buf()
            }
        }
    };
    // Walk component by component: while the prefix exists, canonicalise it so symlinks are
    // resolved before a following `..` is applied (as the kernel would); once a component does
    // not exist, nothing below it can be a symlink, so the rest is purely lexical.
    let mut result = PathBuf::new();
    let mut prefix_exists = true;
    for component in absolute.components() {
        match component {
            Component::Prefix(_) | Component::RootDir => result.push(component.as_os_str()),
            Component::CurDir => {}
            Component::ParentDir => {
                // `result` is canonical or lexical below a canonical prefix, so its parent is real.
                result.pop();
            }
            Component::Normal(name) => {
                result.push(name);
                if prefix_exists {
                    match std::fs::canonicalize(&result) {
                        Ok(canonical_prefix) => result = canonical_prefix,
                        Err(_) => prefix_exists = false,
                    }
                }
            }
        }
    }
    result
}

/// [`canonical`] of `root`, remembered per thread for the last root asked about (issue 15:
/// [`relative_display`] canonicalized the root again for every location outside it, a system
/// header say). A process has one workspace root, whose folders do not move under a running
/// engine; a root that is not a real path yet (not created) is not remembered.
fn canonical_root(root: &Path) -> PathBuf {
    use std::cell::RefCell;
    thread_local! {
        static LAST_ROOT: RefCell<Option<(PathBuf, PathBuf)>> = const { RefCell::new(None) };
    }
    LAST_ROOT.with(|last| {
        if let Some((given, canonical_form)) = &*last.borrow() {
            if given.as_os_str() == root.as_os_str() {
                return canonical_form.clone();
            }
        }
        let Ok(canonical_form) = std::fs::canonicalize(root) else {
            return canonical(root);
        };
        *last.borrow_mut() = Some((root.to_path_buf(), canonical_form.clone()));
        canonical_form
    })
}

/// `path` as shown to users: relative to `root` with `/` separators when inside it (`src/a.py`),
/// `.` when it is `root` itself, otherwise the absolute path unchanged.
///
/// Both are compared as given first, then in [`canonical`] form, so a path reached through a
/// symlinked root still displays relative.
pub fn relative_display(path: &Path, root: &Path) -> String {
    if let Some(relative) = plain_relative(path, root) {
        return relative.to_owned();
    }
    let relative = match path.strip_prefix(root) {
        Ok(relative) => Some(relative.to_path_buf()),
        // One `realpath` of `path`; `root`'s canonical form is remembered ([`canonical_root`]).
        Err(_) => canonical(path)
            .strip_prefix(canonical_root(root))
            .ok()
            .map(Path::to_path_buf),
    };
    match relative {
        Some(relative) if relative.as_os_str().is_empty() => ".".to_string(),
        // Already what joining its components gives (UTF-8, no empty or `.` segment): taken as
        // is (issue 15: this runs for every location of every result).
        Some(relative)
            if relative.to_str().is_some_and(|text| {
                text.split('/').all(|part| !part.is_empty() && part != ".")
            }) =>
        {
            relative.to_str().unwrap_or_default().to_owned()
        }
        Some(relative) => {
            let parts: Vec<String> = relative
                .components()
                .map(|component| component.as_os_str().to_string_lossy().into_owned())
                .collect();
            parts.join("/")
        }
        None => path.display().to_string(),
    }
}

/// `path`'s text after `root`'s and a `/` when both are plain (UTF-8, absolute, every segment
/// after the leading `/` non-empty and not `.`), so their components are their segments and
/// this is exactly what [`relative_display`]'s component comparison gives; `None` otherwise
/// (issue 15: `Path::strip_prefix` cost about 1.6k instructions a location).
fn plain_relative<'a>(path: &'a Path, root: &Path) -> Option<&'a str> {
    let plain = |text: &str| text.split('/').all(|part| !part.is_empty() && part != ".");
    let (path, root) = (path.to_str()?, root.to_str()?);
    let relative = path.strip_prefix(root)?.strip_prefix('/')?;
    let root_segments = root.strip_prefix('/')?;
    (plain(root_segments) && plain(relative)).then_some(relative)
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    /// path -> URI must give `expected_uri`, and that URI must decode back to `path`.
    fn check_round_trip(path: &str, expected_uri: &str) {
        let uri = path_to_uri(Path::new(path)).expect("absolute path converts");
        assert_eq!(uri.as_str(), expected_uri, "uri of {path}");
        assert_eq!(
            path_to_uri_string(Path::new(path)).as_deref(),
            Ok(expected_uri),
            "uri text of {path}"
        );
        assert_eq!(
            uri_to_path_lsp(&uri),
            Ok(PathBuf::from(path)),
            "path of {expected_uri}"
        );
    }

    #[test]
    fn round_trips() {
        check_round_trip("/tmp/a.py", "file:///tmp/a.py");
        check_round_trip("/", "file:///");
        check_round_trip("/tmp/w py/src/a.py", "file:///tmp/w%20py/src/a.py");
        check_round_trip("/tmp/c#/x.cs", "file:///tmp/c%23/x.cs");
        check_round_trip("/tmp/100%/x", "file:///tmp/100%25/x");
        check_round_trip("/tmp/why?/x", "file:///tmp/why%3F/x");
        check_round_trip("/tmp/naïve.py", "file:///tmp/na%C3%AFve.py");
        check_round_trip("/tmp/😀.rs", "file:///tmp/%F0%9F%98%80.rs");
        check_round_trip("/tmp/日本/a.go", "file:///tmp/%E6%97%A5%E6%9C%AC/a.go");
        check_round_trip("/a-b_c.d~e/f", "file:///a-b_c.d~e/f");
        check_round_trip(
            "/a:b@c+d=e;f,g&h$i!j'k(l)m*n",
            "file:///a%3Ab%40c%2Bd%3De%3Bf%2Cg%26h%24i%21j%27k%28l%29m%2An",
        );
        check_round_trip(
            "/x[1]{2}<3>|\\^`\"",
            "file:///x%5B1%5D%7B2%7D%3C3%3E%7C%5C%5E%60%22",
        );
        check_round_trip("/tmp/tab\there", "file:///tmp/tab%09here");
    }

    #[test]
    fn non_utf8_path_round_trips() {
        use std::os::unix::ffi::OsStrExt;
        let path = Path::new(std::ffi::OsStr::from_bytes(b"/tmp/bad\xff\xfe.c"));
        let uri = path_to_uri(path).expect("absolute path converts");
        assert_eq!(uri.as_str(), "file:///tmp/bad%FF%FE.c");
        assert_eq!(uri_to_path(uri.as_str()), Ok(path.to_path_buf()));
    }

    fn check_to_path(uri: &str, expected: Result<&str, UriError>) {
        assert_eq!(uri_to_path(uri), expected.map(PathBuf::from), "uri {uri}");
    }

    #[test]
    fn uri_to_path_accepts_server_forms() {
        check_to_path("file:///tmp/w%20py/src/a.py", Ok("/tmp/w py/src/a.py"));
        check_to_path("file://localhost/a/b", Ok("/a/b"));
        check_to_path("file://LOCALHOST/a/b", Ok("/a/b"));
        check_to_path("FILE:///a/b", Ok("/a/b"));
        check_to_path("file:/a/b", Ok("/a/b"));
        check_to_path("file:///na%c3%afve.py", Ok("/naïve.py"));
        check_to_path("file:///na%C3%AFve.py", Ok("/naïve.py"));
        check_to_path("file:///c%23/x%3f", Ok("/c#/x?"));
        // Raw `:` and other sub-delims (as clangd and gopls send them) are fine too.
        check_to_path("file:///a:b/c+d", Ok("/a:b/c+d"));
        check_to_path("file:///a/b.py#L10", Ok("/a/b.py"));
        check_to_path("file:///a/b.py?x=1", Ok("/a/b.py"));
    }

    #[test]
    fn uri_to_path_errors() {
        let not_file = |uri: &str| UriError::NotFileScheme {
            uri: uri.to_string(),
        };
        check_to_path("http://x", Err(not_file("http://x")));
        check_to_path("untitled:Untitled-1", Err(not_file("untitled:Untitled-1")));
        check_to_path("/tmp/a.py", Err(not_file("/tmp/a.py")));
        check_to_path(
            "file://server/share/a",
            Err(UriError::UnsupportedHost {
                uri: "file://server/share/a".to_string(),
                host: "server".to_string(),
            }),
        );
        check_to_path(
            "file:a/b",
            Err(UriError::RelativeUriPath {
                uri: "file:a/b".to_string(),
            }),
        );
        check_to_path(
            "file://localhost",
            Err(UriError::RelativeUriPath {
                uri: "file://localhost".to_string(),
            }),
        );
        check_to_path(
            "file:///a%zz",
            Err(UriError::InvalidPercentEncoding {
                uri: "file:///a%zz".to_string(),
            }),
        );
        check_to_path(
            "file:///a%2",
            Err(UriError::InvalidPercentEncoding {
                uri: "file:///a%2".to_string(),
            }),
        );
    }

    #[test]
    fn error_messages_name_the_uri() {
        assert_eq!(
            uri_to_path("http://x").map_err(|error| error.to_string()),
            Err("`http://x` is not a file:// uri".to_string())
        );
        assert_eq!(
            path_to_uri(Path::new("src/a.py")).map_err(|error| error.to_string()),
            Err("cannot make a file uri from relative path `src/a.py`".to_string())
        );
        assert_eq!(
            path_to_uri(Path::new("")).map_err(|error| error.to_string()),
            Err("cannot make a file uri from relative path ``".to_string())
        );
    }

    /// A fresh, empty directory under the system temp dir (canonical, symlinks resolved).
    fn temp_dir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("lspc-uri-test-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("create temp dir");
        std::fs::canonicalize(&dir).expect("canonicalize temp dir")
    }

    #[test]
    fn canonical_existing_and_missing() {
        let dir = temp_dir("canonical");
        std::fs::create_dir_all(dir.join("real/sub")).expect("mkdir");
        std::fs::write(dir.join("real/a.py"), "x = 1\n").expect("write");
        std::os::unix::fs::symlink(dir.join("real"), dir.join("link")).expect("symlink");

        let check = |input: PathBuf, expected: PathBuf| {
            assert_eq!(
                canonical(&input),
                expected,
                "canonical of {}",
                input.display()
            );
        };
        // Existing files: fs::canonicalize.
        check(dir.join("real/./sub/../a.py"), dir.join("real/a.py"));
        check(dir.join("link/a.py"), dir.join("real/a.py"));
        // Missing files: canonical existing parent plus lexical rest.
        check(dir.join("link/new.py"), dir.join("real/new.py"));
        check(dir.join("link/missing/../b.py"), dir.join("real/b.py"));
        check(
            dir.join("link/missing/./x/../../c.py"),
            dir.join("real/c.py"),
        );
        // `..` after a symlink applies to the symlink's target, as the kernel does.
        check(dir.join("link/sub/../../z.py"), dir.join("z.py"));
        check(
            PathBuf::from("/no-such-dir-lspc/../../x"),
            PathBuf::from("/x"),
        );

        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn relative_display_inside_and_outside() {
        let check = |path: &str, root: &str, expected: &str| {
            assert_eq!(relative_display(Path::new(path), Path::new(root)), expected);
        };
        check("/w/src/a.py", "/w", "src/a.py");
        check("/w/src/a.py", "/w/", "src/a.py");
        check("/w/a.py", "/w", "a.py");
        check("/w", "/w", ".");
        check("/other/a.py", "/w", "/other/a.py");
        check("/wx/a.py", "/w", "/wx/a.py");
        check("/w/src//b/./c.py", "/w", "src/b/c.py");
        check("/w/./src/", "/w", "src");
        check("/w/src/../d é.py", "/w", "src/../d é.py");
        // The plain fast path and the component route agree on what each takes.
        check("/w/x/src/a.py", "/w/x", "src/a.py");
        check("/w/src/a.py", "/", "w/src/a.py");
        check("/w/src/a.py", "//w", "src/a.py");
        check("/w/src/a.py", "/./w", "src/a.py");
        check("/w/src/", "/w", "src");
        check("/w/", "/w", ".");
        check("/w/src/a.py", "w", "/w/src/a.py");
        assert_eq!(
            plain_relative(Path::new("/w/src/a.py"), Path::new("/w")),
            Some("src/a.py")
        );
        for (path, root) in [
            ("/w/src/a.py", "/"),
            ("/w/src/a.py", "/w/"),
            ("/w/src//a.py", "/w"),
            ("/w/./a.py", "/w"),
            ("/w/a.py/", "/w"),
            ("/w", "/w"),
            ("/wx/a.py", "/w"),
            ("/w/src/a.py", "//w"),
        ] {
            assert_eq!(
                plain_relative(Path::new(path), Path::new(root)),
                None,
                "{path} {root}"
            );
        }
    }

    #[test]
    fn relative_display_through_symlinked_root() {
        let dir = temp_dir("display");
        std::fs::create_dir_all(dir.join("real/src")).expect("mkdir");
        std::fs::write(dir.join("real/src/a.py"), "").expect("write");
        std::os::unix::fs::symlink(dir.join("real"), dir.join("link")).expect("symlink");
        assert_eq!(
            relative_display(&dir.join("real/src/a.py"), &dir.join("link")),
            "src/a.py"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
