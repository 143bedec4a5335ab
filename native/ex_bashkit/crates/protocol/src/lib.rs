//! Everything that crosses between the BEAM and the native side, defined
//! once with serde: the NIF reads these types with rustler's serde support,
//! the worker with [`etf`], the same conventions on both sides.

pub mod call;
pub mod callback;
pub mod code;
pub mod etf;
pub mod limits;
pub mod options;
pub mod outcome;
pub mod worker;

pub use options::SessionOptions;
