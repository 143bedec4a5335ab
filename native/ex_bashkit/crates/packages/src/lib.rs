//! Installing packages into a sandbox's files: `npm ci` and `npm install`
//! (npm's lockfiles, tarballs and `node_modules` layout), through the
//! session's HTTP client, with a content-addressed cache on the host.

pub mod cache;
pub mod fetch;
mod ideal;
pub mod integrity;
mod json;
mod lockfile;
pub mod npm;
mod registry;
mod reify;
mod semver;
mod tarball;

pub use cache::Cache;
pub use fetch::{Net, INTEGRITY_HEADER};
pub use npm::Npm;
