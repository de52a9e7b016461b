//! Named arguments of functions whose parameters have defaults, as PostgreSQL calls them:
//! `make_interval(days => 3)` leaves `years`, `months` and `weeks` at their default. The
//! named and positional arguments of such a call are put in parameter order with every
//! parameter not given as its default, so the function sees positional arguments only.
//! DataFusion's own resolution (`resolve_function_arguments`) requires every parameter
//! before the last one named ("Missing required parameter 'years'"); written here because
//! it has no notion of a default.

use crate::pg_functions::rewrite_expressions;
use datafusion::sql::sqlparser::ast::{
    Expr, FunctionArg, FunctionArgExpr, FunctionArguments, Statement, Value,
};
use datafusion_pg_catalog::sql::rules::SqlStatementRewriteRule;

/// A function's parameters in order, each with its default as SQL text.
struct Parameters {
    function: &'static str,
    parameters: &'static [(&'static str, &'static str)],
}

/// The functions whose named arguments are completed.
const FUNCTIONS: &[Parameters] = &[Parameters {
    function: "make_interval",
    parameters: &[
        ("years", "0"),
        ("months", "0"),
        ("weeks", "0"),
        ("days", "0"),
        ("hours", "0"),
        ("mins", "0"),
        ("secs", "0.0"),
    ],
}];

/// The statement rewrite.
#[derive(Debug)]
pub struct NamedArguments;

impl SqlStatementRewriteRule for NamedArguments {
    fn rewrite(&self, mut s: Statement) -> Statement {
        rewrite_expressions(&mut s, |expr| {
            let Expr::Function(f) = expr else {
                return;
            };
            let name = f.name.to_string().to_ascii_lowercase();
            let Some(known) = FUNCTIONS
                .iter()
                .find(|p| p.function == name || format!("pg_catalog.{}", p.function) == name)
            else {
                return;
            };
            let FunctionArguments::List(list) = &mut f.args else {
                return;
            };
            if let Some(args) = in_parameter_order(known, &list.args) {
                list.args = args;
            }
        });
        s
    }
}

/// `args` as positional arguments in parameter order, up to the last one given, defaults
/// in the gaps; None when no argument is named, or when one is not a parameter's name,
/// comes twice or is positional after a named one (left for the planner's error).
fn in_parameter_order(known: &Parameters, args: &[FunctionArg]) -> Option<Vec<FunctionArg>> {
    let mut slots: Vec<Option<FunctionArgExpr>> = vec![None; known.parameters.len()];
    let mut named = false;
    for (i, arg) in args.iter().enumerate() {
        let (slot, value) = match arg {
            FunctionArg::Unnamed(_) if named => return None,
            FunctionArg::Unnamed(value) => (i, value),
            // PostgreSQL's dialect reads `name => value` as a name that is an expression.
            FunctionArg::Named { name, arg, .. }
            | FunctionArg::ExprNamed {
                name: Expr::Identifier(name),
                arg,
                ..
            } => {
                named = true;
                let wanted = crate::output_names::folded(name);
                let slot = known.parameters.iter().position(|(p, _)| *p == wanted)?;
                (slot, arg)
            }
            FunctionArg::ExprNamed { .. } => return None,
        };
        let place = slots.get_mut(slot)?;
        if place.is_some() {
            return None;
        }
        *place = Some(value.clone());
    }
    if !named {
        return None;
    }
    let given = slots.iter().rposition(Option::is_some)? + 1;
    Some(
        slots
            .into_iter()
            .zip(known.parameters)
            .take(given)
            .map(|(slot, (_, default))| {
                FunctionArg::Unnamed(slot.unwrap_or_else(|| {
                    FunctionArgExpr::Expr(Expr::value(Value::Number((*default).to_string(), false)))
                }))
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    /// The statement as parsed (the parser applies the rule).
    fn rewritten(sql: &str) -> String {
        crate::parser::parse_one(sql)
            .unwrap()
            .as_sql()
            .unwrap()
            .to_string()
    }

    #[test]
    fn parameters_not_named_take_their_defaults() {
        assert_eq!(
            rewritten("SELECT make_interval(days => 3)"),
            "SELECT make_interval(0, 0, 0, 3)"
        );
        assert_eq!(
            rewritten("SELECT make_interval(1, secs => 1.5, Hours => 2)"),
            "SELECT make_interval(1, 0, 0, 0, 2, 0, 1.5)"
        );
        assert_eq!(
            rewritten("SELECT make_interval(1, 2)"),
            "SELECT make_interval(1, 2)"
        );
    }

    #[test]
    fn unknown_or_repeated_names_are_left_for_the_planner() {
        for sql in [
            "SELECT make_interval(foo => 1)",
            "SELECT make_interval(days => 1, days => 2)",
            "SELECT make_interval(1, years => 2)",
            "SELECT make_interval(days => 3, 1)",
        ] {
            assert_eq!(rewritten(sql), sql);
        }
    }
}
