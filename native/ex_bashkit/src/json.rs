//! JSON for the MCP server (`ExBashkit.JSON`) on VMs whose OTP has no
//! `:json` module (before OTP 27): serde_json's parser and writer, with the
//! same mapping as `:json` there — objects are maps with binary keys,
//! `null` is `nil`, strings are binaries.
//!
//! Each comes twice: on a normal scheduler for the small messages most are
//! (a dirty scheduler's handoff cost more than the work: 1.2 ms against
//! ~2 µs on a loaded machine), and on a dirty one for those that carry a
//! file; `ExBashkit.JSON` picks by size. Nesting is bounded (serde_json
//! refuses input nested deeper than 128; encoding stops at the same depth),
//! so the recursion here stays far from the end of any scheduler's stack.

use rustler::types::map::MapIterator;
use rustler::{Binary, Env, ListIterator, NewBinary, Term, TermType};
use serde_json::{Map, Number, Value};

/// The deepest nesting encoded, as serde_json's parser allows when decoding.
const MAX_DEPTH: usize = 128;

/// `{:ok, term}` for a short JSON text, or `{:error, why}`.
#[rustler::nif]
fn json_decode<'a>(env: Env<'a>, text: Binary<'a>) -> Result<Term<'a>, String> {
    decode(env, text)
}

/// `json_decode/1` for a long text.
#[rustler::nif(schedule = "DirtyCpu")]
fn json_decode_dirty<'a>(env: Env<'a>, text: Binary<'a>) -> Result<Term<'a>, String> {
    decode(env, text)
}

/// `{:ok, json}` for a small term JSON can express, or `{:error, why}`.
#[rustler::nif]
fn json_encode<'a>(env: Env<'a>, term: Term<'a>) -> Result<Term<'a>, String> {
    encode(env, term)
}

/// `json_encode/1` for a large term.
#[rustler::nif(schedule = "DirtyCpu")]
fn json_encode_dirty<'a>(env: Env<'a>, term: Term<'a>) -> Result<Term<'a>, String> {
    encode(env, term)
}

fn decode<'a>(env: Env<'a>, text: Binary<'a>) -> Result<Term<'a>, String> {
    let value: Value = serde_json::from_slice(text.as_slice()).map_err(|e| e.to_string())?;
    to_term(env, &value)
}

fn encode<'a>(env: Env<'a>, term: Term<'a>) -> Result<Term<'a>, String> {
    let text = serde_json::to_vec(&to_value(term, 0)?).map_err(|e| e.to_string())?;
    let mut binary = NewBinary::new(env, text.len());
    binary.as_mut_slice().copy_from_slice(&text);
    Ok(binary.into())
}

fn to_term<'a>(env: Env<'a>, value: &Value) -> Result<Term<'a>, String> {
    use rustler::Encoder;
    Ok(match value {
        Value::Null => rustler::types::atom::nil().encode(env),
        Value::Bool(bool) => bool.encode(env),
        Value::Number(number) => number_term(env, number),
        Value::String(string) => string.encode(env),
        Value::Array(items) => items
            .iter()
            .map(|item| to_term(env, item))
            .collect::<Result<Vec<_>, _>>()?
            .encode(env),
        Value::Object(object) => {
            let keys: Vec<Term> = object.keys().map(|key| key.encode(env)).collect();
            let values = object
                .values()
                .map(|value| to_term(env, value))
                .collect::<Result<Vec<_>, _>>()?;
            Term::map_from_term_arrays(env, &keys, &values)
                .map_err(|_| "could not build a map".to_string())?
        }
    })
}

fn number_term<'a>(env: Env<'a>, number: &Number) -> Term<'a> {
    use rustler::Encoder;
    if let Some(int) = number.as_i64() {
        int.encode(env)
    } else if let Some(int) = number.as_u64() {
        int.encode(env)
    } else {
        // Neither fits 64 bits: a float, as serde_json parsed it.
        number.as_f64().unwrap_or(f64::NAN).encode(env)
    }
}

fn to_value(term: Term, depth: usize) -> Result<Value, String> {
    if depth > MAX_DEPTH {
        return Err(format!("nested deeper than {MAX_DEPTH} levels"));
    }
    match term.get_type() {
        TermType::Atom => Ok(atom_value(term)),
        TermType::Binary => text(term).map(Value::String),
        TermType::Integer => integer(term).map(Value::Number),
        TermType::Float => {
            let float: f64 = term.decode().map_err(|_| "not a float")?;
            Number::from_f64(float)
                .map(Value::Number)
                .ok_or_else(|| format!("{float} is not a JSON number"))
        }
        TermType::List => {
            // ListIterator panics at an improper tail; the length check
            // refuses such a list first.
            term.list_length().map_err(|_| "an improper list")?;
            let items: ListIterator = term.decode().map_err(|_| "an improper list")?;
            items
                .map(|item| to_value(item, depth + 1))
                .collect::<Result<Vec<_>, _>>()
                .map(Value::Array)
        }
        TermType::Map => {
            let mut object = Map::new();
            for (key, value) in MapIterator::new(term).ok_or("not a map")? {
                object.insert(key_text(key)?, to_value(value, depth + 1)?);
            }
            Ok(Value::Object(object))
        }
        other => Err(format!("a {other:?} has no JSON form")),
    }
}

/// `nil` and `null` are null, `true` and `false` booleans, any other atom
/// its name, as `:json` encodes them.
fn atom_value(term: Term) -> Value {
    match term.atom_to_string().unwrap_or_default() {
        name if name == "nil" || name == "null" => Value::Null,
        name if name == "true" => Value::Bool(true),
        name if name == "false" => Value::Bool(false),
        name => Value::String(name),
    }
}

fn key_text(key: Term) -> Result<String, String> {
    match key.get_type() {
        TermType::Binary => text(key),
        TermType::Atom => key.atom_to_string().map_err(|_| "a bad atom".to_string()),
        TermType::Integer => integer(key).map(|number| number.to_string()),
        other => Err(format!("a {other:?} cannot be a JSON object key")),
    }
}

fn text(term: Term) -> Result<String, String> {
    let binary: Binary = term.decode().map_err(|_| "a bitstring")?;
    String::from_utf8(binary.as_slice().to_vec())
        .map_err(|_| "a binary that is not UTF-8 text".to_string())
}

fn integer(term: Term) -> Result<Number, String> {
    if let Ok(int) = term.decode::<i64>() {
        Ok(int.into())
    } else if let Ok(int) = term.decode::<u64>() {
        Ok(int.into())
    } else {
        Err("an integer that does not fit 64 bits".to_string())
    }
}
