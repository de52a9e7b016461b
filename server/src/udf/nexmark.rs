//! The built-in Nexmark generator: `nexmark(kind, events [, rate])` is a table of the
//! `person`, `auction` or `bid` rows among the first `events` events of the Nexmark stream
//! (the `nexmark` crate implements the benchmark's generator), with event times from a fixed
//! base time (2026-01-01 00:00:00 UTC) at `rate` events per second (default 10,000), so
//! every run produces the same rows. Load a stream with it:
//! `INSERT INTO bid SELECT * FROM nexmark('bid', 1000000)`. Rows are generated in batches as
//! the scan reads them, so large loads need no memory for the whole set.

use async_trait::async_trait;
use datafusion::arrow::array::{
    ArrayRef, Int64Builder, StringBuilder, TimestampMicrosecondBuilder,
};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef, TimeUnit};
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::catalog::{
    Session as CatalogSession, TableFunctionArgs, TableFunctionImpl, TableProvider,
};
use datafusion::common::ScalarValue;
use datafusion::error::{DataFusionError, Result as DfResult};
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::logical_expr::{Expr, TableType};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::streaming::{PartitionStream, StreamingTableExec};
use datafusion::physical_plan::ExecutionPlan;
use nexmark::config::{NexmarkConfig, RateShape};
use nexmark::event::{Event, EventType};
use nexmark::EventGenerator;
use std::sync::Arc;

/// Base time of generated events: 2026-01-01 00:00:00 UTC, in milliseconds.
const BASE_TIME_MS: u64 = 1_767_225_600_000;
/// Rows per generated batch.
const BATCH: usize = 8192;
/// Events per proportion cycle and where each kind starts in it (Nexmark: 1 person,
/// 3 auctions, 46 bids of every 50 events).
const CYCLE: u64 = 50;

fn kind_slot(kind: EventType) -> (u64, u64) {
    match kind {
        EventType::Person => (0, 1),
        EventType::Auction => (1, 3),
        EventType::Bid => (4, 46),
    }
}

/// How many of the first `events` events are of `kind`.
fn count_of(kind: EventType, events: u64) -> u64 {
    let (start, len) = kind_slot(kind);
    let rest = (events % CYCLE).saturating_sub(start).min(len);
    events / CYCLE * len + rest
}

/// The schema of a kind's table.
pub fn schema_of(kind: EventType) -> SchemaRef {
    let ts = || DataType::Timestamp(TimeUnit::Microsecond, None);
    let f = |n: &str, t: DataType| Field::new(n, t, false);
    Arc::new(Schema::new(match kind {
        EventType::Person => vec![
            f("id", DataType::Int64),
            f("name", DataType::Utf8),
            f("email_address", DataType::Utf8),
            f("credit_card", DataType::Utf8),
            f("city", DataType::Utf8),
            f("state", DataType::Utf8),
            f("date_time", ts()),
            f("extra", DataType::Utf8),
        ],
        EventType::Auction => vec![
            f("id", DataType::Int64),
            f("item_name", DataType::Utf8),
            f("description", DataType::Utf8),
            f("initial_bid", DataType::Int64),
            f("reserve", DataType::Int64),
            f("date_time", ts()),
            f("expires", ts()),
            f("seller", DataType::Int64),
            f("category", DataType::Int64),
            f("extra", DataType::Utf8),
        ],
        EventType::Bid => vec![
            f("auction", DataType::Int64),
            f("bidder", DataType::Int64),
            f("price", DataType::Int64),
            f("channel", DataType::Utf8),
            f("url", DataType::Utf8),
            f("date_time", ts()),
            f("extra", DataType::Utf8),
        ],
    }))
}

/// `nexmark(kind, events [, rate])`.
#[derive(Debug)]
pub struct NexmarkFunction;

fn literal_i64(e: &Expr, what: &str) -> DfResult<u64> {
    match e {
        Expr::Literal(v, _) => match v.cast_to(&DataType::Int64)? {
            ScalarValue::Int64(Some(n)) if n > 0 => Ok(n as u64),
            _ => Err(DataFusionError::Plan(format!(
                "nexmark(): {what} must be a positive integer"
            ))),
        },
        Expr::Cast(c) => literal_i64(&c.expr, what),
        _ => Err(DataFusionError::Plan(format!(
            "nexmark(): {what} must be a constant"
        ))),
    }
}

impl TableFunctionImpl for NexmarkFunction {
    fn call_with_args(&self, args: TableFunctionArgs<'_, '_>) -> DfResult<Arc<dyn TableProvider>> {
        let exprs = args.exprs();
        let usage = || {
            DataFusionError::Plan(
                "nexmark(kind, events [, rate]): kind is 'person', 'auction' or 'bid'".into(),
            )
        };
        let kind = match exprs.first() {
            Some(Expr::Literal(ScalarValue::Utf8(Some(k)), _)) => {
                match k.to_ascii_lowercase().as_str() {
                    "person" => EventType::Person,
                    "auction" => EventType::Auction,
                    "bid" => EventType::Bid,
                    _ => return Err(usage()),
                }
            }
            _ => return Err(usage()),
        };
        let events = literal_i64(exprs.get(1).ok_or_else(usage)?, "events")?;
        let rate = match exprs.get(2) {
            Some(e) => literal_i64(e, "rate")?,
            None => 10_000,
        };
        if exprs.len() > 3 {
            return Err(usage());
        }
        Ok(Arc::new(NexmarkTable { kind, events, rate }))
    }
}

/// The rows of one kind among the first `events` events.
#[derive(Debug)]
struct NexmarkTable {
    kind: EventType,
    events: u64,
    rate: u64,
}

#[async_trait]
impl TableProvider for NexmarkTable {
    fn schema(&self) -> SchemaRef {
        schema_of(self.kind)
    }

    fn table_type(&self) -> TableType {
        TableType::Temporary
    }

    async fn scan(
        &self,
        _state: &dyn CatalogSession,
        projection: Option<&Vec<usize>>,
        _filters: &[Expr],
        limit: Option<usize>,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        let part = NexmarkPartition {
            kind: self.kind,
            events: self.events,
            rate: self.rate,
            schema: self.schema(),
        };
        Ok(Arc::new(StreamingTableExec::try_new(
            self.schema(),
            vec![Arc::new(part)],
            projection,
            Vec::new(),
            false,
            limit,
        )?))
    }
}

#[derive(Debug)]
struct NexmarkPartition {
    kind: EventType,
    events: u64,
    rate: u64,
    schema: SchemaRef,
}

impl PartitionStream for NexmarkPartition {
    fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    fn execute(&self, _ctx: Arc<TaskContext>) -> SendableRecordBatchStream {
        let config = NexmarkConfig {
            base_time: BASE_TIME_MS,
            rate_shape: RateShape::Square,
            first_rate: self.rate as usize,
            next_rate: self.rate as usize,
            ..NexmarkConfig::default()
        };
        let gen = EventGenerator::new(config).with_type_filter(self.kind);
        let total = count_of(self.kind, self.events);
        let schema = self.schema.clone();
        let batches = futures::stream::unfold((gen, total), move |(mut gen, left)| {
            let schema = schema.clone();
            async move {
                if left == 0 {
                    return None;
                }
                let n = left.min(BATCH as u64);
                let events: Vec<Event> = gen.by_ref().take(n as usize).collect();
                Some((build(&schema, &events), (gen, left - n)))
            }
        });
        Box::pin(RecordBatchStreamAdapter::new(self.schema.clone(), batches))
    }
}

/// Milliseconds since the epoch to timestamp microseconds.
fn micros(ms: u64) -> i64 {
    (ms as i64).saturating_mul(1000)
}

fn build(schema: &SchemaRef, events: &[Event]) -> DfResult<RecordBatch> {
    let columns = match events.first() {
        Some(Event::Person(_)) => person_columns(events),
        Some(Event::Auction(_)) => auction_columns(events),
        Some(Event::Bid(_)) | None => bid_columns(events),
    };
    Ok(RecordBatch::try_new(schema.clone(), columns)?)
}

fn text(values: impl Iterator<Item = String>) -> ArrayRef {
    let mut b = StringBuilder::new();
    values.for_each(|v| b.append_value(v));
    Arc::new(b.finish())
}

fn int(values: impl Iterator<Item = usize>) -> ArrayRef {
    let mut b = Int64Builder::new();
    values.for_each(|v| b.append_value(v as i64));
    Arc::new(b.finish())
}

fn time(values: impl Iterator<Item = u64>) -> ArrayRef {
    let mut b = TimestampMicrosecondBuilder::new();
    values.for_each(|v| b.append_value(micros(v)));
    Arc::new(b.finish())
}

fn person_columns(events: &[Event]) -> Vec<ArrayRef> {
    let p: Vec<&nexmark::event::Person> = events
        .iter()
        .filter_map(|e| match e {
            Event::Person(p) => Some(p),
            _ => None,
        })
        .collect();
    vec![
        int(p.iter().map(|p| p.id)),
        text(p.iter().map(|p| p.name.clone())),
        text(p.iter().map(|p| p.email_address.clone())),
        text(p.iter().map(|p| p.credit_card.clone())),
        text(p.iter().map(|p| p.city.clone())),
        text(p.iter().map(|p| p.state.clone())),
        time(p.iter().map(|p| p.date_time)),
        text(p.iter().map(|p| p.extra.clone())),
    ]
}

fn auction_columns(events: &[Event]) -> Vec<ArrayRef> {
    let a: Vec<&nexmark::event::Auction> = events
        .iter()
        .filter_map(|e| match e {
            Event::Auction(a) => Some(a),
            _ => None,
        })
        .collect();
    vec![
        int(a.iter().map(|a| a.id)),
        text(a.iter().map(|a| a.item_name.clone())),
        text(a.iter().map(|a| a.description.clone())),
        int(a.iter().map(|a| a.initial_bid)),
        int(a.iter().map(|a| a.reserve)),
        time(a.iter().map(|a| a.date_time)),
        time(a.iter().map(|a| a.expires)),
        int(a.iter().map(|a| a.seller)),
        int(a.iter().map(|a| a.category)),
        text(a.iter().map(|a| a.extra.clone())),
    ]
}

fn bid_columns(events: &[Event]) -> Vec<ArrayRef> {
    let b: Vec<&nexmark::event::Bid> = events
        .iter()
        .filter_map(|e| match e {
            Event::Bid(b) => Some(b),
            _ => None,
        })
        .collect();
    vec![
        int(b.iter().map(|b| b.auction)),
        int(b.iter().map(|b| b.bidder)),
        int(b.iter().map(|b| b.price)),
        text(b.iter().map(|b| b.channel.clone())),
        text(b.iter().map(|b| b.url.clone())),
        time(b.iter().map(|b| b.date_time)),
        text(b.iter().map(|b| b.extra.clone())),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_follow_the_proportions() {
        assert_eq!(count_of(EventType::Person, 100), 2);
        assert_eq!(count_of(EventType::Auction, 100), 6);
        assert_eq!(count_of(EventType::Bid, 100), 92);
        assert_eq!(count_of(EventType::Bid, 5), 1);
        assert_eq!(count_of(EventType::Auction, 2), 1);
    }

    #[test]
    fn generation_is_reproducible() {
        let gen = || {
            let config = NexmarkConfig {
                base_time: BASE_TIME_MS,
                rate_shape: RateShape::Square,
                ..NexmarkConfig::default()
            };
            let events: Vec<Event> = EventGenerator::new(config)
                .with_type_filter(EventType::Bid)
                .take(100)
                .collect();
            build(&schema_of(EventType::Bid), &events).unwrap()
        };
        let (a, b) = (gen(), gen());
        assert_eq!(a, b);
        assert_eq!(a.num_rows(), 100);
    }
}
