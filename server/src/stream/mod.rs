//! Continuous queries: planning, running, and the views they maintain.

pub mod plan;
