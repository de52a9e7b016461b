//! jsonb containment, `a @> b` (and `b <@ a`), as PostgreSQL's `JsonbDeepContains`: every
//! member of an object `b` is in `a` with a contained value; every element of an array `b`
//! is contained in some element of `a`; scalars are equal (numbers by value). At the top
//! level only, an array contains a scalar element.
//!
//! PostgreSQL scans `a` for each element of an array `b`, so an array against an array of
//! n scalars costs n² (PostgreSQL 15 takes 5 s for a 20,000-number array against itself).
//! Here the scalars of `b` are looked up in a hash set of `a`'s scalars (linear); arrays
//! and objects inside arrays are still matched pairwise, as nothing orders them. A long
//! comparison runs inside one batch's evaluation, so it asks now and then whether its
//! statement was cancelled ([`crate::exec::interrupt::check`]): a cancel, a statement
//! timeout or a vanished client stops it rather than leaving it to run on unseen.

use crate::exec::interrupt;
use crate::pg::jsonb_doc::{Doc, ScalarKey};
use brook_common::Result;
use std::collections::HashSet;

/// How many comparisons run between two looks at the statement's cancellation.
const CHECK_EVERY: u32 = 4096;

/// `a @> b`, counting its comparisons in `steps` (one count for a batch's rows); 57014 when
/// the statement is cancelled meanwhile.
pub(crate) fn contains_counting(a: &Doc, b: &Doc, steps: &mut Steps) -> Result<bool> {
    if let (Doc::Array(items), Some(key)) = (a, b.scalar_key()) {
        for x in items {
            steps.tick()?;
            if x.scalar_key().as_ref() == Some(&key) {
                return Ok(true);
            }
        }
        return Ok(false);
    }
    deep_contains(a, b, steps)
}

/// Counts comparisons and looks at the cancellation every [`CHECK_EVERY`].
#[derive(Default)]
pub(crate) struct Steps(u32);

impl Steps {
    fn tick(&mut self) -> Result<()> {
        self.0 = self.0.wrapping_add(1);
        if self.0.is_multiple_of(CHECK_EVERY) {
            interrupt::check()?;
        }
        Ok(())
    }
}

fn deep_contains(a: &Doc, b: &Doc, steps: &mut Steps) -> Result<bool> {
    steps.tick()?;
    match (a, b) {
        (Doc::Object(a), Doc::Object(b)) => {
            for (k, vb) in b.iter() {
                match a.get(k) {
                    Some(va) if deep_contains(va, vb, steps)? => {}
                    _ => return Ok(false),
                }
            }
            Ok(true)
        }
        (Doc::Array(a), Doc::Array(b)) => array_contains(a, b, steps),
        (a, b) => Ok(match (a.scalar_key(), b.scalar_key()) {
            (Some(x), Some(y)) => x == y,
            _ => false,
        }),
    }
}

/// Every element of `b` is contained in some element of `a`.
fn array_contains(a: &[Doc], b: &[Doc], steps: &mut Steps) -> Result<bool> {
    let mut scalars: Option<HashSet<ScalarKey<'_>>> = None;
    let mut containers: Option<Vec<&Doc>> = None;
    for eb in b {
        let found = match eb.scalar_key() {
            Some(key) => {
                let set = match &mut scalars {
                    Some(set) => set,
                    None => scalars.insert(scalar_set(a, steps)?),
                };
                set.contains(&key)
            }
            None => {
                let containers = match &mut containers {
                    Some(c) => c,
                    None => containers.insert(container_list(a, steps)?),
                };
                let mut found = false;
                for ea in containers.iter() {
                    if deep_contains(ea, eb, steps)? {
                        found = true;
                        break;
                    }
                }
                found
            }
        };
        if !found {
            return Ok(false);
        }
    }
    Ok(true)
}

fn container_list<'a>(a: &'a [Doc], steps: &mut Steps) -> Result<Vec<&'a Doc>> {
    let mut list = Vec::new();
    for x in a {
        steps.tick()?;
        if x.is_container() {
            list.push(x);
        }
    }
    Ok(list)
}

fn scalar_set<'a>(a: &'a [Doc], steps: &mut Steps) -> Result<HashSet<ScalarKey<'a>>> {
    let mut set = HashSet::new();
    for key in a.iter().filter_map(Doc::scalar_key) {
        steps.tick()?;
        set.insert(key);
    }
    Ok(set)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exec::cancellable::StatementCancel;
    use tokio_util::sync::CancellationToken;

    fn d(text: &str) -> Doc {
        Doc::parse(text).unwrap()
    }

    fn contains(a: &Doc, b: &Doc) -> bool {
        contains_counting(a, b, &mut Steps::default()).unwrap()
    }

    #[test]
    fn containment_as_postgres() {
        let yes = [
            (r#"{"a": 1, "b": [1, 2]}"#, r#"{"a": 1}"#),
            (r#"{"a": 1, "b": [1, 2]}"#, r#"{"b": [2]}"#),
            (r#"[1, 2, [3, 4]]"#, r#"[[4], 1]"#),
            (r#"[1, 2]"#, r#"1"#),
            (r#"{"a": 1.0}"#, r#"{"a": 1}"#),
            (r#"[1e309, 0.10]"#, r#"[0.1]"#),
            (r#"{"a": 1}"#, r#"{}"#),
            (r#"[1, "1", null, true]"#, r#"[true, null, "1", 1.00, 1]"#),
            (r#"[{"a": 1, "b": 2}, 3]"#, r#"[{"b": 2}, 3.0]"#),
            (r#"[]"#, r#"[]"#),
        ];
        let no = [
            (r#"{"a": [1, 2]}"#, r#"{"a": 1}"#),
            (r#"{"a": 1}"#, r#"{"a": "1"}"#),
            (r#"[[1, 2]]"#, r#"[1]"#),
            (r#"1"#, r#"[1]"#),
            (r#"{"a": {"b": 1}}"#, r#"{"b": 1}"#),
            (r#"[1, 2]"#, r#"[1, 3]"#),
            (r#"["1"]"#, r#"[1]"#),
            (r#"[[1], {"a": 1}]"#, r#"[{"a": [1]}]"#),
            (r#"[true]"#, r#"[false]"#),
        ];
        for (a, b) in yes {
            assert!(contains(&d(a), &d(b)), "{a} @> {b}");
        }
        for (a, b) in no {
            assert!(!contains(&d(a), &d(b)), "not {a} @> {b}");
        }
    }

    /// Arrays of scalars are matched by hashing: 200,000 elements against themselves take
    /// a few steps per element, not 2·10¹⁰ pairwise comparisons.
    #[test]
    fn long_arrays_of_scalars_compare_in_linear_steps() {
        let n = 200_000;
        let items: Vec<String> = (0..n).map(|i| i.to_string()).collect();
        let a = d(&format!("[{}]", items.join(",")));
        let mut steps = Steps(0);
        assert!(contains_counting(&a, &a, &mut steps).unwrap());
        assert!(steps.0 <= 2 * n + 1, "{} steps", steps.0);
    }

    #[test]
    fn a_cancelled_statement_stops_a_long_comparison() {
        let objects: Vec<String> = (0..3000).map(|i| format!(r#"{{"k": {i}}}"#)).collect();
        let a = d(&format!("[{}]", objects.join(",")));
        let token = CancellationToken::new();
        let _scope = interrupt::enter(&StatementCancel::new(token.clone()));
        token.cancel();
        assert!(matches!(
            contains_counting(&a, &a, &mut Steps::default()),
            Err(brook_common::BrookError::Canceled)
        ));
    }
}
