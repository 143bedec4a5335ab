//! The optional parts this library was built with (Cargo features, see
//! Cargo.toml), so Elixir can refuse a session that asks for a missing one
//! and say how to build it in.

/// Names of the features compiled in.
#[rustler::nif]
fn features() -> Vec<&'static str> {
    let mut built = Vec::new();
    if cfg!(feature = "python") {
        built.push("python");
    }
    if cfg!(feature = "cpython") {
        built.push("cpython");
    }
    if cfg!(feature = "jq") {
        built.push("jq");
    }
    if cfg!(feature = "network") {
        built.push("network");
    }
    if cfg!(feature = "mounts") {
        built.push("mounts");
    }
    built
}
