//! The cost limits a CustomResourceDefinition's rules are held to (apiextensions'
//! validation.go): each rule's estimated cost, times how many times its node may be in an
//! object, at most [`PER_EXPRESSION_LIMIT`], each message expression's too (not multiplied);
//! all of them together at most [`TOTAL_LIMIT`], the most expensive then named.

use crate::machinery::error::{FieldError, FieldErrorKind};
use serde_json::Value;

/// `StaticEstimatedCostLimit`: the most a rule (or message expression) may be estimated to cost.
pub const PER_EXPRESSION_LIMIT: u64 = 10_000_000;
/// `StaticEstimatedCRDCostLimit`: the most a schema's rules may be estimated to cost in all.
pub const TOTAL_LIMIT: u64 = 100_000_000;

/// The estimated cost of a schema's rules so far (`TotalCost`): their sum, and the (at most
/// four) most expensive, each costing at least a hundredth of the limit, by path.
#[derive(Debug, Default)]
pub struct Total {
    total: u64,
    most_expensive: Vec<(String, u64)>,
}

impl Total {
    /// Counts an expression's cost (`ObserveExpressionCost`).
    pub fn observe(&mut self, path: &str, cost: u64) {
        self.total = self.total.saturating_add(cost);
        if cost < TOTAL_LIMIT / 100 {
            return;
        }
        self.most_expensive.push((path.to_string(), cost));
        // Go's sort of at most five: an insertion sort, which keeps equal costs in order.
        self.most_expensive.sort_by_key(|(_, cost)| std::cmp::Reverse(*cost));
        self.most_expensive.truncate(4);
    }

    /// The definition's problems when the total is over the limit: each of the most expensive,
    /// then the schema at `root`.
    pub fn problems(&self, root: &str) -> Vec<String> {
        if self.total <= TOTAL_LIMIT {
            return Vec::new();
        }
        let detail = "contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema";
        let mut problems: Vec<FieldError> =
            self.most_expensive.iter().map(|(path, _)| forbidden(path, detail.to_string())).collect();
        let name = "x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema";
        problems.push(forbidden(root, over_budget(name, self.total, TOTAL_LIMIT)));
        problems.iter().map(ToString::to_string).collect()
    }
}

/// A rule's cost where its node may be `cardinality` times (`multiplyWithOverflowGuard`).
pub fn times(cost: u64, cardinality: u64) -> u64 {
    cost.saturating_mul(cardinality)
}

/// How many times a child of `node` may be in an object, `node` being `cardinality` times
/// there (`childContext`, `extractMaxElements`); `None` for no bound.
pub fn child_cardinality(node: &Value, cardinality: Option<u64>) -> Option<u64> {
    let cardinality = cardinality?;
    let bound = |name: &str| {
        let value = node.get(name)?;
        let n = value.as_i64().map(|n| u64::try_from(n).unwrap_or(0)).or_else(|| value.as_u64())?;
        Some(n)
    };
    let elements = match node.get("type").and_then(Value::as_str) {
        Some("object") if node.get("additionalProperties").is_some_and(|a| !a.is_null()) => bound("maxProperties")?,
        Some("array") => bound("maxItems")?,
        _ => 1,
    };
    Some(times(cardinality, elements))
}

/// `path: Forbidden: detail`.
pub fn forbidden(path: &str, detail: String) -> FieldError {
    FieldError { field: path.to_string(), kind: FieldErrorKind::Forbidden, value: None, detail }
}

/// Why `cost` is over `limit` (`getCostErrorMessage`): the factor as Go writes it.
pub fn over_budget(name: &str, cost: u64, limit: u64) -> String {
    let factor = cost as f64 / limit as f64;
    let factor = if factor > 100.0 {
        "more than 100x".to_string()
    } else if factor < 1.5 {
        format!("{factor:.6}x")
    } else {
        format!("{factor:.1}x")
    };
    format!(
        "{name} exceeds budget by factor of {factor} (try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)"
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn factors_are_written_as_go_writes_them() {
        let tail = "(try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)";
        assert_eq!(
            over_budget("estimated rule cost", 12_345_678, 10_000_000),
            format!("estimated rule cost exceeds budget by factor of 1.234568x {tail}")
        );
        assert!(over_budget("x", 25_000_000, 10_000_000).contains("factor of 2.5x"));
        assert!(over_budget("x", 1_000_000_001, 10_000_000).contains("factor of more than 100x"));
        assert!(over_budget("x", 1_000_000_000, 10_000_000).contains("factor of 100.0x"));
    }

    #[test]
    fn the_total_names_the_four_most_expensive_in_order() {
        let mut total = Total::default();
        for (i, cost) in [5_000_000, 30_000_000, 999_999, 30_000_000, 20_000_000, 40_000_000].into_iter().enumerate() {
            total.observe(&format!("r{i}"), cost);
        }
        let problems = total.problems("root");
        let paths: Vec<&str> = problems.iter().filter_map(|p| p.split(':').next()).collect();
        assert_eq!(paths, ["r5", "r1", "r3", "r4", "root"]);
        assert!(Total::default().problems("root").is_empty());
    }

    /// Rules on a schema of maps, nested lists, lists of objects and formatted strings, each
    /// with the cost apiextensions-apiserver's `cel.Compile` estimates (its `MaxCost`).
    #[test]
    fn rules_cost_what_apiextensions_estimates() {
        let item = json!({"type": "object", "required": ["a", "b"],
            "properties": {"a": {"type": "string"}, "b": {"type": "integer"}}});
        let node = json!({"type": "object", "properties": {
            "m": {"type": "object", "additionalProperties": {"type": "string"}},
            "n": {"type": "array", "items": {"type": "array", "items": {"type": "integer"}}},
            "o": {"type": "array", "items": item}, "ios": {"x-kubernetes-int-or-string": true},
            "d": {"type": "string", "format": "date-time"}, "du": {"type": "string", "format": "duration"},
            "e": {"type": "string", "enum": ["ab", "abcdef"]}, "b": {"type": "string", "format": "byte"}}});
        let cases: &[(&str, u64)] = &[
            ("self.m.all(k, self.m[k] != k)", 3_145_723),
            ("self.m.exists(k, v, v == k)", 2_359_293),
            ("self.n.all(x, x.all(y, y > 0))", 8_246_329_344_003),
            ("self.n.flatten().size() > 0", 1_048_590),
            ("self.o.all(x, x.a != '' && x.b > 0)", 1_572_859),
            ("self.o.map(x, x.a).all(y, y != '')", 3_538_940),
            ("self.o[0].a == 'x'", 5),
            ("self.m['a'] == 'b'", 4),
            ("self.ios == 'a'", 3),
            ("self.d > timestamp('2020-01-01T00:00:00Z')", 4),
            ("self.du > duration('1s')", 4),
            ("self.e == 'ab'", 3),
            ("string(self.b) == 'a'", 314_576),
            ("self.m.size() > 0 && self.m.all(k, k.matches('^a'))", 1_966_082),
            ("self.o.exists(x, x.a.startsWith('a'))", 1_376_252),
            ("self.o.filter(x, x.b > 0).map(x, x.a).exists(a, a == 'b')", 6_881_270),
            ("self.m.map(k, self.m[k]).exists(v, v == 'x')", 8_257_529),
            ("self.m.transformMap(k, v, v + 'a').size() > 0", 123_696_395_090),
            ("self.n[0][1] == 2", 4),
            ("self.o.all(x, self.o.exists(y, x.a == y.a))", 12_159_912_265_698_514),
            ("[self.m, self.m].all(m, m.all(k, k != ''))", 25),
            ("self.o.exists(x, x.a == 'z') || self.m.exists(k, k == 'z')", 3_342_330),
        ];
        assert_costs(&node, cases);
    }

    /// Rules on `self` of `node`, each costing what apiextensions-apiserver estimates.
    fn assert_costs(node: &Value, cases: &[(&str, u64)]) {
        use super::super::compile::{Rule, Variables, compile};
        use super::super::sizes::NodeSizes;
        use super::super::types::decl_type;
        let t = decl_type(node, false, Some("selfType0")).unwrap();
        let variables = Variables::new(&t).with_sizes(NodeSizes::of(node, false).unwrap());
        for (rule, cost) in cases {
            let compiled = compile(&Rule { rule: rule.to_string(), ..Rule::default() }, &variables, node);
            assert_eq!((compiled.error, compiled.max_cost), (None, *cost), "{rule}");
        }
    }

    /// cel-go sizes a comprehension's range after its loop, by a path the loop may have
    /// overwritten (Go's `append` into a shared array): `x.l1`'s loop counted as `x.l2`'s.
    #[test]
    fn ranges_are_sized_by_the_paths_cel_go_reads() {
        let list = |max: u64| json!({"type": "array", "maxItems": max, "items": {"type": "string", "maxLength": 5}});
        let item = json!({"type": "object", "properties": {"l1": list(3), "l2": list(1000)}});
        let node = json!({"type": "object", "properties": {"o": {"type": "array", "maxItems": 10, "items": item}}});
        let cases: &[(&str, u64)] = &[
            ("self.o.all(x, x.l1.all(y, x.l2.exists(z, z == y)))", 80_060_063),
            ("self.o.all(x, x.l2.all(y, x.l1.exists(z, z == y)))", 963),
            ("self.o.all(x, x.l1.all(y, y != '') && x.l2.all(y, y != ''))", 40_213),
        ];
        assert_costs(&node, cases);
    }

    #[test]
    fn cardinality_multiplies_down_bounded_lists_and_maps() {
        let list = json!({"type": "array", "maxItems": 10});
        assert_eq!(child_cardinality(&list, Some(3)), Some(30));
        assert_eq!(child_cardinality(&json!({"type": "array"}), Some(3)), None);
        assert_eq!(child_cardinality(&json!({"type": "object", "properties": {}}), Some(3)), Some(3));
        let map = json!({"type": "object", "additionalProperties": {"type": "string"}, "maxProperties": 2});
        assert_eq!(child_cardinality(&map, Some(3)), Some(6));
        assert_eq!(child_cardinality(&list, None), None);
    }
}
