//! Python's numbers as PyYAML's SafeConstructor builds them from a scalar's text, ported once for
//! every use: whether a `!!int` or `!!float` can be built at all, dict-key identity, and a value's
//! JSON text. `construct_yaml_int` and `construct_yaml_float` step by step, over Python's `int()`
//! and `float()`; ints are exact at any size ([`PyInt`], sign and magnitude), floats round where
//! Python's do (base 60 summed from the last part up, each part times `float(60 ** i)`).

use regex::Regex;
use std::cmp::Ordering;
use std::sync::OnceLock;

/// Python's default cap on the decimal digits `int(str)` reads and `str(int)` writes
/// (`sys.get_int_max_str_digits()`); binary, octal and hex texts have none.
pub const MAX_STR_DIGITS: usize = pyjson::MAX_INT_DIGITS;

/// A Python int of any size: a sign and a magnitude in little-endian base-2^32 limbs, with no
/// high zero limb (zero has none, and no sign), so equal ints are equal values.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PyInt {
    negative: bool,
    limbs: Vec<u32>,
}

impl PyInt {
    fn new(negative: bool, mut limbs: Vec<u32>) -> PyInt {
        while limbs.last() == Some(&0) {
            limbs.pop();
        }
        PyInt {
            negative: negative && !limbs.is_empty(),
            limbs,
        }
    }

    fn small(n: u32) -> PyInt {
        PyInt::new(false, vec![n])
    }

    fn neg(self) -> PyInt {
        PyInt::new(!self.negative, self.limbs)
    }

    fn bits(&self) -> u64 {
        self.limbs.last().map_or(0, |&top| {
            32 * (self.limbs.len() as u64 - 1) + u64::from(32 - top.leading_zeros())
        })
    }

    /// The magnitude times `m`, plus `a`.
    fn mul_add(mut self, m: u32, a: u32) -> PyInt {
        let mut carry = u64::from(a);
        for limb in &mut self.limbs {
            let x = u64::from(*limb) * u64::from(m) + carry;
            *limb = x as u32;
            carry = x >> 32;
        }
        if carry > 0 {
            self.limbs.push(carry as u32);
        }
        PyInt::new(self.negative, self.limbs)
    }

    fn add(&self, other: &PyInt) -> PyInt {
        if self.negative == other.negative {
            return PyInt::new(self.negative, add_mag(&self.limbs, &other.limbs));
        }
        match cmp_mag(&self.limbs, &other.limbs) {
            Ordering::Less => PyInt::new(other.negative, sub_mag(&other.limbs, &self.limbs)),
            _ => PyInt::new(self.negative, sub_mag(&self.limbs, &other.limbs)),
        }
    }

    /// The value as an i128, where it fits.
    pub fn to_i128(&self) -> Option<i128> {
        if self.limbs.len() > 4 {
            return None;
        }
        let mag = self
            .limbs
            .iter()
            .rev()
            .fold(0u128, |acc, &l| (acc << 32) | u128::from(l));
        if self.negative {
            0i128.checked_sub_unsigned(mag)
        } else {
            i128::try_from(mag).ok()
        }
    }

    /// `float(n)`: rounded to nearest, ties to even; `None` where Python raises OverflowError.
    pub fn to_f64(&self) -> Option<f64> {
        let n = self.bits();
        let magnitude = if n <= 64 {
            self.limbs
                .iter()
                .rev()
                .fold(0u64, |acc, &l| (acc << 32) | u64::from(l)) as f64
        } else if n > 1024 {
            return None;
        } else {
            // The top 64 bits, the lowest of them made sticky for every bit below: one rounding.
            let shift = n - 64;
            let word = |i: u64| -> u64 {
                let limb = (i / 32) as usize;
                let at = i % 32;
                let get = |k: usize| u64::from(self.limbs.get(k).copied().unwrap_or(0));
                let low = get(limb) >> at;
                let mid = get(limb + 1) << (32 - at);
                let high = if at == 0 {
                    0
                } else {
                    get(limb + 2) << (64 - at)
                };
                low | mid | high
            };
            let mut top = word(shift);
            let below = (0..shift).any(|b| self.limbs[(b / 32) as usize] >> (b % 32) & 1 == 1);
            if below {
                top |= 1;
            }
            (top as f64) * f64::from_bits((shift + 1023) << 52)
        };
        let value = if self.negative { -magnitude } else { magnitude };
        value.is_finite().then_some(value)
    }

    /// The int equal to a finite float with no fractional part.
    pub fn from_integral_f64(f: f64) -> PyInt {
        let (mantissa, shift) = pyjson::f64_parts(f);
        let limbs = if shift >= 0 {
            let shift = shift as usize;
            let mut limbs = vec![0u32; shift / 32];
            let wide = u128::from(mantissa) << (shift % 32);
            limbs.extend((0..3).map(|k| (wide >> (32 * k)) as u32));
            limbs
        } else {
            let m = mantissa.checked_shr((-shift) as u32).unwrap_or(0);
            vec![m as u32, (m >> 32) as u32]
        };
        PyInt::new(f.is_sign_negative(), limbs)
    }

    /// `str(n)`; `None` past `MAX_STR_DIGITS` (4300) digits, where Python raises ValueError.
    pub fn to_decimal(&self) -> Option<String> {
        // 10^4300 needs 14285 bits: anything longer has more digits than Python writes.
        if self.bits() > 14_285 {
            return None;
        }
        const CHUNK: u64 = 1_000_000_000;
        let mut limbs = self.limbs.clone();
        let mut chunks = Vec::new();
        while !limbs.is_empty() {
            let mut rem = 0u64;
            for limb in limbs.iter_mut().rev() {
                let x = (rem << 32) | u64::from(*limb);
                *limb = (x / CHUNK) as u32;
                rem = x % CHUNK;
            }
            while limbs.last() == Some(&0) {
                limbs.pop();
            }
            chunks.push(rem);
        }
        let mut out = String::from(if self.negative { "-" } else { "" });
        let mut iter = chunks.iter().rev();
        out.push_str(&iter.next().copied().unwrap_or(0).to_string());
        for chunk in iter {
            out.push_str(&format!("{chunk:09}"));
        }
        let digits = out.len() - usize::from(self.negative);
        (digits <= MAX_STR_DIGITS).then_some(out)
    }
}

fn add_mag(a: &[u32], b: &[u32]) -> Vec<u32> {
    let mut out = Vec::with_capacity(a.len().max(b.len()) + 1);
    let mut carry = 0u64;
    for i in 0..a.len().max(b.len()) {
        let x = u64::from(a.get(i).copied().unwrap_or(0))
            + u64::from(b.get(i).copied().unwrap_or(0))
            + carry;
        out.push(x as u32);
        carry = x >> 32;
    }
    out.push(carry as u32);
    out
}

/// `a - b` for magnitudes with `a >= b`.
fn sub_mag(a: &[u32], b: &[u32]) -> Vec<u32> {
    let mut out = Vec::with_capacity(a.len());
    let mut borrow = 0i64;
    for (i, &limb) in a.iter().enumerate() {
        let mut x = i64::from(limb) - i64::from(b.get(i).copied().unwrap_or(0)) - borrow;
        borrow = i64::from(x < 0);
        if x < 0 {
            x += 1 << 32;
        }
        out.push(x as u32);
    }
    out
}

fn cmp_mag(a: &[u32], b: &[u32]) -> Ordering {
    a.len()
        .cmp(&b.len())
        .then_with(|| a.iter().rev().cmp(b.iter().rev()))
}

/// Splits off the one leading sign PyYAML's int and float constructors look at: (negative, rest).
/// `None` for an empty text, where they raise IndexError.
fn sign(value: &str) -> Option<(bool, &str)> {
    let first = value.chars().next()?;
    Some(match first {
        '-' => (true, &value[1..]),
        '+' => (false, &value[1..]),
        _ => (false, value),
    })
}

/// `construct_yaml_int`: the int `safe_load` builds from a scalar's text, `None` where it raises.
/// Underscores go, then one sign; `0b`, `0x`, a leading `0` (octal) and `:` (base 60, every part
/// read before any is summed) pick how Python's `int()` reads the rest.
pub fn construct_int(value: &str) -> Option<PyInt> {
    let v: String = value.chars().filter(|&c| c != '_').collect();
    let (negative, v) = sign(&v)?;
    let n = if v == "0" {
        PyInt::small(0)
    } else if let Some(rest) = v.strip_prefix("0b") {
        py_int(rest, 2)?
    } else if let Some(rest) = v.strip_prefix("0x") {
        py_int(rest, 16)?
    } else if v.starts_with('0') {
        py_int(v, 8)?
    } else if v.contains(':') {
        let digits: Vec<PyInt> = v
            .split(':')
            .map(|part| py_int(part, 10))
            .collect::<Option<_>>()?;
        // PyYAML sums digit * 60**i from the last part up; exact, so Horner's order is the same.
        digits.iter().fold(PyInt::small(0), |total, digit| {
            total.mul_add(60, 0).add(digit)
        })
    } else {
        py_int(v, 10)?
    };
    Some(if negative { n.neg() } else { n })
}

/// Python's `int(s, base)`: surrounding whitespace, one sign, the base's own prefix (`0b`, `0o`,
/// `0x`, any case), then at least one digit of the base; in base 10 at most [`MAX_STR_DIGITS`].
fn py_int(s: &str, base: u32) -> Option<PyInt> {
    let s = s.trim_matches(char::is_whitespace);
    let (negative, s) = sign(s).unwrap_or((false, s));
    let prefix = match base {
        2 => ["0b", "0B"],
        8 => ["0o", "0O"],
        16 => ["0x", "0X"],
        _ => ["", ""],
    };
    let s = prefix
        .iter()
        .filter(|p| !p.is_empty())
        .find_map(|p| s.strip_prefix(p))
        .unwrap_or(s);
    let digits: Vec<u32> = s.chars().map(|c| c.to_digit(base)).collect::<Option<_>>()?;
    if digits.is_empty() || (base == 10 && digits.len() > MAX_STR_DIGITS) {
        return None;
    }
    let n = if base.is_power_of_two() {
        // Bit by bit from the lowest digit: linear, for texts of any length.
        let width = base.trailing_zeros();
        let mut limbs = vec![0u32; (digits.len() * width as usize).div_ceil(32)];
        for (i, &d) in digits.iter().rev().enumerate() {
            let at = i * width as usize;
            let wide = u64::from(d) << (at % 32);
            limbs[at / 32] |= wide as u32;
            if let Some(next) = limbs.get_mut(at / 32 + 1) {
                *next |= (wide >> 32) as u32;
            }
        }
        PyInt::new(false, limbs)
    } else {
        digits
            .iter()
            .fold(PyInt::small(0), |n, &d| n.mul_add(base, d))
    };
    Some(if negative { n.neg() } else { n })
}

/// `construct_yaml_float`: the float `safe_load` builds from a scalar's text, `None` where it
/// raises. Underscores go and the text is lowercased, then one sign; `.inf`, `.nan` and `:`
/// (base 60) are YAML's, the rest is Python's `float()`.
pub fn construct_float(value: &str) -> Option<f64> {
    let v = value.replace('_', "").to_lowercase();
    let (negative, v) = sign(&v)?;
    let sign = if negative { -1.0 } else { 1.0 };
    match v {
        ".inf" => Some(sign * f64::INFINITY),
        ".nan" => Some(f64::NAN),
        _ if v.contains(':') => {
            let digits: Vec<f64> = v.split(':').map(py_float).collect::<Option<_>>()?;
            // `value += digit * base; base *= 60` from the last part: base an int, so each
            // product is digit * float(base), which raises OverflowError once base outgrows a
            // float.
            let mut base = PyInt::small(1);
            let mut total = 0.0;
            for digit in digits.iter().rev() {
                total += digit * base.to_f64()?;
                base = base.mul_add(60, 0);
            }
            Some(sign * total)
        }
        _ => Some(sign * py_float(v)?),
    }
}

/// Python's `float(s)` for a lowercased `s`: surrounding whitespace, a sign, decimal digits with
/// an optional point and exponent, or `inf`, `infinity`, `nan`.
fn py_float(s: &str) -> Option<f64> {
    static FLOAT: OnceLock<Regex> = OnceLock::new();
    let re = FLOAT.get_or_init(|| {
        Regex::new(r"^[+-]?(?:(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:e[+-]?[0-9]+)?|inf|infinity|nan)$")
            .expect("the float regex is valid")
    });
    let s = s.trim_matches(char::is_whitespace);
    re.is_match(s).then(|| s.parse().ok()).flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn int(text: &str) -> Option<String> {
        construct_int(text).map(|n| n.to_decimal().unwrap_or_else(|| "too long".into()))
    }

    #[test]
    fn ints_are_built_as_pyyaml_builds_them() {
        for (text, want) in [
            ("0", Some("0")),
            ("-0", Some("0")),
            ("-0b-1", Some("1")),
            ("0b0b1", Some("1")),
            ("0o17", Some("15")),
            ("017", Some("15")),
            ("-1:30", Some("-90")),
            ("1:-30", Some("30")),
            ("1_000", Some("1000")),
            (" 12 ", Some("12")),
            (
                "0xffffffffffffffffffffffffffffffffff",
                Some("87112285931760246646623899502532662132735"),
            ),
            (
                "-99999999999999999999999999999999999999999",
                Some("-99999999999999999999999999999999999999999"),
            ),
            ("", None),
            ("-", None),
            ("0b", None),
            ("08", None),
            ("abc", None),
        ] {
            assert_eq!(int(text).as_deref(), want, "{text:?}");
        }
    }

    #[test]
    fn decimal_ints_past_pythons_digit_cap_are_refused_and_hex_ones_are_not() {
        assert!(construct_int(&"1".repeat(MAX_STR_DIGITS)).is_some());
        assert_eq!(construct_int(&"1".repeat(MAX_STR_DIGITS + 1)), None);
        assert_eq!(
            construct_int(&format!("0{}", "0".repeat(4300))),
            Some(PyInt::small(0))
        );
        let hex = construct_int(&format!("0x{}", "f".repeat(5000))).expect("no cap in hex");
        assert_eq!(hex.to_decimal(), None, "str() of it has too many digits");
    }

    #[test]
    fn ints_convert_to_i128_and_float_as_python_does() {
        assert_eq!(
            construct_int("-170141183460469231731687303715884105728").and_then(|n| n.to_i128()),
            Some(i128::MIN)
        );
        assert_eq!(
            construct_int("170141183460469231731687303715884105728").and_then(|n| n.to_i128()),
            None
        );
        // 2^53 + 1 rounds to even; 2^64 + 2^11 + 1 rounds up past the tie.
        assert_eq!(
            construct_int("9007199254740993").and_then(|n| n.to_f64()),
            Some(9007199254740992.0)
        );
        assert_eq!(
            construct_int("18446744073709553665").and_then(|n| n.to_f64()),
            Some(18446744073709555712.0)
        );
        let big = PyInt::from_integral_f64(1e40);
        assert_eq!(
            big.to_decimal().as_deref(),
            Some("10000000000000000303786028427003666890752")
        );
        assert_eq!(big.to_f64(), Some(1e40));
        assert_eq!(PyInt::from_integral_f64(-3.0).to_i128(), Some(-3));
        assert_eq!(
            construct_int(&format!("0x1{}", "0".repeat(256))).and_then(|n| n.to_f64()),
            None
        );
    }

    #[test]
    fn floats_are_built_as_pyyaml_builds_them() {
        assert_eq!(construct_float("-1_0.5"), Some(-10.5));
        assert_eq!(construct_float("1:30.5"), Some(90.5));
        assert_eq!(construct_float("-.INF"), Some(f64::NEG_INFINITY));
        assert_eq!(construct_float("1E5"), Some(1e5));
        assert_eq!(construct_float("--1"), Some(1.0));
        assert!(construct_float(".NaN").is_some_and(f64::is_nan));
        for bad in ["", "x", "1e", ".", "1::2"] {
            assert_eq!(construct_float(bad), None, "{bad:?}");
        }
    }
}
