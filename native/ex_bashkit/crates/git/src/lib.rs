//! `git` (`git: true`) on a session's files: a git of our own, because
//! bashkit's virtual one stores no content (its `diff` is a placeholder and
//! `reset --hard` leaves the tree as it was). Objects are git's (SHA-1,
//! zlib), so hashes are real ones; the commands are those an agent types,
//! with git's output (`guides/git.md` lists them and the fidelity corpus).
//!
//! [`paths`] (the paths git refuses to check out) is always built: the
//! session's host mounts keep the same rules. The commands are the
//! `commands` feature, clone, fetch and push over HTTP the `network` one.
//! The crate knows nothing of sessions: the core runs [`Git`] as its
//! `git` builtin.

pub mod paths;

#[cfg(feature = "commands")]
mod blame;
#[cfg(feature = "commands")]
mod builtin;
#[cfg(feature = "commands")]
mod combined;
#[cfg(feature = "commands")]
mod commands;
#[cfg(feature = "commands")]
mod commit_graph;
#[cfg(feature = "commands")]
mod config;
#[cfg(feature = "commands")]
mod dates;
#[cfg(feature = "commands")]
mod diff;
#[cfg(feature = "commands")]
mod error;
#[cfg(feature = "commands")]
mod executing_keys;
#[cfg(all(feature = "commands", feature = "network"))]
mod fetch_response;
#[cfg(all(feature = "commands", feature = "network"))]
mod fsck;
#[cfg(feature = "commands")]
mod history;
#[cfg(feature = "commands")]
mod ignore;
#[cfg(feature = "commands")]
mod index_file;
#[cfg(feature = "commands")]
mod io;
#[cfg(feature = "commands")]
mod mailmap;
#[cfg(feature = "commands")]
mod merge;
#[cfg(feature = "commands")]
mod odb;
#[cfg(all(feature = "commands", feature = "network"))]
mod pack;
#[cfg(all(feature = "commands", feature = "network"))]
mod pkt_line;
#[cfg(feature = "commands")]
mod refs;
#[cfg(all(feature = "commands", feature = "network"))]
mod remote;
#[cfg(feature = "commands")]
mod repo;
#[cfg(feature = "commands")]
mod revspec;
#[cfg(feature = "commands")]
mod stash;
#[cfg(all(feature = "commands", feature = "network"))]
pub mod streamed;
#[cfg(feature = "commands")]
mod text;
#[cfg(all(feature = "commands", feature = "network"))]
mod transfer;
#[cfg(feature = "commands")]
mod userdiff;
#[cfg(feature = "commands")]
mod walk;
#[cfg(feature = "commands")]
mod xdiff;

#[cfg(feature = "commands")]
pub use builtin::Git;
#[cfg(feature = "commands")]
use builtin::{check_allowed, is_path_remote, path_remote_refused, resolve, Here, Out, Run};
#[cfg(feature = "commands")]
pub use error::Error;
