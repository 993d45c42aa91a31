//! A stored object's index and the bytes it points into, in one allocation: a count, the spans
//! (four bytes each when the bytes are under 64 KiB, as nearly every object's are, else eight)
//! and the bytes. One allocation instead of two, and half the index, is what keeps a small
//! object's text and index inside one allocator size class (see "Memory: how objects are stored" in
//! the repository's `docs/performance.md`).

use super::json_scan::Span;

/// The top bit of the count: the spans are eight bytes each.
const WIDE: u32 = 1 << 31;
/// Where the spans start.
const SPANS: usize = 4;

/// Spans and the bytes they point into.
pub(super) struct Packed(Box<[u8]>);

/// A span in four bytes: its start, and its length with the escape flag in the top bit.
fn narrow(span: &Span) -> Option<[u8; 4]> {
    let (start, len) = span.to_raw();
    let escaped = len & Span::ESCAPED != 0;
    let (start, len) = (u16::try_from(start).ok()?, u16::try_from(len & !Span::ESCAPED).ok()?);
    if len & 0x8000 != 0 {
        return None;
    }
    let len = if escaped { len | 0x8000 } else { len };
    let mut out = [0; 4];
    out[..2].copy_from_slice(&start.to_le_bytes());
    out[2..].copy_from_slice(&len.to_le_bytes());
    Some(out)
}

impl Packed {
    /// `spans` (into `body`) and `body`, packed. A count holds 2^31 - 1 spans, more than the
    /// labels of any object a store takes (spans point into at most 4 GiB).
    pub(super) fn new(spans: &[Span], body: &[u8]) -> Self {
        let spans = &spans[..spans.len().min((WIDE - 1) as usize)];
        let count = spans.len() as u32;
        let narrowed: Option<Vec<[u8; 4]>> = spans.iter().map(narrow).collect();
        let width = if narrowed.is_some() { 4 } else { 8 };
        let mut out = Vec::with_capacity(SPANS + width * spans.len() + body.len());
        match narrowed {
            Some(spans) => {
                out.extend_from_slice(&count.to_le_bytes());
                spans.iter().for_each(|s| out.extend_from_slice(s));
            }
            None => {
                out.extend_from_slice(&(count | WIDE).to_le_bytes());
                for (start, len) in spans.iter().map(Span::to_raw) {
                    out.extend_from_slice(&start.to_le_bytes());
                    out.extend_from_slice(&len.to_le_bytes());
                }
            }
        }
        out.extend_from_slice(body);
        Self(out.into_boxed_slice())
    }

    fn header(&self) -> (usize, usize) {
        let word = self.0.first_chunk::<4>().map_or(0, |w| u32::from_le_bytes(*w));
        let width = if word & WIDE == 0 { 4 } else { 8 };
        ((word & !WIDE) as usize, width)
    }

    /// How many spans there are.
    pub(super) fn span_count(&self) -> usize {
        self.header().0
    }

    /// The bytes the spans point into.
    pub(super) fn body(&self) -> &[u8] {
        let (count, width) = self.header();
        self.0.get(SPANS + count * width..).unwrap_or_default()
    }

    /// Span `i`.
    pub(super) fn span(&self, i: usize) -> Option<Span> {
        let (count, width) = self.header();
        if i >= count {
            return None;
        }
        let at = SPANS + i * width;
        let bytes = self.0.get(at..at + width)?;
        if width == 4 {
            let start = u16::from_le_bytes([bytes[0], bytes[1]]);
            let len = u16::from_le_bytes([bytes[2], bytes[3]]);
            let escaped = if len & 0x8000 != 0 { Span::ESCAPED } else { 0 };
            return Some(Span::from_raw(u32::from(start), u32::from(len & 0x7fff) | escaped));
        }
        let start = u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
        let len = u32::from_le_bytes([bytes[4], bytes[5], bytes[6], bytes[7]]);
        Some(Span::from_raw(start, len))
    }

    /// Spans `from..` in order.
    pub(super) fn spans_from(&self, from: usize) -> impl Iterator<Item = Span> + '_ {
        (from..self.span_count()).filter_map(|i| self.span(i))
    }

    /// Bytes allocated besides the body.
    #[cfg(test)]
    pub(super) fn index_len(&self) -> usize {
        self.0.len() - self.body().len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Whatever the spans, they and the bytes read back as they were put in, narrow when
        /// they fit in four bytes.
        #[test]
        fn spans_and_bytes_read_back(raw in prop::collection::vec((any::<u32>(), any::<u32>()), 0..8), body in prop::collection::vec(any::<u8>(), 0..64)) {
            let spans: Vec<Span> = raw.iter().map(|(s, l)| Span::from_raw(*s, *l)).collect();
            let packed = Packed::new(&spans, &body);
            prop_assert_eq!(packed.body(), &body[..]);
            prop_assert_eq!(packed.spans_from(0).collect::<Vec<_>>(), spans.clone());
            prop_assert_eq!(packed.span(spans.len()), None);
            let fits = spans.iter().all(|s| narrow(s).is_some());
            prop_assert_eq!(packed.index_len(), SPANS + spans.len() * if fits { 4 } else { 8 });
        }
    }

    #[test]
    fn a_span_fits_four_bytes_up_to_64_kib_and_32_kib_long() {
        let fits = |start, len| narrow(&Span::from_raw(start, len)).is_some();
        assert!(fits(65_535, 32_767) && fits(3, 5 | Span::ESCAPED));
        assert!(!fits(65_536, 1) && !fits(0, 32_768) && !fits(0, 32_768 | Span::ESCAPED));
    }
}
