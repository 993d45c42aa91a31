//! Field paths as cel-go keeps them: Go slices of names, a path extended by `append`, which
//! writes into the extended path's array when it has room. Two paths extended from one with
//! room share that array, the second overwriting the first's last name, and cel-go reads some
//! paths after that (a comprehension's range, sized after its loop): `Path` shares arrays as
//! Go does, so that the estimate reads the same names.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;

/// A Go `[]string`: a shared array, and how much of it the path is and may grow into.
#[derive(Clone, Debug, Default)]
pub(crate) struct Path {
    array: Option<Rc<RefCell<Vec<Arc<str>>>>>,
    len: usize,
    cap: usize,
}

impl Path {
    /// `[]string{name}`.
    pub fn of(name: &str) -> Path {
        Path { array: Some(Rc::new(RefCell::new(vec![Arc::from(name)]))), len: 1, cap: 1 }
    }

    /// A path of its own with `names`, no room left (`make` and `copy`).
    pub fn copied(names: Vec<Arc<str>>) -> Path {
        let len = names.len();
        Path { array: Some(Rc::new(RefCell::new(names))), len, cap: len }
    }

    /// `append(path, name)`: in the same array when it has room, else in a new one of twice
    /// the room (Go's growth for small slices of strings).
    pub fn append(&self, name: &str) -> Path {
        if let Some(array) = self.array.as_ref().filter(|_| self.len < self.cap) {
            if let Some(slot) = array.borrow_mut().get_mut(self.len) {
                *slot = Arc::from(name);
            }
            return Path { array: Some(array.clone()), len: self.len + 1, cap: self.cap };
        }
        let cap = grown(self.cap, self.len + 1);
        let mut names = self.names();
        names.push(Arc::from(name));
        names.resize(cap, Arc::from(""));
        Path { array: Some(Rc::new(RefCell::new(names))), len: self.len + 1, cap }
    }

    /// The names the path holds now.
    pub fn names(&self) -> Vec<Arc<str>> {
        match &self.array {
            Some(array) => array.borrow().iter().take(self.len).cloned().collect(),
            None => Vec::new(),
        }
    }

    /// Its first name, if any.
    pub fn first(&self) -> Option<Arc<str>> {
        self.array.as_ref().filter(|_| self.len > 0).and_then(|array| array.borrow().first().cloned())
    }
}

/// Go's `growslice` capacity for `needed` strings from `cap` (doubling below 256 elements, a
/// quarter more above; the size classes of 16-byte strings are exact there).
fn grown(cap: usize, needed: usize) -> usize {
    let doubled = cap * 2;
    if needed > doubled {
        return needed;
    }
    if cap < 256 {
        return doubled;
    }
    let mut grown = cap;
    while grown < needed {
        grown += (grown + 3 * 256) >> 2;
    }
    grown
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(path: &Path) -> String {
        path.names().join(".")
    }

    #[test]
    fn paths_extended_twice_from_one_with_room_share_its_last_name() {
        let items = Path::of("self").append("o").append("@items");
        let first = items.append("a");
        assert_eq!(text(&first), "self.o.@items.a");
        let second = items.append("b");
        assert_eq!(text(&second), "self.o.@items.b");
        assert_eq!(text(&first), "self.o.@items.b", "Go's append wrote into the same array");
        let own = first.append("c");
        let _ = second.append("d");
        assert_eq!(text(&own), "self.o.@items.b.c", "a full array is copied");
    }

    #[test]
    fn a_path_of_nothing_grows_from_one() {
        let path = Path::default().append("x");
        assert_eq!(text(&path), "x");
        assert_eq!(path.first().as_deref(), Some("x"));
        assert_eq!(Path::default().first(), None);
        assert_eq!(grown(4, 5), 8);
        assert_eq!(grown(0, 1), 1);
    }
}
