//! The event record: what checks find and what the agent says about itself.
//!
//! Each event travels as a Fluent Forward entry `[EventTime, record]` under the tag
//! `zpulse.<kind>` (docs/plugin-authoring.md, "Events"). [`Event`] is the record; [`EventTime`] the time;
//! [`Value`] the figures in `data`. Plugins build events with the SDK
//! ([`crate::sdk::Findings`], [`Event::finding`], [`Event::metrics`]) and emit them as
//! MessagePack; the agent decodes them with [`Event::from_msgpack`], which also runs
//! [`Event::validate`], so a malformed record never reaches a sink.

use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::collections::BTreeMap;
use std::fmt;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The record schema version written in `v`.
pub const EVENT_VERSION: u32 = 1;

/// Limits that keep one event printable on one line, storable, and sendable over syslog.
pub mod limits {
    /// `check`: 1–64 characters of `[A-Za-z0-9._-]`.
    pub const CHECK_CHARS: usize = 64;
    pub const SUBJECT_CHARS: usize = 256;
    pub const SUMMARY_CHARS: usize = 1024;
    pub const ADVICE_CHARS: usize = 2048;
    /// Keys and values in `data`, nested ones included.
    pub const DATA_ITEMS: usize = 256;
    pub const DATA_KEY_CHARS: usize = 64;
    /// Lists and maps inside `data` nest at most this deep (`data` itself is level 1).
    pub const DATA_DEPTH: usize = 4;
}

/// The figures of an event, by name.
pub type Data = BTreeMap<String, Value>;

/// What an event is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// A stateful finding of a check: raised, updated, cleared.
    Finding,
    /// Figures reported every interval, without state.
    Metrics,
    /// The agent about itself (a plugin refused, hung, disabled…). Plugins may not send these.
    Agent,
    /// A kernel event as the kernel queued it ([`crate::zevent::ZEvent::to_event`]), without
    /// state: what checks conclude from it are findings. Plugins may not send these.
    Zevent,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Finding => "finding",
            Kind::Metrics => "metrics",
            Kind::Agent => "agent",
            Kind::Zevent => "zevent",
        }
    }
}

/// How urgent, ordered `Info < Warning < Critical`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Info,
    Warning,
    Critical,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Warning => "warning",
            Severity::Critical => "critical",
        }
    }
}

/// Where a finding is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum State {
    Raised,
    Updated,
    Cleared,
}

impl State {
    pub fn as_str(self) -> &'static str {
        match self {
            State::Raised => "raised",
            State::Updated => "updated",
            State::Cleared => "cleared",
        }
    }
}

/// One event record (the map of a Forward entry).
///
/// Findings and agent events carry a `state`; metrics do not. `host` is filled in by the agent
/// (whatever a plugin puts there is replaced), so plugins leave it empty.
///
/// It grows (a field a later record version adds): outside this crate, make one with
/// [`Event::finding`], [`Event::metrics`] or [`Event::agent`] and set fields after.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct Event {
    /// Schema version, [`EVENT_VERSION`].
    pub v: u32,
    pub kind: Kind,
    #[serde(default)]
    pub host: String,
    /// Which check (or, for agent events, which agent facility) speaks: `hdd-saturation`.
    pub check: String,
    pub severity: Severity,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<State>,
    /// What the event is about: `tank/special/mirror-2`, `sdc`, `arc`.
    #[serde(default)]
    pub subject: String,
    /// One human sentence with the figures.
    #[serde(default)]
    pub summary: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub advice: Option<String>,
    /// The figures as a map.
    #[serde(default)]
    pub data: Data,
}

impl Event {
    /// A finding of `check` about `subject`. Usually made by [`crate::sdk::Findings`], which
    /// decides the state.
    pub fn finding(
        check: impl Into<String>,
        state: State,
        severity: Severity,
        subject: impl Into<String>,
        summary: impl Into<String>,
    ) -> Event {
        Event {
            v: EVENT_VERSION,
            kind: Kind::Finding,
            host: String::new(),
            check: check.into(),
            severity,
            state: Some(state),
            subject: subject.into(),
            summary: summary.into(),
            advice: None,
            data: Data::new(),
        }
    }

    /// Stateless figures of `check` about `subject`, at severity `info`.
    pub fn metrics(
        check: impl Into<String>,
        subject: impl Into<String>,
        summary: impl Into<String>,
    ) -> Event {
        Event {
            kind: Kind::Metrics,
            state: None,
            severity: Severity::Info,
            ..Event::finding(check, State::Raised, Severity::Info, subject, summary)
        }
    }

    /// An event of the agent itself (`kind` agent): what it says about its own facilities
    /// (`plugin.hung`, `agent.sinks`), with a state like a finding's.
    pub fn agent(
        check: impl Into<String>,
        state: State,
        severity: Severity,
        subject: impl Into<String>,
        summary: impl Into<String>,
    ) -> Event {
        Event {
            kind: Kind::Agent,
            ..Event::finding(check, state, severity, subject, summary)
        }
    }

    /// Adds the advice: what the administrator can do.
    pub fn with_advice(mut self, advice: impl Into<String>) -> Event {
        self.advice = Some(advice.into());
        self
    }

    /// Adds one figure to `data`.
    pub fn with(mut self, key: impl Into<String>, value: impl Into<Value>) -> Event {
        self.data.insert(key.into(), value.into());
        self
    }

    /// The Forward tag: `zpulse.finding`, `zpulse.metrics`, `zpulse.agent`, `zpulse.zevent`.
    pub fn tag(&self) -> String {
        format!("zpulse.{}", self.kind.as_str())
    }

    /// The record as MessagePack (a map with named keys).
    pub fn to_msgpack(&self) -> Vec<u8> {
        // Serializing this type into a Vec cannot fail: every key is a string and every value
        // a plain scalar, list or map.
        rmp_serde::to_vec_named(self).unwrap_or_default()
    }

    /// Decodes and [validates](Event::validate) one record.
    pub fn from_msgpack(bytes: &[u8]) -> Result<Event, String> {
        let event: Event = rmp_serde::from_slice(bytes).map_err(|e| match e {
            // serde's own messages name the field ("unknown field `sevrity`"); the decoder's
            // ("wrong msgpack marker") need saying what was being read.
            rmp_serde::decode::Error::Syntax(why) => why,
            other => format!("not a MessagePack event record: {other}"),
        })?;
        event.validate()?;
        Ok(event)
    }

    /// Checks the record against the schema and [`limits`]; the error names the field.
    pub fn validate(&self) -> Result<(), String> {
        if self.v != EVENT_VERSION {
            return Err(format!(
                "v: record version {} (this agent writes and reads {EVENT_VERSION})",
                self.v
            ));
        }
        let stateful = matches!(self.kind, Kind::Finding | Kind::Agent);
        match (stateful, self.state) {
            (true, None) => return Err(format!("state: a {} needs one", self.kind.as_str())),
            (false, Some(_)) => {
                return Err(format!("state: {} have no state", self.kind.as_str()));
            }
            _ => {}
        }
        if self.check.is_empty()
            || self.check.chars().count() > limits::CHECK_CHARS
            || !self
                .check
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
        {
            return Err(format!(
                "check {:?}: give 1 to {} characters of A-Z a-z 0-9 . _ -",
                self.check,
                limits::CHECK_CHARS
            ));
        }
        text("subject", &self.subject, limits::SUBJECT_CHARS, false)?;
        text("summary", &self.summary, limits::SUMMARY_CHARS, false)?;
        text("host", &self.host, limits::SUBJECT_CHARS, false)?;
        if stateful && self.subject.is_empty() {
            return Err("subject: a finding is about something; name it".into());
        }
        if stateful && self.summary.is_empty() {
            return Err("summary: say what was found, in one sentence".into());
        }
        if let Some(advice) = &self.advice {
            text("advice", advice, limits::ADVICE_CHARS, true)?;
        }
        let mut items = 0;
        check_data("data", &self.data, 1, &mut items)
    }
}

/// Length and control characters of one text field. Newlines would break line-based sinks
/// (syslog, JSON lines read by people), except in advice, which may hold steps.
fn text(field: &str, value: &str, max: usize, newlines: bool) -> Result<(), String> {
    if value.chars().count() > max {
        return Err(format!("{field}: longer than {max} characters"));
    }
    if let Some(c) = value
        .chars()
        .find(|&c| c.is_control() && !(newlines && (c == '\n' || c == '\t')))
    {
        return Err(format!("{field}: control character {c:?}"));
    }
    Ok(())
}

fn check_data(path: &str, map: &Data, depth: usize, items: &mut usize) -> Result<(), String> {
    if depth > limits::DATA_DEPTH {
        return Err(format!(
            "{path}: nested deeper than {} levels",
            limits::DATA_DEPTH
        ));
    }
    for (key, value) in map {
        let here = format!("{path}.{key}");
        if key.is_empty() || key.chars().count() > limits::DATA_KEY_CHARS {
            return Err(format!(
                "{here}: keys have 1 to {} characters",
                limits::DATA_KEY_CHARS
            ));
        }
        text(&here, key, limits::DATA_KEY_CHARS, false)?;
        check_value(&here, value, depth, items)?;
    }
    Ok(())
}

fn check_value(path: &str, value: &Value, depth: usize, items: &mut usize) -> Result<(), String> {
    *items += 1;
    if *items > limits::DATA_ITEMS {
        return Err(format!("data: more than {} items", limits::DATA_ITEMS));
    }
    match value {
        Value::Float(f) if !f.is_finite() => Err(format!("{path}: {f} is not a finite number")),
        Value::Str(s) => text(path, s, limits::SUMMARY_CHARS, false),
        Value::List(list) => {
            if depth + 1 > limits::DATA_DEPTH {
                return Err(format!(
                    "{path}: nested deeper than {} levels",
                    limits::DATA_DEPTH
                ));
            }
            for (i, v) in list.iter().enumerate() {
                check_value(&format!("{path}[{i}]"), v, depth + 1, items)?;
            }
            Ok(())
        }
        Value::Map(map) => check_data(path, map, depth + 1, items),
        _ => Ok(()),
    }
}

/// An event with its time: one entry of the Forward protocol, `[time, record]`, sent under
/// the tag [`Event::tag`].
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    pub time: EventTime,
    pub event: Event,
}

/// A figure in `data` (and a value in a plugin's config): the subset of MessagePack and TOML
/// that zpulse passes around. Binary strings are not accepted: every sink must be able to
/// print an event.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Null,
    Bool(bool),
    Int(i64),
    UInt(u64),
    Float(f64),
    Str(String),
    List(Vec<Value>),
    Map(BTreeMap<String, Value>),
}

impl Value {
    /// The value as a number, when it is one.
    pub fn as_f64(&self) -> Option<f64> {
        match *self {
            Value::Int(i) => Some(i as f64),
            Value::UInt(u) => Some(u as f64),
            Value::Float(f) => Some(f),
            _ => None,
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }
}

macro_rules! value_from {
    ($($t:ty => $variant:ident as $as:ty),* $(,)?) => {
        $(impl From<$t> for Value {
            fn from(v: $t) -> Value {
                Value::$variant(v as $as)
            }
        })*
    };
}

value_from!(
    u8 => UInt as u64, u16 => UInt as u64, u32 => UInt as u64, u64 => UInt as u64,
    usize => UInt as u64, f32 => Float as f64, f64 => Float as f64,
);

macro_rules! value_from_signed {
    ($($t:ty),*) => {
        $(impl From<$t> for Value {
            /// Non-negative integers become [`Value::UInt`], as MessagePack decodes them.
            fn from(v: $t) -> Value {
                let v = v as i64;
                if v >= 0 { Value::UInt(v as u64) } else { Value::Int(v) }
            }
        })*
    };
}

value_from_signed!(i8, i16, i32, i64, isize);

impl From<bool> for Value {
    fn from(v: bool) -> Value {
        Value::Bool(v)
    }
}

impl From<&str> for Value {
    fn from(v: &str) -> Value {
        Value::Str(v.to_owned())
    }
}

impl From<String> for Value {
    fn from(v: String) -> Value {
        Value::Str(v)
    }
}

impl<T: Into<Value>> From<Option<T>> for Value {
    fn from(v: Option<T>) -> Value {
        v.map_or(Value::Null, Into::into)
    }
}

impl<T: Into<Value>> From<Vec<T>> for Value {
    fn from(v: Vec<T>) -> Value {
        Value::List(v.into_iter().map(Into::into).collect())
    }
}

impl From<BTreeMap<String, Value>> for Value {
    fn from(v: BTreeMap<String, Value>) -> Value {
        Value::Map(v)
    }
}

impl Serialize for Value {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Value::Null => s.serialize_unit(),
            Value::Bool(b) => s.serialize_bool(*b),
            Value::Int(i) => s.serialize_i64(*i),
            Value::UInt(u) => s.serialize_u64(*u),
            Value::Float(f) => s.serialize_f64(*f),
            Value::Str(v) => s.serialize_str(v),
            Value::List(l) => l.serialize(s),
            Value::Map(m) => m.serialize(s),
        }
    }
}

/// Nesting beyond this is refused while decoding, before [`limits::DATA_DEPTH`] is checked,
/// so that hostile input cannot exhaust the stack of the thread that decodes it.
const MAX_DECODE_DEPTH: usize = 16;

impl<'de> Deserialize<'de> for Value {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Value, D::Error> {
        ValueSeed(0).deserialize(d)
    }
}

/// Decodes a [`Value`] at nesting depth `.0`.
struct ValueSeed(usize);

impl<'de> DeserializeSeed<'de> for ValueSeed {
    type Value = Value;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        if self.0 > MAX_DECODE_DEPTH {
            return Err(de::Error::custom(format!(
                "values nested deeper than {MAX_DECODE_DEPTH} levels"
            )));
        }
        d.deserialize_any(ValueVisitor(self.0))
    }
}

struct ValueVisitor(usize);

impl<'de> Visitor<'de> for ValueVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("nil, a boolean, a number, a string, a list or a map with string keys")
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        ValueSeed(self.0).deserialize(d)
    }
    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        // MessagePack writes non-negative integers as unsigned; keep one spelling of each.
        Ok(if v >= 0 {
            Value::UInt(v as u64)
        } else {
            Value::Int(v)
        })
    }
    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::UInt(v))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(Value::Float(v))
    }
    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::Str(v.to_owned()))
    }
    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::Str(v))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        // The announced length comes from untrusted input: don't preallocate by it.
        let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(64));
        while let Some(v) = seq.next_element_seed(ValueSeed(self.0 + 1))? {
            out.push(v);
        }
        Ok(Value::List(out))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = BTreeMap::new();
        while let Some(key) = map.next_key::<String>()? {
            let v = map.next_value_seed(ValueSeed(self.0 + 1))?;
            out.insert(key, v);
        }
        Ok(Value::Map(out))
    }
}

/// A [`Value`] is also a serde `Deserializer`, so a plugin's config (decoded into a `Value`
/// first) deserializes into its `Config` with serde's own, readable type errors
/// (`invalid type: string "high", expected f64`).
impl<'de> Deserializer<'de> for Value {
    type Error = de::value::Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
        use serde::de::value::{MapDeserializer, SeqDeserializer};
        match self {
            Value::Null => visitor.visit_unit(),
            Value::Bool(b) => visitor.visit_bool(b),
            Value::Int(i) => visitor.visit_i64(i),
            Value::UInt(u) => visitor.visit_u64(u),
            Value::Float(f) => visitor.visit_f64(f),
            Value::Str(s) => visitor.visit_string(s),
            Value::List(l) => {
                let mut seq = SeqDeserializer::new(l.into_iter());
                let v = visitor.visit_seq(&mut seq)?;
                seq.end()?;
                Ok(v)
            }
            Value::Map(m) => {
                let mut map = MapDeserializer::new(m.into_iter());
                let v = visitor.visit_map(&mut map)?;
                map.end()?;
                Ok(v)
            }
        }
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
        match self {
            Value::Null => visitor.visit_none(),
            other => visitor.visit_some(other),
        }
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        use serde::de::IntoDeserializer;
        use serde::de::value::{MapAccessDeserializer, MapDeserializer};
        match self {
            // `mode = "fast"`: a unit variant.
            Value::Str(s) => visitor.visit_enum(s.into_deserializer()),
            // `mode = { fast = { … } }`: a variant with data.
            Value::Map(m) if m.len() == 1 => visitor.visit_enum(MapAccessDeserializer::new(
                MapDeserializer::new(m.into_iter()),
            )),
            other => other.deserialize_any(visitor),
        }
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        unit unit_struct seq tuple tuple_struct map struct identifier ignored_any
    }
}

impl<'de> de::IntoDeserializer<'de, de::value::Error> for Value {
    type Deserializer = Value;
    fn into_deserializer(self) -> Value {
        self
    }
}

/// Fluent's EventTime: seconds and nanoseconds since the Unix epoch.
///
/// In MessagePack (any non-human-readable serializer) it is ext type 0 with 8 bytes, big-endian
/// seconds then nanoseconds, written as fixext8 (`D7 00 …`), as Forward receivers expect. In
/// JSON it is a number of seconds with a fraction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct EventTime {
    pub seconds: u32,
    pub nanos: u32,
}

impl EventTime {
    /// From Unix seconds with a fraction (a sample's `end`); clamped to the u32 range.
    pub fn from_unix(seconds: f64) -> EventTime {
        if !(seconds.is_finite() && seconds > 0.0) {
            return EventTime::default();
        }
        let whole = seconds.floor().min(u32::MAX as f64);
        let nanos = ((seconds - whole) * 1e9).round().clamp(0.0, 999_999_999.0);
        EventTime {
            seconds: whole as u32,
            nanos: nanos as u32,
        }
    }

    /// From a wall-clock reading (the caller reads the clock: this crate does no I/O).
    pub fn from_system_time(t: SystemTime) -> EventTime {
        let d = t.duration_since(UNIX_EPOCH).unwrap_or(Duration::ZERO);
        EventTime {
            seconds: u32::try_from(d.as_secs()).unwrap_or(u32::MAX),
            nanos: d.subsec_nanos(),
        }
    }

    pub fn as_f64(self) -> f64 {
        self.seconds as f64 + self.nanos as f64 / 1e9
    }

    /// The 8 payload bytes of the ext value.
    pub fn to_be_bytes(self) -> [u8; 8] {
        let mut b = [0u8; 8];
        b[..4].copy_from_slice(&self.seconds.to_be_bytes());
        b[4..].copy_from_slice(&self.nanos.to_be_bytes());
        b
    }
}

/// rmp-serde writes a newtype struct of this name holding `(type, bytes)` as a MessagePack
/// ext value.
const EXT_STRUCT: &str = "_ExtStruct";

struct RawBytes<'a>(&'a [u8]);

impl Serialize for RawBytes<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bytes(self.0)
    }
}

impl Serialize for EventTime {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if s.is_human_readable() {
            s.serialize_f64(self.as_f64())
        } else {
            let bytes = self.to_be_bytes();
            s.serialize_newtype_struct(EXT_STRUCT, &(0i8, RawBytes(&bytes)))
        }
    }
}

impl<'de> Deserialize<'de> for EventTime {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<EventTime, D::Error> {
        if d.is_human_readable() {
            let s = f64::deserialize(d)?;
            return Ok(EventTime::from_unix(s));
        }
        let (kind, bytes): (i8, ByteBuf) = d.deserialize_newtype_struct(EXT_STRUCT, ExtVisitor)?;
        if kind != 0 || bytes.0.len() != 8 {
            return Err(de::Error::custom(format!(
                "EventTime is ext type 0 with 8 bytes, not type {kind} with {}",
                bytes.0.len()
            )));
        }
        let b = &bytes.0;
        Ok(EventTime {
            seconds: u32::from_be_bytes([b[0], b[1], b[2], b[3]]),
            nanos: u32::from_be_bytes([b[4], b[5], b[6], b[7]]),
        })
    }
}

struct ByteBuf(Vec<u8>);

impl<'de> Deserialize<'de> for ByteBuf {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<ByteBuf, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = ByteBuf;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("bytes")
            }
            fn visit_bytes<E>(self, v: &[u8]) -> Result<ByteBuf, E> {
                Ok(ByteBuf(v.to_vec()))
            }
        }
        d.deserialize_bytes(V)
    }
}

struct ExtVisitor;

impl<'de> Visitor<'de> for ExtVisitor {
    type Value = (i8, ByteBuf);
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a MessagePack ext value")
    }
    fn visit_newtype_struct<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        <(i8, ByteBuf)>::deserialize(d)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let kind = seq
            .next_element()?
            .ok_or_else(|| de::Error::invalid_length(0, &self))?;
        let bytes = seq
            .next_element()?
            .ok_or_else(|| de::Error::invalid_length(1, &self))?;
        Ok((kind, bytes))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn finding() -> Event {
        Event::finding(
            "hdd-saturation",
            State::Raised,
            Severity::Warning,
            "tank/mirror-0/sda",
            "sda was busy 97% of the interval while moving 8.5 MB/s",
        )
        .with_advice("Random I/O on spinning disks: add a special vdev.")
        .with("util_pct", 97.0)
        .with("rotational", true)
        .with("reads", 120u64)
        .with("delta", -3i64)
        .with("disks", vec!["sda", "sdb"])
    }

    #[test]
    fn record_round_trips_as_a_named_map() {
        let e = finding();
        let bytes = e.to_msgpack();
        // A map (fixmap 0x8_), keys by name: not an array of fields.
        assert_eq!(bytes[0] & 0xf0, 0x80);
        assert!(bytes.windows(8).any(|w| w == b"severity"));
        assert_eq!(Event::from_msgpack(&bytes).unwrap(), e);
        // JSON shows the same record.
        let json = serde_json::to_value(&e).unwrap();
        assert_eq!(json["state"], "raised");
        assert_eq!(json["data"]["disks"][1], "sdb");
        assert_eq!(e.tag(), "zpulse.finding");
    }

    #[test]
    fn metrics_have_no_state_and_findings_need_one() {
        let m = Event::metrics("arc", "arc", "ARC 93% hits").with("hit_pct", 93.0);
        assert!(m.validate().is_ok());
        assert!(!String::from_utf8_lossy(&m.to_msgpack()).contains("state"));
        let mut bad = m.clone();
        bad.state = Some(State::Raised);
        assert!(bad.validate().unwrap_err().starts_with("state"));
        let mut bad = finding();
        bad.state = None;
        assert!(bad.validate().unwrap_err().starts_with("state"));
    }

    #[test]
    fn validation_names_the_field() {
        type Mutation = fn(&mut Event);
        let cases: Vec<(Mutation, &str)> = vec![
            (|e| e.v = 2, "v:"),
            (|e| e.check = String::new(), "check"),
            (|e| e.check = "no spaces".into(), "check"),
            (|e| e.check = "x".repeat(65), "check"),
            (|e| e.subject = String::new(), "subject"),
            (|e| e.summary = "two\nlines".into(), "summary"),
            (|e| e.summary = "x".repeat(1025), "summary"),
            (|e| e.advice = Some("\u{7}".into()), "advice"),
            (
                |e| {
                    e.data.insert("bad".into(), Value::Float(f64::NAN));
                },
                "data.bad",
            ),
            (
                |e| {
                    e.data.insert(String::new(), Value::Null);
                },
                "data.",
            ),
            (
                |e| {
                    let deep =
                        Value::List(vec![Value::List(vec![Value::List(vec![Value::List(
                            vec![],
                        )])])]);
                    e.data.insert("deep".into(), deep);
                },
                "data.deep",
            ),
            (
                |e| {
                    for i in 0..300 {
                        e.data.insert(format!("k{i}"), Value::UInt(i));
                    }
                },
                "data:",
            ),
        ];
        for (mutate, field) in cases {
            let mut e = finding();
            mutate(&mut e);
            let err = e.validate().unwrap_err();
            assert!(
                err.starts_with(field),
                "{err:?} should start with {field:?}"
            );
        }
        // Advice may hold steps on several lines.
        let ok = finding().with_advice("1. do this\n2. then that");
        assert!(ok.validate().is_ok());
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        for bytes in [
            &b""[..],
            b"\xc1",
            b"\x2a",
            b"\x93\x01\x02\x03",
            b"\x81\xa1v\x01",
            b"\xdf\xff\xff\xff\xff",
            b"\xdd\xff\xff\xff\xff",
        ] {
            assert!(Event::from_msgpack(bytes).is_err(), "{bytes:?}");
        }
        // An unknown key is a typo to report, not something to drop silently.
        let mut map: BTreeMap<String, Value> = rmp_serde::from_slice(&finding().to_msgpack())
            .map(|v: Value| match v {
                Value::Map(m) => m,
                _ => unreachable!(),
            })
            .unwrap();
        map.insert("sevrity".into(), "info".into());
        let bytes = rmp_serde::to_vec_named(&map).unwrap();
        assert!(Event::from_msgpack(&bytes).unwrap_err().contains("sevrity"));
    }

    #[test]
    fn hostile_nesting_is_refused_while_decoding() {
        // 100 000 nested one-element arrays: would overflow the stack if decoded naively.
        let mut bytes = vec![0x91u8; 100_000];
        bytes.push(0xc0);
        let err = rmp_serde::from_slice::<Value>(&bytes).unwrap_err();
        assert!(err.to_string().contains("nested"), "{err}");
    }

    #[test]
    fn event_time_is_forward_ext_zero() {
        let t = EventTime {
            seconds: 0x6543_2100,
            nanos: 5,
        };
        let bytes = rmp_serde::to_vec(&t).unwrap();
        assert_eq!(
            bytes,
            [0xd7, 0x00, 0x65, 0x43, 0x21, 0x00, 0x00, 0x00, 0x00, 0x05]
        );
        assert_eq!(rmp_serde::from_slice::<EventTime>(&bytes).unwrap(), t);
        // ext8 with length 8 is the other spelling receivers accept.
        let ext8 = [
            0xc7, 0x08, 0x00, 0x65, 0x43, 0x21, 0x00, 0x00, 0x00, 0x00, 0x05,
        ];
        assert_eq!(rmp_serde::from_slice::<EventTime>(&ext8).unwrap(), t);
        let half = EventTime {
            nanos: 500_000_000,
            ..t
        };
        assert_eq!(serde_json::to_string(&half).unwrap(), "1698898176.5");
        let t = EventTime::from_unix(1_700_000_000.25);
        assert_eq!((t.seconds, t.nanos), (1_700_000_000, 250_000_000));
        assert_eq!(EventTime::from_unix(-1.0), EventTime::default());
        assert_eq!(EventTime::from_unix(1e12).seconds, u32::MAX);
    }

    #[test]
    fn value_numbers_keep_one_spelling() {
        let v: Value = rmp_serde::from_slice(&rmp_serde::to_vec(&Value::Int(7)).unwrap()).unwrap();
        assert_eq!(v, Value::UInt(7));
        assert_eq!(Value::from(7i32), Value::UInt(7));
        let v: Value = rmp_serde::from_slice(&rmp_serde::to_vec(&Value::Int(-7)).unwrap()).unwrap();
        assert_eq!(v, Value::Int(-7));
        assert_eq!(Value::from(Some(2.5)).as_f64(), Some(2.5));
        assert_eq!(Value::from(None::<u32>), Value::Null);
    }
}
