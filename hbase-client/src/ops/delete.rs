//! `Delete`: remove a row, families, or columns.

use bytes::{Bytes, BytesMut};
use hbase_proto::mutation_proto::{
    column_value::QualifierValue, ColumnValue, DeleteType, MutationType,
};

use super::{
    add_qualifier_value, java_heap, mutation_proto, row_heap_size, CellBlockMutation, Mutation,
};
use crate::cell::{CellType, LATEST_TIMESTAMP};
use crate::error::Result;
use crate::rpc::cellblock::{check_family, check_row, encode_cell, encoded_len};

#[derive(Debug, Clone)]
enum Target {
    Family(Bytes),
    /// Every column of the family at exactly this timestamp.
    FamilyVersion(Bytes, u64),
    /// Column, and whether to delete all versions (else only the newest / the given one).
    Column(Bytes, Bytes, bool, Option<u64>),
}

/// Deletes a whole row, or only some families or columns of it.
#[derive(Debug, Clone)]
pub struct Delete {
    pub(crate) row: Bytes,
    timestamp: Option<u64>,
    targets: Vec<Target>,
}

impl Delete {
    /// Deletes every cell of `row` (unless narrowed with the methods below).
    pub fn new(row: impl Into<Bytes>) -> Delete {
        Delete {
            row: row.into(),
            timestamp: None,
            targets: Vec::new(),
        }
    }

    /// The row key.
    pub fn row(&self) -> &Bytes {
        &self.row
    }

    /// Deletes all versions of all columns of `family` (up to the delete's
    /// [`timestamp`](Self::timestamp), when it has one).
    ///
    /// Replaces the targets of `family` added before it (its columns, its versions, an
    /// earlier whole-family target), as Java's `Delete.addFamily` does: they are not sent. So
    /// a column version newer than the delete's timestamp, named before this call, is no
    /// longer deleted; a target of `family` added after this call is kept.
    pub fn family(mut self, family: impl Into<Bytes>) -> Delete {
        let family = family.into();
        self.targets.retain(|t| {
            let (Target::Family(f) | Target::FamilyVersion(f, _) | Target::Column(f, ..)) = t;
            *f != family
        });
        self.targets.push(Target::Family(family));
        self
    }

    /// Deletes the cells of every column of `family` whose timestamp is exactly `timestamp`
    /// (HBase's `addFamilyVersion`), leaving other versions in place.
    pub fn family_version(mut self, family: impl Into<Bytes>, timestamp: u64) -> Delete {
        self.targets
            .push(Target::FamilyVersion(family.into(), timestamp));
        self
    }

    /// Deletes all versions of `family:qualifier`.
    pub fn column(mut self, family: impl Into<Bytes>, qualifier: impl Into<Bytes>) -> Delete {
        self.targets
            .push(Target::Column(family.into(), qualifier.into(), true, None));
        self
    }

    /// Deletes one version of `family:qualifier`: the one at `timestamp`, or the newest.
    pub fn column_version(
        mut self,
        family: impl Into<Bytes>,
        qualifier: impl Into<Bytes>,
        timestamp: Option<u64>,
    ) -> Delete {
        self.targets.push(Target::Column(
            family.into(),
            qualifier.into(),
            false,
            timestamp,
        ));
        self
    }

    /// Only deletes cells at or older than `timestamp`.
    pub fn timestamp(mut self, timestamp: u64) -> Delete {
        self.timestamp = Some(timestamp);
        self
    }

    /// The markers it sends: one per target (none for a whole row's delete).
    pub(crate) fn markers(&self) -> usize {
        self.targets.len()
    }

    /// True when it deletes a column's newest version without naming its timestamp: the
    /// server picks the version as it applies it, so applying it twice deletes two versions,
    /// and HBase takes no nonce for a delete. Such a delete is not retried after an attempt
    /// that may have been applied (its outcome is then unknown).
    pub(crate) fn applies_once(&self) -> bool {
        self.timestamp.is_none()
            && self
                .targets
                .iter()
                .any(|t| matches!(t, Target::Column(_, _, false, None)))
    }

    pub(crate) fn validate(&self) -> Result<()> {
        check_row(&self.row)?;
        for t in &self.targets {
            let (Target::Family(f) | Target::FamilyVersion(f, _) | Target::Column(f, ..)) = t;
            check_family(f)?;
        }
        Ok(())
    }

    /// Java's `Mutation.heapSize()` for this delete, exactly: what hbase-client 2.x counts
    /// for the same `Delete` (each target a `KeyValue` marker in its family's list). A
    /// [`BufferedMutator`](crate::BufferedMutator) adds this up against its
    /// [`write_buffer_size`](crate::MutatorConfig::write_buffer_size), as Java's does.
    /// Not the memory it holds here: see
    /// [`BufferedMutator::budgeted_size`](crate::BufferedMutator::budgeted_size).
    pub fn heap_size(&self) -> usize {
        let row = self.row.len();
        let mut families = java_heap::Families::new();
        for t in &self.targets {
            match t {
                Target::Family(f) | Target::FamilyVersion(f, _) => {
                    families.add(f, java_heap::kv_len(row, f.len(), 0, 0))
                }
                Target::Column(f, q, ..) => {
                    families.add(f, java_heap::kv_len(row, f.len(), q.len(), 0))
                }
            }
        }
        java_heap::row(row).saturating_add(families.heap_size())
    }

    /// Approximate memory this delete holds: the delete itself (as a [`Mutation`]), its row
    /// (and the shared header a clone of it allocates), and its targets. A buffered mutator
    /// counts its own bookkeeping on top
    /// ([`BufferedMutator::budgeted_size`](crate::BufferedMutator::budgeted_size)).
    pub(crate) fn memory_size(&self) -> usize {
        let targets: usize = self
            .targets
            .iter()
            .map(|t| match t {
                Target::Family(f) | Target::FamilyVersion(f, _) => 48 + f.len(),
                Target::Column(f, q, ..) => 48 + f.len() + q.len(),
            })
            .sum();
        std::mem::size_of::<Mutation>() + row_heap_size(&self.row) + targets
    }

    /// Bytes [`encode_cells`](Self::encode_cells) appends to the cell block
    /// (exactly: one marker per target, each with the row).
    pub(crate) fn cellblock_len(&self) -> usize {
        self.targets
            .iter()
            .map(|t| match t {
                Target::Family(f) | Target::FamilyVersion(f, _) => {
                    encoded_len(&self.row, f, b"", b"")
                }
                Target::Column(f, q, ..) => encoded_len(&self.row, f, q, b""),
            })
            .sum()
    }

    /// The mutation header for a cell-block encoding; delete markers go to `block`.
    pub(crate) fn encode_cells(&self, block: &mut BytesMut) -> CellBlockMutation<'_> {
        let default_ts = self.timestamp.unwrap_or(LATEST_TIMESTAMP);
        for target in &self.targets {
            match target {
                Target::Family(f) => encode_cell(
                    block,
                    &self.row,
                    f,
                    b"",
                    default_ts,
                    CellType::DeleteFamily,
                    b"",
                ),
                Target::FamilyVersion(f, ts) => encode_cell(
                    block,
                    &self.row,
                    f,
                    b"",
                    *ts,
                    CellType::DeleteFamilyVersion,
                    b"",
                ),
                Target::Column(f, q, true, _) => encode_cell(
                    block,
                    &self.row,
                    f,
                    q,
                    default_ts,
                    CellType::DeleteColumn,
                    b"",
                ),
                Target::Column(f, q, false, ts) => {
                    let ts = ts.unwrap_or(default_ts);
                    encode_cell(block, &self.row, f, q, ts, CellType::Delete, b"")
                }
            }
        }
        CellBlockMutation {
            row: &self.row,
            kind: MutationType::Delete,
            timestamp: self.timestamp,
            durability: None,
            cells: self.targets.len() as i32,
        }
    }

    pub(crate) fn to_proto(&self) -> hbase_proto::MutationProto {
        // The server takes each marker's timestamp from its own QualifierValue (LATEST when
        // absent); the mutation's timestamp only applies to a whole-row delete. So the delete's
        // timestamp is written into every marker that has none of its own.
        let mut column_value: Vec<ColumnValue> = Vec::new();
        for target in &self.targets {
            let (family, qv) = match target {
                Target::Family(f) => {
                    let mut qv = QualifierValue {
                        timestamp: self.timestamp,
                        ..Default::default()
                    };
                    qv.set_delete_type(DeleteType::DeleteFamily);
                    (f, qv)
                }
                Target::FamilyVersion(f, ts) => {
                    let mut qv = QualifierValue {
                        timestamp: Some(*ts),
                        ..Default::default()
                    };
                    qv.set_delete_type(DeleteType::DeleteFamilyVersion);
                    (f, qv)
                }
                Target::Column(f, q, all, ts) => {
                    let mut qv = QualifierValue {
                        qualifier: Some(q.clone()),
                        timestamp: ts.or(self.timestamp),
                        ..Default::default()
                    };
                    qv.set_delete_type(if *all {
                        DeleteType::DeleteMultipleVersions
                    } else {
                        DeleteType::DeleteOneVersion
                    });
                    (f, qv)
                }
            };
            add_qualifier_value(&mut column_value, family, qv);
        }
        mutation_proto(
            self.row.clone(),
            MutationType::Delete,
            column_value,
            self.timestamp,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rpc::cellblock::CellBlockReader;

    #[test]
    fn only_a_newest_version_delete_without_a_timestamp_applies_once() {
        let d = || Delete::new("r");
        assert!(d().column_version("f", "q", None).applies_once());
        assert!(d()
            .column("f", "a")
            .column_version("f", "q", None)
            .applies_once());
        assert!(!d().column_version("f", "q", Some(7)).applies_once());
        assert!(!d()
            .column_version("f", "q", None)
            .timestamp(7)
            .applies_once());
        assert!(!d().column("f", "q").applies_once());
        assert!(!d().family("f").family_version("g", 3).applies_once());
        assert!(!d().applies_once());
    }

    /// Java's `addFamily` clears its family's earlier cells: those targets are not sent in
    /// either encoding, while other families' targets, and later ones, are.
    #[test]
    fn a_family_target_replaces_the_earlier_targets_of_its_family() {
        let d = Delete::new("r")
            .timestamp(200)
            .column_version("f", "a", Some(300))
            .column("g", "a")
            .family_version("f", 300)
            .column("f", "b")
            .family("f")
            .column_version("f", "c", Some(100));
        let proto = d.to_proto();
        let mut marks: Vec<(Bytes, Option<Bytes>, DeleteType)> = proto
            .column_value
            .iter()
            .flat_map(|cv| {
                cv.qualifier_value
                    .iter()
                    .map(|qv| (cv.family.clone(), qv.qualifier.clone(), qv.delete_type()))
            })
            .collect();
        marks.sort_by_key(|m| (m.0.clone(), m.1.clone()));
        let f = |s: &'static str| Bytes::from_static(s.as_bytes());
        assert_eq!(
            marks,
            vec![
                (f("f"), None, DeleteType::DeleteFamily),
                (f("f"), Some(f("c")), DeleteType::DeleteOneVersion),
                (f("g"), Some(f("a")), DeleteType::DeleteMultipleVersions),
            ]
        );
        let mut block = BytesMut::new();
        let header = d.encode_cells(&mut block);
        assert_eq!(header.cells, 3);
        assert_eq!(d.cellblock_len(), block.len());
        let cells = CellBlockReader::new(block.freeze()).take(3).unwrap();
        let types: Vec<CellType> = cells.iter().map(|c| c.cell_type()).collect();
        assert_eq!(
            types,
            vec![
                CellType::DeleteColumn,
                CellType::DeleteFamily,
                CellType::Delete
            ]
        );
    }

    #[test]
    fn family_version_marks_one_timestamp_in_both_encodings() {
        let d = Delete::new("r").family_version("f", 250);
        let proto = d.to_proto();
        let qv = &proto.column_value[0].qualifier_value[0];
        assert_eq!(&proto.column_value[0].family[..], b"f");
        assert_eq!(qv.delete_type(), DeleteType::DeleteFamilyVersion);
        assert_eq!(qv.timestamp, Some(250));
        assert_eq!(qv.qualifier, None);

        let mut block = BytesMut::new();
        let header = d.encode_cells(&mut block);
        assert_eq!(header.cells, 1);
        let cells = CellBlockReader::new(block.freeze()).take(1).unwrap();
        assert_eq!(cells[0].cell_type(), CellType::DeleteFamilyVersion);
        assert_eq!(cells[0].timestamp(), 250);
        assert!(cells[0].qualifier().is_empty());
    }

    #[test]
    fn the_delete_timestamp_reaches_every_marker_without_its_own() {
        let d = Delete::new("r")
            .timestamp(35)
            .family("f")
            .column("f", "a")
            .column_version("f", "b", None)
            .column_version("f", "c", Some(7));
        let proto = d.to_proto();
        let ts: Vec<Option<u64>> = proto.column_value[0]
            .qualifier_value
            .iter()
            .map(|qv| qv.timestamp)
            .collect();
        assert_eq!(ts, vec![Some(35), Some(35), Some(35), Some(7)]);
        let plain = Delete::new("r").column("f", "a").to_proto();
        assert_eq!(plain.column_value[0].qualifier_value[0].timestamp, None);
    }
}
