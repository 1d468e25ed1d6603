//! Java `.properties` parsing (as `java.util.Properties.load` reads an ISO-8859-1 stream) and
//! the property set the driver runs on.

use std::collections::HashMap;

use crate::Error;

/// Parses a properties file's bytes (ISO-8859-1) into key/value pairs, in file order.
pub fn parse_properties(bytes: &[u8]) -> Result<Vec<(String, String)>, String> {
    // ISO-8859-1: every byte is the char of the same code point.
    let chars: Vec<char> = bytes.iter().map(|&b| b as char).collect();
    let mut out = Vec::new();
    for line in logical_lines(&chars) {
        out.push(split_key_value(&line)?);
    }
    Ok(out)
}

fn is_ws(c: char) -> bool {
    c == ' ' || c == '\t' || c == '\x0c'
}

/// Splits the text into logical lines: comments and blank lines dropped, continuations joined
/// (a natural line ending in an odd number of backslashes continues, and the next line's
/// leading whitespace is dropped). Escapes other than the continuation are left in place.
fn logical_lines(chars: &[char]) -> Vec<Vec<char>> {
    let mut lines = Vec::new();
    let n = chars.len();
    let mut i = 0;
    'outer: while i < n {
        // Skip leading whitespace and blank lines.
        while i < n && (is_ws(chars[i]) || chars[i] == '\r' || chars[i] == '\n') {
            i += 1;
        }
        if i >= n {
            break;
        }
        if chars[i] == '#' || chars[i] == '!' {
            while i < n && chars[i] != '\r' && chars[i] != '\n' {
                i += 1;
            }
            continue;
        }
        let mut buf: Vec<char> = Vec::new();
        loop {
            let start = i;
            while i < n && chars[i] != '\r' && chars[i] != '\n' {
                i += 1;
            }
            let natural = &chars[start..i];
            // Consume the line terminator (\r\n counts as one).
            if i < n && chars[i] == '\r' {
                i += 1;
                if i < n && chars[i] == '\n' {
                    i += 1;
                }
            } else if i < n && chars[i] == '\n' {
                i += 1;
            }
            let backslashes = natural.iter().rev().take_while(|&&c| c == '\\').count();
            if backslashes % 2 == 1 {
                buf.extend_from_slice(&natural[..natural.len() - 1]);
                while i < n && is_ws(chars[i]) {
                    i += 1;
                }
                if i >= n {
                    lines.push(buf);
                    break 'outer;
                }
                continue;
            }
            buf.extend_from_slice(natural);
            lines.push(buf);
            break;
        }
    }
    lines
}

fn split_key_value(line: &[char]) -> Result<(String, String), String> {
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

fn unescape(chars: &[char]) -> Result<String, String> {
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
                if i + 4 > chars.len() {
                    return Err("malformed \\uxxxx encoding".into());
                }
                let hex: String = chars[i..i + 4].iter().collect();
                let v = u16::from_str_radix(&hex, 16)
                    .map_err(|_| format!("malformed \\uxxxx encoding: \\u{hex}"))?;
                units.push(v);
                i += 4;
            }
            't' => push(&mut units, '\t'),
            'r' => push(&mut units, '\r'),
            'n' => push(&mut units, '\n'),
            'f' => push(&mut units, '\x0c'),
            other => push(&mut units, other),
        }
    }
    Ok(String::from_utf16_lossy(&units))
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
