//! What goes wrong below the commands: the repository's files, its
//! objects, packs and index, a remote. A command turns one into what git
//! prints (`fatal: …`, exit 128); the words are git's where git has them.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The session's filesystem refused a read or write (its own words:
    /// a missing file, a limit).
    #[error(transparent)]
    Fs(#[from] bashkit::Error),
    /// The host refused a read or write of a work tree in a mount.
    #[error(transparent)]
    Host(#[from] std::io::Error),
    /// A path with `..` in it (a branch called `../hooks/x`): never
    /// written, wherever it would lead.
    #[error("refusing to write {}: it walks out of its directory", .0.display())]
    OutsidePath(PathBuf),
    /// An object name the repository has no object for.
    #[error("bad object {0}")]
    BadObject(String),
    /// An object past the size the sandbox's git reads.
    #[error("object of {size} bytes is larger than the sandbox's git reads ({max} bytes)")]
    TooLarge { size: u64, max: u64 },
    /// An object, or the pack or index that holds it, not as git writes it.
    #[error("corrupt {0}")]
    CorruptObject(String),
    /// A pack a remote sent that does not hold what it says.
    #[error("fatal: the pack from the remote is corrupt ({0})")]
    CorruptPack(String),
    /// `.git/index` not as git writes it.
    #[error("index file corrupt ({0})")]
    CorruptIndex(String),
    /// An object of another kind than the one asked for.
    #[error("{oid} is a {kind}, not a {wanted}")]
    WrongKind {
        oid: String,
        kind: String,
        wanted: &'static str,
    },
    /// A tree or index entry whose path git never checks out (`.git`,
    /// `..`, a `\`; `paths.rs`).
    #[error("invalid path '{0}'")]
    InvalidPath(String),
    /// An object a remote sent that git's `fsck` refuses (a tree naming
    /// `.git`, a `.gitmodules` that runs a command).
    #[error("fsck error in packed object: object {oid}: {id}: {text}")]
    Fsck {
        oid: String,
        id: &'static str,
        text: String,
    },
    /// `.git/index` there but not readable.
    #[error("index file open failed: {0}")]
    IndexOpen(Box<Error>),
    /// `.git/index` with an extension git requires readers to know.
    #[error("index uses {0} extension, which we do not understand")]
    IndexExtension(String),
    /// `.git/shallow` naming something that is not an object name.
    #[error("protocol error: bad shallow line: {0}")]
    BadShallow(String),
    /// Another writer holds the lock file.
    #[error("Unable to create '{}': File exists.\n\nAnother git process seems to be running in this repository", .0.display())]
    Locked(PathBuf),
    /// A command that needs a work tree run where there is none.
    #[error("this operation must be run in a work tree")]
    NoWorkTree,
    /// An index this git must not write (an extension it cannot keep up
    /// to date), and why.
    #[error("{0}")]
    IndexUnwritable(String),
    /// A config key that would make real git run a program.
    #[error(
        "refusing to set {key}: it makes git run a program ({reason}); the sandbox's git never \
         writes such keys, so real git on the host cannot be made to run one"
    )]
    RunsProgram { key: String, reason: &'static str },
    /// `git init` inside another repository's git directory.
    #[error("refusing to make a repository in {}: it is inside a git directory", .0.display())]
    InsideGitDir(PathBuf),
    /// Something git does that the sandbox's git does not.
    #[error("not supported by the sandbox's git: {0}")]
    Unsupported(String),
    /// A remote that did not answer as git's smart HTTP protocol does.
    #[error("{0}")]
    Remote(String),
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
