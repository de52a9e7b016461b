//! `pg_settings`: the connection's configuration parameters, one row each, as psql's
//! `\dconfig` and drivers read them.
//!
//! Settings belong to a session (`SET`), so the table reads the scanning session's
//! [`Settings`], which the session puts in its DataFusion configuration; `boot_val` and
//! `reset_val` are Brook's defaults, and `source` is `default` while a setting still has its
//! default value, `session` once `SET` changed it (PostgreSQL's names for both).

use crate::settings::{default_settings, Settings};
use async_trait::async_trait;
use datafusion::arrow::array::{new_null_array, ArrayRef, BooleanArray, Int32Array, StringArray};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::catalog::{Session, TableProvider};
use datafusion::datasource::memory::MemorySourceConfig;
use datafusion::datasource::TableType;
use datafusion::physical_plan::ExecutionPlan;
use datafusion::prelude::Expr;
use std::sync::Arc;

/// The `pg_settings` table.
#[derive(Debug)]
pub(super) struct PgSettings {
    schema: SchemaRef,
}

impl PgSettings {
    pub(super) fn new() -> PgSettings {
        let text = |name: &str| Field::new(name, DataType::Utf8, true);
        let list = Field::new(
            "enumvals",
            DataType::List(Arc::new(Field::new("item", DataType::Utf8, true))),
            true,
        );
        PgSettings {
            schema: Arc::new(Schema::new(vec![
                text("name"),
                text("setting"),
                text("unit"),
                text("category"),
                text("short_desc"),
                text("extra_desc"),
                text("context"),
                text("vartype"),
                text("source"),
                text("min_val"),
                text("max_val"),
                list,
                text("boot_val"),
                text("reset_val"),
                text("sourcefile"),
                Field::new("sourceline", DataType::Int32, true),
                Field::new("pending_restart", DataType::Boolean, true),
            ])),
        }
    }

    fn rows(&self, settings: Vec<(String, String)>) -> datafusion::error::Result<RecordBatch> {
        let defaults = default_settings();
        let n = settings.len();
        let mut name = Vec::with_capacity(n);
        let mut setting = Vec::with_capacity(n);
        let mut category = Vec::with_capacity(n);
        let mut context = Vec::with_capacity(n);
        let mut vartype = Vec::with_capacity(n);
        let mut source = Vec::with_capacity(n);
        let mut boot = Vec::with_capacity(n);
        for (key, value) in settings {
            let default = defaults.get(&key).cloned();
            category.push(if key.contains('.') {
                "Customized Options"
            } else {
                "Client Connection Defaults"
            });
            context.push(if key.starts_with("server_") || key == "max_connections" {
                "internal"
            } else {
                "user"
            });
            vartype.push(kind_of(&value));
            source.push(if default.as_deref() == Some(value.as_str()) {
                "default"
            } else {
                "session"
            });
            name.push(crate::settings::display_name(&key).to_string());
            setting.push(value);
            boot.push(default);
        }
        let strings = |v: Vec<Option<String>>| Arc::new(StringArray::from(v)) as ArrayRef;
        let nulls = |t: &DataType| new_null_array(t, n);
        let columns: Vec<ArrayRef> = vec![
            Arc::new(StringArray::from(name)),
            Arc::new(StringArray::from(setting)),
            nulls(&DataType::Utf8),
            Arc::new(StringArray::from(category)),
            nulls(&DataType::Utf8),
            nulls(&DataType::Utf8),
            Arc::new(StringArray::from(context)),
            Arc::new(StringArray::from(vartype)),
            Arc::new(StringArray::from(source)),
            nulls(&DataType::Utf8),
            nulls(&DataType::Utf8),
            nulls(self.schema.field(11).data_type()),
            strings(boot.clone()),
            strings(boot),
            nulls(&DataType::Utf8),
            Arc::new(Int32Array::new_null(n)),
            Arc::new(BooleanArray::from(vec![false; n])),
        ];
        Ok(RecordBatch::try_new(self.schema.clone(), columns)?)
    }
}

/// PostgreSQL's `vartype` of a value, by its form.
fn kind_of(value: &str) -> &'static str {
    if matches!(value, "on" | "off" | "true" | "false") {
        "bool"
    } else if value.parse::<i64>().is_ok() {
        "integer"
    } else if value.parse::<f64>().is_ok() {
        "real"
    } else {
        "string"
    }
}

#[async_trait]
impl TableProvider for PgSettings {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    fn table_type(&self) -> TableType {
        TableType::View
    }

    async fn scan(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        _filters: &[Expr],
        _limit: Option<usize>,
    ) -> datafusion::error::Result<Arc<dyn ExecutionPlan>> {
        // A context without a session (a materialized view's upkeep) sees the defaults.
        let settings = match state.config().get_extension::<Settings>() {
            Some(s) => s.entries(),
            None => default_settings().into_iter().collect(),
        };
        let batch = self.rows(settings)?;
        Ok(MemorySourceConfig::try_new_exec(
            &[vec![batch]],
            self.schema.clone(),
            projection.cloned(),
        )?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_changed_setting_has_source_session_and_keeps_its_boot_value() {
        let table = PgSettings::new();
        let mut settings: Vec<(String, String)> = default_settings().into_iter().collect();
        for (k, v) in &mut settings {
            if k == "datestyle" {
                *v = "German".into();
            }
        }
        let batch = table.rows(settings).unwrap();
        let col = |i: usize| {
            batch
                .column(i)
                .as_any()
                .downcast_ref::<StringArray>()
                .unwrap()
                .clone()
        };
        let (name, setting, source, boot) = (col(0), col(1), col(8), col(12));
        let at = (0..batch.num_rows())
            .find(|&r| name.value(r) == "DateStyle")
            .expect("DateStyle listed, named as PostgreSQL names it");
        assert_eq!(setting.value(at), "German");
        assert_eq!(source.value(at), "session");
        assert_ne!(boot.value(at), "German");
        let other = (0..batch.num_rows())
            .find(|&r| name.value(r) == "client_min_messages")
            .expect("client_min_messages listed");
        assert_eq!(source.value(other), "default");
        assert_eq!(setting.value(other), boot.value(other));
    }
}
