//! The kind of a filesystem entry as Elixir sees it: `:file`, `:dir`,
//! `:symlink` or `:fifo`, in the file API's answers and in what a
//! `:virtual_fs` backend reports; the type is the protocol's.

use bashkit::FileType;

pub use ex_bashkit_protocol::callback::FileKind;

/// The kind of a bashkit entry.
pub fn of(file_type: FileType) -> FileKind {
    match file_type {
        FileType::File => FileKind::File,
        FileType::Directory => FileKind::Dir,
        FileType::Symlink => FileKind::Symlink,
        FileType::Fifo => FileKind::Fifo,
    }
}

/// The bashkit entry type of `kind`.
pub fn file_type(kind: FileKind) -> FileType {
    match kind {
        FileKind::File => FileType::File,
        FileKind::Dir => FileType::Directory,
        FileKind::Symlink => FileType::Symlink,
        FileKind::Fifo => FileType::Fifo,
    }
}
