//! The worker process of `isolation: :process` sessions: one session's
//! interpreter in an OS process the VM can kill (`ExBashkit.Worker`).

fn main() {
    ex_bashkit::worker::main()
}

#[path = "../outside_the_vm.rs"]
mod outside_the_vm;
