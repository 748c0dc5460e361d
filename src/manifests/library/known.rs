//! Library types whose schema is given, not derived: std, serde_json, chrono, jiff, and every
//! k8s-openapi type. Schemas come from the real `JsonSchema` impls of those crates, so kopgen
//! agrees with them by construction.
//!
//! Generic library types (`Option<T>`, `Vec<T>`, maps, ...) are instantiated with *slots*:
//! placeholder types whose schema is whatever kopgen computed for the type argument. That lets
//! schemars' own container impls run on argument schemas that only exist at run time. Where an
//! impl only places the argument's schema (`Vec<T>`: `"items": T`), the slot holds a small
//! stand-in, and the argument is moved into its place afterwards: schemars' `json_schema!`
//! would copy it by serializing it, and a `Vec<Container>` is thousands of nodes.

use std::{borrow::Cow, cell::RefCell};

use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde_json::Value;

pub use super::k8s_types::SchemaFn;

thread_local! {
    static SLOTS: RefCell<Vec<Vec<Schema>>> = const { RefCell::new(Vec::new()) };
}

/// A type argument whose schema was computed by kopgen.
struct Slot<const N: usize>;

impl<const N: usize> JsonSchema for Slot<N> {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> Cow<'static, str> {
        format!("KopgenSlot{N}").into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        // A real schema is read once (by `Option<T>`, which looks into it): move it out rather
        // than cloning it. A stand-in may be read more than once (`Bound<T>`, `Range<T>`).
        SLOTS.with(|slots| {
            let mut slots = slots.borrow_mut();
            match slots.last_mut().and_then(|frame| frame.get_mut(N)) {
                Some(schema) if stand_in_for(schema.as_value()).is_some() => schema.clone(),
                Some(schema) => std::mem::take(schema),
                None => Schema::default(),
            }
        })
    }
}

/// The key of a stand-in's only entry: the number of the argument it stands for.
const STAND_IN: &str = "$kopgen-argument";

fn stand_in(argument: usize) -> Schema {
    let mut object = serde_json::Map::new();
    object.insert(STAND_IN.to_owned(), argument.into());
    object.into()
}

fn stand_in_for(value: &Value) -> Option<usize> {
    match value {
        Value::Object(object) if object.len() == 1 => object
            .get(STAND_IN)?
            .as_u64()
            .and_then(|n| usize::try_from(n).ok()),
        _ => None,
    }
}

/// Runs `f` with `args` as the schemas of `Slot<0>`, `Slot<1>`, ..., standing in for those
/// arguments that `opaque` says the impl only places, then moving them in.
fn with_arguments(
    args: Vec<Schema>,
    opaque: impl Fn(usize) -> bool,
    generator: &mut SchemaGenerator,
    f: SchemaFn,
) -> Schema {
    let mut moved = Vec::with_capacity(args.len());
    let slots = args
        .into_iter()
        .enumerate()
        .map(|(i, arg)| {
            if opaque(i) {
                moved.push(Some(arg));
                stand_in(i)
            } else {
                moved.push(None);
                arg
            }
        })
        .collect();
    let mut schema = with_slots(slots, generator, f);
    if moved.iter().all(Option::is_none) {
        return schema;
    }
    if let Some(i) = stand_in_for(schema.as_value()) {
        return moved.get_mut(i).and_then(Option::take).unwrap_or(schema);
    }
    let mut uses = vec![0usize; moved.len()];
    if let Some(object) = schema.as_object_mut() {
        object.values().for_each(|v| count_stand_ins(v, &mut uses));
        object
            .values_mut()
            .for_each(|v| move_in(v, &mut moved, &mut uses));
    }
    schema
}

fn count_stand_ins(value: &Value, uses: &mut [usize]) {
    if let Some(i) = stand_in_for(value) {
        if let Some(n) = uses.get_mut(i) {
            *n += 1;
        }
        return;
    }
    match value {
        Value::Object(object) => object.values().for_each(|v| count_stand_ins(v, uses)),
        Value::Array(items) => items.iter().for_each(|v| count_stand_ins(v, uses)),
        _ => {}
    }
}

/// Puts each argument where its stand-ins are: copies at all but the last, moved at that one.
fn move_in(value: &mut Value, moved: &mut [Option<Schema>], uses: &mut [usize]) {
    if let Some(i) = stand_in_for(value) {
        let (Some(n), Some(argument)) = (uses.get_mut(i), moved.get_mut(i)) else {
            return;
        };
        *n = n.saturating_sub(1);
        let schema = if *n == 0 {
            argument.take()
        } else {
            argument.clone()
        };
        if let Some(schema) = schema {
            *value = schema.to_value();
        }
        return;
    }
    match value {
        Value::Object(object) => object.values_mut().for_each(|v| move_in(v, moved, uses)),
        Value::Array(items) => items.iter_mut().for_each(|v| move_in(v, moved, uses)),
        _ => {}
    }
}

/// Runs `f` with `args` as the schemas of `Slot<0>`, `Slot<1>`, ...
fn with_slots(args: Vec<Schema>, generator: &mut SchemaGenerator, f: SchemaFn) -> Schema {
    SLOTS.with(|slots| slots.borrow_mut().push(args));
    let schema = f(generator);
    SLOTS.with(|slots| slots.borrow_mut().pop());
    schema
}

fn schema_of<T: JsonSchema>(generator: &mut SchemaGenerator) -> Schema {
    generator.subschema_for::<T>()
}

/// A generic library type kopgen knows, by canonical path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Generic {
    /// `Option<T>`: nullable, and not required in its struct.
    Option,
    /// Types that serialize as their argument (`Box`, `Arc`, `Rc`, `Cell`, `RefCell`, `Mutex`, `Cow`, ...).
    Transparent,
    Vec,
    VecDeque,
    LinkedList,
    BinaryHeap,
    BTreeSet,
    HashSet,
    BTreeMap,
    HashMap,
    IndexMap,
    IndexSet,
    Result,
    Range,
    Bound,
    /// `PhantomData<T>`: `()`'s schema, whatever `T`.
    Phantom,
}

impl Generic {
    pub fn from_path(path: &str) -> Option<Self> {
        Some(match path {
            "std::option::Option" | "core::option::Option" => Generic::Option,
            "std::boxed::Box" | "alloc::boxed::Box" | "std::sync::Arc" | "alloc::sync::Arc"
            | "std::rc::Rc" | "alloc::rc::Rc" | "std::cell::Cell" | "std::cell::RefCell"
            | "std::sync::Mutex" | "std::sync::RwLock" | "std::borrow::Cow"
            | "alloc::borrow::Cow" | "std::num::Wrapping" | "std::cmp::Reverse" => {
                Generic::Transparent
            }
            "std::vec::Vec" | "alloc::vec::Vec" => Generic::Vec,
            "std::collections::VecDeque" | "alloc::collections::VecDeque" => Generic::VecDeque,
            "std::collections::LinkedList" => Generic::LinkedList,
            "std::collections::BinaryHeap" => Generic::BinaryHeap,
            "std::collections::BTreeSet" | "alloc::collections::BTreeSet" => Generic::BTreeSet,
            "std::collections::HashSet" => Generic::HashSet,
            "std::collections::BTreeMap" | "alloc::collections::BTreeMap" => Generic::BTreeMap,
            "std::collections::HashMap" => Generic::HashMap,
            "indexmap::IndexMap" | "indexmap::map::IndexMap" => Generic::IndexMap,
            "indexmap::IndexSet" | "indexmap::set::IndexSet" => Generic::IndexSet,
            "std::result::Result" => Generic::Result,
            // `RangeInclusive<T>` forwards to `Range<T>` in schemars.
            "std::ops::Range" | "std::ops::RangeInclusive" => Generic::Range,
            "std::ops::Bound" => Generic::Bound,
            "std::marker::PhantomData" => Generic::Phantom,
            _ => return None,
        })
    }

    /// How many type arguments carry a schema (maps: key and value; `Cow<'a, T>`: one).
    pub fn arity(self) -> usize {
        match self {
            Generic::BTreeMap | Generic::HashMap | Generic::IndexMap | Generic::Result => 2,
            Generic::Phantom => 0,
            _ => 1,
        }
    }

    /// The schema of this container over argument schemas `args`, computed by schemars itself.
    pub fn schema(self, generator: &mut SchemaGenerator, args: Vec<Schema>) -> Schema {
        type S0 = Slot<0>;
        type S1 = Slot<1>;
        let f: SchemaFn = match self {
            Generic::Option => schema_of::<Option<S0>>,
            Generic::Transparent => schema_of::<Box<S0>>,
            Generic::Vec => schema_of::<Vec<S0>>,
            Generic::VecDeque => schema_of::<std::collections::VecDeque<S0>>,
            Generic::LinkedList => schema_of::<std::collections::LinkedList<S0>>,
            Generic::BinaryHeap => schema_of::<std::collections::BinaryHeap<S0>>,
            Generic::BTreeSet | Generic::IndexSet => schema_of::<std::collections::BTreeSet<S0>>,
            Generic::HashSet => schema_of::<std::collections::HashSet<S0>>,
            Generic::BTreeMap | Generic::IndexMap => {
                schema_of::<std::collections::BTreeMap<S0, S1>>
            }
            Generic::HashMap => schema_of::<std::collections::HashMap<S0, S1>>,
            Generic::Result => schema_of::<Result<S0, S1>>,
            Generic::Range => schema_of::<std::ops::Range<S0>>,
            Generic::Bound => schema_of::<std::ops::Bound<S0>>,
            Generic::Phantom => schema_of::<std::marker::PhantomData<S0>>,
        };
        // Which arguments the impl only places: `Option<T>` looks into `T`'s schema, a map
        // into its key's; `Box<T>` returns `T`'s as it is.
        let opaque = |argument: usize| match self {
            Generic::Option | Generic::Transparent | Generic::Phantom => false,
            Generic::BTreeMap | Generic::HashMap | Generic::IndexMap => argument == 1,
            _ => true,
        };
        with_arguments(args, opaque, generator, f)
    }
}

/// A fixed-size array `[T; N]`, via schemars' impl for `[T; N]` up to the sizes it supports.
pub fn array_schema(generator: &mut SchemaGenerator, item: Schema, len: usize) -> Option<Schema> {
    macro_rules! arrays {
        ($($n:literal)*) => {
            match len {
                $($n => schema_of::<[Slot<0>; $n]> as SchemaFn,)*
                _ => return None,
            }
        };
    }
    let f = arrays!(0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32);
    Some(with_arguments(vec![item], |_| true, generator, f))
}

/// A tuple of the given element schemas, via schemars' tuple impls.
pub fn tuple_schema(generator: &mut SchemaGenerator, items: Vec<Schema>) -> Option<Schema> {
    type S<const N: usize> = Slot<N>;
    let f: SchemaFn = match items.len() {
        0 => schema_of::<()>,
        1 => schema_of::<(S<0>,)>,
        2 => schema_of::<(S<0>, S<1>)>,
        3 => schema_of::<(S<0>, S<1>, S<2>)>,
        4 => schema_of::<(S<0>, S<1>, S<2>, S<3>)>,
        5 => schema_of::<(S<0>, S<1>, S<2>, S<3>, S<4>)>,
        6 => schema_of::<(S<0>, S<1>, S<2>, S<3>, S<4>, S<5>)>,
        _ => return None,
    };
    Some(with_arguments(items, |_| true, generator, f))
}

/// The `NonZeroU16`-style alias of `NonZero<u16>`: the path schemars implements.
pub fn non_zero_alias(primitive: &str) -> String {
    let mut chars = primitive.chars();
    let capitalized: String = chars
        .next()
        .map(|c| c.to_ascii_uppercase())
        .into_iter()
        .chain(chars)
        .collect();
    format!("std::num::NonZero{capitalized}")
}

/// Non-generic library types, by canonical path.
pub fn leaf(path: &str) -> Option<SchemaFn> {
    use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
    use std::num::*;
    let f: SchemaFn = match path {
        "bool" => schema_of::<bool>,
        "char" => schema_of::<char>,
        "str" | "std::string::String" | "alloc::string::String" => schema_of::<String>,
        "i8" => schema_of::<i8>,
        "i16" => schema_of::<i16>,
        "i32" => schema_of::<i32>,
        "i64" => schema_of::<i64>,
        "i128" => schema_of::<i128>,
        "isize" => schema_of::<isize>,
        "u8" => schema_of::<u8>,
        "u16" => schema_of::<u16>,
        "u32" => schema_of::<u32>,
        "u64" => schema_of::<u64>,
        "u128" => schema_of::<u128>,
        "usize" => schema_of::<usize>,
        "f32" => schema_of::<f32>,
        "f64" => schema_of::<f64>,
        "std::num::NonZeroI8" => schema_of::<NonZeroI8>,
        "std::num::NonZeroI16" => schema_of::<NonZeroI16>,
        "std::num::NonZeroI32" => schema_of::<NonZeroI32>,
        "std::num::NonZeroI64" => schema_of::<NonZeroI64>,
        "std::num::NonZeroI128" => schema_of::<NonZeroI128>,
        "std::num::NonZeroIsize" => schema_of::<NonZeroIsize>,
        "std::num::NonZeroU8" => schema_of::<NonZeroU8>,
        "std::num::NonZeroU16" => schema_of::<NonZeroU16>,
        "std::num::NonZeroU32" => schema_of::<NonZeroU32>,
        "std::num::NonZeroU64" => schema_of::<NonZeroU64>,
        "std::num::NonZeroU128" => schema_of::<NonZeroU128>,
        "std::num::NonZeroUsize" => schema_of::<NonZeroUsize>,
        "std::time::Duration" | "core::time::Duration" => schema_of::<std::time::Duration>,
        "std::time::SystemTime" => schema_of::<std::time::SystemTime>,
        "std::net::IpAddr" => schema_of::<IpAddr>,
        "std::net::Ipv4Addr" => schema_of::<Ipv4Addr>,
        "std::net::Ipv6Addr" => schema_of::<Ipv6Addr>,
        "std::net::SocketAddr" => schema_of::<SocketAddr>,
        "std::net::SocketAddrV4" => schema_of::<std::net::SocketAddrV4>,
        "std::net::SocketAddrV6" => schema_of::<std::net::SocketAddrV6>,
        "std::sync::atomic::AtomicBool" => schema_of::<std::sync::atomic::AtomicBool>,
        "std::sync::atomic::AtomicI8" => schema_of::<std::sync::atomic::AtomicI8>,
        "std::sync::atomic::AtomicI16" => schema_of::<std::sync::atomic::AtomicI16>,
        "std::sync::atomic::AtomicI32" => schema_of::<std::sync::atomic::AtomicI32>,
        "std::sync::atomic::AtomicI64" => schema_of::<std::sync::atomic::AtomicI64>,
        "std::sync::atomic::AtomicIsize" => schema_of::<std::sync::atomic::AtomicIsize>,
        "std::sync::atomic::AtomicU8" => schema_of::<std::sync::atomic::AtomicU8>,
        "std::sync::atomic::AtomicU16" => schema_of::<std::sync::atomic::AtomicU16>,
        "std::sync::atomic::AtomicU32" => schema_of::<std::sync::atomic::AtomicU32>,
        "std::sync::atomic::AtomicU64" => schema_of::<std::sync::atomic::AtomicU64>,
        "std::sync::atomic::AtomicUsize" => schema_of::<std::sync::atomic::AtomicUsize>,
        "std::ffi::OsStr" => schema_of::<std::ffi::OsString>,
        "std::ffi::CString" | "std::ffi::CStr" => schema_of::<std::ffi::CString>,
        "std::path::PathBuf" | "std::path::Path" => schema_of::<std::path::PathBuf>,
        "std::ffi::OsString" => schema_of::<std::ffi::OsString>,
        "serde_json::Value" | "serde_json::value::Value" => schema_of::<serde_json::Value>,
        // chrono 0.4 and jiff 0.2, as schemars' `chrono04` and `jiff02` features describe them.
        "chrono::DateTime" | "chrono::datetime::DateTime" => {
            schema_of::<chrono::DateTime<chrono::Utc>>
        }
        "chrono::NaiveDateTime" | "chrono::naive::NaiveDateTime" => {
            schema_of::<chrono::NaiveDateTime>
        }
        "chrono::NaiveDate" | "chrono::naive::NaiveDate" => schema_of::<chrono::NaiveDate>,
        "chrono::NaiveTime" | "chrono::naive::NaiveTime" => schema_of::<chrono::NaiveTime>,
        // `chrono::Duration` is an alias of `TimeDelta`.
        "chrono::TimeDelta" | "chrono::Duration" => schema_of::<chrono::TimeDelta>,
        "chrono::Weekday" => schema_of::<chrono::Weekday>,
        "jiff::Timestamp" | "k8s_openapi::jiff::Timestamp" => schema_of::<jiff::Timestamp>,
        "jiff::Zoned" | "k8s_openapi::jiff::Zoned" => schema_of::<jiff::Zoned>,
        "jiff::Span" | "k8s_openapi::jiff::Span" => schema_of::<jiff::Span>,
        "jiff::SignedDuration" | "k8s_openapi::jiff::SignedDuration" => {
            schema_of::<jiff::SignedDuration>
        }
        "jiff::civil::Date" | "k8s_openapi::jiff::civil::Date" => schema_of::<jiff::civil::Date>,
        "jiff::civil::DateTime" | "k8s_openapi::jiff::civil::DateTime" => {
            schema_of::<jiff::civil::DateTime>
        }
        "jiff::civil::Time" | "k8s_openapi::jiff::civil::Time" => schema_of::<jiff::civil::Time>,
        "serde_json::Map" | "serde_json::map::Map" => {
            schema_of::<serde_json::Map<String, serde_json::Value>>
        }
        "serde_json::Number" | "serde_json::value::Number" => schema_of::<serde_json::Number>,
        // kube's `Duration` (Go's duration syntax), as `kube::core::Duration`.
        "kube_core::Duration" => schema_of::<kube_core::Duration>,
        _ => return super::k8s_types::lookup(path),
    };
    Some(f)
}

/// A slot that behaves like `Option<Slot<0>>` for schemars' private hooks.
struct OptionSlot;

impl JsonSchema for OptionSlot {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> Cow<'static, str> {
        "KopgenOptionSlot".into()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        Slot::<0>::json_schema(generator)
    }

    fn _schemars_private_non_optional_json_schema(generator: &mut SchemaGenerator) -> Schema {
        Slot::<1>::json_schema(generator)
    }

    fn _schemars_private_is_option() -> bool {
        true
    }
}

/// The schema of a `#[serde(flatten)]` field, via schemars' own `json_schema_for_flatten`.
/// `option_inner` is the schema of `T` when the field is an `Option<T>`.
pub fn flatten_schema(
    generator: &mut SchemaGenerator,
    schema: Schema,
    option_inner: Option<Schema>,
    required: bool,
) -> Schema {
    match option_inner {
        Some(inner) => {
            SLOTS.with(|slots| slots.borrow_mut().push(vec![schema, inner]));
            let out =
                schemars::_private::json_schema_for_flatten::<OptionSlot>(generator, required);
            SLOTS.with(|slots| slots.borrow_mut().pop());
            out
        }
        None => {
            SLOTS.with(|slots| slots.borrow_mut().push(vec![schema]));
            let out = schemars::_private::json_schema_for_flatten::<Slot<0>>(generator, required);
            SLOTS.with(|slots| slots.borrow_mut().pop());
            out
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::manifests::settings::kube_settings;
    use k8s_openapi::api::core::v1::Container;
    use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet, LinkedList, VecDeque};

    /// Every container over a large argument (`Container`) and a small key (`String`) gives
    /// what schemars gives for the real type, whether the argument stood in or was read.
    #[test]
    fn containers_match_schemars() {
        let generator = || SchemaGenerator::new(kube_settings());
        let container = || generator().subschema_for::<Container>();
        let string = || generator().subschema_for::<String>();
        let real: fn(&mut SchemaGenerator) -> Schema = |g| g.subschema_for::<Container>();
        let cases: Vec<(Generic, Vec<Schema>, SchemaFn)> = vec![
            (Generic::Option, vec![container()], |g| {
                g.subschema_for::<Option<Container>>()
            }),
            (Generic::Transparent, vec![container()], |g| {
                g.subschema_for::<Box<Container>>()
            }),
            (Generic::Vec, vec![container()], |g| {
                g.subschema_for::<Vec<Container>>()
            }),
            (Generic::VecDeque, vec![container()], |g| {
                g.subschema_for::<VecDeque<Container>>()
            }),
            (Generic::LinkedList, vec![container()], |g| {
                g.subschema_for::<LinkedList<Container>>()
            }),
            (Generic::BTreeSet, vec![string()], |g| {
                g.subschema_for::<BTreeSet<String>>()
            }),
            (Generic::HashSet, vec![string()], |g| {
                g.subschema_for::<HashSet<String>>()
            }),
            (Generic::BTreeMap, vec![string(), container()], |g| {
                g.subschema_for::<BTreeMap<String, Container>>()
            }),
            (Generic::HashMap, vec![string(), container()], |g| {
                g.subschema_for::<HashMap<String, Container>>()
            }),
            (Generic::Result, vec![container(), string()], |g| {
                g.subschema_for::<Result<Container, String>>()
            }),
            (Generic::Range, vec![container()], |g| {
                g.subschema_for::<std::ops::Range<Container>>()
            }),
            (Generic::Bound, vec![container()], |g| {
                g.subschema_for::<std::ops::Bound<Container>>()
            }),
        ];
        for (generic, args, expected) in cases {
            let ours = generic.schema(&mut generator(), args);
            assert_eq!(ours, expected(&mut generator()), "{generic:?}");
            assert!(
                !ours.as_value().to_string().contains(STAND_IN),
                "{generic:?}"
            );
        }
        let array = array_schema(&mut generator(), real(&mut generator()), 3);
        assert_eq!(array, Some(generator().subschema_for::<[Container; 3]>()));
        let tuple = tuple_schema(&mut generator(), vec![container(), string(), container()]);
        assert_eq!(
            tuple,
            Some(generator().subschema_for::<(Container, String, Container)>())
        );
    }
}
