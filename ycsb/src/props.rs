//! Java `.properties` parsing (as `java.util.Properties.load` reads an ISO-8859-1 stream, which
//! is how YCSB's `Client` reads a `-P` file) and the property set the driver runs on. Proven
//! against YCSB's own `Client.parseArguments` by `tests/ycsb_conformance.rs`
//! (`property_files_read_as_ycsb_reads_them`). One deliberate difference: a file whose key or
//! (last) value holds half of a UTF-16 surrogate pair (`\uD800` alone) is refused, since a Rust
//! string cannot hold it (Java keeps it in its string).

use std::collections::HashMap;

use crate::Error;

/// Parses a properties file's bytes (ISO-8859-1) into key/value pairs: one pair per key, with
/// its last value (as `Properties.load` leaves it), in the order the keys first appear.
pub fn parse_properties(bytes: &[u8]) -> Result<Vec<(String, String)>, String> {
    // ISO-8859-1: every byte is the char of the same code point.
    let chars: Vec<char> = bytes.iter().map(|&b| b as char).collect();
    let mut pairs: Vec<(Vec<u16>, Vec<u16>)> = Vec::new();
    let mut index: HashMap<Vec<u16>, usize> = HashMap::new();
    for line in logical_lines(&chars) {
        let (key, value) = split_key_value(&line)?;
        match index.get(&key) {
            Some(&i) => pairs[i].1 = value,
            None => {
                index.insert(key.clone(), pairs.len());
                pairs.push((key, value));
            }
        }
    }
    // Only now, as a value overwritten later in the file is no difference from Java's.
    pairs
        .into_iter()
        .map(|(k, v)| Ok((utf16_string(&k)?, utf16_string(&v)?)))
        .collect()
}

fn is_ws(c: char) -> bool {
    c == ' ' || c == '\t' || c == '\x0c'
}

fn is_eol(c: char) -> bool {
    c == '\r' || c == '\n'
}

/// Splits the text into logical lines, as `Properties.load` does: leading whitespace, blank
/// lines and comments (`#` or `!` first on a logical line, never continued) dropped; a line
/// ending in an odd number of backslashes continues on the next, whose leading whitespace is
/// dropped (a CR LF after the backslash is one line end). A logical line that is still empty
/// when a line ends is no line: a line of only `\` followed by a blank line gives nothing, and
/// followed by `#...` a comment. At the end of the text a trailing odd backslash is dropped, and
/// a line that held only it gives an empty key. Escapes other than the continuation are left
/// in place.
fn logical_lines(chars: &[char]) -> Vec<Vec<char>> {
    let mut lines = Vec::new();
    let mut line: Vec<char> = Vec::new();
    // Skipping whitespace before the next char of the line (at a line's start, after a join).
    let mut skip_ws = true;
    // Just joined: a line end before anything else ends the logical line, not a blank line.
    let mut joined = false;
    // The line so far ends in an odd number of backslashes.
    let mut odd_backslashes = false;
    // The join was at a CR: an LF right after it belongs to that line end.
    let mut skip_lf = false;
    let n = chars.len();
    let mut i = 0;
    while i < n {
        let c = chars[i];
        i += 1;
        if std::mem::take(&mut skip_lf) && c == '\n' {
            continue;
        }
        if skip_ws {
            if is_ws(c) || (is_eol(c) && !joined) {
                continue;
            }
            skip_ws = false;
            joined = false;
        }
        if line.is_empty() && (c == '#' || c == '!') {
            while i < n && !is_eol(chars[i]) {
                i += 1;
            }
            i = (i + 1).min(n);
            skip_ws = true;
            continue;
        }
        if !is_eol(c) {
            line.push(c);
            odd_backslashes = c == '\\' && !odd_backslashes;
            continue;
        }
        if line.is_empty() {
            skip_ws = true;
            continue;
        }
        if odd_backslashes && i < n {
            line.pop();
            odd_backslashes = false;
            skip_ws = true;
            joined = true;
            skip_lf = c == '\r';
            continue;
        }
        if odd_backslashes {
            line.pop();
        }
        lines.push(std::mem::take(&mut line));
        odd_backslashes = false;
        skip_ws = true;
    }
    if !line.is_empty() {
        if odd_backslashes {
            line.pop();
        }
        lines.push(line);
    }
    lines
}

fn split_key_value(line: &[char]) -> Result<(Vec<u16>, Vec<u16>), String> {
    let len = line.len();
    let mut key_len = 0;
    let mut value_start = len;
    let mut has_sep = false;
    let mut preceding_backslash = false;
    while key_len < len {
        let c = line[key_len];
        if (c == '=' || c == ':') && !preceding_backslash {
            value_start = key_len + 1;
            has_sep = true;
            break;
        } else if is_ws(c) && !preceding_backslash {
            value_start = key_len + 1;
            break;
        }
        preceding_backslash = c == '\\' && !preceding_backslash;
        key_len += 1;
    }
    while value_start < len {
        let c = line[value_start];
        if !is_ws(c) {
            if !has_sep && (c == '=' || c == ':') {
                has_sep = true;
            } else {
                break;
            }
        }
        value_start += 1;
    }
    Ok((
        unescape(&line[..key_len])?,
        unescape(&line[value_start.min(len)..])?,
    ))
}

/// A key or value with its escapes replaced, as UTF-16 units (as Java's `String` holds it).
fn unescape(chars: &[char]) -> Result<Vec<u16>, String> {
    let mut units: Vec<u16> = Vec::with_capacity(chars.len());
    let mut i = 0;
    let push = |units: &mut Vec<u16>, c: char| {
        let mut b = [0u16; 2];
        units.extend_from_slice(c.encode_utf16(&mut b));
    };
    while i < chars.len() {
        let c = chars[i];
        i += 1;
        if c != '\\' {
            push(&mut units, c);
            continue;
        }
        if i >= chars.len() {
            break;
        }
        let e = chars[i];
        i += 1;
        match e {
            'u' => {
                // Exactly four hex digits (`u16::from_str_radix` alone would take "+041").
                let hex: String = chars[i..(i + 4).min(chars.len())].iter().collect();
                if hex.len() < 4 || !hex.chars().all(|h| h.is_ascii_hexdigit()) {
                    return Err(format!("malformed \\uxxxx encoding: \\u{hex}"));
                }
                units.push(u16::from_str_radix(&hex, 16).expect("four hex digits"));
                i += 4;
            }
            't' => push(&mut units, '\t'),
            'r' => push(&mut units, '\r'),
            'n' => push(&mut units, '\n'),
            'f' => push(&mut units, '\x0c'),
            other => push(&mut units, other),
        }
    }
    Ok(units)
}

/// UTF-16 units as a string. Deliberately not Java's: half a surrogate pair cannot be in a Rust
/// string, and replacing it would silently change the key or value, so it is refused.
fn utf16_string(units: &[u16]) -> Result<String, String> {
    String::from_utf16(units).map_err(|_| {
        let half = char::decode_utf16(units.iter().copied())
            .find_map(|r| r.err())
            .map_or(0, |e| e.unpaired_surrogate());
        format!(
            "\\u{half:04X} is half of a UTF-16 surrogate pair without its other half (Java keeps it; ycsb cannot hold it)"
        )
    })
}

/// The merged property set: later `set`s win.
#[derive(Debug, Clone, Default)]
pub struct Properties {
    map: HashMap<String, String>,
    /// The keys of each source (a `-P` file, then the command line), in the order each set
    /// them: what `Properties.propertyNames()` order depends on in Java.
    sources: Vec<Vec<String>>,
}

impl Properties {
    /// An empty set.
    pub fn new() -> Properties {
        Properties::default()
    }

    /// Sets `key` to `value`, replacing any earlier value.
    pub fn set(&mut self, key: impl Into<String>, value: impl Into<String>) {
        let key = key.into();
        if let Some(src) = self.sources.last_mut() {
            if !src.contains(&key) {
                src.push(key.clone());
            }
        }
        self.map.insert(key, value.into());
    }

    /// Starts a new source (a `-P` file, or the command line): the keys set from now on are
    /// remembered as its keys.
    pub fn begin_source(&mut self) {
        self.sources.push(Vec::new());
    }

    /// The keys of each source, in the order each source set them.
    pub fn sources(&self) -> &[Vec<String>] {
        &self.sources
    }

    /// The raw value of `key`.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.map.get(key).map(|s| s.as_str())
    }

    /// True when `key` is set.
    pub fn contains(&self, key: &str) -> bool {
        self.map.contains_key(key)
    }

    /// The value of `key`, or `default`.
    pub fn get_or<'a>(&'a self, key: &str, default: &'a str) -> &'a str {
        self.get(key).unwrap_or(default)
    }

    /// `key` parsed as an integer, or `default` when unset.
    pub fn i64_or(&self, key: &str, default: i64) -> Result<i64, Error> {
        match self.get(key) {
            None => Ok(default),
            Some(v) => v
                .trim()
                .parse::<i64>()
                .map_err(|_| Error::Config(format!("{key}={v:?} is not a whole number"))),
        }
    }

    /// `key` as a whole number within `min..=max`, or `default` when unset; the error names the
    /// property and the accepted range.
    pub fn i64_in(&self, key: &str, default: i64, min: i64, max: i64) -> Result<i64, Error> {
        let v = match self.get(key) {
            None => return Ok(default),
            Some(v) => v.trim().parse::<i64>().map_err(|_| {
                Error::Config(format!(
                    "{key}={v:?} is not a whole number (accepted: {min} to {max})"
                ))
            })?,
        };
        if v < min || v > max {
            return Err(Error::Config(format!(
                "{key}={v} is out of range (accepted: {min} to {max})"
            )));
        }
        Ok(v)
    }

    /// `key` as a finite number within `min..=max`, or `default` when unset; the error names
    /// the property and the accepted range.
    pub fn f64_in(&self, key: &str, default: f64, min: f64, max: f64) -> Result<f64, Error> {
        let v = match self.get(key) {
            None => return Ok(default),
            Some(v) => v
                .trim()
                .parse::<f64>()
                .ok()
                .filter(|x| x.is_finite())
                .ok_or_else(|| {
                    Error::Config(format!(
                        "{key}={v:?} is not a number (accepted: {min} to {max})"
                    ))
                })?,
        };
        if v < min || v > max {
            return Err(Error::Config(format!(
                "{key}={v} is out of range (accepted: {min} to {max})"
            )));
        }
        Ok(v)
    }

    /// `key` parsed as a number, or `default` when unset.
    pub fn f64_or(&self, key: &str, default: f64) -> Result<f64, Error> {
        match self.get(key) {
            None => Ok(default),
            Some(v) => v
                .trim()
                .parse::<f64>()
                .ok()
                .filter(|x| x.is_finite())
                .ok_or_else(|| Error::Config(format!("{key}={v:?} is not a number"))),
        }
    }

    /// `key` parsed as a boolean, or `default` when unset: `true` or `false`, any case,
    /// surrounding spaces ignored; anything else is refused, naming the property (Java's
    /// `Boolean.parseBoolean` reads it as false, so `dataintegrity=1` silently turned
    /// verification off).
    pub fn bool_or(&self, key: &str, default: bool) -> Result<bool, Error> {
        match self.get(key) {
            None => Ok(default),
            Some(v) if v.trim().eq_ignore_ascii_case("true") => Ok(true),
            Some(v) if v.trim().eq_ignore_ascii_case("false") => Ok(false),
            Some(v) => Err(Error::Config(format!("{key}={v:?} is not true or false"))),
        }
    }

    /// All keys and values, sorted by key.
    pub fn sorted(&self) -> Vec<(&str, &str)> {
        let mut v: Vec<_> = self
            .map
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        v.sort();
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> Vec<(String, String)> {
        parse_properties(s.as_bytes()).unwrap()
    }

    fn kv(k: &str, v: &str) -> (String, String) {
        (k.to_string(), v.to_string())
    }

    #[test]
    fn separators_and_comments() {
        let got = parse(
            "# comment\n! another\n\n  a=1\nb : 2\nc 3\nd\te=4\nf\n  g  =  spaced value  \nh=\n",
        );
        assert_eq!(
            got,
            vec![
                kv("a", "1"),
                kv("b", "2"),
                kv("c", "3"),
                kv("d", "e=4"),
                kv("f", ""),
                kv("g", "spaced value  "),
                kv("h", ""),
            ]
        );
    }

    #[test]
    fn continuations() {
        let got = parse("list = a,\\\n      b,\\\r\n  c\nx=1\\\\\ny=2\n");
        assert_eq!(got, vec![kv("list", "a,b,c"), kv("x", "1\\"), kv("y", "2")]);
        // A continuation at end of file just ends the value.
        assert_eq!(parse("k=v\\"), vec![kv("k", "v")]);
        // A comment line is never continued.
        assert_eq!(parse("#c \\\nk=v"), vec![kv("k", "v")]);
        // A continued line starting with # is not a comment.
        assert_eq!(parse("k=a\\\n#b"), vec![kv("k", "a#b")]);
    }

    #[test]
    fn escapes() {
        let got =
            parse("tab=a\\tb\nnl=a\\nb\nuni=\\u0041\\u00e9\nkey\\ with\\=sep\\:=v\nplain=\\q\n");
        assert_eq!(
            got,
            vec![
                kv("tab", "a\tb"),
                kv("nl", "a\nb"),
                kv("uni", "Aé"),
                kv("key with=sep:", "v"),
                kv("plain", "q"),
            ]
        );
        assert!(parse_properties(b"bad=\\u12").is_err());
    }

    // The cases below are YCSB's answers in `tests/ycsb_conformance.rs`
    // (`property_files_read_as_ycsb_reads_them`), kept here as quick checks.
    #[test]
    fn a_line_of_only_a_continuation() {
        // Followed by a blank line (or one of spaces) it is no line at all; followed by `#` or
        // `!` that line is a comment.
        assert_eq!(parse("\\\n\nk=v\n"), vec![kv("k", "v")]);
        assert_eq!(parse("\\\r\n   \r\nk=v"), vec![kv("k", "v")]);
        assert_eq!(parse("\\\n#c=1\nk=v\n"), vec![kv("k", "v")]);
        assert_eq!(parse("  \\\n  !c=1\n"), vec![]);
        assert_eq!(parse("\\\n   "), vec![]);
        assert_eq!(parse("\\\n  k=v\n"), vec![kv("k", "v")]);
        // At the end of the file it is an empty key.
        assert_eq!(parse("\\"), vec![kv("", "")]);
        assert_eq!(parse("\\\n"), vec![kv("", "")]);
    }

    #[test]
    fn unicode_escapes_take_exactly_four_hex_digits() {
        for bad in ["k=\\u+041", "k=\\u-041", "k=\\u 041", "k=\\u12G4", "k=\\u"] {
            assert!(parse_properties(bad.as_bytes()).is_err(), "{bad}");
        }
        assert_eq!(parse("k=\\uD83D\\uDE00"), vec![kv("k", "\u{1F600}")]);
    }

    #[test]
    fn half_a_surrogate_pair_is_refused_unless_overwritten() {
        let e = parse_properties(b"k=\\uD800\n").unwrap_err();
        assert!(e.contains("\\uD800"), "{e}");
        assert!(parse_properties(b"\\uDC00=v").is_err());
        assert_eq!(parse("k=\\uD800\nk=v\n"), vec![kv("k", "v")]);
    }

    #[test]
    fn duplicate_keys_keep_the_first_place_and_the_last_value() {
        assert_eq!(parse("a=1\nb=2\na=3\n"), vec![kv("a", "3"), kv("b", "2")]);
    }

    #[test]
    fn latin1_bytes() {
        let got = parse_properties(b"k=caf\xe9").unwrap();
        assert_eq!(got, vec![kv("k", "café")]);
    }

    #[test]
    fn cr_only_line_endings() {
        assert_eq!(parse("a=1\rb=2\r"), vec![kv("a", "1"), kv("b", "2")]);
    }

    #[test]
    fn typed_getters() {
        let mut p = Properties::new();
        p.set("n", " 42 ");
        p.set("bad", "4x");
        p.set("f", "0.5");
        p.set("b", "TRUE");
        assert_eq!(p.i64_or("n", 0).unwrap(), 42);
        assert_eq!(p.i64_or("missing", 7).unwrap(), 7);
        assert!(p.i64_or("bad", 0).is_err());
        assert_eq!(p.f64_or("f", 0.0).unwrap(), 0.5);
        assert!(p.bool_or("b", false).unwrap());
        assert!(!p.bool_or("missing", false).unwrap());
        // "0.5" is neither true nor false: refused, naming the property.
        let e = p.bool_or("f", true).unwrap_err().to_string();
        assert!(e.contains("f=\"0.5\""), "{e}");
    }
}
