//! Telling the workspace watch which files tsserver's projects loaded, so that files written
//! where the watch's own listing does not look are noticed too (issue 15).
//!
//! The watch (`session/watch.rs`) lists the workspace as git does, so it never stamps a file
//! git ignores: the declarations of a package in `node_modules` rewritten in place
//! (`patch-package`, `prisma generate` writing `node_modules/.prisma/client`), or a generated
//! module in an ignored folder that `tsconfig.json` includes. tsserver's own watch missed the
//! first for 60 s and more (it ignores every path with `/node_modules/.` in it) and took 2.8-3.8
//! s for the second, answering from the old declarations meanwhile: a warm `lspc check` said
//! `0 errors` where `tsc` said 2 (helper-66 on sindresorhus/ky).
//!
//! tsserver knows exactly what its projects hold: its `projectInfo` request with
//! `needFileNameList` lists every file of the project a file belongs to (1-4 ms for ky's 98
//! files), and typescript-language-server forwards it through `workspace/executeCommand`
//! `typescript.tsserverRequest`. The loop asks it for each document version whose diagnostics
//! tsserver confirmed (`tsserver_probe.rs`: the project is loaded by then), and again after a
//! reload, a restart or files changed on disk (a regenerated file may import new ones), and
//! sends the union of every file any project listed (a file leaves no list: one a generator
//! removed, asked for meanwhile, is watched when it comes back) to the watches that subscribed
//! ([`crate::engine::Op::SubscribeProjectFiles`]); a change the watch finds in one reaches
//! tsserver as any other (`frontend_events.rs`: a file written in place is sent open and closed,
//! one made or removed reloads the projects).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::SystemTime;

use crossbeam_channel::Sender;
use serde_json::{json, Value};

use super::{ProjectFileList, ServerId};

/// The tsserver request that describes the project of a file.
const PROJECT_INFO: &str = "projectInfo";

/// The most project files sent to the watches (a monorepo's projects with their packages'
/// declarations); past it, the first in path order, and a log line.
pub(crate) const MAX_PROJECT_FILES: usize = 10_000;

/// The loop's record: the watches to tell, each project's files per server, and the documents
/// whose project was asked for.
#[derive(Default)]
pub(super) struct ProjectFiles {
    /// Each watch's sender and its count of lists sent.
    subscribers: Vec<(Sender<ProjectFileList>, Arc<AtomicU64>)>,
    /// Per server, per project (tsserver's `configFileName`), every file it listed: a file
    /// leaves no list, so that one removed (a generator's output folder deleted, the project
    /// asked for meanwhile) is still watched when it comes back.
    projects: BTreeMap<ServerId, BTreeMap<String, BTreeSet<PathBuf>>>,
    /// Per (server, document), the document version its project was last asked for at.
    asked: HashMap<(ServerId, PathBuf), i32>,
    /// The list the subscribers were last sent.
    sent: Option<ProjectFileList>,
    warned: bool,
}

impl ProjectFiles {
    /// Send every later list to `sender`, the current one at once (when not empty).
    pub(super) fn subscribe(&mut self, sender: Sender<ProjectFileList>, sent: Arc<AtomicU64>) {
        if let Some(list) = &self.sent {
            if !send(&sender, &sent, list) {
                return;
            }
        }
        self.subscribers.push((sender, sent));
    }

    /// Whether the project of `path` on `server_id`, checked at `version`, is to be asked for
    /// now: a watch listens, and it was not asked at that version since the server last
    /// reloaded, restarted or heard of files changed on disk (an edit or a regenerated file
    /// may import files the project did not hold). Marks it asked.
    pub(super) fn ask(
        &mut self,
        server_id: ServerId,
        path: &std::path::Path,
        version: i32,
    ) -> bool {
        if self.subscribers.is_empty() {
            return false;
        }
        let key = (server_id, path.to_path_buf());
        self.asked.insert(key, version) != Some(version)
    }

    /// `server_id` reloaded, restarted or heard of files changed on disk: its projects' files
    /// may differ, each document's project is asked for again.
    pub(super) fn forget_asked(&mut self, server_id: ServerId) {
        self.asked.retain(|(server, _), _| *server != server_id);
    }

    /// A `projectInfo` answer from `server_id`, which had read the project's files by
    /// `read_before`: record them and tell the watches when the union changed.
    pub(super) fn answered(
        &mut self,
        server_id: ServerId,
        answer: &Value,
        read_before: SystemTime,
    ) {
        let Some((project, files)) = answer_files(answer) else {
            log::debug!("tsserver projectInfo answer without a file list: {answer}");
            return;
        };
        self.projects
            .entry(server_id)
            .or_default()
            .entry(project)
            .or_default()
            .extend(files);
        let union: BTreeSet<&PathBuf> = self
            .projects
            .values()
            .flat_map(BTreeMap::values)
            .flatten()
            .collect();
        if union.len() > MAX_PROJECT_FILES && !self.warned {
            self.warned = true;
            log::warn!(
                "tsserver's projects hold {} files; the watch stamps the first \
                 {MAX_PROJECT_FILES} the workspace listing leaves out",
                union.len()
            );
        }
        let union: Vec<PathBuf> = union.into_iter().take(MAX_PROJECT_FILES).cloned().collect();
        if self.sent.as_ref().is_some_and(|sent| sent.files == union) {
            return;
        }
        let sent = ProjectFileList {
            files: union,
            read_before,
        };
        self.subscribers
            .retain(|(sender, count)| send(sender, count, &sent));
        self.sent = Some(sent);
    }
}

/// Sends `list`, counted in `sent` first; `false` when the watch is gone.
fn send(sender: &Sender<ProjectFileList>, sent: &AtomicU64, list: &ProjectFileList) -> bool {
    sent.fetch_add(1, Ordering::SeqCst);
    sender.send(list.clone()).is_ok()
}

/// The `workspace/executeCommand` params asking tsserver for the project of the file `uri`
/// with its file list.
pub(crate) fn params(uri: &str) -> Value {
    json!({
        "command": super::tsserver_probe::COMMAND,
        "arguments": [PROJECT_INFO, { "file": uri, "needFileNameList": true }],
    })
}

/// The project and its files from a `projectInfo` answer (a tsserver response
/// `{success, body: {configFileName, fileNames}}`; absolute paths only); `None` when it failed
/// or has another shape.
pub(crate) fn answer_files(answer: &Value) -> Option<(String, Vec<PathBuf>)> {
    if answer.get("success").and_then(Value::as_bool) != Some(true) {
        return None;
    }
    let body = answer.get("body")?;
    let project = body.get("configFileName")?.as_str()?.to_owned();
    let files = body
        .get("fileNames")?
        .as_array()?
        .iter()
        .filter_map(Value::as_str)
        .map(PathBuf::from)
        .filter(|path| path.is_absolute())
        .collect();
    Some((project, files))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(project: &str, files: &[&str]) -> Value {
        json!({"success": true, "body": {"configFileName": project, "fileNames": files}})
    }

    #[test]
    fn the_watches_hear_the_union_of_every_project_once_per_change() {
        let mut files = ProjectFiles::default();
        let server = ServerId(0);
        let a = std::path::Path::new("/w/a.ts");
        assert!(!files.ask(server, a, 1), "no watch listens");
        let (sender, receiver) = crossbeam_channel::unbounded();
        let sent = Arc::new(AtomicU64::new(0));
        files.subscribe(sender, Arc::clone(&sent));
        assert!(files.ask(server, a, 1));
        assert!(!files.ask(server, a, 1), "asked once a version");
        assert!(files.ask(server, a, 2), "and again once edited");
        let at = SystemTime::UNIX_EPOCH;
        let project = "/w/tsconfig.json";
        files.answered(server, &answer(project, &["/w/a.ts", "/w/n.d.ts"]), at);
        let list = receiver.try_recv().unwrap();
        assert_eq!(list.files, ["/w/a.ts", "/w/n.d.ts"].map(PathBuf::from));
        assert_eq!(list.read_before, at);
        files.answered(server, &answer(project, &["/w/n.d.ts", "/w/a.ts"]), at);
        assert!(receiver.try_recv().is_err(), "the same files: not sent");
        // Asked while a generated file was gone: it stays, to be seen when it comes back.
        files.answered(server, &answer(project, &["/w/a.ts"]), at);
        assert!(receiver.try_recv().is_err(), "a file leaves no list");
        let later = at + std::time::Duration::from_secs(1);
        let other = answer("/w/b/tsconfig.json", &["/w/b/b.ts", "rel.ts", "/w/a.ts"]);
        files.answered(ServerId(1), &other, later);
        let list = receiver.try_recv().unwrap();
        let union = ["/w/a.ts", "/w/b/b.ts", "/w/n.d.ts"].map(PathBuf::from);
        assert_eq!(list.files, union);
        assert_eq!(list.read_before, later);
        let failed = json!({"success": false, "message": "No Project."});
        files.answered(server, &failed, later);
        assert!(receiver.try_recv().is_err());
        files.forget_asked(server);
        assert!(files.ask(server, a, 2), "asked again after a reload");
        assert_eq!(sent.load(Ordering::SeqCst), 2, "two lists sent");
        let (late, late_receiver) = crossbeam_channel::unbounded();
        files.subscribe(late, Arc::new(AtomicU64::new(0)));
        assert_eq!(late_receiver.try_recv().unwrap().files, union);
        assert_eq!(
            params("file:///w/a.ts"),
            json!({"command": "typescript.tsserverRequest", "arguments":
                ["projectInfo", {"file": "file:///w/a.ts", "needFileNameList": true}]})
        );
    }
}
