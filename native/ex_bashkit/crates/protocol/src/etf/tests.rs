use std::collections::HashMap;

use eetf::{Atom, BigInteger, Binary, ByteList, FixInteger, List, Map, Term, Tuple};
use serde::{Deserialize, Serialize};

use super::{from_term, to_term};

fn atom(name: &str) -> Term {
    Term::Atom(Atom::from(name))
}

fn int(value: i32) -> Term {
    Term::FixInteger(FixInteger::from(value))
}

fn tuple(items: Vec<Term>) -> Term {
    Term::Tuple(Tuple::from(items))
}

fn binary(text: &str) -> Term {
    Term::Binary(Binary::from(text.as_bytes()))
}

#[derive(Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Shape {
    Unit,
    One(u32),
    Two(String, bool),
    Fields { x: i64 },
}

#[derive(Debug, PartialEq, Serialize, Deserialize)]
struct Record {
    name: String,
    #[serde(with = "serde_bytes")]
    data: Vec<u8>,
    count: Option<u64>,
    shapes: Vec<Shape>,
    pair: (i8, String),
    tags: HashMap<String, u16>,
    outcome: Result<u32, String>,
}

#[test]
fn every_shape_goes_there_and_back() {
    let record = Record {
        name: "café".into(),
        data: vec![0, 255, 10],
        count: Some(u64::MAX),
        shapes: vec![
            Shape::Unit,
            Shape::One(3),
            Shape::Two("x".into(), true),
            Shape::Fields { x: -5 },
        ],
        pair: (-1, "y".into()),
        tags: HashMap::from([("a".into(), 1)]),
        outcome: Err("no".into()),
    };
    let term = to_term(&record).unwrap();
    let Term::Map(map) = &term else {
        panic!("a struct is a map")
    };
    assert_eq!(
        map.map.get(&atom("count")),
        Some(&Term::BigInteger(BigInteger::from(u64::MAX)))
    );
    assert_eq!(
        map.map.get(&atom("outcome")),
        Some(&tuple(vec![atom("error"), binary("no")]))
    );
    assert_eq!(from_term::<Record>(term).unwrap(), record);
}

#[test]
fn terms_as_the_vm_writes_them_read() {
    // `[1, 2]` comes as a byte list, `%Struct{}` with its `__struct__`.
    assert_eq!(
        from_term::<Vec<u8>>(Term::ByteList(ByteList::from(vec![1u8, 2]))).unwrap(),
        [1, 2]
    );
    let strukt = Map::from([
        (atom("__struct__"), atom("Elixir.Some.Struct")),
        (atom("x"), int(4)),
    ]);
    assert_eq!(
        from_term::<Shape>(tuple(vec![atom("fields"), Term::Map(strukt)])).unwrap(),
        Shape::Fields { x: 4 }
    );
    assert_eq!(from_term::<Option<u8>>(atom("nil")).unwrap(), None);
    assert_eq!(from_term::<Shape>(atom("unit")).unwrap(), Shape::Unit);
}

#[test]
fn a_term_of_the_wrong_shape_says_what_was_expected() {
    let error = |term| from_term::<Shape>(term).unwrap_err().to_string();
    assert!(error(int(1)).contains("expected an atom or a tagged tuple, got 1"));
    assert!(error(atom("three")).contains("unknown variant `three`"));
    assert!(error(tuple(vec![atom("one"), binary("x")])).contains("expected an integer"));
    assert!(error(tuple(vec![atom("two"), binary("x")])).contains("expected :two and 2 values"));
    assert!(from_term::<u8>(int(256))
        .unwrap_err()
        .to_string()
        .contains("in range"));
    assert!(from_term::<u64>(int(-1)).is_err());
    assert!(from_term::<String>(Term::Binary(Binary::from(&[0xff][..]))).is_err());
    assert!(from_term::<(u8, u8)>(tuple(vec![int(1)])).is_err());
    let pid = Term::Pid(eetf::Pid::from(("node@host", 1, 0)));
    assert!(from_term::<String>(pid).is_err());
}

#[test]
fn a_term_nested_past_the_limit_is_refused_not_overflowed() {
    #[derive(Deserialize)]
    #[allow(dead_code)]
    struct Deep(Vec<Deep>);
    let mut term = Term::List(List::nil());
    for _ in 0..1_000 {
        term = Term::List(List::from(vec![term]));
    }
    let error = from_term::<Deep>(term).err().expect("refused");
    assert!(error.to_string().contains("nested deeper"), "{error}");
}
