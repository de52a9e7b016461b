//! What the parser produces: [`BrookStatement`] — a standard or Brook statement with the
//! clauses Brook lifts off it — and the bodies of Brook's own statements.

use datafusion::sql::sqlparser::ast::{
    ColumnDef, DataType, Expr, Ident, ObjectName, SqlOption, Statement, TableConstraint,
};

/// A parsed statement: what it does, and the clauses Brook lifts off a statement before
/// parsing the rest as standard SQL (an `EMIT` clause, an accuracy budget). One struct with
/// optional clauses, so that a handler asks `stmt.emit` instead of unwrapping layers.
#[derive(Debug, Clone)]
pub struct BrookStatement {
    /// The statement without Brook's clauses.
    pub body: StatementBody,
    /// `EMIT CHANGES` or `EMIT ON WINDOW CLOSE` (only on a SQL body: SELECT, COPY, DECLARE,
    /// EXPLAIN).
    pub emit: Option<Emit>,
    /// `WITH ERROR e [CONFIDENCE c]`: exact aggregates may be replaced by synopses.
    pub budget: Option<ErrorBudget>,
    /// The statement's text as the client sent it ([`crate::parse_sql`] keeps it): what a
    /// cluster's log carries to the other nodes for a catalog change.
    pub text: Option<String>,
    /// `INSERT ... OVERRIDING SYSTEM VALUE` / `OVERRIDING USER VALUE` (sqlparser has no
    /// such clause; only on an INSERT body).
    pub overriding: Option<Overriding>,
    /// `CREATE MATERIALIZED VIEW ... WITH NO DATA` (as pg_dump writes it). A Brook
    /// materialized view is kept up to date from its creation, so it is populated all the
    /// same; the server says so.
    pub with_no_data: bool,
}

/// An INSERT's `OVERRIDING` clause: whose value an identity column takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Overriding {
    /// `OVERRIDING SYSTEM VALUE`: the given values, even for `GENERATED ALWAYS` columns.
    SystemValue,
    /// `OVERRIDING USER VALUE`: the sequence's values; the given ones are ignored.
    UserValue,
}

impl BrookStatement {
    /// A statement without Brook's clauses.
    pub fn new(body: StatementBody) -> Self {
        BrookStatement {
            body,
            emit: None,
            budget: None,
            text: None,
            overriding: None,
            with_no_data: false,
        }
    }

    /// A standard SQL statement without Brook's clauses.
    pub fn sql(stmt: Statement) -> Self {
        Self::new(StatementBody::Sql(Box::new(stmt)))
    }

    /// The SQL statement when the body is one (with or without Brook's clauses).
    pub fn as_sql(&self) -> Option<&Statement> {
        match &self.body {
            StatementBody::Sql(s) => Some(s),
            _ => None,
        }
    }

    /// The SQL statement when the body is one and no clause of Brook's was given: what a
    /// caller that only runs plain SQL accepts.
    pub fn into_plain_sql(self) -> Option<Statement> {
        match self.body {
            StatementBody::Sql(s) if self.emit.is_none() && self.budget.is_none() => Some(*s),
            _ => None,
        }
    }
}

/// The clauses of `CREATE SEQUENCE` / `ALTER SEQUENCE`, as written.
#[derive(Debug, Clone, Default)]
pub struct SequenceClauses {
    /// `AS type`.
    pub data_type: Option<datafusion::sql::sqlparser::ast::DataType>,
    /// INCREMENT, MINVALUE, MAXVALUE, START, CACHE, CYCLE.
    pub options: Vec<datafusion::sql::sqlparser::ast::SequenceOptions>,
    /// `OWNED BY table.column` (or `NONE`).
    pub owned_by: Option<ObjectName>,
    /// `RESTART [WITH n]` (ALTER only): `Some(None)` restarts at START.
    pub restart: Option<Option<Expr>>,
}

/// `ALTER SEQUENCE [IF EXISTS] name clauses`.
#[derive(Debug, Clone)]
pub struct AlterSequence {
    pub name: ObjectName,
    pub if_exists: bool,
    pub clauses: SequenceClauses,
}

/// `ALTER TABLE [IF EXISTS] t ALTER [COLUMN] c` with an identity column's options.
#[derive(Debug, Clone)]
pub struct AlterIdentity {
    pub table: ObjectName,
    pub if_exists: bool,
    pub column: Ident,
    /// `SET GENERATED ALWAYS` (true) or `BY DEFAULT` (false).
    pub generated_always: Option<bool>,
    /// The options of the sequence the column owns (`SET INCREMENT BY ..`, `RESTART`).
    pub clauses: SequenceClauses,
}

/// `CREATE [OR REPLACE] AGGREGATE name (types) (SFUNC = ..., STYPE = ..., ...)`.
#[derive(Debug, Clone)]
pub struct CreateAggregate {
    pub name: ObjectName,
    pub or_replace: bool,
    pub args: Vec<DataType>,
    pub sfunc: ObjectName,
    pub stype: DataType,
    pub finalfunc: Option<ObjectName>,
    pub combinefunc: Option<ObjectName>,
    /// The initial state, as text (cast to STYPE); None: NULL.
    pub initcond: Option<String>,
    /// The moving-aggregate mode (`MSFUNC`, `MINVFUNC`, `MSTYPE`, ...), if given.
    pub moving: Option<MovingAggregate>,
}

/// PostgreSQL's moving-aggregate mode of an aggregate: a transition function and its
/// inverse over a state of its own, used for window frames whose start moves.
#[derive(Debug, Clone)]
pub struct MovingAggregate {
    pub msfunc: ObjectName,
    pub minvfunc: ObjectName,
    pub mstype: DataType,
    pub mfinalfunc: Option<ObjectName>,
    pub minitcond: Option<String>,
}

/// What a statement does: standard SQL, or one of Brook's own statements.
#[derive(Debug, Clone)]
pub enum StatementBody {
    /// Any statement sqlparser understands (after PostgreSQL compatibility rewrites).
    Sql(Box<Statement>),
    /// `ALTER SEQUENCE` (sqlparser has none).
    AlterSequence(Box<AlterSequence>),
    /// An identity column's options (sqlparser has none).
    AlterIdentity(Box<AlterIdentity>),
    /// `CREATE STREAM`.
    CreateStream(Box<CreateStream>),
    /// `CREATE SYNOPSIS`.
    CreateSynopsis(Box<CreateSynopsis>),
    /// `DROP SYNOPSIS [IF EXISTS] name [, ...] [CASCADE | RESTRICT]`.
    DropSynopsis {
        names: Vec<ObjectName>,
        if_exists: bool,
        /// CASCADE: drop what reads it too.
        cascade: bool,
    },
    /// `CREATE AGGREGATE` (sqlparser has none).
    CreateAggregate(Box<CreateAggregate>),
    /// `DROP AGGREGATE [IF EXISTS] name [(types)] [, ...] [CASCADE | RESTRICT]`.
    DropAggregate {
        names: Vec<(ObjectName, Option<Vec<DataType>>)>,
        if_exists: bool,
        cascade: bool,
    },
    /// `DROP STREAM [IF EXISTS] name [, ...] [CASCADE | RESTRICT]`.
    DropStream {
        names: Vec<ObjectName>,
        if_exists: bool,
        /// CASCADE: drop what reads it too.
        cascade: bool,
    },
    /// `ALTER {TABLE | VIEW | MATERIALIZED VIEW | SEQUENCE | SCHEMA | DATABASE | ...} name
    /// OWNER TO role` (what pg_dump writes after each object).
    AlterOwner {
        /// The kind as written (`TABLE`, `MATERIALIZED VIEW`, ...).
        kind: String,
        name: ObjectName,
        role: String,
        /// `IF EXISTS`: a missing object is skipped with a notice.
        if_exists: bool,
    },
    /// `ALTER {VIEW | MATERIALIZED VIEW | INDEX | SEQUENCE} [IF EXISTS] name RENAME TO new`
    /// (sqlparser reads none of them).
    Rename {
        kind: RenameKind,
        name: ObjectName,
        to: Ident,
        /// `IF EXISTS`: a missing object is skipped with a notice.
        if_exists: bool,
    },
    /// `REFRESH MATERIALIZED VIEW [CONCURRENTLY] name [WITH [NO] DATA]` (sqlparser has
    /// none): Brook keeps a materialized view up to date as its inputs change, so this
    /// waits until the view has applied every commit made before it.
    RefreshMaterializedView {
        name: ObjectName,
        /// `WITH NO DATA` (PostgreSQL empties the view; Brook refuses it).
        no_data: bool,
    },
    /// `FETCH ... WITH (timeout = '1s')`: a FETCH with Brook's options.
    FetchWith {
        /// The FETCH itself.
        fetch: Box<Statement>,
        /// How long to wait for rows of a continuous cursor (interval text).
        timeout: Option<String>,
    },
    /// `MOVE [direction] [FROM | IN] cursor` (sqlparser has none): the FETCH it moves like,
    /// returning no rows.
    Move(Box<Statement>),
}

/// A query's `EMIT` clause: `EMIT CHANGES` makes a SELECT or COPY continuous (a push query,
/// as in ksqlDB); `EMIT ON WINDOW CLOSE` also makes windowed aggregates emit once per window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Emit {
    /// `EMIT CHANGES`.
    Changes,
    /// `EMIT ON WINDOW CLOSE`.
    OnWindowClose,
}

impl Emit {
    /// Whether windowed aggregates wait for their window to close.
    pub fn on_window_close(self) -> bool {
        self == Emit::OnWindowClose
    }
}

/// A statement's accuracy budget, `WITH ERROR e [CONFIDENCE c]`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ErrorBudget {
    /// The accepted error.
    pub error: f64,
    /// How sure the bound must be (the session's `approx.confidence` when absent).
    pub confidence: Option<f64>,
}

/// `CREATE SYNOPSIS [IF NOT EXISTS] name ON source USING kind(column [, size])
/// [PARTITION BY key [, ...]] [WINDOW TUMBLE(ts, size) | HOP(ts, slide, size) | SESSION(ts,
/// gap) | TUMBLE_ROWS(n) | HOP_ROWS(slide, n) | LAST_ROWS(n)]
/// [WITH (error = e, confidence = c)]`: a synopsis per key, maintained as data arrives.
#[derive(Debug, Clone)]
pub struct CreateSynopsis {
    /// Synopsis name (possibly schema-qualified).
    pub name: ObjectName,
    /// `IF NOT EXISTS` was given.
    pub if_not_exists: bool,
    /// The stream or table summarised.
    pub source: ObjectName,
    /// The kind (`hll`, `kll`, `sample`, ...), lower-cased.
    pub kind: String,
    /// The summarised column, then an optional size parameter.
    pub args: Vec<Expr>,
    /// One synopsis per value of these keys.
    pub partition_by: Vec<Expr>,
    /// A window (`TUMBLE`, `HOP`, `SESSION`, `TUMBLE_ROWS`, `HOP_ROWS`; `LAST_ROWS` for a
    /// sample of the last rows) and its arguments after the source.
    pub window: Option<(String, Vec<Expr>)>,
    /// `WITH (...)` options (error, confidence).
    pub options: Vec<SqlOption>,
}

/// `CREATE STREAM [IF NOT EXISTS] name (columns [, WATERMARK FOR col AS expr]) [WITH (...)]`.
#[derive(Debug, Clone)]
pub struct CreateStream {
    /// Stream name (possibly schema-qualified).
    pub name: ObjectName,
    /// `IF NOT EXISTS` was given.
    pub if_not_exists: bool,
    /// Column definitions, as in CREATE TABLE.
    pub columns: Vec<ColumnDef>,
    /// Table constraints (a stream accepts none but they are parsed to report them).
    pub constraints: Vec<TableConstraint>,
    /// The event-time column and its watermark expression.
    pub watermark: Option<Watermark>,
    /// `WITH (key = value, ...)` options.
    pub options: Vec<SqlOption>,
}

/// `WATERMARK FOR column AS expr`: the event-time column and the watermark it implies.
#[derive(Debug, Clone)]
pub struct Watermark {
    /// The event-time column (folded as an identifier).
    pub column: String,
    /// The watermark expression, as SQL text (e.g. `ts - INTERVAL '5 seconds'`).
    pub expr: String,
}

/// What `ALTER ... RENAME TO` names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RenameKind {
    /// `ALTER TABLE` of an object that is not a table (PostgreSQL renames any relation,
    /// index or sequence so; tables are `alter.rs`'s).
    Table,
    View,
    MaterializedView,
    Index,
    Sequence,
}

impl RenameKind {
    /// As written after ALTER (the command tag's words).
    pub fn sql(self) -> &'static str {
        match self {
            RenameKind::Table => "TABLE",
            RenameKind::View => "VIEW",
            RenameKind::MaterializedView => "MATERIALIZED VIEW",
            RenameKind::Index => "INDEX",
            RenameKind::Sequence => "SEQUENCE",
        }
    }
}
