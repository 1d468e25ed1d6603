//! Property suite for everything that decodes bytes from the network or ZooKeeper: the
//! response frame decoder, the KeyValue cell-block decoder, the scan-response decoder and the
//! znode parser. Round trips of random valid input, and arbitrary mutations of valid input
//! (bit flips, truncation, insertion, overwrite), which must give an error, never a panic, an
//! endless loop or a slice outside the input. Fixed case counts, so CI runs a short bounded
//! pass (about 25,000 executions in all).

use bytes::{BufMut, Bytes, BytesMut};
use hbase_client::rpc::cellblock::{encode_cell, encoded_len, CellBlockReader};
use hbase_client::rpc::decode_scan_rows;
use hbase_client::rpc::frame::{decode_response, encode_request, RequestMeta};
use hbase_client::znode::protobuf_payload;
use hbase_client::CellType;
use proptest::collection::vec;
use proptest::prelude::*;
use prost::Message;

#[derive(Debug, Clone)]
struct TestCell {
    row: Vec<u8>,
    family: Vec<u8>,
    qualifier: Vec<u8>,
    timestamp: u64,
    code: u8,
    value: Vec<u8>,
}

fn cell() -> impl Strategy<Value = TestCell> {
    (
        vec(any::<u8>(), 1..48),
        vec(any::<u8>(), 1..16),
        vec(any::<u8>(), 0..24),
        any::<u64>(),
        prop::sample::select(vec![4u8, 8, 10, 12, 14, 255]),
        vec(any::<u8>(), 0..200),
    )
        .prop_map(
            |(row, family, qualifier, timestamp, code, value)| TestCell {
                row,
                family,
                qualifier,
                timestamp,
                code,
                value,
            },
        )
}

fn encode_cells(cells: &[TestCell]) -> Bytes {
    let mut buf = BytesMut::new();
    for c in cells {
        encode_cell(
            &mut buf,
            &c.row,
            &c.family,
            &c.qualifier,
            c.timestamp,
            CellType::from_code(c.code),
            &c.value,
        );
    }
    buf.freeze()
}

/// One damage to a valid byte string.
#[derive(Debug, Clone)]
enum Mutation {
    Flip(usize, u8),
    Truncate(usize),
    Insert(usize, Vec<u8>),
    Overwrite(usize, Vec<u8>),
    Remove(usize, usize),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<usize>(), 1..=255u8).prop_map(|(i, x)| Mutation::Flip(i, x)),
        any::<usize>().prop_map(Mutation::Truncate),
        (any::<usize>(), vec(any::<u8>(), 1..8)).prop_map(|(i, b)| Mutation::Insert(i, b)),
        (any::<usize>(), vec(any::<u8>(), 1..8)).prop_map(|(i, b)| Mutation::Overwrite(i, b)),
        (any::<usize>(), 1..16usize).prop_map(|(i, n)| Mutation::Remove(i, n)),
    ]
}

fn mutate(data: &[u8], mutations: &[Mutation]) -> Vec<u8> {
    let mut d = data.to_vec();
    for m in mutations {
        let n = d.len();
        match m {
            Mutation::Flip(i, x) if n > 0 => d[i % n] ^= x,
            Mutation::Truncate(i) => d.truncate(i % (n + 1)),
            Mutation::Insert(i, b) => {
                let at = i % (n + 1);
                d.splice(at..at, b.iter().copied());
            }
            Mutation::Overwrite(i, b) if n > 0 => {
                for (k, x) in b.iter().enumerate() {
                    let at = (i + k) % n;
                    d[at] = *x;
                }
            }
            Mutation::Remove(i, len) if n > 0 => {
                let at = i % n;
                d.drain(at..(at + len).min(n));
            }
            _ => {}
        }
    }
    d
}

/// Decodes a whole cell block; every cell's parts must be inside the block.
fn decode_all(block: Bytes) -> Result<Vec<hbase_client::Cell>, hbase_client::Error> {
    let total = block.len();
    let mut reader = CellBlockReader::new(block);
    let mut cells = Vec::new();
    // Each cell consumes at least 12 bytes, so this bound is never the one that stops it.
    for _ in 0..=total / 12 {
        match reader.next_cell()? {
            Some(c) => {
                let size = c.row().len() + c.family().len() + c.qualifier().len() + c.value().len();
                assert!(size <= total, "cell parts larger than the block");
                cells.push(c);
            }
            None => return Ok(cells),
        }
    }
    panic!("decoder made no progress")
}

/// A response frame body (after the u32 length): header, message, cell block.
fn response_body(call_id: u32, message: &[u8], cellblock: &[u8]) -> Bytes {
    let header = hbase_proto::ResponseHeader {
        call_id: Some(call_id),
        cell_block_meta: (!cellblock.is_empty()).then_some(hbase_proto::CellBlockMeta {
            length: Some(cellblock.len() as u32),
        }),
        ..Default::default()
    };
    let mut buf = BytesMut::new();
    header.encode_length_delimited(&mut buf).unwrap();
    prost::encoding::encode_varint(message.len() as u64, &mut buf);
    buf.put_slice(message);
    buf.put_slice(cellblock);
    buf.freeze()
}

fn znode(id: &[u8], payload: &[u8]) -> Vec<u8> {
    let mut d = vec![0xff];
    d.extend_from_slice(&(id.len() as i32).to_be_bytes());
    d.extend_from_slice(id);
    d.extend_from_slice(b"PBUF");
    d.extend_from_slice(payload);
    d
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]

    #[test]
    fn cells_round_trip(cells in vec(cell(), 0..12)) {
        let block = encode_cells(&cells);
        let expected: usize = cells
            .iter()
            .map(|c| encoded_len(&c.row, &c.family, &c.qualifier, &c.value))
            .sum();
        prop_assert_eq!(block.len(), expected);
        let decoded = decode_all(block).unwrap();
        prop_assert_eq!(decoded.len(), cells.len());
        for (d, c) in decoded.iter().zip(&cells) {
            prop_assert_eq!(d.row(), &c.row[..]);
            prop_assert_eq!(d.family(), &c.family[..]);
            prop_assert_eq!(d.qualifier(), &c.qualifier[..]);
            prop_assert_eq!(d.timestamp(), c.timestamp);
            prop_assert_eq!(d.cell_type().code(), c.code);
            prop_assert_eq!(d.value(), &c.value[..]);
        }
    }

    #[test]
    fn damaged_cell_blocks_never_panic(
        cells in vec(cell(), 1..6),
        damage in vec(mutation(), 1..4),
    ) {
        let block = encode_cells(&cells);
        let damaged = mutate(&block, &damage);
        let _ = decode_all(Bytes::from(damaged.clone()));
        // `take` with an announced count larger than what is there.
        let _ = CellBlockReader::new(Bytes::from(damaged)).take(cells.len() + 3);
    }

    #[test]
    fn response_frames_round_trip(
        call_id in 0u32..0x7fff_ffff,
        message in vec(any::<u8>(), 0..300),
        cells in vec(cell(), 0..4),
    ) {
        let cellblock = encode_cells(&cells);
        let body = response_body(call_id, &message, &cellblock);
        let r = decode_response(body).unwrap();
        prop_assert_eq!(r.call_id, call_id);
        let b = r.body.unwrap();
        prop_assert_eq!(&b.message[..], &message[..]);
        prop_assert_eq!(&b.cellblock[..], &cellblock[..]);
    }

    #[test]
    fn exception_frames_round_trip(
        call_id in any::<u32>(),
        class in "[a-zA-Z.]{1,60}",
        trace in ".{0,200}",
        dnr in any::<bool>(),
        overloaded in any::<bool>(),
    ) {
        let header = hbase_proto::ResponseHeader {
            call_id: Some(call_id),
            exception: Some(hbase_proto::ExceptionResponse {
                exception_class_name: Some(class.clone()),
                stack_trace: Some(trace.clone()),
                do_not_retry: Some(dnr),
                server_overloaded: Some(overloaded),
                ..Default::default()
            }),
            ..Default::default()
        };
        let r = decode_response(Bytes::from(header.encode_length_delimited_to_vec())).unwrap();
        prop_assert_eq!(r.call_id, call_id);
        let e = r.body.unwrap_err();
        prop_assert_eq!(e.class_name, class);
        prop_assert_eq!(e.message, trace);
        prop_assert_eq!((e.do_not_retry, e.server_overloaded), (dnr, overloaded));
    }

    #[test]
    fn damaged_response_frames_never_panic(
        call_id in any::<u32>(),
        message in vec(any::<u8>(), 0..64),
        cells in vec(cell(), 0..3),
        damage in vec(mutation(), 1..4),
    ) {
        let body = response_body(call_id, &message, &encode_cells(&cells));
        let damaged = Bytes::from(mutate(&body, &damage));
        let len = damaged.len();
        if let Ok(r) = decode_response(damaged) {
            if let Ok(b) = r.body {
                prop_assert!(b.message.len() + b.cellblock.len() <= len);
                let _ = decode_all(b.cellblock);
            }
        }
    }

    #[test]
    fn scan_responses_never_panic(
        rows in vec(vec(cell(), 1..4), 0..5),
        cells_per_result in vec(0u32..8, 0..8),
        partial in vec(any::<bool>(), 0..8),
        damage in vec(mutation(), 0..3),
    ) {
        // A consistent response first: it must decode to exactly the rows sent.
        let all: Vec<TestCell> = rows.iter().flatten().cloned().collect();
        let block = encode_cells(&all);
        let mut resp = hbase_proto::ScanResponse {
            cells_per_result: rows.iter().map(|r| r.len() as u32).collect(),
            ..Default::default()
        };
        let decoded = decode_scan_rows(&mut resp, block.clone()).unwrap();
        prop_assert_eq!(decoded.len(), rows.len());
        for ((row, _), cells) in decoded.iter().zip(&rows) {
            prop_assert_eq!(row.cells.len(), cells.len());
        }
        // Then arbitrary counts, flags and damaged blocks.
        let mut resp = hbase_proto::ScanResponse {
            cells_per_result,
            partial_flag_per_result: partial,
            ..Default::default()
        };
        let _ = decode_scan_rows(&mut resp, Bytes::from(mutate(&block, &damage)));
    }

    #[test]
    fn znodes_round_trip_and_damaged_ones_never_panic(
        id in vec(any::<u8>(), 1..32),
        payload in vec(any::<u8>(), 0..64),
        damage in vec(mutation(), 1..4),
    ) {
        let data = znode(&id, &payload);
        prop_assert_eq!(protobuf_payload(&data).unwrap(), &payload[..]);
        let _ = protobuf_payload(&mutate(&data, &damage));
    }

    #[test]
    fn request_frames_parse_back(
        call_id in 0u32..0x7fff_ffff,
        method in "[A-Za-z]{1,20}",
        timeout_ms in any::<u32>(),
        cellblock in proptest::option::of(vec(any::<u8>(), 0..100)),
    ) {
        let mut buf = BytesMut::new();
        let param = hbase_proto::CellBlockMeta { length: Some(7) };
        let meta = RequestMeta { method: &method, timeout_ms, priority: 0 };
        encode_request(&mut buf, call_id, meta, &param, cellblock.as_deref()).unwrap();
        let total = u32::from_be_bytes(buf[..4].try_into().unwrap()) as usize;
        prop_assert_eq!(total, buf.len() - 4);
        let mut rest = buf.split_off(4).freeze();
        let header = hbase_proto::RequestHeader::decode_length_delimited(&mut rest).unwrap();
        prop_assert_eq!(header.call_id, Some(call_id));
        prop_assert_eq!(header.method_name.as_deref(), Some(method.as_str()));
        prop_assert_eq!(header.timeout, (timeout_ms != 0).then_some(timeout_ms));
        let got = hbase_proto::CellBlockMeta::decode_length_delimited(&mut rest).unwrap();
        prop_assert_eq!(got, param);
        let cb = cellblock.unwrap_or_default();
        prop_assert_eq!(header.cell_block_meta.and_then(|m| m.length).unwrap_or(0) as usize, cb.len());
        prop_assert_eq!(&rest[..], &cb[..]);
    }
}
