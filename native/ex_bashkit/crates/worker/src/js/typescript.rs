//! TypeScript for `node file.ts`: its types stripped, as Node's own
//! `--experimental-strip-types` does. Each piece of TypeScript-only syntax
//! (annotations, interfaces, type aliases, `as`, `!`, generics, modifiers,
//! `declare`, type-only imports and exports) is replaced by spaces, found
//! in oxc's syntax tree; what is left is the program's JavaScript at the
//! same lines and columns, so an error's line points into the user's
//! source. Syntax that would need code generated (`enum`, a `namespace`
//! with code, constructor parameter properties, `import x = require()`)
//! is refused with a message saying what to write instead.

use oxc_allocator::Allocator;
use oxc_ast::ast::{
    Class, ExportNamedDeclaration, FormalParameter, Function, FunctionType, ImportDeclaration,
    ImportDeclarationSpecifier, ImportOrExportKind, MethodDefinition, PropertyDefinition,
    Statement, TSAsExpression, TSEnumDeclaration, TSIndexSignature, TSInterfaceDeclaration,
    TSModuleDeclaration, TSNonNullExpression, TSSatisfiesExpression, TSThisParameter,
    TSTypeAliasDeclaration, TSTypeAnnotation, TSTypeAssertion, TSTypeParameterDeclaration,
    TSTypeParameterInstantiation, VariableDeclarator,
};
use oxc_ast_visit::{walk, Visit};
use oxc_parser::Parser;
use oxc_span::{GetSpan, SourceType, Span};
use oxc_syntax::scope::ScopeFlags;

/// Whether `file` is TypeScript by its extension.
pub fn is_typescript(file: &str) -> bool {
    [".ts", ".mts", ".cts"]
        .iter()
        .any(|ext| file.ends_with(ext))
        && !file.ends_with(".d.ts")
}

/// `source` with its types blanked, or why it cannot be run as
/// JavaScript (a syntax error, or TypeScript that needs code generated),
/// with the line.
pub fn strip(source: &str) -> Result<String, (String, u32)> {
    let allocator = Allocator::default();
    let parsed = Parser::new(&allocator, source, SourceType::ts()).parse();
    if let Some(error) = parsed.errors.first() {
        let at = error
            .labels
            .as_ref()
            .and_then(|labels| labels.first())
            .map_or(0, |label| label.offset());
        return Err((
            format!("SyntaxError: {}", error.message),
            line_at(source, at),
        ));
    }
    let mut stripper = Stripper {
        source,
        blanks: Vec::new(),
        refused: None,
    };
    stripper.visit_program(&parsed.program);
    if let Some((message, at)) = stripper.refused {
        return Err((message, line_at(source, at)));
    }
    let mut bytes = source.as_bytes().to_vec();
    for (start, end) in stripper.blanks {
        for byte in &mut bytes[start as usize..(end as usize).min(source.len())] {
            if *byte != b'\n' && *byte != b'\r' {
                *byte = b' ';
            }
        }
    }
    // Whole UTF-8 characters were blanked (every span starts and ends on
    // a character boundary), so the bytes are text.
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

fn line_at(source: &str, at: usize) -> u32 {
    let at = at.min(source.len());
    u32::try_from(source[..at].matches('\n').count() + 1).unwrap_or(u32::MAX)
}

/// The modifiers only TypeScript has, blanked where they precede a name.
const TS_MODIFIERS: &[&str] = &[
    "public",
    "private",
    "protected",
    "readonly",
    "override",
    "declare",
    "abstract",
];

struct Stripper<'s> {
    source: &'s str,
    blanks: Vec<(u32, u32)>,
    refused: Option<(String, usize)>,
}

impl Stripper<'_> {
    fn blank(&mut self, span: Span) {
        self.blanks.push((span.start, span.end));
    }

    fn refuse(&mut self, message: &str, span: Span) {
        self.refused.get_or_insert((
            format!("TypeScript: {message} (types are stripped, not compiled)"),
            span.start as usize,
        ));
    }

    /// Blanks `span` and the comma that follows it, if one does.
    fn blank_with_comma(&mut self, span: Span) {
        let rest = &self.source[span.end as usize..];
        let skipped = rest.len() - rest.trim_start().len();
        let end = if rest.trim_start().starts_with(',') {
            span.end + skipped as u32 + 1
        } else {
            span.end
        };
        self.blanks.push((span.start, end));
    }

    /// Blanks the first `mark` (`?` or `!`) between `from` and `to`.
    fn blank_mark(&mut self, mark: char, from: u32, to: u32) {
        if let Some(at) = self.source[from as usize..to as usize].find(mark) {
            let at = from + at as u32;
            self.blanks.push((at, at + 1));
        }
    }

    /// Blanks TypeScript's modifiers among the words between `from` and `to`.
    fn blank_modifiers(&mut self, from: u32, to: u32) {
        let text = &self.source[from as usize..to as usize];
        let mut at = 0;
        for word in text.split(|c: char| !c.is_ascii_alphanumeric() && c != '_') {
            if TS_MODIFIERS.contains(&word) {
                let start = from + at as u32;
                self.blanks.push((start, start + word.len() as u32));
            }
            at += word.len() + 1;
        }
    }

    fn declaration_only(&self, statement: &Statement) -> bool {
        match statement {
            Statement::TSTypeAliasDeclaration(_) | Statement::TSInterfaceDeclaration(_) => true,
            Statement::TSEnumDeclaration(e) => e.declare,
            Statement::TSModuleDeclaration(m) => m.declare,
            Statement::ClassDeclaration(c) => c.declare,
            Statement::VariableDeclaration(v) => v.declare,
            Statement::FunctionDeclaration(f) => f.r#type == FunctionType::TSDeclareFunction,
            _ => false,
        }
    }
}

impl<'a> Visit<'a> for Stripper<'_> {
    fn visit_statement(&mut self, it: &Statement<'a>) {
        if self.declaration_only(it) {
            self.blank(it.span());
        } else {
            walk::walk_statement(self, it);
        }
    }

    fn visit_ts_type_annotation(&mut self, it: &TSTypeAnnotation<'a>) {
        self.blank(it.span);
    }

    fn visit_ts_type_parameter_declaration(&mut self, it: &TSTypeParameterDeclaration<'a>) {
        self.blank(it.span);
    }

    fn visit_ts_type_parameter_instantiation(&mut self, it: &TSTypeParameterInstantiation<'a>) {
        self.blank(it.span);
    }

    fn visit_ts_type_alias_declaration(&mut self, it: &TSTypeAliasDeclaration<'a>) {
        self.blank(it.span);
    }

    fn visit_ts_interface_declaration(&mut self, it: &TSInterfaceDeclaration<'a>) {
        self.blank(it.span);
    }

    fn visit_ts_as_expression(&mut self, it: &TSAsExpression<'a>) {
        self.visit_expression(&it.expression);
        self.blanks.push((it.expression.span().end, it.span.end));
    }

    fn visit_ts_satisfies_expression(&mut self, it: &TSSatisfiesExpression<'a>) {
        self.visit_expression(&it.expression);
        self.blanks.push((it.expression.span().end, it.span.end));
    }

    fn visit_ts_non_null_expression(&mut self, it: &TSNonNullExpression<'a>) {
        self.visit_expression(&it.expression);
        self.blanks.push((it.expression.span().end, it.span.end));
    }

    fn visit_ts_type_assertion(&mut self, it: &TSTypeAssertion<'a>) {
        self.blanks
            .push((it.span.start, it.expression.span().start));
        self.visit_expression(&it.expression);
    }

    fn visit_ts_enum_declaration(&mut self, it: &TSEnumDeclaration<'a>) {
        self.refuse(
            "an enum needs code generated; use an object (`const Color = { Red: 0 } as const`) or a union of literals",
            it.span,
        );
    }

    fn visit_ts_module_declaration(&mut self, it: &TSModuleDeclaration<'a>) {
        self.refuse(
            "a namespace with code needs code generated; use a module or an object",
            it.span,
        );
    }

    fn visit_ts_this_parameter(&mut self, it: &TSThisParameter<'a>) {
        self.blank_with_comma(it.span);
    }

    fn visit_ts_index_signature(&mut self, it: &TSIndexSignature<'a>) {
        self.blank(it.span);
    }

    fn visit_function(&mut self, it: &Function<'a>, flags: ScopeFlags) {
        if it.r#type == FunctionType::TSDeclareFunction || (it.body.is_none() && it.declare) {
            self.blank(it.span);
            return;
        }
        walk::walk_function(self, it, flags);
    }

    fn visit_formal_parameter(&mut self, it: &FormalParameter<'a>) {
        if it.accessibility.is_some() || it.readonly || it.r#override {
            self.refuse(
                "constructor parameter properties need code generated; assign `this.x = x` in the constructor",
                it.span,
            );
            return;
        }
        if it.optional {
            let to = it
                .type_annotation
                .as_ref()
                .map_or(it.span.end, |annotation| annotation.span.start);
            self.blank_mark('?', it.pattern.span().end, to);
        }
        walk::walk_formal_parameter(self, it);
    }

    fn visit_variable_declarator(&mut self, it: &VariableDeclarator<'a>) {
        if it.definite {
            let to = it
                .type_annotation
                .as_ref()
                .map_or(it.span.end, |annotation| annotation.span.start);
            self.blank_mark('!', it.id.span().end, to);
        }
        walk::walk_variable_declarator(self, it);
    }

    fn visit_class(&mut self, it: &Class<'a>) {
        if it.r#abstract {
            self.blank_modifiers(it.span.start, it.body.span.start.min(it.span.start + 16));
        }
        if let (Some(first), Some(last)) = (it.implements.first(), it.implements.last()) {
            let before = &self.source[..first.span.start as usize];
            let start = before
                .rfind("implements")
                .unwrap_or(first.span.start as usize) as u32;
            self.blanks.push((start, last.span.end));
        }
        walk::walk_class(self, it);
    }

    fn visit_property_definition(&mut self, it: &PropertyDefinition<'a>) {
        if it.declare || it.r#type.is_abstract() {
            self.blank(it.span);
            return;
        }
        self.blank_modifiers(it.span.start, it.key.span().start);
        let to = it.type_annotation.as_ref().map_or(
            it.value.as_ref().map_or(it.span.end, |v| v.span().start),
            |a| a.span.start,
        );
        if it.optional {
            self.blank_mark('?', it.key.span().end, to);
        }
        if it.definite {
            self.blank_mark('!', it.key.span().end, to);
        }
        walk::walk_property_definition(self, it);
    }

    fn visit_method_definition(&mut self, it: &MethodDefinition<'a>) {
        if it.value.body.is_none() {
            // An overload's signature, or an abstract method.
            self.blank(it.span);
            return;
        }
        self.blank_modifiers(it.span.start, it.key.span().start);
        if it.optional {
            self.blank_mark('?', it.key.span().end, it.value.params.span.start);
        }
        walk::walk_method_definition(self, it);
    }

    fn visit_import_declaration(&mut self, it: &ImportDeclaration<'a>) {
        if it.import_kind == ImportOrExportKind::Type {
            self.blank(it.span);
            return;
        }
        for specifier in it.specifiers.iter().flatten() {
            if let ImportDeclarationSpecifier::ImportSpecifier(s) = specifier {
                if s.import_kind == ImportOrExportKind::Type {
                    self.blank_with_comma(s.span);
                }
            }
        }
    }

    fn visit_export_named_declaration(&mut self, it: &ExportNamedDeclaration<'a>) {
        let declaration_only = it.declaration.as_ref().is_some_and(|declaration| {
            declaration.is_typescript_syntax()
                || matches!(declaration, oxc_ast::ast::Declaration::FunctionDeclaration(f)
                    if f.r#type == FunctionType::TSDeclareFunction)
        });
        if it.export_kind == ImportOrExportKind::Type || declaration_only {
            self.blank(it.span);
            return;
        }
        for specifier in &it.specifiers {
            if specifier.export_kind == ImportOrExportKind::Type {
                self.blank_with_comma(specifier.span);
            }
        }
        walk::walk_export_named_declaration(self, it);
    }
}

#[cfg(test)]
mod tests {
    use super::strip;

    #[test]
    fn types_become_spaces_on_the_same_lines() {
        let source = "interface User {\n  name: string;\n}\ntype Id = string | number;\n\
            function greet<T extends User>(user: T, times?: number): string {\n  \
            return (user.name as string).repeat(times ?? 1)!;\n}\n\
            const n: number = <number>(1 as unknown);\nlet late!: string;\n";
        let stripped = strip(source).unwrap();
        assert_eq!(stripped.lines().count(), source.lines().count());
        let squeezed: String = stripped.split_whitespace().collect::<Vec<_>>().join(" ");
        assert_eq!(
            squeezed,
            "function greet (user , times ) { return (user.name ).repeat(times ?? 1) ; } \
             const n = (1 ); let late ;"
        );
    }

    #[test]
    fn classes_lose_their_modifiers_and_keep_their_code() {
        let source = "abstract class A implements B, C {\n  private readonly x: number = 1;\n  \
            static y?: string;\n  abstract z(): void;\n  public get v(): number { return this.x; }\n  \
            f(a: number): void;\n  f(a: any) { return a; }\n}\n";
        let squeezed: String = strip(source)
            .unwrap()
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        assert_eq!(
            squeezed,
            "class A { x = 1; static y ; get v() { return this.x; } f(a ) { return a; } }"
        );
    }

    #[test]
    fn imports_and_exports_of_types_go_and_enums_are_refused() {
        let source = "import type { A } from './a';\nimport { type B, c } from './b';\n\
            export type { D };\nexport interface E {}\nexport const f = c;\n";
        let squeezed: String = strip(source)
            .unwrap()
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        assert_eq!(squeezed, "import { c } from './b'; export const f = c;");
        let (message, line) = strip("const a = 1;\nenum Color { Red }\n").unwrap_err();
        assert!(message.contains("enum"), "{message}");
        assert_eq!(line, 2);
        let (message, _) = strip("class P { constructor(private x: number) {} }").unwrap_err();
        assert!(message.contains("parameter properties"), "{message}");
        let (message, line) = strip("let x: = 1;").unwrap_err();
        assert!(message.starts_with("SyntaxError"), "{message}");
        assert_eq!(line, 1);
    }
}
