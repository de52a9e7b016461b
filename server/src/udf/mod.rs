//! The SQL functions Brook adds to DataFusion's.

pub mod activity;
pub mod checked;
pub mod format;
pub mod functions;
pub mod json_build;
pub mod json_path;
pub mod mode;
pub mod nexmark;
pub mod pg_admin;
pub mod sum_numeric;
pub mod synopses;
