//! `CheckAndMutate`: apply a put, a delete or [`RowMutations`] only if a check on the row's
//! current state passes: a column's value, a column's absence, or a filter.

use bytes::Bytes;

use super::{CompareOp, Delete, Filter, Mutation, Put, RowMutations};
use crate::error::{Error, Result};

#[derive(Debug, Clone)]
enum Check {
    /// `expected <op> current` on one column, as HBase compares.
    Value(Bytes, Bytes, CompareOp, Bytes),
    /// The column has no value.
    Absent(Bytes, Bytes),
    /// The row passes the filter.
    Filter(Filter),
}

/// What to apply when the check passes.
#[derive(Debug, Clone)]
pub(crate) enum Then {
    /// One put or delete (a `Mutate` call).
    Mutation(Mutation),
    /// Several mutations, atomically (an atomic `RegionAction` with the condition).
    Row(RowMutations),
}

/// A conditional mutation of one row.
///
/// ```
/// use hbase_client::{CheckAndMutate, Comparator, CompareOp, Filter, Put, RowMutations, Increment};
/// // A column check:
/// let cm = CheckAndMutate::new("row", "cf", "state")
///     .if_equals("draft")
///     .then_put(Put::new("row").add("cf", "state", "published"));
/// // A filter check, with several mutations applied together:
/// let cm = CheckAndMutate::on_row("row")
///     .if_filter(Filter::Value(CompareOp::Equal, Comparator::Binary("open".into())))
///     .then_mutate(
///         RowMutations::new("row")
///             .put(Put::new("row").add("cf", "owner", "me"))
///             .increment(Increment::new("row").add("cf", "claims", 1)),
///     );
/// ```
#[derive(Debug, Clone)]
pub struct CheckAndMutate {
    pub(crate) row: Bytes,
    check: Check,
    then: Option<Then>,
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
            check: Check::Absent(family.into(), qualifier.into()),
            then: None,
        }
    }

    /// A check on `row` to be given by [`CheckAndMutate::if_filter`].
    pub fn on_row(row: impl Into<Bytes>) -> CheckAndMutate {
        CheckAndMutate {
            row: row.into(),
            check: Check::Filter(Filter::Any(Vec::new())),
            then: None,
        }
    }

    fn column(&self) -> Option<(Bytes, Bytes)> {
        match &self.check {
            Check::Value(f, q, ..) | Check::Absent(f, q) => Some((f.clone(), q.clone())),
            Check::Filter(_) => None,
        }
    }

    /// Passes when the current value equals `value`.
    pub fn if_equals(self, value: impl Into<Bytes>) -> CheckAndMutate {
        self.if_matches(CompareOp::Equal, value)
    }

    /// Passes when `value <op> current value` holds (HBase's operand order).
    pub fn if_matches(mut self, op: CompareOp, value: impl Into<Bytes>) -> CheckAndMutate {
        let (f, q) = self.column().unwrap_or_default();
        self.check = Check::Value(f, q, op, value.into());
        self
    }

    /// Passes when the column has no value.
    pub fn if_absent(mut self) -> CheckAndMutate {
        let (f, q) = self.column().unwrap_or_default();
        self.check = Check::Absent(f, q);
        self
    }

    /// Passes when the row (its current cells) passes `filter`, evaluated by the server.
    pub fn if_filter(mut self, filter: Filter) -> CheckAndMutate {
        self.check = Check::Filter(filter);
        self
    }

    /// The put to apply when the check passes (must be on the same row).
    pub fn then_put(mut self, put: Put) -> CheckAndMutate {
        self.then = Some(Then::Mutation(put.into()));
        self
    }

    /// The delete to apply when the check passes (must be on the same row).
    pub fn then_delete(mut self, delete: Delete) -> CheckAndMutate {
        self.then = Some(Then::Mutation(delete.into()));
        self
    }

    /// Mutations to apply together when the check passes (all on the same row).
    pub fn then_mutate(mut self, mutations: RowMutations) -> CheckAndMutate {
        self.then = Some(Then::Row(mutations));
        self
    }

    /// The condition and what to apply, checked (`max_kv`: the client's largest KeyValue).
    pub(crate) fn to_parts(&self, max_kv: usize) -> Result<(hbase_proto::Condition, &Then)> {
        let then = self.then.as_ref().ok_or_else(|| {
            Error::InvalidInput(
                "check-and-mutate needs then_put, then_delete or then_mutate".into(),
            )
        })?;
        let row = match then {
            Then::Mutation(m) => {
                m.validate(max_kv)?;
                m.row()
            }
            Then::Row(rm) => {
                rm.validate(max_kv)?;
                rm.row()
            }
        };
        if row != &self.row {
            return Err(Error::InvalidInput(
                "check-and-mutate: the mutation must be on the checked row".into(),
            ));
        }
        let mut condition = hbase_proto::Condition {
            row: self.row.clone(),
            ..Default::default()
        };
        match &self.check {
            Check::Value(f, q, op, v) => {
                condition.family = Some(f.clone());
                condition.qualifier = Some(q.clone());
                condition.compare_type = Some(op.to_proto() as i32);
                condition.comparator = Some(super::Comparator::Binary(v.clone()).to_proto());
            }
            Check::Absent(f, q) => {
                condition.family = Some(f.clone());
                condition.qualifier = Some(q.clone());
                condition.compare_type = Some(CompareOp::Equal.to_proto() as i32);
                condition.comparator = Some(hbase_proto::Comparator {
                    name: "org.apache.hadoop.hbase.filter.NullComparator".into(),
                    serialized_comparator: Some(Bytes::new()),
                });
            }
            Check::Filter(Filter::Any(fs)) if fs.is_empty() => {
                return Err(Error::InvalidInput(
                    "check-and-mutate on_row needs if_filter".into(),
                ))
            }
            Check::Filter(filter) => condition.filter = Some(filter.to_proto()),
        }
        Ok((condition, then))
    }
}
