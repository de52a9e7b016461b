//! PostgreSQL column types and their text and binary formats.

pub mod binary_array;
pub mod datetime;
pub mod encode;
pub mod fast_text;
pub mod json;
pub mod jsonb_doc;
pub mod jsonb_key;
pub mod list;
pub mod numeric_binary;
pub mod record;
pub mod sql;
pub mod types;
pub mod uuid;
pub mod xml;
