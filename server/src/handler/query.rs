//! Queries run once (SELECT, EXPLAIN), the accuracy budget that rewrites them, and their
//! results as rows.

use crate::pg::sql::pg_named;
use crate::session::Outcome;
use crate::session::Session;
use crate::settings::parse_setting_f64;
use crate::settings::APPROX_CONFIDENCE;
use crate::settings::APPROX_ERROR;
use crate::settings::APPROX_REPORT;
use brook_common::Result;
use brook_planner::{BrookStatement, StatementBody};
use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::sql::parser::Statement as DFStatement;
use datafusion::sql::sqlparser::ast::Statement;

pub(crate) fn rows_outcome(
    schema: SchemaRef,
    batches: Vec<RecordBatch>,
    tag: &'static str,
) -> Outcome {
    let stream = RecordBatchStreamAdapter::new(
        schema.clone(),
        futures::stream::iter(batches.into_iter().map(Ok)),
    );
    Outcome::Rows {
        schema,
        stream: Box::pin(stream),
        tag,
    }
}

pub(crate) fn first_words(s: &str) -> String {
    s.split_whitespace().take(3).collect::<Vec<_>>().join(" ")
}

impl Session {
    /// The session's accuracy budget (`approx.error` > 0), if any.
    pub(crate) fn session_budget(&self) -> Result<Option<brook_planner::approx::Budget>> {
        let error = self.settings.get(APPROX_ERROR).unwrap_or_default();
        let error = error.trim();
        if error.is_empty() || error == "0" || error.eq_ignore_ascii_case("off") {
            return Ok(None);
        }
        let confidence = self.settings.get(APPROX_CONFIDENCE).unwrap_or_default();
        Ok(Some(brook_planner::approx::Budget::new(
            parse_setting_f64(APPROX_ERROR, error)?,
            parse_setting_f64(APPROX_CONFIDENCE, &confidence)?,
        )?))
    }

    /// Apply the accuracy budget (the statement's `WITH ERROR` clause, else the session's):
    /// the statement with exact aggregates replaced by synopses, and what was replaced.
    pub(crate) fn approximated(
        &self,
        stmt: BrookStatement,
    ) -> Result<(BrookStatement, Vec<brook_planner::approx::Replacement>)> {
        use brook_planner::approx::{approximate, Budget, Report};
        let budget = match stmt.budget {
            Some(stated) => {
                let confidence = match stated.confidence {
                    Some(c) => c,
                    None => parse_setting_f64(
                        APPROX_CONFIDENCE,
                        &self.settings.get(APPROX_CONFIDENCE).unwrap_or_default(),
                    )?,
                };
                Some(Budget::new(stated.error, confidence)?)
            }
            None => self.session_budget()?,
        };
        let mut stmt = BrookStatement {
            budget: None,
            ..stmt
        };
        let (Some(budget), StatementBody::Sql(s)) = (budget, &mut stmt.body) else {
            return Ok((stmt, Vec::new()));
        };
        let report = Report::parse(&self.settings.get(APPROX_REPORT).unwrap_or_default())?;
        let done = approximate(s, budget, report)?;
        Ok((stmt, done))
    }

    /// Plan a statement with DataFusion.
    pub(crate) async fn plan(
        &self,
        mut stmt: Statement,
    ) -> Result<datafusion::logical_expr::LogicalPlan> {
        // Also for statements that did not come through `execute` (Describe, a cursor's).
        self.qualify_relations(&mut stmt)?;
        let state = self.ctx.state();
        let plan = state
            .statement_to_plan(DFStatement::Statement(Box::new(stmt)))
            .await?;
        // Shown in the session's time zone.
        let zone = self.time_zone();
        Ok(brook_planner::session_time_zone::shown_in_zone(
            plan,
            zone.as_deref(),
        )?)
    }

    /// The row shape of `plan` as it runs: after the analyzer's rules, which may retype a
    /// column (a numeric beside a double is a double: `float_beside_numeric`); the planned
    /// shape when analysis fails (the statement reports its error when it runs).
    pub(crate) fn analyzed_schema(
        &self,
        plan: &datafusion::logical_expr::LogicalPlan,
    ) -> datafusion::common::DFSchemaRef {
        let state = self.ctx.state();
        state
            .analyzer()
            .execute_and_check(plan.clone(), state.config_options(), |_, _| {})
            .map(|p| p.schema().clone())
            .unwrap_or_else(|_| plan.schema().clone())
    }

    /// Run a query and stream its rows.
    pub async fn run_query(
        &self,
        stmt: Statement,
        tag: &'static str,
        names: Option<Vec<brook_planner::rewrite::OutputName>>,
    ) -> Result<Outcome> {
        let plan = self.plan(stmt).await?;
        let df = self.ctx.execute_logical_plan(plan).await?;
        let stream = df.execute_stream().await?;
        // The rows' own shape: the analyzer may retype a column after planning
        // (`float_beside_numeric`), and the RowDescription must say what is sent.
        let schema = pg_named(stream.schema().as_ref().clone(), names);
        Ok(Outcome::Rows {
            schema,
            stream,
            tag,
        })
    }
}
