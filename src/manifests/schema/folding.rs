//! Attribute values the builder folds before it uses them: `transform` functions, examples,
//! validation values naming the crate's constants and regexes.

use super::*;

impl Builder<'_> {
    /// A container's or variant's attributes, with `transform` functions folded.
    pub(super) fn container_attrs(
        &self,
        file: &Path,
        module: &str,
        attrs: &[syn::Attribute],
    ) -> Result<ContainerAttrs, SourceError> {
        let mut cattrs = attrs::container_attrs(attrs).map_err(|e| syn_error(file, e))?;
        self.resolve_validations(file, module, &mut cattrs.meta.validations)?;
        self.fold_examples(file, module, &mut cattrs.meta.examples)?;
        report_unsupported(file, &cattrs.meta)?;
        self.fold_transforms(file, module, &mut cattrs.meta)?;
        Ok(cattrs)
    }

    /// Folds each `#[schemars(transform = f)]` into the statements of `f`.
    pub(super) fn fold_transforms(
        &self,
        file: &Path,
        module: &str,
        meta: &mut Metadata,
    ) -> Result<(), SourceError> {
        for (path, span) in std::mem::take(&mut meta.transforms) {
            let ops = crate::manifests::fold::transform_fn::fold(self.index, module, &path)
                .map_err(|at| {
                    let error = SourceError::at(
                        file,
                        span,
                        format!(
                            "kopgen cannot fold `transform = {}` statically",
                            path.join("::")
                        ),
                    );
                    let error = match at {
                        Some((item_file, span)) => error.with_location(&item_file, span),
                        None => error,
                    };
                    error
                        .help(crate::manifests::fold::transform_fn::HELP)
                        .unsupported()
                })?;
            meta.transform_ops.extend(ops);
        }
        Ok(())
    }

    /// A field's attributes, with `validate(regex(path = ...))` looked up in the sources.
    pub(super) fn field_attrs(
        &self,
        file: &Path,
        module: &str,
        attrs: &[syn::Attribute],
    ) -> Result<FieldAttrs, SourceError> {
        let mut fattrs = attrs::field_attrs(attrs).map_err(|e| syn_error(file, e))?;
        self.resolve_validations(file, module, &mut fattrs.meta.validations)?;
        self.fold_examples(file, module, &mut fattrs.meta.examples)?;
        report_unsupported(file, &fattrs.meta)?;
        self.fold_transforms(file, module, &mut fattrs.meta)?;
        Ok(fattrs)
    }

    /// Folds `example = ...` values that are not literals, as a default is folded: schemars
    /// serializes whatever the expression evaluates to.
    pub(super) fn fold_examples(
        &self,
        file: &Path,
        module: &str,
        examples: &mut [Folded],
    ) -> Result<(), SourceError> {
        const WHAT: &str = "kopgen cannot fold this example statically";
        const HELP: &str = "write a literal, a constant of this crate, or a function kopgen folds as a default (literals, `String::from`, `.into()`, `vec![..]`, struct literals)";
        examples
            .iter_mut()
            .try_for_each(|example| self.fold_expr(file, module, example, WHAT, HELP))
    }

    /// Folds `value` if it is still an expression, as [`crate::manifests::fold::fold_expr`] folds a
    /// default; an error says `what` and `help`.
    pub(super) fn fold_expr(
        &self,
        file: &Path,
        module: &str,
        value: &mut Folded,
        what: &str,
        help: &str,
    ) -> Result<(), SourceError> {
        if let Folded::Expr(expr) = value {
            let span = expr.span();
            let folded = crate::manifests::fold::fold_expr(self.index, file, module, expr)
                .map_err(|e| {
                    let reworded = e.reworded(what).help(help);
                    if e.unsupported {
                        reworded.unsupported()
                    } else {
                        reworded
                    }
                })?;
            *value = Folded::Value(folded, span);
        }
        Ok(())
    }

    /// Folds what validations name in the sources: regex statics and constants.
    pub(super) fn resolve_validations(
        &self,
        file: &Path,
        module: &str,
        validations: &mut [Validation],
    ) -> Result<(), SourceError> {
        for validation in validations {
            match validation {
                Validation::Inner(inner) => self.resolve_validations(file, module, inner)?,
                Validation::RegexPath { path, span } => {
                    let pattern = regex_pattern(self.index, module, path).ok_or_else(|| {
                        SourceError::at(
                            file,
                            *span,
                            format!("kopgen cannot find the pattern of `{}`", path.join("::")),
                        )
                        .help(
                            "point `path` at a `const NAME: &str = \"...\"` or a \
                             `static NAME: LazyLock<Regex> = LazyLock::new(|| Regex::new(\"...\").unwrap())` \
                             in this crate, or write #[schemars(regex(pattern = \"...\"))]",
                        )
                        .unsupported()
                    })?;
                    *validation = Validation::Pattern(Folded::Value(pattern.into(), *span));
                }
                Validation::Range { min, max } => {
                    for bound in [min, max].into_iter().flatten() {
                        self.fold_value(file, module, bound, Expect::Number)?;
                    }
                }
                Validation::Length { min, max, equal } => {
                    for bound in [min, max, equal].into_iter().flatten() {
                        self.fold_value(file, module, bound, Expect::Length)?;
                    }
                }
                Validation::Pattern(value) | Validation::Contains(value) => {
                    self.fold_value(file, module, value, Expect::Text)?;
                }
                Validation::Format(_) => {}
            }
        }
        Ok(())
    }

    /// Folds an attribute value written as an expression (`MAX_LEN`, `LIMIT as u64`) with the
    /// crate's constants, as the compiler would; a pattern may also name a regex static.
    pub(super) fn fold_value(
        &self,
        file: &Path,
        module: &str,
        value: &mut Folded,
        expect: Expect,
    ) -> Result<(), SourceError> {
        // A pattern may name a regex static.
        if let (Expect::Text, Folded::Expr(expr)) = (&expect, &*value)
            && let syn::Expr::Path(p) = &**expr
            && let Some(pattern) = regex_pattern(self.index, module, &path_segments(&p.path))
        {
            *value = Folded::Value(Value::String(pattern), expr.span());
        }
        const WHAT: &str = "kopgen cannot fold this attribute value statically";
        const HELP: &str = "write a literal, or a constant of this crate (`const MAX: u64 = 63;`) that kopgen can fold";
        self.fold_expr(file, module, value, WHAT, HELP)?;
        let Folded::Value(folded, span) = value else {
            return Ok(());
        };
        let fits = match expect {
            Expect::Number => folded.is_number(),
            Expect::Length => folded.is_u64(),
            Expect::Text => folded.is_string(),
        };
        if !fits {
            return Err(SourceError::at(
                file,
                *span,
                format!("{folded} is not {}", expect.what()),
            ));
        }
        Ok(())
    }
}
