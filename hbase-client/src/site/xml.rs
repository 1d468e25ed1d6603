//! The XML of `hbase-site.xml`, read as Hadoop's `Configuration` reads it (Hadoop 3.4, the one
//! in hbase-shaded-client), XInclude included; `tests/hbase_site.rs` runs Hadoop's beside this
//! on the cases of `tests/hbase_site/` and `tests/hbase_site/xinclude/`.
//!
//! Hadoop does not check the file's structure: it streams the elements and acts on their local
//! names (any namespace, any depth, any root element), so this walks the document the same way
//! and keeps the same small state. What that means for a file:
//!
//! - `<property>` starts a definition (its `name`, `value` and `final` attributes), which its end
//!   records when it has a name. `<name>`, `<value>`, `<final>`, `<source>` and `<tag>` each start
//!   collecting text anew, and the text goes on being collected (inside other elements too) until
//!   the next of them starts; the end of `<name>` takes it, trimmed, when not empty, the end of
//!   `<value>` takes it as written when not empty, the end of `<final>` takes whether it is exactly
//!   `true`.
//! - `<include href="…">` reads the file in place (its definitions come where the include is). A
//!   relative href is relative to the directory of the top-level file, also in an included file
//!   (Hadoop resolves it against the name of the resource it was asked to read, which an include
//!   keeps; HBase finds `hbase-site.xml` on the class path, where it looks an href up first, and
//!   that is the same directory). An absolute path and a `file:` URL are read as they are.
//! - An include whose file does not exist is an error at its end, unless a `<fallback>` started
//!   inside it. The state for this is one pair of flags per file, as in Hadoop: the include's
//!   failure, and a fallback seen. While a fallback has been seen and no include failed, property
//!   definitions are dropped (a fallback of an include that worked); the end of any include resets
//!   both. So an include inside a fallback is read even when the outer include worked, and the
//!   properties after it in that fallback are kept; a `<fallback>` outside any include drops the
//!   definitions after it up to the end of the next include. An include without an href is
//!   ignored. A file that exists but cannot be read or parsed is an error, fallback or not.
//!
//! Deliberate differences: Hadoop looks a relative href up on its class path first (a jar's
//! `hbase-default.xml` would be found there; we have no class path, only the directory); it
//! fetches `http:`, `https:`, `ftp:` and `jar:` URLs, which are an error here (this client reads
//! files only); and an include loop recurses in Hadoop until its stack overflows, where here it is
//! an error naming the files of the loop.

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// One `<property>` as Hadoop records it, in document order across the included files. A
/// definition without a value sets nothing, but its `final` still counts.
#[derive(Debug)]
pub(super) struct Definition {
    pub(super) name: String,
    pub(super) value: Option<String>,
    pub(super) is_final: bool,
}

fn invalid(msg: String) -> Error {
    Error::InvalidInput(msg)
}

/// The definitions of the file at `path` and the files it includes.
pub(super) fn read_file(path: &Path) -> Result<Vec<Definition>> {
    let base = path.parent().map(Path::to_path_buf).unwrap_or_default();
    let mut reading = Reading {
        base: Some(base),
        chain: Vec::new(),
    };
    reading.file(path)
}

/// The definitions of `xml`, which has no location: an include with a relative href is an
/// error (there is nothing to resolve it against), an absolute one is read.
pub(super) fn read_text(xml: &str) -> Result<Vec<Definition>> {
    let mut reading = Reading {
        base: None,
        chain: Vec::new(),
    };
    reading.document(xml, None)
}

/// One top-level read: where relative hrefs go, and the files being read, outermost first
/// (an include of one of them again would never end).
struct Reading {
    base: Option<PathBuf>,
    chain: Vec<PathBuf>,
}

impl Reading {
    fn file(&mut self, path: &Path) -> Result<Vec<Definition>> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| invalid(format!("cannot read {}: {e}", path.display())))?;
        let key = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
        self.chain.push(key);
        let definitions = self.document(&text, Some(path));
        self.chain.pop();
        definitions
    }

    /// The definitions of one document (`path`: its file, if any), each with its own state, as
    /// Hadoop runs a parser of its own for each included file.
    fn document(&mut self, xml: &str, path: Option<&Path>) -> Result<Vec<Definition>> {
        // A document type declaration is read when it only names the root element and, in an
        // internal subset, declares elements or notations (or holds comments): roxmltree skips
        // those. Three kinds are refused here, before roxmltree sees the text, where Hadoop
        // reads them. An attribute list declaration: Hadoop's parser applies the default
        // attributes it declares, roxmltree does not. An entity declaration: Hadoop expands the entities (up
        // to 100,000 expansions), but roxmltree's expansion has no overall bound (10 levels,
        // 255 references under one reference, and any number of references at the top, each
        // appended at a cost that grows with the text so far): a 2 KB file took it 4 s, one of
        // 5 KB more than ten minutes. An external DTD (`SYSTEM "x.dtd"` or `PUBLIC … "x.dtd"`):
        // Hadoop reads that file (an error when it is missing) and applies its entities and
        // default attributes, roxmltree would silently ignore it; this client reads no file an
        // XML declaration names.
        document_type(xml).map_err(|why| invalid(format!("{}: {why}", label(path))))?;
        let options = roxmltree::ParsingOptions {
            allow_dtd: true,
            ..roxmltree::ParsingOptions::default()
        };
        let doc = roxmltree::Document::parse_with_options(xml, options).map_err(|e| {
            let why = match &e {
                roxmltree::Error::UnknownEntityReference(name, _) => format!(
                    "{e} (this client reads no entity but XML's own: &amp; &lt; &gt; &quot; \
                     &apos;; write the value itself, or `${{{name}}}` with a property named \
                     {name})"
                ),
                _ => e.to_string(),
            };
            match path {
                Some(p) => invalid(format!(
                    "{}: not a Hadoop configuration file: {why}",
                    p.display()
                )),
                None => invalid(format!("not a Hadoop configuration file: {why}")),
            }
        })?;
        let mut state = State::default();
        // Document order, as Hadoop's stream of events: a node is opened, its children are
        // walked, and it is closed (a stack, not recursion, however deep the elements go).
        let mut stack = vec![(doc.root(), false)];
        while let Some((node, closing)) = stack.pop() {
            if closing {
                state.end(node, path)?;
                continue;
            }
            if node.is_text() && state.collecting {
                state.token.push_str(node.text().unwrap_or_default());
            }
            if node.is_element() {
                self.start(&mut state, node, path)?;
                stack.push((node, true));
            }
            stack.extend(node.children().rev().map(|child| (child, false)));
        }
        Ok(state.definitions)
    }

    fn start(
        &mut self,
        state: &mut State,
        node: roxmltree::Node,
        path: Option<&Path>,
    ) -> Result<()> {
        match node.tag_name().name() {
            "property" => {
                state.name = None;
                state.value = None;
                state.is_final = false;
                for attr in node.attributes() {
                    match attr.name() {
                        "name" => state.name = Some(attr.value().to_string()),
                        "value" => state.value = Some(attr.value().to_string()),
                        "final" => state.is_final = attr.value() == "true",
                        _ => {}
                    }
                }
            }
            "name" | "value" | "final" | "source" | "tag" => {
                state.collecting = true;
                state.token.clear();
            }
            "include" => {
                let href = node
                    .attributes()
                    .rfind(|a| a.name() == "href")
                    .map(|a| a.value().to_string());
                state.href = href.clone();
                if let Some(href) = href {
                    self.include(state, &href, path)?;
                }
            }
            "fallback" => state.fallback_seen = true,
            _ => {}
        }
        Ok(())
    }

    /// Reads the file of `href` into `state`, or marks the include failed when it does not
    /// exist.
    fn include(&mut self, state: &mut State, href: &str, path: Option<&Path>) -> Result<()> {
        let including = || label(path);
        let target = match file_of(href) {
            Ok(target) => target,
            Err(why) => {
                return Err(invalid(format!(
                    "{}: cannot include {href:?}: {why}",
                    including()
                )))
            }
        };
        let target = if target.is_absolute() {
            target
        } else {
            match &self.base {
                Some(base) => base.join(target),
                None => {
                    return Err(invalid(format!(
                        "{}: cannot include {href:?}: a relative href needs the location of the \
                         file, which text has not (read the file with HbaseSite::load)",
                        including()
                    )))
                }
            }
        };
        if !target.exists() {
            state.include_failed = true;
            state.missing = Some(target);
            return Ok(());
        }
        let key = std::fs::canonicalize(&target).unwrap_or_else(|_| target.clone());
        if let Some(at) = self.chain.iter().position(|p| *p == key) {
            let mut files: Vec<String> = self.chain[at..]
                .iter()
                .map(|p| p.display().to_string())
                .collect();
            files.push(key.display().to_string());
            return Err(invalid(format!(
                "{}: cannot include {href:?}: an include loop ({}), which Hadoop follows until \
                 its stack overflows",
                including(),
                files.join(" includes ")
            )));
        }
        let definitions = self.file(&target)?;
        state.definitions.extend(definitions);
        Ok(())
    }
}

/// The parser's state within one document, Hadoop's: the property being read, the text being
/// collected, and the flags of the current include.
#[derive(Default)]
struct State {
    name: Option<String>,
    value: Option<String>,
    is_final: bool,
    token: String,
    collecting: bool,
    href: Option<String>,
    include_failed: bool,
    fallback_seen: bool,
    missing: Option<PathBuf>,
    definitions: Vec<Definition>,
}

impl State {
    fn end(&mut self, node: roxmltree::Node, path: Option<&Path>) -> Result<()> {
        match node.tag_name().name() {
            "name" if !self.token.is_empty() => self.name = Some(self.token.trim().to_string()),
            "value" if !self.token.is_empty() => self.value = Some(self.token.clone()),
            "final" => self.is_final = self.token == "true",
            "include" => {
                if self.include_failed && !self.fallback_seen {
                    let href = self.href.as_deref().unwrap_or_default();
                    let missing = self.missing.as_deref().unwrap_or(Path::new(href));
                    let including = label(path);
                    return Err(invalid(format!(
                        "{including}: cannot include {href:?}: {} does not exist, and the \
                         include has no <xi:fallback>",
                        missing.display()
                    )));
                }
                self.include_failed = false;
                self.fallback_seen = false;
            }
            "property" => {
                // A fallback's definitions count only when its include failed.
                let dropped = self.fallback_seen && !self.include_failed;
                if let (Some(name), false) = (&self.name, dropped) {
                    self.definitions.push(Definition {
                        name: name.clone(),
                        value: self.value.clone(),
                        is_final: self.is_final,
                    });
                }
            }
            _ => {}
        }
        Ok(())
    }
}

/// Whether the `<!DOCTYPE …>` of `xml`, if it has one, is one this client reads (see
/// `Reading::document`): why not, when it declares an entity or an attribute list, or names an
/// external DTD.
///
/// Attribute lists: refused as entities are (anywhere in a document with a `<!DOCTYPE>`), as
/// Hadoop applies the default values they declare and roxmltree does not; one without a
/// default (`#IMPLIED`) is refused too, a false refusal the error makes plain.
///
/// Entities: any `<!ENTITY` in a document that has a `<!DOCTYPE` counts, wherever it is, even
/// in a comment (a false refusal, which the error makes plain). A scan of the internal subset
/// alone would have to skip what roxmltree skips, and it skips an element or attribute list
/// declaration to its `>`, quotes included (`<!ELEMENT x '>` is read), where a scan that
/// skipped quoted text would miss the declarations after it.
///
/// An external DTD: the declaration is looked for in the prolog (after the XML declaration,
/// comments and processing instructions), and anything after the root element's name before
/// the internal subset or the end is an external ID. Text that is not XML is left to
/// roxmltree's parser to refuse.
fn document_type(xml: &str) -> std::result::Result<(), String> {
    if xml.contains("<!DOCTYPE") && xml.contains("<!ENTITY") {
        return Err(
            "its <!DOCTYPE> declares entities (<!ENTITY …>, counted anywhere in the file, a \
             comment too), and entity declarations are not read by this client (Hadoop expands \
             the entities; their expansion is not bounded here): write the value itself, or a \
             ${name} reference to a property holding it"
                .into(),
        );
    }
    if xml.contains("<!DOCTYPE") && xml.contains("<!ATTLIST") {
        return Err(
            "its <!DOCTYPE> declares attribute lists (<!ATTLIST …>, counted anywhere in the \
             file, a comment too), whose default values Hadoop applies (a default `final` makes \
             every property final) and this client's parser does not: remove them, and write \
             the attributes on the elements themselves"
                .into(),
        );
    }
    let is_space = |c: char| matches!(c, ' ' | '\t' | '\r' | '\n');
    let mut rest = xml.strip_prefix('\u{feff}').unwrap_or(xml);
    // The XML declaration, comments and processing instructions before the document type.
    loop {
        rest = rest.trim_start_matches(is_space);
        let (open, close) = if rest.starts_with("<!--") {
            ("<!--", "-->")
        } else if rest.starts_with("<?") {
            ("<?", "?>")
        } else {
            break;
        };
        match rest[open.len()..].find(close) {
            Some(at) => rest = &rest[open.len() + at + close.len()..],
            None => return Ok(()),
        }
    }
    let Some(declaration) = rest.strip_prefix("<!DOCTYPE") else {
        return Ok(());
    };
    // The root element's name and any external ID, up to the internal subset or the end.
    let header_end = declaration.find(['[', '>']).unwrap_or(declaration.len());
    let header = &declaration[..header_end];
    let mut words = header.split(is_space).filter(|w| !w.is_empty());
    let root = words.next().unwrap_or("configuration");
    if words.next().is_some() {
        return Err(format!(
            "its <!DOCTYPE{}> names an external DTD, which Hadoop reads (an error when the file \
             is missing; its entities and default attributes applied), and this client reads no \
             file an XML declaration names: write <!DOCTYPE {root}>, or none",
            header.trim_end_matches(is_space),
        ));
    }
    Ok(())
}

/// What an error calls the document at `path` (none: the text given to `parse`).
fn label(path: Option<&Path>) -> String {
    path.map_or("the text given to HbaseSite::parse".into(), |p| {
        p.display().to_string()
    })
}

/// The URL schemes Java reads by itself (`new URL(href)` knows them); any other href is a path,
/// as Hadoop takes it.
const URL_SCHEMES: [&str; 6] = ["http", "https", "ftp", "jar", "jrt", "mailto"];

/// The path an href names: a path, or a `file:` URL (`file:/p`, `file:///p`,
/// `file://localhost/p`, with `%XX` escapes). Other URLs Hadoop would fetch are refused.
fn file_of(href: &str) -> std::result::Result<PathBuf, String> {
    let scheme = href
        .split_once(':')
        .map(|(s, _)| s)
        .filter(|s| {
            let mut chars = s.chars();
            chars.next().is_some_and(|c| c.is_ascii_alphabetic())
                && chars.all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
        })
        .map(str::to_ascii_lowercase);
    match scheme.as_deref() {
        Some("file") => {
            let rest = &href["file:".len()..];
            let rest = match rest.strip_prefix("//") {
                Some(authority_and_path) => {
                    let at = authority_and_path
                        .find('/')
                        .unwrap_or(authority_and_path.len());
                    let host = &authority_and_path[..at];
                    if !host.is_empty() && !host.eq_ignore_ascii_case("localhost") {
                        return Err(format!(
                            "a file: URL of another host ({host}) is not read, only local files"
                        ));
                    }
                    &authority_and_path[at..]
                }
                None => rest,
            };
            if !rest.starts_with('/') {
                return Err("a file: URL names an absolute path here".into());
            }
            percent_decoded(rest).map(PathBuf::from)
        }
        Some(s) if URL_SCHEMES.contains(&s) => Err(format!(
            "only files are included (a path or a file: URL), not {s}: URLs, which Hadoop would \
             fetch"
        )),
        _ => Ok(PathBuf::from(href)),
    }
}

/// `%XX` escapes decoded (UTF-8), as Java decodes a `file:` URL's path.
fn percent_decoded(s: &str) -> std::result::Result<String, String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = s
                .get(i + 1..i + 3)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .ok_or_else(|| format!("a bad %-escape in the file: URL path {s:?}"))?;
            out.push(hex);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| format!("the file: URL path {s:?} is not UTF-8"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hrefs_name_files() {
        assert_eq!(file_of("a/b.xml").unwrap(), PathBuf::from("a/b.xml"));
        assert_eq!(file_of("/etc/b.xml").unwrap(), PathBuf::from("/etc/b.xml"));
        assert_eq!(
            file_of("file:/etc/b.xml").unwrap(),
            PathBuf::from("/etc/b.xml")
        );
        assert_eq!(
            file_of("file:///etc/a%20b.xml").unwrap(),
            PathBuf::from("/etc/a b.xml")
        );
        assert_eq!(
            file_of("FILE://localhost/etc/b.xml").unwrap(),
            PathBuf::from("/etc/b.xml")
        );
        // Not a scheme Java knows: a path, as Hadoop takes it.
        assert_eq!(file_of("conf:x.xml").unwrap(), PathBuf::from("conf:x.xml"));
        for refused in [
            "http://h/x.xml",
            "HTTPS://h/x.xml",
            "jar:file:/a.jar!/x.xml",
            "file://otherhost/x.xml",
            "file:x.xml",
            "file:/a%2",
        ] {
            assert!(file_of(refused).is_err(), "{refused}");
        }
    }
}
