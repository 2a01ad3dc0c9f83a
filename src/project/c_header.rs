//! Parsing a lone C header as C in clangd: the compile command lspc gives clangd for a `.h` file
//! of a C project that has no compilation database.
//!
//! Without `compile_commands.json` or `compile_flags.txt`, clangd 14 parses a file with its
//! fallback command, and for a `.h` that is `clang -xobjective-c++-header FILE`
//! (`clangd --check=FILE.h`: "Generic fallback command is: clang -xobjective-c++-header"),
//! whatever `languageId` the client sent. Valid C becomes a C++ error there (antirez/sds at
//! 5347739b: `sds.h` got four "Cannot initialize a variable of type 'struct sdshdr8 *' with an
//! rvalue of type 'void *'"), so `lspc check` exited 1 where `gcc -fsyntax-only -Wall` is clean.
//! clangd's `compilationDatabaseChanges` extension (`workspace/didChangeConfiguration`
//! settings, <https://clangd.llvm.org/extensions#compilation-commands>) sets one file's command;
//! [`c_header_settings`] is that command with `-xc-header` in place of the fallback's
//! `-xobjective-c++-header` (clangd still adds its resource dir, so `<stdio.h>` resolves).
//!
//! The rule, all of which must hold ([`wants_c_header_command`]):
//! - the file's extension is `.h` (exactly: clang reads `.H` as C++);
//! - the server runs clangd ([`Program::of`]: `clangd` or `clangd-NN`, also through a launcher
//!   such as `env`) with no `--compile-commands-dir` argument and no `compilationDatabasePath`
//!   initialization option;
//! - clangd would find no compilation database for it ([`finds_compilation_database`]): no
//!   `compile_commands.json`, `compile_flags.txt` (also under `build/`) or `.clangd` in the
//!   header's folder or any folder above it, up to the file system root as clangd looks. A real
//!   database is never overridden, and a `.clangd` is the user's own say on flags;
//! - the project is C ([`is_c_project`]): the files of the server's workspace folder include a
//!   `.c` file and no C++ or Objective-C source or header (`.cc .cpp .cxx .c++ .cp .C .hpp .hh
//!   .hxx .h++ .ipp .tpp .m .mm .cu`).

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use crate::config::{Program, ServerConfig};

/// Extensions (lowercase, without the dot) whose presence makes a project not plain C. `.C`
/// (capital) is checked separately since extensions are compared lowercased.
const NOT_C_EXTENSIONS: &[&str] = &[
    "cc", "cpp", "cxx", "c++", "cp", "hpp", "hh", "hxx", "h++", "ipp", "tpp", "m", "mm", "cu",
];

/// Files whose presence in a folder gives clangd a compilation database or a configuration for
/// the files below it (clangd 14 also looks in each folder's `build/`).
const DATABASE_FILES: &[&str] = &["compile_commands.json", "compile_flags.txt"];

/// Whether `server` is clangd and `header` (canonical, absolute) is a `.h` file that clangd
/// would parse with its Objective-C++ fallback: no argument or option names a database, and
/// [`finds_compilation_database`] finds none. Whether the project is C is asked separately
/// ([`is_c_project`]), since that walks the tree and is worth caching.
pub fn wants_c_header_command(server: &ServerConfig, header: &Path) -> bool {
    if header.extension().is_none_or(|extension| extension != "h") {
        return false;
    }
    if Program::of(server) != Some(Program::Clangd) || names_database(server) {
        return false;
    }
    let Some(folder) = header.parent() else {
        return false;
    };
    !finds_compilation_database(folder)
}

/// Whether clangd 14 finds a `compile_commands.json` for files in `folder` (in it, in a folder
/// above it, or in the `build/` folder of any of them): the one database that lists a project's
/// files, so the only one from which clangd's background index covers files it was not sent
/// (`compile_flags.txt` gives flags, not files).
pub fn finds_compile_commands(folder: &Path) -> bool {
    folder.ancestors().any(|dir| {
        dir.join("compile_commands.json").exists()
            || dir.join("build").join("compile_commands.json").exists()
    })
}

/// The folder whose compilation database clangd 14 takes for files in `folder`: the nearest of
/// `folder` and the folders above it holding `compile_commands.json` or `compile_flags.txt`,
/// itself or in its `build/` folder (`None`: none, clangd's fallback command). clangd loads a
/// database, and starts its background index of it, when it first opens a file of it; the
/// readiness wait keys what it has waited for by this folder. A `.clangd` that names another
/// database is not followed: such files then count as their own database (one quiet period
/// more, never one less).
pub fn compilation_database_folder(folder: &Path) -> Option<PathBuf> {
    folder
        .ancestors()
        .find(|dir| {
            DATABASE_FILES
                .iter()
                .any(|name| dir.join(name).exists() || dir.join("build").join(name).exists())
        })
        .map(Path::to_path_buf)
}

/// Whether the server's arguments or initialization options point clangd at a database.
fn names_database(server: &ServerConfig) -> bool {
    let argument = server.args.iter().any(|arg| {
        arg.starts_with("--compile-commands-dir") || arg.starts_with("-compile-commands-dir")
    });
    let option = server
        .initialization_options
        .as_ref()
        .and_then(|options| options.get("compilationDatabasePath"))
        .is_some();
    argument || option
}

/// Whether clangd 14 finds a compilation database (or a `.clangd` configuration) for files in
/// `folder`: `compile_commands.json` or `compile_flags.txt` in `folder`, in any folder above it,
/// or in the `build/` folder of any of them; or a `.clangd` in any of them.
pub fn finds_compilation_database(folder: &Path) -> bool {
    folder.ancestors().any(|dir| {
        dir.join(".clangd").exists()
            || DATABASE_FILES
                .iter()
                .any(|name| dir.join(name).exists() || dir.join("build").join(name).exists())
    })
}

/// Whether `files` (the project's files) make a C project: at least one `.c` file and no C++,
/// Objective-C or CUDA source or header ([`NOT_C_EXTENSIONS`], or a capital `.C`).
pub fn is_c_project<'a>(files: impl IntoIterator<Item = &'a Path>) -> bool {
    let mut has_c = false;
    for file in files {
        let Some(extension) = file.extension().and_then(|e| e.to_str()) else {
            continue;
        };
        if extension == "C" || NOT_C_EXTENSIONS.contains(&extension.to_ascii_lowercase().as_str()) {
            return false;
        }
        has_c |= extension.eq_ignore_ascii_case("c");
    }
    has_c
}

/// The `workspace/didChangeConfiguration` settings that make clangd parse `header` (canonical,
/// absolute) as a C header: clangd's fallback command with `-xc-header` for
/// `-xobjective-c++-header`, run from the header's folder as the fallback is.
pub fn c_header_settings(header: &Path) -> Value {
    let file = header.to_string_lossy();
    let folder = header.parent().unwrap_or(header).to_string_lossy();
    json!({
        "compilationDatabaseChanges": {
            file.as_ref(): {
                "workingDirectory": folder,
                "compilationCommand": ["clang", "-xc-header", file.as_ref()]
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    #[test]
    fn c_project_by_extensions() {
        let check = |files: &[&str], expected: bool| {
            let paths: Vec<PathBuf> = files.iter().map(PathBuf::from).collect();
            assert_eq!(
                is_c_project(paths.iter().map(PathBuf::as_path)),
                expected,
                "{files:?}"
            );
        };
        check(&["/w/sds.c", "/w/sds.h", "/w/Makefile"], true);
        check(&["/w/src/a.C"], false);
        check(&["/w/a.c", "/w/b.cpp"], false);
        check(&["/w/a.c", "/w/include/b.hpp"], false);
        check(&["/w/a.c", "/w/b.M"], false);
        check(&["/w/a.h", "/w/README"], false);
        check(&[], false);
    }

    #[test]
    fn compilation_database_is_found_above_and_in_build() {
        let temp = std::env::temp_dir().join(format!("lspc-c-header-{}", std::process::id()));
        let folder = temp.join("project/src/lib");
        std::fs::create_dir_all(&folder).unwrap();
        assert!(!finds_compilation_database(&folder));
        std::fs::create_dir_all(temp.join("project/build")).unwrap();
        std::fs::write(temp.join("project/build/compile_commands.json"), "[]").unwrap();
        assert!(finds_compilation_database(&folder));
        std::fs::remove_file(temp.join("project/build/compile_commands.json")).unwrap();
        std::fs::write(temp.join("project/src/compile_flags.txt"), "-xc\n").unwrap();
        assert!(finds_compilation_database(&folder));
        assert!(!finds_compilation_database(&temp.join("project/build")));
        std::fs::remove_dir_all(&temp).unwrap();
    }

    #[test]
    fn compilation_database_folder_is_the_nearest_with_a_database() {
        let temp = std::env::temp_dir().join(format!("lspc-c-database-{}", std::process::id()));
        let folder = temp.join("project/src/lib");
        std::fs::create_dir_all(&folder).unwrap();
        std::fs::create_dir_all(temp.join("project/build")).unwrap();
        assert_eq!(compilation_database_folder(&folder), None);
        std::fs::write(temp.join("project/build/compile_commands.json"), "[]").unwrap();
        assert_eq!(
            compilation_database_folder(&folder),
            Some(temp.join("project"))
        );
        std::fs::write(temp.join("project/src/compile_flags.txt"), "-xc\n").unwrap();
        assert_eq!(
            compilation_database_folder(&folder),
            Some(temp.join("project/src"))
        );
        assert_eq!(
            compilation_database_folder(&temp.join("project/build")),
            Some(temp.join("project/build"))
        );
        std::fs::remove_dir_all(&temp).unwrap();
    }

    #[test]
    fn settings_name_the_header_and_its_folder() {
        assert_eq!(
            c_header_settings(Path::new("/w/a b/sds.h")),
            json!({"compilationDatabaseChanges": {"/w/a b/sds.h": {
                "workingDirectory": "/w/a b",
                "compilationCommand": ["clang", "-xc-header", "/w/a b/sds.h"]
            }}})
        );
    }
}
