//! Continuous queries: planning ([`plan`]), the task each runs as ([`queries`], the only
//! place a query task is spawned), the registry of running queries ([`registry`]) and their progress ([`progress`]),
//! materialized views ([`view`]), the `TUMBLE_ROWS`/`HOP_ROWS` table function
//! ([`row_windows`]) and what a table's replacement changed ([`table_changes`]).

pub mod match_recognize;
pub mod partitioned_view;
pub mod plan;
pub mod progress;
pub mod queries;
pub mod registry;
pub mod row_windows;
pub mod table_changes;
pub mod view;
