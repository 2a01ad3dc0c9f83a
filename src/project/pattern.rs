//! Path patterns as project configurations write them, matched against paths relative to the
//! folder of the configuration that wrote them.
//!
//! Two families, both built on `glob::Pattern` with `**` standing for any number of folders and
//! `*` and `?` never crossing a `/` (except in ruff's path patterns, below):
//! - [`PathPattern`] (pyright `include`/`exclude`, tsconfig `exclude`, `--exclude`): a pattern
//!   matches a file when it matches the file's relative path or the relative path of one of its
//!   folders, so `src` and `**/node_modules` cover everything below them.
//! - [`NamePattern`] (ruff `exclude`/`extend-exclude`): a pattern without `/` matches any single
//!   path component (`tests`, `*_pb2.py`); one with `/` is a [`PathPattern`] whose `*` and `?`
//!   cross `/`, as ruff's globset matches. As a ruff `include` entry it matches files only
//!   ([`NamePattern::includes`]).
//!
//! Relative paths use `/` separators and never start with `./`.

use std::path::{Component, Path};

use glob::{MatchOptions, Pattern};

const OPTIONS: MatchOptions = MatchOptions {
    case_sensitive: true,
    require_literal_separator: true,
    require_literal_leading_dot: false,
};

/// ruff's patterns are `globset` globs built with `Glob::new`, where `*` and `?` do cross a
/// `/` (`docs/*.py` excludes `docs/sub/x.py` for ruff).
const GLOBSET_OPTIONS: MatchOptions = MatchOptions {
    case_sensitive: true,
    require_literal_separator: false,
    require_literal_leading_dot: false,
};

/// A pattern relative to a base folder that covers a path and everything below it.
#[derive(Debug, Clone)]
pub struct PathPattern {
    pattern: Pattern,
}

impl PathPattern {
    /// Parses `text` (a `./` prefix and a trailing `/` are dropped). `None` when it is not a
    /// valid pattern (an unclosed `[`), when it is empty, or when it climbs out of its base with
    /// `..` (such entries name folders outside the project and can never match inside it).
    pub fn new(text: &str) -> Option<PathPattern> {
        let text = normalise(text)?;
        Pattern::new(&text)
            .ok()
            .map(|pattern| PathPattern { pattern })
    }

    /// Whether the pattern matches `relative` (a file's path relative to the base) or one of its
    /// folders.
    pub fn covers(&self, relative: &str) -> bool {
        ancestors_and_self(relative).any(|prefix| self.pattern.matches_with(prefix, OPTIONS))
    }

    /// Whether the pattern matches `relative` itself (tsconfig `include` entries that name
    /// files).
    pub fn matches(&self, relative: &str) -> bool {
        self.pattern.matches_with(relative, OPTIONS)
    }

    /// Whether a tsconfig `include` entry takes `relative`, as tsc expands it: its wildcards
    /// never match a name starting with `.`, and an entry naming a folder (`names_folder`)
    /// takes what `FOLDER/**/*` does, so nothing below it whose name starts with `.`
    /// (helper-39: with `"include": ["src"]`, `src/.vitepress/config.ts` failed `lspc check`
    /// where `tsc -p .` does not list it).
    pub fn includes_like_tsc(&self, relative: &str, names_folder: bool) -> bool {
        let literal_dots = MatchOptions {
            require_literal_leading_dot: true,
            ..OPTIONS
        };
        if !names_folder {
            return self.pattern.matches_with(relative, literal_dots);
        }
        ancestors_and_self(relative).any(|prefix| {
            self.pattern.matches_with(prefix, literal_dots)
                && !relative[prefix.len()..]
                    .split('/')
                    .any(|name| name.starts_with('.'))
        })
    }
}

/// A ruff-style exclusion: a bare name matches any path component, a path matches as
/// [`PathPattern`] does except that `*` and `?` cross `/`, as in ruff's globset.
#[derive(Debug, Clone)]
pub enum NamePattern {
    Component(Pattern),
    Path(PathPattern),
}

impl NamePattern {
    /// Parses a ruff `exclude` entry; `None` for an invalid or empty pattern.
    pub fn new(text: &str) -> Option<NamePattern> {
        let text = normalise(text)?;
        if text.contains('/') {
            return PathPattern::new(&text).map(NamePattern::Path);
        }
        Pattern::new(&text).ok().map(NamePattern::Component)
    }

    /// Whether the pattern covers `relative` (a path relative to the base).
    pub fn covers(&self, relative: &str) -> bool {
        match self {
            NamePattern::Component(pattern) => relative
                .split('/')
                .any(|component| pattern.matches_with(component, OPTIONS)),
            NamePattern::Path(pattern) => ancestors_and_self(relative)
                .any(|prefix| pattern.pattern.matches_with(prefix, GLOBSET_OPTIONS)),
        }
    }

    /// Whether the pattern, as a ruff `include` entry, takes the file at `relative` (a path
    /// relative to the base): ruff anchors every entry at the base and matches the whole path
    /// with `*` crossing `/`, so `*.py` takes `src/pkg/a.py` while `a.py` takes only the base's
    /// own `a.py`. Unlike [`NamePattern::covers`], a match of one of its folders does not count:
    /// ruff matches `include` against files, as it walks.
    pub fn includes(&self, relative: &str) -> bool {
        let pattern = match self {
            NamePattern::Component(pattern) => pattern,
            NamePattern::Path(pattern) => &pattern.pattern,
        };
        pattern.matches_with(relative, GLOBSET_OPTIONS)
    }
}

/// `path` relative to `base` with `/` separators; `None` when it is not below `base`.
pub fn relative_to(path: &Path, base: &Path) -> Option<String> {
    let relative = path.strip_prefix(base).ok()?;
    let parts: Vec<String> = relative
        .components()
        .filter_map(|component| match component {
            Component::Normal(part) => Some(part.to_string_lossy().into_owned()),
            _ => None,
        })
        .collect();
    if parts.is_empty() {
        return None;
    }
    Some(parts.join("/"))
}

/// Drops `./` prefixes and trailing `/`; refuses empty patterns and `..` components.
fn normalise(text: &str) -> Option<String> {
    let mut text = text.trim().replace('\\', "/");
    // `.` and `./` are the base folder itself: everything below it (vite's
    // `"include": ["./"]`).
    let base_folder = text == "." || text.starts_with("./");
    while let Some(rest) = text.strip_prefix("./") {
        text = rest.to_string();
    }
    while text.ends_with('/') {
        text.pop();
    }
    if text.is_empty() || text == "." {
        return base_folder.then(|| "**".to_string());
    }
    if text.split('/').any(|component| component == "..") {
        return None;
    }
    Some(text)
}

/// `a`, `a/b`, `a/b/c.py` for `a/b/c.py`.
fn ancestors_and_self(relative: &str) -> impl Iterator<Item = &str> {
    relative
        .match_indices('/')
        .map(move |(index, _)| &relative[..index])
        .chain(std::iter::once(relative))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check_path(pattern: &str, path: &str, expected: bool) {
        let pattern = PathPattern::new(pattern).expect("valid pattern");
        assert_eq!(pattern.covers(path), expected, "{pattern:?} covers {path}");
    }

    #[test]
    fn path_patterns_cover_folders_and_files() {
        check_path("src", "src/a.py", true);
        check_path("src", "src/pkg/a.py", true);
        check_path("src", "srcx/a.py", false);
        check_path("src", "tests/src.py", false);
        check_path("./src/", "src/a.py", true);
        check_path("**/node_modules", "node_modules/x/a.js", true);
        check_path("**/node_modules", "a/node_modules/x.js", true);
        check_path("**/.*", "a/.venv/x.py", true);
        check_path("**/.*", "a/b.py", false);
        check_path("tests/**/test_*.py", "tests/a/test_x.py", true);
        check_path("tests/**/test_*.py", "tests/test_x.py", true);
        check_path("tests/*.py", "tests/a/b.py", false);
        check_path(".", "a/b.py", true);
        assert!(PathPattern::new("../other").is_none());
        assert!(PathPattern::new("").is_none());
    }

    /// tsc's `matchFiles`: a wildcard never matches a leading `.`, a folder entry is
    /// `FOLDER/**/*`, and a dot written in the pattern matches.
    #[test]
    fn tsconfig_includes_leave_out_dot_names_as_tsc_does() {
        let folder = PathPattern::new("src").unwrap();
        assert!(folder.includes_like_tsc("src/a.ts", true));
        assert!(folder.includes_like_tsc("src/deep/b.ts", true));
        assert!(!folder.includes_like_tsc("src/.vitepress/config.ts", true));
        assert!(!folder.includes_like_tsc("src/deep/.c.ts", true));
        let everything = PathPattern::new("**/*").unwrap();
        assert!(everything.includes_like_tsc("a.ts", false));
        assert!(everything.includes_like_tsc("x/y.ts", false));
        assert!(!everything.includes_like_tsc(".hidden.ts", false));
        assert!(!everything.includes_like_tsc(".config/c.ts", false));
        let written = PathPattern::new(".vitepress/**/*").unwrap();
        assert!(written.includes_like_tsc(".vitepress/config.ts", false));
        let dot_folder = PathPattern::new(".storybook").unwrap();
        assert!(dot_folder.includes_like_tsc(".storybook/main.ts", true));
    }

    #[test]
    fn name_patterns_match_components() {
        let check = |pattern: &str, path: &str, expected: bool| {
            let parsed = NamePattern::new(pattern).expect("valid pattern");
            assert_eq!(parsed.covers(path), expected, "{pattern} covers {path}");
        };
        check("tests", "tests/a.py", true);
        check("tests", "src/tests/a.py", true);
        check("tests", "src/a_tests.py", false);
        check("*_pb2.py", "src/x_pb2.py", true);
        check("docs/conf.py", "docs/conf.py", true);
        check("docs/conf.py", "x/docs/conf.py", false);
        // ruff's globset: `*` crosses `/` (`ruff check --show-files` leaves out docs/sub/x.py).
        check("docs/*.py", "docs/sub/x.py", true);
        check("docs/*.py", "src/x.py", false);
    }

    /// As ruff `include` entries (checked with `ruff check --show-files`, ruff 0.17.6): the
    /// whole relative path matches, with `*` crossing `/`; a matching folder alone takes
    /// nothing.
    #[test]
    fn name_patterns_as_includes_match_files() {
        let includes =
            |pattern: &str, path: &str| NamePattern::new(pattern).unwrap().includes(path);
        assert!(includes("*.py", "a.py"));
        assert!(includes("*.py", "src/pkg/a.py"));
        assert!(includes("a.py", "a.py"));
        assert!(!includes("a.py", "src/pkg/a.py"));
        assert!(includes("**/pyproject.toml", "pyproject.toml"));
        assert!(!includes("*.py", "src/b.pyi"));
        assert!(!includes("src", "src/a.py"));
        assert!(includes("src/**/*.py", "src/pkg/a.py"));
        assert!(includes("src/*.py", "src/pkg/a.py"));
        assert!(!includes("src/**/*.py", "scripts/x.py"));
        assert!(includes("**/pyproject.toml", "pkg/pyproject.toml"));
        assert!(!includes("tools/*.pyi", "tools"));
    }

    #[test]
    fn relative_paths_use_slashes() {
        assert_eq!(
            relative_to(Path::new("/w/a/b.py"), Path::new("/w")).as_deref(),
            Some("a/b.py")
        );
        assert_eq!(relative_to(Path::new("/x/b.py"), Path::new("/w")), None);
    }
}
