//! Encode/decode costs of the wire format: request frames for Get/Mutate/Multi/Scan, KeyValue
//! cell blocks, and scan-response decoding (throughput in cell-block bytes).
//!
//! `cargo bench --bench codec`

use std::hint::black_box;

use bytes::{Bytes, BytesMut};
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use hbase_client::rpc::cellblock::{encode_cell, CellBlockReader};
use hbase_client::rpc::frame::{decode_response, encode_request, RequestMeta};
use hbase_client::CellType;
use prost::Message;

fn region() -> hbase_proto::RegionSpecifier {
    hbase_proto::RegionSpecifier {
        r#type: 1,
        value: Bytes::from_static(
            b"usertable,user5,1700000000000.0123456789abcdef0123456789abcdef.",
        ),
    }
}

fn ycsb_put(i: u32) -> hbase_proto::MutationProto {
    use hbase_proto::mutation_proto::{column_value::QualifierValue, ColumnValue};
    hbase_proto::MutationProto {
        row: Some(Bytes::from(format!("user{i:019}"))),
        mutate_type: Some(2),
        column_value: vec![ColumnValue {
            family: Bytes::from_static(b"family"),
            qualifier_value: (0..10)
                .map(|f| QualifierValue {
                    qualifier: Some(Bytes::from(format!("field{f}"))),
                    value: Some(Bytes::from(vec![b'x'; 100])),
                    ..Default::default()
                })
                .collect(),
        }],
        ..Default::default()
    }
}

fn meta(method: &str) -> RequestMeta<'_> {
    RequestMeta {
        method,
        timeout_ms: 60_000,
        priority: 0,
    }
}

fn requests(c: &mut Criterion) {
    let mut buf = BytesMut::with_capacity(1 << 20);
    let get = hbase_proto::GetRequest {
        region: region(),
        get: hbase_proto::Get {
            row: Bytes::from_static(b"user1234567890123456789"),
            ..Default::default()
        },
    };
    c.bench_function("encode Get request", |b| {
        b.iter(|| {
            buf.clear();
            encode_request(&mut buf, 7, meta("Get"), black_box(&get), None).unwrap();
        })
    });
    let mutate = hbase_proto::MutateRequest {
        region: region(),
        mutation: ycsb_put(1),
        condition: None,
        nonce_group: None,
    };
    c.bench_function("encode Mutate request (10 x 100 B fields)", |b| {
        b.iter(|| {
            buf.clear();
            encode_request(&mut buf, 7, meta("Mutate"), black_box(&mutate), None).unwrap();
        })
    });
    let scan = hbase_proto::ScanRequest {
        region: Some(region()),
        scan: Some(hbase_proto::Scan {
            start_row: Some(Bytes::from_static(b"user1")),
            ..Default::default()
        }),
        number_of_rows: Some(100),
        ..Default::default()
    };
    c.bench_function("encode Scan open request", |b| {
        b.iter(|| {
            buf.clear();
            encode_request(&mut buf, 7, meta("Scan"), black_box(&scan), None).unwrap();
        })
    });
    // A Multi of 100 puts as the mutator sends it: headers in protobuf, cells in a cell block.
    c.bench_function("encode Multi of 100 puts with cell block", |b| {
        let mut cells = BytesMut::with_capacity(1 << 20);
        b.iter(|| {
            cells.clear();
            let mut ra = hbase_proto::RegionAction {
                region: region(),
                ..Default::default()
            };
            for i in 0..100u32 {
                let row = format!("user{i:019}");
                for f in 0..10 {
                    encode_cell(
                        &mut cells,
                        row.as_bytes(),
                        b"family",
                        format!("field{f}").as_bytes(),
                        i64::MAX as u64,
                        CellType::Put,
                        &[b'x'; 100],
                    );
                }
                ra.action.push(hbase_proto::Action {
                    index: Some(i),
                    mutation: Some(hbase_proto::MutationProto {
                        row: Some(Bytes::from(row)),
                        mutate_type: Some(2),
                        associated_cell_count: Some(10),
                        ..Default::default()
                    }),
                    ..Default::default()
                });
            }
            let multi = hbase_proto::MultiRequest {
                region_action: vec![ra],
                ..Default::default()
            };
            buf.clear();
            encode_request(&mut buf, 7, meta("Multi"), &multi, Some(&cells)).unwrap();
            black_box(&buf);
        })
    });
}

/// A scan response as a region server sends it for `rows` YCSB rows (10 fields of 100 bytes).
fn scan_response(rows: u32) -> (Bytes, usize) {
    let mut cells = BytesMut::new();
    for i in 0..rows {
        let row = format!("user{i:019}");
        for f in 0..10 {
            encode_cell(
                &mut cells,
                row.as_bytes(),
                b"family",
                format!("field{f}").as_bytes(),
                1_700_000_000_000,
                CellType::Put,
                &[b'x'; 100],
            );
        }
    }
    let cellblock_len = cells.len();
    let resp = hbase_proto::ScanResponse {
        cells_per_result: vec![10; rows as usize],
        scanner_id: Some(42),
        more_results: Some(true),
        more_results_in_region: Some(true),
        partial_flag_per_result: vec![false; rows as usize],
        ..Default::default()
    };
    let header = hbase_proto::ResponseHeader {
        call_id: Some(7),
        cell_block_meta: Some(hbase_proto::CellBlockMeta {
            length: Some(cellblock_len as u32),
        }),
        ..Default::default()
    };
    let mut frame = BytesMut::new();
    header.encode_length_delimited(&mut frame).unwrap();
    resp.encode_length_delimited(&mut frame).unwrap();
    frame.extend_from_slice(&cells);
    (frame.freeze(), cellblock_len)
}

fn responses(c: &mut Criterion) {
    let (frame, cellblock_len) = scan_response(1000);
    let mut group = c.benchmark_group("decode scan response");
    group.throughput(Throughput::Bytes(cellblock_len as u64));
    group.bench_function("1000 rows x 10 cells, frame to rows", |b| {
        b.iter(|| {
            let resp = decode_response(black_box(frame.clone())).unwrap();
            let body = resp.body.unwrap();
            let mut msg: hbase_proto::ScanResponse = body.decode().unwrap();
            let rows = hbase_client::rpc::decode_scan_rows(&mut msg, body.cellblock).unwrap();
            assert_eq!(rows.len(), 1000);
            black_box(rows);
        })
    });
    group.finish();

    let mut cells = BytesMut::new();
    for i in 0..10_000u32 {
        encode_cell(
            &mut cells,
            format!("user{i:019}").as_bytes(),
            b"family",
            b"field0",
            1,
            CellType::Put,
            &[b'x'; 100],
        );
    }
    let block = cells.freeze();
    let mut group = c.benchmark_group("cell block");
    group.throughput(Throughput::Bytes(block.len() as u64));
    group.bench_function("decode 10k KeyValues", |b| {
        b.iter(|| {
            let mut r = CellBlockReader::new(block.clone());
            let mut n = 0;
            while let Some(cell) = r.next_cell().unwrap() {
                black_box(&cell);
                n += 1;
            }
            assert_eq!(n, 10_000);
        })
    });
    let mut out = BytesMut::with_capacity(block.len());
    group.bench_function("encode 10k KeyValues", |b| {
        b.iter(|| {
            out.clear();
            for i in 0..10_000u32 {
                encode_cell(
                    &mut out,
                    &i.to_be_bytes(),
                    b"family",
                    b"field0",
                    1,
                    CellType::Put,
                    &[b'x'; 100],
                );
            }
            black_box(&out);
        })
    });
    group.finish();
}

criterion_group!(benches, requests, responses);
criterion_main!(benches);
