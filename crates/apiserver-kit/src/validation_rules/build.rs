//! The tree of a schema's rules (apiextensions' `cel.NewValidator`): for every node that has
//! rules or holds one that has, its compiled rules and the nodes below it, with the problems a
//! CustomResourceDefinition of the schema would be refused for.

use super::compile::{self, Compiled, Rule, Variables};
use super::cost::{self, Total};
use super::escape::escape;
use super::schema;
use super::sizes::NodeSizes;
use super::types::decl_type;
use crate::cel::CelType;
use serde_json::Value;

/// A node of the schema with rules, or above one.
#[derive(Debug)]
pub struct Node {
    /// The node's schema.
    pub schema: Value,
    /// Whether the node is a resource's root or an embedded resource (its `apiVersion`, `kind`
    /// and metadata names are readable whatever the schema says).
    pub resource_root: bool,
    /// Its rules, compiled, in order.
    pub rules: Vec<Compiled>,
    /// Why its rules could not be compiled at all (a node without a type).
    pub init_error: Option<String>,
    /// Properties below which there are rules, by name.
    pub properties: Vec<(String, Node)>,
    /// The items' node, when there are rules there.
    pub items: Option<Box<Node>>,
    /// The additionalProperties' node, when there are rules there.
    pub additional: Option<Box<Node>>,
    /// The rules of `allOf` branches, on this same node.
    pub all_of: Vec<Node>,
}

/// What building the tree keeps track of: the next name of a `self` type, the problems (how
/// rules are written, then what compiling them found, as the kube-apiserver lists its schema
/// errors before its CEL errors), and the estimated cost of the rules so far.
pub struct Builder {
    next_type: usize,
    written: Vec<String>,
    compiled: Vec<String>,
    total: Total,
}

/// A node's own rules: as written, compiled (none when the node has no type, `init_error`
/// then saying so), and how many times the node may be in an object.
struct Own {
    rules: Vec<Rule>,
    compiled: Vec<Compiled>,
    init_error: Option<String>,
    cardinality: u64,
}

/// Where the builder is in the schema: the definition's path there, and the path of the
/// nearest list or map above whose items do not correlate with the old object's.
#[derive(Clone)]
pub struct At {
    /// `spec.validation.openAPIV3Schema.properties[spec]`.
    pub path: String,
    /// The uncorrelatable list or map above, if any.
    pub uncorrelatable: Option<String>,
    /// How many times the node may be in an object, by the bounds of the lists and maps above
    /// (`None`: unbounded).
    pub cardinality: Option<u64>,
    /// Whether the definition's checks of the rules' cost reach here (not in `allOf`).
    pub costed: bool,
}

impl Builder {
    /// A builder with no problems yet.
    pub fn new() -> Builder {
        Builder { next_type: 0, written: Vec::new(), compiled: Vec::new(), total: Total::default() }
    }

    /// Every problem found, each a field error of the definition (its schema at `root`): how
    /// rules are written, what compiling them found, and their total cost's.
    pub fn problems(self, root: &str) -> Vec<String> {
        let mut problems = self.written;
        problems.extend(self.compiled);
        problems.extend(self.total.problems(root));
        problems
    }

    /// The node of `node`'s schema with `validation`'s rules (the same schema, or an `allOf`
    /// branch of it), `None` when neither has rules.
    pub fn node(&mut self, validation: &Value, node: &Value, resource_root: bool, at: &At) -> Option<Node> {
        let declared = decl_type(node, resource_root, None);
        let own = self.rules(validation, node, resource_root, declared.is_some(), at);
        let written_before = self.written.len();
        let items = match (schema::items(validation), schema::items(node)) {
            (Some(v), Some(n)) => self.items(v, n, node, at).map(Box::new),
            _ => None,
        };
        let additional = match (schema::additional_properties(validation), schema::additional_properties(node)) {
            (Some(v), Some(n)) => self.additional(v, n, node, at).map(Box::new),
            _ => None,
        };
        let properties = self.properties(validation, node, declared.as_ref(), at);
        let all_of = self.all_of(validation, node, resource_root, at);
        // The kube-apiserver checks a node's rules after those below it, and compiles them only
        // when no rule there or below is ill written.
        let below_written = self.written.len() > written_before;
        self.report(&own, node, below_written, at);
        let Own { compiled: rules, init_error, .. } = own;
        let empty = rules.is_empty() && init_error.is_none() && items.is_none() && additional.is_none();
        if empty && properties.is_empty() && all_of.is_empty() {
            return None;
        }
        let schema = node.clone();
        Some(Node { schema, resource_root, rules, init_error, properties, items, additional, all_of })
    }

    /// The node's own rules, compiled, why they could not be when it has no type, and how
    /// many times the node may be in an object (the bounds above, else its smallest size's).
    fn rules(&mut self, validation: &Value, node: &Value, root: bool, typed: bool, at: &At) -> Own {
        let written = validation.get("x-kubernetes-validations").and_then(Value::as_array);
        let rules: Vec<Rule> =
            written.into_iter().flatten().map(|r| serde_json::from_value(r.clone()).unwrap_or_default()).collect();
        if rules.is_empty() || !typed {
            let init_error =
                (!rules.is_empty()).then(|| "failed to convert to declType for CEL validation rules".to_string());
            return Own { rules, compiled: Vec::new(), init_error, cardinality: 0 };
        }
        let name = format!("selfType{}", self.next_type);
        self.next_type += 1;
        let self_type = decl_type(node, root, Some(&name)).unwrap_or(CelType::Dyn);
        let sizes = NodeSizes::of(node, root).unwrap_or_default();
        let cardinality = at.cardinality.unwrap_or_else(|| sizes.max_cardinality());
        let variables = Variables::new(&self_type).with_sizes(sizes);
        let compiled: Vec<Compiled> = rules.iter().map(|rule| compile::compile(rule, &variables, node)).collect();
        Own { rules, compiled, init_error: None, cardinality }
    }

    /// The problems of the node's rules, their costs counted in the total; none but how they are
    /// written when they or those below (`below_written`) are ill written.
    fn report(&mut self, own: &Own, node: &Value, below_written: bool, at: &At) {
        let written = compile::written(&at.path, &own.rules, node);
        if below_written || !written.is_empty() {
            self.written.extend(written);
            return;
        }
        if let Some(error) = &own.init_error {
            self.compiled.push(format!("{}.x-kubernetes-validations: Internal error: {error}", at.path));
            return;
        }
        let costs = at.costed.then_some((own.cardinality, &mut self.total));
        self.compiled.extend(compile::problems(&at.path, &own.compiled, at.uncorrelatable.as_deref(), costs));
    }

    fn items(&mut self, validation: &Value, node: &Value, list: &Value, at: &At) -> Option<Node> {
        let cardinality = cost::child_cardinality(list, at.cardinality);
        let mut below = At { path: format!("{}.items", at.path), cardinality, ..at.clone() };
        let list = schema::list_type(list);
        if list != "map" && below.uncorrelatable.is_none() {
            below.uncorrelatable = Some(at.path.clone());
        }
        self.node(validation, node, schema::embedded(node), &below)
    }

    fn additional(&mut self, validation: &Value, node: &Value, map: &Value, at: &At) -> Option<Node> {
        let cardinality = cost::child_cardinality(map, at.cardinality);
        let below = At { path: format!("{}.additionalProperties", at.path), cardinality, ..at.clone() };
        self.node(validation, node, schema::embedded(node), &below)
    }

    /// The properties' nodes: those of a name the node's type declares (a property of no type
    /// is left out), or of no identifier but a type of their own.
    fn properties(
        &mut self,
        validation: &Value,
        node: &Value,
        declared: Option<&CelType>,
        at: &At,
    ) -> Vec<(String, Node)> {
        let (Some(validations), Some(nodes)) = (schema::properties(validation), schema::properties(node)) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for (name, validation) in validations {
            let Some(property) = nodes.get(name) else { continue };
            let typed = match (escape(name), declared) {
                (Some(field), Some(CelType::Object(object))) => object.field(&field).is_some(),
                (Some(_), _) => false,
                (None, _) => decl_type(property, schema::embedded(property), None).is_some(),
            };
            if !typed {
                continue;
            }
            let cardinality = cost::child_cardinality(node, at.cardinality);
            let mut below = At { path: format!("{}.properties[{name}]", at.path), cardinality, ..at.clone() };
            if !schema::map_correlatable(node) && below.uncorrelatable.is_none() {
                below.uncorrelatable = Some(at.path.clone());
            }
            if let Some(child) = self.node(validation, property, schema::embedded(property), &below) {
                out.push((name.clone(), child));
            }
        }
        out
    }

    fn all_of(&mut self, validation: &Value, node: &Value, root: bool, at: &At) -> Vec<Node> {
        let branches = validation.get("allOf").and_then(Value::as_array).into_iter().flatten().enumerate();
        let mut out = Vec::new();
        for (i, branch) in branches {
            let below = At { path: format!("{}.allOf[{i}]", at.path), costed: false, ..at.clone() };
            out.extend(self.node(branch, node, root, &below));
        }
        out
    }
}
