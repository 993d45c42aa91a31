//! The estimator against cel-go's: rules on `self` with a list of at most 10 strings of no
//! bound (3145726 characters, as Kubernetes bounds them by the request's size) and a string of
//! at most 80 characters, each with the cost apiextensions-apiserver's `cel.Compile` estimates
//! for such a schema.

use super::{Estimate, Sizes, estimate};
use crate::cel::{CelType, Declarations, ObjectType, Program};
use std::sync::Arc;

struct Schema;

impl Sizes for Schema {
    fn size(&self, path: &[Arc<str>]) -> Option<Estimate> {
        let path: Vec<&str> = path.iter().skip(1).map(|p| &**p).collect();
        let max = match path.as_slice() {
            [] => 0,
            ["l"] => 10,
            ["l", "@items"] => 3_145_726,
            ["s"] => 80,
            _ => return None,
        };
        Some(Estimate::new(0, max))
    }
}

fn cost(rule: &str) -> u64 {
    let object = ObjectType::new("selfType0", [("l", CelType::list(CelType::String)), ("s", CelType::String)]);
    let declarations = Declarations::new().with_variable("self", CelType::Object(Arc::new(object)));
    let program = Program::compile_declared(rule, &declarations).unwrap();
    estimate(&program, &Schema).max
}

#[test]
fn comprehensions_cost_their_range_times_their_loop() {
    assert_eq!(cost("self.l.all(x, self.l.exists(y, x == y))"), 31_457_963);
    assert_eq!(cost("self.l.exists_one(x, x == 'a')"), 44);
    assert_eq!(cost("[1,2,3].exists(x, x == 2)"), 26);
    assert_eq!(cost("{'a': 1}.all(k, k == 'a')"), 35);
    assert_eq!(cost("lists.range(5).all(i, i < 4)"), 42);
    assert_eq!(cost("self.l.all(i, x, x != '' && i >= 0)"), 63);
    assert_eq!(cost("self.l.transformList(i, x, x + 'a').size() > 0"), 3_145_875);
    assert_eq!(cost("self.s.split(',').all(p, p != '')"), 339);
    assert_eq!(cost("self.l.sortBy(x, x.size()).size() > 0"), 378);
}

#[test]
fn strings_cost_their_traversal() {
    assert_eq!(cost("self.s.matches('^[a-z]+$')"), 20);
    assert_eq!(cost("self.s.lowerAscii() == 'abc'"), 11);
    assert_eq!(cost("self.l.join(',').size() < 100"), 3_145_731);
    assert_eq!(cost("self.s + self.s == 'aa'"), 21);
    assert_eq!(cost("self.s.replace('a', 'bb').size() > 3"), 20);
    assert_eq!(cost("self.s.indexOf('x') > 0"), 11);
    assert_eq!(cost("self.s.find('[0-9]+') != ''"), 20);
    assert_eq!(cost("self.s.findAll('a').size() > 0"), 13);
    assert_eq!(cost("self.s.substring(1) == 'a'"), 11);
    assert_eq!(cost("self.s.trim() != ''"), 10);
    assert_eq!(cost("self.s.endsWith('x')"), 3);
    assert_eq!(cost("self.s < 'abc'"), 3);
    assert_eq!(cost("string(bytes(self.s)) == self.s"), 52);
    assert_eq!(cost("strings.quote(self.s) != ''"), 10);
}

#[test]
fn lists_cost_as_their_libraries_estimate() {
    assert_eq!(cost("self.s in self.l"), 14);
    assert_eq!(cost("self.l.indexOf('x') > 0"), 3_145_743);
    assert_eq!(cost("self.l.isSorted()"), 3_145_742);
    assert_eq!(cost("self.l.max() == 'z'"), 3_145_743);
    assert_eq!(cost("self.l.sort() == self.l"), 226);
    assert_eq!(cost("self.l.distinct().size() == 1"), 215);
    assert_eq!(cost("sets.contains(self.l, ['a'])"), 23);
    assert_eq!(cost("sets.equivalent(self.l, self.l)"), 205);
    assert_eq!(cost("self.l.reverse()[0] == 'a'"), 24);
    assert_eq!(cost("self.l.slice(1, 3).size() == 2"), 17);
}

#[test]
fn presence_tests_optionals_conditionals_and_dyn_cost_their_operands() {
    assert_eq!(cost("has(self.s)"), 1);
    assert_eq!(cost("self.?s.orValue('') == ''"), 3);
    assert_eq!(cost("self.s.size() == 3 ? self.l.size() > 1 : self.l.size() < 2"), 8);
    assert_eq!(cost("dyn(self.s) == 'a'"), 4);
}
