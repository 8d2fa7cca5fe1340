//! A message written the way one peer or another lays it out: the order of its members
//! (this SDK's, the Python SDK's, the TypeScript SDK's, sorted, shuffled), the
//! whitespace between tokens and the escapes inside strings. Serde reads every layout
//! alike; a reader that only recognises one layout is what these reach.
//!
//! `serde_json::Value` keeps members sorted, and its `preserve_order` feature would
//! reach the library's own maps (features are unified across a build), so the order is
//! chosen here, as the writer goes. Shared with
//! `mcpflow-protocol/tests/wire/mutations.rs` by path.

use std::fmt;

use serde_json::{Map, Value};

use super::rng::Rng;

/// How a message is laid out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    pub order: Order,
    pub space: Space,
    pub escape: Escape,
}

/// The order a peer writes an object's members in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Order {
    /// This SDK: `{"jsonrpc","id","method","params"}`, answers `{"jsonrpc","id","result"}`,
    /// `_meta` (so the progress token) first in params.
    Mcpflow,
    /// The Python SDK: pydantic dumps fields in declaration order, inherited ones first,
    /// so requests and notifications are `{"method","params","jsonrpc","id"}` and answers
    /// `{"jsonrpc","id","result"}`; `_meta` comes last in params (the progress token is
    /// added after the dump), and progress is a float (`1.0`).
    Python,
    /// The TypeScript SDK's object spreads: requests `{"method","params","jsonrpc","id"}`,
    /// answers `{"result","jsonrpc","id"}`, errors `{"jsonrpc","id","error"}`, `_meta`
    /// last in params; progress `{"progress","total","progressToken"}`, as its reference
    /// servers send it.
    TypeScript,
    /// Every object's members sorted, as `serde_json::Value` writes them.
    Sorted,
    /// Every object's members in an order drawn from this seed.
    Shuffled(u64),
}

/// The whitespace between tokens.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Space {
    /// None at all, as the SDKs write.
    Compact,
    /// `", "` and `": "`, as Python's `json.dumps` writes.
    Separators,
    /// A space on both sides of every token, and around the message.
    Padded,
    /// Tabs where `Padded` has spaces.
    Tabs,
    /// One member per line, indented, as `JSON.stringify(message, null, 2)`: only where
    /// a frame may hold a newline (not in newline-delimited framing).
    Lines,
}

/// How strings (members' names and string values) are escaped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Escape {
    /// Only what JSON requires, as serde_json writes.
    Plain,
    /// `/` as `\/`.
    Solidus,
    /// Every character beyond ASCII as `\uXXXX` (surrogate pairs above U+FFFF), as
    /// Python's `json.dumps` writes by default.
    Ascii,
    /// The first character of every member's name as `\u00XX`: `"\u006dethod"`.
    KeyLetter,
    /// The first character of every string value as `\u00XX`: `"\u0074ools/call"`.
    ValueLetter,
    /// Every character of every string as `\uXXXX`, in upper-case hex.
    Everything,
}

const ORDERS: [Order; 5] = [
    Order::Mcpflow,
    Order::Python,
    Order::TypeScript,
    Order::Sorted,
    Order::Shuffled(0x0DD),
];
const SPACES: [Space; 5] = [
    Space::Compact,
    Space::Separators,
    Space::Padded,
    Space::Tabs,
    Space::Lines,
];
const ESCAPES: [Escape; 6] = [
    Escape::Plain,
    Escape::Solidus,
    Escape::Ascii,
    Escape::KeyLetter,
    Escape::ValueLetter,
    Escape::Everything,
];

impl Layout {
    /// This SDK's own layout: its order, no whitespace, plain escapes.
    pub const MCPFLOW: Layout = Layout::compact(Order::Mcpflow);

    /// `order`, with no whitespace and plain escapes.
    pub const fn compact(order: Order) -> Layout {
        Layout {
            order,
            space: Space::Compact,
            escape: Escape::Plain,
        }
    }

    /// A layout drawn from `rng`; `newlines` where the framing lets a message hold one.
    pub fn random(rng: &mut Rng, newlines: bool) -> Layout {
        let order = match *rng.pick(&ORDERS) {
            Order::Shuffled(_) => Order::Shuffled(rng.next()),
            order => order,
        };
        let spaces = if newlines {
            &SPACES[..]
        } else {
            &SPACES[..SPACES.len() - 1]
        };
        Layout {
            order,
            space: *rng.pick(spaces),
            escape: *rng.pick(&ESCAPES),
        }
    }

    /// Every order with every whitespace (plain escapes) and with every escape (no
    /// whitespace): each kind of difference alone, beside each order.
    pub fn covering(newlines: bool) -> Vec<Layout> {
        let mut all = Vec::new();
        for order in ORDERS {
            for space in SPACES {
                if newlines || space != Space::Lines {
                    all.push(Layout {
                        space,
                        ..Layout::compact(order)
                    });
                }
            }
            for escape in &ESCAPES[1..] {
                all.push(Layout {
                    escape: *escape,
                    ..Layout::compact(order)
                });
            }
        }
        all
    }

    /// `message` written in this layout.
    pub fn write(&self, message: &Value) -> String {
        let mut writer = Writer {
            layout: *self,
            out: String::new(),
            depth: 0,
            shuffle: match self.order {
                Order::Shuffled(seed) => Some(Rng::new(seed)),
                _ => None,
            },
        };
        let around = match self.space {
            Space::Padded => " ",
            Space::Tabs => "\t",
            _ => "",
        };
        writer.out.push_str(around);
        writer.value(message, true);
        writer.out.push_str(around);
        writer.out
    }
}

/// `value` with whole floats as integers: what a reader that does not tell `1` from `1.0`
/// sees, as Python writes progress.
pub fn whole_numbers(value: Value) -> Value {
    match value {
        Value::Number(n) => match n.as_f64() {
            Some(f) if n.is_f64() && f.fract() == 0.0 && f.abs() < 1e15 => Value::from(f as i64),
            _ => Value::Number(n),
        },
        Value::Array(items) => Value::Array(items.into_iter().map(whole_numbers).collect()),
        Value::Object(map) => Value::Object(
            map.into_iter()
                .map(|(k, v)| (k, whole_numbers(v)))
                .collect(),
        ),
        other => other,
    }
}

impl fmt::Display for Layout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:?} order, {:?} space, {:?} escapes",
            self.order, self.space, self.escape
        )
    }
}

impl Order {
    /// The members that come first, in this order, and those that come last; the rest
    /// go between, sorted. `envelope`: the object is a message, not a part of one.
    fn rule(self, envelope: bool) -> (&'static [&'static str], &'static [&'static str]) {
        match (self, envelope) {
            (Order::Mcpflow, true) => (
                &["jsonrpc", "id", "method", "params", "result", "error"],
                &[],
            ),
            (Order::Python, true) => (
                &["method", "params", "jsonrpc", "id", "result", "error"],
                &[],
            ),
            (Order::TypeScript, true) => (
                &["method", "params", "result", "jsonrpc", "id", "error"],
                &[],
            ),
            (Order::Mcpflow, false) => (
                &[
                    "_meta",
                    "progressToken",
                    "progress",
                    "total",
                    "code",
                    "message",
                    "name",
                ],
                &[],
            ),
            (Order::Python, false) => (
                &[
                    "progressToken",
                    "progress",
                    "total",
                    "code",
                    "message",
                    "name",
                ],
                &["_meta"],
            ),
            (Order::TypeScript, false) => (
                &[
                    "progress",
                    "total",
                    "progressToken",
                    "code",
                    "message",
                    "name",
                ],
                &["_meta"],
            ),
            (Order::Sorted | Order::Shuffled(_), _) => (&[], &[]),
        }
    }
}

struct Writer {
    layout: Layout,
    out: String,
    depth: usize,
    shuffle: Option<Rng>,
}

impl Writer {
    /// `envelope`: a message (the value written, or a member of a batch at the top).
    fn value(&mut self, value: &Value, envelope: bool) {
        match value {
            Value::Null | Value::Bool(_) | Value::Number(_) => {
                self.out.push_str(&value.to_string());
            }
            Value::String(s) => self.string(s, false),
            Value::Array(items) => {
                let batch = self.depth == 0;
                self.open('[', items.is_empty());
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        self.comma();
                    }
                    self.value(item, envelope && batch);
                }
                self.close(']', items.is_empty());
            }
            Value::Object(map) => {
                let members = self.ordered(map, envelope);
                let progress = map.contains_key("progressToken");
                self.open('{', members.is_empty());
                for (i, (key, member)) in members.into_iter().enumerate() {
                    if i > 0 {
                        self.comma();
                    }
                    self.string(key, true);
                    self.colon();
                    match member {
                        // Python's progress and total are floats.
                        Value::Number(n)
                            if self.layout.order == Order::Python
                                && progress
                                && matches!(key.as_str(), "progress" | "total")
                                && !n.is_f64() =>
                        {
                            self.out.push_str(&format!("{n}.0"));
                        }
                        other => self.value(other, false),
                    }
                }
                self.close('}', map.is_empty());
            }
        }
    }

    fn ordered<'v>(
        &mut self,
        map: &'v Map<String, Value>,
        envelope: bool,
    ) -> Vec<(&'v String, &'v Value)> {
        let mut members: Vec<(&String, &Value)> = map.iter().collect();
        if let Some(rng) = &mut self.shuffle {
            for i in (1..members.len()).rev() {
                members.swap(i, rng.index(i + 1));
            }
            return members;
        }
        let (first, last) = self.layout.order.rule(envelope);
        let rank = |key: &str| {
            if let Some(i) = first.iter().position(|k| *k == key) {
                (0, i)
            } else if let Some(i) = last.iter().position(|k| *k == key) {
                (2, i)
            } else {
                (1, 0)
            }
        };
        // Stable, so the rest stay sorted.
        members.sort_by_key(|(key, _)| rank(key));
        members
    }

    fn open(&mut self, bracket: char, empty: bool) {
        self.out.push(bracket);
        self.depth += 1;
        if !empty {
            self.gap();
        }
    }

    fn close(&mut self, bracket: char, empty: bool) {
        self.depth -= 1;
        if !empty {
            self.gap();
        }
        self.out.push(bracket);
    }

    /// The whitespace inside a bracket.
    fn gap(&mut self) {
        match self.layout.space {
            Space::Compact | Space::Separators => {}
            Space::Padded => self.out.push(' '),
            Space::Tabs => self.out.push('\t'),
            Space::Lines => self.newline(),
        }
    }

    fn newline(&mut self) {
        self.out.push('\n');
        for _ in 0..self.depth {
            self.out.push_str("  ");
        }
    }

    fn comma(&mut self) {
        match self.layout.space {
            Space::Compact => self.out.push(','),
            Space::Separators => self.out.push_str(", "),
            Space::Padded => self.out.push_str(" , "),
            Space::Tabs => self.out.push_str("\t,\t"),
            Space::Lines => {
                self.out.push(',');
                self.newline();
            }
        }
    }

    fn colon(&mut self) {
        self.out.push_str(match self.layout.space {
            Space::Compact => ":",
            Space::Separators | Space::Lines => ": ",
            Space::Padded => " : ",
            Space::Tabs => "\t:\t",
        });
    }

    fn string(&mut self, s: &str, key: bool) {
        self.out.push('"');
        for (i, c) in s.chars().enumerate() {
            let unicode = match self.layout.escape {
                Escape::Everything => true,
                Escape::Ascii => !c.is_ascii(),
                Escape::KeyLetter => key && i == 0,
                Escape::ValueLetter => !key && i == 0,
                Escape::Plain | Escape::Solidus => false,
            };
            if unicode {
                let upper = self.layout.escape == Escape::Everything;
                let mut units = [0; 2];
                for unit in c.encode_utf16(&mut units) {
                    self.out.push_str(&if upper {
                        format!("\\u{unit:04X}")
                    } else {
                        format!("\\u{unit:04x}")
                    });
                }
                continue;
            }
            match c {
                '"' => self.out.push_str("\\\""),
                '\\' => self.out.push_str("\\\\"),
                '\u{8}' => self.out.push_str("\\b"),
                '\u{c}' => self.out.push_str("\\f"),
                '\n' => self.out.push_str("\\n"),
                '\r' => self.out.push_str("\\r"),
                '\t' => self.out.push_str("\\t"),
                c if u32::from(c) < 0x20 => self.out.push_str(&format!("\\u{:04x}", u32::from(c))),
                '/' if self.layout.escape == Escape::Solidus => self.out.push_str("\\/"),
                c => self.out.push(c),
            }
        }
        self.out.push('"');
    }
}
