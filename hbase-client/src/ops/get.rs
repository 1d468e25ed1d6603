//! `Get`: read one row.

use crate::rpc::varint;
use bytes::{Buf, BufMut, Bytes};
use prost::encoding;

/// Reads one row, optionally narrowed to families or columns.
#[derive(Debug, Clone)]
pub struct Get {
    pub(crate) row: Bytes,
    columns: super::columns::Columns,
    max_versions: Option<u32>,
    time_range: Option<(u64, u64)>,
    filter: Option<super::Filter>,
    existence_only: bool,
    consistency: super::Consistency,
}

impl Get {
    /// A get of every column of `row`.
    pub fn new(row: impl Into<Bytes>) -> Get {
        Get {
            row: row.into(),
            columns: Default::default(),
            max_versions: None,
            time_range: None,
            filter: None,
            existence_only: false,
            consistency: super::Consistency::Strong,
        }
    }

    /// The row key.
    pub fn row(&self) -> &Bytes {
        &self.row
    }

    /// Adds a whole family.
    pub fn family(mut self, family: impl Into<Bytes>) -> Get {
        self.columns.add_family(family.into());
        self
    }

    /// Adds one column.
    pub fn column(mut self, family: impl Into<Bytes>, qualifier: impl Into<Bytes>) -> Get {
        self.columns.add_column(family.into(), qualifier.into());
        self
    }

    /// Returns up to `n` versions of each column (default 1).
    pub fn max_versions(mut self, n: u32) -> Get {
        self.max_versions = Some(n.max(1));
        self
    }

    /// Only cells with `from <= timestamp < to`.
    pub fn time_range(mut self, from: u64, to: u64) -> Get {
        self.time_range = Some((from, to));
        self
    }

    /// A server-side filter.
    pub fn filter(mut self, filter: super::Filter) -> Get {
        self.filter = Some(filter);
        self
    }

    /// Which replicas may answer (default [`Consistency::Strong`](super::Consistency)).
    /// With [`Consistency::Timeline`](super::Consistency::Timeline) the result says whether
    /// it is stale ([`RowResult::is_stale`](crate::RowResult::is_stale)).
    pub fn consistency(mut self, consistency: super::Consistency) -> Get {
        self.consistency = consistency;
        self
    }

    /// Ask only whether the row exists (see [`Table::exists`](crate::Table::exists)).
    pub(crate) fn existence_only(mut self) -> Get {
        self.existence_only = true;
        self
    }

    /// The get as prost's message (a Multi's Get actions). Keep in step with [`GetMessage`],
    /// which writes the same bytes without building it (a unit test compares the two).
    pub(crate) fn to_proto(&self) -> hbase_proto::Get {
        hbase_proto::Get {
            row: self.row.clone(),
            column: self.columns.to_proto(),
            max_versions: self.max_versions,
            time_range: self.time_range.map(super::time_range_proto),
            filter: self.filter.as_ref().map(super::Filter::to_proto),
            existence_only: self.existence_only.then_some(true),
            consistency: self.consistency.to_proto(),
            ..Default::default()
        }
    }
}

/// A get as the `Get` message, encoded from the get itself: prost's encoding of
/// [`Get::to_proto`] needs an `hbase_proto::Get`, whose row and families are reference-counted
/// clones and whose columns are a vector allocated per get. The bytes are prost's (tested).
pub(crate) struct GetMessage<'a> {
    get: &'a Get,
    /// The filter's message, built once for its length and its bytes (only a get with a
    /// filter pays for it).
    filter: Option<hbase_proto::Filter>,
}

impl<'a> GetMessage<'a> {
    pub(crate) fn new(get: &'a Get) -> GetMessage<'a> {
        GetMessage {
            get,
            filter: get.filter.as_ref().map(super::Filter::to_proto),
        }
    }

    fn time_range(&self) -> Option<hbase_proto::TimeRange> {
        self.get.time_range.map(super::time_range_proto)
    }
}

impl prost::Message for GetMessage<'_> {
    // Fields in tag order, as prost writes them: row (1), column (2), filter (4), time_range
    // (5), max_versions (6), existence_only (10, only when true), consistency (12, only when
    // not STRONG).
    fn encode_raw(&self, buf: &mut impl BufMut) {
        let g = self.get;
        super::put_bytes_field(1, &g.row, buf);
        g.columns.encode(2, buf);
        if let Some(filter) = &self.filter {
            encoding::message::encode(4, filter, buf);
        }
        if let Some(range) = &self.time_range() {
            encoding::message::encode(5, range, buf);
        }
        if let Some(n) = &g.max_versions {
            varint::put_uint32(6, *n, buf);
        }
        if g.existence_only {
            varint::put_bool(10, true, buf);
        }
        if let Some(c) = &g.consistency.to_proto() {
            varint::put_int32(12, *c, buf);
        }
    }

    fn encoded_len(&self) -> usize {
        let g = self.get;
        encoding::bytes::encoded_len(1, &g.row)
            + g.columns.encoded_len(2)
            + self
                .filter
                .as_ref()
                .map_or(0, |f| encoding::message::encoded_len(4, f))
            + self
                .time_range()
                .map_or(0, |r| encoding::message::encoded_len(5, &r))
            + g.max_versions
                .map_or(0, |n| encoding::uint32::encoded_len(6, &n))
            + if g.existence_only {
                encoding::bool::encoded_len(10, &true)
            } else {
                0
            }
            + g.consistency
                .to_proto()
                .map_or(0, |c| encoding::int32::encoded_len(12, &c))
    }

    fn merge_field(
        &mut self,
        tag: u32,
        wire_type: encoding::WireType,
        buf: &mut impl Buf,
        ctx: encoding::DecodeContext,
    ) -> Result<(), prost::DecodeError> {
        // Encode only: nothing is ever decoded into it.
        encoding::skip_field(wire_type, tag, buf, ctx)
    }

    fn clear(&mut self) {}
}

/// The `Result` of a `GetResponse` that holds only its counts and flags (its cells in the cell
/// block), as nearly every get's answer does, decoded as prost would decode it (a repeated
/// field's last value wins). `Some(None)` for an answer without a `Result` (no such row
/// narrowed away, or an empty message). `None` when the answer holds anything else: inline
/// cells, metrics, a second `Result`, another field or wire type, a malformed varint or length;
/// prost decodes it then, and says what is wrong. prost's decoding of the message cost about
/// 200 instructions a get (`ycsb` workload C, callgrind).
pub(crate) fn plain_get_response(mut b: &[u8]) -> Option<Option<hbase_proto::Result>> {
    use prost::encoding::decode_varint;
    let Some((&key, rest)) = b.split_first() else {
        return Some(None);
    };
    // result = 1, length-delimited, and nothing after it.
    if key != 0x0a {
        return None;
    }
    b = rest;
    let len = usize::try_from(decode_varint(&mut b).ok()?).ok()?;
    if b.len() != len {
        return None;
    }
    let mut result = hbase_proto::Result::default();
    while let Some((&key, rest)) = b.split_first() {
        b = rest;
        // Fields 2 to 5, all varints: associated_cell_count (int32: the low 32 bits, as prost
        // keeps them), exists, stale, partial (bools: any value but 0 is true).
        if !matches!(key, 0x10 | 0x18 | 0x20 | 0x28) {
            return None;
        }
        let value = decode_varint(&mut b).ok()?;
        match key {
            0x10 => result.associated_cell_count = Some(value as i32),
            0x18 => result.exists = Some(value != 0),
            0x20 => result.stale = Some(value != 0),
            _ => result.partial = Some(value != 0),
        }
    }
    Some(Some(result))
}

#[cfg(test)]
mod tests {
    use prost::Message;

    use super::*;

    fn prost_result(bytes: &[u8]) -> Option<Option<hbase_proto::Result>> {
        hbase_proto::GetResponse::decode(bytes)
            .ok()
            .map(|r| r.result)
    }

    #[test]
    fn plain_answers_decode_as_prost_decodes_them() {
        let answers = [
            hbase_proto::GetResponse { result: None },
            hbase_proto::GetResponse {
                result: Some(hbase_proto::Result::default()),
            },
            hbase_proto::GetResponse {
                result: Some(hbase_proto::Result {
                    associated_cell_count: Some(10),
                    stale: Some(false),
                    ..Default::default()
                }),
            },
            hbase_proto::GetResponse {
                result: Some(hbase_proto::Result {
                    associated_cell_count: Some(-1),
                    exists: Some(true),
                    stale: Some(true),
                    partial: Some(true),
                    ..Default::default()
                }),
            },
        ];
        for answer in answers {
            let bytes = answer.encode_to_vec();
            assert_eq!(plain_get_response(&bytes), Some(answer.result), "{bytes:?}");
        }
    }

    #[test]
    fn answers_with_cells_or_metrics_are_left_to_prost() {
        let with_cell = hbase_proto::GetResponse {
            result: Some(hbase_proto::Result {
                cell: vec![hbase_proto::Cell::default()],
                ..Default::default()
            }),
        };
        assert_eq!(plain_get_response(&with_cell.encode_to_vec()), None);
        // Two results: prost merges them.
        let one = hbase_proto::GetResponse {
            result: Some(hbase_proto::Result {
                associated_cell_count: Some(3),
                ..Default::default()
            }),
        }
        .encode_to_vec();
        assert_eq!(plain_get_response(&[&one[..], &one[..]].concat()), None);
    }

    /// One field of a `Result`, as bytes, and whether it is of the plain shape: a key (one of
    /// the four plain fields, or another field or wire type) and a varint that is canonical,
    /// padded (valid, not minimal), ten bytes and overflowing, or cut short.
    fn field() -> impl proptest::strategy::Strategy<Value = (Vec<u8>, bool)> {
        use proptest::prelude::*;
        let key = prop_oneof![
            4 => prop_oneof![Just(0x10u8), Just(0x18u8), Just(0x20u8), Just(0x28u8)],
            1 => prop_oneof![Just(0x08u8), Just(0x0au8), Just(0x12u8), Just(0x30u8), Just(0x90u8)],
            1 => any::<u8>(),
        ];
        let varint = prop_oneof![
            4 => any::<u64>().prop_map(|v| {
                let mut b = Vec::new();
                prost::encoding::encode_varint(v, &mut b);
                (b, true)
            }),
            1 => (any::<u8>(), 1usize..=9).prop_map(|(v, pad)| {
                let mut b = vec![v | 0x80];
                b.extend(std::iter::repeat_n(0x80, pad - 1));
                b.push(0);
                (b, true)
            }),
            1 => proptest::collection::vec(0x80u8..=0xff, 9).prop_map(|mut b| {
                b.push(0x02);
                (b, false)
            }),
            1 => proptest::collection::vec(0x80u8..=0xff, 0..4).prop_map(|b| (b, false)),
        ];
        (key, varint).prop_map(|(k, (v, valid))| {
            let plain = valid && matches!(k, 0x10 | 0x18 | 0x20 | 0x28);
            let mut b = vec![k];
            b.extend(v);
            (b, plain)
        })
    }

    proptest::proptest! {
        /// Answers built field by field (in any order, repeated, padded, overflowing, cut
        /// short, inside a length that is right or one off, with or without trailing bytes):
        /// the plain decoder agrees with prost whenever it decodes, and decodes every answer
        /// of the plain shape.
        #[test]
        fn agrees_with_prost_and_declines_only_what_is_not_plain(
            fields in proptest::collection::vec(field(), 0..6),
            len_off in proptest::prop_oneof![6 => proptest::prelude::Just(0i64), 1 => proptest::prelude::Just(-1i64), 1 => proptest::prelude::Just(1i64)],
            trailing in proptest::prop_oneof![4 => proptest::prelude::Just(Vec::new()), 1 => proptest::collection::vec(proptest::prelude::any::<u8>(), 1..4)],
        ) {
            let inner: Vec<u8> = fields.iter().flat_map(|(b, _)| b.iter().copied()).collect();
            let mut bytes = vec![0x0a];
            let len = (inner.len() as i64 + len_off).max(0) as u64;
            prost::encoding::encode_varint(len, &mut bytes);
            bytes.extend(&inner);
            bytes.extend(&trailing);
            let ours = plain_get_response(&bytes);
            if let Some(ours) = &ours {
                proptest::prop_assert_eq!(Some(ours.clone()), prost_result(&bytes));
            }
            let plain = fields.iter().all(|(_, plain)| *plain)
                && len == inner.len() as u64
                && trailing.is_empty();
            if plain {
                proptest::prop_assert!(ours.is_some(), "declined a plain answer: {:?}", bytes);
            }
        }

        /// Whatever the bytes, the plain decoder either declines or agrees with prost.
        #[test]
        fn never_disagrees_with_prost(
            bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..24),
        ) {
            if let Some(ours) = plain_get_response(&bytes) {
                proptest::prop_assert_eq!(Some(ours), prost_result(&bytes));
            }
        }

        /// Answers of the plain shape, with any values, are always decoded here.
        #[test]
        fn decodes_every_plain_answer(
            count in proptest::option::of(proptest::prelude::any::<i32>()),
            exists in proptest::option::of(proptest::prelude::any::<bool>()),
            stale in proptest::option::of(proptest::prelude::any::<bool>()),
            partial in proptest::option::of(proptest::prelude::any::<bool>()),
        ) {
            let answer = hbase_proto::GetResponse {
                result: Some(hbase_proto::Result {
                    associated_cell_count: count,
                    exists,
                    stale,
                    partial,
                    ..Default::default()
                }),
            };
            let bytes = answer.encode_to_vec();
            proptest::prop_assert_eq!(plain_get_response(&bytes), Some(answer.result));
        }
    }
}
