//! A `MultiRequest` encoded as it is built, one action at a time.
//!
//! The prost struct of a whole request (a `RegionAction` per region, an `Action` with its
//! `MutationProto` per action, several hundred bytes each before a byte is encoded) cost
//! about 700 bytes per buffered put for as long as the request was in flight: the call
//! borrows its message until the answer comes. Measured with 8 MiB of puts in flight
//! (tests/mutator_memory.rs), those structs were a third of the heap. Here each action's
//! struct lives only while it is encoded, and the request holds its encoding (about 60
//! bytes per put) instead. Protobuf allows it: a message's fields may come in any order and
//! a repeated field's elements one by one, so the bytes are those of the struct.

use bytes::{Buf, BufMut};
use prost::encoding::{
    encoded_len_varint, int32, key_len, uint32, uint64, DecodeContext, WireType,
};
use prost::{DecodeError, Message};

use crate::ops::CellBlockMutation;
use crate::rpc::varint;

/// `MultiRequest.regionAction`.
const MULTI_REGION_ACTION: u32 = 1;
/// `MultiRequest.nonceGroup`.
const MULTI_NONCE_GROUP: u32 = 2;
/// `RegionAction.region`.
const REGION_ACTION_REGION: u32 = 1;
/// `RegionAction.action`.
const REGION_ACTION_ACTION: u32 = 3;
/// `Action.index`, `Action.mutation`.
const ACTION_INDEX: u32 = 1;
const ACTION_MUTATION: u32 = 2;
/// `MutationProto` fields a cell-block mutation sets.
const MUTATION_ROW: u32 = 1;
const MUTATION_TYPE: u32 = 2;
const MUTATION_TIMESTAMP: u32 = 4;
const MUTATION_DURABILITY: u32 = 6;
const MUTATION_CELL_COUNT: u32 = 8;
const MUTATION_NONCE: u32 = 9;

/// A message already encoded (its fields, without a length delimiter), sent as it is.
#[derive(Debug, Default)]
pub(crate) struct Encoded(Vec<u8>);

impl Message for Encoded {
    fn encode_raw(&self, buf: &mut impl BufMut) {
        buf.put_slice(&self.0);
    }

    fn merge_field(
        &mut self,
        tag: u32,
        wire_type: WireType,
        buf: &mut impl Buf,
        ctx: DecodeContext,
    ) -> Result<(), DecodeError> {
        // Only ever encoded; nothing decodes into it.
        prost::encoding::skip_field(wire_type, tag, buf, ctx)
    }

    fn encoded_len(&self) -> usize {
        self.0.len()
    }

    fn clear(&mut self) {
        self.0.clear();
    }
}

/// Builds a `MultiRequest`'s encoding region by region, action by action.
#[derive(Default)]
pub(crate) struct MultiRequestWriter {
    out: Vec<u8>,
    /// The current region's `RegionAction` fields.
    region: Vec<u8>,
}

impl MultiRequestWriter {
    /// Starts the `RegionAction` of `region` (ending the one before, if any).
    pub(crate) fn region(&mut self, region: &hbase_proto::RegionSpecifier) {
        self.end_region();
        prost::encoding::message::encode(REGION_ACTION_REGION, region, &mut self.region);
    }

    /// Appends an action to the current region's.
    pub(crate) fn action(&mut self, action: &hbase_proto::Action) {
        prost::encoding::message::encode(REGION_ACTION_ACTION, action, &mut self.region);
    }

    /// Appends a put's or delete's action (cells in the cell block) to the current region's:
    /// the bytes of `writer.action` with `Action { index, mutation: m.to_proto(nonce) }`,
    /// written field by field in field-number order, as prost writes the struct.
    pub(crate) fn mutation(&mut self, index: u32, m: &CellBlockMutation<'_>, nonce: Option<u64>) {
        let kind = m.kind as i32;
        let durability = m.durability.map(|d| d as i32);
        let mutation_len = key_len(MUTATION_ROW)
            + encoded_len_varint(m.row.len() as u64)
            + m.row.len()
            + int32::encoded_len(MUTATION_TYPE, &kind)
            + m.timestamp
                .map_or(0, |t| uint64::encoded_len(MUTATION_TIMESTAMP, &t))
            + durability.map_or(0, |d| int32::encoded_len(MUTATION_DURABILITY, &d))
            + int32::encoded_len(MUTATION_CELL_COUNT, &m.cells)
            + nonce.map_or(0, |n| uint64::encoded_len(MUTATION_NONCE, &n));
        let action_len = uint32::encoded_len(ACTION_INDEX, &index)
            + key_len(ACTION_MUTATION)
            + encoded_len_varint(mutation_len as u64)
            + mutation_len;
        let out = &mut self.region;
        varint::put_len_key(REGION_ACTION_ACTION, action_len, out);
        varint::put_uint32(ACTION_INDEX, index, out);
        varint::put_len_key(ACTION_MUTATION, mutation_len, out);
        varint::put_len_key(MUTATION_ROW, m.row.len(), out);
        out.extend_from_slice(m.row);
        varint::put_int32(MUTATION_TYPE, kind, out);
        if let Some(t) = m.timestamp {
            varint::put_uint64(MUTATION_TIMESTAMP, t, out);
        }
        if let Some(d) = durability {
            varint::put_int32(MUTATION_DURABILITY, d, out);
        }
        varint::put_int32(MUTATION_CELL_COUNT, m.cells, out);
        if let Some(n) = nonce {
            varint::put_uint64(MUTATION_NONCE, n, out);
        }
    }

    fn end_region(&mut self) {
        if self.region.is_empty() {
            return;
        }
        varint::put_len_key(MULTI_REGION_ACTION, self.region.len(), &mut self.out);
        self.out.extend_from_slice(&self.region);
        self.region.clear();
    }

    /// The request, with `nonce_group` if set.
    pub(crate) fn finish(mut self, nonce_group: Option<u64>) -> Encoded {
        self.end_region();
        if let Some(group) = nonce_group {
            varint::put_uint64(MULTI_NONCE_GROUP, group, &mut self.out);
        }
        Encoded(self.out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A cell-block mutation written field by field is the prost `Action` holding its
    /// `to_proto`, byte for byte, for every optional field set or not and for lengths and
    /// numbers that take more than one varint byte.
    #[test]
    fn a_mutation_is_its_structs_bytes() {
        use hbase_proto::mutation_proto::{Durability, MutationType};
        let short = bytes::Bytes::from_static(b"user0001");
        let long = bytes::Bytes::from(vec![b'r'; 300]);
        let mut checked = 0;
        for row in [&short, &long] {
            for kind in [MutationType::Put, MutationType::Delete] {
                for timestamp in [None, Some(0), Some(u64::MAX >> 1)] {
                    for durability in [
                        None,
                        Some(Durability::UseDefault),
                        Some(Durability::FsyncWal),
                    ] {
                        for cells in [0, 1, 10, 300] {
                            for nonce in [None, Some(7), Some(u64::MAX)] {
                                for index in [0u32, 127, 128, 70_000] {
                                    let m = CellBlockMutation {
                                        row,
                                        kind,
                                        timestamp,
                                        durability,
                                        cells,
                                    };
                                    let mut by_fields = MultiRequestWriter::default();
                                    by_fields.mutation(index, &m, nonce);
                                    let mut by_struct = MultiRequestWriter::default();
                                    by_struct.action(&hbase_proto::Action {
                                        index: Some(index),
                                        mutation: Some(m.to_proto(nonce)),
                                        ..Default::default()
                                    });
                                    assert_eq!(by_fields.region, by_struct.region);
                                    checked += 1;
                                }
                            }
                        }
                    }
                }
            }
        }
        assert_eq!(checked, 2 * 2 * 3 * 3 * 4 * 3 * 4);
    }

    /// The writer's bytes are the prost struct's, so the server reads the same request.
    #[test]
    fn the_encoding_is_the_structs() {
        let spec = |name: &'static [u8]| hbase_proto::RegionSpecifier {
            r#type: hbase_proto::region_specifier::RegionSpecifierType::RegionName as i32,
            value: bytes::Bytes::from_static(name),
        };
        let action = |i: u32| hbase_proto::Action {
            index: Some(i),
            mutation: Some(hbase_proto::MutationProto {
                row: Some(bytes::Bytes::from(format!("row{i}"))),
                associated_cell_count: Some(1),
                ..Default::default()
            }),
            ..Default::default()
        };
        for nonce_group in [None, Some(77u64)] {
            let mut whole = hbase_proto::MultiRequest {
                nonce_group,
                ..Default::default()
            };
            let mut writer = MultiRequestWriter::default();
            let names: [&'static [u8]; 2] = [b"region-a", b"region-b"];
            for (r, name) in names.into_iter().enumerate() {
                let mut ra = hbase_proto::RegionAction {
                    region: spec(name),
                    ..Default::default()
                };
                writer.region(&ra.region);
                for i in 0..3 {
                    let a = action(r as u32 * 10 + i);
                    writer.action(&a);
                    ra.action.push(a);
                }
                whole.region_action.push(ra);
            }
            let encoded = writer.finish(nonce_group);
            assert_eq!(encoded.encode_to_vec(), whole.encode_to_vec());
            assert_eq!(
                hbase_proto::MultiRequest::decode(&encoded.encode_to_vec()[..]).unwrap(),
                whole
            );
        }
    }
}
