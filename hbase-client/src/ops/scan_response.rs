//! The rows of a `ScanResponse`, whichever shape the server chose: one rule for both row
//! types. A row type brings only how it takes a row's cells off the front of the cell block
//! ([`RowDecoder`]); which shape the answer has, the partial flags, the stale flag and how many
//! rows to make room for are decided here, once.

use bytes::Bytes;

use crate::error::Result;

/// How one row type takes its rows out of a scan answer's cell block, front to back.
pub(crate) trait RowDecoder {
    /// The row type made.
    type Row;

    /// A decoder over the whole cell block of an answer.
    fn new(cellblock: Bytes) -> Self;

    /// The row of the next `n` cells of the block (the `cells_per_result` shape).
    fn counted(&mut self, n: usize) -> Result<Self::Row>;

    /// The row of one `Result`: its inline cells, then its `associated_cell_count` cells of
    /// the block.
    fn result(&mut self, r: hbase_proto::Result) -> Result<Self::Row>;

    /// Marks a row as answered by a secondary replica.
    fn mark_stale(row: &mut Self::Row);
}

/// Decodes the rows of a ScanResponse with `D`. Each row comes with its partial flag (more
/// cells of it follow in a later response); a stale response (from a secondary replica) makes
/// every row stale.
///
/// Inlined into each row type's caller, so that the per-row work of each is compiled in
/// place (a scan answer's rows are the hot loop of a scan).
#[inline(always)]
pub(crate) fn rows_from_scan<D: RowDecoder>(
    resp: &mut hbase_proto::ScanResponse,
    cellblock: Bytes,
) -> Result<Vec<(D::Row, bool)>> {
    let partial = std::mem::take(&mut resp.partial_flag_per_result);
    let partial = |i: usize| partial.get(i).copied().unwrap_or(false);
    let stale = resp.stale.unwrap_or(false);
    let mut decoder = D::new(cellblock);
    if !resp.cells_per_result.is_empty() {
        let mut out = Vec::with_capacity(room_for(resp.cells_per_result.len()));
        for (i, &n) in resp.cells_per_result.iter().enumerate() {
            let mut row = decoder.counted(n as usize)?;
            if stale {
                D::mark_stale(&mut row);
            }
            out.push((row, partial(i)));
        }
        return Ok(out);
    }
    let results = std::mem::take(&mut resp.results);
    let mut out = Vec::with_capacity(room_for(results.len()));
    for (i, r) in results.into_iter().enumerate() {
        let flag = partial(i) || r.partial.unwrap_or(false);
        let mut row = decoder.result(r)?;
        if stale {
            D::mark_stale(&mut row);
        }
        out.push((row, flag));
    }
    Ok(out)
}

/// The rows to make room for when an answer announces `rows`: sized once (grown row by row, a
/// 100-row answer reallocated its vector 5 times), but not by more than a normal answer's rows
/// on a server's word: a count costs it a byte, a row here about 70.
fn room_for(rows: usize) -> usize {
    rows.min(4096)
}

#[cfg(test)]
mod tests {
    use super::super::raw_row::RawRows;
    use super::super::row_result::{proto_put, ResultRows};
    use super::*;
    use crate::cell::CellType;
    use crate::rpc::cellblock::encode_cell;
    use crate::RowResult;
    use bytes::BytesMut;

    /// The cells of row r1 (qualifiers a and b) and r2 (a), from the `skip`th on, in a block.
    fn block(skip: usize) -> Bytes {
        let cells: [(&[u8], &[u8], &[u8]); 3] = [
            (b"r1", b"a", b"1"),
            (b"r1", b"b", b"2"),
            (b"r2", b"a", b"3"),
        ];
        let mut block = BytesMut::new();
        for (row, qualifier, value) in &cells[skip..] {
            encode_cell(&mut block, row, b"f", qualifier, 5, CellType::Put, value);
        }
        block.freeze()
    }

    /// The same answer in each shape the server may choose, with flags in every place a
    /// server may put them.
    fn answers() -> [hbase_proto::ScanResponse; 2] {
        let counted = hbase_proto::ScanResponse {
            cells_per_result: vec![2, 1],
            partial_flag_per_result: vec![false, true],
            stale: Some(true),
            ..Default::default()
        };
        let per_result = hbase_proto::ScanResponse {
            results: vec![
                hbase_proto::Result {
                    cell: vec![proto_put(b"r1", b"f", b"a", 5, b"1")],
                    associated_cell_count: Some(1),
                    ..Default::default()
                },
                hbase_proto::Result {
                    associated_cell_count: Some(1),
                    partial: Some(true),
                    stale: Some(true),
                    ..Default::default()
                },
            ],
            ..Default::default()
        };
        [counted, per_result]
    }

    /// Decodes `resp` with `D`, each row as a `RowResult` with its partial flag.
    fn rows<D: RowDecoder>(
        mut resp: hbase_proto::ScanResponse,
        cellblock: Bytes,
    ) -> Vec<(RowResult, bool)>
    where
        D::Row: Into<RowResult>,
    {
        rows_from_scan::<D>(&mut resp, cellblock)
            .unwrap()
            .into_iter()
            .map(|(row, partial)| (row.into(), partial))
            .collect()
    }

    /// The rows of `resp` over the block from its `skip`th cell, as both row types read them
    /// (asserted equal).
    fn both(resp: hbase_proto::ScanResponse, skip: usize) -> Vec<(RowResult, bool)> {
        let decoded = rows::<ResultRows>(resp.clone(), block(skip));
        assert_eq!(
            decoded,
            rows::<RawRows>(resp, block(skip)),
            "the row types differ"
        );
        decoded
    }

    /// Each row's stale flag and partial flag.
    fn flags(rows: &[(RowResult, bool)]) -> Vec<(bool, bool)> {
        rows.iter().map(|(r, p)| (r.is_stale(), *p)).collect()
    }

    #[test]
    fn both_row_types_read_the_same_rows_and_flags_from_either_shape() {
        let [counted, per_result] = answers();
        let a = both(counted, 0);
        assert_eq!(a.len(), 2);
        assert_eq!(a[0].0.value(b"f", b"b"), Some(&b"2"[..]));
        assert_eq!(flags(&a), [(true, false), (true, true)], "a stale answer");

        // r1's first cell is inline: the block starts at its second.
        let c = both(per_result, 1);
        assert_eq!(c.len(), 2);
        let cells: Vec<_> = c[0]
            .0
            .cells
            .iter()
            .map(|c| c.qualifier().to_vec())
            .collect();
        assert_eq!(cells, [b"a".to_vec(), b"b".to_vec()], "inline, then block");
        assert_eq!(c[1].0.value(b"f", b"a"), Some(&b"3"[..]));
        assert_eq!(
            flags(&c),
            [(false, false), (true, true)],
            "each Result's own flags"
        );
    }

    #[test]
    fn the_answers_flags_join_each_results_own() {
        let [_, mut per_result] = answers();
        per_result.stale = Some(true);
        per_result.partial_flag_per_result = vec![true, false];
        assert_eq!(
            flags(&both(per_result, 1)),
            [(true, true), (true, true)],
            "the answer's stale flag and partial list, or each Result's own"
        );
    }

    /// A server that sends no cell block puts every cell in its `Result` and counts none.
    #[test]
    fn an_answer_of_inline_cells_only_needs_no_cell_block() {
        let resp = hbase_proto::ScanResponse {
            results: vec![hbase_proto::Result {
                cell: vec![proto_put(b"r1", b"f", b"a", 5, b"1")],
                ..Default::default()
            }],
            ..Default::default()
        };
        let decoded = rows::<ResultRows>(resp.clone(), Bytes::new());
        assert_eq!(decoded, rows::<RawRows>(resp, Bytes::new()));
        assert_eq!(decoded.len(), 1);
        assert_eq!(decoded[0].0.value(b"f", b"a"), Some(&b"1"[..]));
        assert_eq!(decoded[0].0.cells[0].timestamp(), 5);
    }

    #[test]
    fn an_answer_short_of_its_counts_is_an_error_for_both_row_types() {
        for mut resp in answers() {
            resp.cells_per_result.iter_mut().for_each(|n| *n += 1);
            resp.results
                .iter_mut()
                .for_each(|r| r.associated_cell_count = Some(2));
            let err = rows_from_scan::<ResultRows>(&mut resp.clone(), block(0)).unwrap_err();
            assert!(matches!(err, crate::Error::Protocol(_)), "{err}");
            let err = rows_from_scan::<RawRows>(&mut resp, block(0)).unwrap_err();
            assert!(matches!(err, crate::Error::Protocol(_)), "{err}");
        }
    }
}
