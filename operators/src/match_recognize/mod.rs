//! `MATCH_RECOGNIZE`: row pattern recognition (SQL:2016) per partition, over rows in the
//! order of their `ORDER BY` columns.
//!
//! The plan node holds what the query asked for, resolved against the input: partition and
//! order columns, one condition per pattern variable (over the row and the rows at fixed
//! offsets before it — `PREV(col, k)` reads an extra column the operator fills in), the
//! compiled pattern, the measures and the output shape. The operator ([`op`]) keeps per
//! partition only the rows a match still being decided may need, and decides each match as
//! soon as the rows seen decide it: the same matches as over all the rows at once.

mod measure;
pub use measure::reads_schema;
mod op;
pub mod pattern;
mod row_expr;

use crate::{NodeSpec, Operator};
use brook_common::Result;
use datafusion::arrow::compute::SortOptions;
use datafusion::arrow::datatypes::{DataType, SchemaRef};
use datafusion::common::ScalarValue;
use datafusion::logical_expr::AggregateUDF;
use datafusion::physical_expr::PhysicalExpr;
use pattern::{Pattern, Program};
use std::fmt;
use std::sync::Arc;

pub use op::{Interrupt, MatchRecognizeOp};

/// `ONE ROW PER MATCH` or `ALL ROWS PER MATCH`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum RowsPerMatch {
    /// One row per match: the partition columns and the measures, over the whole match.
    One,
    /// Every row of each match with the measures so far (running); with `unmatched`, rows
    /// in no match too (measures NULL).
    All { unmatched: bool },
    /// `ALL ROWS PER MATCH SHOW PARTIAL MATCHES` (Brook's): as `All`, and the rows of the
    /// attempt still undecided at the end of each partition, as the preferred way they may
    /// still match — classified and measured so far. Over a stream they are shown as they
    /// arrive and retracted or changed when the rows that follow decide otherwise (the
    /// output updates); over a table the rows at its end are shown the same way, so both
    /// give the same answer.
    AllWithPartial,
}

impl RowsPerMatch {
    /// Every row of each match is shown (not one row per match).
    pub fn all_rows(self) -> bool {
        self != RowsPerMatch::One
    }
}

/// Where the next match attempt starts after a match.
#[derive(Debug, Clone, PartialEq)]
pub enum AfterMatch {
    PastLastRow,
    ToNextRow,
    /// The first row of the variables in the match (a variable, or a `SUBSET`: bit v
    /// for variable v), named `name`.
    ToFirst {
        vars: u64,
        name: String,
    },
    /// The last row of the variables in the match.
    ToLast {
        vars: u64,
        name: String,
    },
}

/// Pattern variables a navigation reads: bit v for variable v (a variable, or a `SUBSET`
/// of them); None for every row of the match.
pub type VarSet = Option<u64>;

/// True when a row of variable `v` is one of `vars`.
pub fn in_set(vars: VarSet, v: usize) -> bool {
    vars.is_none_or(|m| m & (1 << v) != 0)
}

/// What a measure reads from the rows of a match (up to the current row when running).
#[derive(Debug, Clone, PartialEq)]
pub enum MeasureKind {
    /// `FIRST(v.col, k)`: column `col` of the (k+1)-th row of `vars`; with a `shift`,
    /// of the row that many rows of the partition after it (`NEXT(FIRST(v.col, k), s)`)
    /// or before it (`PREV`, a negative shift).
    First {
        vars: VarSet,
        col: usize,
        offset: usize,
        shift: i64,
    },
    /// `LAST(v.col, k)` (or `v.col`): column `col` of the k-th row of `vars` before the
    /// last; with a `shift`, of the row that many rows after (before) it (`PREV(v.col)` is
    /// `LAST(v.col)` shifted by -1).
    Last {
        vars: VarSet,
        col: usize,
        offset: usize,
        shift: i64,
    },
    /// `CLASSIFIER()`: the variable of the row.
    Classifier,
    /// `MATCH_NUMBER()`: 1, 2, ... per partition.
    MatchNumber,
    /// `count(*)`, `count(v.*)`, `count(v.col)` (non-NULL values).
    Count { vars: VarSet, col: Option<usize> },
    /// `sum`, `avg`, `min`, `max` of `v.col`.
    Aggregate {
        func: Aggregate,
        vars: VarSet,
        col: usize,
    },
    /// Any other aggregate function of `v.col` (`array_agg`, `stddev`, `bool_and`, a user's
    /// aggregate), or one with `DISTINCT` or `ORDER BY` — in MEASURES only.
    Function { vars: VarSet, call: AggregateCall },
}

/// An aggregate function called over the rows of a variable.
#[derive(Debug, Clone)]
pub struct AggregateCall {
    pub func: Arc<AggregateUDF>,
    /// Its first argument, an expression over the input's columns (`b.price * b.qty`), its
    /// values cast to `arg_type`.
    pub arg: Arc<dyn PhysicalExpr>,
    pub arg_type: DataType,
    /// `FILTER (WHERE ...)`: a condition over the input's columns a row must pass.
    pub filter: Option<Arc<dyn PhysicalExpr>>,
    /// Its other arguments: constants of the types the function takes (`string_agg(v.name,
    /// ', ')`).
    pub constants: Vec<ScalarValue>,
    /// `DISTINCT`.
    pub distinct: bool,
    /// Its `ORDER BY`: columns of the rows, and how each sorts.
    pub order: Vec<(usize, SortOptions)>,
}

impl PartialEq for AggregateCall {
    fn eq(&self, other: &Self) -> bool {
        let same_filter = match (&self.filter, &other.filter) {
            (Some(a), Some(b)) => a.as_ref() == b.as_ref(),
            (a, b) => a.is_none() && b.is_none(),
        };
        self.func == other.func
            && self.arg.as_ref() == other.arg.as_ref()
            && self.arg_type == other.arg_type
            && same_filter
            && self.constants == other.constants
            && self.distinct == other.distinct
            && self.order == other.order
    }
}

/// Aggregates a measure may take over a variable's rows.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Aggregate {
    Sum,
    Avg,
    Min,
    Max,
}

/// One value read from a match: what, over which rows (running: up to the row being
/// shown or classified; final: the whole match), and its type.
#[derive(Debug, Clone, PartialEq)]
pub struct Navigation {
    pub kind: MeasureKind,
    pub running: bool,
    pub data_type: DataType,
}

impl Navigation {
    /// How many rows of the partition a `FIRST`/`LAST` navigation moves from the row it
    /// names (`PREV`: negative, `NEXT`: positive); 0 for other kinds.
    pub fn shift(&self) -> i64 {
        match self.kind {
            MeasureKind::First { shift, .. } | MeasureKind::Last { shift, .. } => shift,
            _ => 0,
        }
    }
}

/// One `MEASURES` item: the values it reads from the match and, when it is more than one
/// of them, the expression over them (its columns `__nav_0`, `__nav_1`, ...).
#[derive(Debug, Clone)]
pub struct Measure {
    pub reads: Vec<Navigation>,
    pub expr: Option<Arc<dyn PhysicalExpr>>,
    /// The SQL text, for EXPLAIN.
    pub text: String,
}

/// A `DEFINE` condition over the row's columns, then the `PREV` columns, then (when it
/// reads the match so far: other variables, `FIRST`/`LAST`, aggregates) one column per
/// value it reads — such a condition is checked while matching, with the row as the
/// variable it defines; one that reads only the row is evaluated once per batch.
#[derive(Debug, Clone)]
pub struct Condition {
    pub expr: Arc<dyn PhysicalExpr>,
    pub reads: Vec<Navigation>,
}

impl Condition {
    /// Whether the condition is the constant `true`: it restricts no row.
    pub fn always_true(&self) -> bool {
        self.expr
            .downcast_ref::<datafusion::physical_expr::expressions::Literal>()
            .is_some_and(|l| l.value() == &ScalarValue::Boolean(Some(true)))
    }
}

/// A `PREV(col, offset)` (or, `ahead`, `NEXT(col, offset)`) of the row a condition reads:
/// filled in as an extra input column.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PrevColumn {
    pub col: usize,
    pub offset: usize,
    pub ahead: bool,
}

impl PrevColumn {
    /// The row it reads for row `row` of a partition's `len` rows (None: outside them).
    pub fn row(&self, row: usize, len: usize) -> Option<usize> {
        if self.ahead {
            row.checked_add(self.offset).filter(|r| *r < len)
        } else {
            row.checked_sub(self.offset)
        }
    }
}

/// Ascending with NULLs last, PostgreSQL's `ORDER BY` default: how partition keys are
/// sorted, and order columns unless `ORDER BY` says otherwise (over a stream, a row whose
/// order value is NULL is behind no later row).
pub const ORDER: SortOptions = SortOptions {
    descending: false,
    nulls_first: false,
};

/// Plan node of `MATCH_RECOGNIZE`.
#[derive(Debug, Clone)]
pub struct MatchRecognizeNode {
    /// Input schema.
    pub input_schema: SchemaRef,
    /// Partition columns of the input.
    pub partition: Vec<usize>,
    /// Order columns of the input, and how each sorts (`DESC`, `NULLS FIRST`; a stream's
    /// rows are matched in ascending order only).
    pub order: Vec<usize>,
    pub order_options: Vec<SortOptions>,
    /// Pattern variables; a variable's index is its bit in a row's eligibility.
    pub variables: Vec<String>,
    /// The condition of each variable (None: any row).
    pub conditions: Vec<Option<Condition>>,
    /// The `PREV` columns conditions read.
    pub prev: Vec<PrevColumn>,
    /// The pattern and its program.
    pub pattern: Pattern,
    pub program: Program,
    pub rows_per_match: RowsPerMatch,
    pub after_match: AfterMatch,
    pub measures: Vec<Measure>,
    /// Flink's `WITHIN INTERVAL`: a match spans at most this many units of the (single,
    /// time-valued) order column, so an attempt is decided once a row past it arrives; and
    /// the interval as written, for EXPLAIN.
    pub within: Option<(i64, String)>,
    /// Output schema: ONE ROW: partition columns, measures. ALL ROWS: partition columns,
    /// order columns, measures, the other input columns (as Trino and Oracle order them).
    pub schema: SchemaRef,
}

impl MatchRecognizeNode {
    /// The navigations of the conditions and the measures.
    fn navigations(&self) -> impl Iterator<Item = &Navigation> {
        self.conditions
            .iter()
            .flatten()
            .flat_map(|c| c.reads.iter())
            .chain(self.measures.iter().flat_map(|m| m.reads.iter()))
    }

    /// How many rows before a match's first row a navigation may read (`PREV(col, k)`,
    /// `PREV(FIRST(v.col), k)`): the rows kept back per partition.
    pub fn history(&self) -> usize {
        let prev = self.prev.iter().filter(|p| !p.ahead).map(|p| p.offset);
        let shifts = self
            .navigations()
            .filter(|n| n.shift() < 0)
            .filter_map(|n| usize::try_from(n.shift().unsigned_abs()).ok());
        prev.chain(shifts).max().unwrap_or(0)
    }

    /// True when rows are matched in ascending order of the order columns (as a stream's
    /// rows arrive).
    pub fn ascending(&self) -> bool {
        self.order_options.iter().all(|o| !o.descending)
    }

    /// Input columns an ALL ROWS output row carries, in output order (before and after the
    /// measures).
    pub fn carried_columns(&self) -> (Vec<usize>, Vec<usize>) {
        match self.rows_per_match {
            RowsPerMatch::One => (self.partition.clone(), Vec::new()),
            RowsPerMatch::All { .. } | RowsPerMatch::AllWithPartial => {
                let mut lead = self.partition.clone();
                lead.extend(self.order.iter().filter(|c| !self.partition.contains(c)));
                let rest = (0..self.input_schema.fields().len())
                    .filter(|c| !lead.contains(c))
                    .collect();
                (lead, rest)
            }
        }
    }
}

impl fmt::Display for MatchRecognizeNode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names = |cols: &[usize]| -> Vec<String> {
            cols.iter()
                .map(|c| self.input_schema.field(*c).name().clone())
                .collect()
        };
        let order: Vec<String> = names(&self.order)
            .into_iter()
            .zip(&self.order_options)
            .map(|(name, o)| match (o.descending, o.nulls_first) {
                (false, false) => name,
                (false, true) => format!("{name} NULLS FIRST"),
                (true, true) => format!("{name} DESC"),
                (true, false) => format!("{name} DESC NULLS LAST"),
            })
            .collect();
        let measures: Vec<&str> = self.measures.iter().map(|m| m.text.as_str()).collect();
        write!(
            f,
            "MatchRecognize: partition=[{}] order=[{}] variables=[{}] measures=[{}] rows={}{} \
             state=rows of matches being decided{}",
            names(&self.partition).join(", "),
            order.join(", "),
            self.variables.join(", "),
            measures.join(", "),
            match self.rows_per_match {
                RowsPerMatch::One => "one per match",
                RowsPerMatch::All { unmatched: false } => "all per match",
                RowsPerMatch::All { unmatched: true } => "all, with unmatched",
                RowsPerMatch::AllWithPartial => "all, with partial matches",
            },
            match &self.within {
                Some((_, text)) => format!(" within={text}"),
                None => String::new(),
            },
            if self.rows_per_match == RowsPerMatch::AllWithPartial {
                " and the rows of the partial match shown"
            } else {
                ""
            }
        )
    }
}

impl NodeSpec for MatchRecognizeNode {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }
    // Partial matches shown are retracted or changed as rows decide them.
    fn updating(&self) -> bool {
        self.rows_per_match == RowsPerMatch::AllWithPartial
    }
    // Rows are matched per partition in their order, whatever batches brought them.
    fn cut_invariant(&self) -> bool {
        true
    }
    fn instantiate(&self) -> Result<Box<dyn Operator>> {
        Ok(Box::new(MatchRecognizeOp::new(self)?))
    }
}

#[cfg(test)]
mod tests;
