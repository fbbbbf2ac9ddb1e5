//! Guards against import circles between a crate's modules (STYLE.md, "what to grow
//! out of"), such as the one that ran through the server from `state` through the
//! OpenAPI document, the settings routes and the config back to `state`. Each crate
//! runs [`assert_no_circles`] on itself in its own tests.
//!
//! Reads every source file under `src/`, takes each path that names a module of the
//! crate (`crate::…` and `super::…`, in `use` declarations and in code; comments are
//! left out), and checks that the modules under the crate root, and the children of
//! each folder module, import each other without a circle. The crate root is `lib.rs`
//! or `main.rs`; where both are there (a library with its binary), both are read as
//! the root, which holds while the binary declares no modules of its own. A module's
//! use of its own ancestors (a folder's `mod.rs`, the crate root) is not an edge: they
//! are its context, as its parent's `mod` and `use` of it are theirs. Test code is left
//! out: `#[cfg(test)]` modules, inline or in a file of their own.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// A module's path from the crate root (`["config", "access"]`; the root is empty).
type Module = Vec<String>;

/// A source file: its module and its code without comments and tests.
struct Source {
    module: Module,
    code: String,
}

/// Fails the test, naming each circle, where the modules of the crate whose manifest
/// is in `crate_dir` (`env!("CARGO_MANIFEST_DIR")`) import each other in a circle.
pub fn assert_no_circles(crate_dir: &str) {
    let src_dir = Path::new(crate_dir).join("src");
    let circles = circles(&src_dir);
    let lines: Vec<String> = circles.iter().map(|circle| circle.join(" -> ")).collect();
    assert!(lines.is_empty(), "import circles in {}:\n{}", src_dir.display(), lines.join("\n"));
}

/// The import circles among the modules of the crate in `src_dir`: one for each folder
/// module (the root included) whose children import each other in a circle, as the
/// paths of the modules along it (`["config::a", "config::b", "config::a"]`).
///
/// Panics where `src_dir` holds no crate root (`lib.rs` or `main.rs`).
pub fn circles(src_dir: &Path) -> Vec<Vec<String>> {
    let roots = ["lib.rs", "main.rs"];
    assert!(
        roots.iter().any(|root| src_dir.join(root).is_file()),
        "{} holds no crate root (lib.rs or main.rs)",
        src_dir.display()
    );
    let graphs = graphs(&sources(src_dir));
    graphs
        .iter()
        .filter_map(|(folder, edges)| {
            let found = circle(edges)?;
            Some(found.into_iter().map(|child| [folder.clone(), vec![child]].concat().join("::")).collect())
        })
        .collect()
}

/// Every module's source under `src_dir`, test modules of their own file left out.
fn sources(src_dir: &Path) -> Vec<Source> {
    let mut files = Vec::new();
    collect(src_dir, src_dir, &mut files);
    let mut sources = Vec::new();
    let mut test_files = BTreeSet::new();
    for (module, text) in &files {
        let (code, test_children) = code_of(text);
        test_files.extend(test_children.into_iter().map(|child| [module.clone(), vec![child]].concat()));
        sources.push(Source { module: module.clone(), code });
    }
    sources.retain(|s| !test_files.contains(&s.module));
    sources
}

fn collect(root: &Path, dir: &Path, files: &mut Vec<(Module, String)>) {
    for entry in std::fs::read_dir(dir).expect("src/ is readable") {
        let path = entry.expect("src/ is readable").path();
        if path.is_dir() {
            collect(root, &path, files);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let relative = path.strip_prefix(root).expect("under src/").with_extension("");
            let mut module: Module = relative.iter().map(|s| s.to_string_lossy().into_owned()).collect();
            if matches!(module.last().map(String::as_str), Some("mod" | "lib" | "main")) {
                module.pop();
            }
            files.push((module, std::fs::read_to_string(&path).expect("a source file is text")));
        }
    }
}

/// The code of a file without comments, the contents of its literals and its
/// `#[cfg(test)]` modules; and the child modules it declares for tests only
/// (`#[cfg(test)] mod tests;`).
fn code_of(text: &str) -> (String, Vec<String>) {
    let mut code = String::new();
    let mut test_children = Vec::new();
    let mut at = 0;
    while at < text.len() {
        let rest = &text[at..];
        if let Some(item) = rest.strip_prefix("#[cfg(test)]") {
            // The item it marks: up to its `;` (`mod tests;`, `use …;`) or its block.
            let item_at = rest.len() - item.len();
            let semicolon = item.find(';').unwrap_or(item.len());
            if item.find('{').is_none_or(|brace| semicolon < brace) {
                let declared = item[..semicolon].trim().strip_prefix("mod ");
                test_children.extend(declared.map(str::to_owned));
                at += item_at + semicolon + 1;
            } else {
                at += item_at + block_len(item);
            }
            continue;
        }
        match piece(rest, text[..at].chars().next_back()) {
            Piece::Comment(len) => at += len,
            Piece::Literal(len) => {
                code.push_str("\"\"");
                at += len;
            }
            Piece::Char(c) => {
                code.push(c);
                at += c.len_utf8();
            }
        }
    }
    (code, test_children)
}

/// What `rest` starts with, as far as finding code goes.
enum Piece {
    /// A comment of this many bytes.
    Comment(usize),
    /// A string or character literal of this many bytes.
    Literal(usize),
    /// Any other character.
    Char(char),
}

/// The piece `rest` starts with; `before` is the character before it.
fn piece(rest: &str, before: Option<char>) -> Piece {
    if rest.starts_with("//") {
        return Piece::Comment(rest.find('\n').unwrap_or(rest.len()));
    }
    if rest.starts_with("/*") {
        return Piece::Comment(rest.find("*/").map_or(rest.len(), |end| end + 2));
    }
    let starts_token = !before.is_some_and(|c| c.is_alphanumeric() || c == '_');
    let unprefixed = rest.strip_prefix('b').filter(|_| starts_token).unwrap_or(rest);
    let prefix = rest.len() - unprefixed.len();
    if let Some(raw) = unprefixed.strip_prefix('r').filter(|_| starts_token) {
        let hashes = raw.len() - raw.trim_start_matches('#').len();
        if raw[hashes..].starts_with('"') {
            let close = format!("\"{}", "#".repeat(hashes));
            let end = raw[hashes + 1..].find(&close).map_or(raw.len(), |e| hashes + 1 + e + close.len());
            return Piece::Literal(prefix + 1 + end);
        }
    }
    if let Some(string) = unprefixed.strip_prefix('"') {
        let mut chars = string.char_indices();
        while let Some((i, c)) = chars.next() {
            match c {
                '\\' => {
                    chars.next();
                }
                '"' => return Piece::Literal(prefix + 1 + i + 1),
                _ => {}
            }
        }
        return Piece::Literal(rest.len());
    }
    if let Some(quoted) = unprefixed.strip_prefix('\'') {
        // A character literal ('x', '\n', '\''), not a lifetime ('a).
        let mut chars = quoted.char_indices();
        let len = match chars.next() {
            Some((_, '\\')) => quoted.get(2..).and_then(|q| q.find('\'')).map(|end| 2 + end + 1),
            Some((_, c)) if quoted[c.len_utf8()..].starts_with('\'') => Some(c.len_utf8() + 1),
            _ => None,
        };
        if let Some(len) = len {
            return Piece::Literal(prefix + 1 + len);
        }
    }
    Piece::Char(rest.chars().next().unwrap_or_default())
}

/// The length of `rest` up to the end of the first block it opens (`{ … }`).
fn block_len(rest: &str) -> usize {
    let (mut at, mut depth) = (0, 0_usize);
    while at < rest.len() {
        match piece(&rest[at..], rest[..at].chars().next_back()) {
            Piece::Comment(len) | Piece::Literal(len) => at += len,
            Piece::Char(c) => {
                at += c.len_utf8();
                match c {
                    '{' => depth += 1,
                    '}' if depth == 1 => return at,
                    '}' => depth = depth.saturating_sub(1),
                    _ => {}
                }
            }
        }
    }
    rest.len()
}

/// The absolute paths `code`, in module `module`, names through `crate::` or `super::`.
fn references(module: &Module, code: &str) -> Vec<Module> {
    let mut paths = Vec::new();
    for anchor in ["crate::", "super::"] {
        for (at, _) in code.match_indices(anchor) {
            let before = code[..at].chars().next_back();
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
                continue;
            }
            let base = if anchor == "crate::" { Vec::new() } else { module[..module.len().saturating_sub(1)].to_vec() };
            let mut tree = Tree { text: &code[at + anchor.len()..], at: 0 };
            tree.paths(base, &mut paths);
        }
    }
    paths
}

/// A reader of one use tree (`a::b`, `a::{b, c::{d, e}}`, `super::c`), or of the path
/// of an expression (`a::b::f(…)`): every full path it names.
struct Tree<'a> {
    text: &'a str,
    at: usize,
}

impl Tree<'_> {
    fn paths(&mut self, mut prefix: Module, out: &mut Vec<Module>) {
        loop {
            self.skip_space();
            if self.eat("{") {
                loop {
                    self.skip_space();
                    if self.eat("}") {
                        return;
                    }
                    self.paths(prefix.clone(), out);
                    self.skip_space();
                    self.eat(",");
                }
            }
            let ident: String = self.text[self.at..].chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
            self.at += ident.len();
            match ident.as_str() {
                "" | "self" => {}
                "super" => {
                    prefix.pop();
                }
                _ => prefix.push(ident),
            }
            if !self.eat("::") {
                out.push(prefix);
                return;
            }
        }
    }

    fn eat(&mut self, token: &str) -> bool {
        let found = self.text[self.at..].starts_with(token);
        if found {
            self.at += token.len();
        }
        found
    }

    fn skip_space(&mut self) {
        self.at += self.text[self.at..].len() - self.text[self.at..].trim_start().len();
    }
}

/// For each folder module (the root included), the edges between its children: `a`
/// imports from `b`.
fn graphs(sources: &[Source]) -> BTreeMap<Module, BTreeMap<String, BTreeSet<String>>> {
    let modules: BTreeSet<&Module> = sources.iter().map(|s| &s.module).collect();
    let mut graphs: BTreeMap<Module, BTreeMap<String, BTreeSet<String>>> = BTreeMap::new();
    for source in sources {
        for path in references(&source.module, &source.code) {
            // The module the path names: its longest prefix that is a module.
            let Some(target) = (0..=path.len()).rev().map(|n| path[..n].to_vec()).find(|m| modules.contains(m)) else {
                continue;
            };
            let common = source.module.iter().zip(&target).take_while(|(a, b)| a == b).count();
            // An ancestor of the other is its context, not an import between siblings.
            if common == source.module.len() || common == target.len() {
                continue;
            }
            let folder = target[..common].to_vec();
            let edges = graphs.entry(folder).or_default();
            edges.entry(source.module[common].clone()).or_default().insert(target[common].clone());
        }
    }
    graphs
}

/// A circle of `edges`, if there is one, as the modules along it.
fn circle(edges: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit<'a>(
        node: &'a str,
        edges: &'a BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<&'a str>,
        done: &mut BTreeSet<&'a str>,
    ) -> Option<Vec<String>> {
        if let Some(start) = path.iter().position(|n| *n == node) {
            return Some(path[start..].iter().chain([&node]).map(|n| (*n).to_owned()).collect());
        }
        if !done.insert(node) {
            return None;
        }
        path.push(node);
        for next in edges.get(node).into_iter().flatten() {
            if let Some(found) = visit(next, edges, path, done) {
                return Some(found);
            }
        }
        path.pop();
        None
    }
    let mut done = BTreeSet::new();
    edges.keys().find_map(|node| visit(node, edges, &mut Vec::new(), &mut done))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn module_graph_of_the_testkit_has_no_circles() {
        assert_no_circles(env!("CARGO_MANIFEST_DIR"));
    }

    #[test]
    fn the_reader_finds_nested_uses_super_and_paths_in_code_and_the_check_finds_a_circle() {
        let module: Module = vec!["a".into(), "b".into()];
        let code = "use crate::{x::{y, z::W}, v};\nuse super::c::D;\nfn f() { crate::q::r(); }\n";
        let found: Vec<String> = references(&module, code).iter().map(|p| p.join("::")).collect();
        assert_eq!(found, ["x::y", "x::z::W", "v", "q::r", "a::c::D"]);
        let edges: BTreeMap<String, BTreeSet<String>> = [("a", "b"), ("b", "c"), ("c", "a"), ("d", "a")]
            .into_iter()
            .fold(BTreeMap::new(), |mut edges, (from, to)| {
                edges.entry(from.to_owned()).or_default().insert(to.to_owned());
                edges
            });
        assert_eq!(circle(&edges), Some(vec!["a".into(), "b".into(), "c".into(), "a".into()]));
        let mut acyclic = edges.clone();
        acyclic.remove("c");
        assert_eq!(circle(&acyclic), None);
    }
}
