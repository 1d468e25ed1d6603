//! Request types (what a caller builds) and their protobuf encodings.

mod action;
mod check_and_mutate;
mod columns;
mod delete;
mod filter;
mod get;
mod increment;
mod java_heap;
mod put;
mod raw_row;
mod row_mutations;
mod row_result;
mod scan;
mod scan_response;

pub use action::{Action, ActionResult, Mutation};
pub use check_and_mutate::CheckAndMutate;
pub(crate) use check_and_mutate::Then;
pub use delete::Delete;
pub use filter::{Comparator, CompareOp, Filter};
pub use get::Get;
pub(crate) use get::{plain_get_response, GetMessage};
pub use increment::{Append, Increment};
pub use put::{Durability, Put};
pub(crate) use raw_row::{raw_from_proto, raw_rows_from_scan};
pub use raw_row::{RawCells, RawRow};
pub use row_mutations::{RowMutation, RowMutations};
pub(crate) use row_result::result_from_proto;
pub use row_result::results_from_scan;
pub use row_result::RowResult;
pub use scan::{
    Consistency, ReadType, Scan, DEFAULT_SCANNER_CACHING, DEFAULT_SCANNER_MAX_RESULT_SIZE,
};

use crate::rpc::varint;
use bytes::{Buf, BufMut, Bytes};

/// A request addressed to a region (`GetRequest`, `MutateRequest`: the region specifier is
/// field 1) whose other fields were encoded once, before the attempts: only the region
/// depends on where an attempt goes. Encoding the whole prost request for every attempt
/// cloned the get or mutation and computed its length twice (about 1,000 instructions of a
/// get). The bytes are those prost writes for the whole request (fields in number order).
/// Only ever encoded (as `multi_request::Encoded`): nothing decodes into it.
#[derive(Debug)]
pub(crate) struct RegionRequest<'a> {
    /// The region's name (a `REGION_NAME` specifier).
    pub(crate) region: Bytes,
    /// Fields 2 and later, encoded (see [`EncodedFields`]).
    pub(crate) rest: &'a [u8],
}

/// Request fields encoded ahead of the attempts (a [`RegionRequest`]'s `rest`): on the stack
/// when they are short, as a get's are, so that encoding them ahead costs no allocation.
pub(crate) enum EncodedFields {
    Inline([u8; INLINE_FIELDS], usize),
    Heap(Vec<u8>),
}

/// Bytes of encoded fields kept on the stack.
const INLINE_FIELDS: usize = 120;

impl EncodedFields {
    /// Message `msg` as field `tag`.
    pub(crate) fn message(tag: u32, msg: &impl prost::Message) -> EncodedFields {
        let len = msg.encoded_len();
        EncodedFields::with_len(message_field_len(tag, len), |buf| {
            put_message_field(tag, msg, len, buf)
        })
    }

    /// A `MutateRequest`'s fields after the region: mutation (2), condition (3), nonce group
    /// (4).
    pub(crate) fn mutate(
        mutation: &hbase_proto::MutationProto,
        condition: Option<&hbase_proto::Condition>,
        nonce_group: Option<u64>,
    ) -> EncodedFields {
        let m = prost::Message::encoded_len(mutation);
        let c = condition.map(prost::Message::encoded_len);
        let len = message_field_len(2, m)
            + c.map_or(0, |c| message_field_len(3, c))
            + nonce_group.map_or(0, |g| prost::encoding::uint64::encoded_len(4, &g));
        EncodedFields::with_len(len, |buf| {
            put_message_field(2, mutation, m, buf);
            if let (Some(cond), Some(c)) = (condition, c) {
                put_message_field(3, cond, c, buf);
            }
            if let Some(group) = nonce_group {
                varint::put_uint64(4, group, buf);
            }
        })
    }

    /// `len` bytes, written by `encode`.
    ///
    /// Both branches hand `encode` the same concrete buffer type, a byte slice of exactly
    /// `len`: prost's encoders are then compiled for it and inlined, where through a
    /// `&mut dyn BufMut` every byte of every varint was a virtual call (a get's fields cost
    /// 424 instructions that way; `benches/instructions`).
    fn with_len(len: usize, encode: impl FnOnce(&mut &mut [u8])) -> EncodedFields {
        if len <= INLINE_FIELDS {
            let mut inline = [0u8; INLINE_FIELDS];
            let mut rest: &mut [u8] = &mut inline[..len];
            encode(&mut rest);
            assert!(rest.is_empty(), "encoded fields shorter than their length");
            EncodedFields::Inline(inline, len)
        } else {
            let mut heap = vec![0u8; len];
            let mut rest: &mut [u8] = &mut heap[..];
            encode(&mut rest);
            assert!(rest.is_empty(), "encoded fields shorter than their length");
            EncodedFields::Heap(heap)
        }
    }

    pub(crate) fn as_slice(&self) -> &[u8] {
        match self {
            EncodedFields::Inline(inline, len) => &inline[..*len],
            EncodedFields::Heap(heap) => heap,
        }
    }
}

/// The encoded length of a message field of `len` bytes.
fn message_field_len(tag: u32, len: usize) -> usize {
    prost::encoding::key_len(tag) + prost::encoding::encoded_len_varint(len as u64) + len
}

/// `RegionSpecifier.type` = `REGION_NAME`.
const REGION_NAME: u64 = 1;

impl RegionRequest<'_> {
    /// The length of the encoded `RegionSpecifier` message.
    fn specifier_len(&self) -> usize {
        // type (field 1, varint 1) and value (field 2, bytes).
        2 + 1 + prost::encoding::encoded_len_varint(self.region.len() as u64) + self.region.len()
    }
}

impl prost::Message for RegionRequest<'_> {
    fn encoded_len(&self) -> usize {
        let spec = self.specifier_len();
        1 + prost::encoding::encoded_len_varint(spec as u64) + spec + self.rest.len()
    }

    fn merge_field(
        &mut self,
        tag: u32,
        wire_type: prost::encoding::WireType,
        buf: &mut impl Buf,
        ctx: prost::encoding::DecodeContext,
    ) -> Result<(), prost::DecodeError> {
        prost::encoding::skip_field(wire_type, tag, buf, ctx)
    }

    fn clear(&mut self) {
        self.rest = &[];
    }

    fn encode_raw(&self, buf: &mut impl BufMut) {
        varint::put_len_key(1, self.specifier_len(), buf);
        varint::put_uint64(1, REGION_NAME, buf);
        varint::put_len_key(2, self.region.len(), buf);
        buf.put_slice(&self.region);
        buf.put_slice(self.rest);
    }
}

/// Writes `msg` (encoded length `len`, computed once: prost's `message::encode` computes it
/// again) as field `tag`.
fn put_message_field(tag: u32, msg: &impl prost::Message, len: usize, buf: &mut impl BufMut) {
    varint::put_len_key(tag, len, buf);
    msg.encode_raw(buf);
}

/// A `bytes` field `tag` holding `value`, the bytes prost writes for it. prost's own writer
/// for a `Bytes` value clones it (its reference count up and down, each through the `Bytes`
/// vtable) and copies it through the generic `Buf` path: about 120 instructions a field, two
/// fields (the row and the family) of every get (callgrind, `ycsb` workload C); this is about
/// 30.
#[inline]
pub(crate) fn put_bytes_field(tag: u32, value: &[u8], buf: &mut impl BufMut) {
    varint::put_len_key(tag, value.len(), buf);
    buf.put_slice(value);
}

/// Memory a mutation's row key holds: its bytes, and the header `Bytes` allocates when a row
/// copied from a `Vec` is first cloned (for write-buffer accounting; one rule for every kind).
pub(crate) fn row_heap_size(row: &Bytes) -> usize {
    const SHARED: usize = 32;
    row.len() + SHARED
}

/// A `REGION_NAME` region specifier, as data RPCs address regions.
pub(crate) fn region_specifier(region_name: &Bytes) -> hbase_proto::RegionSpecifier {
    hbase_proto::RegionSpecifier {
        r#type: hbase_proto::region_specifier::RegionSpecifierType::RegionName as i32,
        value: region_name.clone(),
    }
}

/// Adds a qualifier value under its family, keeping one `ColumnValue` per family.
pub(crate) fn add_qualifier_value(
    column_value: &mut Vec<hbase_proto::mutation_proto::ColumnValue>,
    family: &Bytes,
    qv: hbase_proto::mutation_proto::column_value::QualifierValue,
) {
    match column_value.iter_mut().find(|cv| cv.family == *family) {
        Some(cv) => cv.qualifier_value.push(qv),
        None => column_value.push(hbase_proto::mutation_proto::ColumnValue {
            family: family.clone(),
            qualifier_value: vec![qv],
        }),
    }
}

/// The `MutationProto` of a put or delete whose cells travel in the cell block: every field
/// it sets. A Multi encodes it field by field (`MultiRequestWriter::mutation`) instead of
/// building the prost struct (which clones the row) and encoding that: about 500
/// instructions a buffered put less. [`to_proto`](Self::to_proto) is the same message as a
/// struct.
pub(crate) struct CellBlockMutation<'a> {
    /// The row's bytes (a put's are read from its first cell: see `Put::encode_cells`).
    pub(crate) row: &'a [u8],
    pub(crate) kind: hbase_proto::mutation_proto::MutationType,
    pub(crate) timestamp: Option<u64>,
    /// Set only when not the table's default.
    pub(crate) durability: Option<hbase_proto::mutation_proto::Durability>,
    /// Its cells in the cell block (`associated_cell_count`).
    pub(crate) cells: i32,
}

impl CellBlockMutation<'_> {
    /// The message as a prost struct, with `nonce` (the row copied: this is not the buffered
    /// path, which writes the message field by field).
    pub(crate) fn to_proto(&self, nonce: Option<u64>) -> hbase_proto::MutationProto {
        let row = Bytes::copy_from_slice(self.row);
        let mut m = mutation_proto(row, self.kind, Vec::new(), self.timestamp);
        m.associated_cell_count = Some(self.cells);
        if let Some(d) = self.durability {
            m.set_durability(d);
        }
        m.nonce = nonce;
        m
    }
}

/// A `[from, to)` timestamp range as the `TimeRange` message (gets and scans).
pub(crate) fn time_range_proto((from, to): (u64, u64)) -> hbase_proto::TimeRange {
    hbase_proto::TimeRange {
        from: Some(from),
        to: Some(to),
    }
}

/// A mutation of `row` carrying its cells as protobuf column values.
pub(crate) fn mutation_proto(
    row: Bytes,
    kind: hbase_proto::mutation_proto::MutationType,
    column_value: Vec<hbase_proto::mutation_proto::ColumnValue>,
    timestamp: Option<u64>,
) -> hbase_proto::MutationProto {
    let mut m = hbase_proto::MutationProto {
        row: Some(row),
        column_value,
        timestamp,
        ..Default::default()
    };
    m.set_mutate_type(kind);
    m
}

#[cfg(test)]
mod tests {
    use super::*;
    use prost::Message;

    fn encoded(param: &RegionRequest<'_>) -> Vec<u8> {
        let buf = param.encode_to_vec();
        assert_eq!(
            buf.len(),
            param.encoded_len(),
            "encoded_len matches what is written"
        );
        buf
    }

    fn region(len: usize) -> Bytes {
        Bytes::from((0..len).map(|i| b'a' + (i % 26) as u8).collect::<Vec<u8>>())
    }

    #[test]
    fn a_get_message_is_prosts_encoding_of_the_get() {
        let gets = [
            Get::new("r"),
            Get::new("").family("cf"),
            Get::new("user1234567890")
                .family("cf")
                .column("cf", "q")
                .column("other", "a")
                .column("other", vec![0u8; 200]),
            Get::new(vec![b'k'; 300])
                .family("cf")
                .family("g")
                .max_versions(3)
                .time_range(5, u64::MAX)
                .consistency(Consistency::Timeline),
            Get::new("f")
                .filter(Filter::Prefix(Bytes::from_static(b"ab")))
                .existence_only(),
        ];
        for get in gets {
            let ours = GetMessage::new(&get);
            let prost = get.to_proto();
            assert_eq!(ours.encode_to_vec(), prost.encode_to_vec(), "{get:?}");
            assert_eq!(ours.encoded_len(), prost.encoded_len(), "{get:?}");
        }
    }

    #[test]
    fn a_get_request_encoded_ahead_is_the_prost_request() {
        let gets = [
            Get::new("r").to_proto(),
            Get::new("user1234567890")
                .family("cf")
                .column("cf", "q")
                .to_proto(),
            // Longer than the inline buffer: encoded on the heap.
            Get::new(vec![b'k'; 300]).family("cf").to_proto(),
        ];
        for get in gets {
            // Region names of one- and two-byte lengths.
            for name in [region(10), region(90), region(200)] {
                let rest = EncodedFields::message(2, &get);
                let ours = RegionRequest {
                    region: name.clone(),
                    rest: rest.as_slice(),
                };
                let prost = hbase_proto::GetRequest {
                    region: region_specifier(&name),
                    get: get.clone(),
                };
                assert_eq!(encoded(&ours), prost.encode_to_vec());
            }
        }
    }

    #[test]
    fn a_mutate_request_encoded_ahead_is_the_prost_request() {
        let put = Put::new("row").add("cf", "q", "v").to_proto();
        let condition = hbase_proto::Condition {
            row: Bytes::from_static(b"row"),
            family: Some(Bytes::from_static(b"cf")),
            qualifier: Some(Bytes::from_static(b"q")),
            ..Default::default()
        };
        for (condition, nonce_group) in [
            (None, None),
            (Some(condition.clone()), None),
            (None, Some(u64::MAX - 7)),
            (Some(condition), Some(3)),
        ] {
            let name = region(70);
            let rest = EncodedFields::mutate(&put, condition.as_ref(), nonce_group);
            let ours = RegionRequest {
                region: name.clone(),
                rest: rest.as_slice(),
            };
            let prost = hbase_proto::MutateRequest {
                region: region_specifier(&name),
                mutation: put.clone(),
                condition,
                nonce_group,
            };
            assert_eq!(encoded(&ours), prost.encode_to_vec());
        }
    }
}
