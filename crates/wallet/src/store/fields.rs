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

impl Fields for rusqlite::Row<'_> {
    fn int(&self, column: &str) -> Result<Option<i64>, StoreError> {
        Ok(self.get(column)?)
    }

    fn text(&self, column: &str) -> Result<Option<String>, StoreError> {
        Ok(self.get(column)?)
    }

    fn flag(&self, column: &str) -> Result<bool, StoreError> {
        Ok(self.get(column)?)
    }
}
