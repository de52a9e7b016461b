//! Casts PostgreSQL clients make of catalog columns and types that the compatibility
//! crate models differently:
//!
//! - The `regproc` columns of pg_catalog (`pg_operator.oprcode`, `pg_am.amhandler`,
//!   `pg_type.typinput`, ...) hold the function's name as text there. `col::regproc` is
//!   that name already (regproc's text form); `col::oid` is the function's oid, looked up
//!   in pg_proc by name (0 for `-`, no function, as PostgreSQL's `'-'::regproc::oid`).
//!   pg_dump reads both forms.
//! - `"char"`, PostgreSQL's one-byte type (`'s'::"char"`), is text here.
//! - A `name` column subscripted (`typname[0] = '_'`, pg_dump's test for array types)
//!   is its character at that 0-based position: `name` is a fixed array of characters in
//!   PostgreSQL and text here.

use crate::decorrelate::parse_expr;
use datafusion::sql::sqlparser::ast::{
    AccessExpr, DataType, Expr, Ident, ObjectName, Query, SelectItem, SetExpr, Statement,
    Subscript, Value as SqlValue, VisitMut, VisitorMut,
};
use datafusion_pg_catalog::sql::rules::SqlStatementRewriteRule;
use std::ops::ControlFlow;

/// The rewrite.
#[derive(Debug)]
pub struct RegprocColumns;

/// pg_catalog's columns of type regproc.
/// (`pg_aggregate.aggfnoid` is the aggregate's oid in Brook's view.)
const REGPROC_COLUMNS: [&str; 30] = [
    "aggcombinefn",
    "aggdeserialfn",
    "aggfinalfn",
    "aggmfinalfn",
    "aggminvtransfn",
    "aggmtransfn",
    "aggserialfn",
    "aggtransfn",
    "amhandler",
    "oprcode",
    "oprjoin",
    "oprrest",
    "prosupport",
    "prsend",
    "prsheadline",
    "prslextype",
    "prsstart",
    "prstoken",
    "rngcanonical",
    "rngsubdiff",
    "tmplinit",
    "tmpllexize",
    "typanalyze",
    "typinput",
    "typmodin",
    "typmodout",
    "typoutput",
    "typreceive",
    "typsend",
    "typsubscript",
];

impl SqlStatementRewriteRule for RegprocColumns {
    fn rewrite(&self, mut s: Statement) -> Statement {
        // A selected `col::oid` keeps the column's name (pg_dump reads columns by name), and
        // a selected `col::regtype` of an oid column is the type's name under the column's
        // name, as regtype prints (pg_dump's `aggtranstype::pg_catalog.regtype`).
        struct Names;
        impl VisitorMut for Names {
            type Break = ();
            fn pre_visit_query(&mut self, q: &mut Query) -> ControlFlow<()> {
                if let SetExpr::Select(select) = q.body.as_mut() {
                    for item in select.projection.iter_mut() {
                        let SelectItem::UnnamedExpr(e) = item else {
                            continue;
                        };
                        let Expr::Cast {
                            expr: inner,
                            data_type,
                            ..
                        } = e
                        else {
                            continue;
                        };
                        let regtype = matches!(data_type, DataType::Custom(t, a) if a.is_empty() && type_named(t, "regtype"));
                        if let (true, Some(name)) = (regtype, last_ident(inner)) {
                            if let Some(format) =
                                parse_expr(&format!("pg_catalog.format_type({inner}, NULL)"))
                            {
                                *item = SelectItem::ExprWithAlias {
                                    expr: format,
                                    alias: Ident::new(name),
                                };
                            }
                            continue;
                        }
                        let Some(name) = regproc_column(inner).and(last_ident(inner)) else {
                            continue;
                        };
                        *item = SelectItem::ExprWithAlias {
                            expr: e.clone(),
                            alias: Ident::new(name),
                        };
                    }
                }
                ControlFlow::Continue(())
            }
        }
        let _ = s.visit(&mut Names);
        crate::pg_functions::rewrite_expressions(&mut s, |expr| {
            if let Some(character) = name_subscript(expr) {
                *expr = character;
                return;
            }
            if let Some(option) = int2vector_subscript(expr) {
                *expr = option;
                return;
            }
            if let Some(compared) = regproc_comparison(expr) {
                *expr = compared;
                return;
            }
            strip_catalog_schema(expr);
            if let Some(name) = regtype_text(expr) {
                *expr = name;
                return;
            }
            let Expr::Cast {
                expr: inner,
                data_type,
                ..
            } = expr
            else {
                return;
            };
            if let DataType::Custom(name, args) = data_type {
                if args.is_empty() && type_named(name, "char") && name_quoted(name) {
                    *data_type = DataType::Text;
                    return;
                }
            }
            let Some(column) = regproc_column(inner) else {
                return;
            };
            let target = match data_type {
                DataType::Custom(name, args) if args.is_empty() => name,
                _ => return,
            };
            if type_named(target, "regproc") {
                *expr = (**inner).clone();
            } else if type_named(target, "oid") {
                let sql = format!(
                    "COALESCE((SELECT min(brook_proc.oid) FROM pg_catalog.pg_proc AS brook_proc WHERE brook_proc.proname = {column}), 0)"
                );
                if let Some(e) = parse_expr(&sql) {
                    *expr = e;
                }
            }
        });
        s
    }
}

/// A regproc column compared with a regproc value, as a comparison of names: with
/// `'pg_catalog.array_in'::regproc` (pgjdbc's array test) the name `array_in`, with `0`
/// (no function: ADBC's `typreceive != 0`) the `-` regproc prints for it, with another
/// number the name of the function of that oid.
fn regproc_comparison(e: &Expr) -> Option<Expr> {
    let Expr::BinaryOp { left, op, right } = e else {
        return None;
    };
    let (column, value, column_left) = if regproc_column(left).is_some() {
        (left, right, true)
    } else if regproc_column(right).is_some() {
        (right, left, false)
    } else {
        return None;
    };
    let name = match value.as_ref() {
        Expr::Cast {
            expr: inner,
            data_type: DataType::Custom(ty, args),
            ..
        } if args.is_empty() && type_named(ty, "regproc") => {
            let Expr::Value(v) = inner.as_ref() else {
                return None;
            };
            let SqlValue::SingleQuotedString(text) = &v.value else {
                return None;
            };
            let bare = text.strip_prefix("pg_catalog.").unwrap_or(text);
            format!("'{}'", bare.replace('\'', "''"))
        }
        Expr::Value(v) => match &v.value {
            SqlValue::Number(n, _) if n.parse::<i64>() == Ok(0) => "'-'".to_string(),
            SqlValue::Number(n, _) => format!(
                "(SELECT min(brook_proc.proname) FROM pg_catalog.pg_proc AS brook_proc WHERE brook_proc.oid = {n})"
            ),
            _ => return None,
        },
        _ => return None,
    };
    let sql = if column_left {
        format!("{column} {op} {name}")
    } else {
        format!("{name} {op} {column}")
    };
    parse_expr(&sql)
}

/// `'pg_catalog.f'::regproc` as `'f'::regproc`: every built-in function is pg_catalog's,
/// and the lookup the cast becomes matches a bare name (pgjdbc names `array_in` so).
fn strip_catalog_schema(e: &mut Expr) {
    let Expr::Cast {
        expr: inner,
        data_type: DataType::Custom(ty, args),
        ..
    } = e
    else {
        return;
    };
    if !args.is_empty() || !type_named(ty, "regproc") {
        return;
    }
    let Expr::Value(v) = inner.as_mut() else {
        return;
    };
    if let SqlValue::SingleQuotedString(text) = &mut v.value {
        if let Some(bare) = text.strip_prefix("pg_catalog.") {
            *text = bare.to_string();
        }
    }
}

/// `x::regtype::text` (pgcli's `att.atttypid::regtype::text`) as `format_type(x, NULL)`:
/// regtype's text is the type's name, and a cast to regtype is its number here.
fn regtype_text(e: &Expr) -> Option<Expr> {
    let Expr::Cast {
        expr: outer_inner,
        data_type: DataType::Text | DataType::Varchar(_),
        ..
    } = e
    else {
        return None;
    };
    let Expr::Cast {
        expr: column,
        data_type: DataType::Custom(ty, args),
        ..
    } = outer_inner.as_ref()
    else {
        return None;
    };
    if !args.is_empty() || !type_named(ty, "regtype") {
        return None;
    }
    // A column holds oids already; anything else (a type's name) is cast as written.
    if last_ident(column).is_some() {
        parse_expr(&format!("pg_catalog.format_type({column}, NULL)"))
    } else {
        parse_expr(&format!("pg_catalog.format_type({}, NULL)", outer_inner))
    }
}

/// pg_catalog's `name` columns that clients subscript.
const NAME_COLUMNS: [&str; 5] = ["attname", "nspname", "proname", "relname", "typname"];

/// `col[i]` of a name column as `substr(col, i + 1, 1)`.
fn name_subscript(e: &Expr) -> Option<Expr> {
    let Expr::CompoundFieldAccess { root, access_chain } = e else {
        return None;
    };
    let [AccessExpr::Subscript(Subscript::Index { index })] = access_chain.as_slice() else {
        return None;
    };
    let last = match root.as_ref() {
        Expr::Identifier(i) => i,
        Expr::CompoundIdentifier(parts) => parts.last()?,
        _ => return None,
    };
    if !NAME_COLUMNS.contains(&last.value.to_ascii_lowercase().as_str()) {
        return None;
    }
    parse_expr(&format!("substr({root}, ({index}) + 1, 1)"))
}

/// The int2vector columns of pg_index subscripted from 0, as PostgreSQL's are:
/// `indoption[i]` as `CAST(split_part(indoption, ' ', i + 1) AS SMALLINT)` (Brook's is its
/// text, `0 0`, which SQLAlchemy splits; pgjdbc's `getIndexInfo` subscripts it under the
/// alias `I_INDOPTION`, so any column whose name ends so counts), and `indkey[i]` as
/// `indkey[i + 1]` (a list, whose subscripts count from 1).
fn int2vector_subscript(e: &Expr) -> Option<Expr> {
    let Expr::CompoundFieldAccess { root, access_chain } = e else {
        return None;
    };
    // `tmp.I_INDOPTION[i]` parses as `tmp` with the chain `.I_INDOPTION`, `[i]`.
    let (AccessExpr::Subscript(Subscript::Index { index }), path) = access_chain.split_last()?
    else {
        return None;
    };
    let mut parts = match root.as_ref() {
        Expr::Identifier(i) => vec![i.clone()],
        Expr::CompoundIdentifier(parts) => parts.clone(),
        _ => return None,
    };
    for step in path {
        let AccessExpr::Dot(Expr::Identifier(i)) = step else {
            return None;
        };
        parts.push(i.clone());
    }
    let name = parts.last()?.value.to_ascii_lowercase();
    let column = Expr::CompoundIdentifier(parts);
    if name.ends_with("indoption") {
        parse_expr(&format!(
            "CAST(NULLIF(split_part({column}, ' ', ({index}) + 1), '') AS SMALLINT)"
        ))
    } else if name == "indkey" {
        // an int2vector held as a list, whose subscripts count from 1
        parse_expr(&format!("{column}[({index}) + 1]"))
    } else {
        None
    }
}

/// The column name of an identifier.
fn last_ident(e: &Expr) -> Option<String> {
    match e {
        Expr::Identifier(i) => Some(i.value.clone()),
        Expr::CompoundIdentifier(parts) => parts.last().map(|i| i.value.clone()),
        _ => None,
    }
}

/// The column's SQL when `e` names a regproc column of pg_catalog.
fn regproc_column(e: &Expr) -> Option<String> {
    let last = match e {
        Expr::Identifier(i) => i,
        Expr::CompoundIdentifier(parts) => parts.last()?,
        _ => return None,
    };
    let name = last.value.to_ascii_lowercase();
    REGPROC_COLUMNS
        .binary_search(&name.as_str())
        .is_ok()
        .then(|| e.to_string())
}

/// True when `name` is type `ty`, bare or in pg_catalog.
fn type_named(name: &ObjectName, ty: &str) -> bool {
    let parts: Vec<String> = name
        .0
        .iter()
        .filter_map(|p| p.as_ident().map(|i| i.value.to_ascii_lowercase()))
        .collect();
    match parts.as_slice() {
        [t] => t == ty,
        [s, t] => s == "pg_catalog" && t == ty,
        _ => false,
    }
}

/// True when the type's last part was written in double quotes (`"char"`, not `char`).
fn name_quoted(name: &ObjectName) -> bool {
    name.0
        .last()
        .and_then(|p| p.as_ident())
        .is_some_and(|i| i.quote_style == Some('"'))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rewritten(sql: &str) -> String {
        crate::rewritten_by(&RegprocColumns, sql)
    }

    #[test]
    fn the_columns_are_sorted_for_search() {
        let mut sorted = REGPROC_COLUMNS;
        sorted.sort_unstable();
        assert_eq!(sorted, REGPROC_COLUMNS);
    }

    #[test]
    fn regproc_columns_cast_to_regproc_and_oid() {
        assert_eq!(
            rewritten("SELECT amhandler::pg_catalog.regproc, oprcode::oid FROM pg_am, pg_operator"),
            "SELECT amhandler AS amhandler, COALESCE((SELECT min(brook_proc.oid) FROM pg_catalog.pg_proc AS brook_proc WHERE brook_proc.proname = oprcode), 0) AS oprcode FROM pg_am, pg_operator"
        );
        // other columns keep their casts
        assert_eq!(
            rewritten("SELECT castfunc::oid FROM pg_cast"),
            "SELECT castfunc::oid FROM pg_cast"
        );
    }

    #[test]
    fn a_subscripted_name_is_its_character() {
        assert_eq!(
            rewritten("SELECT typname[0] = '_' FROM pg_type"),
            "SELECT SUBSTR(typname, (0) + 1, 1) = '_' FROM pg_type"
        );
    }

    #[test]
    fn a_selected_oid_column_as_regtype_is_the_type_name() {
        assert_eq!(
            rewritten("SELECT aggtranstype::pg_catalog.regtype, 'int4'::regtype FROM pg_aggregate"),
            "SELECT pg_catalog.format_type(aggtranstype, NULL) AS aggtranstype, 'int4'::regtype FROM pg_aggregate"
        );
    }

    #[test]
    fn regproc_columns_compare_by_name() {
        assert_eq!(
            rewritten("SELECT typinput = 'pg_catalog.array_in'::regproc FROM pg_type"),
            "SELECT typinput = 'array_in' FROM pg_type"
        );
        assert_eq!(
            rewritten("SELECT oid FROM pg_type WHERE typreceive != 0 AND 0 <> t.typsend"),
            "SELECT oid FROM pg_type WHERE typreceive <> '-' AND '-' <> t.typsend"
        );
        assert_eq!(
            rewritten("SELECT 'pg_catalog.array_in'::regproc"),
            "SELECT 'array_in'::regproc"
        );
        // other columns keep their comparisons
        assert_eq!(
            rewritten("SELECT oid FROM pg_type WHERE typelem != 0"),
            "SELECT oid FROM pg_type WHERE typelem <> 0"
        );
    }

    #[test]
    fn an_int2vector_subscript_counts_from_zero() {
        assert_eq!(
            rewritten("SELECT tmp.I_INDOPTION[tmp.pos - 1] & 1::smallint FROM tmp"),
            "SELECT CAST(NULLIF(split_part(tmp.I_INDOPTION, ' ', (tmp.pos - 1) + 1), '') AS SMALLINT) & 1::SMALLINT FROM tmp"
        );
    }

    #[test]
    fn a_column_as_regtype_text_is_the_type_name() {
        assert_eq!(
            rewritten("SELECT att.atttypid::regtype::text FROM pg_attribute AS att"),
            "SELECT pg_catalog.format_type(att.atttypid, NULL) FROM pg_attribute AS att"
        );
    }

    #[test]
    fn indkey_counts_from_zero() {
        assert_eq!(
            rewritten("SELECT i.indkey[0] FROM pg_index AS i"),
            "SELECT i.indkey[(0) + 1] FROM pg_index AS i"
        );
    }

    #[test]
    fn quoted_char_is_text() {
        assert_eq!(rewritten("SELECT 's'::\"char\""), "SELECT 's'::TEXT");
    }
}
