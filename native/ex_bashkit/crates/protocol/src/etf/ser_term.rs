//! Writing a serde type as a term: see the table in `etf.rs`.

use std::collections::HashMap;

use eetf::{BigInteger, Binary, FixInteger, Float, List, Map, Term, Tuple};
use serde::ser::{self, Serialize};

use super::{atom, Error};

/// Where the terms a [`Serializer`] writes are made: `eetf` terms in the
/// worker ([`Etf`]), the VM's own terms in the NIF. One serializer for
/// both, so both sides write every type the same way.
pub trait Terms: Copy {
    type Term;
    fn atom(self, name: &str) -> Self::Term;
    fn integer(self, value: i64) -> Self::Term;
    fn unsigned(self, value: u64) -> Self::Term;
    fn float(self, value: f64) -> Result<Self::Term, Error>;
    fn binary(self, bytes: &[u8]) -> Self::Term;
    fn list(self, items: Vec<Self::Term>) -> Self::Term;
    fn tuple(self, items: Vec<Self::Term>) -> Self::Term;
    fn map(self, entries: Vec<(Self::Term, Self::Term)>) -> Self::Term;
}

/// `eetf` terms: what the worker writes to its pipe.
#[derive(Clone, Copy)]
pub struct Etf;

impl Terms for Etf {
    type Term = Term;

    fn atom(self, name: &str) -> Term {
        atom(name)
    }
    fn integer(self, value: i64) -> Term {
        match i32::try_from(value) {
            Ok(small) => Term::FixInteger(FixInteger::from(small)),
            Err(_) => Term::BigInteger(BigInteger::from(value)),
        }
    }
    fn unsigned(self, value: u64) -> Term {
        match i64::try_from(value) {
            Ok(small) => self.integer(small),
            Err(_) => Term::BigInteger(BigInteger::from(value)),
        }
    }
    fn float(self, value: f64) -> Result<Term, Error> {
        Float::try_from(value)
            .map(Term::Float)
            .map_err(|_| Error(format!("{value} is not a number a term can hold")))
    }
    fn binary(self, bytes: &[u8]) -> Term {
        Term::Binary(Binary::from(bytes))
    }
    fn list(self, items: Vec<Term>) -> Term {
        Term::List(List::from(items))
    }
    fn tuple(self, items: Vec<Term>) -> Term {
        Term::Tuple(Tuple::from(items))
    }
    fn map(self, entries: Vec<(Term, Term)>) -> Term {
        Term::Map(Map::from(entries.into_iter().collect::<HashMap<_, _>>()))
    }
}

/// `value` as a term made by `terms`.
pub fn write<T: Serialize + ?Sized, B: Terms>(terms: B, value: &T) -> Result<B::Term, Error> {
    value.serialize(Serializer(terms))
}

/// Makes one term.
pub struct Serializer<B>(pub B);

/// The elements of a list, a tuple or a tagged tuple being written.
pub struct Items<B: Terms> {
    terms: B,
    items: Vec<B::Term>,
    tuple: bool,
}

impl<B: Terms> Items<B> {
    fn new(terms: B, capacity: usize, tuple: bool, tag: Option<&str>) -> Self {
        let mut items = Vec::with_capacity(capacity + usize::from(tag.is_some()));
        items.extend(tag.map(|tag| terms.atom(tag)));
        Items {
            terms,
            items,
            tuple,
        }
    }

    fn push<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        self.items.push(value.serialize(Serializer(self.terms))?);
        Ok(())
    }

    fn finish(self) -> B::Term {
        if self.tuple {
            self.terms.tuple(self.items)
        } else {
            self.terms.list(self.items)
        }
    }
}

/// A map or a struct being written; a struct's keys are atoms, and a
/// struct variant is `{:tag, map}`.
pub struct Fields<B: Terms> {
    terms: B,
    entries: Vec<(B::Term, B::Term)>,
    key: Option<B::Term>,
    tag: Option<&'static str>,
}

impl<B: Terms> Fields<B> {
    fn new(terms: B, capacity: usize, tag: Option<&'static str>) -> Self {
        Fields {
            terms,
            entries: Vec::with_capacity(capacity),
            key: None,
            tag,
        }
    }

    fn field<T: Serialize + ?Sized>(&mut self, key: &str, value: &T) -> Result<(), Error> {
        let value = value.serialize(Serializer(self.terms))?;
        self.entries.push((self.terms.atom(key), value));
        Ok(())
    }

    fn finish(self) -> B::Term {
        let map = self.terms.map(self.entries);
        match self.tag {
            Some(tag) => self.terms.tuple(vec![self.terms.atom(tag), map]),
            None => map,
        }
    }
}

impl<B: Terms> ser::Serializer for Serializer<B> {
    type Ok = B::Term;
    type Error = Error;
    type SerializeSeq = Items<B>;
    type SerializeTuple = Items<B>;
    type SerializeTupleStruct = Items<B>;
    type SerializeTupleVariant = Items<B>;
    type SerializeMap = Fields<B>;
    type SerializeStruct = Fields<B>;
    type SerializeStructVariant = Fields<B>;

    fn serialize_bool(self, value: bool) -> Result<B::Term, Error> {
        Ok(self.0.atom(if value { "true" } else { "false" }))
    }
    fn serialize_i8(self, value: i8) -> Result<B::Term, Error> {
        Ok(self.0.integer(value.into()))
    }
    fn serialize_i16(self, value: i16) -> Result<B::Term, Error> {
        Ok(self.0.integer(value.into()))
    }
    fn serialize_i32(self, value: i32) -> Result<B::Term, Error> {
        Ok(self.0.integer(value.into()))
    }
    fn serialize_i64(self, value: i64) -> Result<B::Term, Error> {
        Ok(self.0.integer(value))
    }
    fn serialize_u8(self, value: u8) -> Result<B::Term, Error> {
        Ok(self.0.integer(value.into()))
    }
    fn serialize_u16(self, value: u16) -> Result<B::Term, Error> {
        Ok(self.0.integer(value.into()))
    }
    fn serialize_u32(self, value: u32) -> Result<B::Term, Error> {
        Ok(self.0.integer(value.into()))
    }
    fn serialize_u64(self, value: u64) -> Result<B::Term, Error> {
        Ok(self.0.unsigned(value))
    }
    fn serialize_f32(self, value: f32) -> Result<B::Term, Error> {
        self.0.float(value.into())
    }
    fn serialize_f64(self, value: f64) -> Result<B::Term, Error> {
        self.0.float(value)
    }
    fn serialize_char(self, value: char) -> Result<B::Term, Error> {
        Ok(self.0.binary(value.encode_utf8(&mut [0; 4]).as_bytes()))
    }
    fn serialize_str(self, value: &str) -> Result<B::Term, Error> {
        Ok(self.0.binary(value.as_bytes()))
    }
    fn serialize_bytes(self, value: &[u8]) -> Result<B::Term, Error> {
        Ok(self.0.binary(value))
    }
    fn serialize_none(self) -> Result<B::Term, Error> {
        Ok(self.0.atom("nil"))
    }
    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<B::Term, Error> {
        value.serialize(self)
    }
    fn serialize_unit(self) -> Result<B::Term, Error> {
        Ok(self.0.atom("nil"))
    }
    fn serialize_unit_struct(self, _name: &'static str) -> Result<B::Term, Error> {
        Ok(self.0.atom("nil"))
    }
    fn serialize_unit_variant(
        self,
        name: &'static str,
        _index: u32,
        variant: &'static str,
    ) -> Result<B::Term, Error> {
        Ok(self.0.atom(tag_of(name, variant)))
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        value: &T,
    ) -> Result<B::Term, Error> {
        value.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        name: &'static str,
        _index: u32,
        variant: &'static str,
        value: &T,
    ) -> Result<B::Term, Error> {
        let tag = self.0.atom(tag_of(name, variant));
        Ok(self
            .0
            .tuple(vec![tag, value.serialize(Serializer(self.0))?]))
    }
    fn serialize_seq(self, len: Option<usize>) -> Result<Items<B>, Error> {
        Ok(Items::new(self.0, len.unwrap_or(0), false, None))
    }
    fn serialize_tuple(self, len: usize) -> Result<Items<B>, Error> {
        Ok(Items::new(self.0, len, true, None))
    }
    fn serialize_tuple_struct(self, _name: &'static str, len: usize) -> Result<Items<B>, Error> {
        Ok(Items::new(self.0, len, true, None))
    }
    fn serialize_tuple_variant(
        self,
        name: &'static str,
        _index: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<Items<B>, Error> {
        Ok(Items::new(self.0, len, true, Some(tag_of(name, variant))))
    }
    fn serialize_map(self, len: Option<usize>) -> Result<Fields<B>, Error> {
        Ok(Fields::new(self.0, len.unwrap_or(0), None))
    }
    fn serialize_struct(self, _name: &'static str, len: usize) -> Result<Fields<B>, Error> {
        Ok(Fields::new(self.0, len, None))
    }
    fn serialize_struct_variant(
        self,
        name: &'static str,
        _index: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<Fields<B>, Error> {
        Ok(Fields::new(self.0, len, Some(tag_of(name, variant))))
    }
}

/// A variant's atom; `Ok` and `Err` (of a `Result`, or named so) are
/// `:ok` and `:error`, as they read.
fn tag_of(_name: &'static str, variant: &'static str) -> &'static str {
    match variant {
        "Ok" => "ok",
        "Err" => "error",
        variant => variant,
    }
}

impl<B: Terms> ser::SerializeSeq for Items<B> {
    type Ok = B::Term;
    type Error = Error;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        self.push(value)
    }
    fn end(self) -> Result<B::Term, Error> {
        Ok(self.finish())
    }
}

impl<B: Terms> ser::SerializeTuple for Items<B> {
    type Ok = B::Term;
    type Error = Error;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        self.push(value)
    }
    fn end(self) -> Result<B::Term, Error> {
        Ok(self.finish())
    }
}

impl<B: Terms> ser::SerializeTupleStruct for Items<B> {
    type Ok = B::Term;
    type Error = Error;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        self.push(value)
    }
    fn end(self) -> Result<B::Term, Error> {
        Ok(self.finish())
    }
}

impl<B: Terms> ser::SerializeTupleVariant for Items<B> {
    type Ok = B::Term;
    type Error = Error;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        self.push(value)
    }
    fn end(self) -> Result<B::Term, Error> {
        Ok(self.finish())
    }
}

impl<B: Terms> ser::SerializeMap for Fields<B> {
    type Ok = B::Term;
    type Error = Error;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), Error> {
        self.key = Some(key.serialize(Serializer(self.terms))?);
        Ok(())
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        let key = self
            .key
            .take()
            .ok_or_else(|| Error("a value without its key".into()))?;
        let value = value.serialize(Serializer(self.terms))?;
        self.entries.push((key, value));
        Ok(())
    }
    fn end(self) -> Result<B::Term, Error> {
        Ok(self.finish())
    }
}

impl<B: Terms> ser::SerializeStruct for Fields<B> {
    type Ok = B::Term;
    type Error = Error;
    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<(), Error> {
        self.field(key, value)
    }
    fn end(self) -> Result<B::Term, Error> {
        Ok(self.finish())
    }
}

impl<B: Terms> ser::SerializeStructVariant for Fields<B> {
    type Ok = B::Term;
    type Error = Error;
    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<(), Error> {
        self.field(key, value)
    }
    fn end(self) -> Result<B::Term, Error> {
        Ok(self.finish())
    }
}
