//! Reserved column names. User tables may not declare columns with these names.

/// Change kind of a changelog row (`+` insert, `-` delete), carried by continuous results.
pub const CHANGE_KIND: &str = "_brook_op";
/// Event time assigned to a row by the stream's `WATERMARK FOR` column.
pub const EVENT_TIME: &str = "_brook_event_time";

/// True when `name` is reserved for the engine.
pub fn is_reserved(name: &str) -> bool {
    name.starts_with("_brook_")
}
