//! The `xml` type and XPath, as PostgreSQL has them: a value is kept as its text once it
//! is checked to be well-formed XML content (PostgreSQL's default `XMLOPTION CONTENT`:
//! text and elements, any number of them); `xpath()` evaluates XPath 1.0 over a document
//! and returns the matching nodes as XML text.
//!
//! The crate: `sxd-document` / `sxd-xpath`, pure Rust XML and XPath 1.0. PostgreSQL's
//! `xpath()` is libxml2's XPath 1.0, so XPath 1.0 is the language users expect (a 2.0/3.1
//! engine such as `xee-xpath` answers some expressions differently, e.g. `1 div 0`), and
//! a pure-Rust crate keeps the build free of a system library. Written here: serializing
//! a result node back to XML text, which the crate does only for whole documents.

use brook_common::{brook_err, BrookError, Result};
use sxd_document::dom::{ChildOfElement, ChildOfRoot, Element};
use sxd_document::parser;
use sxd_document::Package;
use sxd_xpath::nodeset::Node;
use sxd_xpath::{Context, Factory, Value};

/// The name of the element content is wrapped in to be checked as one document.
const WRAPPER: &str = "brook-xml-content";

/// Deepest element nesting read, and most attributes on one element: past them a value is
/// not well-formed here (the crate's parser costs the square of either, so a 700 KB value
/// nested 100,000 deep took minutes; libxml2 stops at 256 levels by default).
const MAX_DEPTH: usize = 1024;
const MAX_ATTRIBUTES: usize = 4096;

/// Why text was not read as XML.
enum Problem {
    /// Not well-formed (or past the limits above).
    Malformed,
    /// Well-formed, perhaps, but with a part Brook does not read.
    Unsupported(&'static str),
}

/// Checks that `text` is well-formed XML content (2200N otherwise; 0A000 for a DOCTYPE
/// with entity declarations).
pub fn check_content(text: &str) -> Result<()> {
    match content(text) {
        Ok(_) => Ok(()),
        Err(Problem::Malformed) => Err(brook_err!(
            InvalidXmlContent,
            "invalid XML content: \"{}\"",
            shortened(text)
        )),
        Err(Problem::Unsupported(what)) => Err(brook_err!(Unsupported, "{what}")),
    }
}

/// Whether `text` is well-formed XML content: an optional XML declaration and DOCTYPE,
/// then text, elements, comments and processing instructions in any number.
pub fn is_content(text: &str) -> bool {
    content(text).is_ok()
}

/// Whether `text` is one well-formed XML document.
pub fn is_document(text: &str) -> bool {
    document(text).is_ok()
}

fn content(text: &str) -> std::result::Result<Package, Problem> {
    let body = without_doctype(without_declaration(text))?;
    parse(&body, &format!("<{WRAPPER}>{body}</{WRAPPER}>"))
}

fn document(text: &str) -> std::result::Result<Package, Problem> {
    let t = text.trim_start();
    let rest = without_declaration(t);
    let declaration = &t[..t.len() - rest.len()];
    let body = without_doctype(rest)?;
    parse(&body, &format!("{declaration}{body}"))
}

/// The crate's parse of `text`, once `body` (its elements) is within the limits.
fn parse(body: &str, text: &str) -> std::result::Result<Package, Problem> {
    if !within_limits(body) {
        return Err(Problem::Malformed);
    }
    parser::parse(text).map_err(|_| Problem::Malformed)
}

/// Whether `text`'s elements nest at most [`MAX_DEPTH`] deep with at most
/// [`MAX_ATTRIBUTES`] attributes each: one pass over the bytes, counting tags (comments,
/// CDATA sections and processing instructions skipped; the parse itself checks the rest).
fn within_limits(text: &str) -> bool {
    let b = text.as_bytes();
    let (mut depth, mut i) = (0usize, 0usize);
    while let Some(at) = b[i..].iter().position(|&c| c == b'<') {
        i += at + 1;
        let rest = &b[i..];
        let skip_to = |end: &[u8]| {
            rest.windows(end.len())
                .position(|w| w == end)
                .map(|p| p + end.len())
        };
        let skipped = if rest.starts_with(b"!--") {
            skip_to(b"-->")
        } else if rest.starts_with(b"![CDATA[") {
            skip_to(b"]]>")
        } else if rest.starts_with(b"?") || rest.starts_with(b"!") {
            skip_to(b">")
        } else if rest.starts_with(b"/") {
            depth = depth.saturating_sub(1);
            skip_to(b">")
        } else {
            // An open tag: its attributes, then `>` or `/>`, quotes respected.
            let (mut quote, mut attributes, mut end) = (None, 0usize, None);
            for (k, &c) in rest.iter().enumerate() {
                match (quote, c) {
                    (Some(q), c) if c == q => quote = None,
                    (Some(_), _) => {}
                    (None, b'"' | b'\'') => quote = Some(c),
                    (None, b'=') => attributes += 1,
                    (None, b'>') => {
                        end = Some(k + 1);
                        break;
                    }
                    _ => {}
                }
            }
            if attributes > MAX_ATTRIBUTES {
                return false;
            }
            if let Some(e) = end {
                if e < 2 || rest[e - 2] != b'/' {
                    depth += 1;
                    if depth > MAX_DEPTH {
                        return false;
                    }
                }
            }
            end
        };
        match skipped {
            Some(n) => i += n,
            None => return true,
        }
    }
    true
}

fn without_declaration(text: &str) -> &str {
    let t = text.trim_start();
    if t.starts_with("<?xml") && t[5..].starts_with(|c: char| c.is_whitespace()) {
        if let Some(end) = t.find("?>") {
            return &t[end + 2..];
        }
    }
    text
}

/// `text` without its DOCTYPE declaration, which PostgreSQL accepts in content and
/// documents and the crate's parser does not read. One with an internal subset (`[...]`:
/// entity declarations, which would change the text it stands for) is refused by name.
fn without_doctype(text: &str) -> std::result::Result<String, Problem> {
    let Some(start) = text.find("<!DOCTYPE") else {
        return Ok(text.to_string());
    };
    let rest = &text[start..];
    let mut quote = None;
    for (k, c) in rest.char_indices() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '"' | '\'') => quote = Some(c),
            (None, '[') => {
                return Err(Problem::Unsupported(
                    "a DOCTYPE with an internal subset (entity declarations) is not supported",
                ))
            }
            (None, '>') => {
                return Ok(format!("{}{}", &text[..start], &rest[k + 1..]));
            }
            _ => {}
        }
    }
    Err(Problem::Malformed)
}

fn shortened(text: &str) -> String {
    let mut s: String = text.chars().take(60).collect();
    if s.len() < text.len() {
        s.push_str("...");
    }
    s
}

/// `xpath(path, doc, namespaces)`: the result of XPath 1.0 `path` over the document `doc`
/// as PostgreSQL gives it — each node of a node-set as XML text in document order (an
/// attribute or text node as its escaped value), or the one string, number or boolean.
pub fn xpath(path: &str, doc: &str, namespaces: &[(String, String)]) -> Result<Vec<String>> {
    evaluate(path, doc, namespaces, |value| match value {
        Value::Nodeset(nodes) => nodes
            .document_order()
            .into_iter()
            .map(|n| {
                let mut out = String::new();
                write_node(&mut out, n);
                out
            })
            .collect(),
        Value::Boolean(b) => vec![b.to_string()],
        Value::Number(n) => vec![number_text(n)],
        Value::String(s) => vec![escaped(&s, false)],
    })
}

/// `xpath_exists(path, doc, namespaces)`: whether a node-set result has a node; a string,
/// number or boolean result counts as found whatever its value, as in PostgreSQL.
pub fn xpath_exists(path: &str, doc: &str, namespaces: &[(String, String)]) -> Result<bool> {
    evaluate(path, doc, namespaces, |value| match value {
        Value::Nodeset(nodes) => nodes.size() > 0,
        _ => true,
    })
}

/// `path` evaluated over the document `doc`, its value handed to `result`.
fn evaluate<T>(
    path: &str,
    doc: &str,
    namespaces: &[(String, String)],
    result: impl FnOnce(Value<'_>) -> T,
) -> Result<T> {
    let package = document(doc).map_err(|p| match p {
        Problem::Unsupported(what) => brook_err!(Unsupported, "{what}"),
        Problem::Malformed => brook_err!(
            InvalidXmlDocument,
            "could not parse XML document: \"{}\"",
            shortened(doc)
        ),
    })?;
    check_xpath_depth(path)?;
    let document = package.as_document();
    for child in document.root().children() {
        if let ChildOfRoot::Element(e) = child {
            merge_text(e);
        }
    }
    // The crate panics on a prefix no namespace is bound to ("No namespace for prefix"):
    // such a prefix is the expression's error before evaluation, and a panic that still
    // comes is caught and reported as the expression's error, not the server's.
    if let Some(prefix) = unbound_prefix(path, namespaces) {
        return Err(unbound(&prefix));
    }
    let evaluated = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let compiled = Factory::new()
            .build(path)
            .map_err(|e| brook_err!(InvalidXPath, "invalid XPath expression: {e}"))?
            .ok_or_else(|| brook_err!(InvalidXPath, "empty XPath expression"))?;
        let mut context = Context::new();
        context.set_namespace("xml", "http://www.w3.org/XML/1998/namespace");
        for (prefix, uri) in namespaces {
            context.set_namespace(prefix, uri);
        }
        compiled
            .evaluate(&context, document.root())
            .map_err(|e| brook_err!(InvalidXPath, "could not evaluate XPath expression: {e}"))
    }));
    let value = match evaluated {
        Ok(value) => value?,
        Err(_) => return Err(unbound("")),
    };
    Ok(result(value))
}

/// 10608: the XPath expression uses a namespace `prefix` no namespace is bound to.
fn unbound(prefix: &str) -> BrookError {
    brook_err!(
        InvalidXPath,
        "invalid XPath expression: namespace prefix \"{prefix}\" is not bound (pass it in \
         the namespace array)"
    )
}

/// The first namespace prefix of `path` (a name before one `:`, outside string literals;
/// `::` is an axis) that neither `namespaces` nor `xml` binds.
fn unbound_prefix(path: &str, namespaces: &[(String, String)]) -> Option<String> {
    let chars: Vec<char> = path.chars().collect();
    let name_char = |c: char| c.is_alphanumeric() || matches!(c, '_' | '-' | '.');
    let mut quote = None;
    for (i, &c) in chars.iter().enumerate() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '"' | '\'') => quote = Some(c),
            (None, ':') => {
                let axis = chars.get(i + 1) == Some(&':') || (i > 0 && chars[i - 1] == ':');
                let start = chars[..i]
                    .iter()
                    .rposition(|c| !name_char(*c))
                    .map_or(0, |p| p + 1);
                let prefix: String = chars[start..i].iter().collect();
                // `$ns:x` is a variable's name, not an element's.
                let variable = start > 0 && chars[start - 1] == '$';
                let bound = prefix == "xml" || namespaces.iter().any(|(p, _)| *p == prefix);
                if !axis && !variable && !prefix.is_empty() && !bound {
                    return Some(prefix);
                }
            }
            _ => {}
        }
    }
    None
}

/// XPath expressions nest at most this deep (parentheses and brackets): the crate's
/// parser recurses per level, and a 200 KB expression of nested parentheses overflowed
/// the statement's stack.
const MAX_XPATH_DEPTH: usize = 256;

fn check_xpath_depth(path: &str) -> Result<()> {
    let (mut depth, mut deepest, mut quote) = (0usize, 0usize, None);
    for c in path.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '"' | '\'') => quote = Some(c),
            (None, '(' | '[') => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            (None, ')' | ']') => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    if deepest > MAX_XPATH_DEPTH {
        return Err(BrookError::too_complex(format!(
            "XPath expression nested more than {MAX_XPATH_DEPTH} levels deep"
        )));
    }
    Ok(())
}

/// Adjacent text nodes merged into one, as libxml2 keeps them: the crate's parser splits
/// text at each entity or character reference (`t&lt;u` was three text nodes, so
/// `text()` gave three values).
fn merge_text(e: Element<'_>) {
    let mut previous: Option<sxd_document::dom::Text<'_>> = None;
    for child in e.children() {
        match child {
            ChildOfElement::Text(t) => match previous {
                Some(p) => {
                    p.set_text(&format!("{}{}", p.text(), t.text()));
                    e.remove_child(t);
                }
                None => previous = Some(t),
            },
            ChildOfElement::Element(c) => {
                previous = None;
                merge_text(c);
            }
            _ => previous = None,
        }
    }
}

/// An XPath number as libxml2 prints it: integers without a fraction, at most 15
/// significant decimals, `NaN`, `Infinity`.
fn number_text(n: f64) -> String {
    if n.is_nan() {
        return "NaN".into();
    }
    if n.is_infinite() {
        return if n > 0.0 { "Infinity" } else { "-Infinity" }.into();
    }
    if n.fract() == 0.0 && n.abs() < 1e15 {
        return format!("{}", n as i64);
    }
    let s = format!("{n:.15}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

fn write_node(out: &mut String, node: Node<'_>) {
    match node {
        Node::Root(root) => {
            for child in root.children() {
                match child {
                    ChildOfRoot::Element(e) => write_element(out, e),
                    ChildOfRoot::Comment(c) => write_comment(out, c.text()),
                    ChildOfRoot::ProcessingInstruction(p) => write_pi(out, p.target(), p.value()),
                }
            }
        }
        Node::Element(e) => write_element(out, e),
        Node::Attribute(a) => out.push_str(&escaped(a.value(), false)),
        Node::Text(t) => out.push_str(&escaped(t.text(), false)),
        Node::Comment(c) => write_comment(out, c.text()),
        Node::ProcessingInstruction(p) => write_pi(out, p.target(), p.value()),
        Node::Namespace(ns) => out.push_str(&escaped(ns.uri(), false)),
    }
}

fn write_element(out: &mut String, e: Element<'_>) {
    let name = qualified(e.preferred_prefix(), e.name().local_part());
    out.push('<');
    out.push_str(&name);
    for a in e.attributes() {
        out.push(' ');
        out.push_str(&qualified(a.preferred_prefix(), a.name().local_part()));
        out.push_str("=\"");
        out.push_str(&escaped(a.value(), true));
        out.push('"');
    }
    let children = e.children();
    if children.is_empty() {
        out.push_str("/>");
        return;
    }
    out.push('>');
    for child in children {
        match child {
            ChildOfElement::Element(c) => write_element(out, c),
            ChildOfElement::Text(t) => out.push_str(&escaped(t.text(), false)),
            ChildOfElement::Comment(c) => write_comment(out, c.text()),
            ChildOfElement::ProcessingInstruction(p) => write_pi(out, p.target(), p.value()),
        }
    }
    out.push_str("</");
    out.push_str(&name);
    out.push('>');
}

fn qualified(prefix: Option<&str>, local: &str) -> String {
    match prefix {
        Some(p) => format!("{p}:{local}"),
        None => local.to_string(),
    }
}

fn write_comment(out: &mut String, text: &str) {
    out.push_str("<!--");
    out.push_str(text);
    out.push_str("-->");
}

fn write_pi(out: &mut String, target: &str, value: Option<&str>) {
    out.push_str("<?");
    out.push_str(target);
    if let Some(v) = value {
        out.push(' ');
        out.push_str(v);
    }
    out.push_str("?>");
}

/// Text escaped for XML: `&`, `<`, `>` (and `"` in an attribute value).
fn escaped(text: &str, attribute: bool) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' if attribute => out.push_str("&quot;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(path: &str, doc: &str) -> Vec<String> {
        xpath(path, doc, &[]).unwrap()
    }

    #[test]
    fn content_is_checked_as_postgresql_checks_it() {
        for ok in [
            "<a/>",
            "abc",
            "abc<a>x</a><b/>",
            "<?xml version=\"1.0\"?><a/>",
            "",
        ] {
            assert!(is_content(ok), "{ok}");
        }
        for bad in ["<a>", "<a></b>", "a & b", "<a x=1/>"] {
            assert_eq!(check_content(bad).unwrap_err().sqlstate(), "2200N", "{bad}");
        }
        assert!(is_document("<a><b/></a>"));
        assert!(!is_document("abc") && !is_document("<a/><b/>"));
    }

    #[test]
    fn nodes_come_back_as_xml_text_in_document_order() {
        let doc = r#"<a><b x="1&amp;2">t&lt;u</b><b/><!--c--></a>"#;
        assert_eq!(at("//b", doc), vec![r#"<b x="1&amp;2">t&lt;u</b>"#, "<b/>"]);
        assert_eq!(at("//b/@x", doc), vec!["1&amp;2"]);
        assert_eq!(at("//b/text()", doc), vec!["t&lt;u"]);
        assert_eq!(at("//comment()", doc), vec!["<!--c-->"]);
        assert_eq!(at("/", "<a><b/></a>"), vec!["<a><b/></a>"]);
        assert!(at("//z", doc).is_empty());
    }

    #[test]
    fn values_are_one_element() {
        assert_eq!(at("count(//b)", "<a><b/><b/></a>"), vec!["2"]);
        assert_eq!(at("1 div 4", "<a/>"), vec!["0.25"]);
        assert_eq!(at("1 div 0", "<a/>"), vec!["Infinity"]);
        assert_eq!(at("//b = 1", "<a><b>1</b></a>"), vec!["true"]);
        assert_eq!(at("string(//b)", "<a><b>x</b></a>"), vec!["x"]);
    }

    #[test]
    fn namespaces_and_errors() {
        let ns = [("my".to_string(), "http://example.com".to_string())];
        let doc = r#"<my:a xmlns:my="http://example.com">test</my:a>"#;
        assert_eq!(xpath("/my:a/text()", doc, &ns).unwrap(), vec!["test"]);
        assert_eq!(xpath("//a[", "<a/>", &[]).unwrap_err().sqlstate(), "10608");
        assert_eq!(xpath("//a", "abc", &[]).unwrap_err().sqlstate(), "2200M");
        assert!(xpath_exists("//a", "<a/>", &[]).unwrap());
        assert!(!xpath_exists("//b", "<a/>", &[]).unwrap());
        // a scalar result counts as found, whatever its value (PostgreSQL's rule)
        assert!(xpath_exists("1 = 2", "<a/>", &[]).unwrap());
        // an unbound prefix is the expression's error (the crate panics); xml is bound
        assert_eq!(xpath("/x:a", "<a/>", &[]).unwrap_err().sqlstate(), "10608");
        assert_eq!(unbound_prefix("/x:a", &[]).as_deref(), Some("x"));
        assert_eq!(unbound_prefix("//my:b/@y:c", &ns).as_deref(), Some("y"));
        // axes, string literals and bound prefixes are no unbound prefixes
        assert_eq!(unbound_prefix("child::a[. = 'p:q']/@xml:lang", &[]), None);
        assert_eq!(unbound_prefix("/my:a", &ns), None);
        assert_eq!(
            xpath("//@xml:lang", r#"<a xml:lang="en"/>"#, &[]).unwrap(),
            vec!["en"]
        );
        let deep = format!("{}1{}", "(".repeat(300), ")".repeat(300));
        assert_eq!(xpath(&deep, "<a/>", &[]).unwrap_err().sqlstate(), "54001");
    }

    #[test]
    fn doctypes_and_limits() {
        assert!(is_content("<!DOCTYPE a><a/>") && is_document("<!DOCTYPE a><a/>"));
        assert!(is_document(
            "<?xml version=\"1.0\"?>\n<!DOCTYPE a SYSTEM \"a.dtd\"><a/>"
        ));
        assert_eq!(
            check_content("<!DOCTYPE a [<!ENTITY e \"hi\">]><a>&e;</a>")
                .unwrap_err()
                .sqlstate(),
            "0A000"
        );
        let nested = |n: usize| format!("{}{}", "<a>".repeat(n), "</a>".repeat(n));
        assert!(is_content(&nested(MAX_DEPTH)));
        assert!(!is_content(&nested(MAX_DEPTH + 1)));
        let attributes: String = (0..=MAX_ATTRIBUTES).map(|i| format!(" a{i}='1'")).collect();
        assert!(!is_content(&format!("<a{attributes}/>")));
    }
}
