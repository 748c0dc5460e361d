//! Library types whose schema is given, not derived: std, serde_json, chrono, jiff, and every
//! k8s-openapi type. Schemas come from the real `JsonSchema` impls of those crates, so kopgen
//! agrees with them by construction.
//!
//! Generic library types (`Option<T>`, `Vec<T>`, maps, ...) are instantiated with *slots*:
//! placeholder types whose schema is whatever kopgen computed for the type argument. That lets
//! schemars' own container impls run on argument schemas that only exist at run time.

use std::{borrow::Cow, cell::RefCell};

use schemars::{JsonSchema, Schema, SchemaGenerator};

/// Produces a type's schema with a generator configured like kube-derive's.
pub type SchemaFn = fn(&mut SchemaGenerator) -> Schema;

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
        // Each slot is read once by schemars' container impls: move the schema out rather than
        // cloning it, so wrapping a deep schema in `Option`/`Vec` costs nothing extra.
        SLOTS.with(|slots| {
            slots
                .borrow_mut()
                .last_mut()
                .and_then(|frame| frame.get_mut(N).map(std::mem::take))
                .unwrap_or_default()
        })
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
        with_slots(args, generator, f)
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
    Some(with_slots(vec![item], generator, f))
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
    Some(with_slots(items, generator, f))
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
        _ => return crate::manifests::k8s_types::lookup(path),
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
