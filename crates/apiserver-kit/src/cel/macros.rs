//! The parser Kubernetes' environment needs: the standard macros (the `cel` crate's), the
//! optional syntax, and cel-go's two-variable comprehensions (`all(k, v, p)`, `exists`,
//! `existsOne`, `transformList`, `transformMap`, `transformMapEntry`), expanded as cel-go
//! expands them so that their cost is counted the same way.

use cel::common::ast::{CallExpr, ComprehensionExpr, Expr, IdedExpr, LiteralValue, MapExpr, operators};
use cel::parser::{Macro, MacroExprHelper, ParseError, Parser};
use std::sync::LazyLock;

/// The accumulator of cel-go's comprehensions.
const ACCUMULATOR: &str = "@result";

/// `cel.@mapInsert`: the step of `transformMap` and `transformMapEntry`.
pub const MAP_INSERT: &str = "cel.@mapInsert";

static ENVIRONMENT: LazyLock<cel::Env> = LazyLock::new(|| {
    let mut env = cel::Env::stdlib().with_optional_support(true);
    for (name, arity) in [("all", 3), ("exists", 3), ("existsOne", 3), ("exists_one", 3)] {
        let kind = Quantifier::of(name);
        let _ = env.add_macro(Macro::receiver(name, arity, move |h, t, a| quantifier(kind, h, t, a).map(Some)));
    }
    for name in ["transformList", "transformMap", "transformMapEntry"] {
        for arity in [3, 4] {
            let _ = env.add_macro(Macro::receiver(name, arity, move |h, t, a| transform(name, h, t, a).map(Some)));
        }
    }
    let _ = env.add_macro(Macro::receiver("sortBy", 2, |h, t, a| sort_by(h, t, a).map(Some)));
    env
});

/// A parser with Kubernetes' macros and the optional syntax.
pub fn parser() -> Parser {
    ENVIRONMENT.parser()
}

#[derive(Clone, Copy)]
enum Quantifier {
    All,
    Exists,
    ExistsOne,
}

impl Quantifier {
    fn of(name: &str) -> Quantifier {
        match name {
            "all" => Quantifier::All,
            "exists" => Quantifier::Exists,
            _ => Quantifier::ExistsOne,
        }
    }
}

type Expanded = Result<IdedExpr, ParseError>;

fn call(h: &mut MacroExprHelper<'_>, function: &str, args: Vec<IdedExpr>) -> IdedExpr {
    h.next_expr(Expr::Call(CallExpr { func_name: function.to_string(), target: None, args }))
}

fn accumulator(h: &mut MacroExprHelper<'_>) -> IdedExpr {
    h.next_expr(Expr::Ident(ACCUMULATOR.to_string()))
}

fn literal(h: &mut MacroExprHelper<'_>, value: LiteralValue) -> IdedExpr {
    h.next_expr(Expr::Literal(value))
}

/// cel-go's extractIterVars: two simple names, different, neither the accumulator.
fn iteration_variables(
    h: &mut MacroExprHelper<'_>,
    first: &IdedExpr,
    second: &IdedExpr,
) -> Result<(String, String), ParseError> {
    let name = |h: &mut MacroExprHelper<'_>, e: &IdedExpr| match &e.expr {
        Expr::Ident(name) => Ok(name.clone()),
        _ => Err(h.new_error(e.id, "argument must be a simple name")),
    };
    let (one, two) = (name(h, first)?, name(h, second)?);
    if one == two {
        return Err(h.new_error(second.id, format!("duplicate variable name: {one}")));
    }
    for (var, at) in [(&one, first.id), (&two, second.id)] {
        if var == ACCUMULATOR || var == "__result__" {
            return Err(h.new_error(at, "iteration variable overwrites accumulator variable"));
        }
    }
    Ok((one, two))
}

fn quantifier(
    kind: Quantifier,
    h: &mut MacroExprHelper<'_>,
    target: &mut Option<IdedExpr>,
    args: &mut Vec<IdedExpr>,
) -> Expanded {
    let (first, second) = iteration_variables(h, &args[0], &args[1])?;
    let predicate = args.remove(2);
    let (init, condition, step, result) = match kind {
        Quantifier::All | Quantifier::Exists => {
            let all = matches!(kind, Quantifier::All);
            let init = literal(h, LiteralValue::Boolean((all).into()));
            let accu = accumulator(h);
            let tested = if all { accu } else { call(h, operators::LOGICAL_NOT, vec![accu]) };
            let condition = call(h, operators::NOT_STRICTLY_FALSE, vec![tested]);
            let accu = accumulator(h);
            let step = call(h, if all { operators::LOGICAL_AND } else { operators::LOGICAL_OR }, vec![accu, predicate]);
            (init, condition, step, accumulator(h))
        }
        Quantifier::ExistsOne => {
            let init = literal(h, LiteralValue::Int(0.into()));
            let condition = literal(h, LiteralValue::Boolean(true.into()));
            let (accu, one) = (accumulator(h), literal(h, LiteralValue::Int(1.into())));
            let incremented = call(h, operators::ADD, vec![accu, one]);
            let unchanged = accumulator(h);
            let step = call(h, operators::CONDITIONAL, vec![predicate, incremented, unchanged]);
            let (accu, one) = (accumulator(h), literal(h, LiteralValue::Int(1.into())));
            (init, condition, step, call(h, operators::EQUALS, vec![accu, one]))
        }
    };
    Ok(comprehension(h, target, (first, second), init, condition, step, result))
}

fn transform(
    name: &str,
    h: &mut MacroExprHelper<'_>,
    target: &mut Option<IdedExpr>,
    args: &mut Vec<IdedExpr>,
) -> Expanded {
    let (first, second) = iteration_variables(h, &args[0], &args[1])?;
    let Some(transformed) = args.pop() else {
        return Err(h.new_error(0, format!("{name} needs three or four arguments")));
    };
    let filter = (args.len() == 3).then(|| args.remove(2));
    let (init, step) = if name == "transformList" {
        let element = h.next_expr(Expr::List(cel::common::ast::ListExpr::new(vec![transformed])));
        let accu = accumulator(h);
        (
            h.next_expr(Expr::List(cel::common::ast::ListExpr::new(Vec::new()))),
            call(h, operators::ADD, vec![accu, element]),
        )
    } else {
        let accu = accumulator(h);
        let inserted = match name {
            "transformMap" => {
                let key = h.next_expr(Expr::Ident(first.clone()));
                vec![accu, key, transformed]
            }
            _ => vec![accu, transformed],
        };
        (h.next_expr(Expr::Map(MapExpr { entries: Vec::new() })), call(h, MAP_INSERT, inserted))
    };
    let step = match filter {
        Some(filter) => {
            let unchanged = accumulator(h);
            call(h, operators::CONDITIONAL, vec![filter, step, unchanged])
        }
        None => step,
    };
    let condition = literal(h, LiteralValue::Boolean(true.into()));
    let result = accumulator(h);
    Ok(comprehension(h, target, (first, second), init, condition, step, result))
}

/// cel-go's sortBy: `list.sortBy(e, key)` binds the list once and sorts it by the keys its
/// `map(e, key)` gives (`@sortByAssociatedKeys`).
fn sort_by(h: &mut MacroExprHelper<'_>, target: &mut Option<IdedExpr>, args: &mut Vec<IdedExpr>) -> Expanded {
    const INPUT: &str = "@__sortBy_input__";
    let Some(list) = target.take() else { return Err(h.new_error(0, "sortBy needs a target")) };
    if !matches!(list.expr, Expr::List(_) | Expr::Select(_) | Expr::Ident(_) | Expr::Comprehension(_) | Expr::Call(_)) {
        return Err(h.new_error(
            list.id,
            "sortBy can only be applied to a list, identifier, comprehension, call or select expression",
        ));
    }
    let Expr::Ident(variable) = &args[0].expr else {
        return Err(h.new_error(args[0].id, "argument is not an identifier"));
    };
    let variable = variable.clone();
    let key = args.remove(1);
    let input = h.next_expr(Expr::Ident(INPUT.to_string()));
    let element = h.next_expr(Expr::List(cel::common::ast::ListExpr::new(vec![key])));
    let accu = accumulator(h);
    let keys = ComprehensionExpr {
        iter_range: input,
        iter_var: variable,
        iter_var2: None,
        accu_var: ACCUMULATOR.to_string(),
        accu_init: h.next_expr(Expr::List(cel::common::ast::ListExpr::new(Vec::new()))),
        loop_cond: literal(h, LiteralValue::Boolean(true.into())),
        loop_step: call(h, operators::ADD, vec![accu, element]),
        result: accumulator(h),
    };
    let keys = h.next_expr(Expr::Comprehension(Box::new(keys)));
    let input = h.next_expr(Expr::Ident(INPUT.to_string()));
    let sorted = h.next_expr(Expr::Call(CallExpr {
        func_name: "@sortByAssociatedKeys".to_string(),
        target: Some(Box::new(input)),
        args: vec![keys],
    }));
    let binding = ComprehensionExpr {
        iter_range: h.next_expr(Expr::List(cel::common::ast::ListExpr::new(Vec::new()))),
        iter_var: "#unused".to_string(),
        iter_var2: None,
        accu_var: INPUT.to_string(),
        accu_init: list,
        loop_cond: literal(h, LiteralValue::Boolean(false.into())),
        loop_step: h.next_expr(Expr::Ident(INPUT.to_string())),
        result: sorted,
    };
    Ok(h.next_expr(Expr::Comprehension(Box::new(binding))))
}

fn comprehension(
    h: &mut MacroExprHelper<'_>,
    target: &mut Option<IdedExpr>,
    (first, second): (String, String),
    init: IdedExpr,
    condition: IdedExpr,
    step: IdedExpr,
    result: IdedExpr,
) -> IdedExpr {
    let range = target.take().unwrap_or_default();
    h.next_expr(Expr::Comprehension(Box::new(ComprehensionExpr {
        iter_range: range,
        iter_var: first,
        iter_var2: Some(second),
        accu_var: ACCUMULATOR.to_string(),
        accu_init: init,
        loop_cond: condition,
        loop_step: step,
        result,
    })))
}
