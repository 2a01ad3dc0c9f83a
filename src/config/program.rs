//! Which well-known language server a configured command runs ([`Program`]), looking through the
//! launchers people put in front of it. Every per-program decision (project file sets and ruff's
//! exclude, clangd's header command, built-in de-duplication, bash-language-server's linter,
//! pylsp's plugins, `lspc mcp -- COMMAND`) asks here, so a server run through a wrapper gets the
//! same rules as the plain command: a `python3 -m ruff server` entry not known as ruff once had
//! its excluded files reported clean.
//!
//! Recognised, by the command's file name (the rules nest, at most `MAX_LAUNCHERS` deep):
//! - a program's own name ([`Program::name`]), or that name with a version suffix `-N[.N…]`
//!   (Debian's `clangd-14`);
//! - `python`, `python3`, `python3.11` (`python` then digits and dots, optionally an ABI letter
//!   `t`, `d` or `m`) with `-m MODULE` (the module with `_` read as `-`: `ruff`, `pylsp`,
//!   `jedi_language_server`), after flags such as `-I`, `-u`, `-X dev`, also clustered (`-Im`);
//!   or with a script path, read as [`Program::of_script`]. `-c` and `-` run no program lspc knows;
//! - `uvx` and `uv tool run` (`uvx [--from SPEC] [--with X] PROG`), `pipx run [--spec SPEC] PROG`
//!   and `npx [-y|--yes] [--package=X] PROG`: the first operand, its version spec dropped
//!   (`ruff@0.6`, `ruff==0.6`, `typescript-language-server@4`);
//! - `uv run [--with X] COMMAND…` and `env [-i] [-u NAME] [VAR=value…] COMMAND…`: the command they
//!   run, itself looked through (`uv run python -m ruff server`); `uv run -m MODULE` as python's;
//! - `node [flags] SCRIPT`: [`Program::of_script`], the script's own name or the npm package
//!   folder it lies in (`/usr/lib/node_modules/bash-language-server/out/cli.js`).
//!
//! Options taking a value are skipped with it (each launcher's list below names them); any other
//! option is taken as a flag. Anything else (`python3 script.py`, `npx other-pkg`, `sh -c …`)
//! is no known program: `None`, as for a configured program lspc has no rules for.

use std::path::Path;

use super::ServerConfig;

/// How many launchers [`Program::of_command`] looks through (`env X=1 uv run python -m ruff` is
/// three).
const MAX_LAUNCHERS: usize = 4;

/// A language server program lspc has rules for, named by its standard command
/// ([`Program::name`]); the built-in table's commands are all here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Program {
    PyrightLangserver,
    BasedpyrightLangserver,
    Pylsp,
    Ty,
    Pyrefly,
    JediLanguageServer,
    Ruff,
    TypescriptLanguageServer,
    Clangd,
    RustAnalyzer,
    Gopls,
    BashLanguageServer,
    Taplo,
    YamlLanguageServer,
    VscodeJsonLanguageServer,
    VscodeCssLanguageServer,
    VscodeHtmlLanguageServer,
    DockerLangserver,
    CmakeLanguageServer,
    Fortls,
    Esbonio,
    VimLanguageServer,
    Intelephense,
}

/// When a running server may read one of its configuration files
/// ([`Program::configuration_reads`]), besides while it starts (until its first diagnostics).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConfigurationReads {
    /// Only when sent `workspace/didChangeWatchedFiles` or `workspace/didChangeConfiguration`.
    WhenTold,
    /// Also when sent a document (`textDocument/didOpen`, `didChange`, `didSave`, `didClose`),
    /// or while it reports `$/progress` work (clangd's background index).
    OnDocumentSync,
    /// At any moment, or lspc does not know.
    AnyTime,
    /// Never: the program does not read the file (it only hears of it, as a root marker).
    Never,
}

/// Every [`Program`], for lookups by name.
const ALL: [Program; 23] = [
    Program::PyrightLangserver,
    Program::BasedpyrightLangserver,
    Program::Pylsp,
    Program::Ty,
    Program::Pyrefly,
    Program::JediLanguageServer,
    Program::Ruff,
    Program::TypescriptLanguageServer,
    Program::Clangd,
    Program::RustAnalyzer,
    Program::Gopls,
    Program::BashLanguageServer,
    Program::Taplo,
    Program::YamlLanguageServer,
    Program::VscodeJsonLanguageServer,
    Program::VscodeCssLanguageServer,
    Program::VscodeHtmlLanguageServer,
    Program::DockerLangserver,
    Program::CmakeLanguageServer,
    Program::Fortls,
    Program::Esbonio,
    Program::VimLanguageServer,
    Program::Intelephense,
];

/// npm package folders whose scripts run one program (`node …/PACKAGE/…/cli.js`). pyright's and
/// basedpyright's packages also hold their CLI, so they count only for a script whose name says
/// `langserver` (`langserver.index.js`).
const NPM_PACKAGES: &[(&str, Program)] = &[
    ("bash-language-server", Program::BashLanguageServer),
    (
        "typescript-language-server",
        Program::TypescriptLanguageServer,
    ),
    ("yaml-language-server", Program::YamlLanguageServer),
    ("vim-language-server", Program::VimLanguageServer),
    ("intelephense", Program::Intelephense),
    (
        "dockerfile-language-server-nodejs",
        Program::DockerLangserver,
    ),
];

/// Options of `uvx`, `uv tool run` and `uv run` (and uv's global ones) that take a value.
const UV_VALUE_OPTIONS: &[&str] = &[
    "--from",
    "--with",
    "--with-editable",
    "--with-requirements",
    "--python",
    "-p",
    "--package",
    "--extra",
    "--group",
    "--env-file",
    "--index",
    "--default-index",
    "--index-url",
    "-i",
    "--extra-index-url",
    "--find-links",
    "-f",
    "--constraints",
    "-c",
    "--overrides",
    "--directory",
    "--project",
    "--cache-dir",
    "--config-file",
];

/// Options of `pipx run` that take a value.
const PIPX_VALUE_OPTIONS: &[&str] = &["--spec", "--python", "--index-url", "-i", "--pip-args"];

/// Options of `npx` that take a value; `-c`/`--call` runs a shell line, so no operand is left.
const NPX_VALUE_OPTIONS: &[&str] = &[
    "-p",
    "--package",
    "-c",
    "--call",
    "--registry",
    "--prefix",
    "--cache",
    "--userconfig",
    "-w",
    "--workspace",
];

/// Options of `node` that take a value; after `-e`/`--eval`/`-p`/`--print` node runs no script.
const NODE_VALUE_OPTIONS: &[&str] = &[
    "-r",
    "--require",
    "--import",
    "--loader",
    "--experimental-loader",
    "-e",
    "--eval",
    "-p",
    "--print",
    "--title",
];

/// Options of `env` that take a value; `-S` splits a string lspc does not parse.
const ENV_VALUE_OPTIONS: &[&str] = &["-u", "--unset", "-C", "--chdir", "-S", "--split-string"];

/// What a launcher runs, told from its arguments.
#[derive(Debug)]
enum Launched<'a> {
    /// A command line of its own: `args[index]` with the arguments after it (`env`, `uv run`).
    Command(usize),
    /// A program or package name as a package runner takes it, maybe with a version spec
    /// (`uvx ruff@0.6`).
    Name(&'a str),
    /// A Python module (`python -m ruff`).
    Module(&'a str),
    /// A script file (`node …/cli.js`, `python …/bin/pylsp`).
    Script(&'a str),
}

impl Program {
    /// The program's standard command name, as the built-in table runs it (`ruff`, `clangd`,
    /// `pyright-langserver`, `docker-langserver`).
    pub fn name(self) -> &'static str {
        match self {
            Program::PyrightLangserver => "pyright-langserver",
            Program::BasedpyrightLangserver => "basedpyright-langserver",
            Program::Pylsp => "pylsp",
            Program::Ty => "ty",
            Program::Pyrefly => "pyrefly",
            Program::JediLanguageServer => "jedi-language-server",
            Program::Ruff => "ruff",
            Program::TypescriptLanguageServer => "typescript-language-server",
            Program::Clangd => "clangd",
            Program::RustAnalyzer => "rust-analyzer",
            Program::Gopls => "gopls",
            Program::BashLanguageServer => "bash-language-server",
            Program::Taplo => "taplo",
            Program::YamlLanguageServer => "yaml-language-server",
            Program::VscodeJsonLanguageServer => "vscode-json-language-server",
            Program::VscodeCssLanguageServer => "vscode-css-language-server",
            Program::VscodeHtmlLanguageServer => "vscode-html-language-server",
            Program::DockerLangserver => "docker-langserver",
            Program::CmakeLanguageServer => "cmake-language-server",
            Program::Fortls => "fortls",
            Program::Esbonio => "esbonio",
            Program::VimLanguageServer => "vim-language-server",
            Program::Intelephense => "intelephense",
        }
    }

    /// Whether a change to a file named `file_name` changes how this program checks its
    /// project, and the server applies it later, on a timer of its own, with no message lspc
    /// could wait for: a pull or a publish right after `workspace/didChangeWatchedFiles` still
    /// answers with the old configuration. pyright reloads `pyproject.toml` and
    /// `pyrightconfig.json` after a delay and only then sends `workspace/diagnostic/refresh`
    /// (pyright 1.1.414: a pull 0.5 s after the change still answered with the old
    /// `typeCheckingMode`); tsserver re-reads a `tsconfig*.json`/`jsconfig*.json` on its own
    /// throttled watch. The engine restarts such a server's instance instead
    /// (`engine/frontend_events.rs`). ruff re-reads its configuration before it answers the next
    /// request and sends `workspace/diagnostic/refresh`; rust-analyzer and gopls report their
    /// reload through `experimental/serverStatus` and `$/progress`, which the settle rules wait
    /// for: none of them is restarted. clangd 14 looks a file's compilation database up once
    /// and keeps what it found, or that it found none, for a while: a `compile_flags.txt`
    /// written next to files a warm session had checked left them parsed by the fallback
    /// command, `'lib.h' file not found` and the errors after it, where a new clangd is clean.
    pub fn reloads_configuration_late(self, file_name: &str) -> bool {
        match self {
            Program::Clangd => matches!(
                file_name,
                "compile_commands.json" | "compile_flags.txt" | ".clangd"
            ),
            Program::PyrightLangserver | Program::BasedpyrightLangserver => {
                matches!(file_name, "pyproject.toml" | "pyrightconfig.json")
            }
            Program::TypescriptLanguageServer => {
                let stem = file_name.strip_suffix(".json").unwrap_or("");
                ["tsconfig", "jsconfig"].iter().any(|base| {
                    stem == *base
                        || stem
                            .strip_prefix(base)
                            .is_some_and(|rest| rest.starts_with('.'))
                })
            }
            _ => false,
        }
    }

    /// Whether this program ignores `workspace/didChangeWatchedFiles` and watches the files it
    /// has not been sent open by itself, so a file changed on disk must reach it another way.
    /// typescript-language-server (5.3.0) forwards the event to tsserver only in its client
    /// watcher mode (`tsserver.useClientFileWatcher`, TypeScript ≥ 5.4.4, where tsserver stops
    /// watching altogether and every path it asks about must be watched by the client); else
    /// tsserver watches each file itself, and a file unlinked and made again a moment later
    /// (a checkout, a tool that writes a temporary file and renames it into place) can be lost
    /// to that watch for good, by a race: its importers kept the old declarations' findings,
    /// or none, for as long as the server ran. The engine sends such a file
    /// open and closed at once (LSP 3.17 §`textDocument/didOpen`, §`textDocument/didClose`),
    /// after which tsserver holds the disk's text (`engine/frontend_events.rs`).
    pub fn ignores_watched_files(self) -> bool {
        matches!(self, Program::TypescriptLanguageServer)
    }

    /// Whether a file named `file_name` is one of the configuration files this program reads
    /// for its project, for the programs whose configuration can fail to load while they go on
    /// serving: ruff's `ruff.toml`, `.ruff.toml` and `pyproject.toml`
    /// (`engine/server_health.rs`'s settings failure).
    pub fn reads_configuration(self, file_name: &str) -> bool {
        match self {
            Program::Ruff => matches!(file_name, "ruff.toml" | ".ruff.toml" | "pyproject.toml"),
            _ => false,
        }
    }

    /// When this program may read the configuration file named `file_name` again after its
    /// start-up, which decides whether a rewrite of the file with the bytes it had can be
    /// skipped (`engine/configuration_reads.rs`). Checked with a bare client (no watched-file
    /// event sent, the file changed on disk, 4 s waited): pyright 1.1.414 and ruff 0.17.6 keep
    /// their old `pyproject.toml`/`ruff.toml` through a `didChange` and apply the new one only
    /// on `workspace/didChangeWatchedFiles` (they register their watches with the client);
    /// clangd 14 applies a new `compile_flags.txt` at the next `didChange`, as it rebuilds the
    /// file and looks its compilation database up again. clangd looks `.clangd` up for any
    /// request, and tsserver watches its `tsconfig.json` itself, so for them, and for every
    /// other program or file, [`ConfigurationReads::AnyTime`].
    pub fn configuration_reads(self, file_name: &str) -> ConfigurationReads {
        match self {
            // A root marker of ruff's that it does not read (helper-70: every unedited save of
            // `pyrightconfig.json` restarted pyright, since ruff hears of it).
            Program::Ruff if file_name == "pyrightconfig.json" => ConfigurationReads::Never,
            Program::PyrightLangserver | Program::BasedpyrightLangserver
                if self.reloads_configuration_late(file_name) =>
            {
                ConfigurationReads::WhenTold
            }
            Program::Ruff if self.reads_configuration(file_name) => ConfigurationReads::WhenTold,
            Program::Clangd
                if matches!(file_name, "compile_commands.json" | "compile_flags.txt") =>
            {
                ConfigurationReads::OnDocumentSync
            }
            _ => ConfigurationReads::AnyTime,
        }
    }

    /// Whether some program reads a file named `file_name` only at known moments
    /// ([`Program::configuration_reads`] `WhenTold` or `OnDocumentSync`): the files whose
    /// content the workspace scan compares (`session/watch.rs`).
    pub fn compares_configuration(file_name: &str) -> bool {
        ALL.into_iter().any(|program| {
            matches!(
                program.configuration_reads(file_name),
                ConfigurationReads::WhenTold | ConfigurationReads::OnDocumentSync
            )
        })
    }

    /// Whether this program looks its configuration files up in the folders above the files
    /// it serves, past its workspace folder: clangd (compilation database, flags, `.clangd`),
    /// ruff and tsserver do; pyright and basedpyright read only their project root's
    /// (helper-70: an edited `pyrightconfig.json` above the root restarted pyright, which
    /// never reads it, where the `pyright` CLI, which does look up, applies it).
    pub fn looks_up_configuration(self) -> bool {
        !matches!(
            self,
            Program::PyrightLangserver | Program::BasedpyrightLangserver
        )
    }

    /// The program a command's file name `name` is: its [`Program::name`], or that name with a
    /// version suffix `-N[.N…]` (`clangd-14`).
    pub fn from_name(name: &str) -> Option<Program> {
        let exact = |name: &str| ALL.into_iter().find(|program| program.name() == name);
        exact(name).or_else(|| {
            let (base, version) = name.rsplit_once('-')?;
            let is_version = version.starts_with(|c: char| c.is_ascii_digit())
                && version.chars().all(|c| c.is_ascii_digit() || c == '.');
            is_version.then(|| exact(base)).flatten()
        })
    }

    /// The program `server` runs ([`Program::of_command`] of its command and arguments).
    pub fn of(server: &ServerConfig) -> Option<Program> {
        Program::of_command(&server.command, &server.args)
    }

    /// The program `command args` runs, looking through the launchers the module doc lists;
    /// `None` for a program lspc has no rules for.
    pub fn of_command(command: &str, args: &[String]) -> Option<Program> {
        let mut command = command;
        let mut args = args;
        for _ in 0..=MAX_LAUNCHERS {
            let name = Path::new(command).file_name()?.to_str()?;
            if let Some(program) = Program::from_name(name) {
                return Some(program);
            }
            match launched(name, args)? {
                Launched::Command(index) => {
                    command = &args[index];
                    args = &args[index + 1..];
                }
                Launched::Name(spec) => return Program::from_name(without_version_spec(spec)),
                Launched::Module(module) => return Program::from_name(&module.replace('_', "-")),
                Launched::Script(script) => return Program::of_script(Path::new(script)),
            }
        }
        None
    }

    /// The program a script file runs: its own file name ([`Program::from_name`]: an npm
    /// `.bin/` link, a Python console script), else the nearest folder above it that is an npm
    /// package of one (`NPM_PACKAGES`). The path is read as written: pass a canonical path
    /// to see through links.
    pub fn of_script(script: &Path) -> Option<Program> {
        let file_name = script.file_name()?.to_str()?;
        if let Some(program) = Program::from_name(file_name) {
            return Some(program);
        }
        let langserver_script = file_name.contains("langserver");
        script.parent()?.iter().rev().find_map(|folder| {
            let folder = folder.to_str()?;
            match folder {
                "pyright" if langserver_script => Some(Program::PyrightLangserver),
                "basedpyright" if langserver_script => Some(Program::BasedpyrightLangserver),
                folder => NPM_PACKAGES
                    .iter()
                    .find(|(package, _)| *package == folder)
                    .map(|(_, program)| *program),
            }
        })
    }
}

/// Whether a command's file name `name` is a Python interpreter: `python` then digits and dots,
/// optionally ending in one ABI letter (`python3.13t`).
pub fn is_python(name: &str) -> bool {
    name.strip_prefix("python").is_some_and(|version| {
        version
            .strip_suffix(['t', 'd', 'm'])
            .unwrap_or(version)
            .chars()
            .all(|c| c.is_ascii_digit() || c == '.')
    })
}

/// What the launcher named `name` runs with `args`; `None` when `name` is no launcher or its
/// arguments run nothing lspc can tell.
fn launched<'a>(name: &str, args: &'a [String]) -> Option<Launched<'a>> {
    match name {
        "env" => {
            let start = first_operand(args, ENV_VALUE_OPTIONS)?;
            let index = (start..args.len()).find(|&index| !args[index].contains('='))?;
            Some(Launched::Command(index))
        }
        "uvx" => Some(Launched::Name(
            &args[first_operand(args, UV_VALUE_OPTIONS)?],
        )),
        "uv" => {
            let subcommand = first_operand(args, UV_VALUE_OPTIONS)?;
            let rest = &args[subcommand + 1..];
            match args[subcommand].as_str() {
                "run" => {
                    let index = subcommand + 1 + first_operand(rest, UV_VALUE_OPTIONS)?;
                    let module = args[subcommand + 1..index]
                        .iter()
                        .any(|arg| arg == "-m" || arg == "--module");
                    if module {
                        Some(Launched::Module(&args[index]))
                    } else {
                        Some(Launched::Command(index))
                    }
                }
                "tool" if rest.first().is_some_and(|arg| arg == "run") => {
                    launched("uvx", &rest[1..])
                }
                _ => None,
            }
        }
        "pipx" => {
            let subcommand = first_operand(args, &[])?;
            if args[subcommand] != "run" {
                return None;
            }
            let rest = &args[subcommand + 1..];
            Some(Launched::Name(
                &rest[first_operand(rest, PIPX_VALUE_OPTIONS)?],
            ))
        }
        "npx" => Some(Launched::Name(
            &args[first_operand(args, NPX_VALUE_OPTIONS)?],
        )),
        "node" => {
            let index = first_operand(args, NODE_VALUE_OPTIONS)?;
            let evaluates = args[..index]
                .iter()
                .any(|arg| matches!(arg.as_str(), "-e" | "--eval" | "-p" | "--print"));
            (!evaluates).then(|| Launched::Script(&args[index]))
        }
        name if is_python(name) => python_runs(args),
        _ => None,
    }
}

/// What `python ARGS` runs, read as CPython reads its options: short flags may cluster
/// (`-Im ruff`, `-mruff`), `-W` and `-X` take a value, `-m` ends the options with a module, `-c`
/// and `-` run no program lspc can tell, and the first operand is a script.
fn python_runs(args: &[String]) -> Option<Launched<'_>> {
    let mut index = 0;
    while let Some(arg) = args.get(index) {
        index += 1;
        if arg == "--" {
            return args.get(index).map(|script| Launched::Script(script));
        }
        if arg.starts_with("--") {
            continue;
        }
        let Some(cluster) = arg.strip_prefix('-').filter(|cluster| !cluster.is_empty()) else {
            return (arg != "-").then_some(Launched::Script(arg));
        };
        for (at, flag) in cluster.char_indices() {
            let attached = &cluster[at + flag.len_utf8()..];
            match flag {
                'm' if attached.is_empty() => return args.get(index).map(|m| Launched::Module(m)),
                'm' => return Some(Launched::Module(attached)),
                'c' => return None,
                'W' | 'X' => {
                    if attached.is_empty() {
                        index += 1;
                    }
                    break;
                }
                _ => {}
            }
        }
    }
    None
}

/// The index of the first argument of `args` that is neither an option nor an option's value:
/// an option in `value_options` takes the next argument unless written `--option=value`; `--`
/// ends the options. `None` when there is no such argument.
fn first_operand(args: &[String], value_options: &[&str]) -> Option<usize> {
    let mut index = 0;
    while let Some(arg) = args.get(index) {
        if arg == "--" {
            return (index + 1 < args.len()).then_some(index + 1);
        }
        if !arg.starts_with('-') || arg == "-" {
            return Some(index);
        }
        index += if value_options.contains(&arg.as_str()) {
            2
        } else {
            1
        };
    }
    None
}

/// A package runner's operand without its version spec: `ruff@0.6`, `ruff==0.6`, `ruff>=0.6`
/// and `typescript-language-server@4.3.3` give the name before it.
fn without_version_spec(spec: &str) -> &str {
    let end = spec
        .find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')))
        .unwrap_or(spec.len());
    &spec[..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `line` is the command and its arguments, split on spaces.
    fn check(line: &str, expected: Option<Program>) {
        let mut words = line.split(' ');
        let command = words.next().unwrap();
        let args: Vec<String> = words.map(str::to_owned).collect();
        assert_eq!(Program::of_command(command, &args), expected, "{line}");
    }

    /// When each program may read each compared configuration file, and which files the scan
    /// compares (a `tsconfig.json` is read by tsserver at any time; ruff never reads
    /// `pyrightconfig.json`, one of its root markers).
    #[test]
    fn when_programs_read_their_configuration_files() {
        use ConfigurationReads::*;
        let table = [
            (Program::PyrightLangserver, "pyproject.toml", WhenTold),
            (
                Program::BasedpyrightLangserver,
                "pyrightconfig.json",
                WhenTold,
            ),
            (Program::Ruff, "ruff.toml", WhenTold),
            (Program::Ruff, "pyrightconfig.json", Never),
            (Program::Clangd, "compile_commands.json", OnDocumentSync),
            (Program::Clangd, "compile_flags.txt", OnDocumentSync),
            (Program::Clangd, ".clangd", AnyTime),
            (Program::TypescriptLanguageServer, "tsconfig.json", AnyTime),
            (Program::Gopls, "pyproject.toml", AnyTime),
        ];
        for (program, file, reads) in table {
            assert_eq!(
                program.configuration_reads(file),
                reads,
                "{program:?} {file}"
            );
        }
        // Every compared name (the scan looks them up in a short list first, `session/watch.rs`).
        let compared = [
            "pyproject.toml",
            "pyrightconfig.json",
            "ruff.toml",
            ".ruff.toml",
            "compile_commands.json",
            "compile_flags.txt",
        ];
        for file in compared {
            assert!(Program::compares_configuration(file), "{file}");
        }
        for file in ["tsconfig.json", ".clangd", "setup.cfg"] {
            assert!(!Program::compares_configuration(file), "{file}");
        }
        assert!(!Program::PyrightLangserver.looks_up_configuration());
        assert!(Program::Ruff.looks_up_configuration());
    }

    #[test]
    fn configuration_files_a_server_reloads_late() {
        let late = |program: Program, names: &[&str]| -> Vec<bool> {
            names
                .iter()
                .map(|name| program.reloads_configuration_late(name))
                .collect()
        };
        assert_eq!(
            late(
                Program::PyrightLangserver,
                &[
                    "pyproject.toml",
                    "pyrightconfig.json",
                    "setup.cfg",
                    "tsconfig.json"
                ]
            ),
            [true, true, false, false]
        );
        assert_eq!(
            late(Program::BasedpyrightLangserver, &["pyproject.toml"]),
            [true]
        );
        assert_eq!(
            late(
                Program::TypescriptLanguageServer,
                &[
                    "tsconfig.json",
                    "tsconfig.app.json",
                    "jsconfig.json",
                    "tsconfigs.json",
                    "tsconfig.json.bak",
                    "package.json",
                ]
            ),
            [true, true, true, false, false, false]
        );
        assert_eq!(
            late(
                Program::Clangd,
                &[
                    "compile_commands.json",
                    "compile_flags.txt",
                    ".clangd",
                    "CMakeLists.txt"
                ]
            ),
            [true, true, true, false]
        );
        for program in [
            Program::Ruff,
            Program::RustAnalyzer,
            Program::Gopls,
            Program::Clangd,
        ] {
            assert_eq!(
                late(
                    program,
                    &["pyproject.toml", "ruff.toml", "Cargo.toml", "go.mod"]
                ),
                [false; 4],
                "{program:?}"
            );
        }
    }

    #[test]
    fn plain_commands_by_file_name() {
        check("ruff server", Some(Program::Ruff));
        check(
            "/opt/bin/pyright-langserver --stdio",
            Some(Program::PyrightLangserver),
        );
        check(
            "basedpyright-langserver --stdio",
            Some(Program::BasedpyrightLangserver),
        );
        check(
            "typescript-language-server --stdio",
            Some(Program::TypescriptLanguageServer),
        );
        check("gopls", Some(Program::Gopls));
        check("clangd", Some(Program::Clangd));
        check("/usr/bin/clangd-14", Some(Program::Clangd));
        check("clangd-19.1", Some(Program::Clangd));
        check("clangd-indexer", None);
        check("my-c", None);
        check("ruff-lsp", None);
        check("", None);
    }

    #[test]
    fn python_modules_and_scripts() {
        check("python3 -m ruff server", Some(Program::Ruff));
        check("python -m pylsp", Some(Program::Pylsp));
        check("/usr/bin/python3.11 -m pylsp -v", Some(Program::Pylsp));
        check("python3.13t -m ruff server", Some(Program::Ruff));
        check("python3 -I -u -m ruff server", Some(Program::Ruff));
        check(
            "python3 -X dev -W ignore -m ruff server",
            Some(Program::Ruff),
        );
        check("python3 -Im ruff server", Some(Program::Ruff));
        check("python3 -mruff server", Some(Program::Ruff));
        check(
            "python3 -m jedi_language_server",
            Some(Program::JediLanguageServer),
        );
        check("python3 /venv/bin/pylsp", Some(Program::Pylsp));
        check("python3 script.py -m ruff", None);
        check("python3 -c import ruff -m ruff", None);
        check("python3 -m", None);
        check("python3 - -m ruff", None);
        check("python3 -m other server", None);
        check("pythonista -m ruff", None);
    }

    #[test]
    fn package_runners() {
        check("uvx ruff server", Some(Program::Ruff));
        check("uvx ruff@0.6.0 server", Some(Program::Ruff));
        check("uvx --from ruff==0.6 ruff server", Some(Program::Ruff));
        check(
            "uvx --from basedpyright basedpyright-langserver --stdio",
            Some(Program::BasedpyrightLangserver),
        );
        check(
            "uvx --python=3.12 --with pylsp-mypy pylsp",
            Some(Program::Pylsp),
        );
        check("uv tool run ruff server", Some(Program::Ruff));
        check("uvx --from ruff", None);
        check("uvx black", None);
        check("pipx run ruff server", Some(Program::Ruff));
        check(
            "pipx run --spec python-lsp-server pylsp",
            Some(Program::Pylsp),
        );
        check("pipx install ruff", None);
        check(
            "npx typescript-language-server --stdio",
            Some(Program::TypescriptLanguageServer),
        );
        check(
            "npx -y bash-language-server start",
            Some(Program::BashLanguageServer),
        );
        check(
            "npx --yes --package=pyright pyright-langserver --stdio",
            Some(Program::PyrightLangserver),
        );
        check(
            "npx -p pyright pyright-langserver --stdio",
            Some(Program::PyrightLangserver),
        );
        check(
            "npx typescript-language-server@4.3.3 --stdio",
            Some(Program::TypescriptLanguageServer),
        );
        check("npx other-pkg --stdio", None);
        check("npx -c bash-language-server", None);
        check("npx @scope/ruff", None);
    }

    #[test]
    fn command_runners() {
        check("uv run ruff server", Some(Program::Ruff));
        check("uv run --with ruff ruff server", Some(Program::Ruff));
        check("uv run python -m ruff server", Some(Program::Ruff));
        check("uv run -m ruff server", Some(Program::Ruff));
        check("uv --directory /w run --module pylsp", Some(Program::Pylsp));
        check("uv run pytest", None);
        check("uv pip install ruff", None);
        check("env ruff server", Some(Program::Ruff));
        check(
            "/usr/bin/env RUFF_CACHE_DIR=/tmp/r A=1 ruff server",
            Some(Program::Ruff),
        );
        check("env -i -u HOME -- clangd-14", Some(Program::Clangd));
        check("env A=1 uvx ruff server", Some(Program::Ruff));
        check("env A=1 uv run python3 -m pylsp", Some(Program::Pylsp));
        check("env -S ruff server", None);
        check("env A=1", None);
        check("env env env env env env ruff", None);
    }

    #[test]
    fn node_scripts_by_name_or_package_folder() {
        check(
            "node /usr/lib/node_modules/bash-language-server/out/cli.js start",
            Some(Program::BashLanguageServer),
        );
        check(
            "node --max-old-space-size=4096 /opt/typescript-language-server/lib/cli.mjs --stdio",
            Some(Program::TypescriptLanguageServer),
        );
        check(
            "node node_modules/.bin/pyright-langserver --stdio",
            Some(Program::PyrightLangserver),
        );
        check(
            "node /g/node_modules/pyright/langserver.index.js --stdio",
            Some(Program::PyrightLangserver),
        );
        check(
            "node /g/node_modules/basedpyright/langserver.index.js --stdio",
            Some(Program::BasedpyrightLangserver),
        );
        check("node /g/node_modules/pyright/index.js", None);
        check("node -r ts-node/register /w/server.js", None);
        check("node -e require('bash-language-server')", None);
        check("node", None);
    }

    #[test]
    fn every_name_reads_back() {
        for program in ALL {
            assert_eq!(Program::from_name(program.name()), Some(program));
        }
        assert!(is_python("python") && is_python("python3") && is_python("python3.11"));
        assert!(!is_python("python-config") && !is_python("py"));
    }
}
