//! The `:limits` option: a map of every key of `limits.table` to its value,
//! `nil` for the default. Its meaning (bashkit's limits) is the core's.

use std::fmt;

use serde::de::{self, Deserialize, Deserializer, MapAccess, Visitor};

include!(concat!(env!("OUT_DIR"), "/limits_table.rs"));

// Read as a map, not a struct: Elixir sends a plain map with atom keys.
impl<'de> Deserialize<'de> for Limits {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(LimitsVisitor)
    }
}

struct LimitsVisitor;

impl<'de> Visitor<'de> for LimitsVisitor {
    type Value = Limits;

    fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
        formatter.write_str("a map of limits")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Limits, A::Error> {
        let mut limits = Limits::default();
        while let Some(Key(key)) = map.next_key()? {
            let value = map.next_value()?;
            if !limits.set(&key, value) {
                return Err(de::Error::custom(format!("unknown limit {key}")));
            }
        }
        Ok(limits)
    }
}

/// A map's key, an atom: read as any term, which is how an atom reads as
/// text under rustler's serde.
struct Key(String);

impl<'de> Deserialize<'de> for Key {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl Visitor<'_> for KeyVisitor {
            type Value = Key;
            fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
                formatter.write_str("a limit's name")
            }
            fn visit_str<E: de::Error>(self, key: &str) -> Result<Key, E> {
                Ok(Key(key.to_string()))
            }
            fn visit_string<E: de::Error>(self, key: String) -> Result<Key, E> {
                Ok(Key(key))
            }
        }
        deserializer.deserialize_any(KeyVisitor)
    }
}
