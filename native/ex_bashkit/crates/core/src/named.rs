//! Enums that cross to Elixir as atoms (`:file`, `:read_only`, `:timeout`):
//! each variant's atom is named once, here in the core, for the NIF's terms
//! and the worker's alike.

/// An enum whose every variant is an atom on the Elixir side.
pub trait Named: Copy + PartialEq + 'static {
    /// Each variant with its atom's name.
    const NAMES: &'static [(Self, &'static str)];

    /// The atom naming `self`.
    fn name(self) -> &'static str {
        Self::NAMES
            .iter()
            .find(|(variant, _)| *variant == self)
            .map_or("", |(_, name)| name)
    }

    /// The variant `name` names, if any.
    fn named(name: &str) -> Option<Self> {
        Self::NAMES
            .iter()
            .find(|(_, known)| *known == name)
            .map(|(variant, _)| *variant)
    }
}

/// `named!(Type { Variant = "atom", ... })` implements [`Named`].
#[macro_export]
macro_rules! named {
    ($type:ident { $($variant:ident = $name:literal),+ $(,)? }) => {
        impl $crate::named::Named for $type {
            const NAMES: &'static [(Self, &'static str)] = &[$((Self::$variant, $name)),+];
        }
    };
}
