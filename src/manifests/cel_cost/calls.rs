//! The cost of a call: Kubernetes' library estimates first (apiserver's `EstimateCallCost`),
//! then cel-go's own for the standard overloads (`checker/cost.go`'s `functionCost`), else 1
//! plus the arguments.

use cel::common::ast::{CallExpr, Expr, IdedExpr, LiteralValue};

use super::estimate::{Coster, Entry, Range, Ty};

const STRING_TRAVERSAL: f64 = 0.1;
const REGEX_LENGTH: f64 = 0.25;

/// Functions whose cost is 1 plus their arguments, with their result type.
fn plain(name: &str) -> Option<Ty<'static>> {
    Some(match name {
        "size" | "int" | "uint" | "getFullYear" | "getMonth" | "getDate" | "getDayOfMonth"
        | "getDayOfWeek" | "getDayOfYear" | "getHours" | "getMinutes" | "getSeconds"
        | "getMilliseconds" | "sign" | "asInteger" | "compareTo" | "major" | "minor" | "patch"
        | "prefixLength" | "family" => Ty::Int,
        "double" | "asApproximateFloat" => Ty::Double,
        "bool"
        | "!_"
        | "@not_strictly_false"
        | "isURL"
        | "isInteger"
        | "isGreaterThan"
        | "isLessThan"
        | "isUnspecified"
        | "isLoopback"
        | "isLinkLocalMulticast"
        | "isLinkLocalUnicast"
        | "isGlobalUnicast" => Ty::Bool,
        "duration" => Ty::Duration,
        "timestamp" => Ty::Timestamp,
        "charAt" | "getScheme" | "getHostname" | "getHost" | "getPort" | "getEscapedPath" => {
            Ty::String
        }
        "add" | "sub" | "masked" | "getQuery" | "type" => Ty::Opaque,
        _ => return None,
    })
}

impl<'a> Coster<'a> {
    pub(super) fn cost_call(&mut self, e: &IdedExpr, call: &CallExpr) -> (Range, Ty<'a>) {
        let name = call.func_name.as_str();
        if name == "dyn" && call.target.is_none() && call.args.len() == 1 {
            let cost = Range::fixed(1).add(self.cost(&call.args[0]));
            if let Some(size) = self.size(&call.args[0]) {
                self.sizes.insert(e.id, size);
            }
            if let Some(entry) = self.entry(&call.args[0]) {
                self.entries.insert(e.id, entry);
            }
            return (cost, Ty::Dyn);
        }
        let costs: Vec<Range> = call.args.iter().map(|a| self.cost(a)).collect();
        let args = costs.iter().fold(Range::fixed(0), |sum, c| sum.add(*c));
        let target = call.target.as_deref();
        let target_cost = target.map_or(Range::fixed(0), |t| self.cost(t));
        let tys: Vec<Ty<'a>> = call.args.iter().map(|a| self.ty(a)).collect();
        let target_ty = target.map(|t| self.ty(t));
        let arg = |i: usize| &call.args[i];
        let (fn_cost, size, ty) = match (name, target, call.args.len()) {
            // Kubernetes' library.
            ("isSorted" | "sum" | "max" | "min" | "indexOf" | "lastIndexOf", Some(t), _) => {
                let target_ty = target_ty.clone().unwrap_or(Ty::Dyn);
                let cost = match &target_ty {
                    Ty::List(item) => {
                        let mut element = Range::fixed(1);
                        if item.is_text() {
                            let size = self.element_size(t);
                            element = element.add(size.factor(STRING_TRAVERSAL));
                        }
                        self.size_or_unknown(t).mul(element)
                    }
                    _ => self.size_or_unknown(t).factor(STRING_TRAVERSAL),
                };
                let ty = match name {
                    "isSorted" => Ty::Bool,
                    "indexOf" | "lastIndexOf" => Ty::Int,
                    _ => target_ty.element(),
                };
                (cost.add(args), None, ty)
            }
            ("url" | "jsonpatch.escapeKey", None, 1) => {
                let size = self.size_or_unknown(arg(0));
                let ty = if name == "url" {
                    Ty::Opaque
                } else {
                    Ty::String
                };
                (size.factor(STRING_TRAVERSAL).add(args), Some(size), ty)
            }
            ("lowerAscii" | "upperAscii" | "substring" | "trim", Some(t), _) => {
                let size = self.size_or_unknown(t);
                (
                    size.factor(STRING_TRAVERSAL).add(args),
                    Some(size),
                    Ty::String,
                )
            }
            ("replace", Some(t), n) if n >= 2 => {
                let size = self.size_or_unknown(t);
                let from = self.size_or_unknown(arg(0));
                let with = self.size_or_unknown(arg(1));
                let result = replaced_size(size, from, with);
                (
                    size.factor(2.0 * STRING_TRAVERSAL).add(args),
                    Some(result),
                    Ty::String,
                )
            }
            ("split", Some(t), n) => {
                let size = self.size_or_unknown(t);
                let mut max = size.max;
                if n > 1
                    && let Expr::Literal(LiteralValue::Int(limit)) = &arg(1).expr
                {
                    max = u64::try_from(**limit).unwrap_or(0);
                }
                let result = Range { min: 0, max };
                (
                    size.factor(2.0 * STRING_TRAVERSAL).add(args),
                    Some(result),
                    Ty::List(Box::new(Ty::String)),
                )
            }
            ("join", Some(t), n) => {
                let list = self.size_or_unknown(t);
                let mut size = Range::fixed(0);
                if matches!(target_ty, Some(Ty::List(_))) {
                    let element = self.element_size(t);
                    size = list.mul(element);
                }
                if n > 0 {
                    let separator = self.size_or_unknown(arg(0));
                    let count = Range {
                        min: list.min.saturating_sub(1),
                        max: list.max.saturating_sub(1),
                    };
                    size = size.add(separator.mul(count));
                }
                (
                    size.factor(STRING_TRAVERSAL).add(args),
                    Some(size),
                    Ty::String,
                )
            }
            ("find" | "findAll", Some(t), n) if n >= 1 => {
                let size = self.size_or_unknown(t);
                let text = size.add(Range::fixed(1)).factor(STRING_TRAVERSAL);
                let regex = self.size_or_unknown(arg(0)).factor(REGEX_LENGTH);
                let ty = if name == "find" {
                    Ty::String
                } else {
                    Ty::List(Box::new(Ty::String))
                };
                (
                    text.mul(regex).add(args),
                    Some(Range {
                        min: 0,
                        max: size.max,
                    }),
                    ty,
                )
            }
            (
                "cidr" | "isIP" | "isCIDR" | "quantity" | "isQuantity" | "semver" | "isSemver",
                _,
                n,
            ) if n >= 1 => {
                let cost = self.size_or_unknown(arg(0)).factor(STRING_TRAVERSAL);
                let ty = if name.starts_with("is") {
                    Ty::Bool
                } else {
                    Ty::Opaque
                };
                (cost.add(args), None, ty)
            }
            ("ip", Some(_), 0) => (Range::fixed(1).add(args), None, Ty::Opaque),
            ("ip", _, n) if n >= 1 => {
                let cost = self.size_or_unknown(arg(0)).factor(STRING_TRAVERSAL);
                (cost.add(args), None, Ty::Opaque)
            }
            ("containsIP" | "containsCIDR", Some(_), 1) => {
                let ip = Range { min: 4, max: 16 };
                let mut cost = ip.add(ip).factor(STRING_TRAVERSAL);
                if name == "containsCIDR" {
                    cost = cost.add(ip.factor(STRING_TRAVERSAL)).add(Range::fixed(1));
                }
                if tys[0] == Ty::String {
                    cost = cost.add(self.size_or_unknown(arg(0)).factor(STRING_TRAVERSAL));
                }
                (cost.add(args), None, Ty::Bool)
            }
            ("_==_" | "_!=_", None, 2) if tys[0] == Ty::Opaque && tys[1] == Ty::Opaque => {
                (Range::fixed(1).add(args), None, Ty::Bool)
            }
            // cel-go's standard overloads.
            ("format", Some(t), 1) if target_ty.as_ref().is_some_and(Ty::is_text) => {
                let cost = self.size_or_unknown(t).factor(STRING_TRAVERSAL);
                (cost.add(args), None, Ty::String)
            }
            ("bytes", None, 1) if tys[0] == Ty::String => {
                let size = self.size_or_unknown(arg(0));
                let result = Range {
                    min: size.min,
                    max: size.max.saturating_mul(4),
                };
                (
                    size.factor(STRING_TRAVERSAL).add(args),
                    Some(result),
                    Ty::Bytes,
                )
            }
            ("string", None, 1) if tys[0] == Ty::Bytes => {
                let size = self.size_or_unknown(arg(0));
                let result = Range {
                    min: size.min / 4,
                    max: size.max,
                };
                (
                    size.factor(STRING_TRAVERSAL).add(args),
                    Some(result),
                    Ty::String,
                )
            }
            ("string", None, 1) => (Range::fixed(1).add(args), None, Ty::String),
            ("startsWith" | "endsWith", Some(_), 1) => {
                let cost = self.size_or_unknown(arg(0)).factor(STRING_TRAVERSAL);
                (cost.add(args), None, Ty::Bool)
            }
            ("@in", None, 2) => {
                let cost = if matches!(tys[1], Ty::Map(_) | Ty::Object(_)) {
                    Range::fixed(1)
                } else {
                    self.size_or_unknown(arg(1))
                };
                (cost.add(args), None, Ty::Bool)
            }
            ("matches", Some(t), 1) => {
                let text = self
                    .size_or_unknown(t)
                    .add(Range::fixed(1))
                    .factor(STRING_TRAVERSAL);
                let regex = self.size_or_unknown(arg(0)).factor(REGEX_LENGTH);
                (text.mul(regex).add(args), None, Ty::Bool)
            }
            ("matches", None, 2) => (Range::fixed(1).add(args), None, Ty::Bool),
            ("contains", Some(t), 1) => {
                let text = self.size_or_unknown(t).factor(STRING_TRAVERSAL);
                let sub = self.size_or_unknown(arg(0)).factor(STRING_TRAVERSAL);
                (text.mul(sub).add(args), None, Ty::Bool)
            }
            ("_&&_" | "_||_", None, 2) => {
                let cost = Range {
                    min: costs[0].min,
                    max: costs[0].add(costs[1]).max,
                };
                (cost, None, Ty::Bool)
            }
            ("_?_:_", None, 3) => {
                let size = self
                    .size_or_unknown(arg(1))
                    .union(self.size_or_unknown(arg(2)));
                self.union_entries(e, arg(1), arg(2));
                let ty = if tys[1] == Ty::Dyn {
                    tys[2].clone()
                } else {
                    tys[1].clone()
                };
                (costs[0].add(costs[1].union(costs[2])), Some(size), ty)
            }
            ("_+_", None, 2) => {
                let (left, right) = (self.size_or_unknown(arg(0)), self.size_or_unknown(arg(1)));
                let size = left.add(right);
                self.union_entries(e, arg(0), arg(1));
                let known = if tys[0] == Ty::Dyn {
                    tys[1].clone()
                } else {
                    tys[0].clone()
                };
                match known {
                    Ty::List(_) => {
                        let ty = match (&tys[0], &tys[1]) {
                            (Ty::List(item), right) if **item == Ty::Dyn => right.clone(),
                            (left, _) => left.clone(),
                        };
                        (Range::fixed(1).add(args), Some(size), ty)
                    }
                    Ty::String | Ty::Bytes | Ty::Dyn => {
                        (size.factor(STRING_TRAVERSAL).add(args), Some(size), known)
                    }
                    other => (Range::fixed(1).add(args), Some(size), other),
                }
            }
            ("_<_" | "_<=_" | "_>_" | "_>=_" | "_==_" | "_!=_", None, 2) => {
                let text = tys[0].is_text()
                    || tys[1].is_text()
                    || (tys[0] == Ty::Dyn && tys[1] == Ty::Dyn);
                if text || name == "_==_" || name == "_!=_" {
                    let (left, right) =
                        (self.size_or_unknown(arg(0)), self.size_or_unknown(arg(1)));
                    let smallest = left.max.min(right.max);
                    let cost = Range {
                        min: u64::from(smallest > 0),
                        max: smallest,
                    };
                    (cost.factor(STRING_TRAVERSAL).add(args), None, Ty::Bool)
                } else {
                    (Range::fixed(1).add(args), None, Ty::Bool)
                }
            }
            ("_[_]", None, 2) => {
                let container = tys[0].clone();
                let step = if matches!(container, Ty::Map(_) | Ty::Object(_)) {
                    "@values"
                } else {
                    "@items"
                };
                let mut path = self.path(arg(0));
                path.push(step.into());
                self.paths.insert(e.id, path);
                let size = self.entry(arg(0)).map(|entry| entry.value);
                let ty = match &container {
                    Ty::Object(_) => Ty::Dyn,
                    other => other.element(),
                };
                (Range::fixed(1).add(args), size, ty)
            }
            ("-_" | "_-_" | "_*_" | "_/_" | "_%_", None, _) => {
                let ty = tys
                    .iter()
                    .find(|t| **t != Ty::Dyn)
                    .cloned()
                    .unwrap_or(Ty::Dyn);
                (Range::fixed(1).add(args), None, ty)
            }
            (other, _, _) => {
                let ty = match plain(other) {
                    Some(ty) => ty,
                    None => {
                        self.unknown
                            .get_or_insert_with(|| format!("the function `{other}`"));
                        Ty::Dyn
                    }
                };
                (Range::fixed(1).add(args), None, ty)
            }
        };
        let size = size.or_else(|| self.size(e));
        if let Some(size) = size {
            self.sizes.insert(e.id, size);
        }
        (target_cost.add(fn_cost), ty)
    }
}

impl Coster<'_> {
    /// `e` holds what either `a` or `b` holds (cel-go's `entrySizeEstimate.union`), where both
    /// are known.
    fn union_entries(&mut self, e: &IdedExpr, a: &IdedExpr, b: &IdedExpr) {
        if let (Some(a), Some(b)) = (self.entry(a), self.entry(b)) {
            let value = a.value.union(b.value);
            self.entries.insert(
                e.id,
                Entry {
                    is_list: a.is_list,
                    value,
                },
            );
        }
    }

    /// The size of a list's elements as Kubernetes' library sizes them (`listElementNode`):
    /// from the schema at the list's path, unknown for a list without one (one a
    /// comprehension built).
    fn element_size(&self, list: &IdedExpr) -> Range {
        let mut path = self.path(list);
        path.push("@items".into());
        match (path.len() > 1).then(|| self.decl_at(&path)).flatten() {
            Some(node) => Range {
                min: 0,
                max: node.max_elements.max(0) as u64,
            },
            None => Range::UNKNOWN,
        }
    }
}

/// The size of `replace`'s result, as apiserver's estimate computes it.
fn replaced_size(size: Range, from: Range, with: Range) -> Range {
    let mut count = Range::fixed(0);
    let mut kept = Range::fixed(0);
    if from.min == 0 {
        count.max = if size.max < u64::MAX {
            size.max + 1
        } else {
            size.max
        };
        kept.max = size.max;
    } else if with.max <= from.min {
        kept.max = size.max;
    } else {
        count.max = (size.max as f64 / from.min as f64).ceil() as u64;
    }
    if from.max == 0 {
        count.min = if size.min < u64::MAX {
            size.min + 1
        } else {
            size.min
        };
        kept.min = size.min;
    } else if from.max <= with.min {
        kept.min = size.min;
    } else {
        count.min = (size.min as f64 / from.max as f64).ceil() as u64;
    }
    count.mul(with).add(kept)
}
