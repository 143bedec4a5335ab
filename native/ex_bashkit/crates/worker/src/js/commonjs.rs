//! The names a CommonJS file exports to `import { name } from …`, found
//! as Node's `cjs-module-lexer` finds them, in the file's syntax tree
//! (oxc's parser): `exports.a =`, `module.exports.a =`,
//! `Object.defineProperty(exports, 'a', …)`, `module.exports = { a, b: c }`
//! (up to the first value that is not a name alone), and the files
//! re-exported
//! by `module.exports = require('x')`, `...require('x')`,
//! `__exportStar(require('x'), exports)` and Babel's `Object.keys(_x)
//! .forEach(…)` over `var _x = require('x')`. Names only: the values are
//! read from `module.exports` once the file has run, as in Node.

use std::collections::HashMap;

use oxc_allocator::Allocator;
use oxc_ast::ast::{
    Argument, AssignmentExpression, AssignmentTarget, CallExpression, Expression, ObjectExpression,
    ObjectPropertyKind, PropertyKey, Statement, VariableDeclarator,
};
use oxc_ast_visit::{walk, Visit};
use oxc_parser::Parser;
use oxc_span::SourceType;

/// What a CommonJS file exports by name, and the specifiers whose
/// exports it passes on.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Exports {
    pub names: Vec<String>,
    pub reexports: Vec<String>,
}

/// The export names of the CommonJS `source`; none for source that does
/// not parse or nests past what the parser is let recurse into.
pub fn exports(source: &str) -> Exports {
    if super::scan::nesting(source) > super::scan::MAX_NESTING {
        return Exports::default();
    }
    let allocator = Allocator::default();
    let parsed = Parser::new(&allocator, source, SourceType::cjs()).parse();
    if parsed.panicked || !parsed.errors.is_empty() {
        return Exports::default();
    }
    let mut finder = Finder::default();
    finder.visit_program(&parsed.program);
    let mut found = finder.found;
    found.reexports.extend(finder.assigned);
    for binding in finder.starred {
        if let Some(specifier) = finder.required.get(&binding) {
            found.reexports.push(specifier.clone());
        }
    }
    let mut seen = std::collections::HashSet::new();
    found.names.retain(|name| seen.insert(name.clone()));
    found
}

#[derive(Default)]
struct Finder {
    found: Exports,
    /// `var _x = require('x')` (also through an interop helper): `_x` → `x`.
    required: HashMap<String, String>,
    /// The bindings whose keys are copied onto `exports` (Babel's star).
    starred: Vec<String>,
    /// The last `module.exports = require('x')`.
    assigned: Option<String>,
}

/// `exports` or `module.exports`.
fn is_exports(expression: &Expression) -> bool {
    expression.is_specific_id("exports")
        || expression.is_specific_member_access("module", "exports")
}

/// The specifier of `require('x')`, also inside one helper call
/// (`_interopRequireWildcard(require('x'))`, `__importStar(…)`).
fn required(expression: &Expression) -> Option<String> {
    let Expression::CallExpression(call) = expression.get_inner_expression() else {
        return None;
    };
    if let Some(literal) = call.common_js_require() {
        return Some(literal.value.to_string());
    }
    match call.arguments.first() {
        Some(argument) if call.arguments.len() == 1 => {
            let Expression::CallExpression(inner) =
                argument.as_expression()?.get_inner_expression()
            else {
                return None;
            };
            inner.common_js_require().map(|l| l.value.to_string())
        }
        _ => None,
    }
}

/// A property descriptor the lexer takes for an export: one with a
/// `value`, or a getter that returns a name or a member of one (a getter
/// that computes something is not read before the file runs).
fn exported(descriptor: &Expression) -> bool {
    let Expression::ObjectExpression(object) = descriptor.get_inner_expression() else {
        return false;
    };
    object.properties.iter().any(|property| {
        let ObjectPropertyKind::ObjectProperty(property) = property else {
            return false;
        };
        match key_name(&property.key).as_deref() {
            Some("value") => true,
            Some("get") => {
                let body = match &property.value {
                    Expression::FunctionExpression(function) => function.body.as_deref(),
                    _ => None,
                };
                let returned = body.and_then(|body| match body.statements.as_slice() {
                    [Statement::ReturnStatement(ret)] => ret.argument.as_ref(),
                    _ => None,
                });
                returned.is_some_and(|value| {
                    let mut value = value.get_inner_expression();
                    while let Some(member) = value.as_member_expression() {
                        value = member.object().get_inner_expression();
                    }
                    matches!(value, Expression::Identifier(_))
                })
            }
            _ => false,
        }
    })
}

/// Whether the first token of `expression` is a name (`a`, `a.b`, `a(b)`).
fn starts_with_name(expression: &Expression) -> bool {
    match expression.get_inner_expression() {
        Expression::Identifier(_) => true,
        Expression::CallExpression(call) => starts_with_name(&call.callee),
        Expression::TaggedTemplateExpression(tagged) => starts_with_name(&tagged.tag),
        other => other
            .as_member_expression()
            .is_some_and(|member| starts_with_name(member.object())),
    }
}

fn key_name(key: &PropertyKey) -> Option<String> {
    match key {
        PropertyKey::StaticIdentifier(name) => Some(name.name.to_string()),
        PropertyKey::StringLiteral(literal) => Some(literal.value.to_string()),
        _ => None,
    }
}

impl Finder {
    /// `module.exports = { a, b: c, 'd': e, ...require('x'), f: g.h }`: names up
    /// to the first value that is not a name alone (whose key counts when
    /// it starts with a name).
    fn object(&mut self, object: &ObjectExpression) {
        for property in &object.properties {
            match property {
                ObjectPropertyKind::SpreadProperty(spread) => {
                    if let Some(specifier) = required(&spread.argument) {
                        self.found.reexports.push(specifier);
                    }
                }
                ObjectPropertyKind::ObjectProperty(property) => {
                    if property.computed || property.method {
                        return;
                    }
                    let Some(name) = key_name(&property.key) else {
                        return;
                    };
                    // The lexer takes the key when the value starts with a
                    // name (`b: c`, `b: c.d`, `b: require('x')`), and reads
                    // on only past a value that is a name and nothing more.
                    let value = property.value.get_inner_expression();
                    if !property.shorthand && !starts_with_name(value) {
                        return;
                    }
                    self.found.names.push(name);
                    if !property.shorthand && !matches!(value, Expression::Identifier(_)) {
                        return;
                    }
                }
            }
        }
    }
}

impl<'a> Visit<'a> for Finder {
    fn visit_assignment_expression(&mut self, assignment: &AssignmentExpression<'a>) {
        if let Some(member) = assignment.left.as_member_expression() {
            if is_exports(member.object()) {
                if let Some(name) = member.static_property_name() {
                    self.found.names.push(name.to_string());
                }
            } else if member.is_specific_member_access("module", "exports") {
                match assignment.right.get_inner_expression() {
                    Expression::ObjectExpression(object) => self.object(object),
                    // Only the last `module.exports = require(…)` counts.
                    right => {
                        if let Some(specifier) = required(right) {
                            self.assigned = Some(specifier);
                        }
                    }
                }
            }
        }
        if let (AssignmentTarget::AssignmentTargetIdentifier(target), Some(specifier)) =
            (&assignment.left, required(&assignment.right))
        {
            self.required.insert(target.name.to_string(), specifier);
        }
        walk::walk_assignment_expression(self, assignment);
    }

    fn visit_variable_declarator(&mut self, declarator: &VariableDeclarator<'a>) {
        if let (Some(name), Some(init)) = (declarator.id.get_identifier_name(), &declarator.init) {
            if let Some(specifier) = required(init) {
                self.required.insert(name.to_string(), specifier);
            }
        }
        walk::walk_variable_declarator(self, declarator);
    }

    fn visit_call_expression(&mut self, call: &CallExpression<'a>) {
        let argument = |at: usize| call.arguments.get(at).and_then(Argument::as_expression);
        let callee = call.callee.get_inner_expression();
        let helper = match callee {
            Expression::Identifier(id) => Some(id.name.as_str()),
            _ => callee
                .as_member_expression()
                .and_then(|member| member.static_property_name()),
        };
        match helper {
            // Object.defineProperty(exports, 'name', …)
            Some("defineProperty")
                if callee.is_specific_member_access("Object", "defineProperty") =>
            {
                if let (Some(target), Some(Expression::StringLiteral(name)), Some(descriptor)) =
                    (argument(0), argument(1), argument(2))
                {
                    if is_exports(target) && exported(descriptor) {
                        self.found.names.push(name.value.to_string());
                    }
                }
            }
            // TypeScript's and tslib's __exportStar(require('x'), exports); __export(require('x')).
            Some("__exportStar" | "__export") => {
                if let Some(specifier) = argument(0).and_then(required) {
                    self.found.reexports.push(specifier);
                }
            }
            // Babel: Object.keys(_x).forEach(function (key) { … exports[key] = _x[key] … })
            Some("forEach") => {
                if let Some(Expression::CallExpression(keys)) = callee
                    .as_member_expression()
                    .map(|m| m.object().get_inner_expression())
                {
                    if keys.callee.is_specific_member_access("Object", "keys") {
                        if let Some(Expression::Identifier(binding)) =
                            keys.arguments.first().and_then(Argument::as_expression)
                        {
                            self.starred.push(binding.name.to_string());
                        }
                    }
                }
            }
            _ => {}
        }
        walk::walk_call_expression(self, call);
    }
}

#[cfg(test)]
mod tests {
    use super::exports;

    fn names(source: &str) -> Vec<String> {
        exports(source).names
    }

    #[test]
    fn assignments_and_define_property() {
        let source = "exports.a = 1; module.exports.b = 2; exports['c-d'] = 3;\n\
            Object.defineProperty(exports, '__esModule', { value: true });\n\
            Object.defineProperty(module.exports, 'e', { enumerable: true, get: function () { return x.e; } });\n\
            Object.defineProperty(exports, 'computed', { get: function () { return /x/g; } });\n\
            other.f = 4; exports[g] = 5;";
        assert_eq!(names(source), ["a", "b", "c-d", "__esModule", "e"]);
    }

    #[test]
    fn object_literals_up_to_the_first_value_that_is_not_a_name() {
        let source = "module.exports = { a, 'b': b, c: c, ...d, e: f.g, h };";
        assert_eq!(names(source), ["a", "b", "c", "e"]);
        let source =
            "module.exports = { copy: u(require('./copy')), copySync: require('./sync') };";
        assert_eq!(names(source), ["copy"]);
        let source = "module.exports = { a: 1, b };";
        assert_eq!(names(source), Vec::<String>::new());
    }

    #[test]
    fn reexports() {
        let source = "module.exports = require('./first');\n\
            module.exports = require('./a');\n\
            __exportStar(require('./b'), exports);\n\
            tslib.__exportStar(require('./c'), exports);\n\
            var _d = _interopRequireWildcard(require('./d'));\n\
            Object.keys(_d).forEach(function (key) { exports[key] = _d[key]; });\n\
            module.exports = { ...require('./e') };";
        assert_eq!(
            exports(source).reexports,
            ["./b", "./c", "./e", "./a", "./d"]
        );
    }

    #[test]
    fn inside_wrappers_and_nothing_from_what_does_not_parse() {
        assert_eq!(
            names("(function (exports) { exports.inner = 1; })(typeof exports === 'object' ? exports : {});"),
            ["inner"]
        );
        assert_eq!(names("exports.a = ;"), Vec::<String>::new());
        assert_eq!(names(&"[".repeat(5_000)), Vec::<String>::new());
    }
}
