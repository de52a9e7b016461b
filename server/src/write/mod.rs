//! The write path's parts that know no connection: values coerced to a column's type,
//! primary-key checks, and the COPY writer thread.

pub mod coerce;
pub mod copy_in;
pub mod keys;

/// How INSERT treats key conflicts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WriteMode {
    Append,
    SkipConflicts,
}
