//! Installing packages into a sandbox's files: `npm ci` and `npm install`
//! (npm's lockfiles, tarballs and `node_modules` layout) and `pip install`
//! (pure-Python wheels), through the session's HTTP client, with a
//! content-addressed cache on the host.

pub mod cache;
pub mod fetch;
mod ideal;
pub mod integrity;
mod json;
mod lockfile;
pub mod npm;
mod pep440;
pub mod pip;
mod registry;
mod reify;
mod semver;
mod tarball;
mod wheel;
mod words;

pub use cache::Cache;
pub use fetch::{Net, INTEGRITY_HEADER};
pub use npm::Npm;
pub use pip::{Pip, SITE_PACKAGES};
