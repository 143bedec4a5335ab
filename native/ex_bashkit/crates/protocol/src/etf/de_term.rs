//! Reading a term into a serde type: see the table in `etf.rs`.

use eetf::Term;
use serde::de::{self, DeserializeSeed, EnumAccess, MapAccess, SeqAccess, VariantAccess, Visitor};

use super::{Error, MAX_DEPTH};

pub(super) fn expected(what: &str, got: &Term) -> Error {
    let mut shown = got.to_string();
    if shown.len() > 80 {
        let cut = (0..=80)
            .rev()
            .find(|i| shown.is_char_boundary(*i))
            .unwrap_or(0);
        shown.truncate(cut);
        shown.push_str("...");
    }
    Error(format!("expected {what}, got {shown}"))
}

fn atom_name(term: &Term) -> Option<&str> {
    match term {
        Term::Atom(atom) => Some(&atom.name),
        _ => None,
    }
}

/// An atom's or a binary's text: a key, a variant's name.
fn name_of(term: Term) -> Result<String, Error> {
    match term {
        Term::Atom(atom) => Ok(atom.name),
        Term::Binary(binary) => {
            String::from_utf8(binary.bytes).map_err(|_| Error("expected UTF-8 text".into()))
        }
        other => Err(expected("an atom", &other)),
    }
}

/// Reads one term.
pub struct Deserializer {
    term: Term,
    depth: usize,
}

impl Deserializer {
    pub(super) fn new(term: Term, depth: usize) -> Self {
        Deserializer { term, depth }
    }

    /// The depth of this term's elements.
    fn deeper(&self) -> Result<usize, Error> {
        if self.depth >= MAX_DEPTH {
            return Err(Error(format!("a term nested deeper than {MAX_DEPTH}")));
        }
        Ok(self.depth + 1)
    }

    fn integer<I: TryFrom<i64> + TryFrom<u64>>(&self) -> Result<I, Error> {
        let out_of_range = || expected("an integer in range", &self.term);
        match &self.term {
            Term::FixInteger(value) => {
                I::try_from(i64::from(value.value)).map_err(|_| out_of_range())
            }
            Term::BigInteger(value) => match i64::try_from(&value.value) {
                Ok(small) => I::try_from(small).map_err(|_| out_of_range()),
                Err(_) => u64::try_from(&value.value)
                    .ok()
                    .and_then(|big| I::try_from(big).ok())
                    .ok_or_else(out_of_range),
            },
            _ => Err(expected("an integer", &self.term)),
        }
    }
}

macro_rules! integers {
    ($($method:ident => $visit:ident : $type:ty),* $(,)?) => {
        $(fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
            visitor.$visit(self.integer::<$type>()?)
        })*
    };
}

impl<'de> de::Deserializer<'de> for Deserializer {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.term {
            Term::Atom(atom) => match atom.name.as_str() {
                "nil" => visitor.visit_unit(),
                "true" => visitor.visit_bool(true),
                "false" => visitor.visit_bool(false),
                _ => visitor.visit_string(atom.name),
            },
            Term::FixInteger(value) => visitor.visit_i64(value.value.into()),
            Term::BigInteger(_) => match self.integer::<i64>() {
                Ok(value) => visitor.visit_i64(value),
                Err(_) => visitor.visit_u64(self.integer::<u64>()?),
            },
            Term::Float(value) => visitor.visit_f64(value.value),
            Term::Binary(binary) => match String::from_utf8(binary.bytes) {
                Ok(text) => visitor.visit_string(text),
                Err(error) => visitor.visit_byte_buf(error.into_bytes()),
            },
            Term::List(_) | Term::ByteList(_) | Term::Tuple(_) => self.deserialize_seq(visitor),
            Term::Map(_) => self.deserialize_map(visitor),
            other => Err(expected("a plain term", &other)),
        }
    }

    fn deserialize_bool<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match atom_name(&self.term) {
            Some("true") => visitor.visit_bool(true),
            Some("false") => visitor.visit_bool(false),
            _ => Err(expected("a boolean", &self.term)),
        }
    }

    integers! {
        deserialize_i8 => visit_i8: i8,
        deserialize_i16 => visit_i16: i16,
        deserialize_i32 => visit_i32: i32,
        deserialize_i64 => visit_i64: i64,
        deserialize_u8 => visit_u8: u8,
        deserialize_u16 => visit_u16: u16,
        deserialize_u32 => visit_u32: u32,
        deserialize_u64 => visit_u64: u64,
    }

    fn deserialize_f32<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.deserialize_f64(visitor)
    }

    fn deserialize_f64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.term {
            Term::Float(value) => visitor.visit_f64(value.value),
            _ => visitor.visit_f64(self.integer::<i64>()? as f64),
        }
    }

    fn deserialize_char<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.deserialize_string(visitor)
    }

    fn deserialize_str<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.deserialize_string(visitor)
    }

    fn deserialize_string<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.term {
            Term::Binary(binary) => visitor.visit_string(
                String::from_utf8(binary.bytes).map_err(|_| Error("expected UTF-8 text".into()))?,
            ),
            other => Err(expected("a binary", &other)),
        }
    }

    fn deserialize_bytes<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.deserialize_byte_buf(visitor)
    }

    fn deserialize_byte_buf<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.term {
            Term::Binary(binary) => visitor.visit_byte_buf(binary.bytes),
            other => Err(expected("a binary", &other)),
        }
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match atom_name(&self.term) {
            Some("nil") => visitor.visit_none(),
            _ => visitor.visit_some(self),
        }
    }

    fn deserialize_unit<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match atom_name(&self.term) {
            Some("nil") => visitor.visit_unit(),
            _ => Err(expected("nil", &self.term)),
        }
    }

    fn deserialize_unit_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Error> {
        self.deserialize_unit(visitor)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Error> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        let depth = self.deeper()?;
        match self.term {
            // A list of small integers: the VM packs it as bytes.
            Term::ByteList(list) => {
                visitor.visit_seq(de::value::SeqDeserializer::new(list.bytes.into_iter()))
            }
            Term::List(list) => visitor.visit_seq(Elements::new(list.elements, depth)),
            other => Err(expected("a list", &other)),
        }
    }

    fn deserialize_tuple<V: Visitor<'de>>(self, len: usize, visitor: V) -> Result<V::Value, Error> {
        let depth = self.deeper()?;
        match self.term {
            Term::Tuple(tuple) if tuple.elements.len() == len => {
                visitor.visit_seq(Elements::new(tuple.elements, depth))
            }
            other => Err(expected(&format!("a tuple of {len}"), &other)),
        }
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        len: usize,
        visitor: V,
    ) -> Result<V::Value, Error> {
        self.deserialize_tuple(len, visitor)
    }

    fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        let depth = self.deeper()?;
        match self.term {
            Term::Map(map) => visitor.visit_map(Entries {
                entries: map.map.into_iter(),
                value: None,
                depth,
            }),
            other => Err(expected("a map", &other)),
        }
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        self.deserialize_map(visitor)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        let depth = self.deeper()?;
        match self.term {
            term @ (Term::Atom(_) | Term::Binary(_)) => visitor.visit_enum(Variant {
                name: name_of(term)?,
                values: Vec::new(),
                depth,
            }),
            Term::Tuple(tuple) if tuple.elements.len() >= 2 => {
                let mut values = tuple.elements;
                let tag = values.remove(0);
                visitor.visit_enum(Variant {
                    name: name_of(tag)?,
                    values,
                    depth,
                })
            }
            other => Err(expected("an atom or a tagged tuple", &other)),
        }
    }

    fn deserialize_identifier<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visitor.visit_string(name_of(self.term)?)
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visitor.visit_unit()
    }
}

/// A list's or a tuple's elements, in order.
struct Elements {
    items: std::vec::IntoIter<Term>,
    depth: usize,
}

impl Elements {
    fn new(items: Vec<Term>, depth: usize) -> Self {
        Elements {
            items: items.into_iter(),
            depth,
        }
    }
}

impl<'de> SeqAccess<'de> for Elements {
    type Error = Error;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, Error> {
        self.items
            .next()
            .map(|item| seed.deserialize(Deserializer::new(item, self.depth)))
            .transpose()
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.items.len())
    }
}

/// A map's entries, `__struct__` left out: a struct reads as the map of
/// its fields.
struct Entries {
    entries: std::collections::hash_map::IntoIter<Term, Term>,
    value: Option<Term>,
    depth: usize,
}

impl<'de> MapAccess<'de> for Entries {
    type Error = Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Error> {
        for (key, value) in self.entries.by_ref() {
            if atom_name(&key) == Some("__struct__") {
                continue;
            }
            self.value = Some(value);
            return seed
                .deserialize(Deserializer::new(key, self.depth))
                .map(Some);
        }
        Ok(None)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, Error> {
        let value = self
            .value
            .take()
            .ok_or_else(|| Error("a value without its key".into()))?;
        seed.deserialize(Deserializer::new(value, self.depth))
    }
}

/// An enum's variant: its name, and what follows the tag in its tuple.
struct Variant {
    name: String,
    values: Vec<Term>,
    depth: usize,
}

impl<'de> EnumAccess<'de> for Variant {
    type Error = Error;
    type Variant = Self;

    fn variant_seed<V: DeserializeSeed<'de>>(self, seed: V) -> Result<(V::Value, Self), Error> {
        // As rustler's serde: `{:ok, _}` and `{:error, _}` are `Ok` and `Err`.
        let name = match self.name.as_str() {
            "ok" => "Ok",
            "error" => "Err",
            name => name,
        };
        let variant = seed.deserialize(de::value::StrDeserializer::<Error>::new(name))?;
        Ok((variant, self))
    }
}

impl<'de> VariantAccess<'de> for Variant {
    type Error = Error;

    fn unit_variant(self) -> Result<(), Error> {
        match self.values.len() {
            0 => Ok(()),
            n => Err(Error(format!(
                "expected the atom {}, got a tuple of {}",
                self.name,
                n + 1
            ))),
        }
    }

    fn newtype_variant_seed<T: DeserializeSeed<'de>>(self, seed: T) -> Result<T::Value, Error> {
        let mut values = self.values.into_iter();
        match (values.next(), values.next()) {
            (Some(value), None) => seed.deserialize(Deserializer::new(value, self.depth)),
            _ => Err(Error(format!("expected {{:{}, value}}", self.name))),
        }
    }

    fn tuple_variant<V: Visitor<'de>>(self, len: usize, visitor: V) -> Result<V::Value, Error> {
        if self.values.len() != len {
            return Err(Error(format!(
                "expected :{} and {len} values, got {}",
                self.name,
                self.values.len()
            )));
        }
        visitor.visit_seq(Elements::new(self.values, self.depth))
    }

    fn struct_variant<V: Visitor<'de>>(
        self,
        _fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        let mut values = self.values.into_iter();
        match (values.next(), values.next()) {
            (Some(value), None) => {
                de::Deserializer::deserialize_map(Deserializer::new(value, self.depth), visitor)
            }
            _ => Err(Error(format!("expected {{:{}, %{{...}}}}", self.name))),
        }
    }
}
