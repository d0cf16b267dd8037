//! A batch's transaction on PostgreSQL, where several `banco wallet` processes may share
//! one database: the accounts are created if need be and locked (`FOR UPDATE` locks only
//! rows that exist) in key order, so that two stores never deadlock and what another
//! commits first is what this one decides on. Reads and writes go a piece of many rows at
//! a time, each piece a power of two in size so that its statement is prepared once.

use sqlx::postgres::{PgConnection, PgPool, Postgres};
use sqlx::{QueryBuilder, Row as _};

use super::commit::{
    ACCOUNT_COLUMNS, ACCOUNT_UPDATE, Decided, Deciding, MARK_UPDATE, MOVEMENT_COLUMNS, Needs,
    Transact, count, number, refusal_text, tx_id,
};
use super::decide::{self, AccountRow, Loaded, Mark, Op, Writes};
use super::fields::Sqlx;
use super::{SELECT_ACCOUNT, SELECT_MOVEMENT, StoreError, account_row, movement_row, pieces};
use crate::api::TxId;

/// Ids per `IN (…)` list.
const IDS_PER_SELECT: usize = 1024;

/// Movements per multi-row INSERT (18 parameters each), postings (4), accounts (11):
/// powers of two under PostgreSQL's 65,535 parameters.
const MOVEMENTS_PER_INSERT: usize = 1024;
const POSTINGS_PER_INSERT: usize = 4096;
const ACCOUNTS_PER_INSERT: usize = 2048;

impl Transact for PgPool {
    async fn transact(&mut self, ops: &[Op], at: Deciding) -> Result<Decided, StoreError> {
        write(self, ops, at).await
    }

    async fn close(self) {
        PgPool::close(&self).await;
    }
}

/// Decides and writes `ops` in one transaction.
async fn write(pool: &PgPool, ops: &[Op], at: Deciding) -> Result<Decided, StoreError> {
    let needs = Needs::of(ops);
    let mut tx = pool.begin().await?;
    let mut loaded = load(&mut tx, &needs).await?;
    let (answers, writes) = decide::decide(ops, &mut loaded, at.now_ms, at.policy);
    save(&mut tx, &writes).await?;
    tx.commit().await?;
    Ok((answers, writes))
}

async fn load(conn: &mut PgConnection, needs: &Needs<'_>) -> Result<Loaded, StoreError> {
    let mut loaded = Loaded::default();
    for piece in pieces(&needs.accounts, IDS_PER_SELECT) {
        let mut q = QueryBuilder::new(
            "INSERT INTO accounts (player, currency, balance, blocked, pending) ",
        );
        q.push_values(piece, |mut b, (player, currency)| {
            b.push_bind(*player)
                .push_bind(*currency)
                .push_bind(0_i64)
                .push_bind(false)
                .push_bind(false);
        });
        q.push(" ON CONFLICT (player, currency) DO NOTHING");
        q.build().execute(&mut *conn).await?;
        let mut q = QueryBuilder::new(SELECT_ACCOUNT);
        q.push(" WHERE (player, currency) IN (VALUES ");
        let mut list = q.separated(", ");
        for (player, currency) in piece {
            list.push("(");
            list.push_bind_unseparated(*player);
            list.push_unseparated(", ");
            list.push_bind_unseparated(*currency);
            list.push_unseparated(")");
        }
        q.push(") ORDER BY player, currency FOR UPDATE");
        for row in q.build().fetch_all(&mut *conn).await? {
            let account = account_row(&Sqlx(&row))?;
            loaded
                .accounts
                .insert((account.player.clone(), account.currency.clone()), account);
        }
    }
    for piece in pieces(&needs.ids, IDS_PER_SELECT) {
        let mut q = select_in(SELECT_MOVEMENT, "tx", piece);
        for row in q.build().fetch_all(&mut *conn).await? {
            let movement = movement_row(&Sqlx(&row))?;
            loaded.seen.insert(movement.tx.clone(), movement);
        }
    }
    for piece in pieces(&needs.debits, IDS_PER_SELECT) {
        let mut q = select_in("SELECT debit, state FROM debit_marks", "debit", piece);
        for row in q.build().fetch_all(&mut *conn).await? {
            let debit: String = row.try_get(0)?;
            let state: String = row.try_get(1)?;
            let mark = Mark::parse(&state).ok_or_else(|| {
                StoreError::Corrupt(format!("debit {debit}: unknown state `{state}`"))
            })?;
            loaded.marks.insert(tx_id(debit)?, mark);
        }
    }
    Ok(loaded)
}

/// `select` of the rows whose `column` is one of `ids`.
fn select_in<'a>(select: &str, column: &str, ids: &[&'a str]) -> QueryBuilder<'a, Postgres> {
    let mut q = QueryBuilder::new(format!("{select} WHERE {column} IN ("));
    let mut list = q.separated(", ");
    for id in ids {
        list.push_bind(*id);
    }
    q.push(")");
    q
}

async fn save(conn: &mut PgConnection, writes: &Writes) -> Result<(), StoreError> {
    // The batch's numbers are taken before its rows are written, since a movement names
    // the one before it on its account, often of the same batch. Ascending, so that the
    // order of the numbers is the order decided.
    let mut numbers: Vec<i64> = if writes.movements.is_empty() {
        Vec::new()
    } else {
        sqlx::query_scalar(
            "SELECT nextval(pg_get_serial_sequence('movements', 'seq')) \
             FROM generate_series(1, $1)",
        )
        .bind(i64::try_from(writes.movements.len()).unwrap_or(i64::MAX))
        .fetch_all(&mut *conn)
        .await?
    };
    numbers.sort_unstable();
    if numbers.len() != writes.movements.len() {
        return Err(StoreError::Corrupt(format!(
            "{} movement numbers for {} movements",
            numbers.len(),
            writes.movements.len()
        )));
    }
    let mut first = 0;
    for piece in pieces(&writes.movements, MOVEMENTS_PER_INSERT) {
        let rows = piece
            .iter()
            .map(|m| Ok((refusal_text(m)?, number(m.prev, &numbers)?)))
            .collect::<Result<Vec<_>, StoreError>>()?;
        let seqs = &numbers[first..first + piece.len()];
        first += piece.len();
        let mut q = QueryBuilder::new(format!("INSERT INTO movements (seq, {MOVEMENT_COLUMNS}) "));
        let values = piece.iter().zip(seqs).zip(&rows);
        q.push_values(values, |mut b, ((m, seq), (refusal, prev))| {
            b.push_bind(*seq)
                .push_bind(m.tx.as_str())
                .push_bind(m.kind.as_str())
                .push_bind(m.player.as_str())
                .push_bind(m.currency.as_str())
                .push_bind(m.amount)
                .push_bind(m.table.as_str())
                .push_bind(m.round.as_str())
                .push_bind(m.bet.as_str())
                .push_bind(m.position_total)
                .push_bind(m.credit_kind.as_str())
                .push_bind(m.refs.as_str())
                .push_bind(m.delta)
                .push_bind(m.balance)
                .push_bind(m.version.map(count))
                .push_bind(refusal.as_deref())
                .push_bind(m.at_ms)
                .push_bind(*prev);
        });
        q.build().execute(&mut *conn).await?;
    }
    for piece in pieces(&writes.postings, POSTINGS_PER_INSERT) {
        let mut q =
            QueryBuilder::new("INSERT INTO postings (movement, account, currency, amount) ");
        q.push_values(piece, |mut b, p| {
            b.push_bind(numbers[p.movement])
                .push_bind(p.account.as_str())
                .push_bind(p.currency.as_str())
                .push_bind(p.amount);
        });
        q.build().execute(&mut *conn).await?;
    }
    let marks: Vec<(&TxId, &Mark)> = writes.marks.iter().collect();
    for piece in pieces(&marks, POSTINGS_PER_INSERT) {
        let mut q = QueryBuilder::new("INSERT INTO debit_marks (debit, state) ");
        q.push_values(piece, |mut b, (debit, mark)| {
            b.push_bind(debit.as_str()).push_bind(mark.as_str());
        });
        q.push(MARK_UPDATE);
        q.build().execute(&mut *conn).await?;
    }
    let accounts = writes
        .accounts
        .values()
        .map(|a| Ok((a, number(a.last, &numbers)?)))
        .collect::<Result<Vec<(&AccountRow, Option<i64>)>, StoreError>>()?;
    for piece in pieces(&accounts, ACCOUNTS_PER_INSERT) {
        let mut q = QueryBuilder::new(format!("INSERT INTO accounts ({ACCOUNT_COLUMNS}) "));
        q.push_values(piece, |mut b, (a, last)| {
            b.push_bind(a.player.as_str())
                .push_bind(a.currency.as_str())
                .push_bind(a.balance)
                .push_bind(a.blocked)
                .push_bind(a.max_bet)
                .push_bind(a.pending.is_some())
                .push_bind(a.pending.and_then(|(max, _)| max))
                .push_bind(a.pending.map(|(_, at)| count(at)))
                .push_bind(a.raise_asked_at.map(count))
                .push_bind(count(a.version))
                .push_bind(*last);
        });
        q.push(ACCOUNT_UPDATE);
        q.build().execute(&mut *conn).await?;
    }
    Ok(())
}
