//! What the API server refuses in an `x-kubernetes-validations` rule: its CEL expression must
//! parse within the CEL parser's limits, its message be one line, its reason one the server
//! knows, its `fieldPath` name a field of the schema the rule sits on.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    JSONSchemaProps, JSONSchemaPropsOrBool, ValidationRule,
};

/// cel-go's parser refuses an expression nested deeper than this (its default
/// `maxRecursionDepth`, which the API server keeps).
pub const MAX_DEPTH: usize = 250;

/// cel-go's default limit on an expression's length, in code points.
pub const MAX_CODE_POINTS: usize = 100_000;

/// The first problem the API server would report for `rule` on `schema`, if any.
pub fn problem(schema: &JSONSchemaProps, rule: &ValidationRule) -> Option<String> {
    if let Some(problem) = validation_problem(schema, rule) {
        return Some(problem);
    }
    let expression = &rule.rule;
    let start: String = expression.chars().take(40).collect();
    let length = expression.chars().count();
    if length > MAX_CODE_POINTS {
        return Some(format!(
            "a CEL rule of {length} characters (`{start}..`): the API server's CEL parser takes at most {MAX_CODE_POINTS}"
        ));
    }
    let depth = bracket_depth(expression) + 1;
    if depth > MAX_DEPTH {
        return Some(format!(
            "CEL rule `{start}..` nests {depth} levels deep: the API server's CEL parser refuses more than {MAX_DEPTH}"
        ));
    }
    let parsed =
        super::error::catch_panic(|| parser().parse(expression).map_err(|e| e.to_string()));
    match parsed.and_then(|result| result) {
        Err(error) => {
            let first = error.lines().next().unwrap_or_default().to_owned();
            Some(format!("CEL rule `{expression}` does not parse: {first}"))
        }
        Ok(ast) => {
            let depth = ast_depth(&ast);
            (depth > MAX_DEPTH).then(|| {
                format!(
                    "CEL rule `{start}..` nests {depth} operations deep: the API server's CEL parser refuses more than {MAX_DEPTH}"
                )
            })
        }
    }
}

/// The CEL parser, its recursion bounded by the checks above rather than by its own default
/// (96 levels, where cel-go allows 250).
pub(super) fn parser() -> cel::parser::Parser {
    cel::parser::Parser::new().max_recursion_depth(1024)
}

/// How deep `(`, `[` and `{` nest in `expression`, outside string literals: each opens an
/// expression of its own, which cel-go counts against its recursion limit.
fn bracket_depth(expression: &str) -> usize {
    let bytes = expression.as_bytes();
    let (mut depth, mut deepest, mut i) = (0usize, 0usize, 0usize);
    while i < bytes.len() {
        match bytes[i] {
            b'(' | b'[' | b'{' => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            b')' | b']' | b'}' => depth = depth.saturating_sub(1),
            quote @ (b'"' | b'\'') => {
                let raw = i > 0 && matches!(bytes[i - 1], b'r' | b'R');
                let close: &[u8] = if bytes[i..].starts_with(&[quote; 3]) {
                    &bytes[i..i + 3]
                } else {
                    &bytes[i..=i]
                };
                i += close.len();
                while i < bytes.len() && !bytes[i..].starts_with(close) {
                    i += if !raw && bytes[i] == b'\\' { 2 } else { 1 };
                }
                i += close.len();
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    deepest
}

/// The depth of the expression tree: a chain of operators (`a == b == c ..`, `a.b.c ..`)
/// nests one level per operation in cel-go's parser, as it does here.
fn ast_depth(expr: &cel::common::ast::IdedExpr) -> usize {
    use cel::common::ast::{EntryExpr, Expr};
    let entries = |entries: &'_ [cel::common::ast::IdedEntryExpr]| -> Vec<usize> {
        entries
            .iter()
            .map(|entry| match &entry.expr {
                EntryExpr::MapEntry(e) => ast_depth(&e.key).max(ast_depth(&e.value)),
                EntryExpr::StructField(f) => ast_depth(&f.value),
            })
            .collect()
    };
    let children: Vec<usize> = match &expr.expr {
        Expr::Call(call) => (call.target.iter().map(|t| t.as_ref()))
            .chain(call.args.iter())
            .map(ast_depth)
            .collect(),
        Expr::Select(select) => vec![ast_depth(&select.operand)],
        Expr::List(list) => list.elements.iter().map(ast_depth).collect(),
        Expr::Map(map) => entries(&map.entries),
        Expr::Struct(s) => entries(&s.entries),
        Expr::Comprehension(c) => vec![ast_depth(&c.iter_range), ast_depth(&c.loop_step)],
        // A name or literal ends a chain without a level of its own.
        Expr::Unspecified | Expr::Ident(_) | Expr::Literal(_) => return 0,
    };
    1 + children.into_iter().max().unwrap_or(0)
}

/// The `reason`s the API server accepts on a validation rule.
const VALIDATION_REASONS: [&str; 4] = [
    "FieldValueRequired",
    "FieldValueForbidden",
    "FieldValueInvalid",
    "FieldValueDuplicate",
];

/// What the API server refuses in a validation rule besides its expression: an empty rule, a
/// message over several lines (or a multi-line rule without one), an unknown reason, a
/// `fieldPath` that names no field of the schema the rule sits on.
pub(super) fn validation_problem(
    schema: &JSONSchemaProps,
    v: &k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::ValidationRule,
) -> Option<String> {
    let multiline = |text: &str| text.trim().contains(['\n', '\r']);
    let message = v.message.as_deref().unwrap_or_default();
    if v.rule.trim().is_empty() {
        return Some("a validation rule is empty".into());
    }
    if multiline(message) {
        return Some(format!("the message of rule `{}` has a line break", v.rule));
    }
    if multiline(&v.rule) && message.trim().is_empty() {
        return Some(format!(
            "rule `{}` spans several lines, so it needs a `message`",
            v.rule
        ));
    }
    if let Some(reason) = v.reason.as_deref()
        && !VALIDATION_REASONS.contains(&reason)
    {
        return Some(format!(
            "reason `{reason}` of rule `{}` is not one of {}",
            v.rule,
            VALIDATION_REASONS.join(", ")
        ));
    }
    let field_path = v.field_path.as_deref().unwrap_or_default();
    if !field_path.is_empty() && !field_path_is_valid(schema, field_path) {
        return Some(format!(
            "fieldPath `{field_path}` of rule `{}` does not name a field below this schema (write `.field` or `['key']` steps)",
            v.rule
        ));
    }
    None
}

/// The API server's reading of a rule's `fieldPath`: `.name` and `['name']` step into a
/// property, or into the values of a map; list items cannot be named.
pub fn field_path_is_valid(schema: &JSONSchemaProps, path: &str) -> bool {
    field_at(schema, path).is_some()
}

/// The schema of the field `path` names below `schema` (as a rule's `fieldPath` or a
/// selectable field names it), if it names one.
pub fn field_at<'a>(schema: &'a JSONSchemaProps, path: &str) -> Option<&'a JSONSchemaProps> {
    let mut node = schema;
    let mut rest = path;
    if rest.trim().is_empty() || rest.contains(['\n', '\r']) {
        return None;
    }
    while !rest.is_empty() {
        let (key, tail) = if let Some(after) = rest.strip_prefix("['") {
            let end = after.find("']")?;
            (&after[..end], &after[end + 2..])
        } else if let Some(after) = rest.strip_prefix('.') {
            let end = after.find(['.', '[']).unwrap_or(after.len());
            (&after[..end], &after[end..])
        } else {
            return None;
        };
        if key.is_empty() {
            return None;
        }
        node = match (&node.properties, &node.additional_properties) {
            (Some(properties), _) => properties.get(key)?,
            (None, Some(JSONSchemaPropsOrBool::Schema(values))) => values,
            _ => return None,
        };
        rest = tail;
    }
    Some(node)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The problem of `expression`, found on a stack as deep as the one `kopgen manifests`
    /// derives on (the CEL parser recurses per nesting level).
    fn rule(expression: &str) -> Option<String> {
        let expression = expression.to_owned();
        std::thread::Builder::new()
            .stack_size(256 << 20)
            .spawn(move || {
                problem(
                    &JSONSchemaProps::default(),
                    &ValidationRule {
                        rule: expression,
                        ..ValidationRule::default()
                    },
                )
            })
            .expect("thread")
            .join()
            .expect("no panic")
    }

    #[test]
    fn nesting_is_bounded_as_cel_go_bounds_it() {
        let parens = |n: usize| format!("{}self.x{}", "(".repeat(n), ")".repeat(n));
        assert_eq!(rule(&parens(249)), None);
        assert!(rule(&parens(250)).is_some_and(|p| p.contains("nests 251 levels")));
        let chain = |n: usize| format!("{}self.x", "self.x == ".repeat(n));
        assert_eq!(rule(&chain(249)), None);
        assert!(rule(&chain(250)).is_some_and(|p| p.contains("more than 250")));
        assert_eq!(
            rule(&format!("'{}' == self.x", "(".repeat(300))),
            None,
            "quoted"
        );
        assert_eq!(rule(r#"self.x == "a\"(" && self.y == '''((('''"#), None);
    }

    #[test]
    fn rules_that_do_not_parse_are_problems() {
        assert!(rule("self.x ==").is_some_and(|p| p.contains("does not parse")));
        assert_eq!(rule("self.x == 1"), None);
    }
}
