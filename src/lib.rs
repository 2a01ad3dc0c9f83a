//! lspc: a headless LSP client for agents and scripts.
//!
//! Code map (each module has one job; see its own `//!` doc for invariants):
//!
//! - [`cli`]: command-line parsing (lexopt) into [`cli::Command`] and dispatch; the only module
//!   that knows every command.
//! - [`exit`]: the exit statuses every command shares.
//! - [`options`]: the options every command shares ([`options::GlobalOptions`]) and how they
//!   become a configuration and engine options.
//! - [`config`]: `.lsp.json` loading (files, plugin folders, workspace, user file, built-in table),
//!   variable expansion and extension routing. Produces [`config::Config`].
//! - [`uri`]: canonical path <-> `file://` URI conversion. Documents are keyed by canonical path.
//! - [`text`]: line indexes and column conversion between 1-based Unicode-character columns (what
//!   lspc shows) and LSP positions in the negotiated encoding (UTF-8, UTF-16 or UTF-32 code units).
//! - [`transport`]: JSON-RPC framing over a server's stdio, tolerant of junk between frames.
//! - [`process`]: spawning a language server with reader, writer and stderr threads, process
//!   groups, parent-death signals and the bounded shutdown sequence.
//! - [`diagnostics`]: the normalised diagnostic model, per-server stores, dedup, severity order and
//!   caps (10 per file, 30 in total when capping is asked for).
//! - [`failure_text`]: the one stderr line that says why a server failed.
//! - [`engine`]: the one event loop that owns every server, document and diagnostic.
//! - [`output`]: rendering `lspc check` results (human, json, jsonl, sarif, github).
//! - [`check`]: the `lspc check` command: file walking, settling, exit status.
//! - [`signals`]: SIGINT/SIGTERM/SIGHUP turned into events for the loop.
//! - [`doorbell`]: channels whose senders wake the event loop with one `unpark` (no lock held).
//! - [`inotify`]: a non-blocking inotify instance, shared by the configuration and folder watches.
//! - [`query`]: code-intelligence queries (definition, references, hover, symbols, hierarchies)
//!   with result normalisation and position conversion; human rendering.
//! - [`operation`]: the one operation vocabulary: every operation and argument defined once, read
//!   from one JSON shape by CLI, batch and MCP alike, run and rendered in one place.
//! - [`batch`]: `lspc batch`, JSON-lines operations over one engine session.
//! - [`input_lines`]: batch's stdin lines, waited for with `poll` beside stdout's hang-up.
//! - [`walk`]: listing the files under a folder, honouring `.gitignore`.
//! - [`word_occurrences`]: whole-word occurrences of a name in the workspace's files.
//! - [`project`]: each server's own project file set (pyright include, tsconfig, ruff exclude).
//! - [`install_hints`]: which built-in server would serve unserved files, and its install command.
//! - [`unchecked_kinds`]: source files no language server checks (Go assembly, Bats, notebooks).
//! - [`doctor`]: `lspc doctor`: start each server the workspace needs and report how it behaves.
//! - [`ide`]: `lspc ide`, the headless IDE an agent connects to (MCP over WebSocket, lock files),
//!   and `lspc ide list`, the agent's IDE discovery.
//! - [`session`]: warm sessions: one engine per workspace in a background process, shared by
//!   every command and MCP client over a Unix socket (`lspc session`, `--session`).
//! - [`sorting`]: stable sorts that share one copy of the standard library's sort (binary size).
//! - [`tagged_json`]: internally tagged JSON enums read by hand, not by serde's derive (binary size).

pub mod batch;
pub mod bounded_run;
pub mod check;
pub mod cli;
pub mod config;
pub mod diagnostics;
pub mod doctor;
pub mod doorbell;
pub mod edit;
pub mod engine;
pub mod exit;
pub mod failure_text;
pub mod fast_hash;
pub mod file_stamp;
pub mod ide;
pub mod inotify;
pub mod input_lines;
pub mod install_hints;
pub mod mcp;
pub mod operation;
pub mod options;
pub mod output;
pub mod process;
pub mod project;
pub mod query;
pub mod session;
pub mod signals;
pub mod sorting;
pub mod tagged_json;
pub mod text;
pub mod transport;
pub mod unchecked_kinds;
pub mod uri;
pub mod walk;
pub mod word_occurrences;

#[cfg(test)]
mod module_graph;
