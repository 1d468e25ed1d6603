//! Server-side filters and comparators, serialized in HBase's filter wire format: a wrapper
//! naming the Java class, around the filter's own protobuf message.

use bytes::Bytes;
use prost::Message;

const PKG: &str = "org.apache.hadoop.hbase.filter.";

/// How a filter compares a cell part with its comparator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CompareOp {
    /// `<`
    Less,
    /// `<=`
    LessOrEqual,
    /// `==`
    Equal,
    /// `!=`
    NotEqual,
    /// `>=`
    GreaterOrEqual,
    /// `>`
    Greater,
}

impl CompareOp {
    pub(crate) fn to_proto(self) -> hbase_proto::CompareType {
        use hbase_proto::CompareType as C;
        match self {
            CompareOp::Less => C::Less,
            CompareOp::LessOrEqual => C::LessOrEqual,
            CompareOp::Equal => C::Equal,
            CompareOp::NotEqual => C::NotEqual,
            CompareOp::GreaterOrEqual => C::GreaterOrEqual,
            CompareOp::Greater => C::Greater,
        }
    }
}

/// What a comparison filter compares against.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Comparator {
    /// Lexicographic byte comparison.
    Binary(Bytes),
    /// Compares only the first `len(prefix)` bytes.
    BinaryPrefix(Bytes),
    /// Matches when the value contains the string (case-insensitive; EQUAL/NOT_EQUAL only).
    Substring(String),
    /// Java regular expression match (EQUAL/NOT_EQUAL only).
    Regex(String),
}

impl Comparator {
    pub(crate) fn to_proto(&self) -> hbase_proto::Comparator {
        let bytes_comparable = |v: &Bytes| hbase_proto::ByteArrayComparable {
            value: Some(v.clone()),
        };
        let (class, body) = match self {
            Comparator::Binary(v) => (
                "BinaryComparator",
                hbase_proto::BinaryComparator {
                    comparable: bytes_comparable(v),
                }
                .encode_to_vec(),
            ),
            Comparator::BinaryPrefix(v) => (
                "BinaryPrefixComparator",
                hbase_proto::BinaryPrefixComparator {
                    comparable: bytes_comparable(v),
                }
                .encode_to_vec(),
            ),
            Comparator::Substring(s) => (
                "SubstringComparator",
                // The server lower-cases the value; the pattern must be lower-case too.
                hbase_proto::SubstringComparator {
                    substr: s.to_lowercase(),
                }
                .encode_to_vec(),
            ),
            Comparator::Regex(p) => (
                "RegexStringComparator",
                hbase_proto::RegexStringComparator {
                    pattern: p.clone(),
                    pattern_flags: 0,
                    charset: "UTF-8".into(),
                    engine: Some("JAVA".into()),
                }
                .encode_to_vec(),
            ),
        };
        hbase_proto::Comparator {
            name: format!("{PKG}{class}"),
            serialized_comparator: Some(body.into()),
        }
    }
}

/// A server-side filter for gets and scans.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Filter {
    /// Rows whose key starts with the prefix.
    Prefix(Bytes),
    /// At most this many rows per region (combine with a scan limit for a global cap).
    Page(i64),
    /// Cells without values (or with the value length as value, if `true`).
    KeyOnly(bool),
    /// Only the first cell of each row.
    FirstKeyOnly,
    /// Columns whose qualifier starts with the prefix.
    ColumnPrefix(Bytes),
    /// Columns whose qualifier is within a range; `None` bounds are open.
    ColumnRange {
        /// Lower bound.
        min: Option<Bytes>,
        /// Whether the lower bound is included.
        min_inclusive: bool,
        /// Upper bound.
        max: Option<Bytes>,
        /// Whether the upper bound is included.
        max_inclusive: bool,
    },
    /// Rows whose `family:qualifier` value compares as given.
    SingleColumnValue {
        /// Family of the tested column.
        family: Bytes,
        /// Qualifier of the tested column.
        qualifier: Bytes,
        /// The comparison.
        op: CompareOp,
        /// What to compare with.
        comparator: Comparator,
        /// Drop rows that lack the column (default in HBase: keep them).
        filter_if_missing: bool,
        /// Only test the newest version.
        latest_version_only: bool,
    },
    /// Rows whose key compares as given.
    Row(CompareOp, Comparator),
    /// Cells whose qualifier compares as given.
    Qualifier(CompareOp, Comparator),
    /// Cells whose value compares as given.
    Value(CompareOp, Comparator),
    /// All filters must pass (AND).
    All(Vec<Filter>),
    /// At least one filter must pass (OR).
    Any(Vec<Filter>),
}

impl Filter {
    /// The wire form: `Filter { name = Java class, serialized_filter }`.
    pub(crate) fn to_proto(&self) -> hbase_proto::Filter {
        let compare = |op: &CompareOp, c: &Comparator| hbase_proto::CompareFilter {
            compare_op: op.to_proto() as i32,
            comparator: Some(c.to_proto()),
        };
        let list =
            |op: hbase_proto::filter_list::Operator, fs: &[Filter]| hbase_proto::FilterList {
                operator: op as i32,
                filters: fs.iter().map(Filter::to_proto).collect(),
            };
        let (class, body) = match self {
            Filter::Prefix(p) => (
                "PrefixFilter",
                hbase_proto::PrefixFilter {
                    prefix: Some(p.clone()),
                }
                .encode_to_vec(),
            ),
            Filter::Page(n) => (
                "PageFilter",
                hbase_proto::PageFilter { page_size: *n }.encode_to_vec(),
            ),
            Filter::KeyOnly(len) => (
                "KeyOnlyFilter",
                hbase_proto::KeyOnlyFilter { len_as_val: *len }.encode_to_vec(),
            ),
            Filter::FirstKeyOnly => (
                "FirstKeyOnlyFilter",
                hbase_proto::FirstKeyOnlyFilter {}.encode_to_vec(),
            ),
            Filter::ColumnPrefix(p) => (
                "ColumnPrefixFilter",
                hbase_proto::ColumnPrefixFilter { prefix: p.clone() }.encode_to_vec(),
            ),
            Filter::ColumnRange {
                min,
                min_inclusive,
                max,
                max_inclusive,
            } => (
                "ColumnRangeFilter",
                hbase_proto::ColumnRangeFilter {
                    min_column: min.clone(),
                    min_column_inclusive: Some(*min_inclusive),
                    max_column: max.clone(),
                    max_column_inclusive: Some(*max_inclusive),
                }
                .encode_to_vec(),
            ),
            Filter::SingleColumnValue {
                family,
                qualifier,
                op,
                comparator,
                filter_if_missing,
                latest_version_only,
            } => (
                "SingleColumnValueFilter",
                hbase_proto::SingleColumnValueFilter {
                    column_family: Some(family.clone()),
                    column_qualifier: Some(qualifier.clone()),
                    compare_op: op.to_proto() as i32,
                    comparator: comparator.to_proto(),
                    filter_if_missing: Some(*filter_if_missing),
                    latest_version_only: Some(*latest_version_only),
                }
                .encode_to_vec(),
            ),
            Filter::Row(op, c) => (
                "RowFilter",
                hbase_proto::RowFilter {
                    compare_filter: compare(op, c),
                }
                .encode_to_vec(),
            ),
            Filter::Qualifier(op, c) => (
                "QualifierFilter",
                hbase_proto::QualifierFilter {
                    compare_filter: compare(op, c),
                }
                .encode_to_vec(),
            ),
            Filter::Value(op, c) => (
                "ValueFilter",
                hbase_proto::ValueFilter {
                    compare_filter: compare(op, c),
                }
                .encode_to_vec(),
            ),
            Filter::All(fs) => (
                "FilterList",
                list(hbase_proto::filter_list::Operator::MustPassAll, fs).encode_to_vec(),
            ),
            Filter::Any(fs) => (
                "FilterList",
                list(hbase_proto::filter_list::Operator::MustPassOne, fs).encode_to_vec(),
            ),
        };
        hbase_proto::Filter {
            name: format!("{PKG}{class}"),
            serialized_filter: Some(body.into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefix_filter_wire_bytes() {
        let f = Filter::Prefix(Bytes::from_static(b"ab")).to_proto();
        assert_eq!(f.name, "org.apache.hadoop.hbase.filter.PrefixFilter");
        assert_eq!(&f.serialized_filter.unwrap()[..], &[0x0a, 2, b'a', b'b']);
    }

    #[test]
    fn value_filter_nests_compare_filter_and_comparator() {
        let f = Filter::Value(
            CompareOp::Equal,
            Comparator::Binary(Bytes::from_static(b"v")),
        )
        .to_proto();
        let vf = hbase_proto::ValueFilter::decode(f.serialized_filter.unwrap()).unwrap();
        assert_eq!(
            vf.compare_filter.compare_op,
            hbase_proto::CompareType::Equal as i32
        );
        let c = vf.compare_filter.comparator.unwrap();
        assert_eq!(c.name, "org.apache.hadoop.hbase.filter.BinaryComparator");
        let bc = hbase_proto::BinaryComparator::decode(c.serialized_comparator.unwrap()).unwrap();
        assert_eq!(&bc.comparable.value.unwrap()[..], b"v");
    }

    #[test]
    fn filter_list_operator() {
        let f = Filter::Any(vec![Filter::FirstKeyOnly, Filter::KeyOnly(false)]).to_proto();
        let fl = hbase_proto::FilterList::decode(f.serialized_filter.unwrap()).unwrap();
        assert_eq!(fl.operator, 2);
        assert_eq!(fl.filters.len(), 2);
        assert_eq!(
            fl.filters[0].name,
            "org.apache.hadoop.hbase.filter.FirstKeyOnlyFilter"
        );
    }
}
