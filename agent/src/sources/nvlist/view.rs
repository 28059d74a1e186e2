//! A decoded reply read in place: lists, pairs and values as views of the packed bytes and
//! of the [`Decoder`](super::Decoder)'s index, nothing copied until a value is asked for.
//!
//! Lookups compare names as bytes, as libnvpair's `strcmp` does: a name is turned into text
//! only when handed out ([`PairView::name`]). A name that is not UTF-8 therefore matches no
//! lookup (every `&str` key is UTF-8), where the owned tree of [`decode`](super::decode),
//! which replaces its bad bytes, would answer to the replaced name: a hostile reply cannot
//! make a pair answer to a name it does not hold. Lookups return the last pair of the name,
//! as [`NvList::get`] does.

use super::decode::{Entry, Order, POINTER, Span, fixed_value, fixed_width, text};
use super::value::{DataType, NvList, NvPair, NvValue, U64s};
use std::borrow::Cow;
use std::fmt;

/// The bytes of a reply (`'a`) and the index of its pairs and lists (`'i`), as the decoder
/// proved them. Two lifetimes so that [`super::decode`] can build a tree that borrows from
/// the bytes only, its index dropped.
#[derive(Clone, Copy)]
pub(super) struct Reply<'i, 'a> {
    pub(super) bytes: &'a [u8],
    pub(super) order: Order,
    pub(super) entries: &'i [Entry],
    pub(super) lists: &'i [Span],
}

impl<'a> Reply<'a, 'a> {
    fn list(self, index: usize) -> ListView<'a> {
        let (pairs, nvflag) = self.span(index);
        ListView {
            reply: self,
            pairs,
            nvflag,
        }
    }
}

impl<'i, 'a> Reply<'i, 'a> {
    /// List `index`'s pairs and `nvl_nvflag`.
    fn span(self, index: usize) -> (&'i [Entry], u32) {
        let span = self.lists.get(index).copied().unwrap_or_default();
        let pairs = self.entries.get(span.start..span.end).unwrap_or_default();
        (pairs, span.nvflag)
    }

    /// The name's bytes, without the NUL. The index only holds checked pairs, so the
    /// fallbacks of this and [`Reply::value`] are never taken; they keep a view from
    /// panicking whatever happens.
    fn name(self, entry: &Entry) -> &'a [u8] {
        let at = entry.name_at();
        self.bytes
            .get(at..at + usize::from(entry.name_len))
            .unwrap_or_default()
    }

    /// The first `len` bytes of the value.
    fn value(self, entry: &Entry, len: usize) -> &'a [u8] {
        let at = entry.value_at();
        self.bytes.get(at..at + len).unwrap_or_default()
    }

    /// The value of a fixed-width type: its `nelem` elements.
    fn fixed(self, entry: &Entry) -> &'a [u8] {
        self.value(entry, entry.nelem as usize * fixed_width(entry.data_type))
    }

    /// List `index` as an owned tree ([`super::decode`]). Recursion is bounded by the
    /// decoder's depth limit.
    pub(super) fn tree(self, index: usize) -> NvList<'a> {
        let (entries, nvflag) = self.span(index);
        let pairs = entries
            .iter()
            .map(|entry| NvPair {
                name: text(self.name(entry)),
                value: self.owned(entry),
            })
            .collect();
        NvList::from_pairs(nvflag, pairs)
    }

    fn owned(self, entry: &Entry) -> NvValue<'a> {
        match entry.data_type {
            DataType::String => NvValue::String(text(self.value(entry, entry.extra))),
            DataType::StringArray => NvValue::StringArray(self.strings(entry).collect()),
            DataType::NvList => NvValue::NvList(self.tree(entry.extra)),
            DataType::NvListArray => NvValue::NvListArray(
                (0..entry.nelem as usize)
                    .map(|i| self.tree(entry.extra + i))
                    .collect(),
            ),
            ty => fixed_value(ty, self.fixed(entry), self.order),
        }
    }

    /// A `STRING_ARRAY`'s strings: after the `nelem` pointer slots, C strings back to back.
    fn strings(self, entry: &Entry) -> impl Iterator<Item = Cow<'a, str>> {
        let value = self.value(entry, entry.extra);
        let slots = (entry.nelem as usize * POINTER).min(value.len());
        value[slots..]
            .split(|&b| b == 0)
            .take(entry.nelem as usize)
            .map(text)
    }
}

/// One list of a decoded reply (the top-level one, an `NVLIST` value or an element of an
/// `NVLIST_ARRAY`), read in place.
#[derive(Clone, Copy)]
pub struct ListView<'a> {
    reply: Reply<'a, 'a>,
    pairs: &'a [Entry],
    nvflag: u32,
}

impl<'a> ListView<'a> {
    pub(super) fn top(reply: Reply<'a, 'a>) -> Self {
        reply.list(0)
    }

    /// The `nvl_nvflag` from the stream (1 = `NV_UNIQUE_NAME`, 2 = `NV_UNIQUE_NAME_TYPE`).
    pub fn nvflag(&self) -> u32 {
        self.nvflag
    }

    pub fn len(&self) -> usize {
        self.pairs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.pairs.is_empty()
    }

    /// The pairs, in stream order.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = PairView<'a>> + ExactSizeIterator {
        let reply = self.reply;
        self.pairs
            .iter()
            .map(move |entry| PairView { reply, entry })
    }

    /// The last pair named `name` (libnvpair's lookup semantics), names compared as bytes.
    pub fn get(&self, name: &str) -> Option<PairView<'a>> {
        let key = name.as_bytes();
        let reply = self.reply;
        self.pairs
            .iter()
            .rev()
            // The length first: most names of a list differ from the key in it.
            .find(|e| usize::from(e.name_len) == key.len() && reply.name(e) == key)
            .map(|entry| PairView { reply, entry })
    }

    /// Whether a pair named `name` exists, whatever its type: how `BOOLEAN` flags are
    /// tested.
    pub fn contains(&self, name: &str) -> bool {
        self.get(name).is_some()
    }

    /// A `UINT64` pair's value.
    pub fn u64(&self, name: &str) -> Option<u64> {
        self.get(name)?.as_u64()
    }

    /// A `STRING` pair's value.
    pub fn str(&self, name: &str) -> Option<Cow<'a, str>> {
        self.get(name)?.as_str()
    }

    /// A `BOOLEAN_VALUE` pair's value, or `true` for a `BOOLEAN` flag.
    pub fn bool(&self, name: &str) -> Option<bool> {
        self.get(name)?.as_bool()
    }

    /// A `UINT64_ARRAY` pair's elements, read when asked.
    pub fn u64_array(&self, name: &str) -> Option<U64s<'a>> {
        self.get(name)?.as_u64_array()
    }

    /// An `NVLIST` pair's list.
    pub fn nvlist(&self, name: &str) -> Option<ListView<'a>> {
        self.get(name)?.as_nvlist()
    }

    /// An `NVLIST_ARRAY` pair's lists.
    pub fn nvlist_array(&self, name: &str) -> Option<ListArrayView<'a>> {
        self.get(name)?.as_nvlist_array()
    }

    /// The list as an owned tree, as [`super::decode`] would give it.
    pub fn to_nvlist(&self) -> NvList<'a> {
        let pairs = self.iter().map(|p| NvPair {
            name: p.name(),
            value: p.value(),
        });
        NvList::from_pairs(self.nvflag, pairs.collect())
    }
}

impl fmt::Debug for ListView<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.to_nvlist().fmt(f)
    }
}

/// One pair of a decoded reply, read in place.
#[derive(Clone, Copy)]
pub struct PairView<'a> {
    reply: Reply<'a, 'a>,
    entry: &'a Entry,
}

impl<'a> PairView<'a> {
    /// The name's bytes as the stream holds them (without the NUL).
    pub fn name_bytes(&self) -> &'a [u8] {
        self.reply.name(self.entry)
    }

    /// The name as text: borrowed when it is UTF-8, else with each bad sequence replaced.
    pub fn name(&self) -> Cow<'a, str> {
        text(self.name_bytes())
    }

    pub fn data_type(&self) -> DataType {
        self.entry.data_type
    }

    /// The value as an owned [`NvValue`] (an embedded list as a tree of its own).
    pub fn value(&self) -> NvValue<'a> {
        self.reply.owned(self.entry)
    }

    /// A `UINT64` value.
    pub fn as_u64(&self) -> Option<u64> {
        (self.entry.data_type == DataType::Uint64)
            .then(|| self.reply.order.u64(self.reply.fixed(self.entry)))
    }

    /// A `STRING` value, as text: borrowed when it is UTF-8, else with each bad sequence
    /// replaced.
    pub fn as_str(&self) -> Option<Cow<'a, str>> {
        (self.entry.data_type == DataType::String)
            .then(|| text(self.reply.value(self.entry, self.entry.extra)))
    }

    /// `BOOLEAN_VALUE` as itself, and a `BOOLEAN` flag as `true` (present means set).
    pub fn as_bool(&self) -> Option<bool> {
        match self.entry.data_type {
            DataType::Boolean => Some(true),
            // Checked to be 0 or 1.
            DataType::BooleanValue => Some(self.reply.order.i32(self.reply.fixed(self.entry)) == 1),
            _ => None,
        }
    }

    /// A `UINT64_ARRAY`, its elements read when asked.
    pub fn as_u64_array(&self) -> Option<U64s<'a>> {
        (self.entry.data_type == DataType::Uint64Array)
            .then(|| U64s::packed(self.reply.fixed(self.entry), self.reply.order))
    }

    /// An embedded `NVLIST`.
    pub fn as_nvlist(&self) -> Option<ListView<'a>> {
        (self.entry.data_type == DataType::NvList).then(|| self.reply.list(self.entry.extra))
    }

    /// An `NVLIST_ARRAY`'s elements.
    pub fn as_nvlist_array(&self) -> Option<ListArrayView<'a>> {
        (self.entry.data_type == DataType::NvListArray).then_some(ListArrayView {
            reply: self.reply,
            first: self.entry.extra,
            len: self.entry.nelem as usize,
        })
    }
}

impl fmt::Debug for PairView<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PairView")
            .field("name", &self.name())
            .field("value", &self.value())
            .finish()
    }
}

/// The elements of an `NVLIST_ARRAY`, read in place.
#[derive(Clone, Copy)]
pub struct ListArrayView<'a> {
    reply: Reply<'a, 'a>,
    /// The first element's index in the reply's lists; the others follow it.
    first: usize,
    len: usize,
}

impl<'a> ListArrayView<'a> {
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Element `i`, if there is one.
    pub fn get(&self, i: usize) -> Option<ListView<'a>> {
        (i < self.len).then(|| self.reply.list(self.first + i))
    }

    /// The elements, in order.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = ListView<'a>> + ExactSizeIterator {
        let reply = self.reply;
        (self.first..self.first + self.len).map(move |i| reply.list(i))
    }
}

impl fmt::Debug for ListArrayView<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}
