//! Expressions folded into the JSON serde writes for them: literals, constants, calls of the
//! crate's functions, collections, struct and enum literals.

use super::*;

impl Folder<'_> {
    /// Expressions folded into the array serde writes for them (arrays, tuples, `vec![..]`).
    pub(super) fn array<'e>(
        &self,
        file: &Path,
        module: &str,
        elems: impl IntoIterator<Item = &'e Expr>,
    ) -> Result<Value, SourceError> {
        elems
            .into_iter()
            .map(|e| self.expr(file, module, e))
            .collect::<Result<Vec<_>, _>>()
            .map(Value::Array)
    }

    /// Whether `path` is `Default::default` or a function of a generic library type
    /// (`Vec::new`), whose type nothing fixes where schemars calls it.
    pub(super) fn generic_constructor(&self, module: &str, path: &syn::Path) -> bool {
        let segments = path_segments(path);
        let Some((_, ty)) = segments.split_last() else {
            return false;
        };
        match self.index.resolve(module, ty) {
            Some(Resolved::External(ty)) => {
                ty == "Default" || ty.ends_with("::Default") || Generic::from_path(&ty).is_some()
            }
            _ => false,
        }
    }

    /// Folds a call of the default function at `path` (written in `module`).
    pub(super) fn call(
        &self,
        file: &Path,
        module: &str,
        path: &syn::Path,
    ) -> Result<Value, SourceError> {
        let unfoldable = |message: &str| {
            SourceError::at(file, path.span(), message.to_owned())
                .help(HELP)
                .unsupported()
        };
        let resolved = self.index.resolve(module, &path_segments(path));
        if let Some(Resolved::Local(item)) = resolved {
            return self.local_call(file, path, item);
        }
        let _depth = self.enter_call(file, path)?;
        match resolved {
            // A constructor of a generic library type, or `Default::default`: schemars calls it
            // where nothing fixes its type, so rustc asks for type annotations.
            Some(Resolved::External(_)) if self.generic_constructor(module, path) => {
                Err(SourceError::at(
                    file,
                    path.span(),
                    "schemars cannot infer the type this function returns (rustc: type annotations needed)",
                )
                .help("use `#[serde(default)]` for the type's Default, or a function of this crate that returns the field's type"))
            }
            // A constructor of a library type (`String::new`, `u32::default`,
            // `Quantity::default`): folded as a call of it.
            Some(Resolved::External(_)) => {
                let call: Expr = syn::parse_quote!(#path());
                self.expr(file, module, &call).map_err(|_| {
                    unfoldable("kopgen cannot fold this library function; use `#[serde(default)]` for the type's Default")
                })
            }
            _ => Err(unfoldable("cannot find this default function in the crate")),
        }
    }

    /// One more call being folded, at `path` in `file`. Functions may call functions: as many
    /// as rustc would evaluate, short of recursion.
    pub(super) fn enter_call(&self, file: &Path, path: &syn::Path) -> Result<Depth, SourceError> {
        Depth::enter(&CALL_DEPTH, MAX_CALL_DEPTH).ok_or_else(|| {
            SourceError::at(
                file,
                path.span(),
                "the default calls functions more than 32 deep (or calls itself)",
            )
            .help(HELP)
            .unsupported()
        })
    }

    /// Folds a call (at `path` in `file`) of the crate's item `item`, which must be a function
    /// whose body is one foldable expression.
    pub(super) fn local_call(
        &self,
        file: &Path,
        path: &syn::Path,
        item: usize,
    ) -> Result<Value, SourceError> {
        let unfoldable =
            |message: &str| SourceError::at(file, path.span(), message.to_owned()).help(HELP);
        let _depth = self.enter_call(file, path)?;
        let item_kind = self.index.kind(item);
        let item = &self.index.items[item];
        let item_file = self.index.file(item).to_path_buf();
        let ItemKind::Fn(f) = item_kind else {
            return Err(unfoldable("the default is not a function"));
        };
        let expr = tail_expr(&f.block).ok_or_else(|| {
            SourceError::at(
                &item_file,
                f.sig.ident.span(),
                "this default function is not a single expression",
            )
            .help(HELP)
            .unsupported()
        })?;
        let module = item.module.clone();
        // `Default::default()` (or `Default::default().into()`) takes its type from the
        // function's return type.
        if is_default_call(expr)
            && let syn::ReturnType::Type(_, ty) = &f.sig.output
        {
            return self.type_default(&item_file, &module, ty);
        }
        if let syn::ReturnType::Type(_, ty) = &f.sig.output
            && let Some(value) = self.collected(&item_file, &module, expr, ty)
        {
            return value;
        }
        self.expr(&item_file, &module, expr)
    }

    /// Folds a constant expression.
    pub(super) fn expr(
        &self,
        file: &Path,
        module: &str,
        expr: &Expr,
    ) -> Result<Value, SourceError> {
        let unfoldable = || {
            SourceError::at(file, expr.span(), "cannot fold this default statically")
                .help(HELP)
                .unsupported()
        };
        if let Some(value) = attrs::expr_to_json(expr) {
            return Ok(value);
        }
        match expr {
            Expr::Paren(p) => self.expr(file, module, &p.expr),
            Expr::Group(g) => self.expr(file, module, &g.expr),
            Expr::Reference(r) => self.expr(file, module, &r.expr),
            // `json!({...})` with literal contents.
            Expr::Macro(m)
                if m.mac
                    .path
                    .segments
                    .last()
                    .is_some_and(|s| s.ident == "json") =>
            {
                let tokens: Vec<proc_macro2::TokenTree> =
                    m.mac.tokens.clone().into_iter().collect();
                attrs::json_tokens(&tokens).ok_or_else(unfoldable)
            }
            Expr::Block(b) if b.block.stmts.len() == 1 => match tail_expr(&b.block) {
                Some(e) => self.expr(file, module, e),
                None => Err(unfoldable()),
            },
            Expr::Return(r) => r
                .expr
                .as_ref()
                .map_or(Ok(Value::Null), |e| self.expr(file, module, e)),
            Expr::MethodCall(m) => {
                if let Some(value) = self.iterator_step(file, module, m) {
                    return value;
                }
                match (m.method.to_string().as_str(), m.args.is_empty()) {
                    ("to_string" | "to_owned" | "into" | "clone", true) => {
                        self.expr(file, module, &m.receiver)
                    }
                    _ => Err(unfoldable()),
                }
            }
            Expr::Unary(u) if matches!(u.op, syn::UnOp::Deref(_)) => {
                self.expr(file, module, &u.expr)
            }
            Expr::Cast(c) => {
                let value = self.expr(file, module, &c.expr)?;
                let Type::Path(target) = &*c.ty else {
                    return Err(unfoldable());
                };
                let target = path_segments(&target.path).join("::");
                cast(&value, &target).ok_or_else(unfoldable)
            }
            Expr::Array(a) => self.array(file, module, &a.elems),
            // serde writes tuples as arrays, and `()` as null.
            Expr::Tuple(t) if t.elems.is_empty() => Ok(Value::Null),
            Expr::Tuple(t) => self.array(file, module, &t.elems),
            Expr::Call(c) => {
                let Expr::Path(func) = &*c.func else {
                    return Err(unfoldable());
                };
                let segments = expr_path_segments(func);
                // A function of this crate without arguments: its body, folded.
                if c.args.is_empty()
                    && let Some(Resolved::Local(item)) = self.index.resolve(module, &segments)
                    && matches!(self.index.kind(item), ItemKind::Fn(_))
                {
                    return self.local_call(file, &func.path, item);
                }
                let (last, head) = match segments.as_slice() {
                    [.., head, last] => (last.as_str(), head.as_str()),
                    [last] => (last.as_str(), ""),
                    [] => ("", ""),
                };
                match (last, c.args.len()) {
                    ("Some", 1) => self.expr(file, module, &c.args[0]),
                    ("from" | "new", 1) => {
                        let inner = self.expr(file, module, &c.args[0])?;
                        collection_from(head, inner).ok_or_else(unfoldable)
                    }
                    // `Window::default()`, `Quantity::default()`: the type's default.
                    ("default", 0) if !matches!(head, "" | "Default") => {
                        let mut ty = func.path.clone();
                        ty.segments.pop();
                        ty.segments.pop_punct();
                        let ty = Type::Path(syn::TypePath {
                            qself: None,
                            path: ty,
                        });
                        self.type_default(file, module, &ty)
                    }
                    ("new" | "default", 0) => {
                        // `Vec::new()`, `BTreeMap::new()`, `String::new()`.
                        Ok(match head {
                            "Vec" | "VecDeque" | "LinkedList" | "BTreeSet" | "HashSet"
                            | "IndexSet" => Value::Array(Vec::new()),
                            "BTreeMap" | "HashMap" | "IndexMap" => Value::Object(Map::new()),
                            "String" => Value::String(String::new()),
                            _ => return Err(unfoldable()),
                        })
                    }
                    (_, 1) => {
                        let inner = self.expr(file, module, &c.args[0])?;
                        self.newtype_value(module, &segments, inner)
                            .ok_or_else(unfoldable)
                    }
                    _ => Err(unfoldable()),
                }
            }
            Expr::Struct(literal) => {
                let segments = path_segments(&literal.path);
                let mut given = std::collections::HashMap::new();
                for field in &literal.fields {
                    let syn::Member::Named(name) = &field.member else {
                        return Err(unfoldable());
                    };
                    given.insert(name.to_string(), self.expr(file, module, &field.expr)?);
                }
                // `..Default::default()` (or `..T::default()`) fills the rest with field defaults.
                let rest_is_default = literal.rest.as_deref().is_some_and(|rest| {
                    matches!(rest, Expr::Call(c) if c.args.is_empty()
                        && matches!(&*c.func, Expr::Path(p) if p.path.segments.last().is_some_and(|s| s.ident == "default")))
                });
                if literal.rest.is_some() && !rest_is_default {
                    return Err(unfoldable());
                }
                if literal.rest.is_none() && self.variant_of(module, &segments).is_some() {
                    return self
                        .struct_variant(file, module, &segments, given)?
                        .ok_or_else(unfoldable);
                }
                match self.index.resolve(module, &segments) {
                    Some(Resolved::Local(item)) => self.struct_value(file, item, &given, false),
                    Some(Resolved::External(path)) => {
                        library_struct(&path, given).ok_or_else(unfoldable)
                    }
                    None => Err(unfoldable()),
                }
            }
            Expr::Macro(m) if m.mac.path.is_ident("vec") => {
                let elems = m
                    .mac
                    .parse_body_with(
                        syn::punctuated::Punctuated::<Expr, syn::Token![,]>::parse_terminated,
                    )
                    .map_err(|_| unfoldable())?;
                self.array(file, module, &elems)
            }
            Expr::Path(p) => {
                let segments = expr_path_segments(p);
                if segments == ["None"] {
                    return Ok(Value::Null);
                }
                if let [ty, bound] = segments.as_slice()
                    && let Some(value) = integer_bound(ty, bound)
                {
                    return Ok(value);
                }
                match self.index.resolve(module, &segments) {
                    Some(Resolved::Local(item)) => {
                        let item_kind = self.index.kind(item);
                        let item = &self.index.items[item];
                        match item_kind {
                            ItemKind::Const(c) => {
                                let item_file = self.index.file(item).to_path_buf();
                                self.expr(&item_file, &item.module.clone(), &c.expr)
                            }
                            _ => Err(unfoldable()),
                        }
                    }
                    _ => self.enum_variant(module, &segments).ok_or_else(unfoldable),
                }
            }
            _ => Err(unfoldable()),
        }
    }
}
