//! JSON with its keys in the order they were written: npm rewrites
//! `package.json` and writes its lockfiles so, two spaces deep as
//! `JSON.stringify(value, null, 2)` prints them.

use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};

#[derive(Clone, Debug, PartialEq)]
pub enum Json {
    Null,
    Bool(bool),
    Number(serde_json::Number),
    String(String),
    Array(Vec<Json>),
    Object(Vec<(String, Json)>),
}

impl Json {
    pub fn parse(text: &[u8]) -> Result<Self, String> {
        serde_json::from_slice(text).map_err(|e| e.to_string())
    }

    pub fn object() -> Self {
        Json::Object(Vec::new())
    }

    pub fn get(&self, key: &str) -> Option<&Json> {
        match self {
            Json::Object(entries) => entries.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    pub fn str(&self, key: &str) -> Option<&str> {
        match self.get(key)? {
            Json::String(text) => Some(text),
            _ => None,
        }
    }

    pub fn flag(&self, key: &str) -> bool {
        matches!(self.get(key), Some(Json::Bool(true)))
    }

    pub fn entries(&self) -> &[(String, Json)] {
        match self {
            Json::Object(entries) => entries,
            _ => &[],
        }
    }

    /// The string values of an object (`dependencies`), in order.
    pub fn strings(&self, key: &str) -> Vec<(String, String)> {
        let Some(value) = self.get(key) else {
            return Vec::new();
        };
        value
            .entries()
            .iter()
            .filter_map(|(k, v)| match v {
                Json::String(text) => Some((k.clone(), text.clone())),
                _ => None,
            })
            .collect()
    }

    /// Sets `key`, in its place if it is there, else at the end.
    pub fn set(&mut self, key: &str, value: Json) {
        if let Json::Object(entries) = self {
            match entries.iter_mut().find(|(k, _)| k == key) {
                Some((_, old)) => *old = value,
                None => entries.push((key.to_string(), value)),
            }
        }
    }

    pub fn remove(&mut self, key: &str) -> Option<Json> {
        let Json::Object(entries) = self else {
            return None;
        };
        let at = entries.iter().position(|(k, _)| k == key)?;
        Some(entries.remove(at).1)
    }

    pub fn from_strings(pairs: impl IntoIterator<Item = (String, String)>) -> Self {
        Json::Object(
            pairs
                .into_iter()
                .map(|(k, v)| (k, Json::String(v)))
                .collect(),
        )
    }

    /// As `JSON.stringify(value, null, indent)` prints it, with a final
    /// newline.
    pub fn pretty(&self, indent: &str) -> String {
        let mut out = String::new();
        self.write(&mut out, indent, 0);
        out.push('\n');
        out
    }

    fn write(&self, out: &mut String, indent: &str, depth: usize) {
        let pad = |out: &mut String, depth: usize| {
            out.push('\n');
            for _ in 0..depth {
                out.push_str(indent);
            }
        };
        match self {
            Json::Null => out.push_str("null"),
            Json::Bool(value) => out.push_str(if *value { "true" } else { "false" }),
            Json::Number(number) => out.push_str(&number.to_string()),
            Json::String(text) => out.push_str(&quoted(text)),
            Json::Array(items) if items.is_empty() => out.push_str("[]"),
            Json::Object(entries) if entries.is_empty() => out.push_str("{}"),
            Json::Array(items) => {
                out.push('[');
                for (at, item) in items.iter().enumerate() {
                    if at > 0 {
                        out.push(',');
                    }
                    pad(out, depth + 1);
                    item.write(out, indent, depth + 1);
                }
                pad(out, depth);
                out.push(']');
            }
            Json::Object(entries) => {
                out.push('{');
                for (at, (key, value)) in entries.iter().enumerate() {
                    if at > 0 {
                        out.push(',');
                    }
                    pad(out, depth + 1);
                    out.push_str(&quoted(key));
                    out.push_str(": ");
                    value.write(out, indent, depth + 1);
                }
                pad(out, depth);
                out.push('}');
            }
        }
    }
}

fn quoted(text: &str) -> String {
    serde_json::to_string(text).unwrap_or_else(|_| "\"\"".into())
}

/// The indentation a file was written with (npm keeps a package.json's).
pub fn indent_of(text: &[u8]) -> String {
    let text = String::from_utf8_lossy(text);
    text.lines()
        .nth(1)
        .map(|line| {
            line.chars()
                .take_while(|c| *c == ' ' || *c == '\t')
                .collect::<String>()
        })
        .filter(|indent| !indent.is_empty())
        .unwrap_or_else(|| "  ".into())
}

impl<'de> Deserialize<'de> for Json {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(JsonVisitor)
    }
}

struct JsonVisitor;

impl<'de> Visitor<'de> for JsonVisitor {
    type Value = Json;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("JSON")
    }

    fn visit_unit<E>(self) -> Result<Json, E> {
        Ok(Json::Null)
    }

    fn visit_bool<E>(self, value: bool) -> Result<Json, E> {
        Ok(Json::Bool(value))
    }

    fn visit_i64<E>(self, value: i64) -> Result<Json, E> {
        Ok(Json::Number(value.into()))
    }

    fn visit_u64<E>(self, value: u64) -> Result<Json, E> {
        Ok(Json::Number(value.into()))
    }

    fn visit_f64<E>(self, value: f64) -> Result<Json, E> {
        Ok(serde_json::Number::from_f64(value).map_or(Json::Null, Json::Number))
    }

    fn visit_str<E>(self, value: &str) -> Result<Json, E> {
        Ok(Json::String(value.to_string()))
    }

    fn visit_string<E>(self, value: String) -> Result<Json, E> {
        Ok(Json::String(value))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Json, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element()? {
            items.push(item);
        }
        Ok(Json::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Json, A::Error> {
        let mut entries: Vec<(String, Json)> = Vec::new();
        while let Some((key, value)) = map.next_entry::<String, Json>()? {
            // A repeated key: the last wins, in the first one's place.
            match entries.iter_mut().find(|(k, _)| *k == key) {
                Some((_, old)) => *old = value,
                None => entries.push((key, value)),
            }
        }
        Ok(Json::Object(entries))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_order_and_prints_as_javascript() {
        let text = br#"{"z": 1, "a": {"b": [1, "x\n"], "e": {}, "f": []}, "t": true, "n": null}"#;
        let json = Json::parse(text).unwrap();
        assert_eq!(
            json.pretty("  "),
            "{\n  \"z\": 1,\n  \"a\": {\n    \"b\": [\n      1,\n      \"x\\n\"\n    ],\n    \
             \"e\": {},\n    \"f\": []\n  },\n  \"t\": true,\n  \"n\": null\n}\n"
        );
        assert_eq!(indent_of(b"{\n    \"a\": 1\n}"), "    ");
        assert_eq!(indent_of(b"{}"), "  ");
    }
}
