//! The worker with the escape probe builtin (the core's `hardening/escape_probe.rs`),
//! built by test/ex_bashkit/worker/escape_test.exs to attack the hardening from
//! inside. Never installed or shipped.

fn main() {
    ex_bashkit_worker::main()
}
