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
    if cfg!(feature = "javascript") {
        built.push("javascript");
    }
    if cfg!(feature = "git") {
        built.push("git");
    }
    if cfg!(feature = "sqlite") {
        built.push("sqlite");
    }
    built
}

/// Loads the CPython guest and its memory image now (20-50 ms, once per
/// VM) instead of in the first `python3` call; `:ok` at once when it is
/// loaded or not built in.
#[rustler::nif(schedule = "DirtyCpu")]
fn python_warm_up(env: rustler::Env) -> rustler::Term {
    use rustler::Encoder;
    match ex_bashkit_core::python::warm_up() {
        Ok(()) => crate::atoms::ok().encode(env),
        Err(message) => (crate::atoms::error(), message).encode(env),
    }
}
