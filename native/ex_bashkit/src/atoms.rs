//! Atoms shared by the NIF modules.

rustler::atoms! {
    ok,
    error,
    empty,
    ran,
    call,
}
