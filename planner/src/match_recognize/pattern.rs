//! PATTERN as sqlparser reads it to the operator's [`Pattern`]: variables numbered in order
//! of first appearance, `PERMUTE` spelled out as the alternation of its orders, Brook's
//! exclusion and reluctant quantifiers read back from the forms they are parsed as.

use super::extensions::EXCLUDED_MARK;
use super::MAX_VARIABLES;
use brook_common::{brook_err, ident, Result};
use brook_operators::match_recognize::pattern::Pattern;
use datafusion::sql::sqlparser::ast::{
    MatchRecognizePattern, MatchRecognizeSymbol, RepetitionQuantifier,
};

/// The pattern tree, with variables numbered in order of first appearance.
pub(super) fn convert_pattern(
    p: &MatchRecognizePattern,
    vars: &mut Vec<String>,
) -> Result<Pattern> {
    let mut var = |s: &MatchRecognizeSymbol| -> Result<Pattern> {
        Ok(match s {
            MatchRecognizeSymbol::Start => Pattern::Start,
            MatchRecognizeSymbol::End => Pattern::End,
            MatchRecognizeSymbol::Named(i) => {
                let name = ident::ident_name(i);
                let at = match vars.iter().position(|v| *v == name) {
                    Some(at) => at,
                    None => {
                        if vars.len() == MAX_VARIABLES {
                            return Err(brook_err!(
                                Unsupported,
                                "more than {MAX_VARIABLES} pattern variables"
                            ));
                        }
                        vars.push(name);
                        vars.len() - 1
                    }
                };
                Pattern::Var(at)
            }
        })
    };
    Ok(match p {
        MatchRecognizePattern::Symbol(s) => var(s)?,
        MatchRecognizePattern::Exclude(s) => Pattern::Exclude(Box::new(var(s)?)),
        MatchRecognizePattern::Permute(symbols) => {
            if symbols.len() > 5 {
                return Err(brook_err!(
                    Unsupported,
                    "PERMUTE of more than 5 variables ({} alternatives)",
                    (1..=symbols.len()).product::<usize>()
                ));
            }
            let parts = symbols.iter().map(&mut var).collect::<Result<Vec<_>>>()?;
            Pattern::Alt(
                permutations(parts.len())
                    .into_iter()
                    .map(|order| Pattern::Concat(order.iter().map(|&i| parts[i].clone()).collect()))
                    .collect(),
            )
        }
        // `({- brook_excluded -} (p))`: the exclusion `{- p -}` (see `extensions`).
        MatchRecognizePattern::Concat(ps)
            if matches!(ps.first(), Some(MatchRecognizePattern::Exclude(
                MatchRecognizeSymbol::Named(m))) if m.value == EXCLUDED_MARK)
                && ps.len() == 2 =>
        {
            Pattern::Exclude(Box::new(convert_pattern(&ps[1], vars)?))
        }
        MatchRecognizePattern::Concat(ps) => Pattern::Concat(
            ps.iter()
                .map(|q| convert_pattern(q, vars))
                .collect::<Result<_>>()?,
        ),
        MatchRecognizePattern::Group(q) => convert_pattern(q, vars)?,
        MatchRecognizePattern::Alternation(ps) => Pattern::Alt(
            ps.iter()
                .map(|q| convert_pattern(q, vars))
                .collect::<Result<_>>()?,
        ),
        MatchRecognizePattern::Repetition(q, quantifier) => {
            // sqlparser reads the reluctant `a+?` as `(a+)?` (a quantifier directly on a
            // quantified part; a written `(a+)?` has a group between them).
            let (q, quantifier, greedy) = match (quantifier, q.as_ref()) {
                (RepetitionQuantifier::AtMostOne, MatchRecognizePattern::Repetition(x, inner)) => {
                    (x, inner, false)
                }
                _ => (q, quantifier, true),
            };
            let (min, max) = match quantifier {
                RepetitionQuantifier::ZeroOrMore => (0, None),
                RepetitionQuantifier::OneOrMore => (1, None),
                RepetitionQuantifier::AtMostOne => (0, Some(1)),
                RepetitionQuantifier::Exactly(n) => (*n, Some(*n)),
                RepetitionQuantifier::AtLeast(n) => (*n, None),
                RepetitionQuantifier::AtMost(n) => (0, Some(*n)),
                RepetitionQuantifier::Range(n, m) => (*n, Some(*m)),
            };
            Pattern::Repeat {
                inner: Box::new(convert_pattern(q, vars)?),
                min,
                max,
                greedy,
            }
        }
    })
}

/// Every order of `n` items, in lexicographic order (PERMUTE prefers them so).
pub(super) fn permutations(n: usize) -> Vec<Vec<usize>> {
    if n == 0 {
        return vec![Vec::new()];
    }
    let mut out = Vec::new();
    for first in 0..n {
        for rest in permutations(n - 1) {
            let mut order = vec![first];
            order.extend(rest.into_iter().map(|i| if i >= first { i + 1 } else { i }));
            out.push(order);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn permutations_are_in_preference_order() {
        assert_eq!(
            permutations(3),
            vec![
                vec![0, 1, 2],
                vec![0, 2, 1],
                vec![1, 0, 2],
                vec![1, 2, 0],
                vec![2, 0, 1],
                vec![2, 1, 0]
            ]
        );
    }
}
