//! `Get`: read one row.

use bytes::Bytes;

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

    pub(crate) fn to_proto(&self) -> hbase_proto::Get {
        hbase_proto::Get {
            row: self.row.clone(),
            column: self.columns.to_proto(),
            max_versions: self.max_versions,
            time_range: self.time_range.map(|(from, to)| hbase_proto::TimeRange {
                from: Some(from),
                to: Some(to),
            }),
            filter: self.filter.as_ref().map(super::Filter::to_proto),
            existence_only: self.existence_only.then_some(true),
            consistency: self.consistency.to_proto(),
            ..Default::default()
        }
    }
}
