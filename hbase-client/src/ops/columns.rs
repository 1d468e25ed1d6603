//! The families and columns a get or scan asks for.

use bytes::{BufMut, Bytes};
use prost::encoding;

use crate::rpc::varint;
use smallvec::SmallVec;

/// Families (all their columns) and single columns; empty means every column of the row. One
/// family is kept inline: a read of one family (as YCSB's) allocates nothing for it.
#[derive(Debug, Clone, Default)]
pub(crate) struct Columns(SmallVec<[(Bytes, Option<Vec<Bytes>>); 1]>);

impl Columns {
    /// Adds a whole family; it wins over single columns of the same family.
    pub(crate) fn add_family(&mut self, family: Bytes) {
        match self.0.iter_mut().find(|(f, _)| *f == family) {
            Some((_, qualifiers)) => *qualifiers = None,
            None => self.0.push((family, None)),
        }
    }

    /// Adds one column, unless its whole family is already asked for.
    pub(crate) fn add_column(&mut self, family: Bytes, qualifier: Bytes) {
        match self.0.iter_mut().find(|(f, _)| *f == family) {
            Some((_, Some(qualifiers))) => qualifiers.push(qualifier),
            Some((_, None)) => {}
            None => self.0.push((family, Some(vec![qualifier]))),
        }
    }

    pub(crate) fn to_proto(&self) -> Vec<hbase_proto::Column> {
        self.0
            .iter()
            .map(|(family, qualifiers)| hbase_proto::Column {
                family: family.clone(),
                qualifier: qualifiers.clone().unwrap_or_default(),
            })
            .collect()
    }

    /// The encoded length of the columns as repeated `Column` messages in field `tag`.
    pub(crate) fn encoded_len(&self, tag: u32) -> usize {
        self.0
            .iter()
            .map(|(family, qualifiers)| {
                let len = column_len(family, qualifiers.as_deref());
                encoding::key_len(tag) + encoding::encoded_len_varint(len as u64) + len
            })
            .sum()
    }

    /// Writes the columns as repeated `Column { family = 1; repeated qualifier = 2 }` messages
    /// in field `tag`, as prost writes [`Columns::to_proto`]'s, without building them.
    pub(crate) fn encode(&self, tag: u32, buf: &mut impl BufMut) {
        for (family, qualifiers) in &self.0 {
            varint::put_len_key(tag, column_len(family, qualifiers.as_deref()), buf);
            super::put_bytes_field(1, family, buf);
            for q in qualifiers.iter().flatten() {
                super::put_bytes_field(2, q, buf);
            }
        }
    }
}

/// The encoded length of one `Column` message's fields.
fn column_len(family: &Bytes, qualifiers: Option<&[Bytes]>) -> usize {
    encoding::bytes::encoded_len(1, family)
        + qualifiers.map_or(0, |qs| encoding::bytes::encoded_len_repeated(2, qs))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_family_wins_over_its_columns_in_either_order() {
        let mut c = Columns::default();
        c.add_column("f".into(), "a".into());
        c.add_family("f".into());
        c.add_column("f".into(), "b".into());
        c.add_column("g".into(), "x".into());
        let p = c.to_proto();
        assert_eq!(p.len(), 2);
        assert!(p[0].qualifier.is_empty());
        assert_eq!(p[1].qualifier, vec![Bytes::from("x")]);
    }
}
