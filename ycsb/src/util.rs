//! Small pieces YCSB users can see: FNV-1a-64 key hashing, Java's `String.hashCode`, and number
//! formatting the way Java prints it (`Double.toString`, `DecimalFormat("#.##")`).

use std::time::{SystemTime, UNIX_EPOCH};

const FNV_OFFSET_BASIS_64: i64 = 0xCBF2_9CE4_8422_2325_u64 as i64;
const FNV_PRIME_64: i64 = 1_099_511_628_211;

/// YCSB's `Utils.fnvhash64`: FNV-1a over the 8 bytes of `val`, least significant byte first,
/// then the absolute value (`i64::MIN` stays negative, as `Math.abs` leaves it).
pub fn fnvhash64(val: i64) -> i64 {
    let mut v = val;
    let mut hash = FNV_OFFSET_BASIS_64;
    for _ in 0..8 {
        let octet = v & 0xff;
        v >>= 8;
        hash ^= octet;
        hash = hash.wrapping_mul(FNV_PRIME_64);
    }
    hash.wrapping_abs()
}

/// Java's `String.hashCode` over the UTF-16 code units of `s`.
pub fn java_string_hash(s: &str) -> i32 {
    s.encode_utf16()
        .fold(0i32, |h, c| h.wrapping_mul(31).wrapping_add(c as i32))
}

/// Java's `String.hashCode` of a string held as its UTF-16 code units.
pub fn java_utf16_hash(units: &[u16]) -> i32 {
    units
        .iter()
        .fold(0i32, |h, &c| h.wrapping_mul(31).wrapping_add(c as i32))
}

/// A double as Java's `Double.toString` prints it: at least one digit after the point, and
/// computerized scientific notation (`1.0E7`) outside `[1e-3, 1e7)`; the digits are the
/// fewest that read back as the same double and, of those, the closest to its exact value,
/// an exact tie going to the even digit (Rust's shortest form breaks ties the other way:
/// 693444720188.03125 is `6.934447201880312E11` in Java, `6.934447201880313e11` in Rust).
/// `tests/ycsb_conformance.rs` compares 60,000 doubles with the JDK's: JDK 19 and later print
/// the same; an older JDK sometimes prints a 17th digit the shortest form does not need (47 of
/// the 60,000 on JDK 17, all in scientific notation, so in a report only values of 1e7 and
/// above can differ).
pub fn java_double(d: f64) -> String {
    if d.is_nan() {
        return "NaN".into();
    }
    if d.is_infinite() {
        return if d > 0.0 { "Infinity" } else { "-Infinity" }.into();
    }
    if d == 0.0 {
        return if d.is_sign_negative() { "-0.0" } else { "0.0" }.into();
    }
    let abs = d.abs();
    let s = shortest_closest(d);
    let (mantissa, exp) = s.split_once('e').expect("exponent form");
    if (1e-3..1e7).contains(&abs) {
        // The same digits in plain form: d.ddd × 10^exp with -3 <= exp < 7.
        let exp: i32 = exp.parse().expect("an exponent");
        let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
        let sign = if d < 0.0 { "-" } else { "" };
        if exp < 0 {
            let zeros = "0".repeat((-exp - 1) as usize);
            format!("{sign}0.{zeros}{digits}")
        } else {
            let point = exp as usize + 1;
            let (int, frac) = if digits.len() > point {
                (digits[..point].to_string(), digits[point..].to_string())
            } else {
                (format!("{digits:0<point$}"), "0".to_string())
            };
            format!("{sign}{int}.{frac}")
        }
    } else if mantissa.contains('.') {
        format!("{mantissa}E{exp}")
    } else {
        format!("{mantissa}.0E{exp}")
    }
}

/// `d` in Rust's exponent form with the fewest significant digits that read back as `d`, and
/// of those the closest to `d`'s exact value (ties to even): Rust's shortest form, unless the
/// correctly rounded number of as many digits (Rust rounds its fixed precision half to even
/// on the exact value) reads back as `d` too and differs from it.
fn shortest_closest(d: f64) -> String {
    let shortest = format!("{d:e}");
    let mantissa = shortest.split_once('e').map_or("", |(m, _)| m);
    let digits = mantissa.bytes().filter(u8::is_ascii_digit).count();
    let rounded = format!("{:.*e}", digits.saturating_sub(1), d);
    if rounded != shortest && rounded.parse::<f64>() == Ok(d) {
        rounded
    } else {
        shortest
    }
}

/// Java's `new DecimalFormat("#.##").format(d)`: at most two decimals (half-even), no trailing
/// zeros, no point for whole numbers.
pub fn decimal_2(d: f64) -> String {
    if d.is_nan() {
        return "NaN".into();
    }
    if d.is_infinite() {
        return if d > 0.0 { "∞" } else { "-∞" }.into();
    }
    let mut s = format!("{d:.2}");
    if s.contains('.') {
        while s.ends_with('0') {
            s.pop();
        }
        if s.ends_with('.') {
            s.pop();
        }
    }
    s
}

/// Java's `String.format("%.2f", d)`: see [`java_format_fixed`].
pub fn java_format_2f(d: f64) -> String {
    java_format_fixed(d, 2)
}

/// Java's `String.format("%.Nf", d)` for `N = places`: the shortest decimal digits of `d` (as
/// `Double.toString` finds them), rounded half up to `places`. Rust's `{:.N}` rounds the
/// double's exact value instead, so the two differ where the shortest digits end in a 5 the
/// exact value falls below: 393 / 80 is 4.9124999…96 exactly, `4.912` in Rust, `4.913` in Java.
pub fn java_format_fixed(d: f64, places: usize) -> String {
    if d.is_nan() {
        return "NaN".into();
    }
    if d.is_infinite() {
        return if d > 0.0 { "Infinity" } else { "-Infinity" }.into();
    }
    let neg = d.is_sign_negative() && d != 0.0;
    let digits = format!("{}", d.abs()); // shortest round-trip, never in exponent form
    let (int_part, frac) = digits.split_once('.').unwrap_or((&digits, ""));
    let mut frac: Vec<u8> = frac.bytes().collect();
    let round_up = frac.get(places).is_some_and(|&c| c >= b'5');
    frac.resize(places, b'0');
    let mut all: Vec<u8> = int_part.bytes().chain(frac).collect();
    if round_up {
        let mut i = all.len();
        loop {
            if i == 0 {
                all.insert(0, b'1');
                break;
            }
            i -= 1;
            if all[i] == b'9' {
                all[i] = b'0';
            } else {
                all[i] += 1;
                break;
            }
        }
    }
    let (ip, fp) = all.split_at(all.len() - places);
    let mut s = String::new();
    if neg {
        s.push('-');
    }
    s.push_str(std::str::from_utf8(ip).expect("digits"));
    if places > 0 {
        s.push('.');
        s.push_str(std::str::from_utf8(fp).expect("digits"));
    }
    s
}

/// The wall-clock time as YCSB's status line prints it, `yyyy-MM-dd HH:mm:ss:SSS` (UTC).
pub fn status_timestamp(now: SystemTime) -> String {
    let d = now.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = d.as_secs() as i64;
    let millis = d.subsec_millis();
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    let (y, m, day) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{day:02} {:02}:{:02}:{:02}:{millis:03}",
        rem / 3600,
        (rem / 60) % 60,
        rem % 60
    )
}

/// `java.util.Date.toString()` in UTC, `EEE MMM dd HH:mm:ss zzz yyyy` (`Mon Dec 07 01:34:23 UTC
/// 2026`), as HdrHistogram's log writer prints a StartTime.
pub fn java_date_utc(t: SystemTime) -> String {
    const DAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let secs = t.duration_since(UNIX_EPOCH).unwrap_or_default().as_secs() as i64;
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    format!(
        "{} {} {d:02} {:02}:{:02}:{:02} UTC {y}",
        DAYS[days.rem_euclid(7) as usize],
        MONTHS[m as usize - 1],
        rem / 3600,
        (rem / 60) % 60,
        rem % 60
    )
}

/// Days since 1970-01-01 to (year, month, day), proleptic Gregorian.
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn java_date_is_dates_to_string_in_utc() {
        // The StartTime of a YCSB 0.17.0 log (JVM zone UTC).
        let t = UNIX_EPOCH + std::time::Duration::from_millis(1_796_607_263_475);
        assert_eq!(java_date_utc(t), "Mon Dec 07 01:34:23 UTC 2026");
        assert_eq!(java_date_utc(UNIX_EPOCH), "Thu Jan 01 00:00:00 UTC 1970");
    }

    #[test]
    fn fnv_matches_ycsb() {
        assert_eq!(fnvhash64(0), 6284781860667377211);
        assert_eq!(fnvhash64(1), 8517097267634966620);
        assert_eq!(fnvhash64(5), 1000385178204227360);
    }

    #[test]
    fn java_hash_code() {
        assert_eq!(java_string_hash(""), 0);
        assert_eq!(java_string_hash("a"), 97);
        assert_eq!(java_string_hash("hello"), 99162322);
        assert_eq!(java_string_hash("user1:field0:"), {
            let mut h = 0i32;
            for b in "user1:field0:".bytes() {
                h = h.wrapping_mul(31).wrapping_add(b as i32);
            }
            h
        });
    }

    #[test]
    fn double_to_string_like_java() {
        assert_eq!(java_double(0.0), "0.0");
        assert_eq!(java_double(1.0), "1.0");
        assert_eq!(java_double(1234.5), "1234.5");
        assert_eq!(java_double(3247.9024390243903), "3247.9024390243903");
        assert_eq!(java_double(0.001), "0.001");
        assert_eq!(java_double(0.0001), "1.0E-4");
        assert_eq!(java_double(1.0e7), "1.0E7");
        assert_eq!(java_double(12345678.9), "1.23456789E7");
        assert_eq!(java_double(9999999.0), "9999999.0");
        assert_eq!(java_double(f64::NAN), "NaN");
        assert_eq!(java_double(f64::INFINITY), "Infinity");
    }

    #[test]
    fn decimal_format_two_places() {
        assert_eq!(decimal_2(3.0), "3");
        assert_eq!(decimal_2(1234.5), "1234.5");
        assert_eq!(decimal_2(2.345678), "2.35");
        assert_eq!(decimal_2(0.004), "0");
        assert_eq!(decimal_2(100.10), "100.1");
    }

    #[test]
    fn format_2f_like_java() {
        assert_eq!(java_format_2f(1.005), "1.01");
        assert_eq!(java_format_2f(0.125), "0.13");
        assert_eq!(java_format_2f(2.0), "2.00");
        assert_eq!(java_format_2f(99.995), "100.00");
        assert_eq!(java_format_2f(1234.5678), "1234.57");
        assert_eq!(java_format_fixed(393.0 / 80.0, 3), "4.913");
        assert_eq!(format!("{:.3}", 393.0 / 80.0), "4.912");
        assert_eq!(java_format_fixed(0.0045, 3), "0.005");
        assert_eq!(java_format_fixed(2.5, 0), "3");
    }

    #[test]
    fn timestamp_format() {
        let t = UNIX_EPOCH + std::time::Duration::from_millis(1_700_000_000_123);
        assert_eq!(status_timestamp(t), "2023-11-14 22:13:20:123");
    }
}
