//! A stored row's columns, read alike from either kind of connection: sqlx's (the reads,
//! and PostgreSQL's committer) and rusqlite's (SQLite's committer), so that each kind of
//! row becomes its type in one place ([`super::account_row`], [`super::movement_row`]).

use super::StoreError;

/// The columns of one row, by name.
pub(crate) trait Fields {
    /// An integer column, `None` when NULL.
    fn int(&self, column: &str) -> Result<Option<i64>, StoreError>;
    /// A text column, `None` when NULL.
    fn text(&self, column: &str) -> Result<Option<String>, StoreError>;
    fn flag(&self, column: &str) -> Result<bool, StoreError>;

    /// An integer column that is never NULL.
    fn int_of(&self, column: &str) -> Result<i64, StoreError> {
        self.int(column)?.ok_or_else(|| null(column))
    }

    /// A text column that is never NULL.
    fn text_of(&self, column: &str) -> Result<String, StoreError> {
        self.text(column)?.ok_or_else(|| null(column))
    }

    /// A count or a time (never negative), `None` when NULL.
    fn count(&self, column: &str) -> Result<Option<u64>, StoreError> {
        self.int(column)?
            .map(|v| u64::try_from(v).map_err(|_| StoreError::Corrupt(format!("{column} {v}"))))
            .transpose()
    }
}

fn null(column: &str) -> StoreError {
    StoreError::Corrupt(format!("{column} is NULL"))
}

/// A row of sqlx, on either backend.
pub(crate) struct Sqlx<'r, R>(pub(crate) &'r R);

impl<R: sqlx::Row> Fields for Sqlx<'_, R>
where
    for<'c> &'c str: sqlx::ColumnIndex<R>,
    for<'r> Option<i64>: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
    for<'r> Option<String>: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
    for<'r> bool: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
{
    fn int(&self, column: &str) -> Result<Option<i64>, StoreError> {
        Ok(self.0.try_get(column)?)
    }

    fn text(&self, column: &str) -> Result<Option<String>, StoreError> {
        Ok(self.0.try_get(column)?)
    }

    fn flag(&self, column: &str) -> Result<bool, StoreError> {
        Ok(self.0.try_get(column)?)
    }
}

/// A statement's column names, read from SQLite once. rusqlite finds a column by name by
/// asking SQLite for the name of each column in turn, under the connection's mutex, for
/// every field of every row: found here instead, reading the accounts of a run took 13.4 M
/// instructions in place of 39.6 M, and the committer's thread 386.5 M in place of 406.4 M
/// (callgrind, `banco-bench bets --players 200 --bets-per-player 20 --concurrency 16`).
pub(crate) struct Columns {
    names: Vec<String>,
    /// Where the last name was found: fields are mostly read in the statement's order, so
    /// the next is looked for after it first.
    next: std::cell::Cell<usize>,
}

impl Columns {
    pub(crate) fn of(statement: &rusqlite::Statement<'_>) -> Columns {
        Columns {
            names: statement
                .column_names()
                .into_iter()
                .map(str::to_owned)
                .collect(),
            next: std::cell::Cell::new(0),
        }
    }

    fn index(&self, column: &str) -> Result<usize, StoreError> {
        let n = self.names.len();
        let start = self.next.get();
        let found = (start..n)
            .chain(0..start.min(n))
            .find(|&i| self.names[i] == column)
            .ok_or_else(|| rusqlite::Error::InvalidColumnName(column.to_owned()))?;
        self.next.set(found + 1);
        Ok(found)
    }
}

/// A row of rusqlite, its columns found by [`Columns`].
pub(crate) struct Rusqlite<'r, 's>(pub(crate) &'r rusqlite::Row<'s>, pub(crate) &'r Columns);

impl Fields for Rusqlite<'_, '_> {
    fn int(&self, column: &str) -> Result<Option<i64>, StoreError> {
        Ok(self.0.get(self.1.index(column)?)?)
    }

    fn text(&self, column: &str) -> Result<Option<String>, StoreError> {
        Ok(self.0.get(self.1.index(column)?)?)
    }

    fn flag(&self, column: &str) -> Result<bool, StoreError> {
        Ok(self.0.get(self.1.index(column)?)?)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn columns_are_found_by_name_in_any_order() {
        let conn = rusqlite::Connection::open_in_memory().unwrap();
        let mut statement = conn
            .prepare("SELECT 1 AS a, 'two' AS b, NULL AS c, 1 AS d")
            .unwrap();
        let columns = Columns::of(&statement);
        let mut rows = statement.query([]).unwrap();
        let row = Rusqlite(rows.next().unwrap().unwrap(), &columns);
        // In the statement's order, then back, then again from the start.
        assert_eq!(row.int("a").unwrap(), Some(1));
        assert_eq!(row.text_of("b").unwrap(), "two");
        assert_eq!(row.int("c").unwrap(), None);
        assert_eq!(row.text("b").unwrap().as_deref(), Some("two"));
        assert!(row.flag("d").unwrap());
        assert_eq!(row.int_of("a").unwrap(), 1);
        let missing = row.int("e").unwrap_err().to_string();
        assert!(missing.ends_with("Invalid column name: e"), "{missing}");
        let null = row.int_of("c").unwrap_err().to_string();
        assert!(null.contains("c is NULL"), "{null}");
    }
}
