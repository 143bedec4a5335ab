//! Atoms shared by the NIF modules.

rustler::atoms! {
    ok,
    error,
    file,
    dir,
    symlink,
    fifo,
}
