//! What `ExBashkit.Code` refuses in JavaScript, found in the code's syntax
//! tree (oxc's parser), not in its text: `eval`, `new Function`,
//! `require`, `import`, `process`, writes through `fs`, and `fetch`, `fs`
//! and `crypto` without their grants. A comment or a string that names
//! them is not a use; a template's `${…}` is code. This is policy for
//! code written in good faith: the sandbox is the boundary (a run without
//! a grant has no such global, whatever the spelling).

use oxc_allocator::Allocator;
use oxc_ast::ast::{
    CallExpression, Expression, IdentifierReference, ImportDeclaration, ImportExpression,
    NewExpression, StaticMemberExpression,
};
use oxc_ast_visit::{walk, Visit};
use oxc_parser::Parser;
use oxc_span::SourceType;

use super::invocation::Grants;

/// One refused use: what, and the line it is on.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Finding {
    pub message: &'static str,
    pub line: u32,
}

/// Deeper than this, code is not scanned but refused: no program written
/// in good faith nests so, and the parser's recursion must stay bounded.
pub const MAX_NESTING: usize = 1_000;

/// The refused uses in `code`, in source order, each once per line. In
/// code with a syntax error (the engine's to report), the uses in the
/// lines before it; code that nests past [`MAX_NESTING`] is one finding.
pub fn scan(code: &str, grants: Grants) -> Vec<Finding> {
    if nesting(code) > MAX_NESTING {
        return vec![Finding {
            message: "the code nests too deeply to be checked",
            line: 1,
        }];
    }
    let mut scanner = Scanner {
        grants,
        found: Vec::new(),
    };
    if let Err(at) = visit(code, &mut scanner) {
        // Up to the line of the first error: what parses before it.
        let start = code[..at.min(code.len())]
            .rfind('\n')
            .map_or(0, |newline| newline + 1);
        scanner.found.clear();
        let _ = visit(&code[..start], &mut scanner);
    }
    let mut found: Vec<(u32, &'static str)> = scanner.found;
    found.sort_by_key(|(at, _)| *at);
    let mut findings: Vec<Finding> = Vec::new();
    for (at, message) in found {
        let finding = Finding {
            message,
            line: line_at(code, at),
        };
        if !findings.contains(&finding) {
            findings.push(finding);
        }
    }
    findings
}

/// Parses `code` and visits its tree; else the offset of its first error.
fn visit(code: &str, scanner: &mut Scanner) -> Result<(), usize> {
    let allocator = Allocator::default();
    let parsed = Parser::new(&allocator, code, SourceType::cjs()).parse();
    if let Some(error) = parsed.errors.first() {
        let at = error.labels.as_ref().and_then(|labels| labels.first());
        return Err(at.map_or(0, |label| label.offset()));
    }
    if parsed.panicked {
        return Err(0);
    }
    scanner.visit_program(&parsed.program);
    Ok(())
}

/// How many brackets deep `code` goes, strings and comments aside.
pub(super) fn nesting(code: &str) -> usize {
    let (mut depth, mut deepest) = (0usize, 0usize);
    let mut chars = code.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '(' | '[' | '{' => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            ')' | ']' | '}' => depth = depth.saturating_sub(1),
            '"' | '\'' => {
                while let Some(inner) = chars.next() {
                    match inner {
                        '\\' => {
                            chars.next();
                        }
                        '\n' => break,
                        _ if inner == c => break,
                        _ => {}
                    }
                }
            }
            '/' if chars.peek() == Some(&'/') => {
                for inner in chars.by_ref() {
                    if inner == '\n' {
                        break;
                    }
                }
            }
            '/' if chars.peek() == Some(&'*') => {
                chars.next();
                let mut star = false;
                for inner in chars.by_ref() {
                    if star && inner == '/' {
                        break;
                    }
                    star = inner == '*';
                }
            }
            _ => {}
        }
    }
    deepest
}

fn line_at(code: &str, at: u32) -> u32 {
    let end = (at as usize).min(code.len());
    let newlines = code.as_bytes()[..end]
        .iter()
        .filter(|&&b| b == b'\n')
        .count();
    u32::try_from(newlines + 1).unwrap_or(u32::MAX)
}

struct Scanner {
    grants: Grants,
    found: Vec<(u32, &'static str)>,
}

/// `fs` methods that write.
const WRITES: [&str; 10] = [
    "write", "append", "unlink", "rm", "mkdir", "rename", "copy", "symlink", "chmod", "truncate",
];

impl Scanner {
    fn flag(&mut self, at: u32, message: &'static str) {
        self.found.push((at, message));
    }
}

impl<'a> Visit<'a> for Scanner {
    fn visit_call_expression(&mut self, call: &CallExpression<'a>) {
        if let Expression::Identifier(callee) = &call.callee {
            match callee.name.as_str() {
                "eval" => self.flag(call.span.start, "eval() is forbidden"),
                "Function" => self.flag(call.span.start, "new Function() is forbidden"),
                "require" => self.flag(call.span.start, "require() is forbidden"),
                "fetch" if !self.grants.fetch => {
                    self.flag(call.span.start, "fetch() needs allow: [:fetch]");
                }
                _ => {}
            }
        }
        walk::walk_call_expression(self, call);
    }

    fn visit_new_expression(&mut self, new: &NewExpression<'a>) {
        if matches!(&new.callee, Expression::Identifier(callee) if callee.name == "Function") {
            self.flag(new.span.start, "new Function() is forbidden");
        }
        walk::walk_new_expression(self, new);
    }

    fn visit_import_declaration(&mut self, import: &ImportDeclaration<'a>) {
        self.flag(import.span.start, "import is forbidden");
        walk::walk_import_declaration(self, import);
    }

    fn visit_import_expression(&mut self, import: &ImportExpression<'a>) {
        self.flag(import.span.start, "import is forbidden");
        walk::walk_import_expression(self, import);
    }

    fn visit_identifier_reference(&mut self, name: &IdentifierReference<'a>) {
        if name.name == "process" {
            self.flag(name.span.start, "process is forbidden");
        }
    }

    fn visit_static_member_expression(&mut self, member: &StaticMemberExpression<'a>) {
        if let Expression::Identifier(object) = &member.object {
            let property = member.property.name.as_str();
            match object.name.as_str() {
                "fs" if WRITES.iter().any(|write| property.starts_with(write)) => {
                    self.flag(member.span.start, "fs writes are forbidden");
                }
                "fs" if !self.grants.read_files => {
                    self.flag(member.span.start, "fs needs allow: [:read_files]");
                }
                "crypto" if !self.grants.crypto => {
                    self.flag(member.span.start, "crypto needs allow: [:crypto]");
                }
                "child_process" if !self.grants.commands => {
                    self.flag(member.span.start, "child_process needs allow: [:commands]");
                }
                _ => {}
            }
        }
        walk::walk_static_member_expression(self, member);
    }
}

#[cfg(test)]
mod tests {
    use super::{scan, Finding, MAX_NESTING};
    use crate::js::invocation::Grants;

    fn messages(code: &str, grants: Grants) -> Vec<(&'static str, u32)> {
        scan(code, grants)
            .into_iter()
            .map(|Finding { message, line }| (message, line))
            .collect()
    }

    #[test]
    fn uses_are_found_in_code_not_in_comments_or_strings() {
        let code = "// eval(x) here is a comment\nconst s = 'process.exit()';\nfunction execute() {\n  return `${eval('1')}`;\n}";
        assert_eq!(
            messages(code, Grants::default()),
            [("eval() is forbidden", 4)]
        );
    }

    #[test]
    fn each_rule_and_grant() {
        let code = "require('x');\nnew Function('a');\nprocess.env;\nfs.writeFileSync('/a', 'b');\nfetch('u');\nfs.readFileSync('/a');\ncrypto.randomUUID();\nimport('m');";
        assert_eq!(
            messages(code, Grants::default()),
            [
                ("require() is forbidden", 1),
                ("new Function() is forbidden", 2),
                ("process is forbidden", 3),
                ("fs writes are forbidden", 4),
                ("fetch() needs allow: [:fetch]", 5),
                ("fs needs allow: [:read_files]", 6),
                ("crypto needs allow: [:crypto]", 7),
                ("import is forbidden", 8),
            ]
        );
        let all = Grants {
            read_files: true,
            crypto: true,
            fetch: true,
            commands: true,
        };
        assert_eq!(
            messages(
                "fetch('u'); fs.readFileSync('/a'); crypto.randomUUID(); obj.process; x.eval(1)",
                all
            ),
            []
        );
    }

    #[test]
    fn in_code_that_does_not_parse_only_the_lines_before_the_error_count() {
        assert_eq!(
            messages("function execute( { eval(1)", Grants::default()),
            []
        );
        assert_eq!(
            messages("eval(1);\nlet = ;\nrequire('x');", Grants::default()),
            [("eval() is forbidden", 1)]
        );
        let deep = format!(
            "x = {}1{}",
            "(".repeat(MAX_NESTING + 1),
            ")".repeat(MAX_NESTING + 1)
        );
        assert_eq!(
            messages(&deep, Grants::default()),
            [("the code nests too deeply to be checked", 1)]
        );
        let strings = format!("x = '{}'", "(".repeat(MAX_NESTING * 2));
        assert_eq!(messages(&strings, Grants::default()), []);
    }
}
