//! The families and columns a get or scan asks for.

use bytes::Bytes;

/// Families (all their columns) and single columns; empty means every column of the row.
#[derive(Debug, Clone, Default)]
pub(crate) struct Columns(Vec<(Bytes, Option<Vec<Bytes>>)>);

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
