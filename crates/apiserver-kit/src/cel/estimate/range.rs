//! cel-go's `SizeEstimate` and `CostEstimate` (checker/cost.go): a range of sizes or costs,
//! added and multiplied without overflowing (a sum or product past `u64::MAX` is `u64::MAX`),
//! scaled by a cost factor rounded up.

/// A range `min..=max` of sizes (a string's characters, bytes, a list's or map's entries) or of
/// costs; cel-go keeps the two apart but computes them alike.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Estimate {
    /// The least.
    pub min: u64,
    /// The most.
    pub max: u64,
}

/// 2^64 as a double (`doubleTwoTo64`).
const TWO_TO_64: f64 = 18_446_744_073_709_551_616.0;

impl Estimate {
    /// Anything from 0 to `u64::MAX`: a size nothing tells.
    pub const UNKNOWN: Estimate = Estimate { min: 0, max: u64::MAX };

    /// `min..=max`.
    pub const fn new(min: u64, max: u64) -> Estimate {
        Estimate { min, max }
    }

    /// Exactly `n`.
    pub const fn fixed(n: u64) -> Estimate {
        Estimate { min: n, max: n }
    }

    /// The sum, bound by `u64::MAX`.
    pub fn plus(self, other: Estimate) -> Estimate {
        Estimate { min: self.min.saturating_add(other.min), max: self.max.saturating_add(other.max) }
    }

    /// The product, bound by `u64::MAX`.
    pub fn multiply(self, other: Estimate) -> Estimate {
        Estimate { min: self.min.saturating_mul(other.min), max: self.max.saturating_mul(other.max) }
    }

    /// Each bound times `factor`, rounded up (`MultiplyByCostFactor`).
    pub fn by_factor(self, factor: f64) -> Estimate {
        Estimate { min: by_factor(self.min, factor), max: by_factor(self.max, factor) }
    }

    /// The range covering both.
    pub fn union(self, other: Estimate) -> Estimate {
        Estimate { min: self.min.min(other.min), max: self.max.max(other.max) }
    }
}

/// `multiplyByCostFactor`: `x * y` rounded up, `u64::MAX` past it.
fn by_factor(x: u64, y: f64) -> u64 {
    let x = x as f64;
    if x > 0.0 && y > 0.0 && x > u64::MAX as f64 / y {
        return u64::MAX;
    }
    let ceil = (x * y).ceil();
    if ceil >= TWO_TO_64 { u64::MAX } else { ceil as u64 }
}

/// Go's `uint64(f)` of a non-negative double as the kube-apiserver's amd64 build converts it:
/// 2^63 for what is past `u64::MAX`.
pub fn to_u64(f: f64) -> u64 {
    if f >= TWO_TO_64 { 1 << 63 } else { f as u64 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums_and_products_stop_at_the_largest_value() {
        let big = Estimate::new(1, u64::MAX - 1);
        assert_eq!(big.plus(Estimate::fixed(5)), Estimate::new(6, u64::MAX));
        assert_eq!(big.multiply(Estimate::fixed(2)), Estimate::new(2, u64::MAX));
        assert_eq!(Estimate::fixed(0).multiply(Estimate::UNKNOWN), Estimate::fixed(0));
    }

    #[test]
    fn cost_factors_round_up() {
        assert_eq!(Estimate::new(1, 15).by_factor(0.1), Estimate::new(1, 2));
        assert_eq!(Estimate::new(0, 3_145_726).by_factor(0.1), Estimate::new(0, 314_573));
        assert_eq!(Estimate::UNKNOWN.by_factor(0.1), Estimate::new(0, 1_844_674_407_370_955_264));
        assert_eq!(Estimate::UNKNOWN.by_factor(2.0), Estimate::new(0, u64::MAX));
        assert_eq!(Estimate::UNKNOWN.by_factor(1.0), Estimate::new(0, u64::MAX));
    }

    #[test]
    fn doubles_past_the_largest_value_convert_as_go_converts_them_on_amd64() {
        assert_eq!(to_u64(TWO_TO_64), 9_223_372_036_854_775_808);
        assert_eq!(to_u64(6_148_914_691_236_516_864.0), 6_148_914_691_236_516_864);
    }

    #[test]
    fn unions_cover_both() {
        assert_eq!(Estimate::new(3, 4).union(Estimate::new(1, 2)), Estimate::new(1, 4));
    }
}
