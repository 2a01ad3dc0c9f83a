//! The note `lspc check` adds when clangd could not find a header it was asked to include and
//! had no compile commands for the file: without the build's `-I` flags every local include is
//! missing, and the errors after it (unknown types, undeclared names, implicit declarations)
//! come from that, not from the code (a new user's trial on troydhanson/uthash: 855 errors in
//! `tests/` with no hint, where `make` builds them with `-I../src`).

use crate::output::CheckReport;

/// clang's diagnostic code for `#include` of a file it cannot find (`'uthash.h' file not
/// found`), as clangd publishes it.
const FILE_NOT_FOUND: &str = "pp_file_not_found";

/// The note, or `None` when no reported file has an include clangd could not find while no
/// compilation database (`compile_commands.json`, `compile_flags.txt`, also under `build/`, or a
/// `.clangd`) lies in its folder or above ([`crate::project::c_header::finds_compilation_database`]).
/// Paths are shown relative to `report.human_base`, as stderr's other lines are.
pub fn note(report: &CheckReport) -> Option<String> {
    let mut files = report.files.iter().filter_map(|file| {
        let missing = file
            .diagnostics
            .iter()
            .find(|diagnostic| diagnostic.code.as_deref() == Some(FILE_NOT_FOUND))?;
        let folder = file.path.parent()?;
        (!crate::project::c_header::finds_compilation_database(folder))
            .then_some((file.path.as_path(), missing.message.as_str()))
    });
    let (first, message) = files.next()?;
    let more = files.count();
    let shown = crate::output::display_path(&report.human_base, first);
    let more = match more {
        0 => String::new(),
        1 => " (and in 1 more file)".to_owned(),
        n => format!(" (and in {n} more files)"),
    };
    Some(format!(
        "lspc: note: clangd found no compile commands for {shown}{more}: no \
         compile_commands.json or compile_flags.txt in its folder or above, so it parsed without \
         the build's flags, and could not resolve an include ({message}); the errors after a \
         missing include often come from it. Give clangd the build's flags: a \
         compile_commands.json (`cmake -DCMAKE_EXPORT_COMPILE_COMMANDS=ON`, `bear -- make`) or a \
         compile_flags.txt with one flag a line (`-Iinclude`)",
    ))
}
