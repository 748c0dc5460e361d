//! The static cost of one CEL expression, as cel-go's `checker.Cost` estimates it with the
//! API server's size estimator and Kubernetes' library costs (apiserver's
//! `pkg/cel/library/cost.go`). Types are inferred as far as the cost needs them: which
//! overload a call resolves to (strings compare by length, lists are searched by size) and
//! whether a selection reads a map or an object.
//!
//! A function this estimator does not know makes the estimate unknown rather than wrong.

use std::collections::HashMap;

use cel::common::ast::{EntryExpr, Expr, IdedExpr, LiteralValue};

use super::decl::{Decl, Kind};

/// cel-go's costs (`common/cost.go`).
const LIST_CREATE: u64 = 10;
const MAP_CREATE: u64 = 30;

/// A [min, max] range of sizes or costs, saturating at `u64::MAX` as cel-go's does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Range {
    pub min: u64,
    pub max: u64,
}

impl Range {
    pub(super) const UNKNOWN: Range = Range {
        min: 0,
        max: u64::MAX,
    };

    pub(super) fn fixed(n: u64) -> Range {
        Range { min: n, max: n }
    }

    pub(super) fn add(self, o: Range) -> Range {
        Range {
            min: self.min.saturating_add(o.min),
            max: self.max.saturating_add(o.max),
        }
    }

    pub(super) fn mul(self, o: Range) -> Range {
        Range {
            min: self.min.saturating_mul(o.min),
            max: self.max.saturating_mul(o.max),
        }
    }

    pub(super) fn factor(self, f: f64) -> Range {
        let scale = |x: u64| -> u64 {
            let product = (x as f64 * f).ceil();
            if product >= 18_446_744_073_709_551_616.0 {
                u64::MAX
            } else {
                product as u64
            }
        };
        Range {
            min: scale(self.min),
            max: scale(self.max),
        }
    }

    pub(super) fn union(self, o: Range) -> Range {
        Range {
            min: self.min.min(o.min),
            max: self.max.max(o.max),
        }
    }
}

/// The types the estimate tells apart.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Ty<'a> {
    Bool,
    Int,
    Double,
    String,
    Bytes,
    Duration,
    Timestamp,
    Null,
    List(Box<Ty<'a>>),
    Map(Box<Ty<'a>>),
    Object(&'a Decl),
    /// Kubernetes' library types (quantity, url, ip, ...): compared in O(1).
    Opaque,
    Dyn,
}

fn ty_of(decl: &Decl) -> Ty<'_> {
    match &decl.kind {
        Kind::Bool => Ty::Bool,
        Kind::Int => Ty::Int,
        Kind::Double => Ty::Double,
        Kind::String => Ty::String,
        Kind::Bytes => Ty::Bytes,
        Kind::Duration => Ty::Duration,
        Kind::Timestamp => Ty::Timestamp,
        Kind::IntOrString => Ty::Dyn,
        Kind::List(item) => Ty::List(Box::new(ty_of(item))),
        Kind::Map(value) => Ty::Map(Box::new(ty_of(value))),
        Kind::Object(_) => Ty::Object(decl),
    }
}

impl<'a> Ty<'a> {
    pub(super) fn is_scalar(&self) -> bool {
        matches!(
            self,
            Ty::Bool | Ty::Int | Ty::Double | Ty::Duration | Ty::Timestamp
        )
    }

    pub(super) fn is_text(&self) -> bool {
        matches!(self, Ty::String | Ty::Bytes)
    }

    pub(super) fn element(&self) -> Ty<'a> {
        match self {
            Ty::List(item) | Ty::Map(item) => (**item).clone(),
            _ => Ty::Dyn,
        }
    }
}

#[derive(Debug, Clone)]
struct Local<'a> {
    path: Vec<String>,
    size: Option<Range>,
    entry: Option<Entry>,
    ty: Ty<'a>,
}

/// What a list or map literal (or a comprehension building one) holds.
#[derive(Debug, Clone, Copy)]
pub(super) struct Entry {
    pub(super) is_list: bool,
    pub(super) value: Range,
}

pub(super) struct Coster<'a> {
    root: &'a Decl,
    pub(super) paths: HashMap<u64, Vec<String>>,
    pub(super) sizes: HashMap<u64, Range>,
    pub(super) entries: HashMap<u64, Entry>,
    types: HashMap<u64, Ty<'a>>,
    locals: HashMap<String, Vec<Local<'a>>>,
    pub(super) unknown: Option<String>,
    /// Paths the estimate sized, each with whether the schema bounds it (else the request
    /// size limit does).
    pub(super) sized: Vec<(Vec<String>, bool)>,
}

/// The most an expression over `self` (of type `root`) can cost, or the function that keeps
/// it from being estimated.
pub fn max_cost(expression: &IdedExpr, root: &Decl) -> Result<Estimate, String> {
    let mut coster = Coster {
        root,
        paths: HashMap::new(),
        sizes: HashMap::new(),
        entries: HashMap::new(),
        types: HashMap::new(),
        locals: HashMap::new(),
        unknown: None,
        sized: Vec::new(),
    };
    let cost = coster.cost(expression);
    match coster.unknown {
        Some(why) => Err(why),
        None => {
            // Fields without a bound first: they are what a user forgot.
            let mut sized = coster.sized;
            sized.sort_by_key(|(_, bounded)| *bounded);
            Ok(Estimate {
                max: cost.max,
                sized,
            })
        }
    }
}

/// An expression's most cost, and the schema paths (below the rule's node) whose sizes it
/// grew with, those without a bound in the schema first.
#[derive(Debug, Clone)]
pub struct Estimate {
    pub max: u64,
    pub sized: Vec<(Vec<String>, bool)>,
}

impl<'a> Coster<'a> {
    pub(super) fn ty(&self, e: &IdedExpr) -> Ty<'a> {
        self.types.get(&e.id).cloned().unwrap_or(Ty::Dyn)
    }

    pub(super) fn path(&self, e: &IdedExpr) -> Vec<String> {
        if let Expr::Ident(name) = &e.expr
            && let Some(local) = self.local(name)
        {
            return local.path.clone();
        }
        self.paths.get(&e.id).cloned().unwrap_or_default()
    }

    fn local(&self, name: &str) -> Option<&Local<'a>> {
        self.locals.get(name).and_then(|stack| stack.last())
    }

    fn push(&mut self, name: &str, local: Local<'a>) {
        self.locals.entry(name.to_owned()).or_default().push(local);
    }

    fn pop(&mut self, name: &str) {
        if let Some(stack) = self.locals.get_mut(name) {
            stack.pop();
        }
    }

    /// The schema node a path names (a variable, then fields, `@items`, `@values`). As the
    /// API server's size estimator does, the first step is taken for `self` whatever it is:
    /// the elements of a list a comprehension built (`["@items"]`) are sized as `self`.
    pub(super) fn decl_at(&self, path: &[String]) -> Option<&'a Decl> {
        let (_, rest) = path.split_first()?;
        let mut node = self.root;
        for step in rest {
            node = match (step.as_str(), &node.kind) {
                ("@items" | "@values", Kind::List(item) | Kind::Map(item)) => item,
                (_, Kind::Object(fields)) => fields.get(step)?,
                _ => return None,
            };
        }
        Some(node)
    }

    /// cel-go's `computeSize`: a size set while costing, a literal's, the schema's bound for
    /// the path, 1 for scalars, or a local variable's.
    pub(super) fn size(&mut self, e: &IdedExpr) -> Option<Range> {
        if let Some(size) = self.sizes.get(&e.id) {
            return Some(*size);
        }
        let literal = match &e.expr {
            Expr::Literal(LiteralValue::String(s)) => Some(s.chars().count() as u64),
            Expr::Literal(LiteralValue::Bytes(b)) => Some(b.len() as u64),
            Expr::Literal(_) => Some(1),
            Expr::List(list) => Some(list.elements.len() as u64),
            Expr::Map(map) => Some(map.entries.len() as u64),
            _ => None,
        };
        if let Some(n) = literal {
            return Some(Range::fixed(n));
        }
        let path = self.path(e);
        if !path.is_empty()
            && let Some(node) = self.decl_at(&path)
        {
            if !self.sized.iter().any(|(p, _)| *p == path) && node.max_elements > 0 {
                self.sized.push((path.clone(), node.bounded));
            }
            let size = Range {
                min: 0,
                max: node.max_elements.max(0) as u64,
            };
            self.sizes.insert(e.id, size);
            return Some(size);
        }
        if self.ty(e).is_scalar() {
            return Some(Range::fixed(1));
        }
        if let Expr::Ident(name) = &e.expr {
            return self.local(name).and_then(|l| l.size);
        }
        None
    }

    pub(super) fn size_or_unknown(&mut self, e: &IdedExpr) -> Range {
        self.size(e).unwrap_or(Range::UNKNOWN)
    }

    pub(super) fn entry(&self, e: &IdedExpr) -> Option<Entry> {
        if let Some(entry) = self.entries.get(&e.id) {
            return Some(*entry);
        }
        if let Expr::Ident(name) = &e.expr {
            return self.local(name).and_then(|l| l.entry);
        }
        None
    }

    pub(super) fn cost(&mut self, e: &IdedExpr) -> Range {
        let (cost, ty) = match &e.expr {
            Expr::Literal(value) => (
                Range::fixed(0),
                match value {
                    LiteralValue::Boolean(_) => Ty::Bool,
                    LiteralValue::Int(_) | LiteralValue::UInt(_) => Ty::Int,
                    LiteralValue::Double(_) => Ty::Double,
                    LiteralValue::String(_) => Ty::String,
                    LiteralValue::Bytes(_) => Ty::Bytes,
                    LiteralValue::Null => Ty::Null,
                },
            ),
            Expr::Ident(name) => self.cost_ident(e, name),
            Expr::Select(select) => {
                let operand_cost = self.cost(&select.operand);
                if select.test {
                    // Kubernetes gives presence tests no cost of their own.
                    (operand_cost, Ty::Bool)
                } else {
                    let operand = self.ty(&select.operand);
                    let mut path = self.path(&select.operand);
                    path.push(select.field.clone());
                    self.paths.insert(e.id, path);
                    let (extra, ty) = match &operand {
                        Ty::Object(decl) => (
                            1,
                            match &decl.kind {
                                Kind::Object(fields) => {
                                    fields.get(&select.field).map_or(Ty::Dyn, ty_of)
                                }
                                _ => Ty::Dyn,
                            },
                        ),
                        Ty::Map(value) => (1, (**value).clone()),
                        _ => (0, Ty::Dyn),
                    };
                    (operand_cost.add(Range::fixed(extra)), ty)
                }
            }
            Expr::List(list) => {
                let mut sum = Range::fixed(0);
                let mut item = Range {
                    min: if list.elements.is_empty() {
                        0
                    } else {
                        u64::MAX
                    },
                    max: 0,
                };
                let mut item_ty = Ty::Dyn;
                for element in &list.elements {
                    sum = sum.add(self.cost(element));
                    item = item.union(self.size_or_unknown(element));
                    item_ty = self.ty(element);
                }
                self.entries.insert(
                    e.id,
                    Entry {
                        is_list: true,
                        value: item,
                    },
                );
                (
                    sum.add(Range::fixed(LIST_CREATE)),
                    Ty::List(Box::new(item_ty)),
                )
            }
            Expr::Map(map) => {
                let mut sum = Range::fixed(0);
                let mut value = Range {
                    min: if map.entries.is_empty() { 0 } else { u64::MAX },
                    max: 0,
                };
                for entry in &map.entries {
                    if let EntryExpr::MapEntry(entry) = &entry.expr {
                        sum = sum.add(self.cost(&entry.key)).add(self.cost(&entry.value));
                        value = value.union(self.size_or_unknown(&entry.value));
                    }
                }
                self.entries.insert(
                    e.id,
                    Entry {
                        is_list: false,
                        value,
                    },
                );
                (
                    sum.add(Range::fixed(MAP_CREATE)),
                    Ty::Map(Box::new(Ty::Dyn)),
                )
            }
            Expr::Struct(_) | Expr::Unspecified => {
                self.unknown
                    .get_or_insert_with(|| "a message literal".into());
                (Range::fixed(0), Ty::Dyn)
            }
            Expr::Comprehension(c) => self.cost_comprehension(e, c),
            Expr::Call(call) => self.cost_call(e, call),
        };
        self.types.insert(e.id, ty);
        cost
    }

    fn cost_ident(&mut self, e: &IdedExpr, name: &str) -> (Range, Ty<'a>) {
        let ty = match self.local(name) {
            Some(local) => local.ty.clone(),
            None if name == "self" || name == "oldSelf" => {
                self.paths.insert(e.id, vec![name.to_owned()]);
                ty_of(self.root)
            }
            None => {
                self.unknown
                    .get_or_insert_with(|| format!("the variable `{name}`"));
                Ty::Dyn
            }
        };
        (Range::fixed(1), ty)
    }

    fn cost_comprehension(
        &mut self,
        e: &IdedExpr,
        c: &cel::common::ast::ComprehensionExpr,
    ) -> (Range, Ty<'a>) {
        let mut sum = self.cost(&c.iter_range);
        sum = sum.add(self.cost(&c.accu_init));
        let accu = Local {
            path: self.path(&c.accu_init),
            size: self.size(&c.accu_init),
            entry: self.entry(&c.accu_init),
            ty: self.ty(&c.accu_init),
        };
        self.push(&c.accu_var, accu);
        let range_ty = self.ty(&c.iter_range);
        let range_entry = self.entry(&c.iter_range);
        let is_list = range_entry.map_or(matches!(range_ty, Ty::List(_)), |e| e.is_list);
        let mut path = self.path(&c.iter_range);
        let (step, size, ty) = if is_list {
            ("@items", range_entry.map(|e| e.value), range_ty.element())
        } else {
            // Map keys: a string, sized as the API server sizes map keys (by type: no bound).
            ("@keys", None, Ty::String)
        };
        path.push(step.to_owned());
        self.push(
            &c.iter_var,
            Local {
                path,
                size,
                entry: None,
                ty,
            },
        );
        let loop_cost = self.cost(&c.loop_cond);
        let step_cost = self.cost(&c.loop_step);
        let step_ty = self.ty(&c.loop_step);
        self.pop(&c.iter_var);
        sum = sum.add(self.cost(&c.result));
        self.pop(&c.accu_var);
        let count = self.size_or_unknown(&c.iter_range);
        sum = sum.add(count.mul(step_cost.add(loop_cost)));
        let ty = match &c.accu_init.expr {
            Expr::List(_) | Expr::Map(_) => {
                self.sizes.insert(e.id, count);
                if let Some(entry) = self.entry(&c.loop_step) {
                    self.entries.insert(e.id, entry);
                }
                step_ty
            }
            _ => {
                if let Some(size) = self.size(&c.accu_init) {
                    self.sizes.insert(e.id, size);
                }
                self.ty(&c.result)
            }
        };
        (sum, ty)
    }
}
