//! The kind of a filesystem entry as Elixir sees it: `:file`, `:dir`,
//! `:symlink` or `:fifo`, in the file API's answers and in what a
//! `:virtual_fs` backend reports.

use bashkit::FileType;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum FileKind {
    File,
    Dir,
    Symlink,
    Fifo,
}

impl From<FileType> for FileKind {
    fn from(file_type: FileType) -> Self {
        match file_type {
            FileType::File => Self::File,
            FileType::Directory => Self::Dir,
            FileType::Symlink => Self::Symlink,
            FileType::Fifo => Self::Fifo,
        }
    }
}

impl From<FileKind> for FileType {
    fn from(kind: FileKind) -> Self {
        match kind {
            FileKind::File => Self::File,
            FileKind::Dir => Self::Directory,
            FileKind::Symlink => Self::Symlink,
            FileKind::Fifo => Self::Fifo,
        }
    }
}

crate::named!(FileKind { File = "file", Dir = "dir", Symlink = "symlink", Fifo = "fifo" });
