//! `CheckAndMutate`: apply a put or delete only if a column's current value passes a check.

use bytes::Bytes;

use super::{CompareOp, Delete, Put};
use crate::error::{Error, Result};

#[derive(Debug, Clone)]
enum Check {
    /// `expected <op> current`, as HBase compares.
    Value(CompareOp, Bytes),
    /// The column has no value.
    Absent,
}

/// A conditional put or delete on one row.
///
/// ```
/// use hbase_client::{CheckAndMutate, Put};
/// let cm = CheckAndMutate::new("row", "cf", "state")
///     .if_equals("draft")
///     .then_put(Put::new("row").add("cf", "state", "published"));
/// ```
#[derive(Debug, Clone)]
pub struct CheckAndMutate {
    pub(crate) row: Bytes,
    family: Bytes,
    qualifier: Bytes,
    check: Check,
    action: Option<super::Mutation>,
}

impl CheckAndMutate {
    /// A check on `family:qualifier` of `row`; by default it checks that the column is absent.
    pub fn new(
        row: impl Into<Bytes>,
        family: impl Into<Bytes>,
        qualifier: impl Into<Bytes>,
    ) -> CheckAndMutate {
        CheckAndMutate {
            row: row.into(),
            family: family.into(),
            qualifier: qualifier.into(),
            check: Check::Absent,
            action: None,
        }
    }

    /// Passes when the current value equals `value`.
    pub fn if_equals(self, value: impl Into<Bytes>) -> CheckAndMutate {
        self.if_matches(CompareOp::Equal, value)
    }

    /// Passes when `value <op> current value` holds (HBase's operand order).
    pub fn if_matches(mut self, op: CompareOp, value: impl Into<Bytes>) -> CheckAndMutate {
        self.check = Check::Value(op, value.into());
        self
    }

    /// Passes when the column has no value.
    pub fn if_absent(mut self) -> CheckAndMutate {
        self.check = Check::Absent;
        self
    }

    /// The put to apply when the check passes (must be on the same row).
    pub fn then_put(mut self, put: Put) -> CheckAndMutate {
        self.action = Some(put.into());
        self
    }

    /// The delete to apply when the check passes (must be on the same row).
    pub fn then_delete(mut self, delete: Delete) -> CheckAndMutate {
        self.action = Some(delete.into());
        self
    }

    pub(crate) fn to_proto(
        &self,
        max_kv: usize,
    ) -> Result<(hbase_proto::MutationProto, hbase_proto::Condition)> {
        let mutation = match &self.action {
            Some(m) => {
                m.validate(max_kv)?;
                if m.row() != &self.row {
                    return Err(Error::InvalidInput(
                        "check-and-mutate: the mutation must be on the checked row".into(),
                    ));
                }
                match m {
                    super::Mutation::Put(p) => p.to_proto(),
                    super::Mutation::Delete(d) => d.to_proto(),
                }
            }
            None => {
                return Err(Error::InvalidInput(
                    "check-and-mutate needs then_put or then_delete".into(),
                ))
            }
        };
        let (op, comparator) = match &self.check {
            Check::Value(op, v) => (*op, super::Comparator::Binary(v.clone()).to_proto()),
            Check::Absent => (
                CompareOp::Equal,
                hbase_proto::Comparator {
                    name: "org.apache.hadoop.hbase.filter.NullComparator".into(),
                    serialized_comparator: Some(Bytes::new()),
                },
            ),
        };
        let condition = hbase_proto::Condition {
            row: self.row.clone(),
            family: Some(self.family.clone()),
            qualifier: Some(self.qualifier.clone()),
            compare_type: Some(op.to_proto() as i32),
            comparator: Some(comparator),
            ..Default::default()
        };
        Ok((mutation, condition))
    }
}
