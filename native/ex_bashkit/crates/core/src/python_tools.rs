//! The `:tools` as Python functions (Monty): `tools.orders.list(customer=
//! "acme")` calls the builtin `orders` with the argument `list` and the
//! keyword arguments as a JSON object on stdin, through the session's one
//! tool bridge (`tool_bridge.rs`, JavaScript's too). The JSON it prints
//! comes back as Python values; a failure is a `RuntimeError` with the
//! tool's words.

use std::sync::Arc;

use bashkit::{ExcType, ExtFunctionResult, MontyException, MontyObject, PythonExternalFnHandler};
use serde_json::Value;

use crate::tool_bridge::{Site, ToolBridge};

/// The one external function the prelude's classes call.
const CALL: &str = "__ex_bashkit_tool";

/// The external functions, their handler and the prelude defining `tools`.
pub fn functions(
    names: &[String],
    bridge: &Arc<ToolBridge>,
    site: &Arc<Site>,
) -> (Vec<String>, PythonExternalFnHandler, String) {
    let bridge = bridge.clone();
    let site = site.clone();
    let handler: PythonExternalFnHandler = Arc::new(move |_function, args, _kwargs| {
        let bridge = bridge.clone();
        let site = site.clone();
        Box::pin(async move { call(&bridge, &site, args).await })
    });
    (vec![CALL.to_string()], handler, prelude(names))
}

/// Classes for the tree of names: `orders.list` and `orders.get` make a
/// class with methods `list` and `get`, held by `tools.orders`.
fn prelude(names: &[String]) -> String {
    #[derive(Default)]
    struct Node {
        tool: Option<String>,
        children: Vec<(String, Node)>,
    }
    fn insert(node: &mut Node, path: &[&str], name: &str) {
        let Some((first, rest)) = path.split_first() else {
            node.tool = Some(name.to_string());
            return;
        };
        let index = match node.children.iter().position(|(key, _)| key == first) {
            Some(index) => index,
            None => {
                node.children.push((first.to_string(), Node::default()));
                node.children.len() - 1
            }
        };
        insert(&mut node.children[index].1, rest, name);
    }
    fn class(node: &Node, id: &mut usize, out: &mut String) -> String {
        *id += 1;
        let own = format!("_ExBashkitTools{id}");
        let mut methods = String::new();
        let mut fields = String::new();
        for (key, child) in &node.children {
            let key = python_name(key);
            if child.children.is_empty() {
                let tool = child.tool.as_deref().unwrap_or_default();
                methods.push_str(&format!(
                    "    def {key}(self, **kwargs):\n        return {CALL}({tool:?}, kwargs)\n"
                ));
            } else {
                let inner = class(child, id, out);
                fields.push_str(&format!("        self.{key} = {inner}()\n"));
            }
        }
        out.push_str(&format!(
            "class {own}:\n    def __init__(self):\n        pass\n{fields}{methods}\n"
        ));
        own
    }
    let mut root = Node::default();
    for name in names {
        let path: Vec<&str> = name.split('.').collect();
        insert(&mut root, &path, name);
    }
    let mut out = String::new();
    let top = class(&root, &mut 0, &mut out);
    out.push_str(&format!("tools = {top}()\n"));
    out
}

/// A segment as a Python identifier: `-` is not one.
fn python_name(segment: &str) -> String {
    segment.replace('-', "_")
}

async fn call(bridge: &ToolBridge, site: &Site, args: Vec<MontyObject>) -> ExtFunctionResult {
    let fail = |message: String| {
        ExtFunctionResult::Error(MontyException::new(ExcType::RuntimeError, Some(message)))
    };
    let (Some(MontyObject::String(tool)), Some(MontyObject::Dict(pairs))) =
        (args.first(), args.get(1))
    else {
        return fail("tools: call a tool with keyword arguments".into());
    };
    let mut object = serde_json::Map::new();
    for (key, value) in pairs {
        let MontyObject::String(key) = key else {
            return fail(format!("{tool}: argument names must be strings"));
        };
        match to_json(value) {
            Some(value) => object.insert(key.clone(), value),
            None => return fail(format!("{tool}: argument {key} is not a JSON value")),
        };
    }
    let path: Vec<String> = tool.split('.').map(str::to_string).collect();
    let input = Value::Object(object).to_string();
    let (env, cwd) = site.get();
    match bridge.call(&path, &input, &env, &cwd).await {
        Ok(stdout) => {
            let text = String::from_utf8_lossy(&stdout);
            match serde_json::from_str::<Value>(&text) {
                Ok(value) => ExtFunctionResult::Return(from_json(value)),
                Err(_) => ExtFunctionResult::Return(MontyObject::String(text.into_owned())),
            }
        }
        Err(error) => fail(error.message),
    }
}

fn to_json(value: &MontyObject) -> Option<Value> {
    Some(match value {
        MontyObject::None => Value::Null,
        MontyObject::Bool(flag) => Value::Bool(*flag),
        MontyObject::Int(n) => Value::from(*n),
        MontyObject::Float(x) => serde_json::Number::from_f64(*x).map(Value::Number)?,
        MontyObject::String(text) => Value::String(text.clone()),
        MontyObject::List(items) | MontyObject::Tuple(items) => {
            Value::Array(items.iter().map(to_json).collect::<Option<_>>()?)
        }
        MontyObject::Dict(pairs) => {
            let mut object = serde_json::Map::new();
            for (key, value) in pairs {
                let MontyObject::String(key) = key else {
                    return None;
                };
                object.insert(key.clone(), to_json(value)?);
            }
            Value::Object(object)
        }
        _ => return None,
    })
}

fn from_json(value: Value) -> MontyObject {
    match value {
        Value::Null => MontyObject::None,
        Value::Bool(flag) => MontyObject::Bool(flag),
        Value::Number(n) => match n.as_i64() {
            Some(i) => MontyObject::Int(i),
            None => MontyObject::Float(n.as_f64().unwrap_or(f64::NAN)),
        },
        Value::String(text) => MontyObject::String(text),
        Value::Array(items) => MontyObject::List(items.into_iter().map(from_json).collect()),
        Value::Object(object) => MontyObject::dict(
            object
                .into_iter()
                .map(|(key, value)| (MontyObject::String(key), from_json(value)))
                .collect::<Vec<_>>(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_prelude_nests_classes_by_segment() {
        let names = [
            "orders.list".to_string(),
            "orders.get".into(),
            "weather".into(),
        ];
        let prelude = prelude(&names);
        assert!(prelude.contains(
            "def list(self, **kwargs):\n        return __ex_bashkit_tool(\"orders.list\", kwargs)"
        ));
        assert!(prelude.contains("def weather(self, **kwargs):"));
        assert!(prelude.contains("self.orders = _ExBashkitTools"));
        assert!(prelude.ends_with("tools = _ExBashkitTools1()\n"));
    }

    #[test]
    fn json_round_trips_through_python_values() {
        let value: Value = serde_json::from_str(r#"{"a":[1,2.5,null,true,"x"],"b":{}}"#).unwrap();
        assert_eq!(to_json(&from_json(value.clone())), Some(value));
    }
}
