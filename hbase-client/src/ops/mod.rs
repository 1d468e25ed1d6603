//! Request types (what a caller builds) and their protobuf encodings.

mod action;
mod check_and_mutate;
mod columns;
mod delete;
mod filter;
mod get;
mod increment;
mod put;
mod row_mutations;
mod row_result;
mod scan;

pub use action::{Action, ActionResult, Mutation};
pub use check_and_mutate::CheckAndMutate;
pub(crate) use check_and_mutate::Then;
pub use delete::Delete;
pub use filter::{Comparator, CompareOp, Filter};
pub use get::Get;
pub use increment::{Append, Increment};
pub use put::{Durability, Put};
pub use row_mutations::{RowMutation, RowMutations};
pub(crate) use row_result::result_from_proto;
pub use row_result::results_from_scan;
pub use row_result::RowResult;
pub use scan::{
    Consistency, ReadType, Scan, DEFAULT_SCANNER_CACHING, DEFAULT_SCANNER_MAX_RESULT_SIZE,
};

use bytes::Bytes;

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
    pub(crate) row: &'a Bytes,
    pub(crate) kind: hbase_proto::mutation_proto::MutationType,
    pub(crate) timestamp: Option<u64>,
    /// Set only when not the table's default.
    pub(crate) durability: Option<hbase_proto::mutation_proto::Durability>,
    /// Its cells in the cell block (`associated_cell_count`).
    pub(crate) cells: i32,
}

impl CellBlockMutation<'_> {
    /// The message as a prost struct, with `nonce`.
    pub(crate) fn to_proto(&self, nonce: Option<u64>) -> hbase_proto::MutationProto {
        let mut m = mutation_proto(self.row, self.kind, Vec::new(), self.timestamp);
        m.associated_cell_count = Some(self.cells);
        if let Some(d) = self.durability {
            m.set_durability(d);
        }
        m.nonce = nonce;
        m
    }
}

/// A mutation of `row` carrying its cells as protobuf column values.
pub(crate) fn mutation_proto(
    row: &Bytes,
    kind: hbase_proto::mutation_proto::MutationType,
    column_value: Vec<hbase_proto::mutation_proto::ColumnValue>,
    timestamp: Option<u64>,
) -> hbase_proto::MutationProto {
    let mut m = hbase_proto::MutationProto {
        row: Some(row.clone()),
        column_value,
        timestamp,
        ..Default::default()
    };
    m.set_mutate_type(kind);
    m
}
