//! What one `stat` says about a file's content: device, inode, size, modification time,
//! status-change time and birth time. The same stamp means the same bytes as long as the file's
//! last change (`ctime`, which no one can set back) is older than the read it vouches for
//! (git's "racy clean" rule; the callers keep the read's time). Every watch and cache that
//! decides "changed on disk?" compares these stamps: size and modification time alone miss a
//! rewrite that keeps both (`cp -p`, `rsync -t`, `touch -r`), and the inode alone misses a file
//! deleted and written again (ext4 gives the inode back; the birth time differs).

use std::fs::Metadata;
use std::os::unix::fs::MetadataExt;
use std::time::{Duration, SystemTime};

/// One `stat` of a file (or folder).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileStamp {
    device: u64,
    inode: u64,
    size: u64,
    /// Modification time: seconds and nanoseconds since 1970.
    modified: (i64, i64),
    /// Status-change time: seconds and nanoseconds since 1970.
    changed: (i64, i64),
    /// Birth time, where the file system keeps one (ext4, tmpfs, btrfs through `statx`).
    born: Option<SystemTime>,
    is_dir: bool,
    /// A symbolic link itself (from `symlink_metadata` or a `DirEntry`).
    is_link: bool,
}

impl FileStamp {
    /// The stamp of `metadata` (from `fs::metadata`, `symlink_metadata` or a `DirEntry`).
    pub fn of(metadata: &Metadata) -> FileStamp {
        FileStamp {
            device: metadata.dev(),
            inode: metadata.ino(),
            size: metadata.size(),
            modified: (metadata.mtime(), metadata.mtime_nsec()),
            changed: (metadata.ctime(), metadata.ctime_nsec()),
            born: metadata.created().ok(),
            is_dir: metadata.is_dir(),
            is_link: metadata.file_type().is_symlink(),
        }
    }

    /// The stamp of the file at `path` (following links); `None` when it cannot be `stat`ed.
    pub fn of_path(path: &std::path::Path) -> Option<FileStamp> {
        std::fs::metadata(path)
            .ok()
            .map(|metadata| FileStamp::of(&metadata))
    }

    /// Whether `self` and `other` are two files made one after the other under a path (deleted
    /// and written again, or another file renamed over it): another device or inode, or another
    /// birth time.
    pub fn other_file(&self, other: &FileStamp) -> bool {
        (self.device, self.inode, self.born) != (other.device, other.inode, other.born)
    }

    /// The modification time as a time (`None` before 1970).
    pub fn modified_at(&self) -> Option<SystemTime> {
        as_time(self.modified)
    }

    /// The status-change time as a time (`None` before 1970).
    pub fn changed_at(&self) -> Option<SystemTime> {
        as_time(self.changed)
    }

    /// Whether this is the stamp of a symbolic link itself.
    pub fn is_link(&self) -> bool {
        self.is_link
    }

    /// The size in bytes.
    pub fn size(&self) -> u64 {
        self.size
    }
}

fn as_time((seconds, nanos): (i64, i64)) -> Option<SystemTime> {
    let since = Duration::new(u64::try_from(seconds).ok()?, u32::try_from(nanos).ok()?);
    SystemTime::UNIX_EPOCH.checked_add(since)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A rewrite that keeps the size and sets the modification time back still changes the
    /// stamp (the status-change time); a file deleted and written again is another file even
    /// when it gets its inode back.
    #[test]
    fn stamps_see_same_size_rewrites_and_files_made_again() {
        let folder = std::env::temp_dir().join(format!("lspc-stamp-{}", std::process::id()));
        std::fs::create_dir_all(&folder).unwrap();
        let path = folder.join("a.txt");
        std::fs::write(&path, "one\n").unwrap();
        let first = FileStamp::of_path(&path).unwrap();
        assert_eq!(FileStamp::of_path(&path), Some(first));
        std::thread::sleep(Duration::from_millis(20));
        let file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        std::io::Write::write_all(&mut &file, b"two\n").unwrap();
        file.set_modified(first.modified_at().unwrap()).unwrap();
        drop(file);
        let rewritten = FileStamp::of_path(&path).unwrap();
        assert_eq!(rewritten.modified_at(), first.modified_at());
        assert_eq!(rewritten.size(), first.size());
        assert_ne!(rewritten, first);
        assert!(!rewritten.other_file(&first));
        std::fs::remove_file(&path).unwrap();
        std::fs::write(&path, "two\n").unwrap();
        assert!(FileStamp::of_path(&path).unwrap().other_file(&first));
        std::fs::remove_dir_all(&folder).unwrap();
    }
}
