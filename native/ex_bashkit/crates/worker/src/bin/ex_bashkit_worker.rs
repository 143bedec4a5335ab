//! The worker process of `isolation: :process` sessions: one session's
//! interpreter in an OS process the VM can kill (`ExBashkit.Worker`).

fn main() {
    ex_bashkit_worker::main()
}
